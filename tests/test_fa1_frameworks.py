"""FlashAttention-1 (--attention-kernel fa1) and the frameworks: which run it (the rules), and
what the exporters write for it. Megatron-LM @ d98e8a64 pins FlashAttention 2, 3 or 4
(core/transformer/transformer_config.py L157, L3194-3197) and Transformer Engine's flash
backend needs flash-attn >= 2.1.1; torchtitan v0.2.2 runs PyTorch SDPA, FlexAttention or varlen
(torchtitan/models/attention.py L174-178); Megatron-DeepSpeed @ 4efb479d has
--use-flash-attn-v1 and --use-flash-attn-v2 (megatron/arguments.py L927, L930); DeepSpeed's
config selects no attention kernel (the model code does)."""

import pytest

from optimus_calc.frameworks import Framework, Reason
from optimus_calc.specs.training import AttentionKernel

A100 = ("llama-2-7b", "--node", "dgx-a100", "--nodes", "1", "--seq-len", "16384",
        "--global-batch", "64")


def test_megatron_and_torchtitan_refuse_fa1_deepspeed_runs_it(run):
    fa1 = run("step", *A100, "--micro-batch", "1", "--zero", "1", "--attention-kernel", "fa1")
    fa2 = run("step", *A100, "--micro-batch", "1", "--zero", "1", "--attention-kernel", "fa2")
    assert fa1.code == 0 and fa2.code == 0
    assert "- runs on DeepSpeed, Megatron-DeepSpeed\n" in fa1.out
    assert "- runs on DeepSpeed, Megatron-LM, Megatron-DeepSpeed\n" in fa2.out


@pytest.mark.parametrize("target,model,where", [
    ("megatron", "llama-2-7b", "transformer_config.py L157, L3194-3197"),
    ("torchtitan", "llama-3-8b", "torchtitan/models/attention.py L174-178")])
def test_export_refuses_fa1_where_the_framework_lacks_it(run, target, model, where):
    r = run("plan", model, *A100[1:], "--attention-kernel", "fa1", "--export", target)
    assert r.code == 2
    line = r.err.strip()
    assert "\n" not in line and "FlashAttention-1" in line and where in line
    # no layout escapes a rule on the run: no hint to plan with --framework
    assert "--framework" not in line


def test_megatron_deepspeed_launch_names_the_kernel(run):
    # TP 2 x PP 2 on 8 GPUs: only Megatron-DeepSpeed (its mpu) runs it among the DeepSpeed pair
    args = ("plan", *A100, "--tp", "2", "--pp", "2", "--interleave", "1", "--export",
            "deepspeed")
    fa1 = run(*args, "--attention-kernel", "fa1").json()["_launch"]
    fa2 = run(*args, "--attention-kernel", "fa2").json()["_launch"]
    assert fa1["launcher"].startswith("Megatron-DeepSpeed")
    assert " --use-flash-attn-v1 " in fa1["command"] and "v2" not in fa1["command"]
    assert " --use-flash-attn-v2 " in fa2["command"] and "v1" not in fa2["command"]


def test_deepspeed_config_notes_the_models_kernel(run):
    # --framework deepspeed: the recommended row is plain DeepSpeed's (AutoTP, SP off), not
    # Megatron-DeepSpeed's (its TP 2 rows with sequence parallelism rank first)
    d = run("plan", *A100, "--attention-kernel", "fa1", "--framework", "deepspeed",
            "--export", "deepspeed").json()
    assert d["_launch"]["launcher"].startswith("DeepSpeed")
    assert any(n.startswith("attention: the config selects no kernel") and
               "FlashAttention-1" in n for n in d["_launch"]["notes"])


def test_the_rules_read_the_named_kernel_only():
    from optimus_calc.frameworks.registry import named_kernel
    from optimus_calc.specs.training import Training
    t = dict(seq_len=2048, micro_batch=1, global_batch=8)
    assert named_kernel(Training(**t, attention_kernel=AttentionKernel.FA1)) == "fa1"
    # the GPU's default kernel, or none: nothing named
    assert named_kernel(Training(**t)) == ""
    assert named_kernel(Training(**t, flash_attention=False)) == ""
    # a named fa1 with flash attention off is no kernel either (the unfused path runs)
    assert named_kernel(Training(**t, attention_kernel=AttentionKernel.FA1,
                                 flash_attention=False)) == ""


def test_calibrate_says_a_profile_does_not_carry_a_named_kernel(cat):
    # a profile sets flash_attention_eta, the GPU's default kernel's (fa2 on A100): runs that
    # name fa1 get a note; runs on the default kernel, or naming it, get none
    from types import SimpleNamespace as NS
    from optimus_calc.report.calibrate_view import other_kernel_notes
    from optimus_calc.specs.training import Training
    gpu = cat.get("a100-80gb", "gpu")

    def r(**kw):
        tr = Training(seq_len=2048, micro_batch=1, global_batch=8, **kw)
        return NS(inputs=NS(training=tr, hw=NS(gpu=gpu)))
    fa1 = AttentionKernel.FA1
    notes = other_kernel_notes([r(attention_kernel=fa1), r(attention_kernel=fa1), r(),
                                r(attention_kernel=AttentionKernel.FA2)])
    assert len(notes) == 1
    assert notes[0].startswith("2 run(s) name --attention-kernel fa1, not a100-80gb's default "
                               "(fa2)")
    assert other_kernel_notes([r(), r(attention_kernel=AttentionKernel.FA2)]) == []


