"""Layout/training options shared by memory, fit, step, compare, nics and plan."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Callable

import click

from optimus_calc.cli.types import FiniteFloat

from optimus_calc.errors import InputError
from optimus_calc.specs.training import (Assumptions, Offload, Optimizer, Precision, Recompute,
                                         Training, ZeroStage)

_NUM = re.compile(r"^[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?$|^\.[0-9]+([eE][+-]?[0-9]+)?$")


def hardware_options(func: Callable) -> Callable:
    @click.option("--node", default="dgx-a100", show_default=True, help="Node type (catalog).")
    @click.option("--nodes", type=click.IntRange(1, 1_000_000), default=1, show_default=True,
                  help="Number of nodes.")
    @click.option("--gpu", default=None, help="Override the node's GPU (catalog name).")
    @click.option("--gpus-per-node", type=click.IntRange(1, 1024), default=None,
                  help="Override the node's GPU count.")
    @click.option("--smartnic", default=None,
                  help="SmartNIC for --offload smartnic (default: the node's, else bluefield-3).")
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)
    return wrapper


def training_options(func: Callable) -> Callable:
    @click.option("--seq-len", type=click.IntRange(1, 10_000_000), default=None,
                  help="Sequence length (default: the model's).")
    @click.option("--micro-batch", type=click.IntRange(1, 1_000_000), default=1,
                  show_default=True, help="Micro-batch size per GPU.")
    @click.option("--global-batch", type=click.IntRange(1, 100_000_000), default=None,
                  help="Global batch in sequences (default: 512, rounded up to a multiple of "
                       "dp x micro-batch).")
    @click.option("--precision", type=click.Choice([p.value for p in Precision]),
                  default="bf16", show_default=True)
    @click.option("--optimizer", type=click.Choice([o.value for o in Optimizer]),
                  default="adam", show_default=True)
    @click.option("--grad-bytes", type=click.IntRange(1, 8), default=None,
                  help="Bytes per gradient on the GPU (default: as the weights; 4 gives the "
                       "18 bytes/param DeepSpeed/Megatron convention).")
    @click.option("--recompute", type=click.Choice([r.value for r in Recompute]),
                  default="none", show_default=True, help="Activation recomputation.")
    @click.option("--sp/--no-sp", default=True, show_default=True,
                  help="Sequence parallelism (with TP > 1).")
    @click.option("--flash-attn/--no-flash-attn", default=True, show_default=True,
                  help="FlashAttention (no s^2 score matrices stored).")
    @click.option("--dropout/--no-dropout", default=True, show_default=True,
                  help="Dropout masks stored (Korthikanti's formulas assume dropout).")
    @click.option("--multicast", is_flag=True,
                  help="Parameter all-gathers (ZeRO/FSDP) use hardware multicast.")
    @click.option("--model-states-only", is_flag=True,
                  help="Only weights, gradients and optimizer state (papers' arithmetic).")
    @click.option("--assume", "assume", multiple=True, metavar="NAME=VALUE",
                  help="Override a named assumption (see `optimus-calc explain --assumptions`).")
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)
    return wrapper


def layout_options(func: Callable) -> Callable:
    @click.option("--tp", type=click.IntRange(1, 1_000_000), default=1, show_default=True)
    @click.option("--pp", type=click.IntRange(1, 1_000_000), default=1, show_default=True)
    @click.option("--dp", type=click.IntRange(1, 1_000_000), default=None,
                  help="Data-parallel degree (default: the GPUs left after tp x pp x cp).")
    @click.option("--cp", type=click.IntRange(1, 1_000_000), default=1, show_default=True)
    @click.option("--ep", type=click.IntRange(1, 1_000_000), default=1, show_default=True)
    @click.option("--interleave", type=click.IntRange(1, 1000), default=1, show_default=True,
                  help="Model chunks per GPU (interleaved 1F1B).")
    @click.option("--zero", type=click.IntRange(0, 3), default=0, show_default=True,
                  help="ZeRO stage 0-3.")
    @click.option("--offload", type=click.Choice([o.value for o in Offload]), default="none",
                  show_default=True, help="Where the optimizer state goes.")
    @click.option("--offload-params", is_flag=True, help="Also offload weights (ZeRO-3).")
    @click.option("--smartnics-per-node", type=click.IntRange(1, 1024), default=None,
                  help="SmartNICs per node (default: one per GPU).")
    @click.option("--no-spill", is_flag=True,
                  help="SmartNIC state may not spill to host RAM.")
    @click.option("--gpu-fraction", type=FiniteFloat(0, 1), default=0.0, show_default=True,
                  help="SuperOffload: fraction of optimizer state kept on the GPU.")
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)
    return wrapper


def parse_assumptions(items: tuple[str, ...]) -> Assumptions:
    base = Assumptions()
    values: dict[str, float] = {}
    for item in items:
        if "=" not in item:
            raise InputError(f"--assume {item!r}: expected NAME=VALUE")
        name, _, raw = item.partition("=")
        name, raw = name.strip(), raw.strip()
        if name not in base.names():
            raise InputError(f"--assume {name!r}: unknown assumption; known: "
                             f"{', '.join(base.names())}")
        if not _NUM.match(raw):
            raise InputError(f"--assume {name}={raw!r}: not a number")
        values[name] = float(raw)
    try:
        return Assumptions(**values)
    except ValueError as exc:
        first = exc.errors()[0]  # type: ignore[attr-defined]
        raise InputError(f"--assume {first['loc'][0]}: {first['msg']}") from None


@dataclass
class Inputs:
    model: object
    hw: object
    layout: object
    training: Training
    assumptions: Assumptions
    global_batch_defaulted: bool
    seq_len_defaulted: bool


DEFAULT_GLOBAL_BATCH = 512


_TRAINING_FLAGS = {"seq_len": "--seq-len", "micro_batch": "--micro-batch",
                   "global_batch": "--global-batch", "grad_bytes": "--grad-bytes"}


def make_training(origins: dict[str, str] | None = None, **fields) -> Training:
    """``Training(**fields)``, its validation errors as InputErrors naming the flag the user
    typed; ``origins`` explains a value the user did not type (a default derived from others)."""
    from pydantic import ValidationError
    try:
        return Training(**fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        name = str(first["loc"][0]) if first["loc"] else ""
        msg = str(first["msg"]).removeprefix("Value error, ")
        flag = _TRAINING_FLAGS.get(name, name)
        value = fields.get(name)
        origin = (origins or {}).get(name)
        if origin:
            raise InputError(f"{origin} is {value}: {msg}; give {flag}") from None
        raise InputError(f"{flag} {value}: {msg}") from None


def training_from(kw: dict, model, dp: int) -> tuple[Training, bool, bool]:
    from optimus_calc.specs.model import Model
    seq = kw["seq_len"] or (model.seq_len if isinstance(model, Model) else 2048)
    per = dp * kw["micro_batch"]
    gb = kw["global_batch"]
    defaulted = gb is None
    if gb is None:
        gb = -(-DEFAULT_GLOBAL_BATCH // per) * per
    origins = {"global_batch": f"the default global batch ({DEFAULT_GLOBAL_BATCH} rounded up to "
                               f"a multiple of dp {dp} x --micro-batch {kw['micro_batch']})"}
    if kw["seq_len"] is None:
        origins["seq_len"] = f"the sequence length of {getattr(model, 'name', 'the model')}"
    tr = make_training(origins, seq_len=seq, micro_batch=kw["micro_batch"], global_batch=gb,
                  precision=kw["precision"], optimizer=kw["optimizer"],
                  grad_bytes=kw["grad_bytes"] or 0, recompute=kw["recompute"],
                  sequence_parallel=kw["sp"], flash_attention=kw["flash_attn"],
                  dropout=kw["dropout"], model_states_only=kw["model_states_only"],
                  multicast=kw["multicast"])
    return tr, defaulted, kw["seq_len"] is None


def build_inputs(app, model_text: str, kw: dict) -> Inputs:
    """Resolve MODEL and every shared option into validated specs."""
    from optimus_calc.evaluate.context import check_layout, fill_layout, resolve_hardware
    from optimus_calc.inputs import resolve_model
    from optimus_calc.specs.model import BareModel

    cat = app.catalog
    model = resolve_model(model_text, cat)
    hw = resolve_hardware(cat, kw["node"], kw["nodes"], kw["gpu"], kw["gpus_per_node"],
                          kw["smartnic"])
    layout = fill_layout(
        hw, kw["tp"], kw["pp"], kw["dp"], kw["cp"], ep=kw["ep"], zero=ZeroStage(kw["zero"]),
        offload=Offload(kw["offload"]), interleave=kw["interleave"],
        offload_params=kw["offload_params"], smartnic=hw.smartnic.name if hw.smartnic else None,
        smartnics_per_node=kw["smartnics_per_node"] or 0,
        superchip_gpu_fraction=kw["gpu_fraction"], allow_spill=not kw["no_spill"])
    tr, gb_default, seq_default = training_from(kw, model, layout.dp)
    if isinstance(model, BareModel) and not tr.model_states_only:
        raise InputError(f"MODEL {model_text!r} is a bare parameter count: activations need an "
                         "architecture; add --model-states-only or give a catalog model or "
                         "config.json")
    check_layout(model, layout, tr)
    return Inputs(model, hw, layout, tr, parse_assumptions(kw["assume"]), gb_default,
                  seq_default)


def model_options(func: Callable) -> Callable:
    """Everything a per-layout command takes: hardware, layout, training and output options."""
    from optimus_calc.cli.common import output_options
    return hardware_options(layout_options(training_options(output_options(func))))


def train_options(func: Callable) -> Callable:
    """``--tokens N`` and ``--gpu-hour-price USD`` (plan, step, compare, sweep): time, energy and
    cost to train. The command reads ``kw["train"]``, a report.common.TrainRequest or None."""
    @click.option("--tokens", "tokens", default=None, metavar="N",
                  help="Training token budget, e.g. 15T or 2e12: adds steps, days, GPU-hours, "
                       "energy (GPU TDP x --assume pue) and, with --gpu-hour-price, cost.")
    @click.option("--gpu-hour-price", "gpu_hour_price", type=FiniteFloat(0, 1e6), default=None,
                  metavar="USD", help="Price of one GPU-hour, for cost_usd (needs --tokens).")
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        from optimus_calc.report.common import TrainRequest
        from optimus_calc.units import parse_count
        tokens, price = kwargs.pop("tokens"), kwargs.pop("gpu_hour_price")
        if price is not None and tokens is None:
            raise InputError("--gpu-hour-price needs --tokens (the budget it prices)")
        kwargs["train"] = (TrainRequest(parse_count(tokens, "--tokens"), price)
                           if tokens is not None else None)
        return func(*args, **kwargs)
    return wrapper
