"""`sweep`: the planner over models x node types x node counts x SmartNICs."""

from __future__ import annotations

from dataclasses import dataclass

from optimus_calc.catalog import Catalog
from optimus_calc.inputs import build_search_inputs
from optimus_calc.search.plan import NicSizing, PlanResult, plan_search, size_nics
from optimus_calc.specs.training import Assumptions, Offload


@dataclass(frozen=True)
class SweepPoint:
    nodes: int
    result: PlanResult             # top 1; recommended is None when nothing fits
    sizing: NicSizing | None       # the point's SmartNIC, when the recommendation offloads to it
    assumptions: Assumptions


def sweep(cat: Catalog, models: list[str], node_types: list[str], node_counts: list[int],
          smartnics: list[str], kw: dict) -> list[SweepPoint]:
    """One planner run per combination, in this nesting order; ``kw`` holds the shared training
    option values (search_training_options)."""
    out = []
    for mdl in models:
        for nt in node_types:
            for n in node_counts:
                for sn in smartnics:
                    si = build_search_inputs(cat, mdl, dict(kw, node=nt, nodes=n, smartnic=sn))
                    res = plan_search(cat, si, top_k=1, with_nics=False)
                    sizing = None
                    r = res.recommended
                    if r is not None and r.layout.offload is Offload.SMARTNIC:
                        sizing = size_nics(cat, res.model, res.hw, r.layout, r.training,
                                           si.assumptions, only=res.hw.smartnic.name)[0]
                    out.append(SweepPoint(n, res, sizing, si.assumptions))
    return out
