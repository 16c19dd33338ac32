"""Render `compare` (the evaluation and the choice are analyses/compare.py's)."""

from __future__ import annotations

from optimus_calc.report.common import (TrainRequest, add_unread_flags_note, applied_modules,
                                        context_row, launch_data, layout_data, layout_text, pct,
                                        train_figures, training_data, training_text)
from optimus_calc.report.common import applied_imbalance, imbalance_note
from optimus_calc.report.document import Column, Document, Table
from optimus_calc.specs.training import Offload
from optimus_calc.units import GB


def strategy_row(r, train: TrainRequest | None = None) -> dict:
    """One strategy of :class:`optimus_calc.analyses.compare.Comparison` as a table/JSON row."""
    mem, st, strat, inp = r.memory, r.step, r.strategy, r.inputs
    off = mem.offload
    w = mem.worst
    return {
        "strategy": strat.label, "offload": strat.offload.value, "smartnic": strat.smartnic,
        "gpu_memory_bytes": w.total_bytes,
        "gpu_weights_bytes": w.weights_bytes, "gpu_gradients_bytes": w.gradients_bytes,
        "gpu_optimizer_bytes": w.optimizer_bytes,
        "gpu_activations_bytes": w.activations_bytes,
        "gpu_overhead_bytes": w.overhead_bytes, "gpu_capacity_bytes": mem.capacity_bytes,
        "offload_device": off.device if strat.offload is not Offload.NONE else None,
        "offload_bytes_per_device": off.bytes_per_device,
        "offload_capacity_bytes_per_device": off.capacity_bytes_per_device,
        "spill_bytes_per_device": off.spill_to_host_bytes_per_device,
        "optimizer_s": st.optimizer_s, "optimizer_exposed_s": st.optimizer_exposed_s,
        "step_time_s": st.step_time_s, "tokens_per_s": st.tokens_per_s, "mfu": st.mfu,
        "fits": mem.fits, "reasons": mem.reasons, "what_if": strat.what_if,
        "frameworks": list(r.frameworks),
        "framework": getattr(getattr(inp, "framework", None), "key", None) or "neutral",
        **({"recompute_modules": m} if (m := applied_modules(inp.training, inp.model)) else {}),
        **train_figures(train, st.step_time_s, inp.training, inp.hw, inp.assumptions)}


def _csv_rows(cmp, rows: list[dict], ctx: dict) -> list[dict]:
    """The CSV rows: the context columns, the layout, each strategy's own columns; a
    --recompute-modules list as each strategy runs it (empty where its profile drops it)."""
    skip = {"reasons", "mfu", "tokens"}
    mods = any("recompute_modules" in r for r in rows) or "recompute_modules" in ctx
    return [{**ctx, **_layout_columns(res), **{k: v for k, v in r.items() if k not in skip},
             **({"recompute_modules": r.get("recompute_modules", "")} if mods else {}),
             "mfu_pct": pct(r["mfu"]), "reasons": r["reasons"]}
            for res, r in zip(cmp.results, rows)]


def _layout(r) -> dict:
    """The layout a strategy row was evaluated with, but its offload (the row's own columns):
    compare's defaults are not step's (TP = the node's GPUs, ZeRO-3, selective recompute),
    so JSON and CSV say what the table's header line says."""
    return {k: v for k, v in layout_data(r.inputs.layout).items()
            if k not in ("offload", "smartnic", "offload_params")}


def _layout_columns(r) -> dict:
    tr = r.inputs.training
    # sequence parallelism too: the table's header says it, and --framework may set it
    # (frameworks/physics.framework_sp: DeepSpeed AutoTP runs TP without it)
    return {**_layout(r), "micro_batch": tr.micro_batch, "recompute": tr.recompute.value,
            "sequence_parallel": tr.sequence_parallel}


