"""Pipeline stages as an array axis: which stages the evaluator looks at per pipeline degree.

With ``all_stages`` every stage is kept (one layout); otherwise a stage whose shape (layers, MoE
layers, parameters, first/last) repeats an earlier stage's is dropped: it holds no more in-flight
micro-batches (1F1B: min(p - i, m) falls with i) and takes the same time, so it never binds.

The evaluator's array-layout tactics live here too, each a speed tactic that gives the same
numbers (tested) and asks something of new code (docs/ARCHITECTURE.md, "Speed tactics"): the
stage-major memory order (:data:`STAGE_MAJOR_FROM`, :func:`stage_major_zeros`), pairwise
reductions over the stage axis (:func:`stage_max`, :func:`stage_argmax`) and the in-place merge
of the offload strategies' figures (:func:`by_strategy`).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from optimus_calc.evaluate.shapes import interleave_matters, stage_shapes
from optimus_calc.specs.model import BareModel, Model
from optimus_calc.record import record


# Per-stage arrays of more (layout, stage) values than this are stored stage-major: the stage
# axis outermost in memory, so numpy's inner loops run along the layouts instead of the 1-4
# stages (several times faster for the broadcasting operations); below it the reordering costs
# more than it saves. A speed tactic, not physics: any value gives the same numbers
# (tests/test_memory_order.py runs the evaluator at both extremes).
STAGE_MAJOR_FROM = 512

_COLUMNS = ("index", "layers", "moe_layers", "A", "X", "R", "first", "last")


@record
class StageColumns:
    """The stage table's columns at every layout's pipeline degree, shape ``pp.shape + (K,)``:
    what the evaluator's stages read as ``ctx.st``."""

    index: np.ndarray       # stage index i (0 first)
    layers: np.ndarray      # transformer layers of the stage
    moe_layers: np.ndarray  # of which MoE layers
    A: np.ndarray           # TP-sharded non-expert parameters (shapes.StageShape)
    X: np.ndarray           # expert parameters
    R: np.ndarray           # replicated parameters
    first: np.ndarray       # 1 on the first stage
    last: np.ndarray        # 1 on the last stage


# batches of at most this many layouts keep their looked-up columns on the table (a speed
# tactic: the same arrays, read-only)
_LOOKUPS_SMALL = 16

# the table's key of a (pipeline degree, model chunks per GPU) pair: pp x V_KEY + v, above
# any interleave (the CLI's --interleave stops at 1000)
V_KEY = 1 << 20


@record
class StageTable:
    """Per pipeline degree (and, where it changes a rank's MoE layers, interleave: shapes.
    interleave_matters), the stages evaluated (padded to a common width)."""

    pps: np.ndarray        # sorted unique keys: pipeline degree x V_KEY + interleave (or 1)
    index: np.ndarray      # (n_pp, K) stage index
    layers: np.ndarray
    moe_layers: np.ndarray
    A: np.ndarray
    X: np.ndarray
    R: np.ndarray
    first: np.ndarray
    last: np.ndarray

    by_v: bool = False     # keyed by interleave too (else every interleave reads v = 1)

    def lookup(self, pp: np.ndarray, v=1) -> StageColumns:
        """Each column at every layout's pipeline degree (and interleave ``v``), shape
        ``pp.shape + (K,)``; stored stage-major (see :data:`STAGE_MAJOR_FROM`) when large,
        gathered that way at once."""
        keys = _keys(pp, v, self.by_v)
        small = keys.size <= _LOOKUPS_SMALL
        if small:  # a report's batch: the same few columns on every call (read-only, kept)
            memo = self.__dict__.setdefault("_lookups", {})
            got = memo.get((keys.shape, keys.tobytes()))
            if got is not None:
                return got
        i = np.searchsorted(self.pps, keys)
        if i.size * self.index.shape[1] <= STAGE_MAJOR_FROM:
            # the columns stacked once per table (one gather instead of one per column)
            stacked = self.__dict__.get("_stacked")
            if stacked is None:
                stacked = self.__dict__["_stacked"] = np.stack([getattr(self, k)
                                                                for k in _COLUMNS])
                stacked.flags.writeable = False  # (the gathered columns are copies)
            cols = StageColumns(*stacked[:, i])
            if small:
                for k in _COLUMNS:
                    getattr(cols, k).flags.writeable = False
                if len(memo) >= 256:
                    memo.clear()
                memo[(keys.shape, keys.tobytes())] = cols
            return cols
        # np.take allocates its result in C order, stage first (fancy indexing would not)
        return StageColumns(**{k: np.moveaxis(np.take(getattr(self, k).T, i, axis=1), 0, -1)
                               for k in _COLUMNS})


