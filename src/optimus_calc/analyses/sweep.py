"""`sweep`: the planner over models x node types x node counts x SmartNICs."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Callable

from optimus_calc.catalog import Catalog
from optimus_calc.errors import FieldError
from optimus_calc.evaluate.context import resolve_hardware, with_positions
from optimus_calc.search.inputs import (SearchInputs, check_offloads, offers_text,
                                         unoffered)
from optimus_calc.analyses.nics import NicSizing, size_nics
from optimus_calc.search.passes import Objective
from optimus_calc.search.plan import PlanResult, plan_search
from optimus_calc.specs.model import Model
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Offload
from optimus_calc.record import record


@record
class SweepPoint:
    nodes: int
    result: PlanResult             # top 1; recommended is None when nothing fits
    sizing: NicSizing | None       # the point's SmartNIC, when the recommendation offloads to it
    assumptions: Assumptions
    offload: Offload | None = None  # the one target the point searched (--offloads), if any


@record
class SweepSpec:
    """What `sweep` varies, outermost first, around ``template``: its training fields,
    assumptions and search limits are every point's (its model and hardware are replaced).
    None in ``seq_lens``, ``global_batches``, ``offloads`` is the default (the model's
    sequence, the batch rule, every target the node offers); ``dropout`` None: each model's."""

    template: SearchInputs
    models: tuple[Model, ...]
    node_types: tuple[str, ...]
    node_counts: tuple[int, ...]
    smartnics: tuple[str | None, ...] = (None,)
    seq_lens: tuple[int | None, ...] = (None,)
    global_batches: tuple[int | None, ...] = (None,)
    offloads: tuple[Offload | None, ...] = (None,)
    dropout: bool | None = None
    objective: str = "throughput"  # search/passes.py Objective: what each point's plan ranks by


def sweep(cat: Catalog, spec: SweepSpec,
          progress: Callable[[int, int], None] | None = None,
          typed: dict[Offload, str] | None = None) -> list[SweepPoint]:
    """One planner run per combination, in the nesting order of :class:`SweepSpec`; an offload
    value restricts the search to that target, so each target gets its own row. The SmartNIC
    sizing is that of the SmartNIC what-if layout. ``progress(done, total)`` is called after
    each point (the CLI draws a bar with it). A target one node type of the sweep does not
    offer gives that node's points a row saying so (its reason); one that no node type
    offers is refused before any point runs (a FieldError on the flag it was typed with:
    ``typed`` maps a target to "offload", else "offloads")."""
    _some_node_offers(cat, spec, typed)
    out: list[SweepPoint] = []
    combos = list(itertools.product(
        spec.models, spec.seq_lens, spec.global_batches, spec.offloads, spec.node_types,
        spec.node_counts, spec.smartnics))
    for mdl, seq, gb, off, nt, n, sn in combos:
        out.append(_point(cat, point_inputs(cat, spec, mdl, seq, gb, off, nt, n, sn),
                          spec.objective))
        if progress is not None:
            progress(len(out), len(combos))
    return out


def point_inputs(cat: Catalog, spec: SweepSpec, model: Model, seq: int | None, gb: int | None,
                 off: Offload | None, node: str, nodes: int, smartnic: str | None
                 ) -> SearchInputs:
    """The search inputs of one sweep point (its targets unchecked: :func:`sweep` gives a
    target the node does not offer a row that says so)."""
    t = spec.template
    hw = resolve_hardware(cat, node, nodes, None, None, smartnic)
    dropout = spec.dropout if spec.dropout is not None else model.has_dropout
    tr = t.training.model_copy(update={"seq_len": seq or model.seq_len, "global_batch": gb,
                                       "dropout": dropout})
    offloads = (off,) if off is not None else t.offloads
    pins = t.pins
    if pins and "ep" in pins and not model.is_moe and any(m.is_moe for m in spec.models):
        pins = {k: v for k, v in pins.items() if k != "ep"} or None  # --ep: the MoE models'
    # a learned position table holds the point's sequence, as plan's (inputs.build_search_inputs)
    return replace(t, model=with_positions(model, tr.seq_len), hw=hw, training=tr,
                   offloads=offloads, pins=pins, seq_len_defaulted=seq is None)


def _point(cat: Catalog, si: SearchInputs, objective: str = "throughput") -> SweepPoint:
    """The point's plan (top 1) and SmartNIC sizing; where the node does not offer the point's
    target (``si.offloads``, one target per point of a --offloads list), a row saying so."""
    if (lacks := unoffered(si.hw, si.offloads)) is not None:
        return _not_offered(si, objective, lacks)
    res = plan_search(cat, si, objective, top_k=1)
    sizing = None
    w = res.what_if
    if w is not None:
        sizing = size_nics(cat, res.model, res.hw, w.layout, w.training, si.assumptions,
                           only=res.hw.smartnic.name)[0]
    return SweepPoint(si.hw.nodes, res, sizing, si.assumptions, _one(si.offloads))


def _some_node_offers(cat: Catalog, spec: SweepSpec, typed: dict | None) -> None:
    """Refuse a target that no node type of the sweep offers (with any of its SmartNICs): a
    sweep of rows that all say "does not offer it" is a mistyped flag, not a plan."""
    for off in spec.offloads:
        if off is None:
            continue
        hws = [resolve_hardware(cat, nt, spec.node_counts[0], None, None, sn)
               for nt in spec.node_types for sn in spec.smartnics]
        if not all(unoffered(hw, (off,)) for hw in hws):
            continue
        if len({hw.node.name for hw in hws}) == 1:
            check_offloads(hws[0], (off,), typed)  # one node type: plan's message
        field = (typed or {}).get(off, "offloads")
        offers = "; ".join(dict.fromkeys(f"{hw.node.name} {offers_text(hw)}" for hw in hws))
        raise FieldError(field, f"{{{field}}} {off.value}: no node type of the sweep offers "
                                f"it ({offers})")


def _not_offered(si: SearchInputs, objective: str, lacks: Offload) -> SweepPoint:
    """The point of a node that does not offer the point's target: nothing searched, its
    reason the node's offer."""
    why = f"{si.hw.node.name} does not offer {lacks.value} ({offers_text(si.hw)})"
    res = PlanResult(si.model, si.hw, si.training, Objective(objective), evaluated=0,
                     feasible=0, infeasible_by_reason={}, top=(), recommended=None, why=why,
                     smallest_gpu_bytes=None)
    return SweepPoint(si.hw.nodes, res, None, si.assumptions, _one(si.offloads))


def _one(offloads: tuple[Offload, ...] | None) -> Offload | None:
    """The point's target where it searched one (a --offloads list's member), else None."""
    return offloads[0] if offloads and len(offloads) == 1 else None
