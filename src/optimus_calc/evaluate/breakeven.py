"""Break-even: what an offload device must have for offloading the optimizer to pay off.

For one layout and one offload device, each hardware parameter in turn (everything else held
fixed) is given the smallest value that meets a goal:

- ``hide``: the optimizer step and its transfers are hidden in the step (the evaluator's
  ``optimizer_exposed_s`` of the stage that binds the step is 0);
- ``fit``: the optimizer shard fits on the device (no spill to host memory, or, for a CPU,
  within host RAM);
- ``match``: the offloaded layout's step time is no longer than a reference's (the best layout
  that keeps the optimizer on the GPU, or one the caller names).

Where the goal is a registry expression that the parameter enters through one place (the
optimizer device's bandwidths, cores and clocks in compute.optimizer_step_time inside
compute.exposed_time; the card's capacity in memory.spill_bytes) it is solved with sympy
(:mod:`optimus_calc.evaluate.breakeven_sym`); everything else, and any closed form the evaluator
does not confirm, is found by a monotone bracketing search over the one evaluator
(:func:`optimus_calc.evaluate.engine.evaluate`) on hardware with that field changed. Every
answer is checked against the evaluator on both sides of the value.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable

import numpy as np

from optimus_calc.equations import compiled as eq
from optimus_calc.evaluate.batch import Batch
from optimus_calc.evaluate.context import Hardware
from optimus_calc.evaluate.engine import StageTable, evaluate, stage_table
from optimus_calc.evaluate.hw_params import Param, device_params
from optimus_calc.evaluate.optimizer import Impl, bytes_per_param, device_from, device_time
from optimus_calc.evaluate.optimizer import flops_per_param
from optimus_calc.specs.model import Model
from optimus_calc.specs.training import Assumptions, Layout, Offload, Training
from optimus_calc.units import GB


class Goal(str, Enum):
    HIDE = "hide"
    FIT = "fit"
    MATCH = "match"

    @property
    def text(self) -> str:
        return _GOAL_TEXT[self]


_GOAL_TEXT = {
    Goal.HIDE: "hide the optimizer step and its transfers in the step",
    Goal.FIT: "hold the optimizer shard without spilling",
    Goal.MATCH: "match the reference step time",
}

REL_TOL = 1e-6      # bracketing stops when the bracket is this narrow (relative)
SPAN = 1e6          # search up to this multiple of the current value (or the catalog's bound)


@dataclass(frozen=True)
class Case:
    """One layout on one hardware configuration."""

    model: Model
    hw: Hardware
    layout: Layout
    training: Training
    asm: Assumptions
    stages: StageTable

    @classmethod
    def of(cls, model: Model, hw: Hardware, layout: Layout, tr: Training,
           asm: Assumptions) -> "Case":
        return cls(model, hw, layout, tr, asm, stage_table(model, [layout.pp], False))

    def with_param(self, p: Param, value: float) -> "Case":
        hw, lay = p.apply(self.hw, self.layout, value)
        return dataclasses.replace(self, hw=hw, layout=lay)


@dataclass(frozen=True)
class State:
    """The evaluator's figures of a batch of one, at the stage that binds the step."""

    step_time_s: float
    optimizer_s: float
    optimizer_exposed_s: float
    offload_transfer_s: float
    forward_s: float
    backward_s: float
    params_stage: float
    offload_bytes_per_device: float
    offload_capacity_per_device: float
    spill_bytes_per_device: float
    gpu_bytes: float
    gpu_capacity_bytes: float
    reasons: int
    offload: Offload

    @property
    def window_s(self) -> float:
        """What the offloaded step overlaps with (compute.exposed_time's W in the engine):
        OptimusNIC the backward and the next forward, SuperOffload the backward,
        ZeRO-Offload/Infinity nothing."""
        if self.offload is Offload.SMARTNIC:
            return self.forward_s + self.backward_s
        if self.offload is Offload.SUPERCHIP:
            return self.backward_s
        return 0.0

    @property
    def excess_bytes(self) -> float:
        """State beyond the device's capacity (a SmartNIC's spill, a CPU's host-RAM excess)."""
        return max(0.0, self.offload_bytes_per_device - self.offload_capacity_per_device)

    @property
    def base_step_s(self) -> float:
        """The step without its exposed optimizer time."""
        return self.step_time_s - self.optimizer_exposed_s


