"""Megatron-LM's launch flags --overlap-grad-reduce, --overlap-param-gather and
--tp-comm-overlap (issue 32 item 5): the profile times them, on by default as Megatron-Bridge's
recipes set them (recipes/common.py L83-84, training/comm_overlap.py L575-578 @ 067f987), and
the export writes exactly the ones the profile times where Megatron-LM accepts them."""

from __future__ import annotations

import pytest

from optimus_calc.equations.recording import eq
from optimus_calc.evaluate.context import fill_layout, resolve_hardware
from optimus_calc.evaluate.step import estimate_step
from optimus_calc.frameworks.megatron_export import megatron_arg_list
from optimus_calc.frameworks.physics import apply_framework
from optimus_calc.gemm_calibration import NARAYANAN_TABLE1
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Layout, Precision, Recompute, Training, ZeroStage

from tests.test_export import _check_megatron

# Today's (0.x, before issue 32) Megatron-LM profile, written out as plain assumptions: async
# TP backward (o_tb = 1), one gradient bucket reduced after the backward (o_dr = 0), the
# ZeRO-1/2 gather hidden by the next forward (o_pg = 1), TP forward collectives exposed
# (tp_overlap = 0), the offload settings; grad_bytes 4 applies to bf16 only.
TODAY = dict(tp_backward_overlap=1, dp_reduce_overlap=0, dp_gather_overlap=1, tp_overlap=0,
             grads_stay_on_gpu=1, ds_zero1_overlap_comm=0, ds_zero2_overlap_comm=0)


