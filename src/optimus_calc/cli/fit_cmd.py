"""`optimus-calc fit MODEL --solve layers|nodes|micro-batch`."""

from __future__ import annotations

import click

from optimus_calc.cli.common import emit
from optimus_calc.cli.options import model_options


@click.command()
@click.argument("model")
@click.option("--solve", type=click.Choice(["layers", "nodes", "micro-batch"]), required=True,
              help="What to solve for.")
@model_options
@click.pass_obj
def fit(app, model: str, solve: str, fmt: str, output: str | None, **kw) -> None:
    """The largest model (layers, or parameters for a bare count), the fewest nodes, or the
    largest micro-batch that fits in GPU memory."""
    from optimus_calc.cli.options import build_inputs
    from optimus_calc.evaluate import fit as F
    from optimus_calc.report.document import Column, Document, Table
    from optimus_calc.report.common import layout_text, training_text
    from optimus_calc.specs.model import BareModel

    inp = build_inputs(app, model, kw)
    args = (inp.model, inp.hw, inp.layout, inp.training, inp.assumptions)
    data: dict = {"model": inp.model.name, "solve": solve}
    if solve == "layers":
        if isinstance(inp.model, BareModel):
            res = F.solve_params_closed_form(inp.hw, inp.layout, inp.training)
            data.update(max_layers=None, max_params=res.max_params)
        else:
            res = F.solve_layers(*args)
            data.update(max_layers=res.value, max_params=res.max_params)
    elif solve == "nodes":
        res = F.solve_nodes(*args)
        data["min_nodes"] = res.value
    else:
        res = F.solve_micro_batch(*args)
        data["max_micro_batch"] = res.value
    data.update(method=res.method, equation=res.equation, detail=res.detail)
    rows = [{"k": k, "v": v} for k, v in data.items() if v not in (None, "")]
    for row in rows:
        if row["k"] == "max_params":
            row["v"] = f"{row['v']:.4g} ({row['v'] / 1e9:.2f}B)"
    from optimus_calc.report.common import context_row, layout_data
    # CSV: one row with headers (context, layout, the answer), not the key/value view
    csv_row = {**context_row(inp.model.name, inp.hw, inp.training),
               **layout_data(inp.layout), "micro_batch": inp.training.micro_batch,
               "solve": solve, "max_layers": data.get("max_layers"),
               "max_params": data.get("max_params"), "min_nodes": data.get("min_nodes"),
               "max_micro_batch": data.get("max_micro_batch"), "method": res.method,
               "equation": res.equation, "detail": res.detail}
    doc = Document(
        title=f"fit: {inp.model.name} on {inp.hw.nodes} x {inp.hw.node.name}, solve {solve}",
        header=[("layout", layout_text(inp.layout)), ("training", training_text(inp))],
        data=data, tables=[Table(title="", rows=rows, columns=[
            Column("k", "", align="left"), Column("v", "", align="left")])],
        csv=Table(title="", rows=[csv_row], columns=[Column(k, k) for k in csv_row]))
    emit(doc, fmt, output)
