"""One device, one goal: the predicate over a parameter's value (evaluations cached) and the
monotone bracketing search `breakeven` falls back on."""

from __future__ import annotations

import math
from typing import Callable

from optimus_calc.analyses.breakeven.batched import Rows, measure_fields, measure_rows
from optimus_calc.analyses.breakeven.case import Case, Goal, State, measure, met
from optimus_calc.evaluate.hw_params import Param
from optimus_calc.record import record

REL_TOL = 1e-6      # bracketing stops when the bracket is this narrow (relative)
SPAN = 1e6          # search up to this multiple of the current value (or the catalog's bound)


@record
class _Solved:
    value: float | None
    status: str           # "value", "never", "any"
    method: str
    equation: str = ""
    binding: str = ""


class _Problem:
    """One device, one goal: the predicate over a parameter's value, evaluations cached."""

    def __init__(self, case: Case, goal: Goal, reference_s: float | None):
        self.case, self.goal, self.reference_s = case, goal, reference_s
        self._cache: dict[tuple, State | tuple[Rows, int]] = {}

    def _case(self, p: Param | None, value: float | None,
              extra: tuple[tuple[Param, float], ...]) -> Case:
        c = self.case
        if p is not None:
            c = c.with_param(p, value)
        for q, v in extra:
            c = c.with_param(q, v)
        return c

    @staticmethod
    def _key(p: Param | None, value: float | None,
             extra: tuple[tuple[Param, float], ...]) -> tuple:
        return (p.key if p else None, value, tuple((q.key, v) for q, v in extra))

    def state(self, p: Param | None = None, value: float | None = None,
              extra: tuple[tuple[Param, float], ...] = ()) -> State:
        key = self._key(p, value, extra)
        st = self._cache.get(key)
        if st is None:
            st = self._cache[key] = measure(self._case(p, value, extra))
        elif not isinstance(st, State):  # a row of a prefetched evaluation, built when read
            rows, i = st
            st = self._cache[key] = rows.state(i)
        return st

    def base_state(self, params: list[Param]) -> State:
        """The case as it is: the row of the first hardware parameter at its own value when a
        look-ahead evaluated it (the same case, the same figures), else one evaluation. Not a
        layout parameter: SmartNICs per node 0 means one per GPU, which get() resolves."""
        key = self._key(None, None, ())
        fields = [p for p in params if p.role != "layout"]
        if key not in self._cache and fields:
            p = fields[0]
            self._cache[key] = self.state(p, p.get(self.case.hw, self.case.layout))
        return self.state()

    def _keep(self, keys: list[tuple], rows: Rows | None) -> None:
        for i, key in enumerate(keys if rows is not None else ()):  # None: asked one at a time
            self._cache[key] = (rows, i)

    def prefetch(self, p: Param, values, extras=None) -> None:
        """Evaluate ``p`` at every value (with each of ``extras``, if given, at the one value)
        not yet known, in one call of the evaluator."""
        asks = [(v, ()) for v in values] if extras is None else [(values[0], e) for e in extras]
        todo = list(dict.fromkeys(a for a in asks if self._key(p, *a) not in self._cache))
        if not todo:
            return
        if extras is None:  # one field over many values: a column, no case per value
            rows = measure_fields(self.case, [(p, v) for v, _ in todo])
        else:
            rows = measure_rows([self._case(p, *a) for a in todo])
        self._keep([self._key(p, *a) for a in todo], rows)

    def prefetch_many(self, asks: list[tuple[Param, float, tuple]]) -> None:
        """Evaluate each (parameter, value, extra changes) not yet known in one call."""
        todo = list(dict.fromkeys(a for a in asks if self._key(*a) not in self._cache))
        if todo:
            self._keep([self._key(*a) for a in todo], measure_rows([self._case(*a)
                                                                    for a in todo]))

    def prefetch_each(self, asks: list[tuple[Param, float]]) -> None:
        """Evaluate each (parameter, value) not yet known, every parameter at once, in one
        call of the evaluator (each case changes its own field; the stack carries them all)."""
        todo = list(dict.fromkeys(a for a in asks if self._key(a[0], a[1], ()) not in self._cache))
        rows = measure_fields(self.case, todo)
        self._keep([self._key(p, v, ()) for p, v in todo], rows)

    def ok(self, p: Param, value: float) -> bool:
        return met(self.goal, self.state(p, value), self.reference_s)

    def figures(self, p: Param, value: float) -> tuple[float, ...]:
        """The figures the goal depends on (a parameter that moves none of them does not
        enter the goal's equations)."""
        st = self.state(p, value)
        if self.goal is Goal.FIT:
            return (st.offload_bytes_per_device, st.offload_capacity_per_device)
        return (st.optimizer_s, st.pipeline_s, st.optimizer_exposed_s, st.step_time_s)


def _bounds(p: Param, case: Case, cur: float) -> tuple[float, float]:
    top = p.upper_bound(case.hw)
    cap = top if top is not None else cur * SPAN
    low = 1.0 if p.integer else cur / SPAN
    return low, max(cap, cur)


