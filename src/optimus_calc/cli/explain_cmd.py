"""`optimus-calc explain [NAME] [MODEL ...]`: the equations, their sources, and their values."""

from __future__ import annotations

import dataclasses

import click

from optimus_calc.cli.common import emit
from optimus_calc.cli.options import model_options, train_options
from optimus_calc.errors import InputError


@click.command()
@click.argument("name", required=False)
@click.argument("model", required=False)
@click.option("--latex", is_flag=True, help="Print the expression as LaTeX.")
@click.option("--assumptions", "show_assumptions", is_flag=True,
              help="List the named assumptions (--assume NAME=VALUE) instead.")
@click.option("--all", "show_all", is_flag=True,
              help="explain --all MODEL [layout]: every equation evaluated for the layout, "
                   "with its inputs and result, grouped by evaluator stage.")
@click.option("--for", "scope", default=None, metavar="SCOPE",
              help="Which evaluation of an equation computed more than once (e.g. tp, cp, dp, "
                   "forward, backward); default: the last.")
@click.option("--stage", "pipeline_stage", type=click.IntRange(0), default=None, metavar="N",
              help="Values at pipeline stage N instead of the stage that binds each figure.")
@train_options
@model_options
@click.pass_obj
def explain(app, name: str | None, model: str | None, latex: bool, show_assumptions: bool,
            show_all: bool, scope: str | None, pipeline_stage: int | None, train, fmt: str,
            output: str | None, **kw) -> None:
    """List the equations, or print one with its source; given MODEL and a layout, print every
    symbol's value and the result, computed from the expression shown. With --all MODEL, every
    equation the evaluator computed for the layout."""
    from optimus_calc.report import explain_view as V

    if show_all:
        _explain_all(app, name, model, pipeline_stage, train, fmt, output, kw)
        return
    if show_assumptions:
        _assumptions(kw, fmt, output)
        return
    if name is None:
        emit(V.list_document(), fmt, output)
        return
    eq = V.find_equation(name)
    if model is None and (scope is not None or pipeline_stage is not None):
        raise InputError(f"{'--for' if scope is not None else '--stage'} picks values of a "
                         f"layout: give MODEL (explain {name} MODEL [layout options])")
    if model is None and (typed := _typed_layout_flag()):
        raise InputError(f"{typed} sets the values of a layout: give MODEL (explain {name} "
                         "MODEL [layout options]); without it the equation has no values")
    values, scopes, shown, choice, moe = None, [], scope, None, ([], {})
    if model is not None:
        values, scopes, shown, choice, moe = _values(app, eq.name, model, kw, pipeline_stage,
                                                     scope, train)
    doc = V.equation_document(eq, values, latex)
    if moe[1]:  # an MoE model's typed and applied --moe-imbalance, and the note where capped
        doc = dataclasses.replace(doc, notes=doc.notes + moe[0], data={**doc.data, **moe[1]})
    if choice is not None:  # whose physics the values are: step's and memory's header and key
        doc = dataclasses.replace(doc, notes=doc.notes + [f"values under the {choice.text()}"],
                                  data={**doc.data, "physics_profile": choice.data()})
    if scopes and (len(scopes) > 1 or shown):
        doc = dataclasses.replace(doc, notes=doc.notes + [
            f"evaluated for {', '.join(scopes)}; shown: {shown} (--for SCOPE picks one; "
            "'explain --all' lists each)"])
    emit(doc, fmt, output)

# the flags `explain --assumptions` shows the values of (inputs.assumptions_from)
_ASSUMPTION_FLAGS = {"assume", "profile", "headroom", "moe_imbalance"}


