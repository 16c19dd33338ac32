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
solved with sympy (:mod:`optimus_calc.evaluate.breakeven_sym`): a SmartNIC's bandwidths, cores,
clock and fabric through compute.optimizer_step_time inside offload.exposed_optimusnic (the
card's step plus its transfers against the last micro-batch's backward and the next forward),
its capacity through memory.spill_bytes. The host strategies run DeepSpeed's step phase by phase
(evaluate/offload_step.py): under ``hide`` their exposure has a floor no hardware value removes
(ZeRO-Offload/Infinity expose the whole step, offload.exposed_zero_offload; SuperOffload at
least its last gradient bucket, offload.exposed_superoffload), so every parameter is "never"
with that floor named; their ``fit`` and ``match`` goals, and every other parameter (links,
two-tier FPGA memory, host RAM, sockets, cards), are found by a monotone bracketing search over
the one evaluator (:func:`optimus_calc.evaluate.engine.evaluate`) on hardware with that field
changed. Every answer, closed form or floor, is checked against the evaluator (on both sides of
a value, at the search bound for "never"); a closed form the evaluator does not confirm is
replaced by the search.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, assert_never

from optimus_calc.equations import compiled as eq
from optimus_calc.evaluate.breakeven_case import (Case, Goal, Reference, Sensitivity, State,
                                                  best_without_offload, catalog_devices,
                                                  device_case, measure, met, offload_for,
                                                  reference_of, sensitivity, shortfall)
from optimus_calc.evaluate.hw_params import Param
from optimus_calc.evaluate.strategies import device_params
from optimus_calc.evaluate.optimizer import Impl, bytes_per_param, device_from, device_time
from optimus_calc.evaluate.optimizer import flops_per_param
from optimus_calc.specs.training import Offload
from optimus_calc.units import GB

REL_TOL = 1e-6      # bracketing stops when the bracket is this narrow (relative)
SPAN = 1e6          # search up to this multiple of the current value (or the catalog's bound)

__all__ = ["Case", "Goal", "Reference", "Sensitivity", "State", "best_without_offload",
           "catalog_devices", "device_case", "measure", "met", "offload_for", "reference_of",
           "sensitivity", "shortfall", "Requirement", "DeviceResult", "solve_device", "bracket",
           "REL_TOL", "SPAN"]


@dataclass(frozen=True)
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


@dataclass(frozen=True)
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


# ---- the card's step as the engine composes it ------------------------------------------------

@dataclass(frozen=True)
class OptimizerInputs:
    """The values compute.optimizer_step_time and offload.exposed_optimusnic receive for the
    binding stage of a SmartNIC layout, rebuilt from the catalog entry, checked against the
    evaluator."""

    values: dict          # sympy symbol -> number (breakeven_sym)
    per_core: bool
    clock_flops: float    # FP32 FLOPs per cycle per core (F_core = clock x this)
    two_tier: bool        # an FPGA card reading part of its state from the slow tier


def optimizer_inputs(case: Case, st: State) -> OptimizerInputs | None:
    """The card's roofline inputs for a SmartNIC layout, or None when the layout is not one or
    the engine's figures cannot be reproduced (then only the search is used).

    Only OptimusNIC's step is compute.optimizer_step_time; the host strategies (ZeRO-Offload,
    ZeRO-Infinity, SuperOffload) run DeepSpeed's step phase by phase
    (evaluate/offload_step.py offload_step_phases), which `breakeven` searches over."""
    from optimus_calc.evaluate import breakeven_sym as S

    hw, lay, tr, asm = case.hw, case.layout, case.training, case.asm
    if lay.offload is not Offload.SMARTNIC or hw.smartnic is None:
        return None
    gpn = hw.gpus_per_node
    shard = st.params_stage / (lay.dp if int(lay.zero) >= 1 else 1)
    phi = flops_per_param(tr.optimizer)
    p_n = shard * gpn / (lay.smartnics_per_node or gpn)
    dev = device_from(hw.smartnic, 1, asm)
    beta = bytes_per_param(tr.optimizer, Impl.FUSED, tr.gradient_bytes)
    two_tier = bool(dev.slow_tier_Bps and dev.capacity_bytes
                    and p_n * tr.optimizer_bytes > dev.capacity_bytes)
    t_opt, bw = device_time(dev, p_n, beta, phi, tr.optimizer_bytes)
    if not math.isclose(float(t_opt), st.optimizer_s, rel_tol=1e-9, abs_tol=1e-15):
        return None
    # a two-tier card reads at the tiers' mixed bandwidth: B_mem is that, for the other limits
    mem_Bps = float(bw) / dev.mem_eff if two_tier else dev.mem_Bps
    exposed = float(eq.offload__exposed_optimusnic(T_s=st.optimizer_s + st.offload_transfer_s,
                                                   W_o=st.window_s))
    if not math.isclose(exposed, st.optimizer_exposed_s, rel_tol=1e-9, abs_tol=1e-12):
        return None
    values = {S.Pn: p_n, S.bpp: beta, S.fpp: phi, S.eta_m: dev.mem_eff, S.BW: mem_Bps,
              S.nthr: float(dev.cores if dev.per_core else 1), S.B_core: dev.core_Bps,
              S.F_core: dev.core_flops, S.F_dev: dev.device_flops,
              S.T_x: st.offload_transfer_s, S.W_o: st.window_s}
    return OptimizerInputs(values, dev.per_core, float(hw.smartnic.fp32_flops_per_cycle or 0),
                           two_tier)


