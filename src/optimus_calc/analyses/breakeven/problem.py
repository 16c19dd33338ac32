"""One device, one goal: the predicate over a parameter's value (evaluations cached) and the
monotone bracketing search `breakeven` falls back on."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from optimus_calc.analyses.breakeven.case import Case, Goal, State, measure, met
from optimus_calc.evaluate.hw_params import Param

REL_TOL = 1e-6      # bracketing stops when the bracket is this narrow (relative)
SPAN = 1e6          # search up to this multiple of the current value (or the catalog's bound)


@dataclass(frozen=True)
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
        self._cache: dict[tuple, State] = {}

    def state(self, p: Param | None = None, value: float | None = None,
              extra: tuple[tuple[Param, float], ...] = ()) -> State:
        key = (p.key if p else None, value, tuple((q.key, v) for q, v in extra))
        if key not in self._cache:
            c = self.case
            if p is not None:
                c = c.with_param(p, value)
            for q, v in extra:
                c = c.with_param(q, v)
            self._cache[key] = measure(c)
        return self._cache[key]

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
            integer: bool) -> tuple[str, float | None]:
    """The smallest value in [low, cap] meeting a goal that, once met, stays met as the value
    grows: ("value", v), ("never", None) or ("any", low). The bound is tried first (not met
    there: never); otherwise doubling (or halving) from the current value brackets it and
    bisection (geometric, or over integers) narrows it to REL_TOL."""
    if pred(cur):
        good, bad = cur, None
        while bad is None:
            nxt = max(low, math.floor(good / 2) if integer else good / 2)
            if nxt >= good:
                return "any", low
            if pred(nxt):
                good = nxt
            else:
                bad = nxt
    elif not pred(cap):
        return "never", None  # monotone: not at the bound, not below it
    else:
        bad, good = cur, None
        while good is None:
            nxt = min(cap, math.ceil(bad * 2) if integer else bad * 2)
            if nxt <= bad:
                return "never", None
            if pred(nxt):
                good = nxt
            else:
                bad = nxt
    if integer:
        while good - bad > 1:
            mid = (good + bad) // 2
            if pred(mid):
                good = mid
            else:
                bad = mid
        return "value", float(good)
    while good / bad - 1 > REL_TOL:
        mid = math.sqrt(good * bad)
        if pred(mid):
            good = mid
        else:
            bad = mid
    return "value", good


