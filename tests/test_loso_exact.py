"""Held-out rows priced by the step model at their fold's refit (validate_loso.loso with
FitRow.exact, validate_public.at_params), not by the step linearised at the shipped values
(round 27, issue 32: the linearisation understated how far a held-out row moves)."""

import pytest

from optimus_calc.catalog import load
from optimus_calc.public_cases import public_rows
from optimus_calc.validate_loso import FitRow, loso, shipped_params
from optimus_calc.validate_public import at_params, setup, step_time

P0 = {"eta_max": 0.5, "W_half": 10.0, "eta_u": 0.2, "eta_a:cudnn": 0.3,
      "scale:h100-sxm-500w": 1.0}


def _row(key, fold, published, exact=None):
    # as test_accuracy._row: S = c_d / eta_max, a rate predicted 100 at eta_max 0.5
    return FitRow(key, fold, "h100", "h100-sxm", "cudnn", 0.0, 1.0, 0.0, 1e21, published,
                  100.0, False, exact=exact)


def test_a_held_out_row_is_priced_by_its_exact_model_at_the_refit():
    seen = []

    def exact(p, p0):  # a stand-in for the step model: 1000 x eta_max
        seen.append((p["eta_max"], p0["eta_max"]))
        return 1000.0 * p["eta_max"]
    # A publishes 120 (needs eta_max 0.6), B 140 (needs 0.7): A held out is refitted on B
    rows = [_row(0, "A", 120.0, exact), _row(1, "A", 120.0), _row(2, "B", 140.0)]
    res = loso(rows, {"h100": P0}, ("eta_max",))
    assert res.predictions[0] == pytest.approx(700.0)   # exact at B's refit, 1000 x 0.7
    assert res.predictions[1] == pytest.approx(140.0)   # no exact: linearised, 100 x 0.7 / 0.5
    assert seen == [(pytest.approx(0.7), 0.5)]
    # exact=False: the column before round 27, every row linearised
    assert loso(rows, {"h100": P0}, ("eta_max",), exact=False).predictions[0] == \
        pytest.approx(140.0)


def test_a_source_alone_keeps_its_shipped_prediction():
    calls = []
    row = _row(0, "A", 120.0, lambda p, p0: calls.append(p) or 1.0)
    assert loso([row], {"h100": P0}, ("eta_max",)).predictions[0] == pytest.approx(100.0)
    assert calls == []  # nothing refitted: exact is not asked


def _setup(label):
    cat = load()
    row = next(r for r in public_rows() if r.label == label)
    s = setup(cat, row)
    return s, shipped_params(cat.find("h100-sxm", "gpu"), cat)


def test_at_params_on_the_500w_h100_scales_the_catalog_values():
    # torchtitan's 500 W H100 (catalog h100-sxm-500w: 0.478, 11.5, attention 0.170, FA2 0.178;
    # shipped group values 0.59, 11.5, 0.21, FA2 0.22, factor 0.478 / 0.59)
    s, p0 = _setup("Llama 3.1 8B FSDP 8, 8 GPUs")
    assert s.hw.gpu.name == "h100-sxm-500w" and s.kernel == "fa2"
    g = at_params(s, p0, p0).hw.gpu  # at the shipped values: the catalog's, unrounded
    assert (g.gemm_eta_max, g.gemm_half_GFLOP, g.attention_eta) == \
        pytest.approx((0.478, 11.5, 0.170))
    assert g.attention_kernel_eta["fa2"] == pytest.approx(0.178)
    p = {**p0, "eta_max": 0.5, "W_half": 23.0, "eta_a:fa2": 0.30, "scale:h100-sxm-500w": 0.9}
    g = at_params(s, p, p0).hw.gpu
    # ceiling 0.478 x (0.5 x 0.9) / 0.478 = 0.45; W_half 11.5 x 23 / 11.5 = 23;
    # FA2 0.178 x (0.30 x 0.9) / (0.22 x 0.478 / 0.59) = 0.2696; unfused
    # 0.170 x (0.21 x 0.9) / (0.21 x 0.8102) = 0.1888
    assert g.gemm_eta_max == pytest.approx(0.45)
    assert g.gemm_half_GFLOP == pytest.approx(23.0)
    assert g.attention_kernel_eta["fa2"] == pytest.approx(0.2696, rel=1e-3)
    assert g.attention_eta == pytest.approx(0.1888, rel=1e-3)
    # a kernel value above the ceiling reads the ceiling (validate_loso._S): 0.9 -> 0.5
    g = at_params(s, {**p0, "eta_max": 0.5, "eta_a:fa2": 0.9}, p0).hw.gpu
    assert g.attention_kernel_eta["fa2"] == pytest.approx(0.178 * 0.5 / 0.22)


def test_exact_pricing_at_the_shipped_values_is_the_shipped_prediction():
    s, p0 = _setup("Llama 3.1 8B FSDP 8, 8 GPUs")
    assert step_time(at_params(s, p0, p0)) == pytest.approx(step_time(s), rel=1e-12)
    # and a slower ceiling slows the step (the GEMMs are most of it)
    assert step_time(at_params(s, {**p0, "eta_max": 0.5}, p0)) > 1.1 * step_time(s)


# ---- the fit's sensitivity: secants from the shipped values (round 27) -----------------------

def _sens_row(label, group_head):
    from optimus_calc.validate_public import sensitivity
    cat = load()
    row = next(r for r in public_rows() if r.label == label)
    s = setup(cat, row)
    return s, sensitivity(s), shipped_params(cat.find(group_head, "gpu"), cat)