def sorted_unique(values) -> np.ndarray:
    """Sorted distinct values, as ``np.unique(values)``, but through its sort path: numpy 2's
    default hash path imports numpy.ma (5-15 ms at start-up) only to ask whether the array is
    masked."""
    return np.unique(np.asarray(values), return_index=True)[0]


def stage_max(x) -> np.ndarray:
    """``x.max(axis=-1)`` over the short stage axis as pairwise maxima (numpy's reduction along
    a 3-4 long last axis is an order of magnitude slower); the same values, NaN included."""
    x = np.asarray(x)
    if x.ndim == 0:
        return x
    out = x[..., 0]
    for k in range(1, x.shape[-1]):
        out = np.maximum(out, x[..., k])
    return out if x.shape[-1] > 1 else out.copy()


# below this many values numpy's own argmax costs less than the pairwise operations' calls
# (measured crossover 2,000-4,000 on stage-major arrays); a speed tactic: the same index either way
_SMALL = 3000


def stage_argmax(x) -> np.ndarray:
    """``np.argmax(x, axis=-1)`` over the short stage axis by pairwise comparisons (as
    :func:`stage_max`): the first largest stage. A NaN (numpy: the first NaN's stage) shows
    in the running maximum, and then numpy's own argmax answers."""
    x = np.asarray(x)
    if x.size <= _SMALL:
        return np.argmax(x, axis=-1)
    best = x[..., 0]
    out = np.zeros(best.shape, dtype=np.intp)
    for k in range(1, x.shape[-1]):
        xk = x[..., k]
        out[xk > best] = k
        best = np.maximum(best, xk)
    return np.argmax(x, axis=-1) if np.isnan(best).any() else out


def stage_major_zeros(shape: tuple, dtype=np.float64) -> np.ndarray:
    """Zeros of ``shape`` stored as :meth:`StageTable.lookup` stores a large batch's stage
    columns (:data:`STAGE_MAJOR_FROM`): operations mixing them keep their inner loops along the
    layouts (a C-ordered array would put the 1-4 stages innermost)."""
    shape = tuple(shape)
    if len(shape) < 2 or math.prod(shape) <= STAGE_MAJOR_FROM:
        return np.zeros(shape, dtype)
    return np.moveaxis(np.zeros(shape[-1:] + shape[:-1], dtype), 0, -1)


_F8 = np.dtype(np.float64)


