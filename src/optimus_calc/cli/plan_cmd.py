"""`optimus-calc plan`, `nics` and `sweep`: parse, call the planner (search/), emit (report/)."""

from __future__ import annotations

import click

from optimus_calc.cli.common import emit, output_options, plot_option
from optimus_calc.cli.options import (LAYOUT_PARAMS, model_options, nics_objective_option,
                                      objective_option, pin_options, plan_options, profile_option,
                                      sweep_training_options, train_options)
from optimus_calc.errors import InputError
from optimus_calc.frameworks import export_choices, plugins

MAX_NODES = 1_000_000  # as the --nodes option of plan and the per-layout commands
# sweep runs one planner search per point (about 40 ms each): 1,000 points bound a sweep to under
# a minute; a longer list (20,000 node counts ran for minutes) is an error naming the flags.
MAX_SWEEP_POINTS = 1_000


@click.command()
@click.argument("model")
@plan_options
@train_options
@click.option("--export", type=click.Choice(export_choices()), default=None,
              help="Print (or -o write) the recommended layout instead of the plan, as "
                   + "; ".join(f"{p.exporter.name}: {p.exporter.describes}" for p in plugins()
                               if p.exporter) + ".")
@output_options
@click.pass_obj
def plan_cmd(app, model, objective, top, export, fmt, output, **kw) -> None:
    """Search every layout, recommend one, and size the SmartNICs."""
    from optimus_calc.cli.common import write_file, write_stdout
    from optimus_calc.inputs import build_search_inputs
    from optimus_calc.report import plan_view as V
    from optimus_calc.search.plan import plan_search

    from optimus_calc.cli.options import check_objective
    check_objective(objective, kw.get("train"))
    if export and click.get_current_context().get_parameter_source("fmt") is not \
            click.core.ParameterSource.DEFAULT:  # the launch file has one format: its own
        raise InputError(f"--export writes {export}'s launch file, not a report: leave "
                         f"--format {fmt} out (or drop --export for the plan's {fmt})")
    if export and kw.get("framework") != "any":
        # the layout exported is the best one timed with the exported framework's physics,
        # not another framework's best that it also happens to run
        kw = {**kw, "framework": _exported_search(export, kw.get("framework"))}
    si = build_search_inputs(app.catalog, model, kw)
    res = plan_search(app.catalog, si, objective, top)
    if export is None:
        from optimus_calc.analyses.nics import with_nic_sizing
        res = with_nic_sizing(app.catalog, si, res)
    if export:
        if res.recommended is None:
            raise InputError(f"nothing to export: {res.why}")
        text = V.export_text(export, res.recommended, res.model, res.hw.gpus_per_host)
        if output and output != "-":
            write_file(output, text)  # atomic, never over an input (cli/common.py)
        else:
            write_stdout(text)
        return
    doc = V.plan_document(res, si, kw.get("train"))
    if fmt == "html":  # the page also shows the recommended layout's parts (report/html_parts)
        from optimus_calc.report.html_parts import plan_parts, with_html
        doc = with_html(doc, **plan_parts(res, si, kw.get("train")))
    emit(doc, fmt, output)


def _exported_search(export: str, given: str | None) -> str | None:
    """--framework for a plan behind --export: the exported frameworks among those named (all
    of them without a list); a list naming none of them is an error."""
    from optimus_calc.frameworks import Framework, exported_frameworks
    named = exported_frameworks(export)
    if given in (None, "each"):
        return ",".join(named)
    listed = [f.strip() for f in given.split(",")]
    if not all(f in {x.value for x in Framework} for f in listed):
        return given  # the search's own error names the bad item
    keep = [f for f in listed if f in named]
    if keep:
        return ",".join(keep)
    raise InputError(f"--export {export} writes a layout for {', '.join(named)}; "
                     f"--framework {given} searches none of them")




