"""Each framework's own parser and validator on the exports, as the tool writes them, from the
frameworks' PyPI packages: DeepSpeed 0.19.8's ``DeepSpeedConfig``; torchtitan 0.2.2's
``ConfigManager``, its flavour's model built on the meta device and its pipeline splitter;
megatron-core's pipeline layout parser. ``make test-frameworks`` installs them in their own
environment and runs this file with OPTIMUS_FRAMEWORKS_REQUIRED=1, where a framework that does
not import fails the test instead of skipping it (CI runs that target). In the plain ``make
test`` environment, which has none of them, the tests are skipped with that reason.

Megatron-LM's ``parse_args`` + ``validate_args`` and its GPT builder need its source tree, which no
package serves: tests/test_megatron_checkout.py, outside CI (docs/frameworks.md). Every export is
written by the CLI in-process (``plan ... --export``), read back from the file, and compared with
what the tool evaluated (parameter count, pipeline split).
"""

import copy
import importlib
import json
import os
import re
from pathlib import Path

import pytest

HF = Path(__file__).parent / "data" / "hf"


REQUIRED = os.environ.get("OPTIMUS_FRAMEWORKS_REQUIRED") == "1"


def _need(module: str):
    """The framework's module; a skip when it is absent, a failure under make test-frameworks."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        if REQUIRED:
            pytest.fail(f"{module} does not import in the make test-frameworks environment: {e}")
        pytest.skip(f"{module} is not installed (make test-frameworks installs it): {e}")


def _export(run, tmp_path, *args) -> str:
    out = tmp_path / "export.out"
    r = run("plan", *args, "-o", out)
    assert r.code == 0, r.err
    return out.read_text()


def _plan(run, *args) -> dict:
    r = run("plan", *args, "--format", "json")
    assert r.code == 0, r.err
    return r.json()["recommended"]


# ---- DeepSpeed ----------------------------------------------------------------------------

def _deepspeed_config(cfg: dict, gpus: int, dp: int):
    """DeepSpeedConfig on the launch path the file names: Megatron-DeepSpeed and the pipeline
    engine pass an mpu answering the data-parallel ranks; plain DeepSpeed (AutoTP) passes none."""
    dsc = _need("deepspeed.runtime.config")
    mp = pytest.MonkeyPatch()
    mp.setattr(dsc.dist, "get_rank", lambda *a, **k: 0)
    mp.setattr(dsc.dist, "get_world_size", lambda *a, **k: gpus)

    class MPU:
        def get_data_parallel_world_size(self):
            return dp

        def get_data_parallel_rank(self):
            return 0

    launcher = cfg["_launch"]["launcher"]
    mpu = MPU() if launcher.startswith(("Megatron-DeepSpeed", "DeepSpeed (pipeline")) else None
    try:
        return dsc.DeepSpeedConfig(json.loads(json.dumps(cfg)), mpu=mpu)
    finally:
        mp.undo()


@pytest.mark.parametrize("args", [
    ("llama70b", "--nodes", 2),                                     # the headline plan
    ("llama70b", "--nodes", 2, "--tp", 4, "--zero", 2, "--framework", "deepspeed"),
    ("llama-3-405b", "--node", "dgx-h100", "--nodes", 16, "--framework", "deepspeed"),
    ("llama70b", "--nodes", 1, "--offloads", "nvme"),
    ("llama8b", "--nodes", 1, "--framework", "deepspeed", "--zero", 1, "--grad-bytes", 4),
    ("llama70b", "--nodes", 4, "--framework", "deepspeed", "--grad-bytes", 4),
], ids=["headline", "autotp-z2", "405b-16-nodes", "nvme", "z1-fp32-grads", "z3-fp32-grads"])
def test_deepspeed_config_accepts_the_export(run, tmp_path, args):
    _need("deepspeed")
    cfg = json.loads(_export(run, tmp_path, *args, "--export", "deepspeed"))
    # the export plans with the layouts DeepSpeed's two launch paths run (cli/plan_cmd.py)
    mine = () if "--framework" in args else ("--framework", "deepspeed,megatron-deepspeed")
    lay = _plan(run, *args, *mine)
    c = _deepspeed_config(cfg, lay["tp"] * lay["pp"] * lay["dp"], lay["dp"])
    assert c.train_batch_size == cfg["train_batch_size"]
    assert c.zero_optimization_stage == lay["zero"]
    assert c.gradient_accumulation_steps == cfg["gradient_accumulation_steps"]
    if "--grad-bytes" in args:  # what engine.get_data_types / communication_data_type read
        assert c.grad_accum_dtype == "fp32" and str(c.communication_data_type) == "torch.float32"




# Qwen3-30B-A3B has 128 experts (its config.json): with EP 8 and TP 2 each GPU holds
# 128 / (8 x 2) = 8 of them, with EP 8 alone 128 / 8 = 16
@pytest.mark.parametrize("args,per_gpu", [
    (("qwen3-30b-a3b", "--nodes", 2, "--framework", "deepspeed", "--tp", 2, "--ep", 8), 8),
    (("qwen3-30b-a3b", "--nodes", 1, "--framework", "deepspeed", "--tp", 1, "--ep", 8), 16),
], ids=["autotp-autoep", "autoep"])
def test_deepspeed_autoep_export_passes_autoep_validation(run, tmp_path, cat, args, per_gpu):
    """The expert_parallel block as DeepSpeed 0.19.8 reads and checks it before building any
    group: parse_autoep_config (runtime/config.py get_expert_parallel_config),
    validate_autoep_config with the engine's sizes (runtime/engine.py L828-842: no mpu on this
    path, so PP 1 and TP = autotp_size), and the fold's rank tables: every EP group holds
    whole TP groups (EP folded over the TP ranks), and each GPU the plan's expert share."""
    _need("deepspeed")
    from deepspeed.module_inject.auto_ep_config import validate_autoep_config
    from deepspeed.module_inject.auto_ep_folding import (build_folding_spec,
                                                         expected_folding_group_tables)
    cfg = json.loads(_export(run, tmp_path, *args, "--export", "deepspeed"))
    lay = _plan(run, *args)
    assert lay["ep"] > 1 and lay["pp"] == 1
    gpus = lay["tp"] * lay["dp"]
    c = _deepspeed_config(cfg, gpus, lay["dp"])
    ep = c.expert_parallel_config
    assert ep.enabled and ep.autoep_size == lay["ep"] * lay["tp"]
    tp = c.tensor_parallel_config.autotp_size if lay["tp"] > 1 else 1
    assert tp == lay["tp"]
    zero = cfg["zero_optimization"]
    validate_autoep_config(ep, gpus, 1, tp, 1, zero_stage=zero["stage"],
                           zero_offload_optimizer="offload_optimizer" in zero,
                           zero_offload_param="offload_param" in zero)
    spec = build_folding_spec(world_size=gpus, pp_size=1, tp_size=tp, ep_size=ep.autoep_size,
                              etp_size=ep.expert_tensor_parallel_size,
                              mp_mode="tp" if tp > 1 else "sp")
    tables = expected_folding_group_tables(spec)
    tp_groups = set(tables.tp_groups)
    for group in tables.ep_groups:
        parts = [group[i:i + tp] for i in range(0, len(group), tp)]
        assert all(tuple(g) in tp_groups for g in parts)  # whole TP groups
        assert len(parts) == lay["ep"]  # EP distinct token sets, as planned
    experts = cat.get("qwen3-30b-a3b", "model").experts
    assert experts == 128 and experts % ep.autoep_size == 0
    assert experts // ep.autoep_size == per_gpu


