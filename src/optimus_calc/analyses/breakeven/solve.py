"""Break-even: what an offload device must have for offloading the optimizer to pay off.

For one layout and one offload device, each hardware parameter in turn (everything else held
fixed) is given the smallest value that meets a goal:

- ``hide``: the optimizer step and its transfers are hidden in the step (the evaluator's
  ``optimizer_exposed_s`` of the stage that binds the step is 0);
- ``fit``: the optimizer shard fits on the device (no spill to host memory, or, for a CPU,
  within host RAM);
- ``match``: the offloaded layout's step time is no longer than a reference's (the best layout
  that keeps the optimizer on the GPU, or one the caller names).

Where the goal is a registry expression that the parameter enters through one place it is
solved in closed form (sympy once, :mod:`optimus_calc.analyses.breakeven.sym` through
:mod:`~optimus_calc.analyses.breakeven.formgen`; evaluated without sympy,
:mod:`~optimus_calc.analyses.breakeven.numeric`): a SmartNIC's bandwidths, cores,
clock and fabric through compute.optimizer_step_time inside optimusnic.pipeline_time and
optimusnic.exposed_time (the card's per-layer pipeline against the last micro-batch's backward
and the next forward: the evaluator's model, evaluate/optimusnic.py),
its capacity through memory.spill_bytes. The host strategies run DeepSpeed's step phase by phase
(evaluate/offload_step.py): under ``hide`` their exposure has a floor no hardware value removes
(ZeRO-Offload/Infinity expose the whole step, offload.exposed_zero_offload; SuperOffload at
least its last sub-group and step()'s unscale and copy-back, offload.exposed_superoffload_stv as
the evaluator runs it), so every parameter is "never"
with that floor named; their ``fit`` and ``match`` goals, and every other parameter (links,
two-tier FPGA memory, host RAM, sockets, cards), are found by a monotone bracketing search over
the one evaluator (:func:`optimus_calc.evaluate.engine.evaluate`) on hardware with that field
changed. Every answer, closed form or floor, is checked against the evaluator (on both sides of
a value, at the search bound for "never"); a closed form the evaluator does not confirm is
replaced by the search.
"""

from __future__ import annotations

import math
from dataclasses import field
from typing import assert_never

from optimus_calc.analyses.breakeven.case import Case, Goal, State, met
from optimus_calc.evaluate.hw_params import Param
from optimus_calc.evaluate.strategies import device_params
from optimus_calc.specs.training import Offload
from optimus_calc.units import GB
from optimus_calc.analyses.breakeven.closed import (FLOOR_SUPEROFFLOAD, FLOOR_ZERO_OFFLOAD,
                                                    OptimizerInputs, _symbolic, optimizer_inputs)
from optimus_calc.analyses.breakeven.problem import (REL_TOL, _bounds, _Problem, _Solved,
                                                     bracket_all, first_look_ahead)
from optimus_calc.record import record



@record
class Requirement:
    param: Param
    entry: str
    current: float
    required: float | None      # None: no value of this parameter alone meets the goal
    status: str                 # met (required <= current), short, never, any
    method: str
    binding: str = ""
    equation: str = ""

    @property
    def ratio(self) -> float | None:
        if self.required is None or self.current <= 0:
            return None
        return self.required / self.current


@record
class DeviceResult:
    case: Case
    goal: Goal
    state: State
    reference_s: float | None
    requirements: list[Requirement]
    not_entering: list[Param] = field(default_factory=list)

    @property
    def goal_met(self) -> bool:
        return met(self.goal, self.state, self.reference_s)

    @property
    def margin(self) -> float:
        """Hide: window minus the card's step and transfers (a host strategy: minus its exposed
        time), s; fit: capacity minus state,
        bytes; match: reference minus step, s (negative: short by that much)."""
        st, goal = self.state, self.goal
        match goal:
            case Goal.HIDE:
                return st.hide_margin_s
            case Goal.FIT:
                return st.offload_capacity_per_device - st.offload_bytes_per_device
            case Goal.MATCH:
                assert self.reference_s is not None
                return self.reference_s - st.step_time_s
            case _:
                assert_never(goal)

    def _pool(self, own: bool) -> list[Requirement]:
        return [r for r in self.requirements if not own or r.param.role != "layout"]

    def cheapest(self, own: bool = False) -> Requirement | None:
        """For a goal not met: the parameter that needs the smallest factor (``own``: of the
        device's hardware, not the cards per node)."""
        short = [r for r in self._pool(own) if r.status == "short"]
        return min(short, key=lambda r: r.ratio or math.inf) if short else None

    def tightest(self, own: bool = False) -> Requirement | None:
        """For a goal met: the parameter that can fall the least before it is not."""
        ok = [r for r in self._pool(own) if r.status == "met" and r.ratio is not None]
        return max(ok, key=lambda r: r.ratio or 0.0) if ok else None



def _check_values(p: Param, solved: _Solved, low: float, cap: float) -> list[float]:
    """The values at which :func:`_checked` asks the evaluator about a closed-form answer."""
    if solved.status == "never":
        return [cap]
    if solved.status == "any":
        return [low]
    v = solved.value
    assert v is not None
    return ([v] + [v - 1] * (v - 1 >= low)) if p.integer else [v * (1 + 1e-7), v * (1 - 1e-6)]


