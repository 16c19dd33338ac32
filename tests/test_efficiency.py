"""GEMM-efficiency curve (equations/efficiency.py, evaluate/efficiency.py) and its calibration."""

import numpy as np
import pytest

from optimus_calc import catalog
from optimus_calc.equations import compiled as eq
from optimus_calc.evaluate.context import fill_layout, resolve_hardware
from optimus_calc.evaluate.efficiency import (attention_flops, compute_efficiency,
                                              gemm_efficiency)
from optimus_calc.evaluate.memory import estimate_memory
from optimus_calc.evaluate.step import estimate_step
from optimus_calc.gemm_calibration import megatron_h100_cases, narayanan_cases
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Recompute, Training, ZeroStage


@pytest.fixture(scope="module")
def cat():
    return catalog.load()


@pytest.fixture(scope="module")
def a100(cat):
    return cat.get("a100-80gb", "gpu")


def test_curve_by_hand(a100):
    # the catalog's fit (hardware_catalog/gpus/nvidia.toml, validate_loso; eta_max 0.76 since
    # the loss over the logits is timed: CHANGELOG)
    assert (a100.gemm_eta_max, a100.gemm_half_GFLOP, a100.attention_eta) == (0.76, 23.1, 0.19)
    # GPT-1.7B of Table 1: W = 2 x (2048 x 16) x 2304 x 2304 = 347.892 GFLOP;
    # eta = 0.76 x 347.892 / (347.892 + 23.1) = 0.76 x 0.937735 = 0.712678
    assert float(gemm_efficiency(a100, 2304, 1, 2048, 16)) == pytest.approx(0.712678, rel=1e-5)
    # small GEMM: h 4096 over TP 8, one 2048-token sequence: W = 2 x 2048 x 4096 x 512
    # = 8.589935 GFLOP; eta = 0.76 x 8.589935 / 31.689935 = 0.206007
    assert float(gemm_efficiency(a100, 4096, 8, 2048, 1)) == pytest.approx(0.206007, rel=1e-5)
    # with 12.3% of the FLOPs in unfused attention at 0.19:
    # 1 / (0.877 / 0.712678 + 0.123 / 0.19) = 1 / (1.230569 + 0.647368) = 0.532499
    eta = compute_efficiency(a100, 2304, 1, 2048, 16, 1.0, 0.123, False)
    assert float(eta) == pytest.approx(0.532499, rel=1e-5)


def test_monotone_and_bounded(a100):
    b = np.array([1, 2, 4, 8, 16, 32])
    e_b = gemm_efficiency(a100, 8192, 8, 2048, b)
    assert np.all(np.diff(e_b) > 0) and np.all(e_b < a100.gemm_eta_max)
    e_h = gemm_efficiency(a100, np.array([1024, 2048, 4096, 8192, 16384]), 1, 2048, 1)
    assert np.all(np.diff(e_h) > 0)
    e_t = gemm_efficiency(a100, 8192, np.array([1, 2, 4, 8]), 2048, 1)
    assert np.all(np.diff(e_t) < 0)  # a wider TP shard multiplies smaller matrices
    # more attention work at a lower efficiency lowers the layer's efficiency
    shares = np.array([0.0, 0.05, 0.1, 0.2])
    e_a = compute_efficiency(a100, 4096, 4, 2048, 1, 1.0, shares, False)
    assert np.all(np.diff(e_a) < 0)
    assert float(e_a[0]) == pytest.approx(float(gemm_efficiency(a100, 4096, 4, 2048, 1)))


def test_broadcasts_over_layouts(a100):
    h = np.array([2048, 4096, 8192])
    b = np.array([[1], [2], [4], [8]])
    flash = np.array([True, False, True])
    out = compute_efficiency(a100, h, 1, 2048, b, np.full((4, 3), 1e15), 1e14, flash)
    assert out.shape == (4, 3) and np.all(np.isfinite(out)) and np.all(out > 0)
    # no work at all: the GEMM curve's value rather than 0/0
    zero = compute_efficiency(a100, 4096, 1, 2048, 1, 0.0, 0.0, False)
    assert float(zero) == pytest.approx(float(gemm_efficiency(a100, 4096, 1, 2048, 1)))


