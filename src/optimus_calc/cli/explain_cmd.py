"""`optimus-calc explain [NAME] [MODEL ...]`: the equations, their sources, and their values."""

from __future__ import annotations

import click

from optimus_calc.cli.common import emit
from optimus_calc.cli.options import model_options


@click.command()
@click.argument("name", required=False)
@click.argument("model", required=False)
@click.option("--latex", is_flag=True, help="Print the expression as LaTeX.")
@click.option("--assumptions", "show_assumptions", is_flag=True,
              help="List the named assumptions (--assume NAME=VALUE) instead.")
@model_options
@click.pass_obj
def explain(app, name: str | None, model: str | None, latex: bool, show_assumptions: bool,
            fmt: str, output: str | None, **kw) -> None:
    """List the equations, or print one with its source; given MODEL and a layout, print every
    symbol's value and the result, computed from the expression shown."""
    from optimus_calc.report import explain_view as V

    if show_assumptions:
        emit(V.assumptions_document(), fmt, output)
        return
    if name is None:
        emit(V.list_document(), fmt, output)
        return
    eq = V.find_equation(name)
    values = None
    if model is not None:
        from optimus_calc.evaluate.memory import equation_values
        from optimus_calc.inputs import build_inputs
        values = equation_values(build_inputs(app.catalog, model, kw), eq.name)
    emit(V.equation_document(eq, values, latex), fmt, output)