def _checked(prob: _Problem, p: Param, solved: _Solved, low: float, cap: float) -> bool:
    """Does the evaluator agree with a closed-form answer on both sides of it?"""
    if solved.status == "never":
        return not prob.ok(p, cap)
    if solved.status == "any":
        return prob.ok(p, low)
    v = solved.value
    assert v is not None
    prob.prefetch(p, _check_values(p, solved, low, cap))
    if p.integer:
        return prob.ok(p, v) and (v - 1 < low or not prob.ok(p, v - 1))
    return prob.ok(p, v * (1 + 1e-7)) and not prob.ok(p, v * (1 - 1e-6))


def _figures_text(prob: _Problem, st: State) -> str:
    """The goal's figures of one evaluation, in the strategy's own terms."""
    off = prob.case.layout.offload
    if prob.goal is Goal.FIT:
        return f"{st.excess_bytes / GB:.3g} GB still exceeds the device"
    if prob.goal is Goal.MATCH:
        return f"the step is still {st.step_time_s - prob.reference_s:.3g} s longer"
    if off is Offload.SMARTNIC:
        return (f"card pipeline {st.pipeline_s:.3g} s (update {st.optimizer_s:.3g} s, "
                f"{st.link_stages_text}) > window {st.window_s:.3g} s")
    return f"{st.optimizer_exposed_s:.3g} s of the step exposed"


def _never_binding(prob: _Problem, p: Param, cap: float, params: list[Param],
                   head: str = "", lift: bool = True) -> str:
    """What keeps the goal out of reach when ``p`` alone cannot reach it: ``head`` (what the
    closed form found binds) or the figures at the largest value searched, then the other
    parameters that, raised to their bounds with it, would meet the goal."""
    case, st = prob.case, prob.state(p, cap)
    if prob.goal is Goal.MATCH and prob.reference_s is not None and \
            st.base_step_s > prob.reference_s:
        return (f"the step without any optimizer time ({st.base_step_s:.4g} s) is already "
                f"longer than the reference ({prob.reference_s:.4g} s)")
    if not head:
        top = p.upper_bound(case.hw)
        head = (f"at {cap:.4g} {p.unit} ({'catalog bound' if top == cap else 'search limit'}): "
                + _figures_text(prob, st))
        if (prob.goal is Goal.HIDE and case.layout.offload is Offload.SMARTNIC
                and st.update_budget_s() <= 0):
            head += (f"; the link stages ({st.link_stages_text}) alone fill the "
                     f"{st.window_s:.3g} s window")
    if not lift:
        return head
    lifted = []
    pairs = _lift_pairs(prob, p, params)
    prob.prefetch(p, [cap], pairs)
    for pair in pairs:
        if met(prob.goal, prob.state(p, cap, pair), prob.reference_s):
            lifted.append(pair[0][0].name)
    if lifted:
        return f"{head}; raising {' or '.join(lifted)} too would meet it"
    return f"{head}; no other single parameter raised with it would"


def _lift_pairs(prob: _Problem, p: Param, params: list[Param]) -> list[tuple]:
    """Each other parameter at its bound: what :func:`_never_binding` raises with ``p``."""
    case = prob.case
    return [((q, _bounds(q, case, q.get(case.hw, case.layout))[1]),)
            for q in params if q.key != p.key]


def _closed_forms(prob: _Problem, params: list[Param], opt: OptimizerInputs | None) -> dict:
    """Each parameter's closed form (or None), with the evaluator's checks of every one of
    them asked in one call, and with them the first look-ahead of the search each parameter
    without a closed form starts (:func:`_answers`), which depends on no answer."""
    case, out, asks = prob.case, {}, []
    for p in params:
        cur = p.get(case.hw, case.layout)
        low, cap = _bounds(p, case, cur)
        out[p.key] = solved = _symbolic(prob, p, cur, cap, opt)
        if solved is not None:
            asks += [(p, v) for v in _check_values(p, solved, low, cap)]
        else:
            asks += [(p, v) for v in first_look_ahead(cur, low, cap, p.integer)]
    prob.prefetch_each(asks)
    return out


def _answers(prob: _Problem, params: list[Param], closed: dict) -> dict[str, _Solved]:
    """Each parameter's answer: its closed form where the evaluator confirms it (on both sides,
    :func:`_checked`), else its bracketing search. The searches advance together, one call of
    the evaluator per round for all of them (:func:`bracket_all`; each answer is its search's
    own)."""
    out: dict[str, _Solved] = {}
    todo = []  # (parameter, current value, low, cap, whether a closed form disagreed)
    for p in params:
        cur = p.get(prob.case.hw, prob.case.layout)
        low, cap = _bounds(p, prob.case, cur)
        solved = closed.get(p.key)
        if solved is not None and _checked(prob, p, solved, low, cap):
            out[p.key] = solved
        else:
            todo.append((p, cur, low, cap, solved is not None))
    found = bracket_all(
        [(lambda v, p=p: prob.ok(p, v), cur, low, cap, p.integer)
         for p, cur, low, cap, _ in todo],
        lambda wants: prob.prefetch_each([(todo[i][0], v) for i, vs in wants for v in vs]))
    for (p, *_, disagreed), (status, value) in zip(todo, found):
        method = ("exact search over integers (doubling, then bisection)" if p.integer
                  else f"bracketing search over the evaluator (doubling, then bisection to "
                       f"{REL_TOL:g})")
        if disagreed:
            method += " (the closed form disagreed with the evaluator)"
        out[p.key] = _Solved(value, status, method)
    return {p.key: out[p.key] for p in params}


