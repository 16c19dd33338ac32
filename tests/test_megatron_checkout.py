"""Megatron-LM's own ``parse_args`` + ``validate_args`` and its ``gpt_builders.gpt_builder`` on
the Megatron-LM exports: these need a Megatron-LM source tree at the pinned commit d98e8a64
(``megatron.training`` and ``gpt_builders.py`` are not in the ``megatron-core`` wheel), so they
run only from a fetched checkout on PYTHONPATH, outside CI. Without one every test here is
skipped with that reason. docs/frameworks.md says which checks CI runs (``make test-frameworks``:
tests/test_framework_parsers.py) and which run only here.
"""

import shlex
import sys
from pathlib import Path

import pytest

from optimus_calc.hf_import import load_hf_config
from test_framework_parsers import _export, _plan

HF = Path(__file__).parent / "data" / "hf"

CHECKOUT = ("needs a Megatron-LM checkout at d98e8a64 on PYTHONPATH (megatron.training is not in "
            "the megatron-core wheel; run outside CI, docs/frameworks.md)")


# ---- Megatron-LM --------------------------------------------------------------------------

def _script(text: str) -> tuple[dict[str, str | None], list[str], int]:
    """The environment (None = unset), the pretrain_gpt.py arguments and the world size of an
    exported launch script."""
    env: dict[str, str | None] = {}
    lines = text.split("\n")
    for line in lines:
        if not line.startswith(("export ", "unset ")):
            continue
        words = shlex.split(line, comments=True)
        if words[:1] == ["export"]:
            name, value = words[1].split("=", 1)
            env[name] = value
        elif words[:1] == ["unset"]:
            env[words[1]] = None
    command = shlex.split(text[text.index("torchrun"):].replace("\\\n", " "))
    gpn = int(command[command.index("--nproc-per-node") + 1])
    nodes = int(command[command.index("--nnodes") + 1])
    return env, command[command.index("pretrain_gpt.py") + 1:], gpn * nodes


@pytest.fixture
def megatron(monkeypatch):
    """Megatron-LM's modules, with one gloo process standing for the job (CPU only)."""
    import typing
    if not hasattr(typing, "override"):  # Megatron-LM asks for Python 3.12 (typing.override)
        monkeypatch.setattr(typing, "override", lambda f: f, raising=False)
    pytest.importorskip("megatron.training.arguments", reason=CHECKOUT)
    import torch
    import torch.distributed as dist
    from megatron.training import arguments
    monkeypatch.setattr(arguments, "get_device_arch_version", lambda: 9)  # Hopper
    monkeypatch.setattr(torch.cuda, "current_device", lambda: "cpu")  # MLA's rotary table
    # --moe-grouped-gemm (every MoE export) asks the compute capability (arguments.py
    # L1378-1380): a Hopper's, as get_device_arch_version above
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (9, 0))
    # MLA's local spec passes k/v_channels, which only TE's attention takes; the unfused core
    # attention has no parameters, so dropping them changes no count
    from megatron.core.transformer.dot_product_attention import DotProductAttention
    init = DotProductAttention.__init__

    def _init(self, *a, k_channels=None, v_channels=None, **k):
        init(self, *a, **k)
    monkeypatch.setattr(DotProductAttention, "__init__", _init)
    # without Transformer Engine the inference-linear check has no class to test against
    from megatron.core.transformer import multi_token_prediction
    monkeypatch.setattr(multi_token_prediction, "is_inference_column_parallel_linear",
                        lambda m: False)
    if not dist.is_initialized():
        monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
        monkeypatch.setenv("MASTER_PORT", "29511")
        dist.init_process_group("gloo", rank=0, world_size=1)
    return arguments, torch


def _megatron_validate(arguments, monkeypatch, text: str):
    """parse_args + validate_args on the script's arguments, in its environment, with the world
    size and rank torchrun would set on the first GPU."""
    env, argv, world = _script(text)
    for name, value in env.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    monkeypatch.setenv("WORLD_SIZE", str(world))
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("LOCAL_RANK", "0")
    # the data flags the script leaves to the user (its comment says so)
    monkeypatch.setattr(sys, "argv", ["pretrain_gpt.py", *argv, "--mock-data",
                                      "--tokenizer-type", "NullTokenizer"])
    args = arguments.parse_args()
    arguments.validate_args(args, {})
    return args, argv


