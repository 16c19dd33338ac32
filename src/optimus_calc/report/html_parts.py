"""What only the HTML page of an answer shows (``--format html``, issue 34), as plain data.

The page of a plan embeds the ``memory`` and ``step`` Documents of the recommended layout (the
very Documents ``optimus-calc memory|step`` with that layout print), the equations the evaluator
used for it (``explain --all``), the named assumptions with their sources and its exports. Each
piece is built by the same code as the command that prints it alone; nothing here computes a
figure of its own. Only ``--format html`` calls this module (the other formats never pay for it).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from optimus_calc.report.document import Document


def with_html(doc: Document, **parts: Any) -> Document:
    """``doc`` with ``parts`` added to what its HTML page shows."""
    return replace(doc, html={**doc.html, **parts})


def equations(inp, train=None) -> list[dict[str, Any]]:
    """``explain --all`` of ``inp``'s layout, each equation with its expression, source and unit
    (explain_view.all_document's rows and the registry's text)."""
    from optimus_calc.analyses.explain import evaluated_equations
    from optimus_calc.equations.compiled.text import TEXT  # generated from the registry
    from optimus_calc.report.common import cite
    from optimus_calc.report.explain_view import all_document

    rows = evaluated_equations(inp, None, train.tokens if train else None,
                               train.gpu_hour_price if train else None)
    out = []
    for r in all_document(rows, inp.model.name).data["equations"]:
        expression, _, source, doc, symbols = TEXT[r["name"]]
        out.append({**r, "expression": expression, "source": cite(source), "doc": doc,
                    "symbols": dict(symbols)})
    return out


def assumption_rows(asm) -> list[dict[str, Any]]:
    """The named assumptions (``explain --assumptions``) with the value this answer used."""
    from optimus_calc.report.explain_view import assumptions_document

    used = asm.model_dump()
    rows = []
    for r in assumptions_document().tables[0].rows:
        name = r.get("name")
        rows.append({**r, "value": used[name], "changed": name in asm.model_fields_set})
    return rows


def layout_inputs(res, si):
    """The recommended layout of a plan as one layout's inputs (search/plan.recommended_inputs:
    its framework's physics profile applied as the planner applied it)."""
    from optimus_calc.search.plan import recommended_inputs
    return recommended_inputs(res, si)


def layout_parts(inp, train=None, memory: bool = True, step: bool = True) -> dict[str, Any]:
    """The memory and step Documents of one layout, its equations and assumptions."""
    from optimus_calc.evaluate.memory import estimate_memory
    from optimus_calc.evaluate.step import estimate_step
    from optimus_calc.report.memory_view import memory_document
    from optimus_calc.report.step_view import step_document

    mem = estimate_memory(inp.model, inp.hw, inp.layout, inp.training, inp.assumptions)
    parts: dict[str, Any] = {"assumptions": assumption_rows(inp.assumptions),
                             "equations": equations(inp, train)}
    if memory:
        parts["memory"] = memory_document(inp, mem)
    if step and not inp.training.model_states_only:
        st = estimate_step(inp.model, inp.hw, inp.layout, inp.training, inp.assumptions, mem)
        parts["step"] = step_document(inp, mem, st, train)
    return parts


def plan_parts(res, si, train=None) -> dict[str, Any]:
    """A plan's page: the recommended layout's memory, step, equations and exports."""
    from optimus_calc.frameworks import exports_for
    from optimus_calc.report.plan_view import export_text

    parts: dict[str, Any] = {"kind": "plan", "assumptions": assumption_rows(si.assumptions)}
    r = res.recommended
    if r is None:
        return parts
    # the values the recommended row was timed with: the plan's own, with its framework's
    # physics profile over them (the page's framework-physics part says which it set); the
    # plan's own values before showed there as "the values this answer used"
    parts.update(layout_parts(layout_inputs(res, si), train))
    parts["exports"] = {t: export_text(t, r, res.model, res.hw.gpus_per_host)
                        for t in exports_for(r.frameworks)} if r.frameworks else {}
    return parts
