"""Plan: search every layout, rank by the objective, recommend one, size the SmartNICs."""

from __future__ import annotations

from dataclasses import field, replace
from typing import assert_never

import numpy as np

from optimus_calc.catalog import Catalog
from optimus_calc.errors import FieldError
from optimus_calc.evaluate.context import Hardware
from optimus_calc.evaluate.memory import MemoryEstimate, estimate_memory, memory_from
from optimus_calc.evaluate.step import StepEstimate, batch_terms, estimate_step
from optimus_calc.evaluate import strategies
from optimus_calc.evaluate.batch import RECOMPUTE_CODES, Batch
from optimus_calc.evaluate.engine import evaluate, usable_gpu_bytes
from optimus_calc.evaluate.reasons import Reason
from optimus_calc.evaluate.shapes import max_chunks
from optimus_calc.frameworks import Framework, layout_support, layouts_support
from optimus_calc.search.inputs import SearchInputs, offload_targets
from optimus_calc.search.passes import NOT_RUNNABLE, Objective
from optimus_calc.search.per_framework import (groups_note, profile_count,
                                               search_per_framework)
from optimus_calc.search.space import enumerate_space, offload_variants
from optimus_calc.specs.model import Model
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.base import unvalidated
from optimus_calc.specs.training import Layout, Offload, Training, ZeroStage
from optimus_calc.units import fmt_gb
from optimus_calc.record import record



@record
class Candidate:
    layout: Layout
    training: Training
    gpu_bytes: float
    step_s: float
    mfu: float
    tokens_per_s: float
    memory: MemoryEstimate | None = None
    step: StepEstimate | None = None
    frameworks: tuple[str, ...] = ()   # the frameworks that run it (frameworks.py)
    framework: str = ""                # whose physics profile its numbers use ("" neutral)


@record
class PlanResult:
    model: Model
    hw: Hardware
    training: Training
    objective: Objective
    evaluated: int
    feasible: int
    infeasible_by_reason: dict[str, int]
    top: tuple[Candidate, ...]
    recommended: Candidate | None
    why: str
    nic_sizing: tuple["NicSizing", ...] = ()
    smallest_gpu_bytes: float | None = 0.0  # of the layouts a framework runs; None: none runs
    notes: tuple[str, ...] = ()
    what_if: Candidate | None = None   # the best SmartNIC layout: OptimusNIC is no framework's
    framework_rejections: dict[str, int] = field(default_factory=dict)
    frameworks: tuple[str, ...] = ()   # the frameworks searched
    profiles: int = 1  # physics profiles each layout was evaluated under (evaluated: pairs)
    recommended_inputs: object = None  # evaluate.inputs.Inputs of the recommendation, its
    #                                    physics applied (plan_search; recommended_inputs)


def layout_of(cols: dict, i: int, hw: Hardware, smartnic: str | None) -> Layout:
    """Row ``i`` of the search's grid as a Layout: the grid holds only layouts the Layout
    checks pass (search/space.py), so it is built without validating it again
    (specs/base.unvalidated; tests/test_cold_start_budget.py checks a plan's layouts)."""
    off = strategies.at(int(cols["offload"][i])).offload
    fields = dict(tp=int(cols["tp"][i]), pp=int(cols["pp"][i]), dp=int(cols["dp"][i]),
                  cp=int(cols["cp"][i]), ep=int(cols["ep"][i]),
                  zero=ZeroStage(int(cols["zero"][i])), offload=off,
                  offload_params=bool(cols["offload_params"][i]),
                  interleave=int(cols["v"][i]),
                  smartnic=smartnic if off is Offload.SMARTNIC else None)
    return unvalidated(Layout, fields, tuple(fields)) or Layout(**fields)


def training_of(cols: dict, i: int, base: Training) -> Training:
    return base.model_copy(update={"micro_batch": int(cols["mb"][i]),
                                   "global_batch": int(cols["gb"][i]),
                                   "recompute": RECOMPUTE_CODES[int(cols["recompute"][i])],
                                   "sequence_parallel": bool(cols["sp"][i])})



def _candidate(cols: dict, i: int, model: Model, hw: Hardware, base: Training,
               asm: Assumptions, group: tuple | None = None) -> Candidate:
    """One layout of ``cols`` evaluated in full; ``group``: the frameworks whose profile
    ``base``/``asm`` carry (the row's framework: those of them that run the layout)."""
    lay = layout_of(cols, i, hw, hw.smartnic.name if hw.smartnic else None)
    tr = training_of(cols, i, base)
    mem = estimate_memory(model, hw, lay, tr, asm)   # the same evaluator, every stage shown
    st = estimate_step(model, hw, lay, tr, asm, mem)
    runs = tuple(f.value for f, r in layout_support(lay, tr, model).items()
                 if int(r) == 0 and (group is None or f in group))
    return Candidate(lay, tr, mem.worst.total_bytes, st.step_time_s, st.mfu, st.tokens_per_s,
                     mem, st, runs, ", ".join(runs) if group is not None else "")


