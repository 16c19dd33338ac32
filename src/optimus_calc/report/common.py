"""Pieces shared by several documents: the description of model, hardware and layout."""

from __future__ import annotations

from typing import Any

from optimus_calc.specs.model import Model
from optimus_calc.specs.training import Offload
from optimus_calc.record import record


def model_data(model) -> dict[str, Any]:
    d: dict[str, Any] = {"name": model.name, "total_params": float(model.total_params),
                         "active_params": float(model.active_params)}
    if isinstance(model, Model):
        d.update(layers=model.layers, hidden=model.hidden, heads=model.heads,
                 kv_heads=model.n_kv, vocab=model.vocab)
    return d


def hardware_data(hw) -> dict[str, Any]:
    return {"node": hw.node.name, "nodes": hw.nodes, "gpu": hw.gpu.name,
            "gpus_per_node": hw.gpus_per_node, "gpus": hw.gpus,
            "gpu_memory_bytes": hw.gpu.memory_bytes}


def layout_data(layout) -> dict[str, Any]:
    """The layout's columns; ``etp`` only where there is an expert grid to split (EP > 1) or
    --etp was given, empty otherwise (the experts take TP): a dense model's row then copies
    into `step` without the --etp that step refuses for it."""
    etp = layout.etp if layout.etp is not None or layout.ep == 1 else layout.expert_tp
    return {"tp": layout.tp, "pp": layout.pp, "dp": layout.dp, "cp": layout.cp,
            "ep": layout.ep, "etp": etp, "zero": int(layout.zero),
            "offload": layout.offload.value,
            "interleave": layout.interleave, "offload_params": layout.offload_params,
            "smartnic": layout.smartnic if layout.offload is Offload.SMARTNIC else None}


def shown_training(tr):
    """``tr`` as the reports show it: a search's training without a global batch (each layout
    takes the batch rule's) shows the rule's target, 512 sequences (evaluate/batch.py)."""
    if tr.global_batch is not None:
        return tr
    from optimus_calc.evaluate.batch import BATCH_RULE_SEQUENCES
    return tr.model_copy(update={"global_batch": BATCH_RULE_SEQUENCES})


def training_data(tr) -> dict[str, Any]:
    return {"seq_len": tr.seq_len, "micro_batch": tr.micro_batch,
            "global_batch": tr.global_batch, "precision": tr.precision.value,
            "optimizer": tr.optimizer.value, "bytes_per_param": {
                "weights": tr.weight_bytes, "gradients": tr.gradient_bytes,
                "optimizer": tr.optimizer_bytes},
            "recompute": tr.recompute.value, "sequence_parallel": tr.sequence_parallel,
            "flash_attention": tr.flash_attention, "dropout": tr.dropout,
            "model_states_only": tr.model_states_only,
            **({"fp8_recipe": tr.fp8_recipe.value} if tr.precision.value == "fp8" else {}),
            **launch_data(tr)}


def launch_data(tr) -> dict[str, Any]:
    """The launch choices that move the physics, where not the default (--moe-dispatcher,
    --cuda-graph-impl): every JSON that describes the training names them."""
    return {**({"moe_dispatcher": tr.moe_dispatcher.value}
               if tr.moe_dispatcher.value != "alltoall" else {}),
            **({"cuda_graph_impl": "full_iteration"} if tr.cuda_graph_full_iteration else {}),
            **({"cross_entropy_fusion": tr.cross_entropy_fusion.value}
               if tr.cross_entropy_fusion.value != "native" else {}),
            **({"recompute_modules": ",".join(tr.recompute_modules)}
               if getattr(tr, "recompute_modules", ()) else {})}


def applied_modules(tr, model=None) -> str:
    """The --recompute-modules list one layout runs, comma-separated: a search's list applies
    to its selective layouts only (specs/training.recompute_modules_of), a framework whose
    profile does not read the flag drops it (frameworks/physics._read), and a dense ``model``
    has no moe_act; "" otherwise."""
    mods = [m for m in getattr(tr, "recompute_modules", ())
            if m != "moe_act" or getattr(model, "is_moe", True)]
    return ",".join(mods) if mods and tr.recompute.value == "selective" else ""