@pytest.mark.parametrize("kernel_eta", [None, 0.55])
def test_the_gemm_coefficient_holds_no_attention_time(kernel_eta):
    # NeMo's Llama2-7B at 1M tokens (TP 8, CP 32): per token and layer the attention core
    # executes 2 s h = 2 x 1,048,576 x 4,096 FLOPs (causal half of 4 s h) against the weight
    # GEMMs' 24 h^2 = 24 x 4,096^2, 21.3x more, at cuDNN's 0.26 of the BF16 peak while the
    # GEMMs run FP8 at ~0.5 of a twice higher peak: the GEMMs are ~1% of the step (~2.5% with
    # the kernel at 0.55: the attention halves), under 5% either way. The
    # sensitivity before round 27 measured c_d across the kernel's cap (attention halved with
    # the ceiling): c_d x (1 / eta_d) was ~40x the GEMMs' time. With cuDNN raised to 0.55,
    # above 0.8 x the ceiling 0.59 = 0.472, moving the ceiling alone would cap the kernel too:
    # c_d must still hold no attention time (measured with the kernel already moved)
    from optimus_calc.validate_public import _attention_eta, sensitivity, with_gpu
    s, _, _ = _sens_row("H100 Llama2-7B FP8 seq 1024K TP8 PP1 CP32, 1024 GPUs", "h100-sxm")
    if kernel_eta is not None:
        s = with_gpu(s, eta_a=kernel_eta)
    sens, g = sensitivity(s), s.hw.gpu
    t0 = step_time(s)
    gemm_s = sens.c_d * (s.gemm_W + g.gemm_half_GFLOP * 1e9) / (g.gemm_eta_max * s.gemm_W)
    attn_s = sens.c_a / _attention_eta(s)
    assert _attention_eta(s) == pytest.approx(kernel_eta or 0.26)
    assert 0 < gemm_s < 0.05 * t0
    assert attn_s > 0.9 * t0
    assert sens.a >= 0


def test_a_kernel_above_the_ceiling_reads_the_ceiling():
    # cuDNN at 0.7 on a ceiling of 0.59: the model runs it at 0.59 (kernel_efficiency caps
    # it), so the attention term's 1 / eta is 1 / 0.59 and the linearised step at the secant's
    # far end (ceiling 0.472, kernel 0.56 -> capped 0.472) is the model's
    from optimus_calc.validate_loso import FitRow, predict
    from optimus_calc.validate_public import sensitivity, with_gpu
    s, _, p0 = _sens_row("H100 Llama2-7B FP8 seq 1024K TP8 PP1 CP32, 1024 GPUs", "h100-sxm")
    s = with_gpu(s, eta_a=0.7)
    p0 = {**p0, "eta_a:cudnn": 0.7}
    sens, t0 = sensitivity(s), step_time(s)
    row = FitRow(0, "A", "x", "h100-sxm", "cudnn", sens.a, sens.c_d, sens.c_a, s.gemm_W, 1.0,
                 t0, True)
    p = {**p0, "eta_max": 0.8 * 0.59, "eta_a:cudnn": 0.8 * 0.7}
    assert predict([row], p0, p0)[0] == pytest.approx(t0, rel=1e-12)
    assert predict([row], p, p0, own=True)[0] == pytest.approx(
        step_time(at_params(s, p, p0)), rel=1e-9)


def test_a_fold_with_no_fitted_row_keeps_the_shipped_values():
    # the held-out row's only other source is unfitted (as the power-capped B200s): nothing to
    # refit on, so it keeps its shipped prediction and its exact price is not asked (a refit
    # of no rows would reset the scale factors to 1)
    calls = []
    held = _row(0, "A", 120.0, lambda p, p0: calls.append(p) or 1.0)
    other = FitRow(1, "B", "h100", "h100-sxm", "cudnn", 0.0, 1.0, 0.0, 1e21, 140.0, 100.0,
                   False, fitted=False)
    res = loso([held, other], {"h100": P0}, ("eta_max",))
    assert res.predictions[0] == pytest.approx(100.0) and calls == []


@pytest.mark.parametrize("label, head, kernel", [
    ("H100 Llama2-7B FP8 seq 1024K TP8 PP1 CP32, 1024 GPUs", "h100-sxm", "cudnn"),
    ("gpt3-2.7b seq 8k, FlashAttention-2", "a100-80gb", "fa2"),
    ("gpt3-2.7b seq 8k, no FlashAttention", "a100-80gb", "")])
def test_the_linearisation_is_the_model_at_its_two_ends(label, head, kernel):
    # the fit's step (validate_loso.predict) and the model (at_params) agree at the shipped
    # values and at the secant's far end (ceiling and attention x 0.8), by construction:
    # t_da = a + (c_d / eta_d + c_a / eta_a) / 0.8
    from optimus_calc.validate_loso import FitRow, predict
    s, sens, p0 = _sens_row(label, head)
    assert s.kernel == kernel
    t0 = step_time(s)
    row = FitRow(0, "A", "x", s.hw.gpu.name, s.kernel, sens.a, sens.c_d, sens.c_a, s.gemm_W,
                 1.0, t0, True)
    key = f"eta_a:{kernel}" if kernel else "eta_u"
    p = {**p0, "eta_max": 0.8 * p0["eta_max"], key: 0.8 * p0[key]}
    assert predict([row], p0, p0)[0] == pytest.approx(t0, rel=1e-12)
    assert predict([row], p, p0, own=True)[0] == pytest.approx(
        step_time(at_params(s, p, p0)), rel=1e-9)
