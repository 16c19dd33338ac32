"""Framework rules and exporters, checked against the option lists extracted from the pinned
framework sources (tests/data/framework_options.json, tools/extract_framework_options.py)."""

import itertools
import json
import shlex
import tomllib
from pathlib import Path

import pytest

from optimus_calc.evaluate.shapes import split_layers
from optimus_calc.frameworks.deepspeed_export import deepspeed_config, deepspeed_config_dict
from optimus_calc.frameworks.exporting import ExportError
from optimus_calc.frameworks.megatron_export import (layout_string, megatron_arg_list,
                                                     megatron_args, stage_layout)
from optimus_calc.frameworks.torchtitan_export import (flavour_of, torchtitan_sections,
                                                       torchtitan_toml)
from optimus_calc.frameworks import COMMITS, Framework, Reason, layout_support
from optimus_calc.specs.training import Layout, Offload, Precision, Recompute, Training

OPTIONS = json.loads((Path(__file__).parent / "data" / "framework_options.json").read_text())
MEG = OPTIONS["megatron"]["flags"]
DS = OPTIONS["deepspeed"]
TT = OPTIONS["torchtitan"]["sections"]


def test_options_file_records_the_pinned_commits():
    assert OPTIONS["megatron"]["commit"] == COMMITS["megatron"]
    assert OPTIONS["deepspeed"]["commit"] == COMMITS["deepspeed"]
    assert OPTIONS["torchtitan"]["commit"] == COMMITS["torchtitan"]
    # the extraction found the flags a GPT run always needs (dataclass-derived and explicit)
    for f in ("--num-layers", "--tensor-model-parallel-size", "--micro-batch-size", "--swiglu"):
        assert f in MEG


# ---- type checks against the extracted schema ----------------------------------------------
def _check_megatron(args):
    for flag, value in args:
        assert flag in MEG, f"{flag} is not a Megatron-LM flag at the pinned commit"
        t = MEG[flag]["type"]
        if t == "flag":
            assert value is None, f"{flag} is a switch but got {value}"
            continue
        assert value is not None, f"{flag} needs a value"
        if t == "int":
            assert str(int(value)) == value, (flag, value)
        elif t == "float":
            float(value)
        if "choices" in MEG[flag]:
            assert value in MEG[flag]["choices"], (flag, value)


def _type_ok(t: str, v) -> bool:
    if t == "bool":
        return isinstance(v, bool)
    if t in ("int", "enum:ZeroStageEnum"):
        return isinstance(v, int) and not isinstance(v, bool)
    if t == "float":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if t in ("str", "enum:OffloadDeviceEnum"):
        return isinstance(v, str)
    if t == "object":
        return isinstance(v, dict)
    return True  # unknown in the source: name checked only


def _check_block(block: dict, schema: dict, where: str):
    for k, v in block.items():
        assert k in schema, f"{where}.{k} is not a DeepSpeed key at the pinned commit"
        assert _type_ok(schema[k]["type"], v), f"{where}.{k} = {v!r}: {schema[k]['type']}"


def _check_deepspeed(cfg: dict):
    # the launch notes: a key DeepSpeed does not read (it reads only the keys it knows)
    assert cfg["_launch"]["launcher"] and cfg["_launch"]["command"]
    for k in cfg:
        assert k == "_launch" or k in DS["top_level"], f"{k} is not a DeepSpeed top-level key"
    for k in ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"):
        assert isinstance(cfg[k], int) and not isinstance(cfg[k], bool)
    z = cfg["zero_optimization"]
    _check_block({k: v for k, v in z.items() if k not in ("offload_optimizer", "offload_param")},
                 DS["zero_optimization"], "zero_optimization")
    for sub in ("offload_optimizer", "offload_param"):
        if sub in z:
            _check_block(z[sub], DS[sub], sub)
            assert z[sub]["device"] in DS["offload_devices"]
    for blk in ("bf16", "fp16", "aio", "tensor_parallel", "expert_parallel",
                "activation_checkpointing", "optimizer"):
        if blk in cfg:
            _check_block(cfg[blk], DS[blk], blk)
    name = cfg["optimizer"]["type"]
    assert name.lower() in DS["optimizer_types"] or name == "SGD"  # SGD: torch.optim.SGD