def bracket(pred: Callable[[float], bool], cur: float, low: float, cap: float,
            integer: bool, prefetch: Callable[[list[float]], None] | None = None
            ) -> tuple[str, float | None]:
    """The smallest value in [low, cap] meeting a goal that, once met, stays met as the value
    grows: ("value", v), ("never", None) or ("any", low). The bound is tried first (not met
    there: never); otherwise doubling (or halving) from the current value brackets it and
    bisection (geometric, or over integers) narrows it to REL_TOL.

    ``prefetch``, if given, is handed every value the next PREFETCH_LEVELS questions could ask
    (both answers of each), so the caller can evaluate them in one call before ``pred`` is
    asked them one by one; the answer does not depend on it."""
    ahead = None if prefetch is None else (lambda wants: prefetch(wants[0][1]))
    return bracket_all([(pred, cur, low, cap, integer)], ahead)[0]


def bracket_all(searches: list[tuple[Callable[[float], bool], float, float, float, bool]],
                prefetch: Callable[[list[tuple[int, list[float]]]], None] | None = None
                ) -> list[tuple[str, float | None]]:
    """:func:`bracket` of each ``(pred, cur, low, cap, integer)``, the searches advanced
    together: each round, the values the next PREFETCH_LEVELS questions of every unfinished
    search could ask are handed to ``prefetch`` at once, as (search index, values), so the
    caller can evaluate them all in one call. Each answer is the one :func:`bracket` gives."""
    boxes = [_Bracket(cur, low, cap, integer) for _, cur, low, cap, integer in searches]
    states = [b.start() for b in boxes]
    asked: list[set[float]] = [set() for _ in boxes]
    out: list[tuple[str, float | None]] = [("never", None)] * len(boxes)
    live = list(range(len(boxes)))
    while live:
        wants, still = [], []
        for i in live:
            kind, x = boxes[i].query(states[i])
            if kind == "done":
                out[i] = x  # type: ignore[assignment]
                continue
            still.append((i, x))
            if prefetch is not None and x not in asked[i]:
                ahead = boxes[i].ahead(states[i], PREFETCH_LEVELS)
                wants.append((i, ahead))
                asked[i].update(ahead)
        if wants:
            prefetch(wants)  # type: ignore[misc]
        for i, x in still:
            states[i] = boxes[i].advance(states[i], x, searches[i][0](x))
        live = [i for i, _ in still]
    return out


PREFETCH_LEVELS = 5   # a bisection's next 5 questions: 31 values in one evaluation


def first_look_ahead(cur: float, low: float, cap: float, integer: bool) -> list[float]:
    """The values :func:`bracket_all` hands its ``prefetch`` first for a search of ``(cur,
    low, cap, integer)``: they depend on no answer, so a caller may evaluate them earlier, with
    other questions, and the search then finds them known."""
    box = _Bracket(cur, low, cap, integer)
    return box.ahead(box.start(), PREFETCH_LEVELS)


class _Bracket:
    """:func:`bracket` as a state machine: a state is (phase, good, bad); ``query`` is the
    next value to ask (or the answer), ``advance`` takes the predicate's answer at it."""

    def __init__(self, cur: float, low: float, cap: float, integer: bool):
        self.cur, self.low, self.cap, self.integer = cur, low, cap, integer

    def start(self) -> tuple:
        return ("start", None, None)

    def query(self, state: tuple) -> tuple[str, object]:
        phase, good, bad = state
        if phase == "start":
            return "ask", self.cur
        if phase == "cap":
            return "ask", self.cap
        if phase == "never":
            return "done", ("never", None)
        if phase == "down":
            nxt = max(self.low, math.floor(good / 2) if self.integer else good / 2)
            return ("done", ("any", self.low)) if nxt >= good else ("ask", nxt)
        if phase == "up":
            nxt = min(self.cap, math.ceil(bad * 2) if self.integer else bad * 2)
            return ("done", ("never", None)) if nxt <= bad else ("ask", nxt)
        if self.integer:
            return ("ask", (good + bad) // 2) if good - bad > 1 else ("done", ("value",
                                                                          float(good)))
        return ("ask", math.sqrt(good * bad)) if good / bad - 1 > REL_TOL else ("done",
                                                                             ("value", good))

    def advance(self, state: tuple, x: float, yes: bool) -> tuple:
        phase, good, bad = state
        if phase == "start":
            return ("down", self.cur, None) if yes else ("cap", None, self.cur)
        if phase == "cap":
            return ("up", None, bad) if yes else ("never", None, None)
        if phase == "down":
            return ("down", x, None) if yes else ("bisect", good, x)
        if phase == "up":
            return ("bisect", x, bad) if yes else ("up", None, x)
        return ("bisect", x, bad) if yes else ("bisect", good, x)

    def ahead(self, state: tuple, levels: int) -> list[float]:
        """Every value the next ``levels`` questions from ``state`` can ask."""
        out: list[float] = []
        frontier = [state]
        for _ in range(levels):
            nxt = []
            for s in frontier:
                kind, x = self.query(s)
                if kind == "done":
                    continue
                out.append(x)
                nxt += [self.advance(s, x, True), self.advance(s, x, False)]
            frontier = nxt
        return list(dict.fromkeys(out))
