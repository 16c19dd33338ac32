"""Does a share of TP collectives hidden by torchtitan's async TP generalise? (issue 32;
docs/guide/validate.md)

    .venv/bin/python benchmarks/fit_async_tp.py

torchtitan's async TP (``parallelism.enable_async_tensor_parallel``, PyTorch's micro-pipelined
all-gather / reduce-scatter matmuls) overlaps the TP collectives with the matmuls they feed.
Three public sources time it on the same Grand Teton H100s: torchtitan's 2024-12 benchmark
(Table 4's 70B 2D + AsyncTP, the 405B Tables 5-6 that run it), its 2025-06 async-TP benchmark
(70B and 8B, bf16 and float8 tensorwise) and docs/performance.md's 405B Float8 + async TP row.
Every such row of `validate` (PublicRow.async_tp; public_row.with_async_tp) is evaluated with the
assumption ``tp_overlap`` (the share of TP communication hidden) at each grid value; the share
is fitted (least mean |log(predicted / published)|) without each source and that source
predicted with it; the alternative is today's: the collectives priced exposed (share 0).
Round 24 (12 rows): fitted 0.25 on all, held out 7.5% against 6.9% priced exposed (2024-12:
0.25, 5.7% vs 5.6%; 2025-06: 0.30, 11.4% vs 9.9%; docs/performance.md: 0.05, 3.9% vs 4.7%):
not kept; the rows stay priced exposed.
Round 27 (the LOSO column priced by the step model, the fit's sensitivity corrected): the same
figures (the share is fitted on these rows' own step, not through that column): not kept.
"""

from __future__ import annotations

import numpy as np

from affine_fit import held_out
from optimus_calc import catalog
from optimus_calc.public_cases import public_rows
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.validate_loso import fold_of
from optimus_calc.validate_public import predicted_value, setup, step_time

GRID = np.linspace(0.0, 1.0, 21)


def errors(cat, row) -> np.ndarray:
    """predicted / published - 1 at each hidden share of GRID."""
    out = []
    for share in GRID:
        s = setup(cat, row, Assumptions(tp_overlap=float(share)))
        out.append(predicted_value(row, s, step_time(s)) / row.published - 1)
    return np.array(out)


def main() -> None:
    cat = catalog.load()
    rows = [r for r in public_rows() if not r.why_not and r.async_tp]
    err = np.array([errors(cat, r) for r in rows]).T  # grid x rows
    for k, r in enumerate(rows):
        print(f"{fold_of(r.source)[:40]:40s} {r.label[:58]:58s} exposed {err[0, k]:+.3f} "
              f"hidden {err[-1, k]:+.3f}")
    folds = [fold_of(r.source) for r in rows]
    held, picks = held_out(np.abs(np.log1p(err)), np.abs(err), folds)
    for fold, k in picks.items():
        mine = [i for i, f in enumerate(folds) if f == fold]
        print(f"without {fold[:60]}: share {GRID[k]:.2f}, held out {held[mine].mean():.1%} vs "
              f"exposed {np.abs(err[0, mine]).mean():.1%} ({len(mine)} rows)")
    best = int(np.argmin(np.abs(np.log1p(err)).mean(1)))
    print(f"all {len(rows)} rows: share {GRID[best]:.2f}; held out {held.mean():.1%} vs exposed "
          f"{np.abs(err[0]).mean():.1%}")


if __name__ == "__main__":
    main()