def _check_torchtitan(sections: dict, schema: dict = TT, where: str = ""):
    for sec, fields in sections.items():
        assert sec in schema, f"[{where}{sec}] is not a torchtitan v0.2.2 section"
        for k, v in fields.items():
            assert k in schema[sec], f"{where}{sec}.{k} is not a torchtitan v0.2.2 field"
            spec = schema[sec][k]
            if spec["type"] == "table":  # a sub-table: [quantize.linear.float8]
                _check_torchtitan({k: v}, {k: spec["fields"]}, f"{where}{sec}.")
                continue
            assert _type_ok(spec["type"], v), f"{sec}.{k} = {v!r}: {spec['type']}"
            if "choices" in spec:
                assert v in spec["choices"], (sec, k, v)


# ---- a spread of layouts ---------------------------------------------------------------------
CASES = [
    # model, layout, training (AutoTP, plain DeepSpeed with TP > 1, runs only with SP off)
    ("llama-3-70b", dict(tp=8, pp=2, dp=4, zero=1), dict(seq_len=8192, global_batch=512)),
    ("llama-3-70b", dict(tp=8, pp=1, dp=8, zero=3, offload=Offload.CPU, offload_params=True),
     dict(seq_len=8192, global_batch=512, recompute=Recompute.FULL)),
    ("llama-3-70b", dict(tp=4, pp=1, dp=16, zero=3, offload=Offload.NVME, offload_params=True),
     dict(seq_len=4096, global_batch=512, micro_batch=2)),
    ("llama-3-70b", dict(tp=4, pp=1, dp=4, zero=3, offload=Offload.SUPERCHIP,
                         superchip_gpu_fraction=0.25), dict(seq_len=4096, global_batch=64)),
    ("llama-3-70b", dict(tp=8, pp=4, dp=2, zero=1, interleave=2),
     dict(seq_len=4096, global_batch=64, recompute=Recompute.SELECTIVE)),
    ("llama-3-70b", dict(tp=4, pp=1, dp=4, cp=2, zero=2), dict(seq_len=32768, global_batch=32)),
    ("llama-3-70b", dict(tp=8, pp=1, dp=2, zero=1, offload=Offload.CPU),
     dict(seq_len=4096, global_batch=64, precision=Precision.FP16, sequence_parallel=False)),
    ("llama-3-405b", dict(tp=8, pp=16, dp=1, zero=1), dict(seq_len=8192, global_batch=64)),
    ("mixtral-8x7b", dict(tp=2, pp=1, dp=16, ep=8, zero=3), dict(seq_len=4096, global_batch=512)),
    ("mixtral-8x7b", dict(tp=1, pp=4, dp=8, ep=4, zero=1), dict(seq_len=4096, global_batch=256)),
    ("llama-2-7b", dict(tp=1, pp=1, dp=8, zero=0), dict(seq_len=4096, global_batch=64)),
    ("llama-2-7b", dict(tp=2, pp=1, dp=4, zero=2, offload=Offload.CPU),
     dict(seq_len=4096, global_batch=64, sequence_parallel=False)),
    ("qwen2-7b", dict(tp=2, pp=2, dp=2, zero=1), dict(seq_len=4096, global_batch=64)),
    ("gpt-7.5b", dict(tp=4, pp=1, dp=2, zero=1), dict(seq_len=2048, global_batch=64,
                                                      sequence_parallel=False)),
    # FP8: Transformer Engine recipes export to Megatron-LM, torchao float8 to torchtitan
    ("llama-3-8b", dict(tp=2, pp=1, dp=4, zero=1), dict(seq_len=8192, global_batch=64,
                                                        precision=Precision.FP8)),
    ("llama-3-8b", dict(tp=1, pp=1, dp=8, zero=1), dict(
        seq_len=8192, global_batch=64, precision=Precision.FP8, fp8_recipe="te-current")),
    ("llama-3-8b", dict(tp=1, pp=1, dp=8, zero=3), dict(
        seq_len=8192, global_batch=64, precision=Precision.FP8, fp8_recipe="torchao")),
]


