"""Documents for `plan` and `nics`, and the DeepSpeed / Megatron exports."""

from __future__ import annotations

from dataclasses import asdict
from optimus_calc.report.common import (TrainRequest, applied_modules, context_row, launch_data,
                                        launch_text, layout_data, parallel_text, pct,
                                        search_unread_note, shown_training, train_figures)
from optimus_calc.report.common import applied_imbalance, imbalance_note, over_peak_note
from optimus_calc.frameworks import Framework, exports_for
from optimus_calc.report.document import Column, Document, Table
from optimus_calc.specs.training import Offload
from optimus_calc.units import GB


def candidate_data(c, model=None) -> dict:
    """A candidate's columns (``model``: the searched model, whose MoE-ness the recompute
    modules shown depend on)."""
    return {**layout_data(c.layout), "micro_batch": c.training.micro_batch,
            "global_batch": c.training.global_batch,
            "recompute": c.training.recompute.value,
            **({"recompute_modules": m} if (m := applied_modules(c.training, model)) else {}),
            "sequence_parallel": c.training.sequence_parallel,
            "gpu_memory_bytes": c.gpu_bytes,
            "gpu_headroom_bytes": c.memory.headroom_bytes,
            "step_time_s": c.step_s, "mfu": c.mfu, "mfu_6n": c.step.mfu_6n,
            "mfu_causal": c.step.mfu_causal,
            "tokens_per_s": c.tokens_per_s,
            "optimizer_s": c.step.optimizer_s, "optimizer_exposed_s": c.step.optimizer_exposed_s,
            "stage_layers": [s.layers for s in c.memory.stages],
            "frameworks": list(c.frameworks), "framework": c.framework}


def _row_kernel_note(res, gpu, tr, asm, d_head: float) -> str:
    """" (the recommended row's framework profile runs fa2 at 0.22)" where that profile's
    kernel differs from the neutral one the header names (Assumptions.flash_attention_2_over_
    cudnn), else ""."""
    from optimus_calc.evaluate.efficiency import kernel_efficiency, kernel_of
    row = _asm_of(res.recommended) if res.recommended is not None else None
    if not tr.flash_attention or row is None:
        return ""
    k = kernel_of(gpu, tr.attention_kernel, row)
    return "" if k == kernel_of(gpu, tr.attention_kernel, asm) else (
        f" (the recommended row's {res.recommended.framework} profile runs {k} at "
        f"{kernel_efficiency(gpu, tr.attention_kernel, row, d_head):g})")


def _asm_of(c):
    """The assumptions a candidate was evaluated under (its framework's profile applied)."""
    key = c.memory.inputs_key if c.memory is not None else ()
    return key[2] if len(key) > 2 else None


def candidate_ranges(c, res, profile, fig: dict) -> dict:
    """``*_low``/``*_high`` of a layout's headline figures (regimes.py); ``profile``: the
    calibration profile in use or None."""
    from optimus_calc.regimes import error_range, range_fields, vouching_frameworks
    # c.frameworks: those of the profile group that timed it (c.framework) that run it
    fws = vouching_frameworks(c.frameworks if c.framework else (), c.frameworks)
    common = (res.hw.gpu.name, fws, c.layout.offload.value, res.model)
    from optimus_calc.evaluate.efficiency import attention_kernel_name
    kw = dict(profile=profile, precision=res.training.precision.value,
              seq_len=res.training.seq_len, nodes=res.hw.nodes, gpus=res.hw.gpus,
              kernel=attention_kernel_name(res.hw.gpu, res.training, _asm_of(c)))
    return range_fields({**candidate_data(c, res.model), **fig}, error_range(*common, **kw),
                        error_range(*common, memory=True, **kw))


def range_text(fig: dict, d: dict) -> str:
    """"(-2% / +2%, 10 public cases like this)" of the step time, or "(unvalidated: ...)"."""
    lo, hi = fig.get("step_time_s_low"), fig.get("step_time_s_high")
    if lo is None or hi is None:
        return f"(unvalidated: {fig['error_range_basis']})"
    s = d["step_time_s"]
    return f"({lo / s - 1:+.0%} / {hi / s - 1:+.0%}, {fig['error_range_basis']})"


def nic_rows(sizing) -> list[dict]:
    return [{**asdict(n), "gpu_fits_with_offload": n.gpu_fits_with_offload} for n in sizing]


