"""The MoE host-sync constant (Assumptions.moe_layer_host_s, step.fixed_time): its fit on the
public MoE training rows and its leave-one-source-out (LOSO) prediction. Pure.

The step time is affine in the constant t (step.fixed_time adds t x MoE layers x micro-batches
of the binding stage): T(t) = T + K (t - t0), with T the row's step at the shipped t0 and K
measured on the row by one more evaluation (:func:`host_row`). The fit picks t on GRID that
minimises the rows' mean |log(predicted / published)|, as validate_loso.py does; LOSO refits it
without the row's source (validate_loso.fold_of) and predicts the row.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from optimus_calc.record import record

GRID = np.round(np.arange(0.0, 0.0300001, 0.0001), 4)  # 0 to 30 ms in 0.1 ms
DELTA_S = 1e-3  # the step added to t to measure K (the step is affine in t)


@record
class HostRow:
    key: int            # the case's index in validate's list
    fold: str           # the publication (validate_loso.fold_of)
    published: float
    pred: float         # the shipped prediction (at t0)
    T: float            # the step time at t0, s
    K: float            # dT/dt: MoE layers x micro-batches of the binding stage
    t0: float           # the constant the shipped prediction was made with, s
    time_like: bool     # the figure grows with step time (seconds) or with its inverse


def host_row(key: int, res, t0: float) -> HostRow | None:
    """The HostRow of a validate_public.PublicResult of an MoE model; None otherwise."""
    from optimus_calc.validate_loso import fold_of
    from optimus_calc.validate_public import step_time
    s = res.setup
    if s is None or res.predicted is None or not s.model.is_moe:
        return None
    T = step_time(s)
    up = replace(s, asm=s.asm.model_copy(update={"moe_layer_host_s": t0 + DELTA_S}))
    K = (step_time(up) - T) / DELTA_S
    return HostRow(key, fold_of(res.row.source), res.row.published, res.predicted, T, K, t0,
                   res.row.unit == "s")


def predict(rows: list[HostRow], t: float) -> np.ndarray:
    """Each row's prediction with the constant at ``t`` (the shipped ones at their t0)."""
    T = np.array([r.T for r in rows])
    ratio = (T + np.array([r.K * (t - r.t0) for r in rows])) / T
    pred = np.array([r.pred for r in rows])
    return np.where(np.array([r.time_like for r in rows]), pred * ratio, pred / ratio)


def fit(rows: list[HostRow]) -> float | None:
    """The GRID value of t with the least mean |log(predicted / published)| over ``rows``;
    None without rows."""
    if not rows:
        return None
    pub = np.array([r.published for r in rows])
    losses = [float(np.mean(np.abs(np.log(predict(rows, float(t)) / pub)))) for t in GRID]
    return float(GRID[int(np.argmin(losses))])


def loso(rows: list[HostRow]) -> dict[int, tuple[float, float]]:
    """key -> (the value t refitted without the row's source, the row's prediction with it);
    a source alone keeps its shipped t."""
    out = {}
    for fold in {r.fold for r in rows}:
        mine = [r for r in rows if r.fold == fold]
        t = fit([r for r in rows if r.fold != fold])
        for r, p in zip(mine, predict(mine, t) if t is not None else [r.pred for r in mine]):
            out[r.key] = (t if t is not None else r.t0, float(p))
    return out
