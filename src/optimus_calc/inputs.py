"""Resolve what the user typed into specs: a model name, a config.json path, or a count, and
the option values of a command into validated specs (:func:`build_inputs` for one layout,
:func:`build_search_inputs` for the planner). Pure: no click, no printing; the CLI parses.

The floor below cli/ (docs/ARCHITECTURE.md, "Floors"): it names flags in its errors and builds
the specs the analyses, planner and evaluator take (Inputs and SearchInputs)."""

from __future__ import annotations

import re
import stat
from enum import Enum
from pathlib import Path
from typing import TypeVar

from optimus_calc.catalog import Catalog
from optimus_calc.errors import InputError
from optimus_calc.evaluate.inputs import Inputs
from optimus_calc.loaders import safe_stat
from optimus_calc.search.inputs import SearchInputs, check_offloads
from optimus_calc.specs.model import BareModel, Model
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.base import unvalidated
from optimus_calc.specs.training import Fp8Recipe, Offload, Recompute, Training, ZeroStage
from optimus_calc.units import looks_like_count, parse_count

__all__ = ["Inputs", "SearchInputs", "build_inputs", "build_search_inputs", "make_training",
           "parse_assumptions", "parse_choices", "parse_ints", "resolve_model", "search_model"]

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
    # Any existing non-directory (a file, or a FIFO or device the loader will refuse by name),
    # or a directory holding a config.json, named bare ("hf" as "./hf")
    has_config = is_dir and safe_stat(str(Path(raw) / "config.json")) is not None
    if raw.endswith(".json") or "/" in raw or (st is not None and not is_dir) or has_config:
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

# a plain decimal, optionally signed (a negative value is a number out of range, said as such)
_NUM = r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$"  # compiled on first use
_OWN_FLAGS = {"gpu_headroom": "headroom", "moe_imbalance": "moe_imbalance"}  # by their flags


def parse_assumptions(items: tuple[str, ...] | list[str]) -> Assumptions:
    """``--assume NAME=VALUE`` items (plain decimals) into :class:`Assumptions`; none: the
    defaults, unvalidated (specs/base.unvalidated); an unknown name: its close matches."""
    base = unvalidated(Assumptions, {}) or Assumptions()
    values: dict[str, float] = {}
    for item in items:
        if "=" not in item:
            raise InputError(f"--assume {item!r}: expected NAME=VALUE")
        name, _, raw = item.partition("=")
        name, raw = name.strip(), raw.strip()
        if name not in base.names():
            import difflib  # only for the suggestion of an unknown name
            close = difflib.get_close_matches(name, base.names(), n=3, cutoff=0.6)
            hint = f"did you mean {', '.join(close)}?" if close else "see explain --assumptions"
            raise InputError(f"--assume {name[:80]!r}: unknown assumption; {hint}")
        if not re.match(_NUM, raw):
            raise InputError(f"--assume {name}={raw!r}: not a number")
        if values.get(name, v := float(raw)) != v:  # the last would win, silently
            raise InputError(f"--assume {name} given twice ({values[name]:g} and {raw})")
        values[name] = float(raw)
    if not values:
        return base
    try:
        return Assumptions(**values)
    except ValueError as exc:
        first = exc.errors()[0]  # type: ignore[attr-defined]
        raise InputError(f"--assume {first['loc'][0]}: {first['msg']}") from None


def assumptions_from(kw: dict) -> Assumptions:
    """``--assume`` items plus ``--headroom`` and ``--moe-imbalance`` (the gpu_headroom and
    moe_imbalance assumptions by their own flags; both for one is an error, not last-wins)."""
    from optimus_calc.profile import assumptions_with
    typed = parse_assumptions(kw.get("assume") or ())  # its fields set: the names --assume gave
    asm = assumptions_with(kw.get("profile"), typed)
    own = {n: float(kw[f]) for n, f in _OWN_FLAGS.items() if kw.get(f) is not None}
    if both := sorted(n for n in set(own) & typed.model_fields_set if getattr(typed, n) != own[n]):
        raise InputError(f"--{_OWN_FLAGS[both[0]].replace('_', '-')} and --assume {both[0]} both "
                         "set it: give one")
    return asm.model_copy(update=own) if own else asm


