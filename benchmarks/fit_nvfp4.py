"""Fit the NVFP4 GEMM ratio (specs/assumptions.py nvfp4_gemm_efficiency) on the public dense
NVFP4 training rows, and report its leave-one-release-out error.

    python benchmarks/fit_nvfp4.py

The rows: every dense NVFP4 row of Megatron-Bridge's performance summaries 26.02-26.06
(public_cases_mb26.py; Llama 3 70B on 64 and Llama 3.1 405B on 256 GB200 and GB300 GPUs),
each a published tokens/s/GPU of a whole training step, run as `validate` runs it (the
Megatron-LM profile, the release's layout). The ratio r is the value on a 0.005 grid that
minimises the rows' mean |predicted / published - 1|. Leave-one-release-out: each release's
rows are predicted with the ratio fitted on the other releases' (validate_loso.fold_of: one
release, one publication). The releases re-measure the same GPU x model cells, so it also
reports leave-one-GPU-out (GB200's rows predicted from GB300's and back). A fitted value is
kept only if the leave-one-release-out error is below the prior's, 1.0 (the GEMM at the BF16
curve's fraction of the FP4 peak, as MXFP8 and current scaling are fitted).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from optimus_calc import catalog  # noqa: E402
from optimus_calc.public_cases import public_rows  # noqa: E402
from optimus_calc.specs.assumptions import Assumptions  # noqa: E402
from optimus_calc.validate_loso import fold_of  # noqa: E402
from optimus_calc.validate_public import predicted_value, setup, step_time  # noqa: E402

GRID = np.round(np.arange(0.30, 1.0001, 0.005), 3)
PRIOR = 1.0


def rows():
    return [r for r in public_rows() if r.precision == "nvfp4" and not r.why_not]


def predictions(cat, rs, ratio: float) -> np.ndarray:
    asm = Assumptions(nvfp4_gemm_efficiency=float(ratio))
    return np.array([predicted_value(r, s, step_time(s))
                     for r in rs for s in [setup(cat, r, asm)]])


def main() -> None:
    cat = catalog.load()
    rs = rows()
    pub = np.array([r.published for r in rs])
    err = {float(g): predictions(cat, rs, g) / pub - 1 for g in GRID}
    folds = [fold_of(r.source) for r in rs]

    def best(mask) -> float:
        return min(err, key=lambda g: (np.abs(err[g][mask]).mean(), g))
    fit = best(np.ones(len(rs), bool))
    held = np.zeros(len(rs))
    for f in sorted(set(folds)):
        m = np.array([x == f for x in folds])
        held[m] = err[best(~m)][m]
    # the releases re-measure the same GPU x model cells: leaving a GPU out is the harder test
    gpus = [r.label.split()[0] for r in rs]
    held_gpu = np.zeros(len(rs))
    for g in sorted(set(gpus)):
        m = np.array([x == g for x in gpus])
        held_gpu[m] = err[best(~m)][m]
    print(f"{len(rs)} rows, {len(set(folds))} releases")
    print(f"fitted ratio {fit:.3f}: in-sample {np.abs(err[fit]).mean():.1%}, "
          f"leave-one-release-out {np.abs(held).mean():.1%}, "
          f"leave-one-GPU-out {np.abs(held_gpu).mean():.1%} "
          f"(GB200 alone {best(np.array([g == 'GB200' for g in gpus])):.3f}, "
          f"GB300 alone {best(np.array([g == 'GB300' for g in gpus])):.3f})")
    print(f"prior {PRIOR:.3f}: {np.abs(err[PRIOR]).mean():.1%}")
    for r, e, h in zip(rs, err[fit], held):
        print(f"  {r.label:60s} {r.published:8.0f} {e:+7.1%} held out {h:+7.1%}")


if __name__ == "__main__":
    main()
