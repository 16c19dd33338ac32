"""`optimus-calc compare MODEL --nodes N`: the offload strategies side by side."""

from __future__ import annotations

import click
from click.core import ParameterSource

from optimus_calc.cli.common import emit, plot_option
from optimus_calc.cli.options import model_options, train_options


def _default_tp(app, model_text: str, gpn: int) -> int:
    """The largest valid TP degree inside a node (the planner's rule, evaluate.shapes)."""
    from optimus_calc.evaluate.shapes import tp_degrees
    from optimus_calc.inputs import resolve_model
    from optimus_calc.specs.model import Model
    m = resolve_model(model_text, app.catalog)
    return max(tp_degrees(m, gpn)) if isinstance(m, Model) else gpn


@click.command()
@click.argument("model")
@model_options
@train_options
@plot_option
@click.pass_context
def compare(ctx, model: str, fmt: str, output: str | None, **kw) -> None:
    """GPU memory, offload-device memory, optimizer-step time, exposed time, step time and fit
    for: no offload, CPU (ZeRO-Offload), NVMe (ZeRO-Infinity), each SmartNIC in the catalog
    (OptimusNIC) and the superchip (SuperOffload) where the node has one.

    Without layout options it uses TP = the node's GPUs (or the largest valid divisor),
    ZeRO-3 and selective recomputation, the setting the OptimusNIC paper argues from."""
    from optimus_calc.report.compare_view import compare_document, run_compare

    app = ctx.obj
    src = ctx.get_parameter_source
    if src("tp") == ParameterSource.DEFAULT:
        node = app.catalog.get(kw["node"], "node", what="node")
        kw["tp"] = _default_tp(app, model, kw["gpus_per_node"] or node.gpus)
    if src("zero") == ParameterSource.DEFAULT:
        kw["zero"] = 3
    if src("recompute") == ParameterSource.DEFAULT:
        kw["recompute"] = "selective"
    rows, inp0 = run_compare(app, model, kw)
    emit(compare_document(inp0, rows, kw.get("train")), fmt, output)
