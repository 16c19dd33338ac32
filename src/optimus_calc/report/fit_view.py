"""Document for `optimus-calc fit`."""

from __future__ import annotations

from typing import assert_never

from optimus_calc.report.common import (context_row, framework_data, framework_header, layout_data,
                                        layout_text, training_text)
from optimus_calc.report.common import applied_imbalance, imbalance_note
from optimus_calc.report.document import Column, Document, Table
from optimus_calc.specs.model import BareModel


def fit_document(inp, what, res, why=None) -> Document:
    """``what`` is the :class:`optimus_calc.analyses.fit.Solve` asked, ``res`` its FitResult,
    ``why`` its :class:`optimus_calc.analyses.fit.FitExplanation`."""
    from optimus_calc.analyses.fit import Solve

    data: dict = {"model": inp.model.name, "solve": what.value}
    match what:
        case Solve.LAYERS:
            if isinstance(inp.model, BareModel):
                data.update(max_layers=None, max_params=res.max_params)
            else:
                data.update(max_layers=res.value, max_params=res.max_params)
        case Solve.NODES:
            data["min_nodes"] = res.value
        case Solve.MICRO_BATCH:
            data["max_micro_batch"] = res.value
        case _:
            assert_never(what)
    data.update(method=res.method, equation=res.equation, detail=res.detail)
    if res.unbounded:  # none of the GPU's memory grows with the answer (fit.py)
        data["unbounded"] = True
    data.update(framework_data(inp))  # the --framework profile the memory was computed with
    moe = applied_imbalance(inp.model, inp.assumptions, inp.layout, typed=True)
    data.update(moe)  # an MoE model's typed and applied --moe-imbalance (JSON and CSV)
    notes = imbalance_note(inp.model, inp.assumptions, inp.layout)
    if why is not None:
        data.update(binding=why.binding, binding_part=why.binding_part,
                    binding_stage=why.binding_stage, suggestions=list(why.suggestions))
        notes.append(f"what binds: {why.binding}")
        unit = {"nodes": "nodes", "layers": "layers", "micro-batch": "micro-batch"}
        for sgt in why.suggestions:
            notes.append(f"with {sgt['change']} ({sgt['flags']}): {what.value} "
                         + ("at least " if sgt.get("at_least") else "") + f"{sgt['value']:g}"
                         + (" (the search's cap)" if sgt.get("at_least") else "")
                         if isinstance(sgt["value"], (int, float))
                         else f"with {sgt['change']} ({sgt['flags']})")
        if not why.suggestions and res.value is None and not res.unbounded:
            notes.append("none of recompute, micro-batch 1, ZeRO-3, CPU offload or twice the "
                         f"pipeline stages alone makes it fit ({unit.get(what.value, '')})")
    rows = [{"k": k, "v": v} for k, v in data.items()
            if v not in (None, "") and k not in ("suggestions", "binding", "binding_part",
                                                  "binding_stage", "answer", "starved",
                                                  "physics_profile")]
    if why is not None and why.lead is not None:  # lead with the answer a planner acts on
        lead = why.lead
        data["answer"] = {"nodes": lead["value"], "flags": lead["flags"],
                          "change": lead["change"]}
        data["starved"] = why.starved
        rows.insert(0, {"k": "answer", "v": f"{lead['value']:g} nodes with {lead['flags']} "
                                            f"({lead['change']})"})
        at = next(i for i, r in enumerate(rows) if r["k"] == "min_nodes")
        rows[at] = {"k": "as given", "v": f"{res.value:g} nodes, no layout to run: "
                                          f"{why.starved}"}
    for row in rows:
        if row["k"] == "max_params":
            row["v"] = f"{row['v']:.4g} ({row['v'] / 1e9:.2f}B)"
    # CSV: one row with headers (context, layout, the answer), not the key/value view
    csv_row = {**context_row(inp.model.name, inp.hw, inp.training),
               **layout_data(inp.layout), "micro_batch": inp.training.micro_batch, **moe,
               "solve": what.value, "max_layers": data.get("max_layers"),
               "max_params": data.get("max_params"), "min_nodes": data.get("min_nodes"),
               "max_micro_batch": data.get("max_micro_batch"), "method": res.method,
               "equation": res.equation, "detail": res.detail,
               "binding": why.binding if why else "",
               "suggestions": "|".join(f"{x['flags']}: {x['value']}" for x in why.suggestions)
               if why else ""}
    return Document(
        title=f"fit: {inp.model.name} on {inp.hw.nodes} x {inp.hw.node.name}, solve {what.value}",
        header=[("layout", layout_text(inp.layout)), *framework_header(inp),
                ("training", training_text(inp))],
        data=data, notes=notes, tables=[Table(title="", rows=rows, columns=[
            Column("k", "", align="left"), Column("v", "", align="left")])],
        csv=Table(title="", rows=[csv_row], columns=[Column(k, k) for k in csv_row]))
