"""Resolve what the user typed into specs: a model name, a config.json path, or a count, and
the option values of a command into validated specs (:func:`build_inputs` for one layout,
:func:`build_search_inputs` for the planner). Pure: no click, no printing; the CLI parses."""

from __future__ import annotations

import re
import stat
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from optimus_calc.catalog import Catalog
from optimus_calc.errors import InputError
from optimus_calc.loaders import safe_stat
from optimus_calc.specs.model import BareModel, Model
from optimus_calc.specs.training import (Assumptions, Layout, Offload, Recompute, Training,
                                         ZeroStage)
from optimus_calc.units import looks_like_count, parse_count

if TYPE_CHECKING:
    from optimus_calc.evaluate.context import Hardware

E = TypeVar("E", bound=Enum)


def resolve_model(text: str, cat: Catalog) -> Model | BareModel:
    """A catalog name or alias, a path to a Hugging Face config.json, or a parameter count."""
    raw = str(text).strip()
    if not raw:
        raise InputError("MODEL is empty; give a catalog name, a config.json path or a count")
    entry = cat.find(raw, "model")
    if entry is not None:
        return entry  # type: ignore[return-value]
    st = safe_stat(raw)  # never raises: a name too long for the file system is "no file"
    is_dir = st is not None and stat.S_ISDIR(st.st_mode)
    # Any existing non-directory (a file, or a FIFO or device the loader will refuse by name).
    if raw.endswith(".json") or "/" in raw or (st is not None and not is_dir):
        from optimus_calc.hf_import import load_hf_config
        if is_dir:
            raw = str(Path(raw) / "config.json")
            st = safe_stat(raw)
        if st is None:
            raise InputError(f"MODEL {raw[:200]!r}: no such file")
        return load_hf_config(raw)
    if looks_like_count(raw):
        return BareModel(name=raw, total_params=parse_count(raw, "MODEL"))
    cat.get(raw, "model", what="model")  # raises with did-you-mean
    raise AssertionError("unreachable")


# ---- option values -> validated specs -------------------------------------------------------
# ``kw`` below is the dict of option values the shared option stack (cli/options.py) produces;
# these functions are pure (no click): the CLI parses, this module resolves and validates.

_NUM = re.compile(r"^[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?$|^\.[0-9]+([eE][+-]?[0-9]+)?$")

DEFAULT_GLOBAL_BATCH = 512


def parse_assumptions(items: tuple[str, ...] | list[str]) -> Assumptions:
    """``--assume NAME=VALUE`` items into :class:`Assumptions` (plain decimal numbers only)."""
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


def parse_choices(text: str | None, enum: type[E], flag: str) -> tuple[E, ...] | None:
    """A comma-separated list of an Enum's values (``--offloads none,cpu``); None when empty."""
    if not text:
        return None
    out = []
    for item in text.split(","):
        try:
            out.append(enum(item.strip()))
        except ValueError:
            raise InputError(f"{flag}: {item.strip()!r} is not one of "
                             f"{', '.join(str(e.value) for e in enum)}") from None
    return tuple(out)