def objective_text(objective) -> str:
    """What the planner ranked by (search/passes.py Objective), for the header."""
    return {"throughput": "throughput (most tokens/s first, then least GPU memory)",
            "time": "time to train --tokens (shortest first: the most tokens/s, then least GPU "
                    "memory)",
            "cost": "cost to train --tokens (cheapest first: the most tokens/s on these GPUs, "
                    "then least GPU memory)",
            "memory": "GPU memory (least first, then most tokens/s)"}[objective.value]


def plan_header(res, si) -> list[tuple[str, str]]:
    """``si``: the :class:`optimus_calc.inputs.SearchInputs` the plan ran on."""
    m, hw, tr = res.model, res.hw, shown_training(res.training)
    asm = si.assumptions
    note = _row_kernel_note(res, hw.gpu, tr, asm, m.d_head)
    return [
        ("model", f"{m.name}: {m.total_params / 1e9:.2f}B params"
                  + (f" ({m.active_params / 1e9:.2f}B active)" if m.is_moe else "")
                  + f", {m.layers} layers, hidden {m.hidden}, {m.heads} heads / {m.n_kv} KV"),
        ("hardware", f"{hw.nodes} x {hw.node.name}: {hw.gpus} x {hw.gpu.name} "
                     f"({hw.gpu.memory_GB:g} GB), {hw.intra_link.name} inside a node, "
                     f"{hw.node.nics} x {hw.nic.name} per node, {hw.node.cpus} x {hw.cpu.name}"),
        ("assumed", f"seq {tr.seq_len}" + (" (model default)" if si.seq_len_defaulted else "")
                    + (", global batch per layout: the smallest multiple of dp x micro-batch "
                       f"holding {tr.global_batch} sequences (the default rule)"
                       if si.global_batch_defaulted else f", global batch {tr.global_batch}")
                    + f", {tr.precision.value}, {tr.optimizer.value} "
                      f"({tr.weight_bytes}+{tr.gradient_bytes}+{tr.optimizer_bytes} B/param), "
                      f"FlashAttention {'on' if tr.flash_attention else 'off'}, dropout "
                      f"{'on' if tr.dropout else 'off'}{launch_text(tr)}, headroom "
                      f"{asm.gpu_headroom:.0%} of GPU memory (--headroom)"),
        ("efficiencies", ("GEMM " + (f"{asm.gemm_efficiency:g} (--assume)" if "gemm_efficiency"
                                     in asm.model_fields_set else
                                     f"{hw.gpu.name} curve (max {hw.gpu.gemm_eta_max:g})"))
                         + f", attention {attention_text(hw.gpu, tr, asm, m.d_head, note)}, HBM "
                         f"{asm.hbm_efficiency:g}, {hw.intra_link.name} "
                         f"{hw.intra_link.efficiency:g}, {hw.nic.name} {hw.nic.efficiency:g} "
                         "(see `optimus-calc explain --assumptions`)"),
        ("objective", objective_text(res.objective) + "; " + (
            f"{res.evaluated // res.profiles:,} layouts x {res.profiles} framework physics "
            f"profiles = {res.evaluated:,} evaluated, {res.feasible:,} (layout, profile) pairs "
            "fit and run on " if res.profiles > 1 else
            f"{res.evaluated:,} layouts evaluated, {res.feasible:,} fit and run on ")
                      + ("any framework" if len(res.frameworks) > 1 and set(res.frameworks)
                         == {f.value for f in Framework} else ", ".join(res.frameworks))),
    ]


def offload_text(layout) -> str:
    """The offload column: the target, its card, and "+weights" with parameter offload."""
    return (layout.offload.value
            + (f" ({layout.smartnic})" if layout.offload is Offload.SMARTNIC else "")
            + ("+weights" if layout.offload_params else ""))


def _plan_rows(res, ranged, asm) -> list[dict]:
    """The rows of the top-K table: each candidate's data, figures and display texts (and an
    MoE model's typed and applied --moe-imbalance, for the CSV)."""
    rows = []
    for i, c in enumerate(res.top, 1):
        d = candidate_data(c, res.model)
        f = ranged(c)
        rows.append({"rank": i, **d, **f, **applied_imbalance(res.model, asm, c.layout, True),
                     "gpu_GB": d["gpu_memory_bytes"] / GB,
                     "headroom_GB": d["gpu_headroom_bytes"] / GB,
                     "offload_txt": offload_text(c.layout),
                     "sp_txt": "on" if c.training.sequence_parallel else "off"})
    return rows


