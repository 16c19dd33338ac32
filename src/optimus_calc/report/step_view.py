"""Documents for `step` and `optimizer-step`."""

from __future__ import annotations

from dataclasses import asdict

from optimus_calc.report.common import (TrainRequest, context_row, efficiency_text, fp8_notes,
                                        over_peak_note,
                                        window_notes, framework_data, framework_header,
                                        frameworks_of, hardware_data, layout_data, layout_text,
                                        model_data, pct, train_figures, training_data,
                                        training_text, add_unread_flags_note)
from optimus_calc.report.common import applied_imbalance
from optimus_calc.report.moe_text import moe_notes
from optimus_calc.report.document import Column, Document, Table
from optimus_calc.units import GB

BREAKDOWN = [
    ("compute_s", "compute (GEMMs at peak x efficiency)", "compute.compute_time"),
    # the equation whose result is the row (`explain NAME MODEL [layout]` shows its values)
    ("elementwise_s", "element-wise work on HBM", "step.elementwise_time"),
    ("bubble_s", "pipeline bubble", "compute.pipeline_bubble"),
    ("tp_comm_s", "TP communication (exposed)", "step.tp_comm_time"),
    ("cp_comm_s", "CP K/V all-gather + reduce-scatter", "step.cp_comm_time"),
    ("ep_comm_s", "EP all-to-all (MoE dispatch/combine)", "step.ep_comm_time"),
    ("pp_comm_s", "PP point-to-point", "step.pp_comm_time"),
    ("dp_comm_exposed_s", "DP communication, exposed", "step.dp_exposed_time"),
    ("optimizer_exposed_s", "optimizer step + transfers, exposed", "compute.exposed_time"),
    # step.time's T_po: --offload-params streams the weights from host RAM or NVMe
    ("param_offload_exposed_s", "offloaded weights streamed in, exposed",
     "offload.param_stream_exposed"),
    ("fixed_s", "fixed costs (per step, layer, MoE host sync)", "step.fixed_time"),
]


BREAKDOWN_KEYS = ("compute_s", "elementwise_s", "bubble_s", "tp_comm_s", "cp_comm_s",
                  "ep_comm_s", "pp_comm_s", "dp_comm_s", "dp_comm_exposed_s", "optimizer_s",
                  "optimizer_exposed_s", "offload_transfer_s", "fixed_s",
                  "param_offload_exposed_s")  # last: a column added after the others


def _csv_row(inp, mem, st, data, train, extra: dict, ranges: dict) -> dict:
    """The CSV's one row: the context, the layout (an MoE model's typed and applied
    --moe-imbalance), the step and its breakdown, memory, ``extra`` (the fit hint's and the
    --tokens figures' columns), the error ranges (MFU in percent)."""
    return {**context_row(inp.model.name, inp.hw, inp.training, train),
            **layout_data(inp.layout), "micro_batch": inp.training.micro_batch,
            "recompute": inp.training.recompute.value,
            **applied_imbalance(inp.model, inp.assumptions, inp.layout, typed=True),
            "step_time_s": st.step_time_s, "mfu_pct": pct(st.mfu),
            "mfu_6n_pct": pct(st.mfu_6n), "mfu_causal_pct": pct(st.mfu_causal),
            "tflops_per_gpu": st.tflops_per_gpu, "tokens_per_s": st.tokens_per_s,
            **data["breakdown"], "gpu_memory_bytes": mem.worst.total_bytes, "fits": mem.fits,
            **extra, **{k.replace("mfu", "mfu_pct"): pct(v) if k.startswith("mfu") else v
                        for k, v in ranges.items()}}