# ---- megatron-core (the PyPI wheel; Megatron-LM's argument parser is outside CI) -------------

def test_megatron_core_parses_the_405b_pp16_layout_as_planned(run, tmp_path):
    """The Megatron-LM export's --pipeline-model-parallel-layout, parsed and validated by
    megatron-core's own PipelineParallelLayerLayout (core/transformer/
    pipeline_parallel_layer_layout.py), builds the split the plan evaluated: 126 layers over
    16 stages, the two short stages first (evaluate/shapes.py split_layers)."""
    layout_mod = _need("megatron.core.transformer.pipeline_parallel_layer_layout")
    from megatron.core.transformer.enums import LayerType
    args = ("llama-3-405b", "--node", "dgx-h100", "--nodes", 16, "--tp", 8, "--pp", 16,
            "--zero", 1, "--offloads", "none", "--framework", "megatron")
    planned = _plan(run, *args)["stage_layers"]
    text = _export(run, tmp_path, *args, "--export", "megatron")
    flag = re.search(r"--pipeline-model-parallel-layout\s+(\S+)", text).group(1).strip("'\"")
    layout = layout_mod.PipelineParallelLayerLayout(flag, 16)
    layout.validate_layer_layout(126, 0)  # the layers --num-layers says, no MTP
    assert "--num-layers 126" in text
    built = [stage[0].count(LayerType.decoder) for stage in layout.layout]
    assert built == planned == [7] + [8] * 14 + [7]  # 126 + embedding + loss = 16 x 8


