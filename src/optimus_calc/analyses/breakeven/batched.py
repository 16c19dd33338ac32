"""Many cases in one call of the evaluator: the break-even searches ask for a few dozen values of
a field at a time (the next levels of a bisection, a parameter at a thousandth and a thousand
times its value), and the evaluator's cost is nearly all per call, not per layout.

Cases that differ only in numeric catalog fields of their hardware and in per-layout fields of
:class:`~optimus_calc.evaluate.batch.Batch` are stacked: each differing field becomes a column
(shape (K, 1), broadcasting against the pipeline stages), the layouts a batch of K. Each case's
figures are then read from its row; they are the same numbers a batch of one gives (element-wise
arithmetic). What the stacking cannot carry (a changed training, a field the evaluator branches
on in Python) raises, and those cases are evaluated one at a time. The first stacking of each
set of changed fields is also checked against a batch of one, and a disagreement sends that set
one at a time for good.

The searches themselves skip the cases: :func:`measure_fields` (parameters at values) and
:func:`measure_changes` (whole cards) set the fields they vary as columns of the one hardware
directly, the column :func:`_stack` would build, and each row's :class:`State` is built only when
read (:class:`Rows`). Each parameter or card field is checked once per process against a batch
of one, whatever it is stacked with.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import numpy as np

from optimus_calc.specs.frozen import Frozen
from optimus_calc.analyses.breakeven.case import (Case, Sensitivity, State, binding_figures,
                                                  figures_of, measure, pipeline_figures,
                                                  state_of)
from optimus_calc.evaluate.batch import Batch
from optimus_calc.evaluate.engine import evaluate
from optimus_calc.evaluate.hw_params import Param, read_field, with_fields
from optimus_calc.specs.training import Offload


# layout fields Batch.of copies into its column of the same name unchanged: a layout parameter
# (hw_params: SmartNICs per node) of these stacks as that column
_LAYOUT_COLUMNS = {"smartnics_per_node"}


class Unstackable(Exception):
    """The cases differ in something the evaluator cannot take as a column."""


_CHECKED: dict[tuple, bool] = {}   # set of changed fields -> the stacked figures agreed


def _numbers(vals: list) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals)


def _same(vals: list) -> bool:
    v0 = vals[0]
    return all(v is v0 or v == v0 for v in vals[1:])


def _stack_model(objs: list, path: str, changed: list[str]):
    first = objs[0]
    if _same(objs):
        return first
    if not isinstance(first, Frozen) or any(type(o) is not type(first) for o in objs):
        raise Unstackable(path)
    update = {}
    for name in type(first).model_fields:
        vals = [getattr(o, name) for o in objs]
        if _same(vals):
            continue
        if isinstance(vals[0], Frozen):
            update[name] = _stack_model(vals, f"{path}.{name}", changed)
        elif _numbers(vals):
            update[name] = np.array(vals, dtype=np.float64)[:, None]
            changed.append(f"{path}.{name}")
        else:
            raise Unstackable(f"{path}.{name}")
    return first.model_copy(update=update)


def _stack(cases: list[Case]):
    """(hardware with columns, batch of K layouts, the changed fields) or Unstackable."""
    c0 = cases[0]
    for attr in ("model", "training", "asm"):
        if not _same([getattr(c, attr) for c in cases]):
            raise Unstackable(attr)
    if any(c.stages is not c0.stages for c in cases[1:]):
        raise Unstackable("stages")
    changed: list[str] = []
    hw_update = {}
    for f in dataclasses.fields(c0.hw):
        vals = [getattr(c.hw, f.name) for c in cases]
        if _same(vals):
            continue
        if vals[0] is None or not isinstance(vals[0], Frozen):
            raise Unstackable(f.name)
        hw_update[f.name] = _stack_model(vals, f.name, changed)
    hw = dataclasses.replace(c0.hw, **hw_update)
    if _same([c.layout for c in cases]):
        one = Batch.of(c0.layout, c0.training)
        cols = {f.name: np.repeat(np.asarray(getattr(one, f.name)), len(cases))
                for f in dataclasses.fields(Batch)}
    else:
        ones = [Batch.of(c.layout, c.training) for c in cases]
        cols = {f.name: np.concatenate([np.asarray(getattr(b, f.name)) for b in ones])
                for f in dataclasses.fields(Batch)}
        changed += [f"layout.{k}" for k, v in cols.items() if np.any(v != v[0])]
        changed.append("layout")  # other layout fields: the batch carries them; check once
    return hw, Batch.from_columns(cols), tuple(sorted(changed))


def measure_many(cases: list[Case]) -> list[State] | None:
    """:func:`~optimus_calc.analyses.breakeven.case.measure` of every case in one call of the
    evaluator (the same figures), or None when the cases cannot be stacked (the caller then
    evaluates the ones it needs, one at a time)."""
    rows = measure_rows(cases)
    return None if rows is None else [rows.state(i) for i in range(len(cases))]


def measure_rows(cases: list[Case]) -> "Rows | None":
    """:func:`measure_many`, each row's :class:`State` built when it is read."""
    if not cases:
        return Rows.of_states([])
    try:
        hw, batch, changed = _stack(cases)
    except Unstackable:
        return None
    return _evaluate_stacked(cases, hw, batch, changed, lambda i: measure(cases[i]))


