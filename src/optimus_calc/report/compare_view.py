"""Render `compare` (the evaluation and the choice are evaluate/compare.py's)."""

from __future__ import annotations

from optimus_calc.report.common import layout_text, training_text
from optimus_calc.report.document import Column, Document, Table
from optimus_calc.specs.training import Offload
from optimus_calc.units import GB


def strategy_row(r) -> dict:
    """One strategy of :class:`optimus_calc.evaluate.compare.Comparison` as a table/JSON row."""
    mem, st, strat = r.memory, r.step, r.strategy
    off = mem.offload
    return {
        "strategy": strat.label, "offload": strat.offload.value, "smartnic": strat.smartnic,
        "gpu_memory_GB": mem.worst.total_bytes / GB,
        "offload_device": off.device if strat.offload is not Offload.NONE else "-",
        "offload_bytes_per_device_GB": off.bytes_per_device / GB,
        "offload_capacity_GB": off.capacity_bytes_per_device / GB,
        "spill_GB": off.spill_to_host_bytes_per_device / GB,
        "optimizer_s": st.optimizer_s, "optimizer_exposed_s": st.optimizer_exposed_s,
        "step_time_s": st.step_time_s, "tokens_per_s": st.tokens_per_s, "mfu": st.mfu,
        "fits": mem.fits, "reasons": mem.reasons}


def compare_document(cmp) -> Document:
    """The document of a :class:`optimus_calc.evaluate.compare.Comparison`."""
    inp = cmp.inputs
    rows = [strategy_row(r) for r in cmp.results]
    best = next((row for r, row in zip(cmp.results, rows) if r is cmp.best), None)
    base = next(row for r, row in zip(cmp.results, rows) if r is cmp.baseline)
    notes = []
    if best:
        verdict = (f"best on this hardware: {best['strategy']}, step {best['step_time_s']:.2f} s, "
                   f"GPU memory {best['gpu_memory_GB']:.1f} GB")
        if base["fits"] and best is not base:
            verdict += (f"; {100 * (1 - best['step_time_s'] / base['step_time_s']):.1f}% faster "
                        "than keeping the optimizer on the GPU")
        elif not base["fits"]:
            verdict += "; without offload the layout does not fit"
        notes.append(verdict)
    else:
        notes.append("no strategy fits this layout; try `optimus-calc plan` or more nodes")
    for r in rows:
        if r["reasons"]:
            notes.append(f"{r['strategy']}: {'; '.join(r['reasons'])}")
        elif r["spill_GB"] > 0:
            notes.append(f"{r['strategy']}: {r['spill_GB']:.1f} GB per card spills to host RAM")
    view_rows = [{**r, "offload_mem": (f"{r['offload_bytes_per_device_GB']:.1f} / "
                                       f"{r['offload_capacity_GB']:.0f}")
                  if r["offload"] != Offload.NONE.value else "-"} for r in rows]
    table = Table(title="", rows=view_rows, columns=[
        Column("strategy", "strategy", align="left"),
        Column("gpu_memory_GB", "GPU GB", ".1f"),
        Column("offload_mem", "device GB / cap"),
        Column("optimizer_s", "opt step s", ".3f"),
        Column("optimizer_exposed_s", "exposed s", ".3f"),
        Column("step_time_s", "step s", ".2f"),
        Column("mfu", "MFU", ".1%"),
        Column("fits", "fits")])
    csv_cols = [k for k in rows[0] if k != "reasons"] + ["reasons"]
    return Document(
        title=f"compare: {inp.model.name} on {inp.hw.nodes} x {inp.hw.node.name} "
              f"({inp.hw.gpus} x {inp.hw.gpu.name})",
        header=[("layout", layout_text(inp.layout).rsplit(", offload", 1)[0]),
                ("training", training_text(inp))],
        data={"strategies": rows, "best": best["strategy"] if best else None},
        tables=[table], notes=notes,
        csv=Table(title="", rows=rows, columns=[Column(k, k) for k in csv_cols]))
