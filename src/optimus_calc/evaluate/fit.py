"""Solve for the largest model, the fewest nodes or the largest micro-batch that fits.

Where the per-GPU total is invertible in closed form (model states only: linear in the
parameter count) it is solved symbolically; otherwise the monotone expression is searched
exactly over integers (doubling, then bisection).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Callable, assert_never

from optimus_calc.errors import InputError
from optimus_calc.evaluate.context import Hardware, check_layout, fill_layout
from optimus_calc.evaluate.memory import estimate_memory, offload_flags
from optimus_calc.specs.model import BareModel, Model
from optimus_calc.specs.training import Assumptions, Layout, Training

if TYPE_CHECKING:
    from optimus_calc.inputs import Inputs


class Solve(str, Enum):
    """What `fit --solve` looks for."""

    LAYERS = "layers"            # the most layers (a bare count: the most parameters)
    NODES = "nodes"              # the fewest nodes
    MICRO_BATCH = "micro-batch"  # the largest micro-batch


@dataclass(frozen=True)
class FitResult:
    solve: str
    value: float | None          # max_layers / min_nodes / max_micro_batch / max_params
    max_params: float | None = None
    method: str = ""
    equation: str = ""
    detail: str = ""


def largest_true(pred: Callable[[int], bool], lo: int, hi: int) -> int | None:
    """Largest n in [lo, hi] with pred(n) for a predicate true then false (monotone)."""
    if not pred(lo):
        return None
    step, good = 1, lo
    while good + step <= hi and pred(good + step):
        good += step
        step *= 2
    bad = min(good + step, hi + 1)
    while bad - good > 1:
        mid = (good + bad) // 2
        if pred(mid):
            good = mid
        else:
            bad = mid
    return good


def solve_params_closed_form(hw: Hardware, layout: Layout, tr: Training,
                             asm: Assumptions | None = None) -> FitResult:
    """Model states only: total(P) = (b_w/d_w + b_g/d_g + b_o/d_o) * P / (t*p) = the usable
    capacity (the GPU's memory less the gpu_headroom margin, as `memory` judges it)."""
    import sympy as sp

    from optimus_calc.equations.memory import (b_g, b_o, b_w, gradients_bytes, N_d,
                                               optimizer_bytes, weights_bytes)
    from optimus_calc.equations.memory import P as P_sym
    from optimus_calc.equations.memory import Z, f_k, o_g, o_o, o_w

    psi = sp.Symbol("Psi", positive=True)
    o_w_v, o_g_v, o_o_v, f_k_v = offload_flags(layout)
    subs = {b_w: tr.weight_bytes, b_g: tr.gradient_bytes, b_o: tr.optimizer_bytes,
            N_d: layout.dp * layout.cp, Z: int(layout.zero), o_w: o_w_v, o_g: o_g_v, o_o: o_o_v, f_k: f_k_v,
            P_sym: psi / (layout.tp * layout.pp)}
    total = sum(e.expr.subs(subs) for e in (weights_bytes, gradients_bytes, optimizer_bytes))
    total = sp.nsimplify(sp.simplify(total))
    from optimus_calc.evaluate.engine import usable_gpu_bytes
    cap = usable_gpu_bytes(hw, asm or Assumptions())
    sol = sp.solve(sp.Eq(total, sp.Integer(int(cap))), psi)
    value = float(sol[0]) if sol else None
    return FitResult("params", value, value, "closed form (sympy.solve)",
                     f"{sp.sstr(total)} = {cap:.4g} bytes",
                     f"Psi = {value:.4g} parameters" if value else "no solution")


def _fits(model, hw, layout, tr, asm) -> bool:
    return estimate_memory(model, hw, layout, tr, asm).fits


def solve_layers(model: Model, hw: Hardware, layout: Layout, tr: Training,
                 asm: Assumptions, max_layers: int = 100_000) -> FitResult:
    lo = max(layout.pp * layout.interleave, 1)

    def pred(n: int) -> bool:
        return _fits(model.model_copy(update={"layers": n}), hw, layout, tr, asm)

    best = largest_true(pred, lo, max_layers)
    params = model.model_copy(update={"layers": best}).total_params if best else None
    if best is not None and best >= max_layers:
        return FitResult("layers", best, params,
                         f"search over layers stopped at its cap of {max_layers:,}",
                         detail=f"hit the search cap: at least {max_layers:,} layers fit (the "
                                "true maximum may be larger)")
    return FitResult("layers", best, params, "exact search over layers (monotone)",
                     detail="" if best else f"even {lo} layers do not fit")


def solve_micro_batch(model, hw: Hardware, layout: Layout, tr: Training,
                      asm: Assumptions) -> FitResult:
    per_replica = tr.global_batch // layout.dp
    candidates = [b for b in range(1, per_replica + 1) if per_replica % b == 0]
    best = None
    for b in candidates:  # memory grows with b: stop at the first that does not fit
        if _fits(model, hw, layout, tr.model_copy(update={"micro_batch": b}), asm):
            best = b
        else:
            break
    return FitResult("micro-batch", best, None,
                     "exact search over divisors of the per-replica batch (monotone)",
                     detail="" if best else "micro-batch 1 does not fit")


def solve_nodes(model, hw: Hardware, layout: Layout, tr: Training, asm: Assumptions,
                max_nodes: int = 100_000) -> FitResult:
    group = layout.tp * layout.pp * layout.cp

    def at(n: int):
        h = Hardware(**{**hw.__dict__, "nodes": n})
        if h.gpus % group:
            return None
        lay = fill_layout(h, layout.tp, layout.pp, None, layout.cp,
                          **layout.model_dump(exclude={"tp", "pp", "dp", "cp"}))
        per = lay.dp * tr.micro_batch
        t = tr.model_copy(update={"global_batch": -(-tr.global_batch // per) * per})
        try:
            check_layout(model, lay, t)
        except InputError:
            return None
        return _fits(model, h, lay, t, asm)

    n, found = 1, None
    while n <= max_nodes:  # doubling to bracket, then a linear scan of the bracket's lower half
        ok = at(n)
        if ok:
            found = n
            break
        n *= 2
    if found is None:
        return FitResult("nodes", None, None, "search over node counts",
                         detail=f"no node count up to {max_nodes} fits (ZeRO-{int(layout.zero)}"
                                + (": ZeRO-0 replicates all model states)" if not layout.zero
                                   else ")"))
    lo = found // 2 + 1
    for m in range(lo, found):
        if at(m):
            found = m
            break
    return FitResult("nodes", found, None, "search over node counts (doubling, then scan)")


def solve(what: Solve | str, inp: Inputs) -> FitResult:
    """`fit --solve WHAT` for one resolved layout."""
    what = Solve(what)
    args = (inp.model, inp.hw, inp.layout, inp.training, inp.assumptions)
    match what:
        case Solve.LAYERS:
            if isinstance(inp.model, BareModel):
                return solve_params_closed_form(inp.hw, inp.layout, inp.training,
                                                inp.assumptions)
            return solve_layers(*args)
        case Solve.NODES:
            return solve_nodes(*args)
        case Solve.MICRO_BATCH:
            return solve_micro_batch(*args)
        case _:
            assert_never(what)


# ---- why the answer is what it is, and what would change it ------------------------------------

@dataclass(frozen=True)
class FitExplanation:
    binding: str                    # the constraint that binds, in words
    binding_part: str               # weights, gradients, optimizer state, activations, ...
    binding_stage: int | None
    suggestions: tuple[dict, ...]   # {"change", "flags", "value"}: what each change gives


def _parts(est) -> list[tuple[str, float]]:
    w = est.worst
    return sorted([("weights", w.weights_bytes), ("gradients", w.gradients_bytes),
                   ("optimizer state", w.optimizer_bytes), ("activations", w.activations_bytes),
                   ("overheads", w.overhead_bytes)], key=lambda kv: -kv[1])


def _variants(model, layout: Layout, tr: Training) -> list[tuple[str, str, Layout, Training]]:
    """Changes a user can make, as (what, flags, layout, training)."""
    from optimus_calc.specs.training import Offload, Recompute, ZeroStage
    out = []
    if tr.recompute is not Recompute.FULL and not tr.model_states_only:
        out.append(("full activation recomputation", "--recompute full", layout,
                    tr.model_copy(update={"recompute": Recompute.FULL})))
    if tr.recompute is Recompute.NONE and not tr.model_states_only:
        out.append(("selective recomputation", "--recompute selective", layout,
                    tr.model_copy(update={"recompute": Recompute.SELECTIVE})))
    if tr.micro_batch > 1:
        out.append(("micro-batch 1", "--micro-batch 1", layout,
                    tr.model_copy(update={"micro_batch": 1})))
    if layout.zero < 3:
        out.append(("ZeRO-3", "--zero 3", layout.model_copy(update={"zero": ZeroStage(3)}), tr))
    if layout.offload is Offload.NONE:
        z = max(int(layout.zero), 1)
        out.append(("optimizer state offloaded to the CPU", f"--offload cpu --zero {z}",
                    layout.model_copy(update={"offload": Offload.CPU, "zero": ZeroStage(z)}), tr))
    layers = getattr(model, "layers", 0)
    if layers and layout.pp * 2 <= layers:
        out.append(("twice the pipeline stages", f"--pp {layout.pp * 2}",
                    layout.model_copy(update={"pp": layout.pp * 2}), tr))
    return out


def explain_fit(solve: str, model, hw: Hardware, layout: Layout, tr: Training,
                asm: Assumptions, res: FitResult) -> FitExplanation:
    """What binds at the answer (or, when nothing fits, at the smallest configuration tried) and
    what each common change would give. Each suggestion is the same solver run again."""
    probe_hw, probe_layout, probe_tr = hw, layout, tr
    if solve == "nodes" and res.value is not None:
        probe_hw = Hardware(**{**hw.__dict__, "nodes": int(res.value)})
        probe_layout = fill_layout(probe_hw, layout.tp, layout.pp, None, layout.cp,
                                   **layout.model_dump(exclude={"tp", "pp", "dp", "cp"}))
        per = probe_layout.dp * tr.micro_batch  # as solve_nodes rounds the batch
        probe_tr = tr.model_copy(update={"global_batch": -(-tr.global_batch // per) * per})
    elif solve == "micro-batch" and res.value is not None:
        probe_tr = tr.model_copy(update={"micro_batch": int(res.value)})
    try:
        est = estimate_memory(model, probe_hw, probe_layout, probe_tr, asm)
    except InputError:
        est = None
    if est is None:
        binding, part, stage = "the layout is not valid at the answer", "", None
    else:
        part, size = _parts(est)[0]
        stage = est.worst.index
        state = ("fits with" if est.fits else "exceeds")
        binding = (f"{part} ({size / 1e9:.1f} GB) is the largest part of the "
                   f"{est.worst.total_bytes / 1e9:.1f} GB on stage {stage}, which {state} the "
                   f"{est.usable_bytes / 1e9:.1f} GB usable"
                   + (f" ({est.headroom_bytes / 1e9:.1f} GB free)" if est.fits else ""))
        if solve == "nodes" and res.value is not None and not tr.model_states_only:
            m = est.micro_batches
            if m < layout.pp:
                binding += (f"; at {int(res.value)} nodes the batch gives {m} micro-batches for "
                            f"{layout.pp} pipeline stages, so fewer are in flight (and the "
                            f"bubble is {(layout.pp - 1) / m:.0%} of the compute)")
    solver = {"layers": solve_layers, "nodes": solve_nodes,
              "micro-batch": solve_micro_batch}.get(solve)
    suggestions = []
    if solver is not None and not isinstance(model, BareModel):
        for what, flags, lay, t in _variants(model, layout, tr):
            try:
                check_layout(model, lay, t) if solve != "nodes" else None
                alt = solver(model, hw, lay, t, asm)
            except InputError:
                continue
            better = alt.value is not None and (
                res.value is None or (alt.value < res.value if solve == "nodes"
                                      else alt.value > res.value))
            if better:
                suggestions.append({"change": what, "flags": flags, "value": alt.value})
    return FitExplanation(binding, part, stage, tuple(suggestions))