def superoffload_floor(case: Case, st: State) -> tuple[float, float, float, float]:
    """(T_s, Z_b, P_r, tail): SuperOffload's CPU step of one rank, its last bucket and partition
    (offload.exposed_superoffload >= T_s min(1, Z_b / P_r)) and the share kept on the GPU."""
    hw, lay, tr, asm = case.hw, case.layout, case.training, case.asm
    shard = st.params_stage / (lay.dp if int(lay.zero) >= 1 else 1)
    f_k = lay.superchip_gpu_fraction
    tail, _ = device_time(device_from(hw.gpu, 1, asm), shard * f_k,
                          bytes_per_param(tr.optimizer, Impl.FUSED, tr.gradient_bytes),
                          flops_per_param(tr.optimizer), tr.optimizer_bytes)
    return (st.optimizer_s - float(tail), asm.zero_bucket_params, max(shard * (1 - f_k), 1.0),
            float(tail))


# ---- solving ---------------------------------------------------------------------------------

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
        return (st.optimizer_s, st.offload_transfer_s, st.optimizer_exposed_s, st.step_time_s)


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


CLOSED_FORM = ("closed form (sympy.solve on compute.optimizer_step_time inside "
               "offload.exposed_optimusnic)")
FLOOR_ZERO_OFFLOAD = ("exposure floor (offload.exposed_zero_offload = T_s > 0 at any value), "
                      "confirmed by the evaluator at the bound")
FLOOR_SUPEROFFLOAD = ("exposure floor (offload.exposed_superoffload >= T_s min(1, Z_b / P_r) "
                      "> 0 at any value), confirmed by the evaluator at the bound")


