"""The MoE host constants (Assumptions.moe_layer_host_s, the dropless dispatcher's sync, and
moe_layer_fixed_s, every MoE layer's launch-bound kernels; step.fixed_time): their fit on the
public MoE training rows and its leave-one-source-out (LOSO) prediction. Pure.

The step time is affine in both constants (step.fixed_time adds (t_f + t_s) x MoE layers x
micro-batches of the binding stage, t_s only where the dispatcher syncs): T(t_s, t_f) = T + K
(t_s - t0) + K_f (t_f - f0), with T the row's step at the shipped (t0, f0) and K, K_f measured
on the row by one more evaluation each (:func:`host_row`; K = 0 on a row whose dispatcher does
not sync, token drop padded to capacity). The fit picks (t_s, t_f) on GRID x GRID that
minimises the rows' mean |log(predicted / published)|, as validate_loso.py does; LOSO refits
them without the row's source (validate_loso.fold_of) and predicts the row.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from optimus_calc.record import record

GRID = np.round(np.arange(0.0, 0.0200001, 0.0001), 4)  # 0 to 20 ms in 0.1 ms
DELTA_S = 1e-3  # the step added to a constant to measure K (the step is affine in it)


@record
class HostRow:
    key: int            # the case's index in validate's list
    fold: str           # the publication (validate_loso.fold_of)
    published: float
    pred: float         # the shipped prediction (at t0, f0)
    T: float            # the step time at (t0, f0), s
    K: float            # dT/dt_s: MoE layers x micro-batches of the binding stage, 0 unsynced
    t0: float           # the sync constant the shipped prediction was made with, s
    time_like: bool     # the figure grows with step time (seconds) or with its inverse
    K_f: float = 0.0    # dT/dt_f: MoE layers x micro-batches of the binding stage
    f0: float = 0.0     # the fixed constant the shipped prediction was made with, s
    A: float = 0.0      # -dT/do: the EP all-to-all time an overlap share o hides, s (0: the
    o0: float = 0.0     # row's profile hides none); o0 the share the prediction was made with


def host_row(key: int, res, t0: float, f0: float = 0.0) -> HostRow | None:
    """The HostRow of a validate_public.PublicResult of an MoE model; None otherwise."""
    from optimus_calc.validate_loso import fold_of
    from optimus_calc.validate_public import step_time
    s = res.setup
    if s is None or res.predicted is None or not s.model.is_moe:
        return None
    T = step_time(s) if res.step_s is None else res.step_s

    def slope(name: str, x0: float) -> float:
        if getattr(s.asm, name) != x0:  # the row's framework profile sets its own value (the
            return 0.0                  # full-iteration CUDA graph: 0), a refit does not move it
        up = replace(s, asm=s.asm.model_copy(update={name: x0 + DELTA_S}))
        return (step_time(up) - T) / DELTA_S
    o0 = s.asm.ep_overlap  # the step is affine in it (step.ep_comm_time)
    A = 0.0
    # the share refitted is the profile's; a typed --assume ep_overlap (every MoE row's, any
    # framework's) is the user's and stays, as the profile keeps it (frameworks/base.apply)
    if o0 > 0 and "ep_overlap" not in s.asm.model_fields_set:
        A = (step_time(replace(s, asm=s.asm.model_copy(update={"ep_overlap": 0.0}))) - T) / o0
    return HostRow(key, fold_of(res.row.source), res.row.published, res.predicted, T,
                   slope("moe_layer_host_s", t0), t0, res.row.unit == "s",
                   slope("moe_layer_fixed_s", f0), f0, A, o0)


def predict(rows: list[HostRow], t, f=None) -> np.ndarray:
    """Each row's prediction with the sync constant at ``t`` and the fixed one at ``f`` (the
    shipped f0 when None); ``t`` and ``f`` may be arrays (broadcast ahead of the rows' axis)."""
    T = np.array([r.T for r in rows])
    K, Kf = np.array([r.K for r in rows]), np.array([r.K_f for r in rows])
    t0, f0 = np.array([r.t0 for r in rows]), np.array([r.f0 for r in rows])
    t = np.asarray(t, dtype=float)[..., None]
    f = f0 if f is None else np.asarray(f, dtype=float)[..., None]
    ratio = (T + K * (t - t0) + Kf * (f - f0)) / T
    pred = np.array([r.pred for r in rows])
    return np.where(np.array([r.time_like for r in rows]), pred * ratio, pred / ratio)


def _errors(rows: list[HostRow]) -> np.ndarray:
    """|log(predicted / published)| of each row (last axis) at every (t_s, t_f) of GRID x GRID."""
    pub = np.array([r.published for r in rows])
    # t_s along the first axis, t_f along the second: GRID x GRID by broadcasting (each
    # constant's term computed once per value, the same numbers as on the meshgrid)
    return np.abs(np.log(predict(rows, GRID[:, None], GRID[None, :]) / pub))


def _best(errors: np.ndarray) -> tuple[float, float]:
    """The GRID values with the least mean error over the rows (the first among ties)."""
    loss = np.mean(errors, axis=-1)
    i, j = np.unravel_index(int(np.argmin(loss)), loss.shape)
    return float(GRID[i]), float(GRID[j])


def fit(rows: list[HostRow]) -> tuple[float, float] | None:
    """The GRID values (t_s, t_f) with the least mean |log(predicted / published)| over
    ``rows`` (the smallest t_s, then t_f, among ties); None without rows."""
    return _best(_errors(rows)) if rows else None


def _held_out(rows: list[HostRow], errors: np.ndarray, best):
    """Per source: (its rows, ``best`` of the other sources' rows' errors, or None when no other
    source has rows). ``errors``: every row's (last axis) over a grid, computed once for all
    folds; taken in C order, as computing them on the other rows alone lays them out, so that
    np.mean sums the rows in the same order as a fit on them would."""
    for fold in {r.fold for r in rows}:
        others = [i for i, r in enumerate(rows) if r.fold != fold]
        yield ([r for r in rows if r.fold == fold],
               best(np.ascontiguousarray(errors[..., others])) if others else None)


def loso(rows: list[HostRow]) -> dict[int, tuple[tuple[float, float], float]]:
    """key -> ((t_s, t_f) refitted without the row's source, the row's prediction with them);
    a source alone keeps its shipped constants (:func:`fit` of the other rows)."""
    out = {}
    for mine, th in _held_out(rows, _errors(rows) if rows else None, _best):
        preds = predict(mine, *th) if th is not None else [r.pred for r in mine]
        for r, p in zip(mine, preds):
            out[r.key] = (th if th is not None else (r.t0, r.f0), float(p))
    return out


# ---- the EP overlap share (Megatron-LM --overlap-moe-expert-parallel-comm) -------------------

O_GRID = np.round(np.arange(0.0, 1.00001, 0.01), 2)  # the share hidden, 0 to 1 in 0.01


def predict_overlap(rows: list[HostRow], o) -> np.ndarray:
    """Each row's prediction with the EP overlap share at ``o`` (may be an array, broadcast
    ahead of the rows' axis): T(o) = T + A (o0 - o), step.ep_comm_time being linear in o."""
    T, A = np.array([r.T for r in rows]), np.array([r.A for r in rows])
    o0 = np.array([r.o0 for r in rows])
    ratio = (T + A * (o0 - np.asarray(o, dtype=float)[..., None])) / T
    pred = np.array([r.pred for r in rows])
    return np.where(np.array([r.time_like for r in rows]), pred * ratio, pred / ratio)


def _overlap_errors(rows: list[HostRow]) -> np.ndarray:
    pub = np.array([r.published for r in rows])
    return np.abs(np.log(predict_overlap(rows, O_GRID) / pub))


def _best_share(errors: np.ndarray) -> float:
    """The O_GRID share with the least mean error over the rows (the smallest among ties)."""
    return float(O_GRID[int(np.argmin(np.mean(errors, axis=-1)))])


def fit_overlap(rows: list[HostRow]) -> float | None:
    """The O_GRID share with the least mean |log(predicted / published)| over the rows whose
    profile overlaps the EP all-to-all (A > 0; the smallest among ties); None without any."""
    rows = [r for r in rows if r.A > 0]
    return _best_share(_overlap_errors(rows)) if rows else None


def loso_overlap(rows: list[HostRow]) -> dict[int, float]:
    """key -> the row's prediction with the share refitted without its source (rows with
    A > 0 only; a source alone keeps its shipped share)."""
    rows = [r for r in rows if r.A > 0]
    out = {}
    for mine, o in _held_out(rows, _overlap_errors(rows) if rows else None, _best_share):
        preds = predict_overlap(mine, o) if o is not None else [r.pred for r in mine]
        out.update({r.key: float(p) for r, p in zip(mine, preds)})
    return out