def _plan_columns(rows: list[dict], train: TrainRequest | None) -> list[Column]:
    """The top-K table's columns (CP and EP only when a row uses them)."""
    cols = [Column("rank", "#"), Column("framework", "framework", align="left"),
            Column("tp", "TP"), Column("pp", "PP"), Column("dp", "DP")]
    if any(r["cp"] > 1 for r in rows):
        cols.append(Column("cp", "CP"))
    if any(r["ep"] > 1 for r in rows):
        cols.append(Column("ep", "EP"))
    cols += [Column("zero", "ZeRO"), Column("offload_txt", "offload", align="left"),
             Column("recompute", "recompute", align="left"),
             # SP and v kept in the compact table when rows differ in them (SP) or interleave:
             # else two rows can look the same
             Column("sp_txt", "SP", compact=len({r["sp_txt"] for r in rows}) > 1),
             Column("micro_batch", "mb"),
             Column("interleave", "v", compact=any(r["interleave"] > 1 for r in rows)),
             Column("global_batch", "batch", compact=False),
             Column("gpu_GB", "GPU GB", ".1f"),
             Column("headroom_GB", "free GB (of usable)", ".1f", compact=False),
             Column("step_time_s", "step s", ".2f"), Column("mfu", "MFU", ".1%"),
             Column("tokens_per_s", "tokens/s", ",.0f")]
    if train is not None:
        cols.append(Column("train_days", "days", ",.1f"))
        if train.gpu_hour_price is not None:
            cols.append(Column("cost_usd", "USD", ",.0f"))
    return cols


def _plan_notes(res, ranged) -> list[str]:
    """The notes on the recommendation, the dropped layouts, the frameworks and the what-if."""
    notes = []
    if res.recommended:
        r = res.recommended
        notes.append(f"recommended: #1, {parallel_text(r.layout)}, "
                     f"ZeRO-{int(r.layout.zero)}, offload {offload_text(r.layout)}, recompute "
                     f"{r.training.recompute.value}, micro-batch {r.training.micro_batch}: "
                     f"{res.why}")
        rf = ranged(r)
        notes.append(f"recommended step {r.step_s:,.4g} s {range_text(rf, candidate_data(r))}")
        notes += over_peak_note(r.mfu, r.step.mfu_causal, rf.get("mfu_high"))
        if r.memory.stages and len({s.layers for s in r.memory.stages}) > 1:
            notes.append(f"uneven pipeline split: {[s.layers for s in r.memory.stages]} layers "
                         "per stage")
    else:
        notes.append(res.why)
    for reason, n in sorted(res.infeasible_by_reason.items(), key=lambda kv: -kv[1]):
        notes.append(f"{n:,} layouts dropped: {reason}")
    for reason, n in list(res.framework_rejections.items())[:4]:
        notes.append(f"  rejected {n:,} times: {reason}")
    if res.recommended and res.recommended.frameworks:
        names = {f.value: f.label for f in Framework}
        notes.append("the recommendation runs on "
                     + ", ".join(names[f] for f in res.recommended.frameworks)
                     + f" (--export {'|'.join(exports_for(res.recommended.frameworks))})")
    if res.what_if is not None:
        w = res.what_if
        base = f" vs {res.recommended.step_s:.2f} s recommended" if res.recommended else ""
        notes.append(f"what-if (no framework runs OptimusNIC): the best SmartNIC layout is "
                     f"{parallel_text(w.layout)} ZeRO-{int(w.layout.zero)} with {w.layout.smartnic}, "
                     f"{w.gpu_bytes / GB:.1f} GB per GPU, step {w.step_s:.2f} s{base}")
    return notes


