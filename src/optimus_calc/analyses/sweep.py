"""`sweep`: the planner over models x node types x node counts x SmartNICs."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Callable

from optimus_calc.catalog import Catalog
from optimus_calc.evaluate.context import resolve_hardware, with_positions
from optimus_calc.search.inputs import SearchInputs, check_offloads
from optimus_calc.analyses.nics import NicSizing, size_nics
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
          progress: Callable[[int, int], None] | None = None) -> list[SweepPoint]:
    """One planner run per combination, in the nesting order of :class:`SweepSpec`; an offload
    value restricts the search to that target, so each target gets its own row. The SmartNIC
    sizing is that of the SmartNIC what-if layout. ``progress(done, total)`` is called after
    each point (the CLI draws a bar with it)."""
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
    """The search inputs of one sweep point."""
    t = spec.template
    hw = resolve_hardware(cat, node, nodes, None, None, smartnic)
    dropout = spec.dropout if spec.dropout is not None else model.has_dropout
    tr = t.training.model_copy(update={"seq_len": seq or model.seq_len, "global_batch": gb,
                                       "dropout": dropout})
    offloads = (off,) if off is not None else t.offloads
    check_offloads(hw, offloads)
    pins = t.pins
    if pins and "ep" in pins and not model.is_moe and any(m.is_moe for m in spec.models):
        pins = {k: v for k, v in pins.items() if k != "ep"} or None  # --ep: the MoE models'
    # a learned position table holds the point's sequence, as plan's (inputs.build_search_inputs)
    return replace(t, model=with_positions(model, tr.seq_len), hw=hw, training=tr,
                   offloads=offloads, pins=pins, seq_len_defaulted=seq is None)


def _point(cat: Catalog, si: SearchInputs, objective: str = "throughput") -> SweepPoint:
    res = plan_search(cat, si, objective, top_k=1)
    sizing = None
    w = res.what_if
    if w is not None:
        sizing = size_nics(cat, res.model, res.hw, w.layout, w.training, si.assumptions,
                           only=res.hw.smartnic.name)[0]
    return SweepPoint(si.hw.nodes, res, sizing, si.assumptions)