@click.command()
@click.argument("model")
@model_options
@nics_objective_option
@click.pass_context
def nics(ctx, model, fmt, output, objective, **kw) -> None:
    """How many SmartNICs a cluster needs: to hold each GPU's optimizer shard and to hide the
    optimizer step. Without layout options it sizes for the planner's recommended layout
    (ranked by --objective)."""
    from click.core import ParameterSource

    from optimus_calc.inputs import build_inputs, build_search_inputs
    from optimus_calc.report.nics_view import nics_document
    from optimus_calc.analyses.nics import size_nics
    from optimus_calc.search.plan import plan_search

    cat = ctx.obj.catalog
    if ctx.get_parameter_source("offload") != ParameterSource.DEFAULT:  # it would be ignored
        raise InputError(f"--offload {kw['offload']}: nics sizes the SmartNIC offload of the "
                         "layout; leave it out")
    if kw.get("offload_params"):  # ignored before: the sized offload keeps the weights
        raise InputError("--offload-params: nics sizes the SmartNIC offload, which keeps the "
                         "weights on the GPU (--offload-params needs cpu or nvme); leave it out")
    if ctx.get_parameter_source("gpu_fraction") != ParameterSource.DEFAULT:
        raise InputError("--gpu-fraction applies to --offload superchip; nics sizes the "
                         "SmartNIC offload of the layout: leave it out")
    for flag, given in (("--smartnics-per-node", kw["smartnics_per_node"]),
                        ("--no-spill", kw["no_spill"])):  # the count is what nics solves for
        if given:
            raise InputError(f"{flag}: nics computes the cards each node needs (to hold the "
                             "state without spilling, and to hide the step); leave it out")
    given = [p for p in LAYOUT_PARAMS if ctx.get_parameter_source(p) != ParameterSource.DEFAULT]
    if given or kw["model_states_only"]:
        inp = build_inputs(cat, model, dict(kw, offload="none"), strategies_vary=True)
        mdl, hw, lay, tr, asm = inp.model, inp.hw, inp.layout, inp.training, inp.assumptions
        source = "the given layout"
        fw = inp.framework.text() if inp.framework is not None else ""
        from optimus_calc.report.common import unread_flags_note
        unread = unread_flags_note(inp)
    else:
        shared = {k: v for k, v in kw.items() if k not in LAYOUT_PARAMS + ("offload",)}
        si = build_search_inputs(cat, model, shared)  # the single-layout defaults pin nothing
        res = plan_search(cat, si, objective)
        if res.recommended is None:
            raise InputError(f"nothing to size: {res.why}")
        r = res.recommended
        from optimus_calc.search.plan import recommended_inputs
        rec = recommended_inputs(res, si)  # the physics its row was timed with
        mdl, hw, lay, tr, asm = res.model, res.hw, r.layout, rec.training, rec.assumptions
        source = "the recommended layout"
        fw = (f"{r.framework} profile (the recommended row's)" if r.framework else
              "framework-neutral parameters (--framework any)")
        from optimus_calc.report.common import search_unread_note
        unread = search_unread_note(si)
    sizing = size_nics(cat, mdl, hw, lay, tr, asm, only=kw["smartnic"])
    emit(nics_document(mdl, hw, lay, sizing, source, fw, unread, asm), fmt, output)


def _split(text: str, flag: str) -> list[str]:
    """The items of a comma-separated list; an empty one (``1,,4``: a doubled or trailing
    comma, which may hide a mistyped value) is an error, as parse_ints makes it for numbers."""
    items = [x.strip() for x in text.split(",")]
    if not any(items):
        raise InputError(f"{flag} is empty")
    if not all(items):
        raise InputError(f"{flag}: {text[:40]!r} has an empty item (a doubled or trailing "
                         "comma)")
    return list(dict.fromkeys(items))  # a value given twice is one point


def _counts(text: str) -> list[int]:
    counts = []
    for c in _split(text, "--nodes"):
        # ASCII digits only: str.isdigit() also accepts superscripts such as '²'.
        if not (c.isascii() and c.isdigit()) or int(c) < 1:
            raise InputError(f"--nodes: {c[:40]!r} is not a positive whole number")
        if int(c) > MAX_NODES:
            raise InputError(f"--nodes: {c[:40]} is more than {MAX_NODES:,} nodes "
                             "(the --nodes limit of plan)")
        counts.append(int(c))
    return list(dict.fromkeys(counts))


def _check_points(lists: dict[str, list]) -> None:
    """At most :data:`MAX_SWEEP_POINTS` planner runs, counted after duplicates are dropped."""
    total = 1
    for values in lists.values():
        total *= len(values)
    if total > MAX_SWEEP_POINTS:
        sizes = " x ".join(f"{len(v):,} {flag}" for flag, v in lists.items() if len(v) > 1)
        raise InputError(f"sweep of {total:,} points ({sizes}) is over the limit of "
                         f"{MAX_SWEEP_POINTS:,}; split it into smaller sweeps")