def profile_only(kw: dict) -> frozenset:
    """The assumptions --profile sets that --assume (or --headroom, --moe-imbalance) does not:
    a framework profile's value wins over them (frameworks/base.PhysicsProfile), as calibrate
    fits them only where the run's framework sets none."""
    prof = kw.get("profile")
    if prof is None or not prof.assumptions:
        return frozenset()
    typed = {str(i).partition("=")[0].strip() for i in kw.get("assume") or ()}
    typed |= {n for n, f in _OWN_FLAGS.items() if kw.get(f) is not None}
    return frozenset(set(prof.assumptions) - typed)


def dropout_of(kw: dict, model) -> bool:
    """--dropout/--no-dropout, else the model's own config (dropout probability > 0)."""
    if kw.get("dropout") is not None:
        return bool(kw["dropout"])
    return bool(getattr(model, "has_dropout", False))


def parse_ints(text: str | None, flag: str, lo: int = 1, hi: int = 1_000_000
               ) -> tuple[int, ...] | None:
    """A comma-separated list of whole numbers (``--tp 4,8``); None when not given."""
    if text is None:
        return None
    out = []
    for item in str(text).split(","):
        item = item.strip()
        if not (item.isascii() and item.isdigit()) or not lo <= int(item) <= hi:
            raise InputError(f"{flag}: {item[:40]!r} is not a whole number from {lo} to {hi:,}")
        out.append(int(item))
    if not out:
        raise InputError(f"{flag} is empty")
    return tuple(dict.fromkeys(out))


def offload_choices(kw: dict) -> tuple[tuple[Offload, ...], dict[Offload, str]]:
    """The targets of --offloads and --offload (a search's), each once, and the flag an error
    names for each: "offload" where only --offload gave it (search.inputs.check_offloads)."""
    many = parse_choices(kw.get("offloads"), Offload, "--offloads") or ()
    one = parse_choices(kw.get("offload"), Offload, "--offload") or ()
    return tuple(dict.fromkeys(many + one)), {o: "offload" for o in one if o not in many}


def parse_choices(text: str | None, enum: type[E], flag: str) -> tuple[E, ...] | None:
    """A comma-separated list of an Enum's values (``--offloads none,cpu``); None when empty."""
    if text is None:  # not given; an empty --offloads '' is an error, as ',' is
        return None
    out = []
    for item in text.split(","):
        try:
            out.append(enum(item.strip()))
        except ValueError:
            names = [str(e.value) for e in enum]
            if enum is Offload:  # the registered strategies, plug-ins included
                from optimus_calc.evaluate import strategies
                names = [st.key for st in strategies.strategies()]
            raise InputError(f"{flag}: {item.strip()!r} is not one of {', '.join(names)}") from None
    return tuple(out)


_TRAINING_FLAGS = {"seq_len": "--seq-len", "micro_batch": "--micro-batch",
                   "global_batch": "--global-batch", "grad_bytes": "--grad-bytes"}


def launch_overlaps(kw: dict) -> dict:
    """The Megatron-LM overlap flags of the command line (on unless --no-...; commands
    without them keep the Training defaults)."""
    names = ("overlap_grad_reduce", "overlap_param_gather", "tp_comm_overlap", "overlap_p2p_comm",
             "overlap_moe_expert_parallel_comm", "moe_pad_expert_input_to_capacity",
             "fp8_param_gather")
    out = {n: bool(kw[n]) for n in names if kw.get(n) is not None}
    out.update({k: kw[k] for k in ("moe_dispatcher", "cross_entropy_fusion") if kw.get(k)})
    if kw.get("cuda_graph_impl") is not None:
        out["cuda_graph_full_iteration"] = kw["cuda_graph_impl"] == "full_iteration"
    return out


