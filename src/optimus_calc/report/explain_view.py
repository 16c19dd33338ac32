"""Documents for `explain`: the registry, one equation, its symbols' values. Every page reads
the text generated from the sympy registry (equations/compiled/, kept fresh by a test) and
evaluates the compiled function generated from the same expression: none imports sympy."""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Callable

from optimus_calc.errors import InputError, UnknownNameError
from optimus_calc.report.common import cite
from optimus_calc.report.document import Column, Document, Table


def _text() -> dict:
    """Every equation's name, unit, source and description as generated from the registry
    (equations/compiled/text.py, kept fresh by a test): the list and a name's lookup need no
    sympy."""
    from optimus_calc.equations.compiled.text import TEXT
    return TEXT


@dataclass(frozen=True)
class ShownEquation:
    """One registered equation as `explain` prints it, read from the generated text: its sympy
    expression printed three ways (sstr, pretty, latex) and the compiled function of it."""
    name: str
    unit: str
    source: str
    doc: str
    symbols: dict
    expression: str
    pretty: str
    latex: str
    args: tuple
    compiled: Callable  # the numpy function equations/codegen.py printed from the same
    #                     expression (test_memory_equations: equal to sympy.lambdify of it)


def find_equation(name: str) -> ShownEquation:
    """The registry's equation ``name`` (or its unique short name) from the generated text; an
    unknown one is refused with the closest names."""
    key, names = name.strip().lower(), _text()
    if key not in names:
        short = [n for n in names if n.split(".", 1)[1] == key]
        if len(short) != 1:
            close = difflib.get_close_matches(key, list(names), n=3, cutoff=0.4)
            hint = (f"; did you mean {', '.join(close)}?" if close
                    else "; see 'optimus-calc explain'")
            raise UnknownNameError(f"unknown equation {name[:80]!r}{hint}")
        key = short[0]
    from optimus_calc.equations.compiled.shown import SHOWN
    expression, unit, source, doc, symbols = names[key]
    return ShownEquation(key, unit, source, doc, symbols, expression, *SHOWN[key])


def list_document() -> Document:
    rows = [{"name": n, "unit": t[1], "source": cite(t[2]), "doc": t[3]}
            for n, t in sorted(_text().items())]
    view = Table(title="", rows=rows, columns=[  # sources wrap at word boundaries
        Column("name", "equation", align="left"), Column("unit", "unit", align="left"),
        Column("source", "source", align="left")])
    full = Table(title="", rows=rows, columns=[Column(k, k) for k in ("name", "unit", "source",
                                                                       "doc")])
    return Document(title=f"{len(rows)} equations", data={"equations": rows}, tables=[view],
                    csv=full, notes=["'optimus-calc explain NAME' prints one equation; add a "
                                     "MODEL and layout options to see every value."])


def assumptions_document(in_effect=None) -> Document:
    """The named assumptions and their defaults; ``in_effect`` (Assumptions from --assume,
    --profile, ...): also the value each takes with them."""
    from optimus_calc.specs.assumptions import Assumptions
    a = Assumptions()
    values = a.model_dump()
    now = (in_effect or a).model_dump()
    rows = [{"name": n, "default": values[n],
             **({"value": now[n]} if in_effect is not None else {}),
             "description": f.description} for n, f in type(a).model_fields.items()]
    value = [Column("value", "in effect")] if in_effect is not None else []
    return Document(title="named assumptions (override with --assume NAME=VALUE)",
                    data={"assumptions": rows}, tables=[Table(title="", rows=rows, columns=[
                        Column("name", "name", align="left"), Column("default", "default"),
                        *value, Column("description", "source / meaning", align="left")])])


def equation_document(eq: ShownEquation, values: dict[str, float] | None,
                      latex: bool) -> Document:
    data: dict = {"name": eq.name, "unit": eq.unit, "source": cite(eq.source), "doc": eq.doc,
                  "expression": eq.expression, "latex": eq.latex, "symbols": eq.symbols}
    notes = [f"source: {cite(eq.source)}", eq.doc]
    rows = [{"symbol": s, "meaning": m, "value": None} for s, m in eq.symbols.items()]
    if values is not None:
        import numpy as np
        # as numpy floats: a Piecewise evaluates every branch, and the one not taken may divide
        # by zero (compute.optimizer_step_time's CPU branch on a GPU); numpy gives inf there
        args = [np.float64(values[s]) for s in eq.args]
        with np.errstate(divide="ignore", invalid="ignore"):
            result = float(eq.compiled(*args))  # the very expression printed above
        if not math.isfinite(result):
            raise InputError(f"{eq.name} is not finite for these inputs")
        for row in rows:
            row["value"] = values[row["symbol"]]
        data["values"] = values
        data["result"] = result
        notes.insert(0, f"result: {eq.name} = {result:.6g} {eq.unit}")
    table = Table(title="symbols", rows=rows, columns=[
        Column("symbol", "symbol", align="left"), Column("value", "value", ".6g"),
        Column("meaning", "meaning", align="left")])
    shown = eq.latex if latex else eq.pretty
    return Document(title=f"{eq.name} [{eq.unit}]\n\n{shown}\n", data=data, tables=[table],
                    notes=notes)


def _inputs_text(inputs: dict[str, float]) -> str:
    return ", ".join(f"{k}={v:.6g}" for k, v in inputs.items())


def all_document(rows, model_name: str) -> Document:
    """`explain --all`: every equation evaluated for the layout, grouped by evaluator stage."""
    from optimus_calc.equations.compiled.text import TEXT  # generated: no sympy to import
    data = [{"name": r.name, "unit": TEXT[r.name][1], "result": r.result, "inputs": r.inputs,
             "stage": r.stage, "scope": r.scope, "pipeline_stage": r.pipeline_stage}
            for r in rows]
    tables = []
    for stage in dict.fromkeys(r["stage"] for r in data):
        part = [dict(r, inputs_text=_inputs_text(r["inputs"])) for r in data
                if r["stage"] == stage]
        tables.append(Table(title=stage, rows=part, columns=[
            Column("name", "equation", align="left"), Column("scope", "for", align="left"),
            Column("result", "result", ".6g"), Column("unit", "unit", align="left"),
            Column("inputs_text", "inputs", align="left", compact=False)]))
    csv_rows = [dict(r, inputs=_inputs_text(r["inputs"])) for r in data]
    csv = Table(title="", rows=csv_rows, columns=[Column(k, k) for k in (
        "stage", "name", "scope", "pipeline_stage", "result", "unit", "inputs")])
    names = len({r["name"] for r in data})
    return Document(title=f"{names} equations evaluated for {model_name}", data={
        "equations": data}, tables=tables, csv=csv, notes=[
        "values at the pipeline stage that binds each figure (the most loaded for memory and "
        "offload devices, the slowest for time; --stage N picks one); 'optimus-calc explain "
        "NAME MODEL ...' prints one with its expression"])
