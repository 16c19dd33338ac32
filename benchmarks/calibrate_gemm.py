"""Fit the GEMM-efficiency curve (equations/efficiency.py) on public throughput tables and print
the fit error per row. Run: PYTHONPATH=src python benchmarks/calibrate_gemm.py

A100: Narayanan et al. SC'21 Table 1 (ten rows, 1.7B to 1T), three parameters fitted together:
gemm_eta_max, gemm_half_GFLOP and attention_eta (unfused attention, as those runs used).
H100: Megatron-LM README weak-scaling table (nine rows, 1.7B to 462B); gemm_half_GFLOP is the
A100 value scaled by the peak ratio (the same fixed time per GEMM, assumed), flash_attention_eta
is assumed, and gemm_eta_max is fitted (one parameter).

The step model turns each row into step = a + c / eta (src/optimus_calc/gemm_calibration.py);
the fit minimises the sum of squared relative throughput errors over a grid, refined twice.

Superseded for the catalog's values by src/optimus_calc/validate_loso.py (issue 32): the curve,
the unfused attention and the fused kernels' end-to-end efficiencies are now fitted together on
every public 16-bit row of the GPU group and kept only if the leave-one-source-out error falls;
this script still reproduces the earlier two-table fits.
"""

from __future__ import annotations

import sys

import numpy as np

from optimus_calc import catalog
from optimus_calc.gemm_calibration import megatron_h100_cases, narayanan_cases


def _eta(x, eta_max, half_flops, eta_a, share, w):
    """Effective efficiency (equations efficiency.gemm_efficiency + layer_efficiency) on a grid."""
    eta_d = eta_max * w / (w + half_flops)
    return 1.0 / ((1 - share) / eta_d + share / eta_a)


def fit(cases, grids, fixed):
    """Least squares over the named parameter grids (others fixed); returns params, errors."""
    names = list(grids)
    a = np.array([c.a_s for c in cases])
    cc = np.array([c.c_s for c in cases])
    fl = np.array([c.flops_per_gpu for c in cases])
    pub = np.array([c.published_tflops for c in cases])
    share = np.array([c.attention_share for c in cases])
    w = np.array([2.0 * c.s * c.b * c.h * c.h / c.t for c in cases])
    centre = {k: None for k in names}
    best = None
    for _ in range(3):
        axes = []
        for k in names:
            lo, hi, n = grids[k]
            if centre[k] is not None:  # refine around the previous optimum
                span = (hi - lo) / n * 2
                lo, hi = max(grids[k][0] * 0.5, centre[k] - span), centre[k] + span
            axes.append(np.linspace(lo, hi, n))
        mesh = np.meshgrid(*axes, indexing="ij")
        p = {**fixed, **{k: m[..., None] for k, m in zip(names, mesh)}}
        eta = _eta(None, p["gemm_eta_max"], p["gemm_half_GFLOP"] * 1e9,
                   p["attention_eta"], share, w)
        err = fl / (a + cc / eta) / 1e12 / pub - 1
        sse = np.sum(err ** 2, axis=-1)
        i = np.unravel_index(np.argmin(sse), sse.shape)
        centre = {k: float(ax[j]) for k, ax, j in zip(names, axes, i)}
        best = centre
    p = {**fixed, **best}
    eta = _eta(None, p["gemm_eta_max"], p["gemm_half_GFLOP"] * 1e9, p["attention_eta"], share, w)
    return p, fl / (a + cc / eta) / 1e12 / pub - 1, eta


def report(title, cases, params, err, eta, peak_tflops):
    print(f"\n{title}")
    print("  " + ", ".join(f"{k} = {v:.4g}" for k, v in params.items()))
    print(f"  {'case':12s} {'layout':38s} {'published':>9s} {'fit':>7s} {'error':>7s} "
          f"{'eta needed':>10s} {'eta curve':>9s} {'MFU/HFU':>7s}")
    for c, e, et in zip(cases, err, eta):
        print(f"  {c.label:12s} {c.config:38s} {c.published_tflops:9.1f} "
              f"{c.published_tflops * (1 + e):7.1f} {e * 100:+6.1f}% {c.required_eta:10.4f} "
              f"{et:9.4f} {c.published_tflops * (1 + e) / peak_tflops * 100:6.1f}%")
    print(f"  mean |error| {np.mean(np.abs(err)) * 100:.1f}%, max |error| "
          f"{np.max(np.abs(err)) * 100:.1f}%")


def main() -> int:
    cat = catalog.load()
    a100, h100 = cat.get("a100-80gb", "gpu"), cat.get("h100-sxm", "gpu")
    nar = narayanan_cases(cat)
    p_a, err_a, eta_a = fit(nar, {"gemm_eta_max": (0.5, 1.0, 51),
                                  "gemm_half_GFLOP": (0.5, 100.0, 80),
                                  "attention_eta": (0.05, 0.9, 60)}, {})
    report("A100, Narayanan et al. SC'21 Table 1 (hardware FLOPs, full recompute, unfused "
           "attention)", nar, p_a, err_a, eta_a, a100.peak_TFLOPS.bf16)
    cur = {"gemm_eta_max": a100.gemm_eta_max, "gemm_half_GFLOP": a100.gemm_half_GFLOP,
           "attention_eta": a100.attention_eta}
    _, err_c, eta_c = fit(nar, {"gemm_eta_max": (cur["gemm_eta_max"],) * 2 + (1,)},
                          {k: v for k, v in cur.items() if k != "gemm_eta_max"})
    report("A100 with the catalog's (rounded) values", nar, cur, err_c, eta_c,
           a100.peak_TFLOPS.bf16)

    meg = megatron_h100_cases(cat)
    p_h, err_h, eta_h = fit(meg, {"gemm_eta_max": (0.4, 1.0, 61),
                                  "gemm_half_GFLOP": (0.5, 200.0, 80)},
                            {"attention_eta": h100.flash_attention_eta})
    half_h = p_a["gemm_half_GFLOP"] * h100.peak_TFLOPS.bf16 / a100.peak_TFLOPS.bf16
    p_s, err_s, eta_s = fit(meg, {"gemm_eta_max": (0.4, 1.0, 121)},
                            {"gemm_half_GFLOP": half_h, "attention_eta": h100.flash_attention_eta})
    report("H100 if the A100 fixed time per GEMM carried over (W_half x peak ratio): rejected",
           meg, p_s, err_s, eta_s, h100.peak_TFLOPS.bf16)
    report("H100, Megatron-LM README weak scaling (model FLOPs, FlashAttention, micro-batch 1 "
           "assumed)", meg, p_h, err_h, eta_h, h100.peak_TFLOPS.bf16)
    cur_h = {"gemm_eta_max": h100.gemm_eta_max, "gemm_half_GFLOP": h100.gemm_half_GFLOP,
             "attention_eta": h100.flash_attention_eta}
    _, err_hc, eta_hc = fit(meg, {"gemm_eta_max": (cur_h["gemm_eta_max"],) * 2 + (1,)},
                            {k: v for k, v in cur_h.items() if k != "gemm_eta_max"})
    report("H100 with the catalog's values", meg, cur_h, err_hc, eta_hc, h100.peak_TFLOPS.bf16)
    return 0


if __name__ == "__main__":
    sys.exit(main())
