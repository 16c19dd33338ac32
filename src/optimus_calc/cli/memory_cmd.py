"""`optimus-calc memory MODEL ...`."""

from __future__ import annotations

import click

from optimus_calc.cli.common import emit, plot_option
from optimus_calc.cli.options import model_options


@click.command()
@click.argument("model")
@click.option("--gib", is_flag=True, help="Show GiB (2^30) instead of GB (1e9) in tables.")
@model_options
@plot_option
@click.pass_obj
def memory(app, model: str, fmt: str, output: str | None, gib: bool, **kw) -> None:
    """Bytes per GPU and per offload device for one layout, and whether it fits.

    MODEL is a catalog name, a Hugging Face config.json path, or a parameter count (70e9).
    """
    from optimus_calc.evaluate.memory import estimate_memory
    from optimus_calc.inputs import build_inputs
    from optimus_calc.report.memory_view import memory_document

    inp = build_inputs(app.catalog, model, kw)
    est = estimate_memory(inp.model, inp.hw, inp.layout, inp.training, inp.assumptions)
    hint = None
    if not est.fits:
        from optimus_calc.analyses.fit_hint import fit_hint
        hint = fit_hint(lambda k: build_inputs(app.catalog, model, k), kw, inp)
    fit = (est.fits, hint)
    doc = memory_document(inp, est, binary=gib, fit=fit)
    if fmt == "html":
        from optimus_calc.report.html_parts import layout_parts, with_html
        doc = with_html(doc, kind="memory", **layout_parts(inp, memory=False, step=False))
    emit(doc, fmt, output)