def measure(case: Case) -> State:
    """Evaluate ``case`` with the one evaluator."""
    tr = case.training
    ev = evaluate(Batch.of(case.layout, tr), case.model, case.hw, tr, case.asm,
                  stages=case.stages)
    one = lambda x: float(np.asarray(x).reshape(-1)[0])  # noqa: E731
    k = int(np.asarray(ev.worst_time).reshape(-1)[0])
    params = np.asarray(ev.params_stage, dtype=np.float64).reshape(-1)
    return State(
        step_time_s=one(ev.step_time_s), optimizer_s=one(ev.term("optimizer_s")),
        optimizer_exposed_s=one(ev.term("optimizer_exposed_s")),
        offload_transfer_s=one(ev.term("offload_transfer_s")),
        forward_s=one(ev.term("forward_s")), backward_s=one(ev.term("backward_s")),
        params_stage=float(params[k if params.size > 1 else 0]),
        offload_bytes_per_device=one(ev.offload_bytes_per_device),
        offload_capacity_per_device=one(ev.offload_capacity_per_device),
        spill_bytes_per_device=one(ev.spill_bytes_per_device),
        gpu_bytes=one(ev.gpu_bytes), gpu_capacity_bytes=float(ev.capacity_bytes),
        reasons=int(one(ev.reasons)), offload=case.layout.offload)


def shortfall(goal: Goal, st: State, reference_s: float | None) -> float:
    """How far the goal is from met (<= 0: met): seconds exposed, bytes over, seconds slower."""
    if goal is Goal.HIDE:
        return st.optimizer_exposed_s
    if goal is Goal.FIT:
        return st.excess_bytes
    if goal is Goal.MATCH:
        assert reference_s is not None
        return st.step_time_s - reference_s * (1 + 1e-12)
    raise AssertionError(goal)  # pragma: no cover - exhaustive


def met(goal: Goal, st: State, reference_s: float | None) -> bool:
    return shortfall(goal, st, reference_s) <= 0.0


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


@dataclass
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
        """Hide: window minus optimizer step and transfers, s; fit: capacity minus state,
        bytes; match: reference minus step, s (negative: short by that much)."""
        st = self.state
        if self.goal is Goal.HIDE:
            return st.window_s - st.optimizer_s - st.offload_transfer_s
        if self.goal is Goal.FIT:
            return st.offload_capacity_per_device - st.offload_bytes_per_device
        assert self.reference_s is not None
        return self.reference_s - st.step_time_s

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


# ---- the optimizer step as the engine composes it ---------------------------------------------

@dataclass(frozen=True)
class OptimizerInputs:
    """The values compute.optimizer_step_time and compute.exposed_time receive for the binding
    stage, rebuilt from the catalog entries, checked against the evaluator by the caller."""

    values: dict          # sympy symbol -> number (breakeven_sym)
    per_core: bool
    sockets: float        # the roofline's B_mem and n_t are per device: socket count x field
    clock_flops: float    # FP32 FLOPs per cycle per core (F_core = clock x this)
    two_tier: bool        # an FPGA card reading part of its state from the slow tier
    tail_s: float         # optimizer time left on the GPU (SuperOffload)


