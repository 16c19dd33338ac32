"""`optimus-calc validate`: published value, prediction and error for every public case."""

from __future__ import annotations

import click

from optimus_calc.cli.common import emit, output_options


@click.command()
@click.option("--assume", "assume", multiple=True, metavar="NAME=VALUE",
              help="Override a named assumption and see how the cases move.")
@output_options
@click.pass_obj
def validate(app, assume, fmt: str, output: str | None) -> None:
    """Every public case: published vs predicted, in-sample and leave-one-source-out."""
    from optimus_calc.inputs import parse_assumptions
    from optimus_calc.report.validate_view import validate_document
    from optimus_calc.validate import not_expressed, run_all

    asm = parse_assumptions(assume)
    emit(validate_document(run_all(app.catalog, asm), not_expressed(app.catalog, asm)), fmt,
         output)