def _case(cat, i):
    name, lay, tr = CASES[i]
    return Layout(**lay), Training(**tr), cat.get(name, "model")


@pytest.mark.parametrize("i", range(len(CASES)))
def test_every_exported_option_exists_with_its_type(cat, i):
    lay, tr, m = _case(cat, i)
    support = layout_support(lay, tr, m)
    exported = 0
    if support[Framework.MEGATRON] is Reason.OK:
        args, _ = megatron_arg_list(lay, tr, m, 8)
        _check_megatron(args)
        a = dict(args)
        # batch arithmetic: global = micro x dp x accumulation, dp = GPUs / (TP PP CP)
        dp = lay.gpus // (int(a["--tensor-model-parallel-size"])
                          * int(a["--pipeline-model-parallel-size"])
                          * int(a.get("--context-parallel-size", 1)))
        assert int(a["--global-batch-size"]) % (int(a["--micro-batch-size"]) * dp) == 0
        exported += 1
    else:
        with pytest.raises(ExportError):
            megatron_args(lay, tr, m)
    if Reason.OK in (support[Framework.DEEPSPEED], support[Framework.MEGATRON_DEEPSPEED]):
        cfg = deepspeed_config_dict(lay, tr, m)
        _check_deepspeed(cfg)
        # DeepSpeed: train_batch_size = micro x accumulation x the data-parallel world it
        # counts: every GPU on the AutoTP path (no mpu, runtime/config.py L720-724), the DP
        # ranks on Megatron-DeepSpeed (its mpu)
        autotp = "tensor_parallel" in cfg
        world = lay.gpus if autotp else lay.dp
        assert cfg["train_batch_size"] == (cfg["train_micro_batch_size_per_gpu"]
                                           * cfg["gradient_accumulation_steps"] * world)
        assert cfg["gradient_accumulation_steps"] * tr.micro_batch * lay.dp == tr.global_batch
        if autotp:
            assert cfg["zero_optimization"]["stage"] <= 2  # autotp-training.md L20
            assert cfg["_launch"]["launcher"].startswith("DeepSpeed (AutoTP")
        assert json.loads(deepspeed_config(lay, tr, m)) == cfg
        exported += 1
    else:
        with pytest.raises(ExportError):
            deepspeed_config(lay, tr, m)
    # torchtitan also needs a model flavour of the model's shape (mixtral has none)
    if support[Framework.TORCHTITAN] is Reason.OK and flavour_of(m):
        sec, _ = torchtitan_sections(lay, tr, m)
        _check_torchtitan(sec)
        assert tomllib.loads(torchtitan_toml(lay, tr, m)) == sec
        t, p = sec["training"], sec["parallelism"]
        dp = p["data_parallel_replicate_degree"] * p["data_parallel_shard_degree"]
        assert dp * p["tensor_parallel_degree"] * p["pipeline_parallel_degree"] \
            * p["context_parallel_degree"] == lay.gpus
        assert t["global_batch_size"] % (t["local_batch_size"] * dp) == 0
        if p["pipeline_parallel_degree"] > 1:
            assert t["local_batch_size"] * dp == t["global_batch_size"]
            assert t["local_batch_size"] % p["pipeline_parallel_microbatch_size"] == 0
        exported += 1
    else:
        with pytest.raises(ExportError):
            torchtitan_toml(lay, tr, m)
    assert exported >= 1  # every case is runnable somewhere


def test_cases_cover_every_exporter(cat):
    ran = {f: 0 for f in Framework}
    for i in range(len(CASES)):
        for f, r in layout_support(*_case(cat, i)).items():
            ran[f] += r is Reason.OK
    assert all(n >= 3 for n in ran.values()), ran


