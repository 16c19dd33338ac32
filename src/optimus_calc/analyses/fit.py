"""Solve for the largest model, the fewest nodes or the largest micro-batch that fits.

Where the per-GPU total is invertible in closed form (model states only: linear in the
parameter count) it is solved directly (then bisected on `memory`'s verdict where the offload
side binds first); otherwise the monotone expression is searched exactly over integers
(doubling, then bisection).
"""

from __future__ import annotations

import math
from enum import Enum
from typing import TYPE_CHECKING, Callable, assert_never

from optimus_calc.errors import InputError
from optimus_calc.evaluate.batch import resolve_global_batch
from optimus_calc.evaluate.context import Hardware, check_layout, fill_layout
from optimus_calc.evaluate.memory import estimate_memory
from optimus_calc.specs.model import BareModel, Model
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Layout, Training
from optimus_calc.analyses.fit_count import FitResult, solve_params_closed_form
from optimus_calc.record import record

if TYPE_CHECKING:
    from optimus_calc.evaluate.inputs import Inputs


class Solve(str, Enum):
    """What `fit --solve` looks for."""

    LAYERS = "layers"            # the most layers (a bare count: the most parameters)
    NODES = "nodes"              # the fewest nodes
    MICRO_BATCH = "micro-batch"  # the largest micro-batch


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


def _fits(model, hw, layout, tr, asm) -> bool:
    return estimate_memory(model, hw, layout, tr, asm).fits


def with_layers(model: Model, n: int) -> Model:
    """``model`` with ``n`` layers, its windowed layers in the same share (gpt-oss's every
    other layer stays every other: compute.attention_span needs L_sw <= L)."""
    sw = model.sliding_window_layers
    upd = {"layers": n} if not sw else {
        "layers": n, "sliding_window_layers": max(1, min(n, round(sw * n / model.layers)))}
    return model.model_copy(update=upd)


def solve_layers(model: Model, hw: Hardware, layout: Layout, tr: Training,
                 asm: Assumptions, max_layers: int = 100_000) -> FitResult:
    lo = max(layout.pp * layout.interleave, 1)

    def pred(n: int) -> bool:
        return _fits(with_layers(model, n), hw, layout, tr, asm)

    best = largest_true(pred, lo, max_layers)
    params = with_layers(model, best).total_params if best else None
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


