"""The `breakeven --sweep global-batch|micro-batches` table (analyses/breakeven/sweep.py)."""

from __future__ import annotations

from optimus_calc.report.document import Column, Table


def sweep_data(sw) -> dict:
    be = sw.breakeven
    return {"what": sw.what, "breakeven_global_batch": be.global_batch if be else None,
            "breakeven_micro_batches": be.micro_batches if be else None,
            "rows": [{"global_batch": p.global_batch, "micro_batches": p.micro_batches,
                      "micro_batch": p.micro_batch, "offload_step_s": p.offload_step_s,
                      "offload_fits": p.offload_fits, "gpu_step_s": p.gpu_step_s,
                      "gpu_fits": p.gpu_fits, "optimizer_exposed_s": p.exposed_s,
                      "window_s": p.window_s, "pays_off": p.pays_off} for p in sw.points]}


def sweep_table(sw) -> Table:
    rows = [{**r, "off": f"{r['offload_step_s']:.4g}" + ("" if r["offload_fits"] else " (no fit)"),
             "gpu": f"{r['gpu_step_s']:.4g}" + ("" if r["gpu_fits"] else " (no fit)"),
             "pays": "yes" if r["pays_off"] else "no"} for r in sweep_data(sw)["rows"]]
    fixed = ("micro-batches per step fixed" if sw.what == "global-batch"
             else "global batch fixed")
    return Table(title=f"--sweep {sw.what} ({fixed}): the offloaded step against the same "
                       "layout with the optimizer on the GPU",
                 rows=rows, columns=[
                     Column("global_batch", "global batch"),
                     Column("micro_batches", "micro-batches"),
                     Column("micro_batch", "micro-batch"),
                     Column("window_s", "window s", ".4g"),
                     Column("optimizer_exposed_s", "exposed s", ".4g"),
                     Column("off", "step s (offload)"), Column("gpu", "step s (GPU)"),
                     Column("pays", "pays off")])


def sweep_note(sw) -> str:
    be = sw.breakeven
    if be is None:
        return (f"--sweep {sw.what}: the offload does not pay off at the largest batch that "
                "fits")
    text = (f"break-even batch: global batch {be.global_batch} ({be.micro_batches} "
            f"micro-batches of {be.micro_batch}); from there on the offloaded step is no longer "
            "than the same layout's with the optimizer on the GPU")
    if any(not p.gpu_fits for p in sw.points):
        text += ("; where the GPU layout does not fit (no fit) the offload is needed for "
                 "memory anyway")
    return text
