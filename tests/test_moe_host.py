"""The MoE host sync per layer and micro-batch (Assumptions.moe_layer_host_s, step.fixed_time),
its fit and leave-one-source-out refit (validate_moe.py), and Megatron-LM's
--overlap-moe-expert-parallel-comm (issue 32)."""

from __future__ import annotations

import pytest

from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.validate_moe import HostRow, fit, loso, predict

QWEN = ("qwen3-30b-a3b", "--node", "dgx-h100", "--nodes", "1", "--ep", "8", "--zero", "1",
        "--micro-batch", "1", "--global-batch", "8", "--framework", "megatron",
        "--format", "json")


def _row(key, fold, published, T, K, t0=0.001, pred=1000.0, time_like=False):
    return HostRow(key, fold, published, pred, T, K, t0, time_like)


def test_predict_is_affine_in_the_constant():
    # T 2 s at t0 1 ms, K 100 layer-micro-batches: at 2 ms T = 2 + 100 x 0.001 = 2.1 s; a
    # tokens/s figure 1000 -> 1000 / 1.05 = 952.38, a seconds figure 1000 -> 1050
    rows = [_row(0, "a", 1.0, 2.0, 100.0), _row(1, "a", 1.0, 2.0, 100.0, time_like=True)]
    assert predict(rows, 0.002) == pytest.approx([1000 / 1.05, 1050.0])


def test_fit_finds_the_constant_that_makes_the_rows_exact():
    # both rows published at what t = 5 ms gives: T = 2 + 100 x 0.004 = 2.4 s (tokens/s 1000 x
    # 2 / 2.4 = 833.33) and T = 1 + 50 x 0.004 = 1.2 s (1000 / 1.2 = 833.33)
    rows = [_row(0, "a", 1000 * 2 / 2.4, 2.0, 100.0), _row(1, "b", 1000 / 1.2, 1.0, 50.0)]
    # (no row has a fixed-constant slope K_f: the fixed constant stays at the grid's 0)
    assert fit(rows) == pytest.approx((0.005, 0.0))
    assert fit([]) is None


def test_loso_refits_without_the_rows_source():
    # source a's rows say 5 ms, source b's say 10 ms (T = 1 + 50 x 0.009 = 1.45 s):
    # a is predicted with b's 10 ms and b with a's 5 ms; a source alone keeps its prediction
    a = _row(0, "a", 1000 / 1.2, 1.0, 50.0)
    b = _row(1, "b", 1000 / 1.45, 1.0, 50.0)
    got = loso([a, b])
    assert got[0][0] == pytest.approx((0.010, 0.0)) and got[0][1] == pytest.approx(1000 / 1.45)
    assert got[1][0] == pytest.approx((0.005, 0.0)) and got[1][1] == pytest.approx(1000 / 1.2)
    assert loso([a]) == {0: ((0.001, 0.0), 1000.0)}


def test_the_fixed_time_counts_every_moe_layer_and_micro_batch(run):
    # Qwen3-30B-A3B: 48 MoE layers, one stage, 8 / (DP 8 x 1) = 1 micro-batch: (sync 1.5 ms
    # + launches 1.8 ms; 1.3 + 2.0 ms before round 21) x 48 x 1 = 0.1584 s; a dense model
    # pays none of it
    assert (Assumptions().moe_layer_host_s, Assumptions().moe_layer_fixed_s) == (0.0015, 0.0018)
    d = run("step", *QWEN).json()
    assert d["fixed_s"] == pytest.approx(0.0033 * 48)
    dense = run("step", "llama-3-8b", "--node", "dgx-h100", "--format", "json").json()
    assert dense["fixed_s"] == 0.0


def test_a_re_run_moe_forward_syncs_again(run):
    # the layout above: full recomputation re-runs each MoE layer's forward, dispatcher and
    # host sync included: 2 x 3.3 ms x 48 x 1 = 0.3168 s; Megatron's selective recomputes the
    # attention core only (0.1584 s); torchtitan's op AC re-runs the block (EP 8 >= 2: 0.3168 s)
    full = run("step", *QWEN, "--recompute", "full").json()
    assert full["fixed_s"] == pytest.approx(2 * 0.0033 * 48)
    sel = run("step", *QWEN, "--recompute", "selective").json()
    assert sel["fixed_s"] == pytest.approx(0.0033 * 48)
    tt = [a if a != "megatron" else "torchtitan" for a in QWEN]
    op = run("step", *tt, "--recompute", "selective").json()
    assert op["fixed_s"] == pytest.approx(2 * 0.0033 * 48)


def test_megatron_overlap_flag_hides_the_all_to_all(run):
    # the flag hides EP_OVERLAP_SHARE (0.56, fitted: validate_moe.fit_overlap) of the
    # all-to-all: 44% of it stays exposed, and the step is shorter by the rest
    from optimus_calc.frameworks.megatron import EP_OVERLAP_SHARE
    assert EP_OVERLAP_SHARE == 0.56
    off = run("step", *QWEN).json()
    on = run("step", *QWEN, "--overlap-moe-expert-parallel-comm").json()
    assert off["ep_comm_s"] > 0
    assert on["ep_comm_s"] == pytest.approx(0.44 * off["ep_comm_s"], rel=1e-9)
    assert on["step_time_s"] == pytest.approx(off["step_time_s"] - 0.56 * off["ep_comm_s"],
                                              rel=1e-9)
    # --assume ep_overlap=1 (the user's value wins over the profile's) hides all of it
    one = run("step", *QWEN, "--overlap-moe-expert-parallel-comm", "--assume",
              "ep_overlap=1").json()
    assert one["ep_comm_s"] == 0.0
    # refused by TransformerConfig with full recompute (transformer_config.py L3021-3023): the
    # profile keeps the all-to-all exposed
    full = run("step", *QWEN, "--recompute", "full", "--overlap-moe-expert-parallel-comm").json()
    assert full["ep_comm_s"] > 0
    # ... and in FP32 (L3034-3037: bf16 or fp16 models only)
    fp32 = run("step", *QWEN, "--precision", "fp32", "--overlap-moe-expert-parallel-comm").json()
    assert fp32["ep_comm_s"] > 0


