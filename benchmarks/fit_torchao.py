"""Fit torchao float8's GEMM ratio (specs/assumptions.py ``fp8_gemm_efficiency``) on every public
torchtitan Float8 training row, and report per-row in-sample and leave-one-source-out errors.

    python benchmarks/fit_torchao.py

The rows are the expressible public cases with ``--fp8-recipe torchao`` (public_cases.py:
torchtitan's 2024-12 benchmark file, its 2025-06 async-TP file, the 2025-06 H200 file and its
docs/performance.md 405B row; not the float8 row of torchtitan's mxfp8.md B200 table,
public_cases_tt.py: its B200s' power limit is unpublished and its BF16 row is +91%, a gap the
ratio would absorb; nor, since round 24, the rows that run async TP, whose TP collectives are
priced exposed: PublicRow.unfitted), each run through the torchtitan profile as `validate`
runs it. The ratio is the value on a 0.005 grid that minimises the rows' mean
|log(predicted / published)|; leave-one-source-out refits it without each source and predicts
that source's rows. It replaced the fit on Table 1's
single compile/Float8 pair (0.753 under the corrected op-level SAC), whose leave-one-source-out
error on the same rows is printed for comparison.
"""

from __future__ import annotations

import numpy as np

from optimus_calc.catalog import load
from optimus_calc.public_cases import public_rows
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.validate_loso import fold_of
from optimus_calc.validate_public import predicted_value, setup, step_time

GRID = np.round(np.arange(0.60, 1.0001, 0.005), 3)
PAIR_FIT = 0.753  # the earlier fit on torchtitan Table 1's compile / compile + Float8 pair


def table(cat) -> dict[str, tuple[str, np.ndarray]]:
    """label -> (source, log(predicted / published) at each GRID value)."""
    out = {}
    for r in public_rows():
        if r.why_not or r.fp8_recipe != "torchao" or r.unfitted:  # PublicRow.unfitted
            continue
        errs = []
        for g in GRID:
            s = setup(cat, r, Assumptions(fp8_gemm_efficiency=float(g)))
            errs.append(np.log(predicted_value(r, s, step_time(s)) / r.published))
        out[r.label] = (fold_of(r.source), np.array(errs))
    return out


def best(tab, names) -> float:
    return float(GRID[int(np.argmin(np.mean([np.abs(tab[n][1]) for n in names], axis=0)))])


def main() -> None:
    tab = table(load())
    names = list(tab)
    fitted = best(tab, names)
    at = {n: float(np.interp(fitted, GRID, tab[n][1])) for n in names}
    loso = {n: float(np.interp(best(tab, [x for x in names if tab[x][0] != tab[n][0]]), GRID,
                               tab[n][1])) for n in names}
    pair = {n: float(np.interp(PAIR_FIT, GRID, tab[n][1])) for n in names}
    print(f"torchao: fitted ratio {fitted:.3f} on {len(names)} rows of "
          f"{len({s for s, _ in tab.values()})} sources")
    for n in names:
        print(f"  {n[:62]:62s} in-sample {np.expm1(at[n]):+.1%}  leave-one-source-out "
              f"{np.expm1(loso[n]):+.1%}  at {PAIR_FIT} {np.expm1(pair[n]):+.1%}")
    mean = lambda d: float(np.mean(np.abs(np.expm1(list(d.values())))))  # noqa: E731
    print(f"  mean |error|: in-sample {mean(at):.1%}, leave-one-source-out {mean(loso):.1%}, "
          f"at the pair's {PAIR_FIT} {mean(pair):.1%}")


if __name__ == "__main__":
    main()