def compare_document(cmp, train: TrainRequest | None = None) -> Document:
    """The document of a :class:`optimus_calc.analyses.compare.Comparison` (its evaluation and
    choice of the best are analyses/compare.py's), with step's note on unread launch flags."""
    inp, rows = cmp.inputs, [strategy_row(r, train) for r in cmp.results]
    best = next((row for r, row in zip(cmp.results, rows) if r is cmp.best), None)
    base = next(row for r, row in zip(cmp.results, rows) if r is cmp.baseline)
    notes = imbalance_note(inp.model, inp.assumptions, inp.layout)
    if best:
        verdict = (f"best on this hardware: {best['strategy']}, step {best['step_time_s']:.2f} s, "
                   f"GPU memory {best['gpu_memory_bytes'] / GB:.1f} GB")
        if base["fits"] and best is not base:
            verdict += (f"; {100 * (1 - best['step_time_s'] / base['step_time_s']):.1f}% faster "
                        "than keeping the optimizer on the GPU")
        elif not base["fits"]:
            verdict += "; without offload the layout does not fit"
        notes.append(verdict)
    else:
        notes.append("no strategy the node has and a framework runs fits this layout; try "
                     "`optimus-calc plan` or more nodes")
    if cmp.best_what_if is not None:
        w = next(row for r, row in zip(cmp.results, rows) if r is cmp.best_what_if)
        notes.append(f"best what-if (hardware the node lacks, or no framework runs it): "
                     f"{w['strategy']}, step {w['step_time_s']:.2f} s, GPU memory "
                     f"{w['gpu_memory_bytes'] / GB:.1f} GB")
    longer = [r["strategy"] for r in rows
              if r["optimizer_exposed_s"] > r["optimizer_s"] * (1 + 1e-9)]
    if longer:
        notes.append("exposed s: what the step waits for, the optimizer step and its transfers "
                     "to and from the device that do not hide; above opt step s where the "
                     f"transfers outlast the step ({', '.join(longer)})")
    for r, res in zip(rows, cmp.results):
        if not r["what_if"] and res.refusal:
            notes.append(f"{r['strategy']}: no framework runs this layout (a what-if): "
                         f"{res.refusal}")
        if r["reasons"]:
            notes.append(f"{r['strategy']}: {'; '.join(r['reasons'])}")
        elif r["spill_bytes_per_device"] > 0:
            notes.append(f"{r['strategy']}: {r['spill_bytes_per_device'] / GB:.1f} GB per card "
                         "spills to host RAM")
    view_rows = [{**r, "gpu_memory_GB": r["gpu_memory_bytes"] / GB,
                  "offload_mem": (f"{r['offload_bytes_per_device'] / GB:.1f} / "
                                  f"{r['offload_capacity_bytes_per_device'] / GB:.0f}")
                  if r["offload"] != Offload.NONE.value else "-"} for r in rows]
    extra = []
    if train is not None:
        extra = [Column("train_days", "days", ",.1f"), Column("gpu_hours", "GPU-h", ",.0f",
                                                                compact=False)]
        if train.gpu_hour_price is not None:
            extra.append(Column("cost_usd", "USD", ",.0f"))
        notes.append(f"{train.tokens:.4g} tokens, steps = tokens / (global batch x seq); energy "
                     f"(JSON/CSV) at GPU TDP x PUE {inp.assumptions.pue:g} (assumed)")
    table = Table(title="", rows=view_rows, columns=[
        Column("strategy", "strategy", align="left"),
        Column("framework", "physics of", align="left"),
        Column("gpu_memory_GB", "GPU GB", ".1f"),
        Column("offload_mem", "device GB / cap"),
        Column("optimizer_s", "opt step s", ".3f", compact=False),
        Column("optimizer_exposed_s", "exposed s", ".3f", compact=False),
        Column("step_time_s", "step s", ".2f"),
        Column("mfu", "MFU", ".1%"),
        Column("fits", "fits"), *extra])
    csv_rows = _csv_rows(cmp, rows, {
        **context_row(inp.model.name, inp.hw, inp.training, train),
        **applied_imbalance(inp.model, inp.assumptions, inp.layout, typed=True)})
    data = {"model": inp.model.name, "node": inp.hw.node.name, "nodes": inp.hw.nodes,
            "gpus": inp.hw.gpus, "seq_len": inp.training.seq_len,
            "global_batch": inp.training.global_batch, **launch_data(inp.training),
            "layout": _layout(cmp.baseline), "training": training_data(inp.training),
            **applied_imbalance(inp.model, inp.assumptions, inp.layout, typed=True),
            "strategies": rows,
            "best": best["strategy"] if best else None}
    add_unread_flags_note(inp, notes, data)
    return Document(
        title=f"compare: {inp.model.name} on {inp.hw.nodes} x {inp.hw.node.name} "
              f"({inp.hw.gpus} x {inp.hw.gpu.name})",
        header=[("layout", layout_text(inp.layout).rsplit(", offload", 1)[0]),
                ("training", training_text(inp))],
        data=data, tables=[table], notes=notes, plot="compare",
        csv=Table(title="", rows=csv_rows, columns=[Column(k, k) for k in csv_rows[0]]))
