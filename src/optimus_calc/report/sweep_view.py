"""Document for `optimus-calc sweep`: one row per configuration, for spreadsheets."""

from __future__ import annotations

from optimus_calc.report.document import Column, Document, Table
from optimus_calc.report.plan_view import candidate_data

SWEEP_COLUMNS = [
    "model", "node", "nodes", "gpus", "smartnic", "fits", "tp", "pp", "dp", "cp", "ep", "zero",
    "offload", "recompute", "sequence_parallel", "micro_batch", "interleave",
    "gpu_memory_bytes", "gpu_headroom_bytes", "step_time_s", "mfu", "tokens_per_s",
    "optimizer_bytes_per_gpu", "nics_per_gpu_for_memory", "nics_per_gpu_for_compute",
    "layouts_evaluated", "layouts_feasible", "reason"]


def sweep_row(p) -> dict:
    """One :class:`optimus_calc.search.sweep.SweepPoint` as a row of SWEEP_COLUMNS."""
    res = p.result
    row = dict.fromkeys(SWEEP_COLUMNS)
    row.update(model=res.model.name, node=res.hw.node.name, nodes=p.nodes, gpus=res.hw.gpus,
               smartnic=res.hw.smartnic.name, fits=res.recommended is not None,
               layouts_evaluated=res.evaluated, layouts_feasible=res.feasible,
               reason="" if res.recommended else res.why)
    if res.recommended:
        r = res.recommended
        d = candidate_data(r)
        row.update({k: d[k] for k in d if k in row})
        row["sequence_parallel"] = r.training.sequence_parallel
        z = p.sizing
        row.update(optimizer_bytes_per_gpu=z.optimizer_bytes_per_gpu,
                   nics_per_gpu_for_memory=z.nics_per_gpu_for_memory,
                   nics_per_gpu_for_compute=z.nics_per_gpu_for_compute)
    return row


def sweep_document(points) -> Document:
    rows = [sweep_row(p) for p in points]
    table = Table(title="", rows=rows, columns=[Column(k, k) for k in SWEEP_COLUMNS])
    view = Table(title="", rows=[{**r, "gpu_GB": (r["gpu_memory_bytes"] or 0) / 1e9}
                                 for r in rows], columns=[
        Column(k, k, align="left") for k in ("model", "node", "nodes", "smartnic")] + [
        Column("fits", "fits"), Column("tp", "TP"), Column("pp", "PP"), Column("dp", "DP"),
        Column("zero", "ZeRO"), Column("offload", "offload", align="left"),
        Column("gpu_GB", "GPU GB", ".1f"), Column("step_time_s", "step s", ".2f"),
        Column("mfu", "MFU", ".1%"), Column("nics_per_gpu_for_memory", "NICs/GPU")])
    return Document(title=f"sweep: {len(rows)} configurations", data={"rows": rows},
                    tables=[view], csv=table)