def solve_param(prob: _Problem, p: Param, params: list[Param], solved: _Solved,
                lift: bool = True) -> Requirement:
    """``p``'s requirement from its answer (:func:`_answers`): what binds where it is met, or
    what keeps it from being met."""
    case = prob.case
    cur = p.get(case.hw, case.layout)
    low, cap = _bounds(p, case, cur)
    entry = p.entry_name(case.hw)
    if solved.status == "never":
        if solved.method in (FLOOR_ZERO_OFFLOAD, FLOOR_SUPEROFFLOAD):
            binding = solved.binding  # nothing lifts an exposure floor
        else:
            binding = _never_binding(prob, p, cap, params, solved.binding, lift)
        return Requirement(p, entry, cur, None, "never", solved.method, binding,
                           solved.equation)
    if solved.status == "any":
        return Requirement(p, entry, cur, None, "any", solved.method,
                           f"met at any value down to {low:.3g} {p.unit}", solved.equation)
    v = solved.value
    assert v is not None
    status = "met" if v <= cur else "short"
    return Requirement(p, entry, cur, v, status, solved.method, _at_solution(prob, p, v),
                       solved.equation)


def _at(p: Param, v: float) -> float:
    """Where :func:`_at_solution` reads the figures: just above a continuous answer."""
    return v * (1 + 1e-7) if not p.integer else v


def _at_solution(prob: _Problem, p: Param, v: float) -> str:
    """What the parameter balances against at the required value."""
    st = prob.state(p, _at(p, v))
    if prob.goal is Goal.HIDE:
        return (f"card pipeline {st.pipeline_s:.3g} s (update {st.optimizer_s:.3g} s) "
                f"<= window {st.window_s:.3g} s")
    if prob.goal is Goal.FIT:
        return (f"{st.offload_bytes_per_device / GB:.4g} GB of state per device <= "
                f"{st.offload_capacity_per_device / GB:.4g} GB")
    return f"step {st.step_time_s:.4g} s <= reference {prob.reference_s:.4g} s"


def _enter_values(prob: _Problem, p: Param) -> tuple[float, float, float]:
    """The current value of ``p`` and a thousandfold either way (integers stay >= 1)."""
    cur = p.get(prob.case.hw, prob.case.layout)
    return (cur, max(1.0, cur / 1000), cur * 1000) if p.integer else (cur, cur / 1000,
                                                                        cur * 1000)


def enters(prob: _Problem, p: Param) -> bool:
    """Do the goal's figures move when ``p`` changes a thousandfold either way?"""
    cur, *tries = _enter_values(prob, p)
    prob.prefetch(p, [cur, *tries])
    base = prob.figures(p, cur)
    for v in tries:
        if v == cur:
            continue
        if any(not math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15)
               for a, b in zip(prob.figures(p, v), base)):
            return True
    return False


def solve_device(case: Case, goal: Goal, reference_s: float | None = None,
                 lift: bool = True) -> DeviceResult:
    """Every parameter of the offload device of ``case`` (its layout's --offload target).
    ``lift``: for a parameter that can never meet the goal alone, also try every other
    parameter raised to its bound with it and name those that would (one evaluation per pair;
    the catalog-wide view leaves it out)."""
    if goal is Goal.MATCH and reference_s is None:
        raise ValueError("goal match needs a reference step time")
    prob = _Problem(case, goal, reference_s)
    params = device_params(case.hw, case.layout.offload)
    prob.prefetch_each([(p, v) for p in params for v in _enter_values(prob, p)])
    st = prob.base_state(params)
    opt = optimizer_inputs(case, st)
    live = [p for p in params if enters(prob, p)]
    closed = _closed_forms(prob, live, opt)
    answers = _answers(prob, live, closed)
    prob.prefetch_each([(p, _at(p, a.value)) for p in live for a in (answers[p.key],)
                        if a.status == "value" and a.value is not None])
    if lift:  # every "never" parameter raised with each other one, in one evaluation
        prob.prefetch_many([(p, _bounds(p, case, p.get(case.hw, case.layout))[1], pair)
                            for p in live if answers[p.key].status == "never"
                            and answers[p.key].method not in (FLOOR_ZERO_OFFLOAD,
                                                              FLOOR_SUPEROFFLOAD)
                            for pair in _lift_pairs(prob, p, live)])
    reqs = [solve_param(prob, p, live, answers[p.key], lift) for p in live]
    return DeviceResult(case, goal, st, reference_s, reqs,
                        [p for p in params if p not in live])