def by_strategy(pairs: list, shape: tuple, dtype=np.float64) -> np.ndarray:
    """One array from each strategy's (layouts, values): ``values`` where ``layouts`` (the
    strategies' layouts are disjoint), 0 elsewhere, written in place (no array per strategy),
    in the values' common dtype, stored as :func:`stage_major_zeros` stores it.

    The rule a new array must follow: a figure that depends on the layout's offload strategy
    is built by each strategy for its own layouts and merged here, never as one ``np.where``
    array per strategy (the planner's grid would hold a full-size copy per strategy); its
    values broadcast against ``shape`` (per layout with a trailing stage axis, as ``Ctx``'s
    arrays); a value that is 0 outside the strategy's layouts may be left out of ``pairs``.
    Outside the evaluator's stages, a new per-stage array is allocated with
    :func:`stage_major_zeros` and reduced over the stages with :func:`stage_max` /
    :func:`stage_argmax`."""
    shape = tuple(shape)
    col = shape[:-1] + (1,) if shape else ()  # (a per-layout mask: its stage axis 1)
    if dtype is np.float64 and pairs and math.prod(shape) <= STAGE_MAJOR_FROM and all(
            type(m) is np.ndarray and (m.shape == shape or m.shape == col)
            and (type(v) is float or type(v) is np.ndarray and v.shape == shape
                 and v.dtype == _F8) for m, v in pairs):
        # a small mixed batch's figure: every mask and array of ``shape`` (a mask maybe one
        # per layout), every value in float64 (the common case, checked in one pass: the same
        # copies as below)
        out = np.zeros(shape)
        for mine, value in pairs:
            np.copyto(out, value, where=mine)
        return out
    want = np.dtype(dtype)
    # the shapes and dtypes differing from ``shape`` and ``dtype``, looked at in Python (a flat
    # batch's are mostly the same few: numpy's broadcast and result_type cost more than the merge)
    values, others, odd = [], set(), False
    for m, v in pairs:
        v = np.asarray(v)
        values.append(v)
        if v.shape != shape and v.shape != ():
            others.add(v.shape)
        ms = m.shape if type(m) is np.ndarray else np.shape(m)
        if ms != shape and ms != ():
            others.add(ms)
        odd = odd or (v.dtype is not want and v.dtype != want)
    if others:
        shape = broadcast_small(shape, *others)
    if odd:
        dtype = np.result_type(want, *(v.dtype for v in values))
    small = math.prod(shape) <= STAGE_MAJOR_FROM
    if small and len(pairs) == 1 and (pairs[0][0] is True or np.asarray(pairs[0][0]).all()):
        # a small batch of one strategy: its values, copied (C order, as stage_major_zeros
        # stores a small array)
        v = values[0]
        if v.shape == shape and v.dtype == dtype:
            return v.copy()
        return np.array(np.broadcast_to(v, shape), dtype=dtype)
    out = np.zeros(shape, dtype) if small else stage_major_zeros(shape, dtype)
    for mine, value in pairs:
        # a small array's masked copy costs less than looking for a run (a speed tactic)
        part = None if small else _one_axis_run(np.asarray(mine), len(shape))
        if part is None:
            np.copyto(out, value, where=mine)
        else:  # the planner's grid: the strategy is an axis, its layouts a run along it
            out[part] = np.broadcast_to(value, shape)[part]
    return out


def shaped(x, shape: tuple):
    """``np.broadcast_to(x, shape)``, read-only; ``x`` itself, made read-only, when it has that
    shape (a term the evaluation made: nothing else writes to it; a batch of one would pay
    numpy's broadcast for nothing)."""
    if isinstance(x, np.ndarray) and x.shape == shape:
        x.flags.writeable = False
        return x
    return np.broadcast_to(x, shape)


def ndim(x) -> int:
    """``np.ndim(x)`` without numpy's dispatch for an array or a Python number."""
    return x.ndim if type(x) is np.ndarray else 0 if type(x) in (float, int, bool) else np.ndim(x)


def broadcast_small(*shapes: tuple) -> tuple:
    """``np.broadcast_shapes`` of a few short shapes, in Python (numpy's builds an array per
    shape: most of a small merge's cost)."""
    out = [1] * max(map(len, shapes))
    for s in shapes:
        for i, n in enumerate(s, len(out) - len(s)):
            if n != 1:
                if out[i] != 1 and out[i] != n:
                    raise ValueError(f"shapes {shapes} do not broadcast")
                out[i] = n
    return tuple(out)


# a mask varying along a longer axis is a flat batch's layouts: scanning it for a run costs
# more than the masked copy it would save (the planner's offload axis holds at most one value
# per registered strategy). A speed tactic: the merge is the same either way (tested).
_RUN_AXIS = 64