# ---- torchtitan ---------------------------------------------------------------------------

@pytest.fixture
def torchtitan():
    _need("torchtitan.config.manager")
    from torchtitan.config.manager import ConfigManager
    from torchtitan.protocols.train_spec import get_train_spec
    return ConfigManager, get_train_spec


def test_torchtitan_config_manager_loads_the_qwen3_moe_export(run, tmp_path, cat, torchtitan):
    ConfigManager, get_train_spec = torchtitan
    import torch
    text = _export(run, tmp_path, "qwen3-30b-a3b", "--framework", "torchtitan", "--nodes", 1,
                   "--export", "torchtitan")
    path = tmp_path / "job.toml"
    path.write_text(text)
    job = ConfigManager().parse_args(["--job.config_file", str(path)])
    assert (job.model.name, job.model.flavor) == ("qwen3", "30B-A3B")  # not the debug model
    spec = get_train_spec(job.model.name)
    margs = spec.model_args[job.model.flavor]
    with torch.device("meta"):
        model = spec.model_cls(margs)
    built = sum(p.numel() for p in model.parameters())
    planned = cat.get("qwen3-30b-a3b", "model")
    assert built == planned.total_params, (built, planned.total_params)
    assert round(built / 1e9, 1) == 30.5  # Qwen/Qwen3-30B-A3B model card: 30.5B


def test_torchtitan_config_manager_takes_the_deepep_backend(run, tmp_path, torchtitan):
    """--moe-dispatcher deepep: parallelism.expert_parallel_comm_backend (torchtitan/config/
    job_config.py L474 @ v0.2.2, "standard" or "deepep"), on DeepSeek-V3, whose parallelize.py
    reads it (qwen3's does not: frameworks/torchtitan.py TT_DEEPEP_MODEL)."""
    ConfigManager, _ = torchtitan
    text = _export(run, tmp_path, "deepseek-v3", "--framework", "torchtitan", "--nodes", 32,
                   "--ep", 16, "--tp", 1, "--pp", 1, "--moe-dispatcher", "deepep",
                   "--export", "torchtitan")
    path = tmp_path / "job.toml"
    path.write_text(text)
    job = ConfigManager().parse_args(["--job.config_file", str(path)])
    assert (job.parallelism.expert_parallel_comm_backend,
            job.parallelism.expert_parallel_degree) == ("deepep", 16)