# ---- the architecture flags ------------------------------------------------------------------
def test_llama3_70b_megatron_builds_the_same_model(cat):
    lay, tr, m = _case(cat, 0)
    text = megatron_args(lay, tr, m, 8)
    args = dict(megatron_arg_list(lay, tr, m, 8)[0])
    # meta-llama/Meta-Llama-3-70B config.json: 80 layers, hidden 8192, 64 heads, 8 KV heads,
    # intermediate 28672, rope_theta 500000, untied, no biases, RMSNorm, vocab 128256
    assert args["--num-layers"] == "80" and args["--hidden-size"] == "8192"
    assert args["--num-attention-heads"] == "64" and args["--kv-channels"] == "128"
    assert "--group-query-attention" in args and args["--num-query-groups"] == "8"
    assert "--swiglu" in args and args["--ffn-hidden-size"] == "28672"
    assert args["--normalization"] == "RMSNorm"
    assert args["--position-embedding-type"] == "rope" and args["--rotary-base"] == "500000"
    assert "--untie-embeddings-and-output-weights" in args and "--disable-bias-linear" in args
    assert int(args["--max-position-embeddings"]) >= int(args["--seq-length"]) == 8192
    # no vocabulary padding: 128256 = 8 x 16032 is a multiple of TP 8 x the chosen multiple
    mult = int(args["--make-vocab-size-divisible-by"])
    assert args["--vocab-size"] == "128256" and 128256 % (mult * 8) == 0
    assert "--use-distributed-optimizer" in args  # ZeRO-1
    assert text.count("--tensor-model-parallel-size 8") == 1
    # a shell script: the environment Megatron asserts with TP (arguments.py L1477-1479), then
    # torchrun pretrain_gpt.py with the flags (comments stripped, continuations joined)
    assert any(ln.startswith("export CUDA_DEVICE_MAX_CONNECTIONS=1  # ")
               for ln in text.splitlines())
    body = "\n".join(ln for ln in text.splitlines()
                     if not ln.startswith(("#", "export ", "unset ")))
    words = shlex.split(body.replace("\\\n", " "))
    assert words[0] == "torchrun" and words[words.index("pretrain_gpt.py") + 1] == "--num-layers"


def test_mixtral_megatron_has_the_experts(cat):
    lay, tr, m = _case(cat, 8)
    args = dict(megatron_arg_list(lay, tr, m, 8)[0])
    # mistralai/Mixtral-8x7B-v0.1 config.json: 8 local experts, 2 per token
    assert args["--num-experts"] == "8" and args["--moe-router-topk"] == "2"
    assert args["--moe-ffn-hidden-size"] == "14336"
    assert args["--expert-model-parallel-size"] == "8"
    assert args["--data-parallel-sharding-strategy"] == "optim_grads_params"  # ZeRO-3


def test_405b_pp16_export_has_the_evaluated_split(cat):
    # 126 + 2 = 128 = 16 x 8: the embedding and the loss a layer each (7, 8 x 14, 7; shapes.py)
    assert split_layers(126, 16) == [7] + [8] * 14 + [7]
    lay, tr, m = _case(cat, 7)
    args = dict(megatron_arg_list(lay, tr, m, 8)[0])
    layout = args["--pipeline-model-parallel-layout"]
    assert layout == "Et*7|" + "|".join(["t*8"] * 14) + "|t*7L"
    # read back the way Megatron parses it (pipeline_parallel_layer_layout.py L283-310)
    stages = [st.replace("E", "").replace("L", "") for st in layout.split("|")]
    assert [int(st[2:]) for st in stages] == split_layers(126, 16)
    assert "--decoder-first-pipeline-num-layers" not in args
    text = megatron_args(lay, tr, m, 8)
    assert f"--pipeline-model-parallel-layout '{layout}'" in text  # quoted for the shell