def _candidates(cols: dict, model: Model, hw: Hardware, base: Training, asm: Assumptions,
                rows: list[int] | None = None, group: tuple | None = None) -> list[Candidate]:
    """:func:`_candidate` for ``rows`` of ``cols`` (default all) from one evaluation of every
    stage of them all, each row cut to its own stages (tests/test_pruning.py checks they agree
    with one evaluation per layout); ``group`` as there."""
    rows = list(range(len(cols["tp"]))) if rows is None else list(rows)
    n = len(rows)
    nic = hw.smartnic.name if hw.smartnic else None
    lays = [layout_of(cols, r, hw, nic) for r in rows]
    trs = [training_of(cols, r, base) for r in rows]
    out: list = []
    support = layouts_support(lays, trs, model)
    # one evaluation of every stage for all of them: a row's stages are cut to its pipeline
    ev = evaluate(Batch.of_many(lays, trs), model, hw, base, asm, all_stages=True)
    terms = batch_terms(ev, n)
    for i in range(n):
        mem = memory_from(ev.row(i, n, stages=lays[i].pp), model, hw, lays[i], trs[i], asm)
        st = estimate_step(model, hw, lays[i], trs[i], asm, mem, terms[i])
        runs = tuple(f.value for f, r in support[i].items()
                     if int(r) == 0 and (group is None or f in group))
        out.append(Candidate(lays[i], trs[i], mem.worst.total_bytes, st.step_time_s, st.mfu,
                             st.tokens_per_s, mem, st, runs,
                             ", ".join(runs) if group is not None else ""))
    return out


def _top_candidates(picks, results, groups, model: Model, hw: Hardware) -> list[Candidate]:
    """The merged top K: one batched report per group, in the order of ``picks``."""
    out: list = [None] * len(picks)
    for g in dict.fromkeys(g for g, _ in picks):
        ks = [k for k, (gg, _) in enumerate(picks) if gg == g]
        cands = _candidates(results[g].top, model, hw, groups[g][1], groups[g][2],
                            rows=[picks[k][1] for k in ks], group=groups[g][0])
        for k, c in zip(ks, cands):
            out[k] = c
    return out


def _no_fit_why(res, names: tuple[str, ...], hw: Hardware, asm: Assumptions) -> str:
    """Why nothing fits when a framework runs some layout: the rules are checked before memory,
    so the smallest is of the layouts a framework runs; when that one fits GPU memory, what
    failed is another resource (host RAM, NVMe, the SmartNIC): name it, not GPU memory."""
    who = names[0] if len(names) == 1 else "a framework"
    usable = usable_gpu_bytes(hw, asm)
    other = [t for t in res.infeasible_by_reason
             if t not in (Reason.GPU_MEMORY.text, NOT_RUNNABLE)]
    if res.smallest_gpu_bytes > usable or not other:
        return (f"no layout fits: the smallest {who} runs needs "
                f"{fmt_gb(res.smallest_gpu_bytes)} per GPU on {fmt_gb(usable)} usable of "
                f"{hw.gpu.name}")
    return (f"no layout fits: the layouts {who} runs that fit GPU memory (from "
            f"{fmt_gb(res.smallest_gpu_bytes)} per GPU on {fmt_gb(usable)} usable of "
            f"{hw.gpu.name}) fail on: {'; '.join(other)}")