def step_document(inp, mem, st, train: TrainRequest | None = None, fit=None) -> Document:
    """``fit``: (fits, analyses.fit_hint.FitHint or None) from the command: the note after
    DOES NOT FIT, and ``fit_hint`` in the data (None where the layout fits)."""
    from optimus_calc.analyses.fit_hint import report_parts
    hint = report_parts(fit, inp)
    terms = asdict(st)
    data = {"model": model_data(inp.model), "hardware": hardware_data(inp.hw),
            "layout": layout_data(inp.layout), "training": training_data(inp.training),
            "assumptions": dict(inp.assumptions),
            **applied_imbalance(inp.model, inp.assumptions, inp.layout),
            **{k: v for k, v in terms.items() if k != "notes"},
            "breakdown": {k: terms[k] for k in BREAKDOWN_KEYS},
            "fits": mem.fits, "reasons": mem.reasons,
            "gpu_memory_bytes": mem.worst.total_bytes, "notes": st.notes, "fit_hint": hint.data}
    fws, fw_note = frameworks_of(inp)
    data["frameworks"] = fws
    data.update(framework_data(inp))
    figures = train_figures(train, st.step_time_s, inp.training, inp.hw, inp.assumptions)
    data.update(figures)
    data.update(mfu_conventions(st, figures))
    from optimus_calc.regimes import range_fields
    trange, mrange = step_ranges(inp, fws)
    ranges = range_fields({**data, **figures}, trange, mrange)
    data.update(ranges)
    from optimus_calc.evaluate import strategies
    exposed = strategies.strategy(inp.layout.offload).exposed_equation(int(inp.layout.zero))
    rows = [{"part": label, "s": terms[key], "share": terms[key] / st.step_time_s,
             "eq": exposed if key == "optimizer_exposed_s" else eqn}
            for key, label, eqn in BREAKDOWN]
    rows.append({"part": "step time", "s": st.step_time_s, "share": 1.0, "eq": ""})
    info = [{"part": "optimizer step (on " + st.optimizer_device + ")", "s": st.optimizer_s,
             "share": None, "eq": strategies.strategy(inp.layout.offload).step_equation},
            {"part": "offload transfers", "s": st.offload_transfer_s, "share": None, "eq": ""},
            {"part": "DP communication, total", "s": st.dp_comm_s, "share": None, "eq": ""}]
    cols = [Column("part", "", align="left"), Column("s", "seconds", ".4f"),
            Column("share", "share", ".1%"), Column("eq", "equation", align="left")]
    tables = [Table(title="step time breakdown (most loaded GPU)", rows=rows, columns=cols),
              Table(title="overlapped or informational", rows=info, columns=cols)]
    notes = [headline_text(st, mem.worst.total_bytes, figures, trange, mrange),
             f"MFU {st.mfu:.1%} (model FLOPs: attention un-halved, no recomputation, as "
             f"PaLM, Narayanan et al. and torchtitan count; causal core halved as Megatron-LM "
             f"logs it: {st.mfu_causal:.1%}; 6 x N x tokens convention: {st.mfu_6n:.1%}), "
             f"{st.tflops_per_gpu:.1f} TFLOP/s per GPU counting hardware FLOPs (with "
             f"recomputation, attention un-halved), {st.tokens_per_s:,.0f} tokens/s",
             *over_peak_note(st.mfu, st.mfu_causal, ranges.get("mfu_high")),
             f"GPU memory {mem.worst.total_bytes / GB:.1f} GB of {mem.capacity_bytes / GB:.0f} GB: "
             + ("fits" if mem.fits else "DOES NOT FIT: " + "; ".join(mem.reasons)),
             efficiency_text(inp.hw.gpu, inp.assumptions, inp.training.attention_kernel,
                             getattr(inp.model, "d_head", 128), inp.training.flash_attention)]
    if hint.note:
        notes.insert(3, hint.note)
    notes += (fp8_notes(inp.hw.gpu, inp.training, inp.assumptions)
              + moe_notes(inp.model, inp.assumptions, inp.training, _reach(inp), inp.layout)
              + window_notes(inp.model, inp.training) + st.notes)
    if fw_note:
        notes.append(fw_note)
    add_unread_flags_note(inp, notes, data)
    if figures:
        notes.append(train_note(figures, inp.assumptions.pue))
        notes.append(f"days from the modelled step time (no FLOP convention enters); a "
                     f"6 x N x tokens estimate at MFU {st.mfu:.1%} would say "
                     f"{data['train_days_6n_at_mfu']:,.1f} days, attention left out")
    csv_row = _csv_row(inp, mem, st, data, train, {**hint.columns, **{
        k: v for k, v in figures.items() if k != "tokens"}}, ranges)
    return Document(
        title=f"step: {inp.model.name} on {inp.hw.nodes} x {inp.hw.node.name} "
              f"({inp.hw.gpus} x {inp.hw.gpu.name})",
        header=[("layout", layout_text(inp.layout)), *framework_header(inp),
                ("training", training_text(inp))],
        data=data, tables=tables, notes=notes,
        csv=Table(title="", rows=[csv_row], columns=[Column(k, k) for k in csv_row]))


def _reach(inp):
    """The layout's (nodes a token's experts reach at most, the EP group's nodes), for the MoE
    note of a deduplicating dispatcher on a model that routes group-limited; else None."""
    m, lay = inp.model, inp.layout
    if not (getattr(m, "router_groups", 1) > 1 and inp.training.moe_dispatcher.dedups_nodes):
        return None
    from optimus_calc.evaluate.topology import ep_reach
    return ep_reach(inp.hw, m, lay.ep, lay.expert_tp)