def test_layouts_with_work_take_the_same_values_as_beside_idle_ones(a100):
    """compute_efficiency skips its no-work masks when every layout works: the values are
    those the masked path gives the same layouts beside an idle one (the GPT-1.7B case of
    test_curve_by_hand, 0.532499, with more attention and routed expert GEMMs at 0.4)."""
    total = np.array([[1.0, 2e15, 3e15], [1e15, 5e14, 0.0]])
    attn, experts = 0.123 * total, 0.25 * total
    both = compute_efficiency(a100, 2304, 1, 2048, 16, total, attn, False,
                              expert_flops=experts, eta_x=0.4)
    busy = compute_efficiency(a100, 2304, 1, 2048, 16, total[:, :2], attn[:, :2], False,
                              expert_flops=experts[:, :2], eta_x=0.4)
    np.testing.assert_array_equal(busy, both[:, :2])
    assert busy.shape == (2, 2) and both[1, 2] == pytest.approx(0.712678, rel=1e-5)
    # 1 / (0.627 / 0.712678 + 0.123 / 0.19 + 0.25 / 0.4) = 1 / (0.879780 + 0.647368 + 0.625)
    # = 1 / 2.152148 = 0.464652
    assert busy[0, 0] == pytest.approx(0.464652, rel=1e-5)


def test_assumption_overrides_the_curve(a100):
    h = np.array([2048, 16384])
    curve = compute_efficiency(a100, h, 1, 2048, 1, 1.0, 0.1, False, Assumptions())
    assert curve[0] < curve[1]  # the default follows the curve
    fixed = compute_efficiency(a100, h, 1, 2048, 1, 1.0, 0.1, False,
                               Assumptions(gemm_efficiency=0.6))
    assert fixed.tolist() == [0.6, 0.6]


def test_attention_flops_by_hand():
    # 4 s q_d per token per layer forward; x3 forward + backward, +1 recomputed forward:
    # 1000 tokens x 2 layers x 4 x 2048 x 4096 x 4 = 2.68435456e11
    assert float(attention_flops(1000, 2, 2048, 4096, True)) == pytest.approx(2.68435456e11)
    assert float(attention_flops(1000, 2, 2048, 4096, False)) == pytest.approx(2.01326592e11)


