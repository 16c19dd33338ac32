"""Closed forms of `breakeven`: the card's roofline inputs from the evaluator's (the rank's
partition at the binding stage, engine.optimizer_inputs) checked against it, inversion of the OptimusNIC pipeline for one parameter (the sympy
closed forms generated once into compiled_forms.py, evaluated here as numbers: numeric.py), the
exposure floors of the host strategies, and the sentences that say what binds."""

from __future__ import annotations

import math

from optimus_calc.equations.recording import eq

from optimus_calc.analyses.breakeven.case import Case, Goal, State
from optimus_calc.evaluate.engine import optimizer_inputs_of
from optimus_calc.evaluate.hw_params import Param
from optimus_calc.evaluate.optimizer import device_from, device_time
from optimus_calc.evaluate.strategies.superchip import cpu_and_gpu_steps
from optimus_calc.specs.training import Offload
from optimus_calc.units import GB
from optimus_calc.analyses.breakeven.problem import SPAN, _Problem, _Solved
from optimus_calc.record import record

# ---- the card's step as the engine composes it ------------------------------------------------

@record
class OptimizerInputs:
    """The values compute.optimizer_step_time receives inside optimusnic.pipeline_time for the
    binding stage of a SmartNIC layout: the evaluator's inputs, checked against its figures."""

    values: dict          # symbol name (compute.optimizer_step_time's) -> number
    per_core: bool
    clock_flops: float    # FP32 FLOPs per cycle per core (F_core = clock x this)
    two_tier: bool        # an FPGA card reading part of its state from the slow tier


def optimizer_inputs(case: Case, st: State) -> OptimizerInputs | None:
    """The card's roofline inputs for a SmartNIC layout, or None when the layout is not one or
    the engine's figures cannot be reproduced (then only the search is used).

    Only OptimusNIC's step is compute.optimizer_step_time; the host strategies (ZeRO-Offload,
    ZeRO-Infinity, SuperOffload) run DeepSpeed's step phase by phase
    (evaluate/offload_step.py offload_step_phases), which `breakeven` searches over."""
    hw, lay, tr, asm = case.hw, case.layout, case.training, case.asm
    if lay.offload is not Offload.SMARTNIC or hw.smartnic is None:
        return None
    gpn = hw.gpus_per_node
    opt = optimizer_inputs_of(hw, tr, st.shard_params)
    phi, beta = opt.phi, opt.bpp
    p_n = opt.shard * gpn / (lay.smartnics_per_node or gpn)  # strategies/smartnic.py's P_n
    dev = device_from(hw.smartnic, 1, asm)
    two_tier = bool(dev.slow_tier_Bps and dev.capacity_bytes
                    and p_n * tr.optimizer_bytes > dev.capacity_bytes)
    t_opt, bw = device_time(dev, p_n, beta, phi, tr.optimizer_bytes)
    if not math.isclose(float(t_opt), st.optimizer_s, rel_tol=1e-9, abs_tol=1e-15):
        return None
    # a two-tier card reads at the tiers' mixed bandwidth: B_mem is that, for the other limits
    mem_Bps = float(bw) / dev.mem_eff if two_tier else dev.mem_Bps
    exposed = float(eq.optimusnic__exposed_time(T_pipe=st.pipeline_s, W_o=st.window_s))
    if not math.isclose(exposed, st.optimizer_exposed_s, rel_tol=1e-9, abs_tol=1e-12):
        return None
    values = {"P_n": p_n, "beta_p": beta, "phi_p": phi, "eta_m": dev.mem_eff, "B_mem": mem_Bps,
              "n_t": float(dev.cores if dev.per_core else 1), "B_core": dev.core_Bps,
              "F_core": dev.core_flops, "F_dev": dev.device_flops}
    return OptimizerInputs(values, dev.per_core, float(hw.smartnic.fp32_flops_per_cycle or 0),
                           two_tier)


def superoffload_floor(case: Case, st: State) -> tuple[float, float]:
    """(floor, tail): what SuperOffload leaves exposed behind a backward of any length, by the
    evaluator's own call (strategies/superchip.py) with W_b unbounded: the last sub-group's
    CPU-Adam, step()'s unscale, copy-back and overflow check (offload.exposed_superoffload_stv;
    the whole step with gradient clipping), plus the GPU's tail (offload.superchip_exposed_time);
    and that tail, the share kept on the GPU."""
    hw, tr = case.hw, case.training
    so, tail = cpu_and_gpu_steps(hw, tr, case.asm, optimizer_inputs_of(hw, tr, st.shard_params),
                                 case.layout.superchip_gpu_fraction, math.inf)
    return float(eq.offload__superchip_exposed_time(T_k=tail, T_x=so.exposed_s)), float(tail)



# the scale K_x of each roofline parameter: its symbol = K_x * x, x in the catalog's unit
SCALES = {"B_mem": (GB, "bytes/s per GB/s"), "B_core": (GB, "bytes/s per GB/s"),
          "F_dev": (1e12, "FLOP/s per TFLOP/s")}


def _scale(p: Param, opt: OptimizerInputs) -> tuple[float, str]:
    """(K_x, what it is) of a roofline parameter (cores: 1, their own unit)."""
    if p.roofline == "F_core":
        return 1e9 * opt.clock_flops, (f"FLOP/s per GHz of clock ({opt.clock_flops:g} FP32 "
                                       "FLOP/cycle x 1e9)")
    return SCALES.get(p.roofline, (1.0, ""))


def _with_constants(formula: str, constants: dict[str, tuple[float, str]]) -> str:
    """The formula, then the named constants it uses with their values."""
    named = [f"{k} = {v:g} {what}" for k, (v, what) in constants.items() if k in formula]
    return "; ".join([formula, *named])