def _nic_table(res) -> Table:
    """The SmartNIC what-if table of the recommended layout (``res.nic_sizing``)."""
    nrows = [{**n, "card_GB": n["memory_bytes"] / GB,
              "opt_GB": n["optimizer_bytes_per_gpu"] / GB,
              "spill_GB": n["host_spill_bytes_per_nic"] / GB,
              "cmp": n["nics_per_gpu_for_compute"] if n["nics_per_gpu_for_compute"]
              is not None else "never",
              "rec": n["recommended_nics_per_node"] if n["recommended_nics_per_node"]
              is not None else "-",
              "gpu": f"{n['gpu_bytes_without_offload'] / GB:.1f}->"
                     f"{n['gpu_bytes_with_offload'] / GB:.1f}"}
             for n in nic_rows(res.nic_sizing)]
    r = res.recommended
    return Table(
        title=f"What-if: SmartNIC offload (OptimusNIC) for the recommended layout's "
              f"{parallel_text(r.layout)} ZeRO-{int(r.layout.zero)} "
              "(optimizer state per GPU on its SmartNIC)",
        rows=nrows, columns=[
            Column("smartnic", "SmartNIC", align="left"), Column("card_GB", "card GB", ".0f"),
            Column("opt_GB", "state/GPU GB", ".1f"),
            Column("nics_per_gpu_for_memory", "cards/GPU (memory)"),
            Column("spill_GB", "spill GB (1/GPU)", ".1f"),
            Column("cmp", "cards/GPU (hide step)"), Column("rec", "per node"),
            Column("gpu", "GPU GB before -> after")])


def _row_physics(res, si) -> dict:
    """The recommended row's framework physics profile (what it set over the plan's own
    assumptions, ``assumed``): the values its numbers, its page and its SmartNIC what-if use."""
    from optimus_calc.search.plan import recommended_inputs
    choice = recommended_inputs(res, si).framework
    return {"physics_profile": choice.data()} if choice is not None else {}


def _plan_data(res, si, ranged) -> dict:
    """The machine-readable (JSON) data of the plan."""
    return {
        "model": res.model.name, "node": res.hw.node.name, "nodes": res.hw.nodes,
        "gpus": res.hw.gpus, "objective": res.objective,
        "assumed": {"seq_len": res.training.seq_len,
                    "global_batch": shown_training(res.training).global_batch,
                    "precision": res.training.precision.value,
                    "optimizer": res.training.optimizer.value,
                    **launch_data(res.training), "assumptions": dict(si.assumptions)},
        "layouts": res.evaluated // res.profiles, "profiles": res.profiles,
        "evaluated": res.evaluated, "feasible": res.feasible,
        "infeasible_by_reason": res.infeasible_by_reason,
        "candidates": [{**candidate_data(c, res.model), **ranged(c),
                        **applied_imbalance(res.model, si.assumptions, c.layout)}
                       for c in res.top],
        "recommended": ({**candidate_data(res.recommended, res.model), **ranged(res.recommended),
                         **applied_imbalance(res.model, si.assumptions, res.recommended.layout),
                         **_row_physics(res, si)}
                        if res.recommended else None),
        **(ranged(res.recommended) if res.recommended else {}),
        "why": res.why, "smartnics": nic_rows(res.nic_sizing), "notes": list(res.notes),
        "frameworks": list(res.frameworks),
        "framework_rejections": dict(res.framework_rejections),
        "what_if": ({**candidate_data(res.what_if, res.model)} if res.what_if is not None
                    else None),
        "global_batch_rule": bool(si.global_batch_defaulted),
        "smallest_gpu_memory_bytes": res.smallest_gpu_bytes,
    }


def attention_text(gpu, tr, asm, d_head: float = 128.0, note: str = "") -> str:
    """The attention kernel and its efficiency (on causally halved FLOPs, at the head dim), or
    unfused; and which FLOPs MFU counts."""
    from optimus_calc.evaluate.efficiency import kernel_efficiency, kernel_of
    from optimus_calc.report.common import head_dim_note
    k = tr.attention_kernel
    kernel = (f"{kernel_of(gpu, k, asm)} {kernel_efficiency(gpu, k, asm, d_head):g}"
              f"{head_dim_note(gpu, k, asm, d_head)} on the halved causal FLOPs{note}"
              if tr.flash_attention else f"unfused {gpu.attention_eta:g}")
    return kernel + ("; MFU on model FLOPs with attention un-halved (mfu_causal: halved, as "
                     "Megatron-LM logs; mfu_6n: 6 N tokens)")