def measure_fields(case: Case, asks: list[tuple[Param, float]]) -> "Rows | None":
    """The figures of ``case.with_param(p, v)`` for each distinct ``(p, v)`` of ``asks`` (one
    parameter over many values, or several parameters at once) in one call of the evaluator:
    :func:`measure_rows` of those cases, without building a case per value (each parameter's
    fields, :meth:`Param.changes`, become columns, and the layout's cards per node its batch
    column: :func:`measure_changes`)."""
    cases = lambda: [case.with_param(p, v) for p, v in asks]  # noqa: E731
    if len(asks) < 2:
        return measure_rows(cases())
    changes = [_column_changes(case, p, v) for p, v in asks]
    firsts: dict[str, int] = {}  # each parameter is checked at its first row
    for r, (p, _) in enumerate(asks):
        firsts.setdefault(p.key, r)
    try:
        return measure_changes(case, changes, lambda i: case.with_param(*asks[i]), firsts)
    except Unstackable:
        return measure_rows(cases())


def _column_changes(case: Case, p: Param, v: float) -> dict[tuple[str, str], float]:
    """The columns ``case.with_param(p, v)`` changes: the hardware fields of
    :meth:`Param.changes`, or for a layout parameter its field of the layout, which is also a
    column of :class:`~optimus_calc.evaluate.batch.Batch` (the value :meth:`Param.apply` sets)."""
    if p.role == "layout":
        if p.field not in _LAYOUT_COLUMNS:
            raise Unstackable(p.key)
        return {("layout", p.field): getattr(p.apply(case.hw, case.layout, v)[1], p.field)}
    return {(p.role, path): value for path, value in p.changes(case.hw, v).items()}


def model_changes(base: Frozen, new: Frozen, role: str, prefix: str = ""
                  ) -> dict[tuple[str, str], float]:
    """The numeric fields (paths, nested models followed) in which catalog entry ``new``
    differs from ``base``, as {(role, path): value}: what :func:`measure_changes` takes.
    Unstackable when anything else differs."""
    if type(new) is not type(base):
        raise Unstackable(role)
    out: dict[tuple[str, str], float] = {}
    for name in type(base).model_fields:
        a, b = getattr(base, name), getattr(new, name)
        if a is b or a == b:
            continue
        if isinstance(a, Frozen):
            out.update(model_changes(a, b, role, f"{prefix}{name}."))
        elif _numbers([a, b]):
            out[(role, f"{prefix}{name}")] = float(b)
        else:
            raise Unstackable(f"{role}.{prefix}{name}")
    return out


def measure_changes(case: Case, changes: list[dict[tuple[str, str], float]],
                    one: Callable[[int], Case], checks: dict[str, int]) -> "Rows | None":
    """Row ``r`` is ``case`` with each (hardware role, field path) of ``changes[r]`` set to its
    value (``one(r)``: that case, built only to check a row): one call of the evaluator, each
    changed field a column holding today's value in the rows that leave it (the column
    :func:`_stack` would build from the cases). ``checks``: a key per thing stacked (a
    parameter, a field) and one of its rows, checked against a batch of one the first time the
    key is seen. Unstackable when the hardware does not take the columns."""
    hw0, n = case.hw, len(changes)
    base = Batch.of(case.layout, case.training)
    columns: dict[tuple[str, str], np.ndarray] = {}
    laid: dict[str, list] = {}  # a layout field's values, row by row, as Batch.of has them
    for r, change in enumerate(changes):
        for key, value in change.items():
            if key[0] == "layout":
                laid.setdefault(key[1], [getattr(case.layout, key[1])] * n)[r] = value
                continue
            col = columns.get(key)
            if col is None:
                col = columns[key] = np.full(n, read_field(hw0, *key))
            col[r] = value
    try:
        hw = with_fields(hw0, {k: col[:, None] for k, col in columns.items()})
    except (TypeError, ValueError, AttributeError):
        raise Unstackable("hardware") from None
    cols = {f.name: np.repeat(np.asarray(getattr(base, f.name)), n)
            for f in dataclasses.fields(Batch)}
    cols.update({name: np.array(vals) for name, vals in laid.items()})  # Batch.of's dtype
    return _evaluate_stacked([case] * n, hw, Batch.from_columns(cols), tuple(sorted(checks)),
                             _references(case, changes, one), checks=checks)


def _references(case: Case, changes: list[dict[tuple[str, str], float]],
                one: Callable[[int], Case]) -> Callable[[int], State]:
    """The batch of one each checked row of :func:`measure_changes` is compared with: a row
    that sets every field to the value ``case`` already has (a search's first call asks each
    parameter at today's value first) is ``case`` itself, measured once for all such rows."""
    base: list[State] = []

    def reference(i: int) -> State:
        same = all(v == (getattr(case.layout, k[1]) if k[0] == "layout"
                         else read_field(case.hw, *k)) for k, v in changes[i].items())
        if not same:
            return measure(one(i))
        if not base:
            base.append(measure(case))
        return base[0]
    return reference


