"""`optimus-calc fit MODEL --solve layers|nodes|micro-batch`."""

from __future__ import annotations

import click

from optimus_calc.cli.common import emit
from optimus_calc.cli.options import model_options
from optimus_calc.analyses.fit import Solve, node_unit


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

    kind = Solve(what)
    if kind is Solve.NODES:  # --nodes is only where the search is shown: one the layout runs at
        kw = dict(kw, nodes=_holding(app.catalog, kw))
    inp = build_inputs(app.catalog, model, kw)
    res = solve(kind, inp)
    why = explain_fit(kind.value, inp, res)
    emit(fit_document(inp, kind, res, why), fmt, output)


def _holding(cat, kw: dict) -> int:
    """For --solve nodes: --nodes raised to the next multiple of the fewest nodes holding
    the layout (TP 8 x PP 16 on 8-GPU nodes: 16; EP 16: 2, analyses/fit.node_unit), so that
    the layout is checked where it can run instead of refused at the default --nodes 1."""
    per = kw["gpus_per_node"] or cat.get(kw["node"], "node", what="node").gpus
    unit = node_unit(per, kw["tp"], kw["pp"], kw["cp"], kw["ep"], kw.get("etp"))
    return -(-kw["nodes"] // unit) * unit