def _one_axis_run(mine: np.ndarray, ndim: int):
    """The index (slices) of the positions where ``mine`` holds when they are all of them (a
    batch of one strategy) or one run along the only, short axis ``mine`` varies on (the
    planner's offload axis); None otherwise (then a masked copy is made)."""
    if mine.all():
        return (Ellipsis,)
    mine = mine.reshape((1,) * (ndim - mine.ndim) + mine.shape)
    axes = [a for a, n in enumerate(mine.shape) if n > 1]
    if len(axes) != 1 or mine.shape[axes[0]] > _RUN_AXIS:
        return None
    at = np.flatnonzero(mine.reshape(-1))
    if at.size == 0 or at[-1] - at[0] + 1 != at.size:
        return None
    a = axes[0]
    return (slice(None),) * a + (slice(int(at[0]), int(at[-1]) + 1),)


def _keys(pp, v, by_v: bool) -> np.ndarray:
    pp = np.asarray(pp, dtype=np.int64)
    return pp * V_KEY + (np.asarray(v, dtype=np.int64) if by_v else 1)


def stage_table(model: Model | BareModel, pps, all_stages: bool, vs=1,
                extra_first: bool = False) -> StageTable:
    """The stages evaluated for each pipeline degree of ``pps`` with the interleave of ``vs``
    (paired with them, broadcast; used only where interleaving changes a rank's MoE layers,
    shapes.interleave_matters), the layers split as shapes.split_layers with ``extra_first``
    (Assumptions.pipeline_extra_layers_first). Cached per model, keys, ``all_stages`` and the
    split: a report asks for the same table on every call; its arrays are read-only."""
    by_v = interleave_matters(model)
    pp, v = np.asarray(pps, dtype=np.int64), np.asarray(vs, dtype=np.int64)
    if pp.size == 1 and v.size == 1:  # a batch of one: its key, as _keys makes it
        keys = [int(pp.reshape(-1)[0]) * V_KEY + (int(v.reshape(-1)[0]) if by_v else 1)]
    else:
        if by_v:  # (without, the keys read no interleave: pp's own are the same set)
            pp, v = np.broadcast_arrays(pp, v)
        keys = _keys(pp, v, by_v).reshape(-1)  # a grid's: one sort; a flat batch's in Python
        keys = sorted(set(keys.tolist())) if keys.size <= 256 else sorted_unique(keys).tolist()
    return _stage_table(model, tuple(keys), bool(all_stages), by_v, bool(extra_first))


@functools.lru_cache(maxsize=64)
def _stage_table(model: Model | BareModel, keys: tuple[int, ...], all_stages: bool,
                 by_v: bool, extra_first: bool = False) -> StageTable:
    rows = []
    for key in keys:
        shapes = stage_shapes(model, key // V_KEY, key % V_KEY, extra_first)
        if not all_stages:
            seen, keep = set(), []
            for sh in shapes:
                key = (sh.layers, sh.moe_layers, sh.A, sh.X, sh.R, sh.first, sh.last)
                if key not in seen:
                    seen.add(key)
                    keep.append(sh)
            shapes = keep
        rows.append(shapes)
    width = max(len(r) for r in rows)
    cols = {k: np.zeros((len(rows), width)) for k in _COLUMNS}
    for j, shapes in enumerate(rows):
        padded = shapes + [shapes[0]] * (width - len(shapes))  # a copy never changes a max
        for k_i, sh in enumerate(padded):
            cols["index"][j, k_i] = sh.index
            cols["layers"][j, k_i] = sh.layers
            cols["moe_layers"][j, k_i] = sh.moe_layers
            cols["A"][j, k_i], cols["X"][j, k_i], cols["R"][j, k_i] = sh.A, sh.X, sh.R
            cols["first"][j, k_i], cols["last"][j, k_i] = sh.first, sh.last
    table = StageTable(np.array(keys, dtype=np.int64), **cols, by_v=by_v)
    for a in (table.pps, *cols.values()):
        a.flags.writeable = False
    return table
