"""Sliding-window models on the frameworks: what each launch builds must be the windowed
attention the plan timed (compute.attention_span), or the framework must refuse the model."""

import json
from pathlib import Path

import pytest

from optimus_calc.frameworks.megatron_export import megatron_arg_list
from optimus_calc.specs.training import Layout, Training

HF = Path(__file__).parent / "data" / "hf"


def _window_args(model) -> tuple[dict, list]:
    lay, tr = Layout(tp=1, pp=1, dp=8), Training(seq_len=4096, global_batch=64)
    args, notes = megatron_arg_list(lay, tr, model, 8)
    return {f: v for f, v in args if f.startswith("--window")}, notes


def _megatron_windowed(L: int, skip) -> int:
    """Layers Megatron-LM windows (core/transformer/utils.py L531-547 @ d98e8a64, 1-based
    layer_number): with an int N all but the multiples of N, with a list its 1s."""
    if skip is None:
        return L
    if skip.startswith("["):  # "[1]*a+[0]*b": the shape _eval_pattern accepts
        ones, zeros = (int(part.split("*")[1]) for part in skip.split("+"))
        pattern = [1] * ones + [0] * zeros
        assert len(pattern) == L  # Megatron reads window_attn_skip_freq[layer_number - 1]
        return sum(pattern)
    return sum(1 for layer in range(1, L + 1) if layer % int(skip))


def test_megatron_export_writes_mistral_window(cat):
    # Mistral-7B-v0.1: W = 4096 on all 32 layers; TE's (left, right) window is inclusive, so
    # left = 4096 - 1 = 4095 (Megatron-Bridge mistral_bridge.py L58: sliding_window - 1); no
    # skip frequency (every layer windowed). Before the fix no --window-size was written: the
    # script trained full attention while the plan timed a 6144-token span at seq 8192.
    w, _ = _window_args(cat.get("mistral-7b", "model"))
    assert w == {"--window-size": "4095,0"}


def test_megatron_export_writes_gpt_oss_alternation(cat):
    # gpt-oss-120b: 128-token window on 18 of 36 layers, the first of each pair: left 127 and
    # N = 2 (gpt_oss_bridge.py L87-88 sets the same); Megatron windows layer_number % 2 != 0:
    # layers 1, 3, ..., 35 = 18
    w, _ = _window_args(cat.get("gpt-oss-120b", "model"))
    assert w == {"--window-size": "127,0", "--window-attn-skip-freq": "2"}
    assert _megatron_windowed(36, w["--window-attn-skip-freq"]) == 18


@pytest.mark.parametrize("windowed,want", [
    (30, "6"),               # 36 - 36 // 6 = 30: every 6th full
    (20, "[1]*20+[0]*16"),   # 36 - 36 // k is 18, 24, 27, ... never 20: the count as a list
])
def test_megatron_export_keeps_the_windowed_count(tmp_path, windowed, want):
    from optimus_calc.hf_import import load_hf_config
    cfg = json.loads((HF / "gpt_oss" / "config.json").read_text())
    cfg["layer_types"] = (["sliding_attention"] * windowed
                          + ["full_attention"] * (36 - windowed))
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    m = load_hf_config(tmp_path / "config.json")
    w, notes = _window_args(m)
    assert w["--window-attn-skip-freq"] == want
    assert _megatron_windowed(36, want) == windowed
    assert any("layer_types" in n for n in notes) == want.startswith("[")


def test_megatron_export_of_a_dense_full_model_has_no_window(cat):
    assert _window_args(cat.get("llama-3-8b", "model"))[0] == {}


def test_megatron_deepspeed_refuses_a_windowed_model(cat, run):
    """Megatron-DeepSpeed @ 4efb479 has no window argument (megatron/arguments.py) and builds
    FlashSelfAttention(causal=True) or CoreAttention over the whole sequence: mistral-7b there
    trains full attention, not the span the plan times. It ran it; now MD_ARCH refuses it."""
    from optimus_calc.frameworks import Framework, Reason, layout_support
    from optimus_calc.frameworks.exporting import ExportError
    from optimus_calc.frameworks.megatron_deepspeed_export import model_args
    m = cat.get("mistral-7b", "model")
    lay, tr = Layout(tp=2, pp=2, dp=2, zero=1), Training(seq_len=8192, global_batch=64)
    assert layout_support(lay, tr, m)[Framework.MEGATRON_DEEPSPEED] is Reason.MD_ARCH
    with pytest.raises(ExportError, match="sliding-window"):
        model_args(lay, tr, m)
    # the same shape without the window (llama-2-7b's Llama layout at TP 2 x PP 2) still runs
    assert layout_support(lay, tr, m.model_copy(update=dict(
        sliding_window=0, sliding_window_layers=0)))[Framework.MEGATRON_DEEPSPEED] is Reason.OK
    plan = run("plan", "mistral-7b", "--framework", "megatron-deepspeed", "--format", "json")
    assert plan.code == 0 and plan.json()["recommended"] is None  # nothing it runs