def _assumptions(kw, fmt, output) -> None:
    """`explain --assumptions`: each named assumption's default and, with --assume, --profile
    (or OPTIMUS_CALC_PROFILE), --headroom or --moe-imbalance, the value in effect."""
    from optimus_calc.inputs import assumptions_from
    from optimus_calc.report import explain_view as V

    if (typed := _typed_layout_flag(_ASSUMPTION_FLAGS)) is not None:
        raise InputError(f"{typed} describes a layout; explain --assumptions takes only "
                         "--assume, --profile, --headroom and --moe-imbalance")
    given = bool(kw.get("assume")) or any(kw.get(k) is not None for k in _ASSUMPTION_FLAGS
                                          - {"assume"})
    emit(V.assumptions_document(assumptions_from(kw) if given else None), fmt, output)


def _explain_all(app, name, model, pipeline_stage, train, fmt, output, kw) -> None:
    """`explain --all MODEL [layout]` (MODEL is the first argument)."""
    from optimus_calc.analyses.explain import evaluated_equations
    from optimus_calc.inputs import build_inputs
    from optimus_calc.report import explain_view as V

    if name is None or model is not None:
        raise InputError("explain --all takes one MODEL and layout options (no equation NAME)")
    from optimus_calc.report.common import applied_imbalance, imbalance_note

    inp = build_inputs(app.catalog, name, kw)
    rows = evaluated_equations(inp, pipeline_stage, train.tokens if train else None,
                               train.gpu_hour_price if train else None)
    doc = V.all_document(rows, name)
    # an MoE model's typed and applied --moe-imbalance, and the note where the layout caps it
    moe = applied_imbalance(inp.model, inp.assumptions, inp.layout, typed=True)
    emit(dataclasses.replace(doc, data={**doc.data, **moe}, notes=doc.notes + imbalance_note(
        inp.model, inp.assumptions, inp.layout)), fmt, output)


def _values(app, name, model, kw, pipeline_stage, scope, train):
    """(values, scopes, shown, choice, moe) of equation ``name`` for the layout: the
    evaluator's call (by default its last scope), else one of the figures `explain --all` adds
    (training time with --tokens; the collectives, by default the first scope: the collective
    over every GPU, before the algorithms that reuse its equation on part of them); ``shown``
    the scope whose values these are; ``choice`` the framework profile applied
    (frameworks.physics.Choice, or
    None); ``moe`` the note where the layout caps --moe-imbalance and an MoE model's typed and
    applied values (report.common: ([], {}) for a dense model)."""
    from optimus_calc.analyses.explain import evaluated_equations
    from optimus_calc.evaluate.memory import equation_values
    from optimus_calc.inputs import build_inputs
    from optimus_calc.report.common import applied_imbalance, imbalance_note

    inp = build_inputs(app.catalog, model, kw)
    physics = getattr(inp, "framework", None)
    moe = (imbalance_note(inp.model, inp.assumptions, inp.layout),
           applied_imbalance(inp.model, inp.assumptions, inp.layout, typed=True))
    try:
        values, scopes = equation_values(inp, name, pipeline_stage, scope)
        return values, scopes, scope or (scopes[-1] if scopes else None), physics, moe
    except InputError as err:
        rows = [r for r in evaluated_equations(inp, pipeline_stage,
                                               train.tokens if train else None,
                                               train.gpu_hour_price if train else None)
                if r.name == name and r.stage in ("training", "collectives")
                and scope in (None, r.scope)]
        if not rows:
            raise err
        return rows[0].inputs, [r.scope for r in rows], rows[0].scope, physics, moe


# the options of explain itself; every other option describes the layout and its training
_OWN = {"name", "model", "latex", "show_assumptions", "show_all", "scope", "pipeline_stage",
        "fmt", "output", "csv_sep", "csv_decimal"}


def _typed_layout_flag(allowed: set[str] = frozenset()) -> str | None:
    """The first layout or training option typed on the command line (its flag), or None;
    ``allowed``: options not counted."""
    from click.core import ParameterSource
    ctx = click.get_current_context()
    for p in ctx.command.params:
        if (p.name not in _OWN | allowed and isinstance(p, click.Option)
                and ctx.get_parameter_source(p.name) is ParameterSource.COMMANDLINE):
            return p.opts[0]
    return None
