"""Run and render `compare`."""

from __future__ import annotations

from optimus_calc.report.common import layout_text, training_text
from optimus_calc.report.document import Column, Document, Table
from optimus_calc.units import GB


def strategies(cat, node) -> list[tuple[str, str, str | None]]:
    out = [("no offload (optimizer on GPU)", "none", None),
           ("ZeRO-Offload (CPU)", "cpu", None),
           ("ZeRO-Infinity (NVMe)", "nvme", None)]
    for sn in cat.all("smartnic"):
        out.append((f"OptimusNIC ({sn.name})", "smartnic", sn.name))
    if node.superchip:
        out.append(("SuperOffload (Grace)", "superchip", None))
    return out


def run_compare(app, model: str, kw: dict):
    from optimus_calc.cli.step_cmd import run_step
    node = app.catalog.get(kw["node"], "node", what="node")
    rows, inp0 = [], None
    for label, target, sn in strategies(app.catalog, node):
        k = dict(kw, offload=target, smartnic=sn or kw.get("smartnic"))
        inp, mem, st = run_step(app, model, k)
        inp0 = inp0 or inp
        off = mem.offload
        rows.append({
            "strategy": label, "offload": target, "smartnic": sn,
            "gpu_memory_GB": mem.worst.total_bytes / GB,
            "offload_device": off.device if target != "none" else "-",
            "offload_bytes_per_device_GB": off.bytes_per_device / GB,
            "offload_capacity_GB": off.capacity_bytes_per_device / GB,
            "spill_GB": off.spill_to_host_bytes_per_device / GB,
            "optimizer_s": st.optimizer_s, "optimizer_exposed_s": st.optimizer_exposed_s,
            "step_time_s": st.step_time_s, "tokens_per_s": st.tokens_per_s, "mfu": st.mfu,
            "fits": mem.fits, "reasons": mem.reasons})
    return rows, inp0


def compare_document(inp, rows: list[dict]) -> Document:
    feasible = [r for r in rows if r["fits"]]
    # equal step times (to 0.1%) prefer no spill to host, then the faster optimizer step
    best = min(feasible, key=lambda r: (round(r["step_time_s"] / feasible[0]["step_time_s"], 3),
                                        r["spill_GB"] > 0, r["optimizer_s"])) if feasible else None
    base = next(r for r in rows if r["offload"] == "none")
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
                  if r["offload"] != "none" else "-"} for r in rows]
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