def test_megatron_export_writes_the_overlap_where_megatron_takes_it(run):
    args = ("plan", "qwen3-30b-a3b", "--node", "dgx-h100", "--ep", "8", "--tp", "1", "--pp",
            "1", "--framework", "megatron", "--overlap-moe-expert-parallel-comm",
            "--export", "megatron")
    out = run(*args, "--recompute", "none").out
    assert "--moe-token-dispatcher-type alltoall" in out
    assert "  --overlap-moe-expert-parallel-comm" in out
    full = run(*args, "--recompute", "full").out
    assert "# --overlap-moe-expert-parallel-comm left out: full recompute" in full
    assert "  --overlap-moe-expert-parallel-comm" not in full
    # TransformerConfig asks for bf16 or fp16 weights (transformer_config.py L3034-3037)
    fp32 = run(*args, "--recompute", "none", "--precision", "fp32").out
    assert "# --overlap-moe-expert-parallel-comm left out: FP32" in fp32
    assert "  --overlap-moe-expert-parallel-comm" not in fp32


def test_deepspeed_moe_drops_tokens_without_a_host_sync(run):
    # DeepSpeed-MoE's gate (drop_tokens=True by default, sharded_moe.py L554) sizes the
    # capacity on the host and keeps the expert counts on the GPU (L162-171, L264): no host
    # sync per MoE layer, so its profile sets moe_layer_host_s 0: only the layer's launches,
    # 1.8 ms x 48 layers x 1 micro-batch = 0.0864 s; Megatron-LM's dropless dispatcher pays
    # (1.5 + 1.8) ms x 48 = 0.1584 s (above)
    args = [a if a != "megatron" else "deepspeed" for a in QWEN]
    d = run("step", *args).json()
    assert d["fixed_s"] == pytest.approx(0.0018 * 48)


def test_torchtitan_pays_the_host_sync_only_with_expert_parallelism(run):
    # torch._grouped_mm takes its offsets on the GPU; only EP's all-to-all .tolist() syncs
    # (torchtitan expert_parallel.py L134-135): EP 1 pays none; EP 8 on 8 GPUs, ZeRO-3, global
    # batch 8 / (DP 8 x micro-batch 1) = 1 micro-batch: (1.5 + 1.8) ms x 48 MoE layers =
    # 0.1584 s; EP 1 the launches only, 1.8 ms x 48 = 0.0864 s
    tt = ("step", "qwen3-30b-a3b", "--node", "dgx-h100", "--zero", "3", "--global-batch", "8",
          "--framework", "torchtitan", "--format", "json")
    assert run(*tt, "--ep", "1").json()["fixed_s"] == pytest.approx(0.0018 * 48)
    assert run(*tt, "--ep", "8").json()["fixed_s"] == pytest.approx(0.0033 * 48)


def test_megatron_overlap_needs_an_interleaved_schedule_under_pp(run):
    # TransformerConfig refuses the overlap at PP > 1 without a virtual pipeline (L3007-3011):
    # the all-to-all stays exposed there, and 56% of it is hidden with --interleave 2
    pp = ("step", "qwen3-30b-a3b", "--node", "dgx-h100", "--nodes", "2", "--ep", "8", "--pp",
          "2", "--zero", "1", "--framework", "megatron", "--overlap-moe-expert-parallel-comm",
          "--format", "json")
    exposed = run(*pp).json()["ep_comm_s"]
    assert exposed > 0
    assert run(*pp, "--interleave", "2").json()["ep_comm_s"] == pytest.approx(0.44 * exposed)


def _orow(key, fold, published, A, o0=1.0, T=1.0, time_like=False):
    # a row whose profile hides the share o0 of an all-to-all costing A s when exposed
    return HostRow(key, fold, published, 1000.0, T, 0.0, 0.0, time_like, 0.0, 0.0, A, o0)


def test_overlap_share_is_affine_and_fitted_per_source():
    from optimus_calc.validate_moe import fit_overlap, loso_overlap, predict_overlap
    # T 1 s with the share at 1, A 0.5 s: at 0.5, T = 1 + 0.5 x (1 - 0.5) = 1.25 s; a
    # tokens/s figure 1000 -> 800, a seconds figure 1000 -> 1250
    rows = [_orow(0, "a", 800.0, 0.5), _orow(1, "a", 1.0, 0.5, time_like=True)]
    assert predict_overlap(rows, 0.5) == pytest.approx([800.0, 1250.0])
    # source a published at the share 0.5 (800), source b at 0.8 (T = 1.1: 909.09); a row
    # whose profile hides nothing (A 0) takes no part
    a, b = _orow(0, "a", 800.0, 0.5), _orow(1, "b", 1000 / 1.1, 0.5)
    none = HostRow(2, "c", 500.0, 1000.0, 1.0, 0.0, 0.0, False)
    assert fit_overlap([a, none]) == pytest.approx(0.5)
    assert fit_overlap([b]) == pytest.approx(0.8)
    assert fit_overlap([none]) is None
    # each source predicted with the other's share: a at 0.8, b at 0.5
    got = loso_overlap([a, b, none])
    assert set(got) == {0, 1}
    assert got[0] == pytest.approx(1000 / 1.1) and got[1] == pytest.approx(800.0)
    # a source alone keeps its shipped prediction
    assert loso_overlap([a]) == {0: 1000.0}
