"""`optimus-calc fit MODEL --solve layers|nodes|micro-batch`."""

from __future__ import annotations

import click

from optimus_calc.cli.common import emit
from optimus_calc.cli.options import model_options
from optimus_calc.analyses.fit import Solve


@click.command()
@click.argument("model")
@click.option("--solve", "what", type=click.Choice([s.value for s in Solve]), required=True,
              help="What to solve for.")
@model_options
@click.pass_obj
def fit(app, model: str, what: str, fmt: str, output: str | None, **kw) -> None:
    """The largest model (layers, or parameters for a bare count), the fewest nodes, or the
    largest micro-batch that fits in GPU memory."""
    from optimus_calc.analyses.fit import explain_fit, solve
    from optimus_calc.inputs import build_inputs
    from optimus_calc.report.fit_view import fit_document

    inp = build_inputs(app.catalog, model, kw)
    kind = Solve(what)
    res = solve(kind, inp)
    why = explain_fit(kind.value, inp, res)
    emit(fit_document(inp, kind, res, why), fmt, output)