def mfu_conventions(st, figures: dict) -> dict:
    """Which FLOP count each figure uses (issue 19): ``mfu`` model FLOPs with the attention
    core un-halved (PaLM appendix B), ``mfu_causal`` with it halved (Megatron-LM's log),
    ``mfu_6n`` 6 N_active tokens; with --tokens, the days a
    6 N tokens estimate at the published-convention MFU gives (fewer than ``train_days``)."""
    out = {"mfu_convention": "model FLOPs, causal attention un-halved, no recomputation",
           "mfu_6n_convention": "6 x active parameters x tokens",
           "mfu_causal_convention": "model FLOPs, causal attention core halved (Megatron-LM's "
                                    "logged TFLOP/s), no recomputation"}
    if figures.get("train_days") is not None and st.model_flops > 0:
        out["train_days_6n_at_mfu"] = figures["train_days"] * st.model_flops_6n / st.model_flops
    return out


def step_ranges(inp, fws: dict):
    """The error ranges of a step's time figures and GPU memory (regimes.py)."""
    from optimus_calc.evaluate.efficiency import attention_kernel_name
    from optimus_calc.regimes import error_range, vouching_frameworks
    key = getattr(inp.framework, "key", None)
    running = vouching_frameworks([key] if key is not None else [],
                                  [f for f, how in fws.items() if how == "runs"])
    common = (inp.hw.gpu.name, running, inp.layout.offload.value, inp.model)
    kw = dict(profile=inp.profile, precision=inp.training.precision.value,
              seq_len=inp.training.seq_len, nodes=inp.hw.nodes, gpus=inp.hw.gpus,
              kernel=attention_kernel_name(inp.hw.gpu, inp.training, inp.assumptions))
    return error_range(*common, **kw), error_range(*common, memory=True, **kw)


def headline_text(st, gpu_bytes: float, figures: dict, trange, mrange) -> str:
    """Headline figures with their error ranges: "66.9 s (-2% / +2%, 10 public cases ...)"."""
    parts = [f"step {st.step_time_s:,.4g} s {trange.text('step_time_s', st.step_time_s)}",
             f"{st.tokens_per_s:,.0f} tokens/s", f"MFU {st.mfu:.1%}"]
    if figures.get("train_days") is not None:
        parts.append(f"{amount(figures['train_days'], 1)} days")
    if figures.get("cost_usd") is not None:
        parts.append(f"${amount(figures['cost_usd'], 0)}")
    return (", ".join(parts) + f"; GPU memory {gpu_bytes / GB:.1f} GB "
            + mrange.text("gpu_memory_bytes", gpu_bytes))


def optimizer_document(entry, dev, params, res, optimizer, impl, count) -> Document:
    data = {"device": entry.name, "kind": dev.kind, "params": params, "count": count,
            "optimizer": optimizer, "impl": impl, "threads": res.threads,
            "time_s": res.time_s, "bound": res.bound, "bytes": res.bytes, "flops": res.flops,
            "bandwidth_Bps": res.bandwidth_Bps, "inputs": res.inputs}
    rows = [{"k": "time", "v": f"{res.time_s * 1e3:.2f} ms ({res.bound}-bound)"},
            {"k": "bytes moved per device", "v": f"{res.bytes / GB:.3f} GB"},
            {"k": "FLOPs per device", "v": f"{res.flops:.4g}"},
            {"k": "achieved bandwidth", "v": f"{res.bandwidth_Bps / GB:.1f} GB/s"},
            {"k": "threads", "v": str(res.threads)},
            {"k": "devices sharing the step", "v": str(count)}]
    return Document(
        title=f"optimizer-step: {params / 1e6:,.0f}M parameters, {optimizer} ({impl}) on "
              f"{entry.name}",
        data=data, tables=[Table(title="", rows=rows, columns=[
            Column("k", "", align="left"), Column("v", "", align="left")])],
        notes=["roofline: max(bytes / achievable bandwidth, FLOPs / compute peak); see "
               "`optimus-calc explain compute.optimizer_step_time`"],
        csv=Table(title="", rows=[{k: v for k, v in data.items() if k != "inputs"}],
                  columns=[Column(k, k) for k in data if k != "inputs"]))


def amount(x: float, decimals: int) -> str:
    """A --tokens figure for the table view: ``decimals`` places, or two significant digits
    below 1 (a small budget's 0.036 MWh is not "0.0 MWh")."""
    return f"{x:,.{decimals}f}" if x >= 1 or x == 0 else f"{x:.2g}"


def train_note(figures: dict, pue: float) -> str:
    """One line for the table view: the --tokens figures."""
    s = (f"{figures['tokens']:.4g} tokens: {amount(figures['steps'], 0)} steps, "
         f"{amount(figures['train_days'], 1)} days, {amount(figures['gpu_hours'], 0)} GPU-hours")
    if figures.get("energy_MWh") is not None:
        s += f", {amount(figures['energy_MWh'], 1)} MWh (GPU TDP x PUE {pue:g}, assumed)"
    if figures.get("cost_usd") is not None:
        s += f", ${amount(figures['cost_usd'], 0)}"
    return s