def test_step_is_affine_in_inverse_efficiency(cat):
    """The premise of the calibration: step(eta) = a + c / eta, checked at a third eta."""
    cases = {c.label: c for c in narayanan_cases(cat)}
    case = cases["gpt-145.6b"]
    model = cat.get("gpt-145.6b", "model")
    hw = resolve_hardware(cat, "dgx-a100", 1536 // 8)
    lay = fill_layout(hw, 8, 8, None, 1, zero=ZeroStage(1), interleave=2)
    tr = Training(seq_len=2048, global_batch=2304, micro_batch=2, recompute=Recompute.FULL,
                  flash_attention=False)
    mem = estimate_memory(model, hw, lay, tr, Assumptions())
    # run_table_1.sh runs this model with DDP=local: the reduction follows the backward
    st = estimate_step(model, hw, lay, tr, Assumptions(gemm_efficiency=0.7, dp_reduce_overlap=0),
                       mem)
    assert st.step_time_s == pytest.approx(case.a_s + case.c_s / 0.7, rel=1e-9)


def test_narayanan_table1_within_5_percent(cat, a100):
    """Issue 11 done-when: Table 1 from 1.7B to 1T within 5% per row, one A100 parameter set."""
    cases = narayanan_cases(cat)
    assert len(cases) == 10
    errors = []
    for c in cases:
        # the derived eta reproduces the published number exactly
        assert c.tflops(c.required_eta) == pytest.approx(c.published_tflops, rel=1e-9)
        eta = c.curve_eta(a100)
        assert eta == pytest.approx(c.required_eta, rel=0.05)
        errors.append(float(c.tflops(eta)) / c.published_tflops - 1)
    assert max(abs(e) for e in errors) < 0.05
    # the trend: the curve gives the 1T row more efficiency than the 1.7B row (published
    # 163 vs 137 TFLOP/s), which one constant could not
    assert cases[-1].curve_eta(a100) > cases[0].curve_eta(a100) + 0.1


def test_megatron_h100_mfu(cat):
    """Megatron-LM README H100 weak scaling, MFU 41-49%: the evaluator's own answer for every
    row within 15% with the H100 parameters (the README does not publish the micro-batch or
    the overlap settings: micro-batch 1 is assumed), and the MFU stays in the published band
    (38-50%)."""
    h100 = cat.get("h100-sxm", "gpu")
    for c in megatron_h100_cases(cat):
        pred = c.predicted_tflops
        assert pred == pytest.approx(c.published_tflops, rel=0.15), c.label
        assert 0.38 <= pred / h100.peak_TFLOPS.bf16 <= 0.50, c.label


def test_every_gpu_states_its_efficiency_source(cat):
    for gpu in cat.all("gpu"):
        assert gpu.efficiency_source and gpu.efficiency_label in ("calibrated", "derived",
                                                                  "assumed", "unvalidated")
        assert 0 < gpu.gemm_eta_max <= 1 and gpu.sm_count > 0
    assert cat.get("a100-80gb", "gpu").efficiency_label == "calibrated"
    assert cat.get("h100-sxm", "gpu").efficiency_label == "calibrated"
    # no public training data in our sources: the catalog says so (issue 19)
    assert cat.get("mi300x", "gpu").efficiency_label == "unvalidated"
    # B200/GB200 fitted on their own FP8 rows (validate_loso GROUPS; catalog source): 0.54 and
    # 0.49, where the earlier derivation from NeMo's per-GPU fractions gave 0.52 and 0.578
    from optimus_calc.validate_loso import GROUPS
    assert GROUPS["b200"] == ("b200", "b300") and GROUPS["gb200"] == ("gb200", "gb300")
    b200, gb200 = cat.get("b200", "gpu"), cat.get("gb200", "gpu")
    assert b200.efficiency_label == gb200.efficiency_label == "calibrated"
    assert (b200.gemm_eta_max, gb200.gemm_eta_max) == (0.54, 0.49)
    # Blackwell Ultra: B300 takes B200's values (derived: its public rows are MoE, outside the
    # GEMM fit); GB300 GB200's x its fitted factor 1.20 (validate_loso.SCALED): 0.49 x 1.2 =
    # 0.588, cuDNN 0.31 x 1.2 = 0.372, FA2 0.22 x 1.2 = 0.264, the unfused core 0.21 x 1.2 =
    # 0.252; W_half GB200's
    b300, gb300 = cat.get("b300", "gpu"), cat.get("gb300", "gpu")
    assert (b300.efficiency_label, b300.gemm_eta_max, b300.flash_attention_eta) == (
        "derived", b200.gemm_eta_max, b200.flash_attention_eta)
    assert gb300.efficiency_label == "calibrated" and gb300.gemm_half_GFLOP == 40.6
    assert (gb300.gemm_eta_max, gb300.flash_attention_eta, gb300.attention_kernel_eta["fa2"],
            gb300.attention_eta) == pytest.approx((0.588, 0.372, 0.264, 0.252))


def test_compiled_equation_matches_formula():
    # 0.5 x 10 / (10 + 30) = 0.125
    assert eq.efficiency__gemm_efficiency(W_g=10.0, W_half=30.0, eta_max=0.5) == 0.125




def test_b200_takes_gb200s_fixed_time_per_gemm(cat):
    # round 26: the curve's fixed time per GEMM is W_half / (eta_max x peak)
    # (equations/efficiency.py); GB200's 40.6 / (0.49 x 2,500e12) = 33.1 us, so on the same die
    # B200's W_half = 40.6 x (0.54 x 2,250) / (0.49 x 2,500) = 40.27 GFLOP (B300 takes B200's)
    b200, gb200, b300 = (cat.get(n, "gpu") for n in ("b200", "gb200", "b300"))
    t_gb200 = gb200.gemm_half_GFLOP / (gb200.gemm_eta_max * gb200.peak_TFLOPS.bf16)
    t_b200 = b200.gemm_half_GFLOP / (b200.gemm_eta_max * b200.peak_TFLOPS.bf16)
    assert t_gb200 * 1e3 == pytest.approx(33.14, abs=0.01)  # us (GFLOP / TFLOP/s = ms)
    assert b200.gemm_half_GFLOP == b300.gemm_half_GFLOP == 40.3
    assert t_b200 == pytest.approx(t_gb200, rel=0.002)  # 40.3 against 40.27: rounding


def test_loso_refit_starts_where_told():
    # validate_loso.fit from a given start (benchmarks/loso_start.py): with no sweep the informed
    # parameters are the start's, the others the shipped ones; one row informs eta_max alone
    from optimus_calc.validate_loso import FitRow, fit
    row = FitRow(key=0, fold="s", group="h100", gpu="h100-sxm", kernel="cudnn", a=0.1, c_d=1.0,
                 c_a=0.1, W=1e10, published=2.0, pred0=2.0, time_like=True)
    p0 = {"eta_max": 0.59, "W_half": 11.5, "eta_u": 0.21, "eta_a:cudnn": 0.26}
    names = ("eta_max", "W_half")
    assert fit([row], p0, names, start={"eta_max": 0.7, "W_half": 3.0}, sweeps=0) == {
        **p0, "eta_max": 0.7}
    assert fit([row], p0, names, sweeps=0) == p0


def test_loso_starts_are_the_grids_quartiles_and_the_old_refit_is_one_of_them():
    # validate_loso.STARTS: eta_max's grid is 0.30..0.95 by 0.01 (66 values): indices 16, 33,
    # 49 -> 0.46, 0.63, 0.79; W_half's 48 values from 0.5 to 100 geometric: index 24 ->
    # 0.5 x 200^(24/47) = 7.48 GFLOP
    from optimus_calc.validate_loso import STARTS, FitRow, fit, fit_best
    assert [round(s["eta_max"], 2) for s in STARTS] == [0.46, 0.63, 0.79]
    assert STARTS[1]["W_half"] == pytest.approx(0.5 * 200 ** (24 / 47))
    # starts=(None,) with 4 sweeps is the refit before round 26: fit from the shipped values
    row = FitRow(key=0, fold="s", group="h100", gpu="h100-sxm", kernel="cudnn", a=0.1, c_d=1.0,
                 c_a=0.1, W=1e10, published=2.2, pred0=2.0, time_like=True)
    p0 = {"eta_max": 0.59, "W_half": 11.5, "eta_u": 0.21, "eta_a:cudnn": 0.26}
    names = ("eta_max",)
    assert fit_best([row], p0, names, (None,), 4) == fit([row], p0, names)
    # one row informs eta_max alone, and every start reaches the same optimum. By hand: the
    # GEMM at 10 GFLOP runs at eta x 10 / (10 + 11.5); the shipped step's S = 0.1 + 1 / (0.59 x
    # 0.4651) + 0.1 / 0.26 = 4.129; the refit reads the tied cuDNN kernel through FA2, which
    # p0 lacks, so at eta_max: S(eta) = 0.1 + (1 / 0.4651 + 0.1) / eta; 2.2 published against
    # 2.0 predicted asks S = 4.129 x 1.1 = 4.542, so eta = 2.250 / 4.442 = 0.507: 0.51 on the grid
    assert fit_best([row], p0, names)["eta_max"] == pytest.approx(0.51)
    assert fit_best([row], p0, names) == fit([row], p0, names, None, 24)


def test_fit_best_keeps_the_start_of_least_training_loss(monkeypatch):
    # the descent stubbed to stop where it starts: the quartile starts put eta_max at 0.46,
    # 0.63, 0.79, and the row is published at the prediction under 0.63, so fit_best must keep
    # the middle start, and loso must hand its folds STARTS (the shipped start would give 0.59)
    from dataclasses import replace

    import optimus_calc.validate_loso as vl
    row = vl.FitRow(key=0, fold="s", group="h100", gpu="h100-sxm", kernel="cudnn", a=0.1,
                    c_d=1.0, c_a=0.1, W=1e10, published=1.0, pred0=2.0, time_like=True)
    p0 = {"eta_max": 0.59, "W_half": 11.5, "eta_u": 0.21, "eta_a:cudnn": 0.26}
    at = float(vl.predict([row], {**p0, "eta_max": 0.63}, p0)[0])
    row = replace(row, published=at)
    monkeypatch.setattr(vl, "_descend", lambda k, s0, p, *rest: p)
    assert vl.fit_best([row], p0, ("eta_max",))["eta_max"] == pytest.approx(0.63)
    assert vl.fit_best([row], p0, ("eta_max",), (None,))["eta_max"] == 0.59
    other = vl.FitRow(key=1, fold="t", group="h100", gpu="h100-sxm", kernel="cudnn", a=0.1,
                      c_d=1.0, c_a=0.1, W=1e10, published=at, pred0=2.0, time_like=True)
    res = vl.loso([row, other], {"h100": p0}, ("eta_max",))
    assert res.full_fit["h100"]["eta_max"] == pytest.approx(0.63)
    with pytest.raises(ValueError):
        vl.fit_best([row], p0, ("eta_max",), ())
