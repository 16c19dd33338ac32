"""A launch flag only another framework's profile reads is named as without effect
(report/common.unread_flags_note, FrameworkPlugin.launch_flags)."""

from __future__ import annotations

STEP = ("step", "llama-3-8b", "--node", "dgx-h100", "--nodes", "1", "--zero", "3")


def test_megatron_flags_under_torchtitan_are_named(run):
    # torchtitan's profile reads none of Megatron-LM's flags: the figures do not move, and the
    # note says which flags changed nothing
    tt = run(*STEP, "--framework", "torchtitan", "--format", "json").json()
    off = run(*STEP, "--framework", "torchtitan", "--cross-entropy-fusion", "te",
              "--no-overlap-grad-reduce", "--format", "json").json()
    assert off["step_time_s"] == tt["step_time_s"]
    assert off["unread_launch_flags"] == (
        "--no-overlap-grad-reduce, --cross-entropy-fusion te: Megatron-LM launch flags, which "
        "the torchtitan (FSDP2) profile does not read (it moves no number here; --framework "
        "megatron reads them)")
    assert "unread_launch_flags" not in tt


def test_neutral_physics_names_them_and_megatron_does_not(run):
    neutral = run(*STEP, "--cuda-graph-impl", "full_iteration", "--format", "json").json()
    assert neutral["unread_launch_flags"].startswith(
        "--cuda-graph-impl full_iteration: Megatron-LM launch flag, which framework-neutral "
        "physics does not read")
    meg = run(*STEP, "--framework", "megatron", "--cross-entropy-fusion", "te",
              "--format", "json").json()
    assert "unread_launch_flags" not in meg
    # memory too (--no-fp8-param-gather moves Megatron-LM's FP8 weights only)
    mem = run("memory", "llama-3-8b", "--node", "dgx-h100", "--zero", "1", "--precision", "fp8",
              "--no-fp8-param-gather", "--format", "json").json()
    assert mem["unread_launch_flags"].startswith("--no-fp8-param-gather: Megatron-LM")