def test_torchtitan_has_no_mixtral_flavour_and_the_export_says_so(run, cat, torchtitan):
    _, get_train_spec = torchtitan
    from torchtitan.models import _supported_models
    llms = {"deepseek_v3", "gpt_oss", "llama3", "llama4", "qwen3"}  # flux: images, llama3_ft
    assert llms <= _supported_models  # (fault tolerance) has llama3's flavours
    m = cat.get("mixtral-8x7b", "model")
    shapes = []
    for name in sorted(llms):
        for flavor, a in get_train_spec(name).model_args.items():
            moe = getattr(a, "moe_args", None)
            shapes.append((getattr(a, "n_layers", None), getattr(a, "dim", None),
                           getattr(moe, "num_experts", None) if moe else None))
    assert (m.layers, m.hidden, m.experts) not in shapes  # 32 layers, 4096, 8 experts
    r = run("plan", "mixtral-8x7b", "--nodes", 2, "--export", "torchtitan")
    assert r.code == 2 and "torchtitan" in r.err and "Traceback" not in r.err, r.err


def _torchtitan_job(tmp_path, text: str):
    from torchtitan.config.manager import ConfigManager
    path = tmp_path / "job.toml"
    path.write_text(text)
    return ConfigManager().parse_args(["--job.config_file", str(path)])


def _torchtitan_split(job, model_args, model) -> list[list[str]]:
    """The module names of each virtual stage, as torchtitan's own pipeline_llm validates and
    generates them (torchtitan/distributed/pipeline_parallel.py L41-119 @ v0.2.2): its stage
    builder, which needs the PP process group, is replaced by one that returns the names."""
    pp_mod = _need("torchtitan.distributed.pipeline_parallel")
    seen = []

    class Split(Exception):
        pass

    def module_split(whole, mesh, schedule, device, names):
        seen.append(names)
        raise Split

    class Dims:  # only .pp and the PP mesh are read before the split (L50, L85)
        pp = job.parallelism.pipeline_parallel_degree

        def get_mesh(self, name):
            return None

    mp = pytest.MonkeyPatch()
    mp.setattr(pp_mod, "pipeline_module_split", module_split)
    try:
        with pytest.raises(Split):
            pp_mod.pipeline_llm(model, Dims(), job, "meta", model_args, None, None)
    finally:
        mp.undo()
    return seen[0]


@pytest.mark.parametrize("args", [
    # issue 33's layout, PP 4 (then the planner's pick; torchtitan counted ceil(82 / 20) = 5
    # virtual stages)
    ("llama-3-70b", "--node", "dgx-h100", "--nodes", 4, "--pp", 4),
    # 126 layers over 16 stages: the plan evaluates 7, 7, 8 x 14
    ("llama-3-405b", "--node", "dgx-h100", "--nodes", 16, "--tp", 8, "--pp", 16),
    # interleaved (Interleaved1F1B): Llama 4 Scout, 48 layers over PP 2 x 3 chunks
    (str(HF / "llama4"), "--nodes", 4, "--pp", 2, "--interleave", 3),
], ids=["70b-4-nodes", "405b-pp16", "scout-interleaved"])
def test_torchtitan_pipeline_splitter_builds_the_evaluated_split(run, tmp_path, torchtitan,
                                                                 args):
    _, get_train_spec = torchtitan
    import torch
    args = (*args, "--framework", "torchtitan")
    lay = _plan(run, *args)
    assert lay["pp"] > 1
    job = _torchtitan_job(tmp_path, _export(run, tmp_path, *args, "--export", "torchtitan"))
    spec = get_train_spec(job.model.name)
    margs = spec.model_args[job.model.flavor]
    with torch.device("meta"):
        model = spec.model_cls(margs)
    stages = _torchtitan_split(job, margs, model)
    pp, v = lay["pp"], lay["interleave"]
    assert len(stages) == pp * v
    # loop-style schedules run virtual stage j on PP rank j mod pp (pipeline_parallel.py
    # L451-461): each rank holds the layers the plan evaluated on it
    per_rank = [0] * pp
    for j, names in enumerate(stages):
        per_rank[j % pp] += sum(n.startswith("layers.") for n in names)
    assert per_rank == lay["stage_layers"]
    if args[0] == "llama-3-405b":
        assert per_rank == [7] + [8] * 14 + [7]  # torchtitan's own default split too
    # every layer once, in order; embedding first, norm and head last; every name a module
    flat = [n for names in stages for n in names]
    layers = [n for n in flat if n.startswith("layers.")]
    assert layers == [f"layers.{i}" for i in range(margs.n_layers)]
    assert stages[0][0] == "tok_embeddings" and stages[-1][-2:] == ["norm", "output"]
    modules = {n for n, _ in model.named_modules()}
    assert set(flat) <= modules