def at_nodes(hw: Hardware, layout: Layout, tr: Training, n: int
             ) -> tuple[Hardware, Layout, Training]:
    """The hardware, layout and training at ``n`` nodes: the pinned TP, PP, CP with DP taking
    the rest; the global batch resolved for that DP (the batch rule's when ``tr`` has none,
    else the given batch rounded up to a multiple of dp x micro-batch)."""
    h = Hardware(**{**hw.__dict__, "nodes": n})
    lay = fill_layout(h, layout.tp, layout.pp, None, layout.cp,
                      **layout.model_dump(exclude={"tp", "pp", "dp", "cp"}))
    per = lay.dp * tr.micro_batch
    gb = (int(resolve_global_batch(lay.dp, tr.micro_batch, tr)) if tr.global_batch is None
          else -(-tr.global_batch // per) * per)
    return h, lay, tr.model_copy(update={"global_batch": gb})


def node_unit(gpus_per_node: int, tp: int, pp: int, cp: int, ep: int = 1,
              etp: int | None = None) -> int:
    """The fewest nodes whose multiples can run the layout: their GPUs hold TP x PP x CP, and
    the GPUs of a stage (TP x CP x DP) hold EP x ETP (ETP: TP unless given; Layout's rule):
    the node's GPUs times the unit are a multiple of lcm(TP PP CP, PP EP ETP)."""
    need = math.lcm(tp * pp * cp, pp * ep * (tp if etp is None else etp))
    return need // math.gcd(need, gpus_per_node)


def solve_nodes(model, hw: Hardware, layout: Layout, tr: Training, asm: Assumptions,
                max_nodes: int | None = None) -> FitResult:
    """The fewest nodes at which the layout fits (up to ``max_nodes``, default the most the
    tool models: MAX_GPUS GPUs); ``tr.global_batch`` None: the batch rule's batch at each node
    count (evaluate.batch.resolve_global_batch)."""
    from optimus_calc.evaluate.context import MAX_GPUS
    group = layout.tp * layout.pp * layout.cp
    max_nodes = MAX_GPUS // hw.gpus_per_node if max_nodes is None else max_nodes

    def runs(n: int):
        """The layout at ``n`` nodes, None where it cannot run there (cheap: no evaluation)."""
        if (hw.gpus_per_node * n) % group:
            return None
        try:  # the layout's own checks (EP dividing the stage's GPUs) refuse some counts
            h, lay, t = at_nodes(hw, layout, tr, n)
            check_layout(model, lay, t)
        except InputError:
            return None
        return h, lay, t

    def at(n: int):
        got = runs(n)
        return None if got is None else _fits(model, *got, asm)

    # only multiples of the fewest nodes holding the layout can run it: doubling over those
    # (not over 1, 2, 4, ...: TP x PP 40 on 8-GPU nodes needs a multiple of 5 nodes, EP 16 of
    # 2 on 8-GPU nodes)
    unit = node_unit(hw.gpus_per_node, layout.tp, layout.pp, layout.cp, layout.ep, layout.etp)
    top = max_nodes // unit   # doubling to bracket (the largest count last), then bisection
    prev, k, found = 0, 1, None
    while k <= top:
        if at(unit * k):
            found = k
            break
        if k == top:
            break
        prev, k = k, min(2 * k, top)
    if found is None:
        return FitResult("nodes", None, None, "search over node counts",
                         detail=f"no node count up to {max_nodes} fits (ZeRO-{int(layout.zero)}"
                                + (": ZeRO-0 replicates all model states)" if not layout.zero
                                   else ")"), tried_to=unit * top if top else None)
    # bisection over the multiples of ``unit`` in (unit * prev, unit * found]: memory never
    # grows with the node count at a pinned TP, PP, CP (DP shards the states, micro-batches per
    # GPU only fall; tests/test_properties.py), so where a count that runs does not fit, none
    # below it does. A count that cannot run is stepped over to the next that can (a linear
    # scan took 17 s for 52,632 nodes)
    lo, hi, best = prev, found, found
    while hi - lo > 1:
        got = next(((j, g) for j in range((lo + hi) // 2, hi) if (g := runs(unit * j))), None)
        if got is None:
            hi = (lo + hi) // 2
        elif _fits(model, *got[1], asm):
            best = hi = got[0]
        else:
            lo = got[0]
    return FitResult("nodes", unit * best, None, "search over node counts (doubling, then "
                     "bisection)")


def fit_training(inp: Inputs) -> Training:
    """The training `fit` varies: for the node count, without --global-batch, the batch is
    the rule's at each node count (global_batch None), not the one resolved for ``inp``."""
    if inp.global_batch_defaulted:
        return inp.training.model_copy(update={"global_batch": None})
    return inp.training


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
            return solve_nodes(inp.model, inp.hw, inp.layout, fit_training(inp),
                               inp.assumptions)
        case Solve.MICRO_BATCH:
            return solve_micro_batch(*args)
        case _:
            assert_never(what)


# ---- why the answer is what it is, and what would change it ------------------------------------

@record
class FitExplanation:
    binding: str                    # the constraint that binds, in words
    binding_part: str               # weights, gradients, optimizer state, activations, ...
    binding_stage: int | None
    suggestions: tuple[dict, ...]   # {"change", "flags", "value"}: what each change gives
    starved: str = ""               # nodes: why the answer as asked is no layout to run
    lead: dict | None = None        # nodes: the suggestion a planner would act on instead


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


def _estimate(model, hw: Hardware, layout: Layout, tr: Training, asm: Assumptions):
    try:
        return estimate_memory(model, hw, layout, tr, asm)
    except InputError:
        return None


def _starved(model, hw: Hardware, layout: Layout, tr: Training, asm: Assumptions,
             nodes: int) -> str:
    """Why ``nodes`` nodes is no layout to run: the batch gives fewer micro-batches than
    pipeline stages, so the layout fits only because fewer are in flight ("" if not)."""
    if layout.pp == 1 or tr.model_states_only:
        return ""
    est = _estimate(model, *at_nodes(hw, layout, tr, nodes), asm)
    m = est.micro_batches if est is not None else layout.pp
    if m >= layout.pp:
        return ""
    return (f"at {nodes} nodes the batch gives {m} micro-batches for {layout.pp} pipeline "
            f"stages, so fewer are in flight (and the bubble is {(layout.pp - 1) / m:.0%} of "
            "the compute)")


def _binding(est) -> tuple[str, str, int | None]:
    if est is None:
        return "the layout is not valid at the answer", "", None
    part, size = _parts(est)[0]
    state = ("fits with" if est.fits else "exceeds")
    return (f"{part} ({size / 1e9:.1f} GB) is the largest part of the "
            f"{est.worst.total_bytes / 1e9:.1f} GB on stage {est.worst.index}, which {state} the "
            f"{est.usable_bytes / 1e9:.1f} GB usable"
            + (f" ({est.headroom_bytes / 1e9:.1f} GB free)" if est.fits else ""),
            part, est.worst.index)


def _offload_binding(est) -> str:
    """What binds where the offload side fills before the GPU: the host's RAM or the device
    (the fuller of the two at the answer)."""
    o = est.offload
    host = o.host_bytes_per_node / o.host_capacity_bytes_per_node if \
        o.host_capacity_bytes_per_node else 0.0
    dev = o.bytes_per_device / o.capacity_bytes_per_device if o.capacity_bytes_per_device \
        else 0.0
    if host >= dev:
        return (f"host RAM: {o.host_bytes_per_node / 1e9:.1f} GB of the "
                f"{o.host_capacity_bytes_per_node / 1e9:.1f} GB usable per node (the GPU holds "
                f"{est.worst.total_bytes / 1e9:.1f} GB of {est.usable_bytes / 1e9:.1f} GB)")
    return (f"{o.device}: {o.bytes_per_device / 1e9:.1f} GB of its "
            f"{o.capacity_bytes_per_device / 1e9:.1f} GB (the GPU holds "
            f"{est.worst.total_bytes / 1e9:.1f} GB of {est.usable_bytes / 1e9:.1f} GB)")


def _suggestions(solve: str, model, hw: Hardware, layout: Layout, tr: Training,
                 asm: Assumptions, res: FitResult) -> list[dict]:
    """Each common change, the same solver run again; those that do better. For nodes each
    says whether its answer starves the pipeline too."""
    solver = {"layers": solve_layers, "nodes": solve_nodes,
              "micro-batch": solve_micro_batch}.get(solve)
    if solver is None or isinstance(model, BareModel):
        return []
    if solve == "layers" and res.detail.startswith("hit the search cap"):
        return []  # no change can beat the cap
    out = []
    for what, flags, lay, t in _variants(model, layout, tr):
        try:
            check_layout(model, lay, t) if solve != "nodes" else None
            alt = solver(model, hw, lay, t, asm)
        except InputError:
            continue
        if alt.value is None or (res.value is not None and (
                alt.value >= res.value if solve == "nodes" else alt.value <= res.value)):
            continue
        sgt = {"change": what, "flags": flags, "value": alt.value,
               "at_least": alt.detail.startswith("hit the search cap")}
        if solve == "nodes":
            sgt["starved"] = bool(_starved(model, hw, lay, t, asm, int(alt.value)))
        out.append(sgt)
    return out


def explain_fit(solve: str, inp: Inputs, res: FitResult) -> FitExplanation:
    """What binds at the answer (or, when nothing fits, at the smallest configuration tried;
    for nodes, the largest count searched) and what each common change would give. For nodes,
    an answer that fits only because the batch starves the pipeline is no layout to run: the
    fewest nodes among the changes that do not starve it leads (``lead``)."""
    model, hw, layout, asm = inp.model, inp.hw, inp.layout, inp.assumptions
    tr = fit_training(inp) if solve == "nodes" else inp.training
    probe, at = (hw, layout, tr), model
    if solve == "nodes" and (res.value is not None or res.tried_to is not None):
        probe = at_nodes(hw, layout, tr, int(res.value or res.tried_to))
    elif solve == "micro-batch" and res.value is not None:
        probe = (hw, layout, tr.model_copy(update={"micro_batch": int(res.value)}))
    elif solve == "layers" and res.value is not None and not isinstance(model, BareModel):
        at = with_layers(model, int(res.value))
    elif solve == "layers" and res.max_params is not None:  # a bare count: at the answer
        at = BareModel(name=model.name, total_params=res.max_params)
    est = _estimate(at, *probe, asm)
    binding, part, stage = _binding(est)
    if res.offload_bound and est is not None:
        binding = _offload_binding(est)
    starved = ""
    if solve == "nodes" and res.value is not None:
        starved = _starved(model, hw, layout, tr, asm, int(res.value))
        binding += f"; {starved}" if starved else ""
    suggestions = _suggestions(solve, model, hw, layout, tr, asm, res)
    runnable = [x for x in suggestions if not x.get("starved")]
    lead = min(runnable, key=lambda x: x["value"]) if starved and runnable else None
    if lead is not None:  # the answer to act on first
        suggestions = [lead] + [x for x in suggestions if x is not lead]
    return FitExplanation(binding, part, stage, tuple(suggestions), starved, lead)