def make_training(origins: dict[str, str] | None = None, trusted: tuple[str, ...] = (),
                  **fields) -> Training:
    """``Training(**fields)``, its validation errors as InputErrors naming the flag typed;
    ``origins`` explains a value the user did not type. ``trusted``: fields from a validated
    spec with the field's bounds (a model's sequence length) or computed here; when every other
    value is its field's default, nothing is validated (specs/base.unvalidated)."""
    tr = unvalidated(Training, fields, trusted)
    if tr is not None:
        return tr  # type: ignore[return-value]
    from pydantic import ValidationError
    try:
        return Training(**fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        name = str(first["loc"][0]) if first["loc"] else ""
        msg = str(first["msg"]).removeprefix("Value error, ")
        flag = _TRAINING_FLAGS.get(name, name)
        origin = (origins or {}).get(name)
        if origin:
            raise InputError(f"{origin} is {fields.get(name)}: {msg}; give {flag}") from None
        raise InputError(f"{flag} {fields.get(name)}: {msg}") from None


def attention_kernel_of(kw: dict):
    """--attention-kernel, refused without FlashAttention (the unfused path has no kernel)."""
    kernel = kw.get("attention_kernel")
    if kernel and not kw.get("flash_attn", True):
        raise InputError(f"--attention-kernel {kernel} needs a fused kernel: drop "
                         "--no-flash-attn (unfused attention computes the whole s x s scores)")
    return kernel


def training_from(kw: dict, model, dp: int) -> tuple[Training, bool, bool]:
    """The single-layout Training, its global batch resolved for the layout's dp by
    :func:`optimus_calc.evaluate.batch.resolve_global_batch` (without --global-batch: the batch
    rule, the smallest multiple of dp x micro-batch holding 512 sequences). Returns (training,
    global batch defaulted, sequence defaulted)."""
    from optimus_calc.evaluate.batch import BATCH_RULE_SEQUENCES, resolve_global_batch
    seq = kw["seq_len"] or (model.seq_len if isinstance(model, Model) else 2048)
    defaulted = kw["global_batch"] is None
    origins = {"global_batch": f"the default global batch ({BATCH_RULE_SEQUENCES} rounded up "
                               f"to a multiple of dp {dp} x --micro-batch {kw['micro_batch']})"}
    if kw["seq_len"] is None:
        origins["seq_len"] = f"the sequence length of {model.name}"
    fields = dict(seq_len=seq, micro_batch=kw["micro_batch"], global_batch=kw["global_batch"],
                  precision=kw["precision"], optimizer=kw["optimizer"],
                  fp8_recipe=kw.get("fp8_recipe") or Fp8Recipe.TE_DELAYED,
                  grad_bytes=kw["grad_bytes"] or 0, recompute=kw["recompute"],
                  recompute_modules=Training.modules_of(kw),
                  sequence_parallel=kw["sp"] is not False, flash_attention=kw["flash_attn"],
                  attention_kernel=attention_kernel_of(kw),
                  dropout=dropout_of(kw, model), model_states_only=kw["model_states_only"],
                  multicast=kw["multicast"], **launch_overlaps(kw))
    tr = make_training(origins, **fields)
    if defaulted:  # validated again: the rule's batch has the field's bounds too
        fields["global_batch"] = int(resolve_global_batch(dp, tr.micro_batch, tr))
        tr = make_training(origins, **fields)
    return tr, defaulted, kw["seq_len"] is None


def check_token_drop(model, tr: Training, asm, read: Training | None = None) -> None:
    """--moe-pad-expert-input-to-capacity pads every expert to exactly its capacity at factor
    1.0, its balanced share (Megatron-LM core_v0.14.0 token_dispatcher.py L444-467: the counts
    are torch.full of the capacity): no rank is more loaded, so moe_imbalance above 1 is
    refused (the assumption is "equal to [the capacity factor] with padding"). The Megatron-LM
    launch flags' own combinations are that framework's rules (megatron.launch_flag_error)."""
    from optimus_calc.frameworks.megatron import launch_flag_error
    if why := launch_flag_error(model, tr, read):
        raise InputError(why)
    if (tr.moe_pad_expert_input_to_capacity and getattr(model, "is_moe", False)
            and asm.moe_imbalance != 1):
        raise InputError(f"moe_imbalance {asm.moe_imbalance:g} (--moe-imbalance or --assume): "
                         "--moe-pad-expert-input-to-capacity pads every expert to exactly its "
                         "balanced share (capacity factor 1.0): give 1 or leave the flag out")


def build_inputs(cat: Catalog, model_text: str, kw: dict, strategies_vary: bool = False,
                 step_time: bool = False) -> Inputs:
    """Resolve MODEL and every single-layout option into validated specs. ``strategies_vary``:
    the layout is evaluated under each offload target (compare, breakeven, nics), so
    --offload-params applies to the targets moving weights; ``step_time``: it times the step."""
    from optimus_calc.evaluate.context import (check_layout, check_moe_assumptions,
                                            fill_layout, resolve_hardware, with_positions)
    from optimus_calc.evaluate.strategies.registry import check_target
    model = resolve_model(model_text, cat)
    if isinstance(model, BareModel) and (step_time or not kw["model_states_only"]):
        raise InputError(f"MODEL {model_text!r} is a bare parameter count: " + (
            "step time needs an architecture (a catalog model or a config.json)" if step_time
            else "activations need an architecture; add --model-states-only or give a catalog "
            "model or config.json"))
    hw = resolve_hardware(cat, kw["node"], kw["nodes"], kw["gpu"], kw["gpus_per_node"],
                          kw["smartnic"])
    frac = {} if kw.get("gpu_fraction") is None else {"superchip_gpu_fraction": kw["gpu_fraction"]}
    layout = fill_layout(  # no --gpu-fraction: the Layout's sourced default
        hw, kw["tp"], kw["pp"], kw["dp"], kw["cp"], ep=kw["ep"], etp=kw.get("etp"),
        zero=ZeroStage(kw["zero"]), offload=Offload(kw["offload"]), interleave=kw["interleave"],
        offload_params=kw["offload_params"], smartnic=hw.smartnic.name if hw.smartnic else None,
        smartnics_per_node=kw["smartnics_per_node"] or 0, allow_spill=not kw["no_spill"], **frac)
    if not strategies_vary:
        check_target(layout, hw)
    for flag, given, target in (("--smartnic", kw["smartnic"], "smartnic"),
                                ("--smartnics-per-node", kw["smartnics_per_node"], "smartnic"),
                                ("--no-spill", kw["no_spill"], "smartnic"),
                                ("--gpu-fraction", frac, "superchip")):
        if given and not strategies_vary and layout.offload.value != target:
            raise InputError(f"{flag} applies to --offload {target} (got --offload "
                             f"{layout.offload.value})")
    tr, gb_default, seq_default = training_from(kw, model, layout.dp)
    model = with_positions(model, tr.seq_len)
    check_layout(model, layout, tr)
    from optimus_calc.evaluate.fp8 import check_fp8_gpu
    check_fp8_gpu(hw.gpu, tr)
    from optimus_calc.frameworks.physics import apply_framework, framework_sp, unread_dropped
    asm = assumptions_from(kw)
    check_token_drop(model, tr, asm, unread_dropped(kw.get("framework"), tr))
    # check_layout checked the MoE launch flags; the imbalance is capped per layout by the
    # equations (efficiency.moe_imbalance_cap), and the reports say where
    check_moe_assumptions(model, asm)
    tr, note = framework_sp(kw.get("framework"), kw.get("sp"), layout, tr, model)
    tr, asm, choice = apply_framework(kw.get("framework"), layout, tr, asm, model,
                                      profile_only(kw), note)
    return Inputs(model, hw, layout, tr, asm, gb_default, seq_default, kw.get("profile"),
                  choice)


def search_model(cat: Catalog, model_text: str) -> Model:
    """MODEL for a search: a catalog model or a config.json (a bare count has no layers)."""
    model = resolve_model(model_text, cat)
    if not isinstance(model, Model):
        raise InputError(f"MODEL {model_text!r} is a bare parameter count: planning needs an "
                         "architecture (a catalog model or a config.json)")
    return model


def build_search_inputs(cat: Catalog, model_text: str, kw: dict, one_model: bool = True
                        ) -> SearchInputs:
    """Resolve MODEL, the hardware and the shared training options for a search. ``kw`` may
    carry the search limits (offloads, recomputes, max_zero, distinct). ``one_model``: MODEL is
    the only model searched (a sweep's template is its first of several: the sweep checks its
    MoE-only flags against them all)."""
    from optimus_calc.evaluate.context import check_moe_flags, resolve_hardware, with_positions
    from optimus_calc.frameworks.physics import unread_dropped

    model = search_model(cat, model_text)
    hw = resolve_hardware(cat, kw["node"], kw["nodes"], kw.get("gpu"), kw.get("gpus_per_node"),
                          kw.get("smartnic"))
    from optimus_calc.frameworks import Framework
    origins = {"seq_len": f"the sequence length of {model.name}"}
    # seq_len: validated with Training's bounds (specs/model.py); dropout: ours (dropout_of)
    tr = make_training(origins, ("dropout",) if kw["seq_len"] else ("dropout", "seq_len"),
                       seq_len=kw["seq_len"] or model.seq_len,
                       global_batch=kw["global_batch"],  # None: the batch rule per layout
                       precision=kw["precision"], optimizer=kw["optimizer"],
                       fp8_recipe=kw.get("fp8_recipe") or Fp8Recipe.TE_DELAYED,
                       grad_bytes=kw["grad_bytes"] or 0, flash_attention=kw["flash_attn"],
                       attention_kernel=attention_kernel_of(kw),
                       recompute_modules=Training.modules_of(kw, True),
                       dropout=dropout_of(kw, model), multicast=kw["multicast"],
                       **launch_overlaps(kw))
    from optimus_calc.evaluate.fp8 import check_fp8_gpu
    check_fp8_gpu(hw.gpu, tr)
    model, asm = with_positions(model, tr.seq_len), assumptions_from(kw)
    if one_model:
        check_moe_flags(model, tr, asm)
    recomputes = searched_recomputes(kw.get("recomputes"), tr)
    offloads, typed = offload_choices(kw)
    check_offloads(hw, offloads or None, typed)
    max_zero = kw.get("max_zero")
    fw = "each" if kw.get("framework") is None else kw["framework"]  # '': an error below
    if fw in ("any", "each"):
        frameworks: tuple = tuple(Framework)
    elif "auto" in [f.strip() for f in fw.split(",")]:
        raise InputError("--framework auto picks one framework for one given layout; a search "
                         "takes framework names, 'any' (framework-neutral physics) or 'each' "
                         "(every layout under each framework's profile)")
    else:
        frameworks = parse_choices(fw, Framework, "--framework") or tuple(Framework)
    check_token_drop(model, tr, asm, unread_dropped(fw, tr))  # the names checked first
    pins = {}
    for col, key, flag in (("tp", "tp", "--tp"), ("pp", "pp", "--pp"), ("dp", "dp", "--dp"),
                           ("cp", "cp", "--cp"), ("ep", "ep", "--ep"),
                           ("mb", "micro_batch", "--micro-batch"),
                           ("v", "interleave", "--interleave")):
        values = parse_ints(kw.get(key), flag)
        if values:
            pins[col] = values
    zero = parse_ints(kw.get("zero"), "--zero", 0, 3)
    if zero and max_zero is not None and max(zero) > max_zero:  # --zero would win silently
        raise InputError(f"--zero {max(zero)} is above --max-zero {max_zero}; give one of them")
    return SearchInputs(
        model, hw, tr, asm, offloads,
        recomputes, 3 if max_zero is None else int(max_zero), bool(kw.get("distinct")),
        kw["seq_len"] is None, frameworks, pins or None, zero, kw.get("profile"), fw != "any",
        offload_params=_params_axis(kw.get("search_offload_params")), yields=profile_only(kw))


def searched_recomputes(text: str | None, tr: Training) -> tuple[Recompute, ...] | None:
    """--recompute's modes for a search (None: every mode), less those the launch flags rule
    out (Megatron-LM's, the only framework that runs a full-iteration graph:
    frameworks/megatron.refused_recomputes); none left is an error."""
    from optimus_calc.frameworks.megatron import GRAPH_DROPOUT, refused_recomputes
    modes, out = parse_choices(text, Recompute, "--recompute"), refused_recomputes(tr)
    if not out:
        return modes
    modes = tuple(r for r in (modes or tuple(Recompute)) if r not in out)
    if not modes:
        raise InputError(GRAPH_DROPOUT)
    return modes


def _params_axis(flag: bool | None) -> tuple[bool, ...]:
    """--offload-params / --no-offload-params of the planner: the values searched."""
    return (False, True) if flag is None else (bool(flag),)