# torchtitan v0.2.2 models/llama4/__init__.py L38-60; the counts are the published totals of
# meta-llama/Llama-4-Scout-17B-16E (107,769,861,120) and Llama-4-Maverick-17B-128E
# (400,711,848,960) text models, which tests/data/hf/llama4*/config.json also give the tool
@pytest.mark.parametrize("fixture,nodes,flavor,count", [
    ("llama4", 4, "17bx16e", 107_769_861_120),
    ("llama4_maverick", 16, "17bx128e", 400_711_848_960),
])
def test_torchtitan_builds_llama4_flavours_at_the_planned_count(run, tmp_path, torchtitan,
                                                                fixture, nodes, flavor, count):
    _, get_train_spec = torchtitan
    import torch
    from optimus_calc.hf_import import load_hf_config
    args = (str(HF / fixture), "--node", "dgx-h100", "--nodes", nodes,
            "--framework", "torchtitan")
    job = _torchtitan_job(tmp_path, _export(run, tmp_path, *args, "--export", "torchtitan"))
    assert (job.model.name, job.model.flavor) == ("llama4", flavor)
    spec = get_train_spec("llama4")
    with torch.device("meta"):
        model = spec.model_cls(spec.model_args[flavor])
    built = sum(p.numel() for p in model.parameters())
    planned = load_hf_config(HF / fixture / "config.json").total_params
    assert built == planned == count, (built, planned)


def _hf_fixtures():
    return sorted(d.name for d in HF.iterdir() if (d / "config.json").exists())


@pytest.mark.parametrize("fixture", _hf_fixtures())
def test_torchtitan_builds_every_hf_fixture_it_has_a_flavour_for(tmp_path, torchtitan, fixture):
    """Every Hugging Face fixture with a torchtitan v0.2.2 flavour of its shape: the TOML
    (FSDP over 8 GPUs) parsed by ConfigManager names it, and the flavour's model built on meta
    has the tool's count (which holds no multi-token-prediction module: that is mtp_params), less
    what torchtitan keeps as a buffer. A fixture without a flavour is refused with that
    reason."""
    _, get_train_spec = torchtitan
    import torch
    from optimus_calc.frameworks.exporting import ExportError
    from optimus_calc.frameworks.torchtitan_export import flavour_of, torchtitan_toml
    from optimus_calc.hf_import import load_hf_config
    from optimus_calc.specs.training import Layout, Training
    m = load_hf_config(HF / fixture / "config.json")
    lay, tr = Layout(tp=1, pp=1, dp=8, zero=3), Training(seq_len=2048, global_batch=64)
    if flavour_of(m) is None:
        with pytest.raises(ExportError, match="no model flavour"):
            torchtitan_toml(lay, tr, m)
        return
    job = _torchtitan_job(tmp_path, torchtitan_toml(lay, tr, m))
    assert (job.model.name, job.model.flavor) == flavour_of(m)[:2]
    spec = get_train_spec(job.model.name)
    margs = copy.deepcopy(spec.model_args[job.model.flavor])
    margs.update_from_config(job)  # as torchtitan's trainer does before building (train.py)
    with torch.device("meta"):
        model = spec.model_cls(margs)
    built = sum(p.numel() for p in model.parameters())
    # DeepSeek-V3's e_score_correction_bias (the tool's router_bias): torchtitan keeps it as
    # the MoE's expert_bias buffer, updated outside the gradient (models/moe/moe.py L454-460),
    # not a parameter; 58 MoE layers x 256 experts = 14,848 for DeepSeek-V3
    buffer = m.moe_layers * m.experts if job.model.name == "deepseek_v3" and m.router_bias \
        else 0
    assert built == m.total_params - buffer, (fixture, built, m.total_params)