def test_405b_interleaved_export_writes_the_evaluated_virtual_stages(cat):
    # Megatron-Bridge's H100 405B layout TP 8 PP 8 CP 2 VP 8 (public_cases._megatron_dense):
    # 126 layers over 8 x 8 = 64 chunks do not divide, so no --num-layers-per-virtual-
    # pipeline-stage; the ranks hold split_layers(126, 8) = 15, 16 x 6, 15 cut into 8 chunks:
    # 16 = 8 x 2, 15 = 1 + 7 x 2, the short chunk first on rank 0 (the embedding's) and last
    # on rank 7 (the loss's); chunk v of rank p is virtual stage v x 8 + p
    from optimus_calc.evaluate.shapes import virtual_stage_layers
    chunks = virtual_stage_layers(126, 8, 8)
    assert chunks[:8] == [1] + [2] * 7 and chunks[8:63] == [2] * 55 and chunks[63] == 1
    m = cat.get("llama-3-405b", "model")
    lay = Layout(tp=8, pp=8, cp=2, dp=8, zero=1, interleave=8)
    tr = Training(seq_len=8192, global_batch=512, micro_batch=1)
    args = dict(megatron_arg_list(lay, tr, m, 8)[0])
    assert "--num-layers-per-virtual-pipeline-stage" not in args
    layout = args["--pipeline-model-parallel-layout"]
    stages = layout.split("|")
    assert len(stages) == 64 and stages[0] == "Et*1" and stages[-1] == "t*1L"
    assert [int(st.replace("E", "").replace("L", "")[2:]) for st in stages] == chunks
    assert sum(chunks) == 126
    # at most 126 layers + the embedding's and the loss's chunks: the GB200 recipe's PP 16 x 8
    from optimus_calc.evaluate.shapes import max_chunks
    assert max_chunks(126) == 16 * 8


def test_uneven_split_with_mtp_puts_the_mtp_layer_last():
    assert stage_layout([1, 2, 2], 1) == "Et*1|t*2|t*2mL"
    assert layout_string([1, 2, 2]) == "Et*1|t*2|t*2L"


def test_megatron_environment_follows_the_zero_stage(cat):
    m = cat.get("llama-3-70b", "model")
    tr = Training(seq_len=4096, global_batch=64)
    fsdp = megatron_args(Layout(tp=2, pp=1, dp=8, zero=3), tr, m, 8)
    assert "unset CUDA_DEVICE_MAX_CONNECTIONS" in fsdp  # arguments.py L1166-1167
    plain = megatron_args(Layout(tp=1, pp=1, dp=16, zero=1), tr, m, 8)
    assert "CUDA_DEVICE_MAX_CONNECTIONS" not in plain