def test_calibrate_says_the_engine_profile_times_another_kernel(cat):
    # round 18: the DeepSpeed engine's profile times FlashAttention-2 on H100, whose default
    # (the kernel flash_attention_eta stands for) is cuDNN: those runs get the same note
    from types import SimpleNamespace as NS
    from optimus_calc.report.calibrate_view import other_kernel_notes
    from optimus_calc.specs.assumptions import Assumptions
    from optimus_calc.specs.training import Training
    gpu = cat.get("h100-sxm", "gpu")
    tr = Training(seq_len=2048, micro_batch=1, global_batch=8)
    engine = NS(inputs=NS(training=tr, hw=NS(gpu=gpu),
                          assumptions=Assumptions(flash_attention_2_over_cudnn=1)))
    neutral = NS(inputs=NS(training=tr, hw=NS(gpu=gpu), assumptions=Assumptions()))
    (note,) = other_kernel_notes([engine, neutral])
    assert note.startswith("1 run(s) time fa2 under their framework's profile, not h100-sxm's "
                           "default (cudnn)")


def test_plan_html_of_a_row_two_frameworks_share(run, tmp_path):
    # fa1 leaves DeepSpeed and Megatron-DeepSpeed, whose profiles apply identically: the row's
    # framework is both ("deepspeed, megatron-deepspeed"); the page re-applies the first one
    # (it raised KeyError on the joined name, an internal error, exit 1). TP 1: with TP 2 the
    # sequence-parallel rows rank first, and only Megatron-DeepSpeed runs them (AutoTP has no SP)
    args = ("plan", *A100, "--attention-kernel", "fa1", "--tp", "1")
    rec = run(*args, "--format", "json").json()["recommended"]
    assert rec["framework"] == "deepspeed, megatron-deepspeed"
    page = tmp_path / "plan.html"
    r = run(*args, "--format", "html", "-o", str(page))
    assert r.code == 0 and 'data-name="step.time"' in page.read_text()


def test_megatron_deepspeed_runs_flashattention_unless_told_not_to(cat):
    # without --use-flash-attn-* its core attention is unfused (transformer.py L396-410): the
    # launch names FlashAttention-2 for the GPU's default kernel (with a note for cuDNN GPUs),
    # nothing with --no-flash-attn, and a named FA3 or cuDNN kernel is refused
    from optimus_calc.frameworks import layout_support
    from optimus_calc.frameworks.megatron_deepspeed_export import launch_args
    from optimus_calc.specs.training import Layout, Training
    m, lay = cat.get("llama-2-7b", "model"), Layout(tp=2, pp=2, dp=2, zero=1)
    t = dict(seq_len=4096, global_batch=64)
    words, notes = launch_args(lay, Training(**t), m)
    assert "--use-flash-attn-v2" in words.split() and any("cuDNN" in n for n in notes)
    words, notes = launch_args(lay, Training(**t, flash_attention=False), m)
    assert "--use-flash-attn" not in words
    for k in (AttentionKernel.FA3, AttentionKernel.CUDNN):
        sup = layout_support(lay, Training(**t, attention_kernel=k), m)
        assert sup[Framework.MEGATRON_DEEPSPEED] is getattr(Reason, f"MD_{k.value.upper()}")


@pytest.mark.parametrize("kw,flags", [
    ({}, []),  # the GPU's default: --attention-backend auto, Transformer Engine's choice
    ({"attention_kernel": AttentionKernel.FA2}, ["--attention-backend flash",
                                                 "--flash-attention-version 2"]),
    ({"attention_kernel": AttentionKernel.FA3}, ["--attention-backend flash",
                                                 "--flash-attention-version 3"]),
    ({"attention_kernel": AttentionKernel.CUDNN}, ["--attention-backend fused"]),
    ({"flash_attention": False}, ["--attention-backend unfused"])])
def test_megatron_launch_pins_the_planned_kernel(cat, kw, flags):
    # Megatron-LM @ d98e8a64: --attention-backend flash|fused|unfused|local|auto
    # (core/transformer/enums.py L51-57, default auto) and --flash-attention-version 2|3|4
    # (transformer_config.py L151, L157): the kernel the plan assumed, not TE's own pick
    from optimus_calc.frameworks import exporter
    from optimus_calc.specs.training import Layout, Training
    text = exporter("megatron").render(Layout(tp=1, pp=1, dp=8, zero=1),
                                       Training(seq_len=4096, global_batch=64, **kw),
                                       cat.get("llama-3-8b", "model"), 8)
    lines = [ln.strip(" \\") for ln in text.splitlines()]
    assert [ln for ln in lines if ln.startswith(("--attention-backend",
                                                  "--flash-attention-version"))] == flags
