"""FSDP2 under full activation checkpointing gathers each block twice per micro-batch, not three
times (Assumptions.zero3_recompute_regathers; torchtitan's profile sets 0). torchtitan applies
AC to each TransformerBlock before fully_shard wraps it (models/llama3/infra/parallelize.py
parallelize_llama: apply_ac, then apply_fsdp L334-357 @ 73a0e69), so the recompute runs inside
the block's backward on the parameters its pre-backward hook unsharded; DeepSpeed's forward
hooks fetch again in the recomputed forward (issue #4784), step.dp_comm_time's 2 + r_z."""

from __future__ import annotations

import pytest

BASE = ("step", "llama-3-8b", "--node", "dgx-h100", "--nodes", "8", "--zero", "3",
        "--seq-len", "8192", "--global-batch", "64", "--format", "json")


def _dp(run, *extra):
    return run(*BASE, *extra).json()["dp_comm_s"]


@pytest.mark.parametrize("framework", ["torchtitan", "deepspeed"])
def test_the_recompute_adds_one_gather_pass_only_where_it_regathers(run, framework):
    # step.dp_comm_time for ZeRO-3: m (T_red + (2 + r_z)(T_gat + A_g)); m = 64 / 64 = 1.
    # Recompute none: T_red + 2 g. Full: + g more where the recompute gathers again (r_z 1,
    # DeepSpeed), nothing more under FSDP2 (r_z 0): the gather pass g is read off the
    # DeepSpeed pair, and the torchtitan pair must be equal
    fw = ("--framework", framework)
    none = _dp(run, "--recompute", "none", *fw)
    full = _dp(run, "--recompute", "full", *fw)
    if framework == "torchtitan":
        assert full == pytest.approx(none, rel=1e-12)
        # the same layout with the recompute's gathers typed back on: one pass more, g =
        # (none - T_red) / 2 of the two passes recompute none already has
        again = _dp(run, "--recompute", "full", *fw, "--assume", "zero3_recompute_regathers=1")
        assert again > full
    else:
        g = full - none
        assert g > 0
        # T_red + 2 g = none, so the reduction is none - 2 g and positive
        assert 0 < none - 2 * g < none


def test_torchtitan_regathers_as_deepspeed_when_typed(run):
    # the one pass the assumption adds is the same gather pass DeepSpeed's recompute adds: on
    # the same layout the two frameworks share T_gat + A_g (zero3_modules_per_layer differs:
    # 1 for FSDP2, so the per-module fixed cost A_g = n_mod x 50 us differs; compare each
    # framework with itself)
    fw = ("--framework", "torchtitan")
    none = _dp(run, "--recompute", "none", *fw)
    again = _dp(run, "--recompute", "full", *fw, "--assume", "zero3_recompute_regathers=1")
    full = _dp(run, "--recompute", "full", *fw)
    # none = T_red + 2 g, again = T_red + 3 g: again - none = g = again - full
    assert again - none == pytest.approx(again - full, rel=1e-12)


def test_megatron_fsdp_gathers_once_for_recompute_and_backward(run):
    # Megatron-LM d98e8a6 megatron_fsdp.py L128-130: "gather parameters once for both the
    # recomputation and backward computation": --framework megatron's ZeRO-3 (Megatron-FSDP)
    # has the two passes of recompute none under full recomputation too
    fw = ("--framework", "megatron")
    assert _dp(run, "--recompute", "full", *fw) == pytest.approx(
        _dp(run, "--recompute", "none", *fw), rel=1e-12)


def test_torchtitan_moe_keeps_the_experts_third_gather(run):
    # torchtitan 73a0e69 fully_shards an MoE block's experts as a unit of their own inside the
    # checkpointed block (llama4/infra/parallelize.py apply_fsdp): the recompute's forward hook
    # gathers them again, so an MoE model keeps 2 + 1 passes (the neutral count)
    args = ("step", "qwen3-30b-a3b", "--node", "dgx-h100", "--nodes", "8", "--ep", "8",
            "--zero", "3", "--seq-len", "4096", "--global-batch", "128", "--framework",
            "torchtitan", "--format", "json")
    none = run(*args, "--recompute", "none").json()["dp_comm_s"]
    full = run(*args, "--recompute", "full").json()["dp_comm_s"]
    typed = run(*args, "--recompute", "full", "--assume",
                "zero3_recompute_regathers=1").json()["dp_comm_s"]
    assert full == pytest.approx(typed, rel=1e-12) and full > none


def test_a_recompute_inside_the_backward_widens_its_window(run):
    # offload.zero3_exposed_gather_time: where the recompute reuses the backward's gather
    # (r_z 0) it runs inside the block's backward, so each module's backward window is the
    # whole W_b / n (with it) instead of (W_b - W_f) / n, and no extra pass waits: the exposed
    # gathers are no more than with the recompute's own pass typed back (r_z 1), and strictly
    # fewer on a layout whose gathers outlast the compute (llama-3-8b, 64 DGX A100, seq 1024,
    # micro-batch 1: 0.0385 s against 0.1200 s before round 18's review)
    args = ("step", "llama-3-8b", "--node", "dgx-a100", "--nodes", "64", "--seq-len", "1024",
            "--zero", "3", "--recompute", "full", "--micro-batch", "1", "--global-batch",
            "1024", "--framework", "torchtitan", "--format", "json")
    inside = run(*args).json()["dp_comm_exposed_s"]
    own = run(*args, "--assume", "zero3_recompute_regathers=1").json()["dp_comm_exposed_s"]
    assert inside < own


@pytest.mark.parametrize("regathers, expected", [(1, 3.6006), (0, 1.9004)])
def test_exposed_gathers_by_hand(regathers, expected):
    # offload.zero3_exposed_gather_time, 4 modules prefetched one ahead (d_p 1: 1e6 params a
    # module, under DeepSpeed's default bucket and live-parameter caps), a gather t_g 0.5 s,
    # one micro-batch's forward 0.8 s (t_cf 0.2 a module), backward 2.4 s with its recompute
    # (0.8 s) inside, no overlapped reduce-scatter, 50 us a gather pass and module:
    # - the recompute gathers again (r 1, DeepSpeed): 3 passes, 3 x 4 x 50e-6 = 6e-4; two
    #   forward-type passes of 0.5 + 3 x max(0, 0.5 - 0.2) = 1.4 each = 2.8; the backward's
    #   window without the recompute, t_cb = (2.4 - 0.8) / 4 = 0.4: 0.5 + 0.1 + 2 x 0.1 = 0.8;
    #   3.6006 s
    # - it reuses the backward's gather (r 0, FSDP2 / Megatron-FSDP): 2 passes, 4e-4; one
    #   forward pass 1.4; the recompute inside the backward's window, t_cb = 2.4 / 4 = 0.6:
    #   0.5 + 0 + 0 = 0.5; 1.9004 s
    from optimus_calc.evaluate.offload_step import zero3_exposed_gather
    from optimus_calc.specs.assumptions import Assumptions
    got = zero3_exposed_gather(modules=4, module_params=1e6, gather_s=0.5, forward_s=0.8,
                               backward_s=2.4, recompute_full=1.0, reduce_s=0.0,
                               asm=Assumptions(zero3_recompute_regathers=regathers))
    assert float(got) == pytest.approx(expected, rel=1e-12)


def test_the_regather_switch_is_zero_or_one(run):
    r = run(*BASE, "--assume", "zero3_recompute_regathers=0.5")
    assert r.code == 2 and "zero3_recompute_regathers: must be 0 or 1" in r.err