def _symbolic(prob: _Problem, p: Param, cur: float, cap: float,
              opt: OptimizerInputs | None) -> _Solved | None:
    """Solve with sympy where the goal is a registry expression the parameter enters once (a
    SmartNIC's roofline inside OptimusNIC's exposure, its capacity inside the spill), or state
    the exposure floor no value can remove (ZeRO-Offload/Infinity and SuperOffload under hide)."""
    from optimus_calc.evaluate import breakeven_sym as S

    case, goal, st = prob.case, prob.goal, prob.state()
    off = case.layout.offload
    if goal is Goal.HIDE and off in (Offload.CPU, Offload.NVME):
        return _Solved(None, "never", FLOOR_ZERO_OFFLOAD, "offload.exposed_zero_offload = T_s",
                       _zero_offload_binding(st))
    if goal is Goal.HIDE and off is Offload.SUPERCHIP:
        return _Solved(None, "never", FLOOR_SUPEROFFLOAD,
                       "offload.exposed_superoffload = Max(T_s - W_b, T_s Min(1, Z_b / P_r))",
                       _superoffload_binding(case, st))
    target = 0.0
    if goal is Goal.MATCH:
        assert prob.reference_s is not None
        target = prob.reference_s - st.base_step_s
        if target < 0:
            return None  # the rest of the step binds: the search says so
    if p.roofline and goal in (Goal.HIDE, Goal.MATCH) and opt is not None:
        if opt.two_tier and p.roofline == "B_mem":
            return None  # the two tiers' mixed bandwidth is not compute.optimizer_step_time's
        values = opt.values
        if p.roofline == "joint":
            sym, scale = None, 1.0
            expr = S.exposed_goal_joint(opt.per_core)
            values = {**values, S.A_cur: cur}
        else:
            scale = {"B_mem": GB, "B_core": GB, "n_t": 1.0, "F_core": 1e9 * opt.clock_flops,
                     "F_dev": 1e12}[p.roofline]
            sym = S.ROOFLINE_SYMBOLS[p.roofline]
            expr = S.exposed_goal(opt.per_core, sym, scale)
        inv = S.invert(expr, values, target, cap, integer=p.integer,
                       floor_x=1.0 if p.integer else cur / SPAN)
        if inv.value is None:
            return _Solved(None, "never", CLOSED_FORM, inv.formula,
                           _roofline_binding(opt, sym, scale, cap, st, target))
        return _Solved(inv.value, "any" if inv.any_value else "value", CLOSED_FORM, inv.formula)
    if p.role == "smartnic" and p.field in ("memory_GB", "expansion_memory_GB"):
        sn = case.hw.smartnic
        other = sn.expansion_memory_GB if p.field == "memory_GB" else sn.memory_GB
        values = {S.B_dev: st.offload_bytes_per_device}
        if goal is Goal.FIT:
            inv = S.invert(S.spill_fit_goal(GB, other * GB), values, 0.0, cap,
                           floor_x=cur / SPAN)
            method = "closed form (sympy.solve on memory.spill_bytes)"
        elif (opt is not None and off is Offload.SMARTNIC and sn.device_type != "fpga"
              and case.hw.smartnic_host_link is not None):
            link = case.hw.smartnic_host_link
            snl = link.bandwidth_Bps * link.efficiency
            values.update({S.T_opt: st.optimizer_s, S.B_snl: snl, S.W_o: st.window_s,
                           S.T_x0: st.offload_transfer_s - 2 * st.spill_bytes_per_device / snl})
            inv = S.invert(S.spill_hide_goal(), values, target, cap, floor_x=cur / SPAN)
            method = ("closed form (sympy.solve on memory.spill_bytes inside "
                      "offload.exposed_optimusnic)")
        else:
            return None
        if inv.value is None:
            return _Solved(None, "never", method, inv.formula)
        return _Solved(inv.value, "any" if inv.any_value else "value", method, inv.formula)
    return None


def _zero_offload_binding(st: State) -> str:
    return (f"ZeRO-Offload/Infinity run the whole step ({st.optimizer_s:.3g} s, transfers "
            "included) after the backward: nothing overlaps it (window 0 s), so it is exposed "
            "at any value")


def _superoffload_binding(case: Case, st: State) -> str:
    t_s, z_b, p_r, tail = superoffload_floor(case, st)
    text = (f"SuperOffload updates the last gradient bucket after the backward: at least "
            f"T_s x min(1, Z_b / P_r) = {t_s:.3g} s x min(1, {z_b:.3g} / {p_r:.3g}) = "
            f"{t_s * min(1.0, z_b / p_r):.3g} s stays exposed now, and some at any value "
            "(offload.exposed_superoffload; Z_b is zero_bucket_params)")
    if tail > 0:
        text += ("; the optimizer share kept on the GPU (--gpu-fraction, "
                 f"{tail:.3g} s) is never hidden either")
    return text


def _roofline_binding(opt: OptimizerInputs, sym, scale: float, cap: float, st: State,
                      target: float) -> str:
    """What keeps a SmartNIC's roofline parameter from meeting the goal: the limits of
    compute.optimizer_step_time left when ``sym`` no longer binds, and the transfers when they
    alone fill the window ("" when neither: the caller says what binds)."""
    from optimus_calc.evaluate import breakeven_sym as S

    budget = st.window_s - st.offload_transfer_s + target
    parts: list[str] = []
    if sym is not None:
        roof = S.optimizer_roofline(opt.per_core).subs(sym, scale * S.X)
        values = {k: v for k, v in opt.values.items() if k is not sym}
        floor = S.value_at(roof, values, cap)
        names: list[str] = []
        limits = dict(S.LIMIT_NAMES)
        if opt.two_tier:
            limits[S.BW] = "memory_bandwidth_GBps and expansion_bandwidth_GBps (mixed tiers)"
        for piece in S.binding_pieces(roof, values, cap):
            for s in sorted(piece.free_symbols, key=lambda s: s.name):
                if s in limits and limits[s] not in names:
                    names.append(limits[s])
        if names and floor > max(budget, 0.0):
            verb = "hold" if len(names) > 1 or " and " in names[0] else "holds"
            text = f"{' x '.join(names)} {verb} the card's step at {floor:.3g} s"
            if budget > 0:
                text += f" > the {budget:.3g} s {_budget_text(st, target)}"
            parts.append(text)
    if budget <= 0:
        what = "window" if target == 0 else "window and the reference's slack"
        parts.append(f"the transfers ({st.offload_transfer_s:.3g} s) alone already fill the "
                     f"{st.window_s:.3g} s {what}")
    return "; ".join(parts)