def launch_text(tr) -> str:
    """:func:`launch_data` for a header line ("" with the defaults): ", --moe-dispatcher
    deepep, --cuda-graph-impl full_iteration"."""
    return "".join(f", --{k.replace('_', '-')} {v}" for k, v in launch_data(tr).items())


def parallel_text(layout) -> str:
    """"TP=.. PP=.. DP=..", with CP, EP, ETP and the interleave where they are not 1."""
    s = f"TP={layout.tp} PP={layout.pp} DP={layout.dp}"
    if layout.cp > 1:
        s += f" CP={layout.cp}"
    if layout.ep > 1:
        s += f" EP={layout.ep}"
    if layout.etp is not None:
        s += f" ETP={layout.etp}"
    if layout.interleave > 1:
        s += f" interleave={layout.interleave}"
    return s


def layout_text(layout) -> str:
    s = parallel_text(layout) + f", ZeRO-{int(layout.zero)}, offload {layout.offload.value}"
    if layout.offload is Offload.SMARTNIC:
        s += f" ({layout.smartnic})"
    return s


def prec_is_fp8(tr) -> bool:
    return tr.precision.value == "fp8"


def training_text(inp) -> str:
    tr = inp.training
    gb = f"{tr.global_batch}" + (" (default)" if inp.global_batch_defaulted else "")
    seq = f"{tr.seq_len}" + (" (model default)" if inp.seq_len_defaulted else "")
    prec = tr.precision.value + (f" ({tr.fp8_recipe.value})" if prec_is_fp8(tr) else "")
    s = (f"seq {seq}, micro-batch {tr.micro_batch}, global batch {gb}, {prec}, "
         f"{tr.optimizer.value} ({tr.weight_bytes}+{tr.gradient_bytes}+{tr.optimizer_bytes} "
         f"bytes/param)")
    if tr.model_states_only:
        return s + ", model states only"
    return (s + f", recompute {tr.recompute.value}, SP {'on' if tr.sequence_parallel else 'off'}"
            f", FlashAttention {'on' if tr.flash_attention else 'off'}, dropout "
            f"{'on' if tr.dropout else 'off'}" + launch_text(tr))


@record
class TrainRequest:
    """``--tokens`` and ``--gpu-hour-price`` as the views receive them."""
    tokens: float
    gpu_hour_price: float | None = None


def train_figures(req: TrainRequest | None, step_time_s: float, tr, hw,
                  assumptions) -> dict[str, Any]:
    """``train_days``, ``gpu_hours``, ``energy_MWh``, ``cost_usd`` (and tokens, steps) for one
    step time, or {} without --tokens. GPU power: the catalog's ``tdp_W``."""
    if req is None or not step_time_s or step_time_s <= 0:
        return {}
    from optimus_calc.analyses.train_time import train_time
    return train_time(step_time_s, tr.global_batch * tr.seq_len, req.tokens, hw.gpus,
                      hw.gpu.tdp_W, assumptions.pue, req.gpu_hour_price).data()


def context_row(model_name: str, hw, tr, req: TrainRequest | None = None) -> dict[str, Any]:
    """The columns every per-layout CSV starts with, so rows from different runs can be pasted
    into one sheet: model, node, nodes, GPUs, sequence length, global batch, precision, the
    launch choices where not the default (:func:`launch_data`), tokens."""
    d: dict[str, Any] = {"model": model_name, "node": hw.node.name, "nodes": hw.nodes,
                         "gpus": hw.gpus, "seq_len": tr.seq_len,
                         "global_batch": tr.global_batch, "precision": tr.precision.value,
                         **launch_data(tr)}
    if req is not None:
        d["tokens"] = req.tokens
    return d


def pct(fraction: float | None) -> float | None:
    """A fraction as a percentage (CSV columns named ``*_pct``)."""
    return None if fraction is None else 100.0 * fraction