CLOSED_FORM = ("closed form (sympy.solve on compute.optimizer_step_time inside "
               "optimusnic.pipeline_time and exposed_time)")
FLOOR_ZERO_OFFLOAD = ("exposure floor (offload.exposed_zero_offload = T_s > 0 at any value), "
                      "confirmed by the evaluator at the bound")
FLOOR_SUPEROFFLOAD = ("exposure floor (offload.exposed_superoffload_stv >= T_sp min(1, Z_s / P_r)"
                      " + T_post + T_ov > 0 at any value), confirmed by the evaluator at the "
                      "bound")


def _symbolic(prob: _Problem, p: Param, cur: float, cap: float,
              opt: OptimizerInputs | None) -> _Solved | None:
    """Solve in closed form where the goal is a registry expression the parameter enters once (a
    SmartNIC's roofline inside OptimusNIC's exposure, its capacity inside the spill), or state
    the exposure floor no value can remove (ZeRO-Offload/Infinity and SuperOffload under hide)."""
    from optimus_calc.analyses.breakeven import numeric as N

    case, goal, st = prob.case, prob.goal, prob.state()
    off = case.layout.offload
    if goal is Goal.HIDE and off in (Offload.CPU, Offload.NVME):
        return _Solved(None, "never", FLOOR_ZERO_OFFLOAD, "offload.exposed_zero_offload = T_s",
                       _zero_offload_binding(st))
    if goal is Goal.HIDE and off is Offload.SUPERCHIP:
        return _Solved(None, "never", FLOOR_SUPEROFFLOAD,
                       "offload.exposed_superoffload_stv = "
                       "Max(T_sp - W_b, T_sp Min(1, Z_s / P_r)) + T_post + T_ov",
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
        values = {**opt.values, "U": st.update_budget_s(target)}
        scale, what = _scale(p, opt)
        values["K_x"] = scale
        if p.roofline == "joint":
            values["A"] = cur
        form = N.form(("exposed", opt.per_core, p.roofline))
        inv = N.invert(form, values, cap, integer=p.integer,
                       floor_x=1.0 if p.integer else cur / SPAN)
        formula = _with_constants(inv.formula, {"K_x": (scale, what)})
        if inv.value is None:
            return _Solved(None, "never", CLOSED_FORM, formula,
                           _roofline_binding(opt, form, values, p, cap, st, target))
        return _Solved(inv.value, "any" if inv.any_value else "value", CLOSED_FORM, formula)
    if p.role == "smartnic" and p.field in ("memory_GB", "expansion_memory_GB"):
        sn = case.hw.smartnic
        other = sn.expansion_memory_GB if p.field == "memory_GB" else sn.memory_GB
        if goal is not Goal.FIT:
            return None
        values = {"B_dev": st.offload_bytes_per_device, "K_x": GB, "C_o": other * GB}
        inv = N.invert(N.form(("spill_fit", None, None)), values, cap, floor_x=cur / SPAN)
        method = "closed form (sympy.solve on memory.spill_bytes)"
        other_field = "expansion_memory_GB" if p.field == "memory_GB" else "memory_GB"
        formula = _with_constants(inv.formula, {"K_x": (GB, "bytes per GB"),
                                                "C_o": (other * GB, f"bytes ({other_field})")})
        if inv.value is None:
            return _Solved(None, "never", method, formula)
        return _Solved(inv.value, "any" if inv.any_value else "value", method, formula)
    return None


def _zero_offload_binding(st: State) -> str:
    return (f"ZeRO-Offload/Infinity run the whole step ({st.optimizer_s:.3g} s, transfers "
            "included) after the backward: nothing overlaps it (window 0 s), so it is exposed "
            "at any value")


def _superoffload_binding(case: Case, st: State) -> str:
    floor, tail = superoffload_floor(case, st)
    text = (f"SuperOffload updates the last sub-group after the backward, then unscales and "
            f"copies back (step()): {floor:.3g} s stays exposed behind a backward of any "
            "length (offload.exposed_superoffload_stv at W_b unbounded; Z_s is "
            "zero_sub_group_params)")
    if tail > 0:
        text += ("; the optimizer share kept on the GPU (--gpu-fraction, "
                 f"{tail:.3g} s) is never hidden either")
    return text


def _roofline_binding(opt: OptimizerInputs, form: dict, values: dict, p: Param, cap: float,
                      st: State, target: float) -> str:
    """What keeps a SmartNIC's roofline parameter from meeting the goal: the limits of
    compute.optimizer_step_time left when it no longer binds (``form``'s roofline pieces free
    of x), and the transfers when they alone fill the window ("" when neither: the caller says
    what binds)."""
    from optimus_calc.analyses.breakeven import numeric as N
    from optimus_calc.analyses.breakeven.compiled_forms import LIMIT_NAMES

    budget = st.update_budget_s(target)
    parts: list[str] = []
    if p.roofline != "joint":
        floor = N.roof_at(form, values, cap)
        names: list[str] = []
        limits = dict(LIMIT_NAMES)
        if opt.two_tier:
            limits["B_mem"] = "memory_bandwidth_GBps and expansion_bandwidth_GBps (mixed tiers)"
        for symbols in N.binding_names(form, values, cap):
            for s in symbols:
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
        parts.append(f"the link stages ({st.link_stages_text}) alone already fill the "
                     f"{st.window_s:.3g} s {what}")
    return "; ".join(parts)


def _budget_text(st: State, target: float) -> str:
    text = (f"the {st.window_s:.3g} s window leaves the update stage after the link stages "
            f"({st.link_stages_text})")
    if target:
        text += f" and {target:.3g} s of slack to the reference"
    return text