def _budget_text(st: State, target: float) -> str:
    text = (f"the {st.window_s:.3g} s window leaves after {st.offload_transfer_s:.3g} s of "
            "transfers")
    if target:
        text += f" and {target:.3g} s of slack to the reference"
    return text


def _checked(prob: _Problem, p: Param, solved: _Solved, low: float, cap: float) -> bool:
    """Does the evaluator agree with a closed-form answer on both sides of it?"""
    if solved.status == "never":
        return not prob.ok(p, cap)
    if solved.status == "any":
        return prob.ok(p, low)
    v = solved.value
    assert v is not None
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
        return (f"card step {st.optimizer_s:.3g} s + transfers {st.offload_transfer_s:.3g} s "
                f"> window {st.window_s:.3g} s")
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
                and st.offload_transfer_s >= st.window_s):
            head += (f"; the transfers ({st.offload_transfer_s:.3g} s) alone fill the "
                     f"{st.window_s:.3g} s window")
    if not lift:
        return head
    lifted = []
    for q in params:
        if q.key == p.key:
            continue
        _, q_cap = _bounds(q, case, q.get(case.hw, case.layout))
        if met(prob.goal, prob.state(p, cap, ((q, q_cap),)), prob.reference_s):
            lifted.append(q.name)
    if lifted:
        return f"{head}; raising {' or '.join(lifted)} too would meet it"
    return f"{head}; no other single parameter raised with it would"


def solve_param(prob: _Problem, p: Param, params: list[Param],
                opt: OptimizerInputs | None, lift: bool = True) -> Requirement:
    case = prob.case
    cur = p.get(case.hw, case.layout)
    low, cap = _bounds(p, case, cur)
    entry = p.entry_name(case.hw)
    solved = _symbolic(prob, p, cur, cap, opt)
    note = ""
    if solved is not None and not _checked(prob, p, solved, low, cap):
        solved, note = None, " (the closed form disagreed with the evaluator)"
    if solved is None:
        status, value = bracket(lambda v: prob.ok(p, v), cur, low, cap, p.integer)
        method = ("exact search over integers (doubling, then bisection)" if p.integer
                  else f"bracketing search over the evaluator (doubling, then bisection to "
                       f"{REL_TOL:g})") + note
        solved = _Solved(value, status, method)
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


def _at_solution(prob: _Problem, p: Param, v: float) -> str:
    """What the parameter balances against at the required value."""
    st = prob.state(p, v * (1 + 1e-7) if not p.integer else v)
    if prob.goal is Goal.HIDE:
        return (f"card step {st.optimizer_s:.3g} s + transfers {st.offload_transfer_s:.3g} s "
                f"<= window {st.window_s:.3g} s")
    if prob.goal is Goal.FIT:
        return (f"{st.offload_bytes_per_device / GB:.4g} GB of state per device <= "
                f"{st.offload_capacity_per_device / GB:.4g} GB")
    return f"step {st.step_time_s:.4g} s <= reference {prob.reference_s:.4g} s"


def enters(prob: _Problem, p: Param) -> bool:
    """Do the goal's figures move when ``p`` changes a thousandfold either way?"""
    case = prob.case
    cur = p.get(case.hw, case.layout)
    base = prob.figures(p, cur)
    for v in ((max(1.0, cur / 1000), cur * 1000) if p.integer else (cur / 1000, cur * 1000)):
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
    st = prob.state()
    params = device_params(case.hw, case.layout.offload)
    opt = optimizer_inputs(case, st)
    live = [p for p in params if enters(prob, p)]
    reqs = [solve_param(prob, p, live, opt, lift) for p in live]
    return DeviceResult(case, goal, st, reference_s, reqs,
                        [p for p in params if p not in live])