def efficiency_text(gpu, asm, kernel=None, d_head: float = 128.0, flash: bool = True) -> str:
    """Where the GEMM efficiency comes from: the GPU family's curve, or --assume's constant;
    the attention kernel and its efficiency (on causally halved FLOPs, at the head dim), or the
    unfused path's without FlashAttention."""
    from optimus_calc.evaluate.efficiency import kernel_efficiency, kernel_of
    k = kernel_of(gpu, kernel, asm)
    attn = (f"attention kernel {k} at {kernel_efficiency(gpu, kernel, asm, d_head):g}"
            f"{head_dim_note(gpu, kernel, asm, d_head)} on the causally halved FLOPs it "
            f"executes, unfused {gpu.attention_eta:g} on all of them" if flash else
            f"attention unfused (FlashAttention off) at {gpu.attention_eta:g}")
    if "gemm_efficiency" in asm.model_fields_set:
        return (f"GEMM efficiency {asm.gemm_efficiency:g} for every GEMM (--assume "
                "gemm_efficiency replaces the curve)")
    label = gpu.efficiency_label + (": no public training data" if
                                    gpu.efficiency_label == "unvalidated" else "")
    return (f"GEMM efficiency from the {gpu.name} curve: up to {gpu.gemm_eta_max:g}, half of "
            f"that at {gpu.gemm_half_GFLOP:g} GFLOP per GEMM ({label}); {attn} "
            "(`optimus-calc explain efficiency.gemm_efficiency`)")


def imbalance_applied(model, asm, layout) -> float:
    """The most-loaded EP rank's share the equations ran at ``layout``: --moe-imbalance capped
    at efficiency.moe_imbalance_cap (evaluate/shapes.imbalance_at, as Ctx.iota); the typed
    value without a layout, 1 on a dense model. The one reading every report shares."""
    if not getattr(model, "is_moe", False):
        return 1.0
    if layout is None:
        return float(asm.moe_imbalance)
    from optimus_calc.evaluate.shapes import imbalance_at
    return float(imbalance_at(model, layout.ep, asm.moe_imbalance))


def applied_imbalance(model, asm, layout, typed: bool = False) -> dict:
    """``{"moe_imbalance_applied": x}`` (:func:`imbalance_applied`) for an MoE model's JSON
    beside the typed ``assumptions.moe_imbalance`` (``typed``: a JSON without that block gets
    it as ``moe_imbalance``); ``{}`` for a dense model."""
    if not getattr(model, "is_moe", False) or layout is None:
        return {}
    return {**({"moe_imbalance": asm.moe_imbalance} if typed else {}),
            "moe_imbalance_applied": imbalance_applied(model, asm, layout)}


def imbalance_note(model, asm, layout, where: str = "") -> list[str]:
    """The note where --moe-imbalance exceeds what the layout's routing can reach: a search
    caps it per layout (efficiency.moe_imbalance_cap), and says so for its recommendation."""
    if not getattr(model, "is_moe", False) or asm.moe_imbalance <= 1 or layout is None:
        return []
    cap = imbalance_applied(model, asm, layout)
    if cap * (1 + 1e-6) >= asm.moe_imbalance:  # within rounding of the cap: not capped
        return []
    return [f"--moe-imbalance {asm.moe_imbalance:g} capped at {cap:g} at {where}EP {layout.ep}: "
            f"the most-loaded rank can get no more ({model.name} sends a token to "
            f"{model.top_k} of {model.experts} experts; efficiency.moe_imbalance_cap)"]


def window_notes(model, tr) -> list[str]:
    """For a sliding-window model: the span its attention core's FLOPs see at this length."""
    n = getattr(model, "sliding_window_layers", 0)
    if not n:
        return []
    from optimus_calc.evaluate.efficiency import attention_span
    span = float(attention_span(model, tr.seq_len))
    run = ("" if tr.flash_attention else "; unfused, the kernel computes all of it "
           "(compute.executed_attention_span)")
    return [f"sliding window {model.sliding_window:,} tokens on {n} of {model.layers} layers: "
            f"the attention core's FLOPs see a {span:,.0f}-token span of the {tr.seq_len:,} "
            f"(compute.attention_span){run}"]


def fp8_notes(gpu, tr, asm) -> list[str]:
    """With --precision fp8 or nvfp4: where the GEMMs run, what stays bf16, what MFU is
    measured against."""
    if tr.precision.value not in ("fp8", "nvfp4"):
        return []
    from optimus_calc.evaluate.fp8 import RATIO_FIELD
    recipe = tr.gemm_recipe
    te = recipe.value != "torchao"
    field = RATIO_FIELD[recipe]
    amax = (", one amax read of each GEMM input" if recipe.amax_passes else "")
    fmt = recipe.label
    head = fmt if recipe is recipe.NVFP4 else f"FP8 ({recipe.value})"
    return [f"{head}: weight GEMMs at the {recipe.peak.upper()} peak "
            f"{gpu.peak_TFLOPS.flops_per_s(recipe.peak) / 1e12:g} TFLOP/s x "
            f"{getattr(asm, field):g} of the GEMM efficiency ({field}){amax}; attention in "
            f"bf16; MFU and TFLOP/s against the BF16 peak {gpu.peak_TFLOPS.bf16:g}; "
            + (f"{fmt} weight copies and {fmt}-saved GEMM inputs in memory" if te
               else "memory as bf16 (torchao casts again in the backward)")]


