"""`optimus-calc breakeven MODEL --nodes N [layout] [--device NAME] [--goal hide|fit|match]`."""

from __future__ import annotations

import dataclasses

import click
from click.core import ParameterSource

from optimus_calc.cli.common import emit, plot_option
from optimus_calc.cli.options import LAYOUT_PARAMS, model_options
from optimus_calc.cli.types import FiniteFloat
from optimus_calc.errors import InputError

REFERENCE_KEYS = ("tp", "pp", "dp", "cp", "ep", "etp", "zero", "interleave", "micro-batch",
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
                  "etp": lay.etp, "zero": int(lay.zero), "interleave": lay.interleave,
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
                         etp=vals["etp"], zero=ZeroStage(vals["zero"]), offload=Offload.NONE,
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
@click.option("--sweep", "sweep", type=click.Choice(["global-batch", "micro-batches"]),
              default=None,
              help="Also where the offload starts to pay off: the step with the optimizer on "
                   "the device against the same layout's with it on the GPU, over doubling "
                   "micro-batch sizes at the layout's micro-batches per step (global-batch) or "
                   "its global batch (micro-batches); the break-even batch. --plot draws it.")
@click.option("--save-card", "save_card", default=None, metavar="FILE",
              help="With a SmartNIC --device: write the minimum card (the cheapest corner) "
                   "as a catalog entry (TOML, with its host link) to FILE; load it with "
                   "--catalog-dir and use it with --smartnic NAME.")
@click.option("--save-scale", "save_scale", type=FiniteFloat(0.01, 100), default=1.0,
              show_default=True, metavar="F",
              help="Save the corner with every field times F (e.g. 1.02 for a margin).")
@model_options
@plot_option
@click.pass_context
def breakeven(ctx, model: str, device: str | None, goal: str, reference: str,
              sensitivity: bool, sweep: str | None, save_card: str | None, save_scale: float,
              fmt: str, output: str | None, **kw) -> None:
    """What an offload device must have for offload to pay off: for each hardware parameter
    that enters the equations, alone, the smallest value that meets the goal (current,
    required, ratio, or never and what binds instead), solved in closed form (sympy) where
    the registry's expression can be inverted and by a bracketing search over the evaluator
    otherwise.

    With --device the layout's optimizer goes to that device (--offload may pick cpu, nvme
    or superchip for a CPU); a SmartNIC is also sized as a whole: the smallest multiple of it
    and the cheapest corner of its fields that meet the goal (--save-card writes it as a
    catalog entry), or, when no card can, what binds on the GPU side and what reaches it.
    Without --device, one row per SmartNIC in the catalog and the node's CPU, and
    --offload/--smartnic only choose the layout --sensitivity describes. Without layout
    options, the planner's layout for the node and device."""
    from optimus_calc.cli.options import build_inputs
    from optimus_calc.analyses import breakeven as B
    from optimus_calc.evaluate.hw_params import Joint, system_params
    from optimus_calc.evaluate.strategies import device_params
    from optimus_calc.report.breakeven_view import breakeven_document
    from optimus_calc.specs.training import Offload

    app = ctx.obj
    cat = app.catalog
    explicit = ctx.get_parameter_source("offload") != ParameterSource.DEFAULT
    asked = Offload(kw["offload"]) if explicit else None
    if asked is Offload.NONE and device is not None:
        raise InputError("--offload none: breakeven needs an offload target (leave --offload "
                         "out to use the device's)")
    entry = _device_for(cat, device, kw)
    inp = build_inputs(app, model, kw, strategies_vary=True, step_time=True)
    _offered(asked, inp.hw)
    if inp.training.model_states_only:
        raise InputError("--model-states-only does not apply to breakeven (it needs the step)")
    base = B.Case.of(inp.model, inp.hw, inp.layout, inp.training, inp.assumptions)
    g = B.Goal(goal)
    pinned = [p for p in LAYOUT_PARAMS if ctx.get_parameter_source(p) != ParameterSource.DEFAULT]
    if not pinned:  # the planner's recommended layout for the node with that device
        from optimus_calc.analyses.breakeven.layout import planned_case
        target = B.offload_for(entry, inp.hw, asked) if entry is not None else asked
        base = planned_case(base, target)
        inp = dataclasses.replace(inp, layout=base.layout, training=base.training)

    ref = None
    if g is B.Goal.MATCH:
        ref = _reference(base, inp, reference)
    elif ctx.get_parameter_source("reference") != ParameterSource.DEFAULT:
        raise InputError("--reference applies to --goal match only")
    ref_s = ref.step_time_s if ref else None

    results = []
    chosen = base
    card = None
    if entry is not None:
        chosen = B.device_case(cat, base, entry, B.offload_for(entry, inp.hw, asked))
        results.append(B.solve_device(chosen, g, ref_s))
        if entry.kind == "smartnic":
            card = _minimum_card(chosen, g, ref_s)
    if save_card is not None:
        _save(card, save_card, save_scale, g, model, inp)
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
    swept = _sweep(chosen, sweep, entry)
    doc = breakeven_document(inp, g, results, ref, sens, single=entry is not None, card=card,
                             saved=save_card, planned=not pinned, sweep=swept)
    emit(_page(doc, fmt, inp), fmt, output)


def _page(doc, fmt: str, inp):
    """With --format html, the page also lists the named assumptions and their sources."""
    if fmt != "html":
        return doc
    from optimus_calc.report.html_parts import assumption_rows, with_html
    return with_html(doc, kind="breakeven", assumptions=assumption_rows(inp.assumptions))



def _offered(asked, hw) -> None:
    """--offload typed: a target the node can have (SuperOffload needs a Grace, ZeRO-Infinity
    drives: OffloadStrategy.refusal), as step and memory refuse it."""
    from optimus_calc.evaluate.strategies.registry import strategy
    if asked is not None and (why := strategy(asked).refusal(hw)):
        raise InputError(why)

def _device_for(cat, device: str | None, kw: dict):
    """The --device catalog entry (a SmartNIC also becomes the layout's --smartnic)."""
    if device is None:
        return None
    entry = _device_entry(cat, device)
    if kw.get("smartnic") and entry.kind == "smartnic" and \
            cat.get(kw["smartnic"], "smartnic", what="SmartNIC").name != entry.name:
        raise InputError(f"--smartnic {kw['smartnic']!r} and --device {device!r} disagree; "
                         "give one")
    if entry.kind == "smartnic":
        kw["smartnic"] = entry.name
    return entry


def _reference(base, inp, reference: str):
    """The step time --goal match compares with: best, same or a named layout."""
    from optimus_calc.analyses import breakeven as B
    from optimus_calc.specs.training import Offload

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
    return ref


def _sweep(case, sweep: str | None, entry):
    if sweep is None:
        return None
    if entry is None:
        raise InputError("--sweep needs --device (the device whose offload it weighs)")
    from optimus_calc.analyses.breakeven.sweep import sweep_batch
    return sweep_batch(case, sweep)


def _minimum_card(case, goal, reference_s):
    from optimus_calc.analyses.breakeven.card import minimum_card
    from optimus_calc.analyses.breakeven.reach import reachable

    mc = minimum_card(case, goal, reference_s)
    reach = None
    if mc.multiple is None:
        reach = reachable(case, mc.named, goal, reference_s, mc.state_at_cap)
    return mc, reach


def _save(card, path: str, scale: float, goal, model: str, inp) -> None:
    from optimus_calc.analyses.breakeven.card import scaled
    from optimus_calc.analyses.breakeven.save import card_name, card_toml
    from optimus_calc.cli.common import write_file

    if card is None:
        raise InputError("--save-card needs a SmartNIC --device (the card to size)")
    if not path.endswith(".toml"):  # --catalog-dir loads *.toml files only (case-sensitive)
        raise InputError(f"--save-card {path[:200]!r}: a card is a catalog TOML file; name "
                         "it *.toml")
    mc = card[0]
    if mc.corner is None:
        raise InputError(f"--save-card: no {mc.named.card.name} multiple meets --goal "
                         f"{goal.value} (see the verdict without --save-card)")
    spec = mc.corner if scale == 1.0 else scaled(mc.corner, scale,
                                                 "up" if scale > 1 else "down")
    derivation = (f"optimus-calc breakeven {model} {_layout_flags(inp)} --device "
                  f"{mc.named.card.name} --goal {goal.value}: the cheapest corner for "
                  f"{mc.named.card.name}"
                  + (f", every field x {scale:g}" if scale != 1.0 else ""))
    name = card_name(mc.named.card.name, goal.value, scale)
    _check_name_free(path, name)
    text = card_toml(spec, name, derivation)
    from optimus_calc.catalog import check_entries
    from optimus_calc.errors import CatalogError
    try:  # a card the catalog would refuse to load is not written
        check_entries(text, path)
    except CatalogError as exc:
        raise InputError(f"--save-card: nothing written: the card would not load as a "
                         f"catalog entry ({str(exc)[:300]}); --save-scale scales every "
                         "field") from None
    write_file(path, text, flag="--save-card")


def _layout_flags(inp) -> str:
    """The flags that give ``inp``'s layout and training again, the planner's choices included
    (micro-batch, recompute, SP), so a saved card's derivation reproduces its verdict."""
    hw, lay, tr = inp.hw, inp.layout, inp.training
    out = [f"--node {hw.node.name}", f"--nodes {hw.nodes}"]
    out += [f"--gpu {hw.gpu.name}"] if hw.gpu.name != hw.node.gpu else []
    out += [f"--gpus-per-node {hw.gpus_per_node}"] if hw.gpus_per_node != hw.node.gpus else []
    out += [f"--{k} {getattr(lay, k)}" for k in ("tp", "pp", "dp", "cp", "ep", "interleave")]
    out += [f"--zero {int(lay.zero)}", f"--micro-batch {tr.micro_batch}",
            f"--global-batch {tr.global_batch}", f"--seq-len {tr.seq_len}",
            f"--precision {tr.precision.value}", f"--recompute {tr.recompute.value}",
            "--sp" if tr.sequence_parallel else "--no-sp"]
    key = getattr(inp.framework, "key", None)
    return " ".join(out + ([f"--framework {key}"] if key else []))


def _check_name_free(path: str, name: str) -> None:
    """Two saved cards of one device and goal share a name: in one catalog directory the second
    would break every command that loads it. Refuse when another TOML file of the target's
    directory already defines ``name`` (or its host link)."""
    import os

    from optimus_calc.loaders import toml_file_with
    other = toml_file_with(os.path.dirname(path) or ".", path,
                           (f'name = "{name}"', f'name = "{name}-host-link"'))
    if other is not None:
        raise InputError(f"--save-card {path[:200]!r}: {other[:200]!r} in the "
                         f"same directory already defines {name!r} (a saved card's name is its "
                         "device, goal and --save-scale), which would clash in one catalog: "
                         "save it to another directory or replace that file")