def test_deepspeed_config_details(cat):
    lay, tr, m = _case(cat, 2)  # ZeRO-3, NVMe optimizer + parameter offload
    cfg = deepspeed_config_dict(lay, tr, m)
    z = cfg["zero_optimization"]
    assert z["stage"] == 3 and z["offload_optimizer"]["device"] == "nvme"
    assert z["offload_param"]["device"] == "nvme" and "nvme_path" in z["offload_param"]
    assert cfg["aio"]["block_size"] == 1048576  # DeepSpeed's default, swap_tensor/constants.py
    # ZeRO-3 knobs from the memory model: 4 bytes x largest layer / TP = 2 bf16 layers live
    assert z["stage3_max_live_parameters"] == -(-4 * m.largest_layer_params // (4 * 2))
    assert z["reduce_bucket_size"] == 500_000_000 and isinstance(z["reduce_bucket_size"], int)
    assert "fp32" not in cfg
    lay, tr, m = _case(cat, 3)  # SuperOffload keeping a quarter of the optimizer on the GPU
    off = deepspeed_config_dict(lay, tr, m)["zero_optimization"]["offload_optimizer"]
    assert off["super_offload"] is True and off["ratio"] == 0.75 and off["device"] == "cpu"


def test_deepspeed_never_stage23_with_pp_nor_offload_at_stage0(cat):
    m = cat.get("llama-3-70b", "model")
    tr = Training(seq_len=4096, global_batch=64)
    exported = refused = 0
    for zero, off, pp, params in itertools.product(range(4), list(Offload), (1, 2, 4),
                                                   (False, True)):
        if params and off not in (Offload.CPU, Offload.NVME):
            continue
        lay = Layout(tp=1, pp=pp, dp=16 // pp, zero=zero, offload=off, offload_params=params)
        try:
            cfg = deepspeed_config_dict(lay, tr, m)
        except ExportError:
            refused += 1
            continue
        exported += 1
        z = cfg["zero_optimization"]
        assert not (z["stage"] >= 2 and pp > 1)
        assert not (z["stage"] == 0 and ("offload_optimizer" in z or "offload_param" in z))
        assert "offload_param" not in z or z["stage"] == 3
        assert z.get("offload_optimizer", {}).get("device") != "nvme" or z["stage"] == 3
    assert exported >= 10 and refused >= 10


def test_hf_import_reads_rope_theta(tmp_path):
    from optimus_calc.hf_import import load_hf_config
    cfg = json.loads((Path(__file__).parent / "data" / "hf" / "llama" / "config.json").read_text())
    cfg["rope_theta"] = 500000.0  # meta-llama/Meta-Llama-3-70B config.json
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    m = load_hf_config(p)
    assert m.rope_base == 500000.0
    lay, tr = Layout(tp=8, pp=1, dp=1, zero=1), Training(seq_len=8192, global_batch=8)
    assert dict(megatron_arg_list(lay, tr, m, 8)[0])["--rotary-base"] == "500000"


def test_torchtitan_pipeline_keys_reproduce_the_evaluated_split(cat):
    """torchtitan v0.2.2 weighs the embedding and the head as a layer each unless both
    *_less_layers keys are 0 (torchtitan/config/job_config.py L377, L383), and its own uneven
    split puts the extra layers first (distributed/pipeline_parallel.py L305-307): the export
    sets both to 0 and names each stage's modules when the split is uneven."""
    from optimus_calc.frameworks.torchtitan_export import virtual_stage_layers
    tr = Training(seq_len=8192, global_batch=512)
    even, _ = torchtitan_sections(Layout(tp=8, pp=4, dp=1, zero=0), tr,
                                  cat.get("llama-3-70b", "model"))
    p = even["parallelism"]
    assert p["pipeline_parallel_first_stage_less_layers"] == 0
    assert p["pipeline_parallel_last_stage_less_layers"] == 0
    assert p["pipeline_parallel_layers_per_stage"] == 20  # 80 layers / 4 stages
    assert "module_fqns_per_model_part" not in p
    uneven, _ = torchtitan_sections(Layout(tp=8, pp=16, dp=1, zero=0), tr,
                                    cat.get("llama-3-405b", "model"))
    parts = uneven["parallelism"]["module_fqns_per_model_part"]
    assert "pipeline_parallel_layers_per_stage" not in uneven["parallelism"]
    # 126 = 7 + 14 x 8 + 7, the short stages first and last (evaluate/shapes.py split_layers)
    assert [sum(n.startswith("layers.") for n in s) for s in parts] == [7] + [8] * 14 + [7]
    assert parts[0][:2] == ["tok_embeddings", "layers.0"]
    assert parts[-1][-3:] == ["layers.125", "norm", "output"]
    # interleaved: virtual stage j runs on rank j mod pp. 27 layers over 4 ranks: 6, 7, 7, 7
    # (extra on the last); each rank's two chunks 3 + 3 or 3 + 4 (extra on the later chunk), so
    # stages 0-3 (first chunks) 3, 3, 3, 3 and stages 4-7 (second chunks) 3, 4, 4, 4
    v = virtual_stage_layers(27, 4, 2)
    assert v == [3, 3, 3, 3, 3, 4, 4, 4]
    assert [v[r] + v[r + 4] for r in range(4)] == [6, 7, 7, 7]


def test_deepspeed_exports_autoep_with_autotp(cat):
    from optimus_calc.frameworks.deepspeed_export import deepspeed_config_dict
    m = cat.get("qwen3-30b-a3b", "model")  # 128 experts
    tr = Training(seq_len=4096, global_batch=64, sequence_parallel=False)  # AutoTP: no SP
    cfg = deepspeed_config_dict(Layout(tp=2, pp=1, dp=8, ep=8, zero=2), tr, m)
    _check_deepspeed(cfg)
    assert cfg["tensor_parallel"] == {"autotp_size": 2}
    # EP 8 folded over TP 2: 16 ranks, 128 / 16 = 8 experts per GPU
    assert cfg["expert_parallel"] == {"enabled": True, "autoep_size": 16}
    assert "8 of 128 experts per GPU" in " ".join(cfg["_launch"]["notes"])
    cfg = deepspeed_config_dict(Layout(tp=1, pp=1, dp=8, ep=8, zero=2), tr, m)
    assert cfg["expert_parallel"] == {"enabled": True, "autoep_size": 8}
    assert "deepspeed.moe.layer.MoE" not in json.dumps(cfg)