def _no_space(model: Model, hw: Hardware, base: Training, pins: dict) -> FieldError:
    """No layout to search: the pins and the batch, with the rules (search/space.py) that
    the pinned columns must meet, not only TP's."""
    pinned = "".join(f" {{{k}}} {','.join(map(str, v))}" for k, v in pins.items())
    batch = (f"{{global_batch}} {base.global_batch}" if base.global_batch is not None else
             "the default global batch")
    rules = ["TP must divide the heads and the node's GPUs"] if "tp" in pins or not pins else []
    if "mb" in pins:
        rules.append("a micro-batch must divide the global batch / DP" + (
            "; without --global-batch the planner's batch is the smallest multiple of DP holding "
            "512 sequences: give --global-batch to run a larger micro-batch"
            if base.global_batch is None else ""))
    if "ep" in pins:
        rules.append("EP must divide the experts and DP x CP" if model.is_moe else
                     f"EP > 1 needs experts: {model.name} is dense")
    if "cp" in pins:
        rules.append("CP must divide the sequence and the GPUs left by TP")
    if "v" in pins:
        rules.append(f"interleave > 1 needs PP > 1, PP x interleave <= {max_chunks(model.layers)}"
                     f" ({model.layers} layers, the embedding and the loss) and the "
                     "micro-batches a multiple of PP")
    if "pp" in pins or "dp" in pins:
        rules.append("TP x PP x CP x DP must be the GPUs, PP at most the layers")
    rules = rules or ["TP must divide the heads and the node's GPUs"]
    return FieldError(next(iter(pins or {"global_batch": 0})),
                      f"no layout of {model.name} divides {hw.gpus} GPUs with {batch}"
                      f"{' and' + pinned if pinned else ''} ({'; '.join(rules)})")


def plan(model: Model, hw: Hardware, base: Training, asm: Assumptions,
         objective: Objective | str = Objective.THROUGHPUT, top_k: int = 5,
         offloads: list[Offload] | tuple[Offload, ...] | None = None, max_zero: int = 3,
         recomputes: list | tuple | None = None, distinct: bool = False,
         frameworks: tuple[Framework, ...] = tuple(Framework),
         pins: dict | None = None, zero_stages: tuple[int, ...] | None = None,
         physics: bool = False, offload_params: tuple[bool, ...] = (False, True),
         yields: frozenset = frozenset()) -> PlanResult:
    """Rank every layout that fits and that one of ``frameworks`` runs. ``distinct`` keeps the
    best layout per (TP, PP) in the top K; ``pins`` fixes grid columns; SmartNIC layouts are a
    what-if beside the recommendation. ``base.global_batch`` None: each layout takes the batch
    rule's (evaluate.batch.resolve_global_batch)."""
    objective = Objective(objective)
    offloads = list(offloads or offload_targets(hw))
    zero_stages = zero_stages or tuple(range(max_zero + 1))
    if not offload_variants(offloads, offload_params, zero_stages):
        movers = [o.value for o in strategies.offered(hw) if strategies.strategy(o)
                  .offloads_params]
        raise FieldError("offload_params", "{offload_params}: the weights leave the GPU only "
                         f"with ZeRO-3 and a target that moves them ({', '.join(movers)}); "
                         f"searched: ZeRO {','.join(map(str, sorted(zero_stages)))}, offload "
                         f"{','.join(o.value for o in offloads)}")
    space = enumerate_space(model, hw.gpus, hw.gpus_per_node, base.global_batch, base.seq_len,
                            offloads,
                            zero_stages=zero_stages,
                            recomputes=recomputes or RECOMPUTE_CODES, pins=pins,
                            offload_params=offload_params)
    if len(space) == 0:
        raise _no_space(model, hw, base, pins or {})
    res, picks, groups, results = search_per_framework(
        model, hw, base, asm, space, objective, top_k, distinct, frameworks, physics, yields)
    names = tuple(f.value for f in frameworks)
    # the SmartNIC what-if runs on no framework: framework-neutral parameters
    what_if = (_candidate(res.what_if, 0, model, hw, base, asm) if res.what_if else None)
    smallest = res.smallest_gpu_bytes if np.isfinite(res.smallest_gpu_bytes) else None
    common = dict(smallest_gpu_bytes=smallest, notes=tuple(groups_note(groups)),
                  what_if=what_if, framework_rejections=res.framework_rejections,
                  frameworks=names, profiles=profile_count(groups))
    if res.feasible == 0:
        refused = _refused(frameworks, offloads, model)
        why = (_no_fit_why(res, names, hw, asm) if np.isfinite(res.smallest_gpu_bytes) else
               "no framework runs any layout searched (" + ", ".join(names) + "; see "
               "framework_rejections; SmartNIC layouts are a what-if)"
               + (refused or _most_rejected(res.framework_rejections)))
        return PlanResult(model, hw, base, objective, len(space) * profile_count(groups), 0,
                          res.infeasible_by_reason, (), None, why, **common)
    top = _top_candidates(picks, results, groups, model, hw)
    rec = top[0]
    why = _why(rec, res.feasible, res.best_no_offload_tps, objective)
    evaluated = len(space) * profile_count(groups)
    return PlanResult(model, hw, base, objective, evaluated, res.feasible,
                      res.infeasible_by_reason, tuple(top), rec, why, **common)


