"""`sweep`: the planner over models x node types x node counts x SmartNICs."""

from __future__ import annotations

from dataclasses import dataclass

from optimus_calc.catalog import Catalog
from optimus_calc.inputs import build_search_inputs
from optimus_calc.analyses.nics import NicSizing, size_nics
from optimus_calc.search.plan import PlanResult, plan_search
from optimus_calc.specs.training import Assumptions, Offload


@dataclass(frozen=True)
class SweepPoint:
    nodes: int
    result: PlanResult             # top 1; recommended is None when nothing fits
    sizing: NicSizing | None       # the point's SmartNIC, when the recommendation offloads to it
    assumptions: Assumptions


def sweep(cat: Catalog, models: list[str], node_types: list[str], node_counts: list[int],
          smartnics: list[str], kw: dict, seq_lens=(None,), global_batches=(None,),
          offloads=(None,)) -> list[SweepPoint]:
    """One planner run per combination, in this nesting order; ``kw`` holds the shared training
    and search option values. ``seq_lens``, ``global_batches`` and ``offloads`` vary those
    (None: the default; an offload value restricts the search to that target, so each target
    gets its own row). The SmartNIC sizing is that of the SmartNIC what-if layout."""
    out = []
    for mdl in models:
        for seq in seq_lens:
            for gb in global_batches:
                for off in offloads:
                    for nt in node_types:
                        for n in node_counts:
                            for sn in smartnics:
                                args = dict(kw, node=nt, nodes=n, smartnic=sn, seq_len=seq,
                                            global_batch=gb)
                                if off is not None:
                                    args["offloads"], args["offload"] = off, None
                                out.append(_point(cat, mdl, n, args))
    return out


def _point(cat: Catalog, mdl: str, n: int, args: dict) -> SweepPoint:
    si = build_search_inputs(cat, mdl, args)
    res = plan_search(cat, si, top_k=1, with_nics=False)
    sizing = None
    w = res.what_if
    if w is not None:
        sizing = size_nics(cat, res.model, res.hw, w.layout, w.training, si.assumptions,
                           only=res.hw.smartnic.name)[0]
    return SweepPoint(n, res, sizing, si.assumptions)
