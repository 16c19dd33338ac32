"""`optimus-calc step MODEL ...` and `optimus-calc optimizer-step --params N --device NAME`."""

from __future__ import annotations

import click

from optimus_calc.cli.common import emit, output_options
from optimus_calc.cli.options import model_options, train_options
from optimus_calc.errors import InputError


def run_step(app, model: str, kw: dict):
    from optimus_calc.cli.options import build_inputs
    from optimus_calc.evaluate.memory import estimate_memory
    from optimus_calc.evaluate.step import estimate_step
    from optimus_calc.specs.model import BareModel

    inp = build_inputs(app, model, kw)
    if isinstance(inp.model, BareModel):
        raise InputError(f"MODEL {model!r} is a bare parameter count: step time needs an "
                         "architecture (a catalog model or a config.json)")
    if inp.training.model_states_only:
        raise InputError("--model-states-only does not apply to step time")
    mem = estimate_memory(inp.model, inp.hw, inp.layout, inp.training, inp.assumptions)
    st = estimate_step(inp.model, inp.hw, inp.layout, inp.training, inp.assumptions, mem)
    return inp, mem, st


@click.command()
@click.argument("model")
@model_options
@train_options
@click.pass_obj
def step(app, model: str, fmt: str, output: str | None, **kw) -> None:
    """Step time, MFU and throughput of one layout, with the breakdown that produced them."""
    from optimus_calc.report.step_view import step_document
    inp, mem, st = run_step(app, model, kw)
    emit(step_document(inp, mem, st, kw.get("train")), fmt, output)


@click.command("optimizer-step")
@click.option("--params", required=True, help="Parameters to update: 302M, 70e9, 8.75B.")
@click.option("--device", required=True, help="GPU, CPU or SmartNIC (catalog name).")
@click.option("--threads", type=click.IntRange(1, 100_000), default=None,
              help="Threads/cores (CPUs and SoC SmartNICs; default: all).")
@click.option("--count", type=click.IntRange(1, 1_000_000), default=1, show_default=True,
              help="Devices sharing the step.")
@click.option("--sockets", type=click.IntRange(1, 64), default=1, show_default=True,
              help="CPU sockets (CPUs only).")
@click.option("--optimizer", type=click.Choice(["adam", "adamw", "sgd"]), default="adam",
              show_default=True)
@click.option("--impl", type=click.Choice(["fused", "pytorch"]), default="fused",
              show_default=True, help="One fused pass, or torch.optim's per-op kernels (fp32).")
@click.option("--grad-bytes", type=click.IntRange(1, 8), default=None,
              help="Bytes per incoming gradient (default: 4 on CPUs, 2 elsewhere).")
@output_options
@click.pass_obj
def optimizer_step_cmd(app, params, device, threads, count, sockets, optimizer, impl,
                       grad_bytes, fmt, output) -> None:
    """Optimizer-step time of N parameters on one device type: memory/compute roofline."""
    from optimus_calc.evaluate.optimizer import Impl, device_from, optimizer_step
    from optimus_calc.report.step_view import optimizer_document
    from optimus_calc.specs.hardware import CPU
    from optimus_calc.specs.training import Assumptions, Optimizer
    from optimus_calc.units import parse_count

    n = parse_count(params, "--params")
    entry = None
    for kind in ("smartnic", "cpu", "gpu"):
        entry = app.catalog.find(device, kind)
        if entry is not None:
            break
    if entry is None:
        other = app.catalog.find(device)
        if other is not None:
            raise InputError(f"--device {device!r} is a {other.kind}; an optimizer step runs on "
                             "a GPU, CPU or SmartNIC")
        app.catalog.get(device, None, what="device")  # raises with suggestions
    dev = device_from(entry, sockets, Assumptions())
    if threads is not None and not dev.per_core:
        raise InputError(f"--threads applies to CPUs and SoC SmartNICs; {entry.name} is a "
                         f"{dev.kind}, whose optimizer step does not scale with threads")
    gb = grad_bytes or (4 if isinstance(entry, CPU) else 2)
    res = optimizer_step(dev, n, Optimizer(optimizer), Impl(impl), gb, threads, count)
    emit(optimizer_document(entry, dev, n, res, optimizer, impl, count), fmt, output)