# kernels the CPU lacks (Transformer Engine, CUDA fusions), switched off before a build
CPU_LACKS = ("apply_rope_fusion", "gradient_accumulation_fusion", "bias_swiglu_fusion",
             "bias_gelu_fusion", "masked_softmax_fusion", "bias_dropout_fusion",
             "moe_grouped_gemm", "moe_permute_fusion")


def _megatron_build(arguments, torch, args) -> tuple[int, int]:
    """Parameters of the GPTModel these arguments build, whole (TP = PP = EP = 1), on the
    meta device with Megatron's local (no Transformer Engine) layer specs: the model without
    its multi-token-prediction modules, and those modules."""
    import copy
    from megatron.core import parallel_state
    from megatron.training import global_vars
    from megatron.training.vocab_utils import calculate_padded_vocab_size
    a = copy.deepcopy(args)
    a.padded_vocab_size = calculate_padded_vocab_size(
        a.vocab_size, a.make_vocab_size_divisible_by, args.tensor_model_parallel_size, False)
    a.tensor_model_parallel_size = a.pipeline_model_parallel_size = 1
    a.expert_model_parallel_size = a.context_parallel_size = 1
    a.expert_tensor_parallel_size = 1
    a.pipeline_model_parallel_layout = None
    a.virtual_pipeline_model_parallel_size = None
    a.num_layers_per_virtual_pipeline_stage = None
    a.sequence_parallel = False
    a.transformer_impl = "local"
    for fused in CPU_LACKS:  # the parameters are the same
        setattr(a, fused, False)
    # the alltoall and flex dispatchers open CUDA streams when built; the dispatcher holds no
    # parameters, so the model is built with Megatron's default (allgather)
    a.moe_token_dispatcher_type = "allgather"
    a.no_persist_layer_norm = True
    a.use_cpu_initialization = True
    a.perform_initialization = False
    parallel_state.destroy_model_parallel()
    parallel_state.initialize_model_parallel(1, 1)
    global_vars.set_args(a)
    try:
        sys.path.insert(0, str(Path(arguments.__file__).parents[2]))
        from gpt_builders import gpt_builder
        with torch.device("meta"):
            model = gpt_builder(a, pre_process=True, post_process=True)
        counts = [0, 0]
        for name, p in model.named_parameters():
            counts[name.startswith("mtp.")] += p.numel()
        return counts[0], counts[1]
    finally:
        global_vars.unset_global_variables() if hasattr(global_vars, "unset_global_variables") \
            else None
        parallel_state.destroy_model_parallel()


LAYOUT_8 = ("--nodes", 1, "--tp", 1, "--pp", 1, "--zero", 1, "--offloads", "none",
            "--framework", "megatron")


# the published totals: Llama-3-70B 70.6B, DeepSeek-V3 671.0B without its MTP module
# (deepseek-ai/DeepSeek-V3 README), Qwen1.5-MoE-A2.7B 14.3B (its model card)
@pytest.mark.parametrize("model,args,name,expect_b", [
    ("llama70b", ("--nodes", 2, "--framework", "megatron"), "llama-3-70b", 70.6),
    (str(HF / "deepseek_v3"), ("--node", "dgx-h100", "--nodes", 64, "--framework", "megatron"),
     None, 671.0),
    (str(HF / "qwen2_moe"), ("--nodes", 1, "--framework", "megatron"), None, 14.3),
], ids=["llama70b", "deepseek-v3", "qwen1.5-moe"])
def test_megatron_validates_and_builds_the_planned_model(run, tmp_path, monkeypatch, megatron,
                                                         model, args, name, expect_b):
    arguments, torch = megatron
    text = _export(run, tmp_path, model, *args, "--export", "megatron")
    lay = _plan(run, model, *args)
    margs, argv = _megatron_validate(arguments, monkeypatch, text)
    assert (margs.tensor_model_parallel_size, margs.pipeline_model_parallel_size,
            margs.data_parallel_size) == (lay["tp"], lay["pp"], lay["dp"])
    if name:
        from optimus_calc import catalog
        planned = catalog.load(()).get(name, "model")
    else:
        planned = load_hf_config(Path(model) / "config.json")
    built, mtp = _megatron_build(arguments, torch, margs)
    # Megatron keeps an expert bias (DeepSeek-V3's noaux_tc) as a buffer, not a parameter, as
    # the script's comment says: the experts' count per MoE layer (the MTP's one included)
    buffer = planned.experts if "--moe-router-enable-expert-bias" in argv else 0
    assert built == planned.total_params - planned.moe_layers * buffer, (built, planned)
    assert mtp == planned.mtp_params - planned.mtp_layers * buffer
    assert round((built + planned.moe_layers * buffer) / 1e9, 1) == expect_b
    if planned.shared_experts:  # Qwen1.5-MoE config.json: one gated shared expert of 5632
        assert margs.moe_shared_expert_intermediate_size == planned.shared_ffn
        assert margs.moe_shared_expert_gate == planned.shared_expert_gate
    assert margs.multi_latent_attention == planned.is_mla


