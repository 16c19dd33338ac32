"""`optimus-calc breakeven MODEL --nodes N [layout] [--device NAME] [--goal hide|fit|match]`."""

from __future__ import annotations

import click
from click.core import ParameterSource

from optimus_calc.cli.common import emit, plot_option
from optimus_calc.cli.options import model_options
from optimus_calc.errors import InputError

REFERENCE_KEYS = ("tp", "pp", "dp", "cp", "ep", "zero", "interleave", "micro-batch",
                  "recompute", "sp")


def _device_entry(cat, name: str):
    for kind in ("smartnic", "cpu"):
        entry = cat.find(name, kind)
        if entry is not None:
            return entry
    other = cat.find(name)
    if other is not None:
        raise InputError(f"--device {name!r} is a {other.kind}; breakeven takes an offload "
                         "device: a SmartNIC, DPU or FPGA card, or a CPU")
    cat.get(name, None, what="device (SmartNIC or CPU)")  # raises, with suggestions
    raise AssertionError("unreachable")  # pragma: no cover


def parse_reference(text: str, inp):
    """``--reference tp=8,pp=1,zero=3,...``: a layout without offload; keys not given keep the
    command's values, dp defaults to the GPUs left."""
    from optimus_calc.evaluate.context import check_layout, fill_layout
    from optimus_calc.specs.training import Offload, Recompute, ZeroStage

    lay, tr = inp.layout, inp.training
    vals: dict = {"tp": lay.tp, "pp": lay.pp, "dp": None, "cp": lay.cp, "ep": lay.ep,
                  "zero": int(lay.zero), "interleave": lay.interleave,
                  "micro-batch": tr.micro_batch, "recompute": tr.recompute.value,
                  "sp": "on" if tr.sequence_parallel else "off"}
    for item in text.split(","):
        key, eq, raw = item.partition("=")
        key, raw = key.strip().lower(), raw.strip().lower()
        if not eq or key not in REFERENCE_KEYS:
            raise InputError(f"--reference {text!r}: expected best, same or KEY=VALUE,... with "
                             f"keys {', '.join(REFERENCE_KEYS)}")
        if key == "recompute":
            if raw not in [r.value for r in Recompute]:
                raise InputError(f"--reference recompute={raw!r}: not one of none, selective, "
                                 "full")
            vals[key] = raw
        elif key == "sp":
            if raw not in ("on", "off"):
                raise InputError(f"--reference sp={raw!r}: expected on or off")
            vals[key] = raw
        else:
            if not raw.isdigit() or int(raw) < (0 if key == "zero" else 1) or len(raw) > 7:
                raise InputError(f"--reference {key}={raw!r}: expected a positive integer")
            vals[key] = int(raw)
    if vals["zero"] > 3:
        raise InputError(f"--reference zero={vals['zero']}: ZeRO stages are 0-3")
    layout = fill_layout(inp.hw, vals["tp"], vals["pp"], vals["dp"], vals["cp"], ep=vals["ep"],
                         zero=ZeroStage(vals["zero"]), offload=Offload.NONE,
                         interleave=vals["interleave"])
    training = tr.model_copy(update={"micro_batch": vals["micro-batch"],
                                     "recompute": Recompute(vals["recompute"]),
                                     "sequence_parallel": vals["sp"] == "on"})
    check_layout(inp.model, layout, training)
    return layout, training


@click.command()
@click.argument("model")
@click.option("--device", default=None, metavar="NAME",
              help="Offload device: a SmartNIC/DPU/FPGA card or a CPU (catalog name). Default: "
                   "every card in the catalog and the node's CPU, one row each.")
@click.option("--goal", type=click.Choice(["hide", "fit", "match"]), default="hide",
              show_default=True,
              help="hide: optimizer step and transfers hidden in the step; fit: the optimizer "
                   "shard fits on the device without spilling; match: step time no longer "
                   "than the reference's.")
@click.option("--reference", default="best", show_default=True, metavar="best|same|SPEC",
              help="For --goal match: the fastest layout without offload (best), this layout "
                   "with the optimizer on the GPU (same), or KEY=VALUE,... (tp, pp, dp, cp, "
                   "ep, zero, interleave, micro-batch, recompute, sp).")