@dataclass(frozen=True)
class Inputs:
    """One layout's validated specs (`memory`, `step`, `compare`, `fit`, `nics`, `explain`)."""

    model: Model | BareModel
    hw: Hardware
    layout: Layout
    training: Training
    assumptions: Assumptions
    global_batch_defaulted: bool
    seq_len_defaulted: bool


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
    """The single-layout Training; the default global batch is 512 rounded up to a multiple of
    dp x micro-batch. Returns (training, global batch defaulted, sequence defaulted)."""
    seq = kw["seq_len"] or (model.seq_len if isinstance(model, Model) else 2048)
    per = dp * kw["micro_batch"]
    gb = kw["global_batch"]
    defaulted = gb is None
    if gb is None:
        gb = -(-DEFAULT_GLOBAL_BATCH // per) * per
    origins = {"global_batch": f"the default global batch ({DEFAULT_GLOBAL_BATCH} rounded up to "
                               f"a multiple of dp {dp} x --micro-batch {kw['micro_batch']})"}
    if kw["seq_len"] is None:
        origins["seq_len"] = f"the sequence length of {model.name}"
    tr = make_training(origins, seq_len=seq, micro_batch=kw["micro_batch"], global_batch=gb,
                  precision=kw["precision"], optimizer=kw["optimizer"],
                  grad_bytes=kw["grad_bytes"] or 0, recompute=kw["recompute"],
                  sequence_parallel=kw["sp"], flash_attention=kw["flash_attn"],
                  dropout=kw["dropout"], model_states_only=kw["model_states_only"],
                  multicast=kw["multicast"])
    return tr, defaulted, kw["seq_len"] is None


def build_inputs(cat: Catalog, model_text: str, kw: dict) -> Inputs:
    """Resolve MODEL and every single-layout option into validated specs."""
    from optimus_calc.evaluate.context import check_layout, fill_layout, resolve_hardware

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


def default_global_batch(gpus: int) -> int:
    """The planner's default: 512 sequences, or the GPU count rounded up to a power of two on
    larger clusters."""
    return max(DEFAULT_GLOBAL_BATCH, 1 << (gpus - 1).bit_length())


@dataclass(frozen=True)
class SearchInputs:
    """What the planner (`plan`, `sweep`, `nics` without a layout) searches over."""

    model: Model
    hw: Hardware
    training: Training          # the fields every layout shares
    assumptions: Assumptions
    offloads: tuple[Offload, ...] | None = None      # None: all the node offers
    recomputes: tuple[Recompute, ...] | None = None  # None: every mode
    max_zero: int = 3
    distinct: bool = False
    seq_len_defaulted: bool = False
    global_batch_defaulted: bool = False


def build_search_inputs(cat: Catalog, model_text: str, kw: dict) -> SearchInputs:
    """Resolve MODEL, the hardware and the shared training options for a search. ``kw`` may
    carry the search limits (offloads, recomputes, max_zero, distinct)."""
    from optimus_calc.evaluate.context import resolve_hardware
    from optimus_calc.search.plan import offload_targets

    model = resolve_model(model_text, cat)
    if not isinstance(model, Model):
        raise InputError(f"MODEL {model_text!r} is a bare parameter count: planning needs an "
                         "architecture (a catalog model or a config.json)")
    hw = resolve_hardware(cat, kw["node"], kw["nodes"], kw.get("gpu"), kw.get("gpus_per_node"),
                          kw.get("smartnic"))
    origins = {"global_batch": f"the default global batch (the {hw.gpus} GPUs rounded up to a "
                               "power of two)", "seq_len": f"the sequence length of {model.name}"}
    tr = make_training(origins, seq_len=kw["seq_len"] or model.seq_len,
                       global_batch=kw["global_batch"] or default_global_batch(hw.gpus),
                       precision=kw["precision"], optimizer=kw["optimizer"],
                       grad_bytes=kw["grad_bytes"] or 0, flash_attention=kw["flash_attn"],
                       dropout=kw["dropout"], multicast=kw["multicast"])
    asm = parse_assumptions(kw["assume"])
    offloads = parse_choices(kw.get("offloads"), Offload, "--offloads")
    if offloads:
        offered = offload_targets(hw)
        for o in offloads:
            if o not in offered:
                raise InputError(f"--offloads {o.value}: {hw.node.name} does not offer it "
                                 f"(offers {', '.join(x.value for x in offered)})")
    max_zero = kw.get("max_zero")
    return SearchInputs(
        model, hw, tr, asm, offloads,
        parse_choices(kw.get("recomputes"), Recompute, "--recompute"),
        3 if max_zero is None else int(max_zero), bool(kw.get("distinct")),
        kw["seq_len"] is None, kw["global_batch"] is None)