def _narayanan(cat, row, zero):
    """One Narayanan et al. SC'21 Table 1 run as validate lays it out (gemm_calibration
    .narayanan_cases), in fp16 as the paper's runs (mixed precision, Megatron-LM --fp16)."""
    name, tp, pp, gpus, gb, mb, lpv, _ = row
    model = cat.get(name, "model")
    hw = resolve_hardware(cat, "dgx-a100", gpus // 8)
    v = model.layers // (pp * lpv) if lpv else 1
    lay = fill_layout(hw, tp, pp, None, 1, zero=ZeroStage(zero), interleave=v)
    return model, hw, lay


def _time(model, hw, lay, framework, **flags):
    tr = Training(seq_len=2048, global_batch=_GB[model.name], micro_batch=_MB[model.name],
                  recompute=Recompute.FULL, flash_attention=False, precision=Precision.FP16,
                  **flags)
    tr, asm, _ = apply_framework(framework, lay, tr, Assumptions(), model)
    return estimate_step(model, hw, lay, tr, asm).step_time_s


_GB = {r[0]: r[4] for r in NARAYANAN_TABLE1}
_MB = {r[0]: r[5] for r in NARAYANAN_TABLE1}


def _today(model, hw, lay):
    tr = Training(seq_len=2048, global_batch=_GB[model.name], micro_batch=_MB[model.name],
                  recompute=Recompute.FULL, flash_attention=False, precision=Precision.FP16)
    return estimate_step(model, hw, lay, tr, Assumptions(**TODAY)).step_time_s


@pytest.mark.parametrize("row", NARAYANAN_TABLE1, ids=[r[0] for r in NARAYANAN_TABLE1])
def test_megatron_with_the_recipe_flags_is_no_slower_than_neutral(cat, row):
    model, hw, lay = _narayanan(cat, row, zero=1)
    neutral = _time(model, hw, lay, None)
    megatron = _time(model, hw, lay, "megatron")
    # the profile hides what neutral physics hides (buckets, gathers) and more: the backward's
    # TP collectives (async dgrad) and, with --tp-comm-overlap, the forward's
    assert megatron <= neutral * (1 + 1e-12)
    if row[1] > 1:  # TP > 1: the hidden TP traffic makes it strictly faster
        assert megatron < 0.99 * neutral


@pytest.mark.parametrize("row", NARAYANAN_TABLE1, ids=[r[0] for r in NARAYANAN_TABLE1])
def test_flags_off_give_todays_profile_back(cat, row):
    """ZeRO-0 (plain Megatron DDP, no parameter gather): --no-overlap-grad-reduce
    --no-tp-comm-overlap is exactly today's profile (TODAY); at TP 1 (no TP traffic)
    --no-overlap-grad-reduce alone is. Turning each flag off never makes a step faster. The
    loss unfused in both (--cross-entropy-fusion none: the assumptions' default count, which
    TODAY keeps; the profile's default is the fused native one, fewer bytes)."""
    model, hw, lay = _narayanan(cat, row, zero=0)
    today = _today(model, hw, lay)
    off = _time(model, hw, lay, "megatron", overlap_grad_reduce=False, tp_comm_overlap=False,
                overlap_p2p_comm=False, cross_entropy_fusion="none")
    assert off == pytest.approx(today, rel=1e-12)
    no_ogr = _time(model, hw, lay, "megatron", overlap_grad_reduce=False,
                   cross_entropy_fusion="none")
    if row[1] == 1:
        assert no_ogr == pytest.approx(today, rel=1e-12)
    on = _time(model, hw, lay, "megatron")
    assert on <= no_ogr * (1 + 1e-12) and no_ogr <= off * (1 + 1e-12)


def test_param_gather_follows_the_step_without_overlap():
    """step.dp_exposed_time, ZeRO-1, 1 micro-batch: a 1 s gather behind a 0.4 s forward
    window exposes 1 - 0.4 = 0.6 s overlapped (o_pg = 1) and the whole 1 s without
    --overlap-param-gather (o_pg = 0); reduction 2 s in 0.5 s buckets behind a 3 s backward:
    0.5 s overlapped. Totals 0.5 + 0.6 = 1.1 s and 0.5 + 1 = 1.5 s."""
    kw = dict(G_x=0.0, T_bkt=0.5, T_gat=1.0, T_red=2.0, W_b=3.0, W_f=0.4, Z=1, m=1, o_dr=1.0,
              A_g=0.0, r_z=0)
    assert float(eq.step__dp_exposed_time(o_pg=1.0, **kw)) == pytest.approx(1.1)
    assert float(eq.step__dp_exposed_time(o_pg=0.0, **kw)) == pytest.approx(1.5)


def test_profile_settings_follow_the_flags(cat):
    from optimus_calc.frameworks import plugin
    prof = plugin("megatron").profile

    def applied(**flags):
        tr = Training(seq_len=4096, **flags)
        _, asm, _, _ = prof.apply(tr, Assumptions())
        return asm.dp_reduce_overlap, asm.dp_gather_overlap, asm.tp_overlap

    assert applied() == (1, 1, 1)
    assert applied(overlap_grad_reduce=False) == (0, 0, 1)  # param gather needs it (L1028)
    assert applied(overlap_param_gather=False) == (1, 0, 1)
    assert applied(tp_comm_overlap=False) == (1, 1, 0)
    assert applied(sequence_parallel=False) == (1, 1, 0)  # --tp-comm-overlap needs SP (L1442)


def _args(cat, lay, **flags):
    m = cat.get("llama-3-8b", "model")
    tr = Training(seq_len=8192, global_batch=64, **flags)
    args, _ = megatron_arg_list(lay, tr, m, 8)
    _check_megatron(args)  # every flag exists at the pinned commit, with its type
    return [f for f, _ in args]


def test_export_writes_the_flags_the_profile_times(cat):
    flags = ("--overlap-grad-reduce", "--overlap-param-gather", "--tp-comm-overlap")
    tp2 = Layout(tp=2, dp=4, zero=1)
    got = _args(cat, tp2)
    assert all(got.count(f) == 1 for f in flags)
    assert "--sequence-parallel" in got and "--use-distributed-optimizer" in got
    # no gather to overlap without the distributed optimizer (arguments.py L1024-1027)
    got = _args(cat, Layout(tp=2, dp=4, zero=0))
    assert "--overlap-param-gather" not in got and "--overlap-grad-reduce" in got
    # --overlap-param-gather needs --overlap-grad-reduce (L1028-1029)
    got = _args(cat, tp2, overlap_grad_reduce=False)
    assert not {"--overlap-grad-reduce", "--overlap-param-gather"} & set(got)
    # --tp-comm-overlap needs sequence parallelism (L1441-1442), which needs TP > 1
    assert "--tp-comm-overlap" not in _args(cat, tp2, sequence_parallel=False)
    assert "--tp-comm-overlap" not in _args(cat, Layout(tp=1, dp=8, zero=1))
    assert "--tp-comm-overlap" not in _args(cat, tp2, tp_comm_overlap=False)
    assert "--overlap-param-gather" not in _args(cat, tp2, overlap_param_gather=False)
    # --overlap-p2p-communication is Megatron's default (arguments.py L3118-3120): written off
    # only where it counts, an interleaved pipeline (off anyway without one, L1010-1012)
    vp = Layout(tp=2, pp=2, dp=2, zero=1, interleave=2)
    assert "--no-overlap-p2p-communication" not in _args(cat, vp)
    assert "--no-overlap-p2p-communication" in _args(cat, vp, overlap_p2p_comm=False)
    assert "--no-overlap-p2p-communication" not in _args(
        cat, Layout(tp=2, pp=2, dp=2, zero=1), overlap_p2p_comm=False)


def test_cli_flags_reach_the_profile_and_the_export(run):
    base = ("step", "llama-3-8b", "--node", "dgx-h100", "--nodes", 2, "--tp", 2, "--zero", 1,
            "--framework", "megatron", "--format", "json")
    on = run(*base).json()
    off = run(*base, "--no-overlap-grad-reduce", "--no-tp-comm-overlap").json()
    assert on["physics_profile"]["applied"]["dp_reduce_overlap"] == 1
    assert on["physics_profile"]["applied"]["tp_overlap"] == 1
    assert off["physics_profile"]["applied"]["dp_reduce_overlap"] == 0
    assert "tp_overlap" not in off["physics_profile"]["applied"]
    assert on["tp_comm_s"] == 0.0 < off["tp_comm_s"]
    assert on["step_time_s"] < off["step_time_s"]
    r = run("plan", "llama-3-8b", "--node", "dgx-h100", "--nodes", 2, "--tp", 2, "--pp", 1,
            "--zero", 1, "--framework", "megatron", "--export", "megatron",
            "--no-tp-comm-overlap")
    assert r.code == 0, r.err
    assert "--overlap-grad-reduce" in r.out and "--overlap-param-gather" in r.out
    assert "--tp-comm-overlap" not in r.out


def test_context_parallel_ring_hides_behind_attention(run):
    """--cp-comm-type p2p (Megatron-LM's default, arguments.py L3221) runs Transformer Engine's
    ring (context_parallel.py L1698-1715 @ d0067d0): block i+1's K/V travel while block i's
    attention runs, so the profile hides the CP traffic (cp_overlap 1, assumed: blocks of
    thousands of tokens outlast their transfer); framework-neutral physics exposes it all, and
    --assume cp_overlap=0 brings it back under the profile. Llama2-7B at 64K, TP 4 CP 2 on two
    DGX H100 (NeMo's long-sequence layout): K/V of 2 x 65,536 x 32 x 128 x 2 B / 4 = 268 MB
    per layer and micro-batch (step.cp_message_bytes)."""
    args = ("step", "llama-2-7b", "--node", "dgx-h100", "--nodes", 8, "--tp", 4, "--cp", 2,
            "--seq-len", 65536, "--global-batch", 64, "--format", "json")
    neutral = run(*args).json()
    meg = run(*args, "--framework", "megatron").json()
    back = run(*args, "--framework", "megatron", "--assume", "cp_overlap=0").json()
    assert neutral["cp_comm_s"] > 0.1 and meg["cp_comm_s"] == 0.0
    assert back["cp_comm_s"] == pytest.approx(neutral["cp_comm_s"], rel=1e-9)
    assert meg["step_time_s"] < back["step_time_s"]


def test_context_parallel_ring_hides_no_more_than_the_attention(run):
    """The ring hides its traffic behind the stage's attention core, not beyond it
    (step.cp_comm_time: max(0, traffic - o_cp x attention time)). Llama2-7B at 16K, TP 8 CP 8 on
    8 DGX H100: the K/V traffic (cp_overlap=0) outlasts the attention, so Megatron's profile
    exposes the difference, and the step is exactly the attention time shorter."""
    args = ("step", "llama-2-7b", "--node", "dgx-h100", "--nodes", 8, "--tp", 8, "--cp", 8,
            "--seq-len", 16384, "--global-batch", 8, "--framework", "megatron", "--format",
            "json")
    meg, raw = run(*args).json(), run(*args, "--assume", "cp_overlap=0").json()
    assert 0 < meg["cp_comm_s"] < raw["cp_comm_s"]
    hidden = raw["cp_comm_s"] - meg["cp_comm_s"]
    assert raw["step_time_s"] - meg["step_time_s"] == pytest.approx(hidden, rel=1e-9)
    # what it hides is the attention core's time, by hand: 8 x 16,384 tokens over TP 8 x CP 8
    # = 2,048 token-layers per GPU and layer; forward 4 s h = 4 x 16,384 x 4,096 FLOPs per
    # token and layer (scores and values), x 32 layers x 2,048 = 1.7592e13; forward + backward
    # 3 x that, halved by the causal kernel: 2.6388e13 FLOPs at cuDNN's 0.26 of 989e12 FLOP/s
    # (catalog h100-sxm) = 0.10262 s
    assert hidden == pytest.approx(3 * 4 * 16384 * 4096 * 32 * 2048 / 2 / (0.26 * 989e12),
                                   rel=1e-6)
