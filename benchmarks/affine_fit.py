"""One candidate constant x, fitted on validate's refitted public rows and cross-validated by
source, where each row's step is affine in it: step(x) = T + K x (the shared machinery of
benchmarks/fit_layer_fixed.py and benchmarks/fit_overlap_contention.py).

A row's prediction at x is its shipped one times (T + K x) / T (divided for throughputs),
applied to validate's in-sample column for the fit and to its LOSO column for the held-out error.
x is fitted on a grid (least mean |log(predicted / published)|) over all rows and again without
each source (validate_loso.fold_of).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from optimus_calc.catalog import load
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.validate import run_all
from optimus_calc.validate_loso import fold_of
from optimus_calc.validate_public import run_public


def rows(sensitivity: Callable) -> list[dict]:
    """Every refitted public row with ``sensitivity(setup)`` = (T, K)."""
    cat = load()
    # by label and source: a label can recur across releases (GB200 Llama3 8B FP8-CS, 8 GPUs)
    cases = {(c.case, c.source): c for c in run_all(cat)
             if c.section == "12" and c.kind != "memory"}
    out = []
    for r in run_public(cat, Assumptions()):
        c = cases.get((r.row.label, r.row.source))
        if r.predicted is None or c is None or c.loso is None:
            continue
        T, K = sensitivity(r.setup)
        out.append(dict(fold=fold_of(r.row.source), pub=r.row.published, ins=c.predicted,
                        lo=c.loso, T=T, K=K, time=r.row.unit == "s", moe=r.setup.model.is_moe))
    return out


def errors(rs: list[dict], key: str, grid: np.ndarray) -> np.ndarray:
    """|log(predicted / published)| at every ``grid`` value (first axis) of every row."""
    T, K = np.array([r["T"] for r in rs]), np.array([r["K"] for r in rs])
    ratio = (T + K * grid[:, None]) / T
    p = np.array([r[key] for r in rs])
    pred = np.where(np.array([r["time"] for r in rs]), p * ratio, p / ratio)
    return np.abs(np.log(pred / np.array([r["pub"] for r in rs])))


def held_out(fit: np.ndarray, held: np.ndarray, folds: list[str]) -> tuple[np.ndarray, dict]:
    """Leave one source out over a grid: for each fold, the grid index (first axis) whose mean
    of ``fit`` over the other folds' rows (second axis) is least, and ``held`` at that index
    for the fold's own rows. Returns (held value per row, fold -> index)."""
    out, picks = np.empty(len(folds)), {}
    for fold in dict.fromkeys(folds):
        others = [i for i, f in enumerate(folds) if f != fold]
        picks[fold] = j = int(np.argmin(fit[:, others].mean(1))) if others else 0
        mine = [i for i, f in enumerate(folds) if f == fold]
        out[mine] = held[j, mine]
    return out, picks


def report(rs: list[dict], name: str, grid: np.ndarray, label: Callable[[float], str]) -> None:
    E, EL = errors(rs, "ins", grid), errors(rs, "lo", grid)
    best = int(np.argmin(E.mean(1)))
    held, _ = held_out(E, EL, [r["fold"] for r in rs])
    print(f"{name}: {len(rs)} rows, fit {label(grid[best])}; in-sample {E[0].mean():.2%} -> "
          f"{E[best].mean():.2%}; LOSO {EL[0].mean():.2%} -> {np.mean(held):.2%}")


def main(sensitivity: Callable, grid: np.ndarray, label: Callable[[float], str]) -> None:
    everything = rows(sensitivity)
    report(everything, "all", grid, label)
    report([r for r in everything if not r["moe"]], "dense", grid, label)