def plan_search(cat: Catalog, si: SearchInputs,
                objective: Objective | str = Objective.THROUGHPUT,
                top_k: int = 5) -> PlanResult:
    """`plan`: rank the layouts of ``si`` (the SmartNIC sizing of the recommendation is an
    analysis on top: analyses.nics.with_nic_sizing)."""
    del cat  # kept for a stable signature: the search needs no catalog lookup
    res = plan(si.model, si.hw, si.training, si.assumptions, objective, top_k, si.offloads,
               si.max_zero, si.recomputes, si.distinct,
               frameworks=si.frameworks or tuple(Framework), pins=si.pins,
               zero_stages=si.zero_stages, physics=si.physics,
               offload_params=si.offload_params, yields=si.yields)
    if res.recommended is None:
        return res
    return replace(res, recommended_inputs=recommended_inputs(res, si))  # once: page, what-if


def _most_rejected(rejections: dict) -> str:
    """": <the rule that rejects the most layouts>" (its text names the framework and the
    source line), "" without rejections."""
    return f": most often, {next(iter(rejections))}" if rejections else ""


def _refused(frameworks, offloads, model=None) -> str:
    """": <each framework's architecture row>" when none of them can build the model, and
    ": <each framework's offload allowlist>" when none runs any target searched (SmartNIC
    apart: no framework runs OptimusNIC, the what-if); "" when neither."""
    from optimus_calc.frameworks import model_refusals, offload_refusals
    real = [o for o in offloads if o is not Offload.SMARTNIC]
    texts = model_refusals(frameworks, model) + (
        offload_refusals(frameworks, real) if real else [])
    return (": " + "; ".join(texts)) if texts else ""


def _why(rec: Candidate, n: int, best_none_tps: float, objective: Objective) -> str:
    """Why ``rec`` leads: its objective's figure; and, against the most tokens/s of a layout
    that keeps the optimizer on the GPU (``best_none_tps``, 0: none fits), what offload gains."""
    lay = rec.layout
    rate = f"{rec.tokens_per_s:,.0f} tokens/s, MFU {rec.mfu:.1%}"
    match objective:
        case Objective.MEMORY:
            s = f"least GPU memory of {n:,} feasible layouts ({fmt_gb(rec.gpu_bytes)} per GPU)"
        case Objective.THROUGHPUT:
            s = f"most tokens/s of {n:,} feasible layouts: {rate}"
        case Objective.TIME:
            s = f"shortest time to train of {n:,} feasible layouts (the most tokens/s): {rate}"
        case Objective.COST:
            s = (f"cheapest to train of {n:,} feasible layouts (the most tokens/s on the same "
                 f"GPUs): {rate}")
        case _:
            assert_never(objective)
    if lay.offload is not Offload.NONE:
        if not best_none_tps > 0:
            s += "; no layout fits without offloading the optimizer"
        else:
            gain = rec.tokens_per_s / best_none_tps - 1
            s += (f"; {100 * abs(gain):.1f}% {'faster' if gain >= 0 else 'slower'} training "
                  "than the best layout that keeps the optimizer on the GPU")
    else:
        s += "; the optimizer stays on the GPU"
    return s


def recommended_inputs(res: PlanResult, si: SearchInputs):
    """The recommended layout as one layout's inputs (evaluate.inputs.Inputs): its framework's
    physics profile applied to the plan's own training and assumptions as the planner applied it
    (frameworks/physics.py), so a page, a SmartNIC what-if or a `step` of it reads the values
    its row was timed with. Applied to the plan's training with the row's micro-batch, batch,
    recompute and SP, not to the row's training: a value the profile set there is no user's
    ("your values kept for grad_bytes" before, with no --grad-bytes). ``framework`` joins the
    frameworks of the row's profile group, whose profiles apply identically: the first of them;
    a plan searched with framework-neutral physics (--framework any) keeps the neutral values
    its table used. Made once by plan_search (``res.recommended_inputs``)."""
    if res.recommended_inputs is not None:
        return res.recommended_inputs
    from optimus_calc.evaluate.inputs import Inputs
    from optimus_calc.frameworks.physics import apply_framework
    r = res.recommended
    name = r.frameworks[0] if r.framework and si.physics else None
    base = si.training.model_copy(update={
        "micro_batch": r.training.micro_batch, "global_batch": r.training.global_batch,
        "recompute": r.training.recompute, "sequence_parallel": r.training.sequence_parallel})
    tr, asm, choice = apply_framework(name, r.layout, base, si.assumptions, res.model, si.yields)
    return Inputs(res.model, res.hw, r.layout, tr, asm, si.global_batch_defaulted,
                  si.seq_len_defaulted, si.profile, choice)