def test_megatron_405b_pp16_split_is_the_planned_one(run, tmp_path, monkeypatch, megatron):
    arguments, _ = megatron
    from megatron.core.transformer.enums import LayerType
    from megatron.core.transformer.pipeline_parallel_layer_layout import (
        PipelineParallelLayerLayout)
    args = ("llama-3-405b", "--node", "dgx-h100", "--nodes", 16, "--tp", 8, "--pp", 16,
            "--zero", 1, "--offloads", "none", "--framework", "megatron")
    planned = _plan(run, *args)["stage_layers"]
    text = _export(run, tmp_path, *args, "--export", "megatron")
    margs, _ = _megatron_validate(arguments, monkeypatch, text)
    # checked by validate_args; parsed as the model builder parses it (argument_utils.py)
    layout = PipelineParallelLayerLayout(margs.pipeline_model_parallel_layout, 16)
    layout.validate_layer_layout(margs.num_layers, 0)
    built = [stage[0].count(LayerType.decoder) for stage in layout.layout]
    # 126 layers + the embedding and the loss = 128 over 16 stages (shapes.py
    # embedding_and_loss_split, as Megatron-LM's account_for_* flags split them)
    assert built == planned == [7] + [8] * 14 + [7]


# Megatron-Bridge's 405B recipes: H100 TP 8 PP 8 CP 2 VP 8 (126 layers over 64 chunks; the
# ranks hold split_layers(126, 8) = 15, 16 x 6, 15: 15 = 1 + 7 x 2, 16 = 8 x 2, the short chunk
# first on rank 0 and last on the last rank) and GB200 TP 4 PP 16 VP 8 (128 chunks for 126
# layers; 7, 8 x 14, 7: rank 0's first chunk holds only the embedding, the last rank's last
# only the loss, as the recipes' account_for_* flags build them). Both run as a layout
# (arguments.py L941-951 derives VP 8 from its stages); each rank builds the chunks the
# evaluator timed
@pytest.mark.parametrize("nodes,tp,pp,extra,first,rest", [
    (128, 8, 8, ("--cp", 2, "--global-batch", 512), [1] + [2] * 7, [2] * 8),
    (32, 4, 16, ("--global-batch", 1536), [0] + [1] * 7, [1] * 8)], ids=["pp8", "pp16"])
def test_megatron_405b_uneven_interleave_is_the_planned_split(run, tmp_path, monkeypatch,
                                                              megatron, nodes, tp, pp, extra,
                                                              first, rest):
    arguments, _ = megatron
    from megatron.core.transformer.enums import LayerType
    from megatron.core.transformer.pipeline_parallel_layer_layout import (
        PipelineParallelLayerLayout)
    args = ("llama-3-405b", "--node", "dgx-h100", "--nodes", nodes, "--tp", tp, "--pp", pp,
            "--interleave", 8, "--zero", 1, "--micro-batch", 1, *extra, "--offloads", "none",
            "--framework", "megatron")
    text = _export(run, tmp_path, *args, "--export", "megatron")
    margs, _ = _megatron_validate(arguments, monkeypatch, text)
    assert margs.virtual_pipeline_model_parallel_size == 8
    layout = PipelineParallelLayerLayout(margs.pipeline_model_parallel_layout, pp)
    layout.validate_layer_layout(margs.num_layers, 0)
    per_rank = [[chunk.count(LayerType.decoder) for chunk in rank] for rank in layout.layout]
    assert per_rank[0] == first and per_rank[-1] == first[::-1]
    assert all(r == rest for r in per_rank[1:-1]) and sum(map(sum, per_rank)) == 126


