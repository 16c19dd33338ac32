"""`optimus-calc step MODEL ...` and `optimus-calc optimizer-step --params N --device NAME`."""

from __future__ import annotations

import click

from optimus_calc.cli.common import emit, output_options
from optimus_calc.cli.options import model_options, train_options
from optimus_calc.errors import InputError
from optimus_calc.evaluate.optimizer import Impl
from optimus_calc.specs.training import Optimizer


@click.command()
@click.argument("model")
@model_options
@train_options
@click.pass_obj
def step(app, model: str, fmt: str, output: str | None, **kw) -> None:
    """Step time, MFU and throughput of one layout, with the breakdown that produced them."""
    from optimus_calc.evaluate.step import step_of
    from optimus_calc.inputs import build_inputs
    from optimus_calc.report.step_view import step_document

    inp = build_inputs(app.catalog, model, kw, step_time=True)
    mem, st = step_of(inp, model)
    hint = None
    if not mem.fits:
        from optimus_calc.analyses.fit_hint import fit_hint
        hint = fit_hint(lambda k: build_inputs(app.catalog, model, k), kw, inp)
    fit = (mem.fits, hint)
    doc = step_document(inp, mem, st, kw.get("train"), fit=fit)
    if fmt == "html":
        from optimus_calc.report.html_parts import layout_parts, with_html
        doc = with_html(doc, kind="step", **layout_parts(inp, kw.get("train"), step=False))
    emit(doc, fmt, output)


@click.command("optimizer-step")
@click.option("--params", required=True, help="Parameters to update: 302M, 70e9, 8.75B.")
@click.option("--device", required=True, help="GPU, CPU or SmartNIC (catalog name).")
@click.option("--threads", type=click.IntRange(1, 100_000), default=None,
              help="Threads/cores (CPUs and SoC SmartNICs; default: all).")
@click.option("--count", type=click.IntRange(1, 1_000_000), default=1, show_default=True,
              help="Devices sharing the step.")
@click.option("--sockets", type=click.IntRange(1, 64), default=1, show_default=True,
              help="CPU sockets (CPUs only).")
@click.option("--optimizer", type=click.Choice([o.value for o in Optimizer]), default="adam",
              show_default=True)
@click.option("--impl", type=click.Choice([i.value for i in Impl]), default="fused",
              show_default=True, help="One fused pass, or torch.optim's per-op kernels (fp32).")
@click.option("--grad-bytes", type=click.IntRange(1, 8), default=None,
              help="Bytes per incoming gradient (default: 4 on CPUs, 2 elsewhere).")
@output_options
@click.pass_obj
def optimizer_step_cmd(app, params, device, threads, count, sockets, optimizer, impl,
                       grad_bytes, fmt, output) -> None:
    """Optimizer-step time of N parameters on one device type: memory/compute roofline."""
    from optimus_calc.evaluate.optimizer import (Impl, default_grad_bytes, device_from,
                                                 find_device, optimizer_step)
    from optimus_calc.report.step_view import optimizer_document
    from optimus_calc.specs.assumptions import Assumptions
    from optimus_calc.specs.training import Optimizer
    from optimus_calc.units import parse_count

    n = parse_count(params, "--params")
    entry = find_device(app.catalog, device)
    dev = device_from(entry, sockets, Assumptions())
    if threads is not None and not dev.per_core:
        raise InputError(f"--threads applies to CPUs and SoC SmartNICs; {entry.name} is a "
                         f"{dev.kind}, whose optimizer step does not scale with threads")
    if sockets != 1 and dev.kind != "cpu":  # device_from reads it for CPUs only
        raise InputError(f"--sockets applies to CPUs; {entry.name} is a {dev.kind}")
    gb = grad_bytes or default_grad_bytes(entry)
    res = optimizer_step(dev, n, Optimizer(optimizer), Impl(impl), gb, threads, count)
    emit(optimizer_document(entry, dev, n, res, optimizer, impl, count), fmt, output)