def optimizer_inputs(case: Case, st: State) -> OptimizerInputs | None:
    """The optimizer roofline's inputs for the device the layout offloads to, or None when the
    engine's figures cannot be reproduced (then only the search is used)."""
    from optimus_calc.evaluate import breakeven_sym as S

    hw, lay, tr, asm = case.hw, case.layout, case.training, case.asm
    gpn = hw.gpus_per_node
    shard = st.params_stage / (lay.dp if int(lay.zero) >= 1 else 1)
    phi = flops_per_param(tr.optimizer)
    tail = 0.0
    off = lay.offload
    if off is Offload.SMARTNIC and hw.smartnic is not None:
        k = lay.smartnics_per_node or gpn
        dev, sockets, p_n = device_from(hw.smartnic, 1, asm), 1.0, shard * gpn / k
        beta = bytes_per_param(tr.optimizer, Impl.FUSED, tr.gradient_bytes)
        fpc = float(hw.smartnic.fp32_flops_per_cycle)
    elif off in (Offload.CPU, Offload.NVME):
        sockets = float(hw.node.cpus)
        dev, p_n = device_from(hw.cpu, hw.node.cpus, asm), shard * gpn
        beta = bytes_per_param(tr.optimizer, Impl.FUSED, asm.host_grad_bytes)
        fpc = float(hw.cpu.fp32_flops_per_cycle)
    elif off is Offload.SUPERCHIP:
        f_k = lay.superchip_gpu_fraction
        dev, sockets = device_from(hw.cpu, 1, asm), 1.0
        p_n = shard * (1 - f_k) * gpn / hw.node.cpus
        beta = bytes_per_param(tr.optimizer, Impl.FUSED, asm.host_grad_bytes)
        fpc = float(hw.cpu.fp32_flops_per_cycle)
        t, _ = device_time(device_from(hw.gpu, 1, asm), shard * f_k,
                           bytes_per_param(tr.optimizer, Impl.FUSED, tr.gradient_bytes), phi,
                           tr.optimizer_bytes)
        tail = float(t)
    else:
        return None
    two_tier = bool(dev.slow_tier_Bps and dev.capacity_bytes
                    and p_n * tr.optimizer_bytes > dev.capacity_bytes)
    t_opt, _ = device_time(dev, p_n, beta, phi, tr.optimizer_bytes)
    t_dev = st.optimizer_s - tail
    if not math.isclose(float(t_opt), t_dev, rel_tol=1e-9, abs_tol=1e-15):
        return None
    exposed = float(eq.compute__exposed_time(T_opt=t_dev, T_x=st.offload_transfer_s,
                                             W=st.window_s)) + tail
    if not math.isclose(exposed, st.optimizer_exposed_s, rel_tol=1e-9, abs_tol=1e-12):
        return None
    values = {S.Pn: p_n, S.bpp: beta, S.fpp: phi, S.eta_m: dev.mem_eff, S.BW: dev.mem_Bps,
              S.nthr: float(dev.cores if dev.per_core else 1), S.B_core: dev.core_Bps,
              S.F_core: dev.core_flops, S.F_dev: dev.device_flops,
              S.T_x: st.offload_transfer_s, S.W_ov: st.window_s, S.T_gpu: tail}
    return OptimizerInputs(values, dev.per_core, sockets, fpc, two_tier, tail)


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
    grows: ("value", v), ("never", None) or ("any", low). Doubling (or halving) from the
    current value brackets it; bisection (geometric, or over integers) narrows it to
    REL_TOL."""
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


def _symbolic(prob: _Problem, p: Param, cur: float, cap: float,
              opt: OptimizerInputs | None) -> _Solved | None:
    """Solve with sympy where the goal is a registry expression the parameter enters once."""
    from optimus_calc.evaluate import breakeven_sym as S

    case, goal, st = prob.case, prob.goal, prob.state()
    off = case.layout.offload
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
            scale = {"B_mem": GB * opt.sockets, "B_core": GB, "n_t": opt.sockets,
                     "F_core": 1e9 * opt.clock_flops, "F_dev": 1e12}[p.roofline]
            sym = S.ROOFLINE_SYMBOLS[p.roofline]
            expr = S.exposed_goal(opt.per_core, sym, scale)
        inv = S.invert(expr, values, target, cap, integer=p.integer,
                       floor_x=1.0 if p.integer else cur / SPAN)
        method = ("closed form (sympy.solve on compute.optimizer_step_time inside "
                  "compute.exposed_time)")
        if inv.value is None:
            binding = ("" if sym is None else
                       _roofline_binding(opt, sym, scale, cap, st, target))
            return _Solved(None, "never", method, inv.formula, binding)
        return _Solved(inv.value, "any" if inv.any_value else "value", method, inv.formula)
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
            values.update({S.T_opt: st.optimizer_s, S.B_snl: snl, S.W_ov: st.window_s,
                           S.T_gpu: 0.0,
                           S.T_x0: st.offload_transfer_s - 2 * st.spill_bytes_per_device / snl})
            inv = S.invert(S.spill_hide_goal(), values, target, cap, floor_x=cur / SPAN)
            method = ("closed form (sympy.solve on memory.spill_bytes inside "
                      "compute.exposed_time)")
        else:
            return None
        if inv.value is None:
            return _Solved(None, "never", method, inv.formula)
        return _Solved(inv.value, "any" if inv.any_value else "value", method, inv.formula)
    return None


def _roofline_binding(opt: OptimizerInputs, sym, scale: float, cap: float, st: State,
                      target: float) -> str:
    """Which limit of compute.optimizer_step_time is left when ``sym`` no longer binds ("" when
    the roofline is not what keeps the goal out of reach)."""
    from optimus_calc.evaluate import breakeven_sym as S

    roof = S.optimizer_roofline(opt.per_core).subs(sym, scale * S.X)
    values = {k: v for k, v in opt.values.items() if k is not sym}
    floor = S.value_at(roof, values, cap)
    names: list[str] = []
    for piece in S.binding_pieces(roof, values, cap):
        for s in sorted(piece.free_symbols, key=lambda s: s.name):
            if s in S.LIMIT_NAMES and S.LIMIT_NAMES[s] not in names:
                names.append(S.LIMIT_NAMES[s])
    budget = st.window_s - st.offload_transfer_s - opt.tail_s + target
    if opt.tail_s > target or floor <= budget or budget <= 0:
        return ""  # not the roofline: the caller says what binds
    verb = "hold" if len(names) > 1 else "holds"
    return (f"{' x '.join(names) or 'the other limits'} {verb} the optimizer step at "
            f"{floor:.3g} s > the {budget:.3g} s the {st.window_s:.3g} s window leaves after "
            f"{st.offload_transfer_s:.3g} s of transfers")


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


def _never_binding(prob: _Problem, p: Param, cap: float, params: list[Param]) -> str:
    """What keeps the goal out of reach when ``p`` alone cannot reach it: the figures at the
    largest value searched, and the other parameters that, raised to their bounds with it,
    would meet the goal."""
    case, st = prob.case, prob.state(p, cap)
    off = case.layout.offload
    if prob.goal is Goal.HIDE and off in (Offload.CPU, Offload.NVME):
        return ("ZeRO-Offload/Infinity run the step after the backward: nothing overlaps it "
                "(window 0 s)")
    if prob.goal is Goal.HIDE and off is Offload.SUPERCHIP and \
            case.layout.superchip_gpu_fraction > 0:
        return "the optimizer share kept on the GPU (--gpu-fraction) is never hidden"
    if prob.goal is Goal.MATCH and prob.reference_s is not None and \
            st.base_step_s > prob.reference_s:
        return (f"the step without any optimizer time ({st.base_step_s:.4g} s) is already "
                f"longer than the reference ({prob.reference_s:.4g} s)")
    if prob.goal is Goal.HIDE and st.offload_transfer_s >= st.window_s:
        return (f"the transfers ({st.offload_transfer_s:.3g} s) alone fill the "
                f"{st.window_s:.3g} s window")
    if prob.goal is Goal.FIT:
        what = f"{st.excess_bytes / GB:.3g} GB still exceeds the device"
    elif prob.goal is Goal.HIDE:
        what = (f"optimizer {st.optimizer_s:.3g} s + transfers {st.offload_transfer_s:.3g} s "
                f"> window {st.window_s:.3g} s")
    else:
        what = f"the step is still {st.step_time_s - prob.reference_s:.3g} s longer"
    lifted = []
    for q in params:
        if q.key == p.key:
            continue
        _, q_cap = _bounds(q, case, q.get(case.hw, case.layout))
        if met(prob.goal, prob.state(p, cap, ((q, q_cap),)), prob.reference_s):
            lifted.append(q.name)
    top = p.upper_bound(case.hw)
    at = f"at {cap:.4g} {p.unit} ({'catalog bound' if top == cap else 'search limit'}): {what}"
    if lifted:
        return f"{at}; raising {' or '.join(lifted)} too would meet it"
    return f"{at}; no other single parameter raised with it would"


def solve_param(prob: _Problem, p: Param, params: list[Param],
                opt: OptimizerInputs | None) -> Requirement:
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
        binding = solved.binding or _never_binding(prob, p, cap, params)
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
        return (f"optimizer {st.optimizer_s:.3g} s + transfers {st.offload_transfer_s:.3g} s "
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


def solve_device(case: Case, goal: Goal, reference_s: float | None = None) -> DeviceResult:
    """Every parameter of the offload device of ``case`` (its layout's --offload target)."""
    if goal is Goal.MATCH and reference_s is None:
        raise ValueError("goal match needs a reference step time")
    prob = _Problem(case, goal, reference_s)
    st = prob.state()
    params = device_params(case.hw, case.layout.offload)
    opt = optimizer_inputs(case, st)
    live = [p for p in params if enters(prob, p)]
    reqs = [solve_param(prob, p, live, opt) for p in live]
    return DeviceResult(case, goal, st, reference_s, reqs,
                        [p for p in params if p not in live])


# ---- sensitivity ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Sensitivity:
    param: Param
    entry: str
    current: float
    step_elasticity: float            # % change of step time for +1% of the parameter
    headroom_elasticity: float | None  # % change of GPU memory headroom (None: unchanged)


def sensitivity(case: Case, params: list[Param], step: float = 0.01) -> list[Sensitivity]:
    """Elasticities by a forward finite difference of +1% through the evaluator (integer
    fields such as cores are relaxed to real numbers for the nudge)."""
    base = measure(case)
    head = base.gpu_capacity_bytes - base.gpu_bytes
    out = []
    for p in params:
        cur = p.get(case.hw, case.layout)
        if cur <= 0:
            continue
        st = measure(case.with_param(p, cur * (1 + step)))
        e_t = (st.step_time_s / base.step_time_s - 1) / step
        h = st.gpu_capacity_bytes - st.gpu_bytes
        e_h = None
        if head > 0 and not math.isclose(h, head, rel_tol=1e-12):
            e_h = (h / head - 1) / step
        out.append(Sensitivity(p, p.entry_name(case.hw), cur, e_t, e_h))
    return out


# ---- devices and references -------------------------------------------------------------------

def offload_for(entry, hw: Hardware, asked: Offload | None = None) -> Offload:
    """The offload target an entry stands for: a SmartNIC card; a CPU as SuperOffload's
    superchip CPU (the node's own, on a superchip node) or as ZeRO-Offload's host."""
    from optimus_calc.errors import InputError
    from optimus_calc.specs.hardware import CPU, SmartNIC

    if isinstance(entry, SmartNIC):
        if asked not in (None, Offload.SMARTNIC):
            raise InputError(f"--offload {asked.value} does not run on {entry.name}, a "
                             f"{entry.device_type}; use --offload smartnic or leave it out")
        return Offload.SMARTNIC
    if isinstance(entry, CPU):
        if asked in (Offload.CPU, Offload.NVME):
            return asked
        superchip = hw.node.superchip and entry.name == hw.node.cpu
        if asked is Offload.SUPERCHIP and not superchip:
            raise InputError(f"--offload superchip needs the CPU of a superchip node; "
                             f"{hw.node.name} with {entry.name} is not one")
        if asked not in (None, Offload.SUPERCHIP):
            raise InputError(f"--offload {asked.value} does not run on the CPU {entry.name}; "
                             "use cpu, nvme or superchip")
        return Offload.SUPERCHIP if superchip else Offload.CPU
    raise InputError(f"{entry.name} is a {entry.kind}; breakeven takes an offload device: a "
                     "SmartNIC, DPU or FPGA card, or a CPU")


def device_case(cat, base: Case, entry, offload: Offload) -> Case:
    """``base`` with its optimizer offloaded to ``entry`` (SmartNICs keep the layout's count
    per node; a CPU replaces the node's host CPU)."""
    from optimus_calc.specs.hardware import CPU, SmartNIC

    hw, lay = base.hw, base.layout
    if isinstance(entry, SmartNIC):
        hw = dataclasses.replace(hw, smartnic=entry, smartnic_implicit=False,
                                 smartnic_host_link=cat.get(entry.host_link, "link"))
        lay = lay.model_copy(update={"offload": Offload.SMARTNIC, "smartnic": entry.name})
    elif isinstance(entry, CPU):
        hw = dataclasses.replace(hw, cpu=entry)
        lay = lay.model_copy(update={"offload": offload, "smartnic": None})
    return dataclasses.replace(base, hw=hw, layout=lay)


def catalog_devices(cat, hw: Hardware) -> list[tuple[object, Offload]]:
    """Every SmartNIC/DPU/FPGA card in the catalog, the node's CPU as a ZeRO-Offload host and,
    on a superchip node, as SuperOffload's CPU."""
    out: list[tuple[object, Offload]] = [(sn, Offload.SMARTNIC) for sn in cat.all("smartnic")]
    out.append((hw.cpu, Offload.CPU))
    if hw.node.superchip:
        out.append((hw.cpu, Offload.SUPERCHIP))
    return out


@dataclass(frozen=True)
class Reference:
    """The step time ``match`` compares with."""

    label: str
    layout: Layout
    training: Training
    step_time_s: float
    fits: bool


def best_without_offload(case: Case) -> Reference | None:
    """The fastest layout that keeps the optimizer on the GPU (the planner over every layout,
    micro-batch, recomputation and ZeRO stage, offload none), or None if none fits."""
    from optimus_calc.search.plan import plan

    res = plan(case.model, case.hw, case.training, case.asm, offloads=[Offload.NONE], top_k=1)
    if res.recommended is None:
        return None
    c = res.recommended
    return Reference("the fastest layout without offload", c.layout, c.training, c.step_s,
                     True)


def reference_of(case: Case, layout: Layout, tr: Training, label: str) -> Reference:
    """A named layout's step time, through the same evaluator."""
    ref = dataclasses.replace(case, layout=layout, training=tr,
                              stages=stage_table(case.model, [layout.pp], False))
    st = measure(ref)
    return Reference(label, layout, tr, st.step_time_s, st.reasons == 0)