@pytest.mark.parametrize("model", ["mistral-7b", "gpt-oss-20b"])
def test_megatron_refuses_context_parallelism_with_a_window(cat, model):
    """Transformer Engine @ d0067d0 asserts cp_comm_type in (a2a, all_gather) when the window is
    not (-1, 0) / (-1, -1) (context_parallel.py L5054-5060); Megatron's default --cp-comm-type
    is p2p, the ring whose overlap the profile times (cp_overlap 1). Megatron-LM ran CP 2 on a
    windowed model; MG_CP_WINDOW now refuses it, and CP 1 (or a full model at CP 2) still runs."""
    from optimus_calc.frameworks import Framework, Reason, layout_support
    m = cat.get(model, "model")
    tr = Training(seq_len=4096, global_batch=64)
    ep = 4 if m.is_moe else 1
    cp2, cp1 = Layout(tp=1, pp=1, dp=4, cp=2, ep=ep, zero=1), Layout(tp=1, pp=1, dp=8, ep=ep,
                                                                      zero=1)
    assert layout_support(cp2, tr, m)[Framework.MEGATRON] is Reason.MG_CP_WINDOW
    assert layout_support(cp1, tr, m)[Framework.MEGATRON] is Reason.OK
    full = m.model_copy(update=dict(sliding_window=0, sliding_window_layers=0))
    assert layout_support(cp2, tr, full)[Framework.MEGATRON] is Reason.OK


def test_torchtitan_gpt_oss_refuses_context_parallelism(cat):
    """torchtitan v0.2.2 GptOssModelArgs.update_from_config raises NotImplementedError for
    context_parallel_degree > 1 (models/gpt_oss/model/args.py L89-92); it was listed as
    running gpt-oss-20b at CP 2. llama3 8B (llama-3-8b) keeps CP (its parallelize.py applies
    it)."""
    from optimus_calc.frameworks import Framework, Reason, layout_support
    tr = Training(seq_len=4096, global_batch=64)
    oss = Layout(tp=1, pp=1, dp=4, cp=2, ep=4, zero=3)
    assert layout_support(oss, tr, cat.get("gpt-oss-20b", "model"))[Framework.TORCHTITAN] \
        is Reason.TT_GPT_OSS_CP
    no_cp = Layout(tp=1, pp=1, dp=8, ep=4, zero=3)
    assert layout_support(no_cp, tr, cat.get("gpt-oss-20b", "model"))[Framework.TORCHTITAN] \
        is Reason.OK
    dense = Layout(tp=1, pp=1, dp=4, cp=2, zero=3)
    assert layout_support(dense, tr, cat.get("llama-3-8b", "model"))[Framework.TORCHTITAN] \
        is Reason.OK


def test_plan_names_the_architecture_when_no_framework_can_build_the_model(run):
    """A model no framework searched can build: the plan's reason named the layout rule that
    rejected the most layouts ("most often, DeepSpeed: ZeRO-2/3 are incompatible with pipeline
    parallelism"), which no layout change cures; it now names the architecture row."""
    for model in ("mistral-7b", "qwen3-14b"):  # a sliding window; Q/K norms
        r = run("plan", model, "--framework", "megatron-deepspeed", "--format", "json")
        why = r.json()["why"]
        assert "cannot build this architecture" in why and "most often" not in why
    # a model it can build keeps the layout rule (llama-2-7b on one A100 node, offload to an
    # NVMe that Megatron-LM does not run)
    r = run("plan", "llama-2-7b", "--framework", "megatron", "--offloads", "nvme",
            "--format", "json")
    assert "cannot build" not in r.json()["why"]


def test_calibrate_says_when_a_runs_framework_refuses_its_layout(run, tmp_path):
    """`step --framework megatron` on a layout Megatron-LM refuses says "although its rules
    reject this layout"; `calibrate` fitted such a run in silence (here mistral-7b at CP 2,
    which MG_CP_WINDOW refuses). The report now names the row and the rule."""
    runs = tmp_path / "runs.csv"
    runs.write_text("model,nodes,cp,framework,measured_tokens_per_s\n"
                    "mistral-7b,1,2,megatron,30000\n"
                    "mistral-7b,1,1,megatron,30000\n")
    r = run("calibrate", runs, "-o", tmp_path / "p.toml")
    assert r.code == 0, r.err
    flat = " ".join(r.out.split())
    assert ("row 2: --framework megatron, although its rules reject this layout: Megatron-LM: "
            "context parallelism with a sliding window") in flat
    assert "row 3:" not in flat