@click.command()
@click.option("--models", required=True, help="Comma-separated models.")
@click.option("--node", "nodes_types", default="dgx-a100", show_default=True,
              help="Comma-separated node types.")
@click.option("--nodes", "node_counts", default="1,2,4,8", show_default=True,
              help="Comma-separated node counts.")
@click.option("--smartnic", "smartnics", default=None, metavar="LIST",
              help="Comma-separated SmartNIC types for the SmartNIC what-if (default: the "
                   "node's own, if it has any).")
@profile_option
@objective_option
@sweep_training_options
@pin_options
@train_options
@output_options
@plot_option
@click.pass_obj
def sweep(app, models, nodes_types, node_counts, smartnics, objective, fmt, output,
          **kw) -> None:
    """One row per model x sequence length x global batch x offload target x node type x node
    count x SmartNIC: the recommended layout and its key figures, for capacity-planning
    spreadsheets (--format csv). --seq-len, --global-batch and --offloads take lists to vary;
    a list of offload targets gives each target its own row."""
    from optimus_calc.analyses.sweep import SweepSpec
    from optimus_calc.analyses.sweep import sweep as run_sweep
    from optimus_calc.inputs import build_search_inputs, offload_choices, parse_ints, search_model
    from optimus_calc.report.sweep_view import sweep_document

    from optimus_calc.cli.options import check_objective
    check_objective(objective, kw.get("train"))
    counts = _counts(node_counts)
    seqs = tuple(dict.fromkeys(parse_ints(kw.pop("seq_len"), "--seq-len", 1, 10_000_000)
                               or (None,)))
    gbs = tuple(dict.fromkeys(parse_ints(kw.pop("global_batch"), "--global-batch", 1,
                                         100_000_000) or (None,)))
    offs, typed = offload_choices(kw)  # typed: the flag an error names for each target
    offs = offs or (None,)
    kw.pop("offloads"), kw.pop("offload")
    cat = app.catalog
    names, types = _split(models, "--models"), tuple(_split(nodes_types, "--node"))
    sns = tuple(_split(smartnics, "--smartnic")) if smartnics is not None else (None,)
    _check_points({"--models": names, "--node": types, "--nodes": counts, "--smartnic": sns,
                   "--seq-len": seqs, "--global-batch": gbs, "--offloads": offs})
    # the shared training, assumptions and search limits, checked once on the first point
    template = build_search_inputs(cat, names[0], dict(
        kw, node=types[0], nodes=counts[0], smartnic=sns[0], seq_len=seqs[0],
        global_batch=gbs[0], offloads=None, offload=None), one_model=False)
    spec = SweepSpec(template, tuple(search_model(cat, m) for m in names), types, tuple(counts),
                     sns, seqs, gbs, offs, kw.get("dropout"), objective)
    _check_moe_flags(spec, kw.get("framework"))
    from optimus_calc.cli.progress import progress_bar
    with progress_bar("sweep") as bar:
        points = run_sweep(cat, spec, progress=bar, typed=typed)
    emit(sweep_document(points, kw.get("train"), kw.get("profile"), template), fmt, output)


def _check_moe_flags(spec, framework) -> None:
    """The MoE launch flags checked against every model of the sweep (the template's checks
    saw the first model only): inputs.check_token_drop, naming the model it refuses, on the
    training as the --framework plug-ins read it (physics.unread_dropped)."""
    from optimus_calc.cli.flags import message
    from optimus_calc.errors import InputError
    from optimus_calc.evaluate.context import check_moe_flags
    from optimus_calc.frameworks.physics import unread_dropped
    from optimus_calc.inputs import check_token_drop
    tr = spec.template.training
    for m in spec.models:
        try:
            check_token_drop(m, tr, spec.template.assumptions, unread_dropped(framework, tr))
            if not any(x.is_moe for x in spec.models):  # MoE-only flags: dense models only
                check_moe_flags(m, spec.template.training, spec.template.assumptions)
        except InputError as exc:
            raise InputError(f"--models {m.name}: {message(exc)}") from None