@click.option("--sensitivity", is_flag=True,
              help="Also the elasticity of step time (and GPU memory headroom) to each "
                   "hardware parameter of the layout (+1% finite difference); with --format "
                   "csv the CSV is this table.")
@model_options
@plot_option
@click.pass_context
def breakeven(ctx, model: str, device: str | None, goal: str, reference: str,
              sensitivity: bool, fmt: str, output: str | None, **kw) -> None:
    """What an offload device must have for offload to pay off: for each hardware parameter
    that enters the equations, alone, the smallest value that meets the goal (current,
    required, ratio, or never and what binds instead), solved in closed form (sympy) where
    the registry's expression can be inverted and by a bracketing search over the evaluator
    otherwise.

    With --device the layout's optimizer goes to that device (--offload may pick cpu, nvme
    or superchip for a CPU); without it, one row per SmartNIC in the catalog and the node's
    CPU, and --offload/--smartnic only choose the layout --sensitivity describes."""
    from optimus_calc.cli.options import build_inputs
    from optimus_calc.analyses import breakeven as B
    from optimus_calc.evaluate.hw_params import Joint, device_params, system_params
    from optimus_calc.report.breakeven_view import breakeven_document
    from optimus_calc.specs.model import Model
    from optimus_calc.specs.training import Offload

    app = ctx.obj
    cat = app.catalog
    explicit = ctx.get_parameter_source("offload") != ParameterSource.DEFAULT
    asked = Offload(kw["offload"]) if explicit else None
    if asked is Offload.NONE and device is not None:
        raise InputError("--offload none: breakeven needs an offload target (leave --offload "
                         "out to use the device's)")
    entry = None
    if device is not None:
        entry = _device_entry(cat, device)
        if kw.get("smartnic") and entry.kind == "smartnic" and \
                cat.get(kw["smartnic"], "smartnic", what="SmartNIC").name != entry.name:
            raise InputError(f"--smartnic {kw['smartnic']!r} and --device {device!r} disagree; "
                             "give one")
        if entry.kind == "smartnic":
            kw["smartnic"] = entry.name
    inp = build_inputs(app, model, kw)
    if not isinstance(inp.model, Model):
        raise InputError(f"MODEL {model!r} is a bare parameter count: breakeven needs an "
                         "architecture (a catalog model or a config.json)")
    if inp.training.model_states_only:
        raise InputError("--model-states-only does not apply to breakeven (it needs the step)")
    base = B.Case.of(inp.model, inp.hw, inp.layout, inp.training, inp.assumptions)
    g = B.Goal(goal)

    ref = None
    if g is B.Goal.MATCH:
        if reference == "best":
            ref = B.best_without_offload(base)
            if ref is None:
                raise InputError(f"--goal match: no layout of {inp.model.name} fits on "
                                 f"{inp.hw.nodes} x {inp.hw.node.name} without offload; name "
                                 "one with --reference KEY=VALUE,...")
        elif reference == "same":
            ref = B.reference_of(base, inp.layout.model_copy(
                update={"offload": Offload.NONE, "smartnic": None}), inp.training,
                "this layout with the optimizer on the GPU")
        else:
            lay, tr = parse_reference(reference, inp)
            ref = B.reference_of(base, lay, tr, "the named layout")
    elif ctx.get_parameter_source("reference") != ParameterSource.DEFAULT:
        raise InputError("--reference applies to --goal match only")
    ref_s = ref.step_time_s if ref else None

    results = []
    chosen = base
    if entry is not None:
        chosen = B.device_case(cat, base, entry, B.offload_for(entry, inp.hw, asked))
        results.append(B.solve_device(chosen, g, ref_s))
    else:
        for dev, off in B.catalog_devices(cat, inp.hw):
            results.append(B.solve_device(B.device_case(cat, base, dev, off), g, ref_s,
                                          lift=False))
    sens = None
    if sensitivity:
        params = system_params(chosen.hw, inp.training.precision.value)
        seen = {p.key for p in params}
        params += [p for p in device_params(chosen.hw, chosen.layout.offload)
                   if p.key not in seen and not isinstance(p, Joint)]
        sens = (chosen, B.sensitivity(chosen, params))
    emit(breakeven_document(inp, g, results, ref, sens, single=entry is not None), fmt, output)
