"""`optimus-calc compare MODEL --nodes N`: the offload strategies side by side."""

from __future__ import annotations

import click
from click.core import ParameterSource

from optimus_calc.cli.common import emit, plot_option
from optimus_calc.cli.options import model_options, train_options
from optimus_calc.errors import InputError


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
    from optimus_calc.analyses.compare import compare as run_compare
    from optimus_calc.analyses.compare import default_tp
    from optimus_calc.inputs import build_inputs, resolve_model
    from optimus_calc.report.compare_view import compare_document
    from optimus_calc.specs.training import Recompute

    cat = ctx.obj.catalog
    src = ctx.get_parameter_source
    if src("offload") != ParameterSource.DEFAULT:  # it would be ignored: every target is a row
        raise InputError(f"--offload {kw['offload']}: compare evaluates every offload target in "
                         "turn; leave it out")
    if src("smartnic") != ParameterSource.DEFAULT:  # likewise: every card is a row
        raise InputError(f"--smartnic {kw['smartnic']}: compare evaluates every SmartNIC in the "
                         "catalog in turn; leave it out")
    if src("gpu_fraction") != ParameterSource.DEFAULT and not cat.get(
            kw["node"], "node", what="node").superchip:  # the superchip row's only
        raise InputError(f"--gpu-fraction applies to the superchip row (SuperOffload); "
                         f"{kw['node']} has no superchip")
    if src("tp") == ParameterSource.DEFAULT:
        node = cat.get(kw["node"], "node", what="node")
        kw["tp"] = default_tp(resolve_model(model, cat), kw["gpus_per_node"] or node.gpus)
    if src("zero") == ParameterSource.DEFAULT:
        kw["zero"] = 3
    if src("recompute") == ParameterSource.DEFAULT:
        kw["recompute"] = Recompute.SELECTIVE.value
    inp = build_inputs(cat, model, dict(kw, offload="none"), strategies_vary=True,
                       step_time=True)
    doc = compare_document(run_compare(cat, inp), kw.get("train"))
    if fmt == "html":
        from optimus_calc.report.html_parts import assumption_rows, with_html
        doc = with_html(doc, kind="compare", assumptions=assumption_rows(inp.assumptions))
    emit(doc, fmt, output)


# compare's own defaults are the docstring's (TP = the node's GPUs, ZeRO-3, selective): the
# shared options' "[default: 1]", "[default: 0]", "[default: none]" would contradict them
for _param in compare.params:
    if _param.name in ("tp", "zero", "recompute"):
        _param.show_default = False