def _evaluate_stacked(cases: list[Case], hw, batch: Batch, changed: tuple,
                      reference: Callable[[int], State], checks: dict[str, int] | None = None
                      ) -> "Rows | None":
    """Evaluate the stack. The first time a set of changed fields is stacked, its first and
    last rows are checked against a batch of one (``reference(i)``: row i's case measured
    alone); with ``checks``
    (parameter key -> one of its rows) each parameter is checked once, at that row, whatever
    it is stacked with."""
    if _CHECKED.get(changed) is False or (checks and any(
            _CHECKED.get((k,)) is False for k in checks)):
        return None
    c0 = cases[0]
    try:
        ev = evaluate(batch, c0.model, hw, c0.training, c0.asm, stages=c0.stages)
        rows = _rows(cases, hw, batch, ev)
    except (Unstackable, TypeError, ValueError):  # a field used as a Python scalar
        _CHECKED[changed] = False
        return None
    if checks is not None:
        for key, i in checks.items():
            if (key,) not in _CHECKED:
                _CHECKED[(key,)] = rows.state(i) == reference(i)
            if not _CHECKED[(key,)]:
                return None
        return rows
    if changed not in _CHECKED:
        n = len(cases)
        _CHECKED[changed] = (rows.state(n - 1) == reference(n - 1)
                             and rows.state(0) == reference(0))
        if not _CHECKED[changed]:
            return None
    return rows


class Rows:
    """Every row's figures of a stacked evaluation; a row's :class:`State` is built when asked
    (a bisection's prefetch evaluates 31 values and reads 5 of them)."""

    def __init__(self, cases: list[Case], figs: dict | None, pipes: list[dict | None],
                 states: list[State | None]):
        self._cases, self._figs, self._pipes, self._states = cases, figs, pipes, states

    @classmethod
    def of_states(cls, states: list[State]) -> "Rows":
        return cls([], None, [], list(states))

    def __len__(self) -> int:
        return len(self._states)

    def state(self, i: int) -> State:
        st = self._states[i]
        if st is None:
            st = self._states[i] = state_of(self._cases[i], self._figs, i, self._pipes[i])
        return st


def _rows(cases: list[Case], hw, batch: Batch, ev) -> Rows:
    """Every row's figures; OptimusNIC's pipeline of every row in one call."""
    c0, cols = cases[0], figures_of(ev)
    pipes: list[dict | None] = [None] * len(cases)
    if c0.layout.offload is Offload.SMARTNIC and c0.hw.smartnic is not None:
        if any(c.layout.offload is not c0.layout.offload or c.layout.zero != c0.layout.zero
               for c in cases):
            raise Unstackable("layout")
        figs = np.array([binding_figures(cols, i) for i in range(len(cases))])[:, :, None]
        # each row's cards per node from the batch (a stacked layout field, measure_changes)
        per_row = np.broadcast_to(np.asarray(batch.smartnics_per_node), (len(cases),))
        cards = np.array([[x or c0.hw.gpus_per_node] for x in per_row.tolist()],
                         dtype=np.float64)
        pipe = pipeline_figures(dataclasses.replace(c0, hw=hw), *figs.transpose(1, 0, 2), cards)
        arr = {k: np.broadcast_to(np.asarray(v, dtype=np.float64), cards.shape)
               for k, v in pipe.items()}
        pipes = [{k: float(v[i, 0]) for k, v in arr.items()} for i in range(len(cases))]
    return Rows(cases, cols, pipes, [None] * len(cases))


def sensitivity(case: Case, params: list[Param], step: float = 0.01) -> list[Sensitivity]:
    """Elasticities by a forward finite difference of +1% through the evaluator (integer
    fields such as cores are relaxed to real numbers for the nudge); the hardware fields'
    nudges in one evaluation (:func:`measure_fields`)."""
    base = measure(case)
    head = base.gpu_capacity_bytes - base.gpu_bytes
    nudges = [(p, cur) for p in params if (cur := p.get(case.hw, case.layout)) > 0]
    rows = measure_fields(case, [(p, cur * (1 + step)) for p, cur in nudges
                                 if p.role != "layout"])
    nudged = iter(range(len(nudges)))
    out = []
    for p, cur in nudges:
        st = (rows.state(next(nudged)) if rows is not None and p.role != "layout"
              else measure(case.with_param(p, cur * (1 + step))))
        e_t = (st.step_time_s / base.step_time_s - 1) / step
        h = st.gpu_capacity_bytes - st.gpu_bytes
        e_h = None
        if head > 0 and not math.isclose(h, head, rel_tol=1e-12):
            e_h = (h / head - 1) / step
        out.append(Sensitivity(p, p.entry_name(case.hw), cur, e_t, e_h))
    return out