# Sources name the papers behind the project's reference notes, not files users do not have;
# the two reference tables ship in the repository (docs/reference/).
_CITATIONS = (
    ("seeds/optimusnic.md", "OptimusNIC paper (Rebai, KAUST: Offloading Optimizer State to "
                            "SmartNICs for Efficient Large-Scale AI Training)"),
    ("seeds/squeezenic.md", "SqueezeNIC paper (Rebai et al., KAUST: Low-Latency In-NIC "
                            "Compression for Distributed Deep Learning)"),
    ("seeds/multicast-allgather-abstract.md", "the multicast Allgather paper (Khalilov et al., "
                                              "SC'24, abstract)"),
    ("seeds/superoffload.md", "SuperOffload paper (Lian et al.: Large-Scale LLM Training on "
                              "Superchips)"),
    ("seeds/deepspeed-bandwidth-characterization-methods.md",
     "Bandwidth Characterization of DeepSpeed on Distributed LLM Training (methods section)"),
    ("shared/reference/calibration.md", "docs/reference/calibration.md"),
    ("shared/reference/hardware-specs.md", "docs/reference/hardware-specs.md"),
    ("reference/calibration.md", "docs/reference/calibration.md"),
    ("reference/hardware-specs.md", "docs/reference/hardware-specs.md"),
)


def cite(text: str) -> str:
    """A source as users read it: paper names for the seed notes, repository paths for the
    reference tables (docs/reference/)."""
    for old, new in _CITATIONS:
        text = text.replace(old, new)
    for bare in ("calibration.md", "hardware-specs.md"):
        text = text.replace(f" {bare}", f" docs/reference/{bare}").replace(
            f"({bare}", f"(docs/reference/{bare}")
    return text.replace("docs/reference/docs/reference/", "docs/reference/").replace(
        "docs/docs/reference/", "docs/reference/")


def frameworks_of(inp) -> tuple[dict[str, str], str]:
    """Which frameworks run one layout (frameworks.py rules): {framework: "runs" or the rule that
    rejects it}, and a one-line note. Bare parameter counts have no rules to check."""
    from optimus_calc.frameworks import Reason, layout_support
    from optimus_calc.specs.model import Model
    if not isinstance(inp.model, Model):
        return {}, ""
    sup = layout_support(inp.layout, inp.training, inp.model)
    out = {f.value: ("runs" if r is Reason.OK else r.text) for f, r in sup.items()}
    runs = [f.label for f, r in sup.items() if r is Reason.OK]
    note = ("runs on " + ", ".join(runs) if runs else
            "no framework runs this layout: " + "; ".join(sorted({v for v in out.values()})))
    return out, note


def framework_header(inp) -> list[tuple[str, str]]:
    """The header line naming the physics profile applied and why (frameworks/physics.py)."""
    choice = getattr(inp, "framework", None)
    return [] if choice is None else [("framework", choice.text())]


def framework_data(inp) -> dict:
    choice = getattr(inp, "framework", None)
    return {} if choice is None else {"physics_profile": choice.data()}


def head_dim_note(gpu, kernel, asm, d_head: float) -> str:
    """" (0.26 at head dim 128)" where the head dim moves the kernel's efficiency, else ""."""
    from optimus_calc.evaluate.efficiency import kernel_efficiency
    if asm is not None and "attention_efficiency" in asm.model_fields_set:
        return " (--assume attention_efficiency, at every head dim)"
    at = kernel_efficiency(gpu, kernel, asm)
    return (f" ({at:g} at head dim 128, efficiency.head_dim_attention_efficiency)"
            if kernel_efficiency(gpu, kernel, asm, d_head) != at else "")