@pytest.mark.parametrize("flag,expect", [((), True), (("--no-overlap-p2p-communication",), False)],
                         ids=["default", "off"])
def test_megatron_reads_the_planned_p2p_overlap(run, tmp_path, monkeypatch, megatron, flag,
                                                 expect):
    """The interleaved plan's --overlap-p2p-communication (the profile's pp_overlap_interleaved)
    is what Megatron-LM runs: on by default (arguments.py L3118-3120), off where the export
    writes --no-overlap-p2p-communication; validate_args keeps it with a virtual pipeline."""
    arguments, _ = megatron
    args = ("llama-3-70b", "--node", "dgx-h100", "--nodes", 4, "--tp", 4, "--pp", 4,
            "--interleave", 2, "--zero", 1, "--offloads", "none", "--framework", "megatron",
            *flag)
    text = _export(run, tmp_path, *args, "--export", "megatron")
    margs, _ = _megatron_validate(arguments, monkeypatch, text)
    assert margs.virtual_pipeline_model_parallel_size == 2
    assert margs.overlap_p2p_comm is expect


def _hf_models():
    out = []
    for d in sorted(HF.iterdir()):
        if (d / "config.json").exists():
            out.append(d.name)
    return out


@pytest.mark.parametrize("fixture", _hf_models())
def test_megatron_builds_every_hf_fixture_it_accepts(monkeypatch, megatron, fixture):
    """Every Hugging Face fixture's export (TP 1, EP over 8 or 4, ZeRO-1 on 8 GPUs): validated,
    and the GPTModel built on meta has the planned count, less only what the script's comments
    say Megatron keeps outside its parameters (an expert-bias buffer, no router bias)."""
    from optimus_calc.frameworks.exporting import ExportError
    from optimus_calc.frameworks.megatron_export import megatron_args
    from optimus_calc.specs.training import Layout, Training
    arguments, torch = megatron
    m = load_hf_config(HF / fixture / "config.json")
    ep = (8 if m.experts % 8 == 0 else 4 if m.experts % 4 == 0 else 1) if m.experts else 1
    try:
        text = megatron_args(Layout(tp=1, pp=1, dp=8, ep=ep, zero=1),
                             Training(seq_len=min(2048, m.max_position or 2048),
                                      global_batch=64), m, 8)
    except ExportError:
        pytest.skip(f"{fixture}: refused with a reason (tests/test_export_roundtrip.py)")
    margs, argv = _megatron_validate(arguments, monkeypatch, text)
    built, mtp = _megatron_build(arguments, torch, margs)
    buffer = m.experts if "--moe-router-enable-expert-bias" in argv else 0
    # the script's "router bias" comment: a router bias the model has and Megatron's router,
    # unbiased under --disable-bias-linear, lacks (router.py L67-72); gpt-oss's biased linears
    # give its router a bias, so there is no comment and the count matches to the parameter
    no_bias = (m.router_params - m.hidden * m.experts) if "# router bias:" in text else 0
    assert built == m.total_params - m.moe_layers * (buffer + no_bias), (built, m)


def test_megatron_reads_the_planned_recompute_modules(run, tmp_path, monkeypatch, megatron):
    """--recompute selective --recompute-modules layernorm,moe_act is exported as Megatron-LM's
    --recompute-granularity selective --recompute-modules layernorm moe_act (nargs list,
    transformer_config.py L560-582 @ d98e8a6) with --moe-grouped-gemm, which moe_act needs
    (L1964-1967): parse_args and validate_args keep all three as planned."""
    arguments, _ = megatron
    args = ("gpt-oss-20b", "--node", "dgx-h100", "--nodes", 1, "--ep", 8, "--tp", 1, "--pp", 1,
            "--framework", "megatron", "--recompute", "selective", "--recompute-modules",
            "layernorm,moe_act")
    text = _export(run, tmp_path, *args, "--export", "megatron")
    margs, _ = _megatron_validate(arguments, monkeypatch, text)
    assert margs.recompute_granularity == "selective"
    assert list(margs.recompute_modules) == ["layernorm", "moe_act"]
    assert margs.moe_grouped_gemm is True