def _plan_csv(res, rows: list[dict], train: TrainRequest | None) -> Table:
    """The CSV table: the context columns, then each row less its display-only fields (MFU in
    percent); where no layout fits, one row of the context, an empty rank and the reason."""
    ctx = context_row(res.model.name, res.hw, shown_training(res.training), train)
    view_only = ("gpu_GB", "headroom_GB", "offload_txt", "sp_txt", "mfu", "tokens")
    csv_rows = []
    for r in rows:
        out = dict(ctx)
        if "recompute_modules" in out:  # the search's list: each row's own (candidate_data)
            out["recompute_modules"] = r.get("recompute_modules", "")
        for k, v in r.items():
            if k in ("mfu", "mfu_low", "mfu_high", "mfu_6n", "mfu_causal"):  # CSV: percent
                out[k + "_pct" if k in ("mfu_6n", "mfu_causal") else
                    k.replace("mfu", "mfu_pct")] = pct(v)
            elif k not in view_only:
                out[k] = v
        csv_rows.append(out)
    if not csv_rows:  # nothing fits: the search's answer is the reason, as sweep's rows say
        csv_rows = [{**ctx, "rank": None, "reason": res.why}]
    return Table(title="", rows=csv_rows, columns=[Column(k, k) for k in csv_rows[0]])


def plan_document(res, si, train: TrainRequest | None = None) -> Document:
    """The document of a :class:`optimus_calc.search.plan.PlanResult` searched over ``si``
    (:class:`optimus_calc.inputs.SearchInputs`), with the time and cost to train ``train``."""
    asm = si.assumptions

    def figures(c) -> dict:
        return train_figures(train, c.step_s, c.training, res.hw, asm)

    def ranged(c) -> dict:  # the --tokens figures and the error ranges (regimes.py)
        fig = figures(c)
        return {**fig, **candidate_ranges(c, res, si.profile, fig)}
    rows = _plan_rows(res, ranged, asm)
    tables = [Table(title=f"top {len(rows)} layouts", rows=rows,
                    columns=_plan_columns(rows, train))]
    notes = _plan_notes(res, ranged)
    notes += imbalance_note(res.model, asm, getattr(res.recommended, "layout", None),
                            "the recommended layout's ")
    notes += res.notes
    if res.nic_sizing:
        tables.append(_nic_table(res))
        notes += still_unfit_note(res.nic_sizing)
        notes.append("cards/GPU (hide step): SmartNICs per GPU so that the optimizer step and "
                     "its transfers fit in the last micro-batch's backward + the next forward "
                     "+ the exposed DP time; "
                     "per node = the larger of memory and compute x GPUs per node")
    rec = figures(res.recommended) if res.recommended else {}
    if rec:
        from optimus_calc.report.step_view import train_note
        notes.append("recommended layout, " + train_note(rec, asm.pue))
    data = _plan_data(res, si, ranged)
    if unread := search_unread_note(si):  # as `step` says it (unread_flags_note)
        notes.append(unread)
        data["unread_launch_flags"] = unread
    return Document(title=f"plan: {res.model.name} on {res.hw.nodes} x {res.hw.node.name} "
                          f"({res.hw.gpus} x {res.hw.gpu.name})",
                    header=plan_header(res, si), data=data,
                    tables=tables, notes=notes, csv=_plan_csv(res, rows, train))


def deepspeed_config(c, model) -> str:
    return export_text("deepspeed", c, model)


def megatron_args(c, model, gpus_per_node: int | None = None) -> str:
    return export_text("megatron", c, model, gpus_per_node)


def torchtitan_config(c, model) -> str:
    return export_text("torchtitan", c, model)


def export_text(target, c, model, gpus_per_node: int | None = None) -> str:
    """The candidate ``c`` as ``target``'s configuration (the framework plug-in's exporter)."""
    from optimus_calc.frameworks import exporter
    asm = _asm_of(c)  # the split the candidate was evaluated with
    extra_first = None if asm is None else bool(asm.pipeline_extra_layers_first > 0)
    return exporter(target).render(c.layout, c.training, model, gpus_per_node, extra_first)


def still_unfit_note(sizing) -> list[str]:
    """The note where the GPU does not hold what stays on it with the optimizer state on the
    cards (the same for every card type: the state leaves the GPU whichever holds it); []
    where it does."""
    n = next((x for x in sizing if not x.gpu_fits_with_offload), None)
    if n is None:
        return []
    return [f"with the optimizer state on SmartNICs the GPU still holds "
            f"{n.gpu_bytes_with_offload / GB:.1f} GB of {n.gpu_usable_bytes / GB:.1f} GB "
            "usable: this layout DOES NOT FIT with SmartNICs either (`memory ... --offload "
            "smartnic` says why); the card counts are for its optimizer state only"]