def unread_flags_note(inp) -> str:
    """The launch flags set off their default that only another framework's profile reads
    (FrameworkPlugin.launch_flags): under this profile, or framework-neutral physics, they move
    nothing, which the note says ("" when none is)."""
    tr, choice = inp.training, getattr(inp, "framework", None)
    key = getattr(choice, "key", None)
    if choice is not None and choice.before:  # as given: a profile drops what it does not read
        tr = choice.before[0]
    return unread_text(tr, (key,) if key else (), f"the {choice.label} profile" if key else "")


def unread_text(tr, keys: tuple = (), under: str = "", verb: str = "does") -> str:
    """:func:`unread_flags_note` of ``tr`` under the profiles of the plug-ins ``keys`` (none:
    framework-neutral physics, which reads NEUTRAL_READS), named ``under`` in the note."""
    from optimus_calc.frameworks import plugins
    from optimus_calc.frameworks.base import NEUTRAL_READS
    keys = {str(getattr(k, "value", k)) for k in keys}
    mine = {f for p in plugins() if str(getattr(p.key, "value", p.key)) in keys
            for f, _ in p.launch_flags} | (set() if keys else NEUTRAL_READS)
    fields = type(tr).model_fields
    off: dict[str, list[str]] = {}
    for p in plugins():
        for name, flag in p.launch_flags:
            v, d = getattr(tr, name), fields[name].default
            if name in mine or v == d:
                continue
            text = (flag if v is True else "--no-" + flag[2:] if v is False
                    else f"{flag} {','.join(getattr(x, 'value', x) for x in v)}"
                    if isinstance(v, tuple) else f"{flag} {getattr(v, 'value', v)}")
            off.setdefault(p.label, []).append(text)
    if not off:
        return ""
    under = under or "framework-neutral physics"
    return "; ".join(f"{', '.join(flags)}: {label} launch flag{'s' if len(flags) > 1 else ''}, "
                     f"which {under} {verb} not read (it moves no number here; --framework "
                     f"{next(p.key for p in plugins() if p.label == label)} reads "
                     f"{'them' if len(flags) > 1 else 'it'})" for label, flags in off.items())


def search_unread_note(si) -> str:
    """:func:`unread_text` of a search (`plan`, `sweep`): the flags none of the profiles it
    applies reads (--framework NAMES or each: theirs; any: framework-neutral physics)."""
    if not si.physics:
        return unread_text(si.training)
    from optimus_calc.frameworks import plugin
    labels = [plugin(f).label for f in si.frameworks]
    return unread_text(si.training, tuple(si.frameworks), "the " + " and the ".join(labels)
                       + " profile" + ("s" if len(labels) > 1 else ""),
                       "do" if len(labels) > 1 else "does")


def add_unread_flags_note(inp, notes: list, data: dict) -> None:
    """:func:`unread_flags_note` appended to ``notes`` and as ``data["unread_launch_flags"]``
    (nothing when no flag is unread)."""
    if unread := unread_flags_note(inp):
        notes.append(unread)
        data["unread_launch_flags"] = unread


def over_peak_note(mfu: float, mfu_causal: float, mfu_high: float | None = None) -> list[str]:
    """The note where the un-halved MFU (or the top of its range) passes 100%: the count charges
    the causal attention core over the whole sequence, twice what the kernels execute, so where
    attention dominates (long sequences) it reaches about twice the kernel's efficiency; the
    executed count (mfu_causal) stays below the peak. [] below 100%."""
    over = lambda x: x is not None and round(x, 3) > 1  # noqa: E731 (as printed: 100.0% is not)
    if not (over(mfu) or over(mfu_high)):
        return []
    head = (f"MFU above 100% ({mfu:.1%}" + (f", range to {mfu_high:.1%})" if over(mfu_high)
                                             else ")") if over(mfu) else
            f"MFU {mfu:.1%} with a range above 100% (to {mfu_high:.1%})")
    return [head + ": the un-halved count (PaLM appendix B) charges the causal attention core at "
            "the whole sequence, twice the FLOPs its kernels execute, so where attention "
            f"dominates it passes the GPU's peak; on the FLOPs executed (mfu_causal, as "
            f"Megatron-LM logs) it is {mfu_causal:.1%}"
            + (f" (range to {mfu_causal * mfu_high / mfu:.1%})" if mfu_high and mfu > 0 else "")]
