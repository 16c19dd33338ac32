"""Document for `optimus-calc nics`."""

from __future__ import annotations

from optimus_calc.report.common import layout_text
from optimus_calc.report.common import applied_imbalance, imbalance_note
from optimus_calc.report import plan_view
from optimus_calc.report.document import Column, Document, Table


def nics_rows(sizing, hw) -> list[dict]:
    """One row per SmartNIC type of ``sizing`` (analyses.nics.NicSizing) on the cluster ``hw``."""
    g, per_node = hw.gpus, hw.gpus_per_node
    return [{
        "smartnic": n.smartnic, "optimizer_bytes_per_gpu": n.optimizer_bytes_per_gpu,
        "nic_memory_bytes": n.memory_bytes,
        "nics_per_gpu_for_memory": n.nics_per_gpu_for_memory,
        "nics_for_memory": n.nics_for_memory(g),
        "nics_per_gpu_for_compute": n.nics_per_gpu_for_compute,
        "nics_for_compute": n.nics_for_compute(g),
        "recommended_nics_per_node": n.nics_per_node(per_node),
        "host_spill_bytes_per_nic": n.host_spill_bytes_per_nic,
        "optimizer_s_one_card": n.optimizer_s_one_card, "window_s": n.window_s,
        "gpu_bytes_without_offload": n.gpu_bytes_without_offload,
        "gpu_bytes_with_offload": n.gpu_bytes_with_offload,
        "gpu_fits_with_offload": n.gpu_fits_with_offload} for n in sizing]


def nics_document(model, hw, layout, sizing, source: str, framework: str = "",
                  unread: str = "", asm=None) -> Document:
    """``source`` says which layout was sized ("the given layout", "the recommended layout");
    ``framework`` whose physics profile the sizing used, and why (header line); ``unread`` the
    launch flags it does not read (report.common.unread_flags_note); ``asm`` the assumptions
    sized with (an --moe-imbalance capped at the layout is said)."""
    rows = nics_rows(sizing, hw)
    # an MoE model's typed and applied --moe-imbalance, in the JSON and on each CSV row
    imb = applied_imbalance(model, asm, layout, typed=True) if asm is not None else {}
    data = rows[0] if len(rows) == 1 else {"smartnics": rows}
    data = {**data, "layout": {"tp": layout.tp, "pp": layout.pp, "dp": layout.dp,
                               "cp": layout.cp, "ep": layout.ep, "etp": layout.etp,
                               "interleave": layout.interleave, "zero": int(layout.zero)},
            "sized_for": source, **({"unread_launch_flags": unread} if unread else {}),
            **imb}
    csv_rows = [{**r, **imb} for r in rows]
    view = [{**r, "opt_GB": r["optimizer_bytes_per_gpu"] / 1e9,
             "card_GB": r["nic_memory_bytes"] / 1e9,
             "spill_GB": r["host_spill_bytes_per_nic"] / 1e9,
             "cmp": "-" if r["nics_for_compute"] is None else r["nics_for_compute"]}
            for r in rows]
    return Document(
        title=f"nics: {model.name} on {hw.nodes} x {hw.node.name}, sized for {source} "
              f"({layout_text(layout).split(', offload')[0]})",  # the offload is what it sizes
        header=[("framework", framework)] if framework else [],
        data=data, tables=[Table(title="", rows=view, columns=[
            Column("smartnic", "SmartNIC", align="left"), Column("card_GB", "card GB", ".0f"),
            Column("opt_GB", "state/GPU GB", ".2f"),
            Column("nics_per_gpu_for_memory", "per GPU (memory)"),
            Column("nics_for_memory", "cluster (memory)"),
            Column("cmp", "cluster (hide step)"),
            Column("recommended_nics_per_node", "per node"),
            Column("spill_GB", "spill GB, 1 per GPU", ".2f")])],
        notes=([_compute_note(model, rows)] + plan_view.still_unfit_note(sizing)
               + ([unread] if unread else [])
               + (imbalance_note(model, asm, layout) if asm is not None else [])),
        csv=Table(title="", rows=csv_rows, columns=[Column(k, k) for k in csv_rows[0]]))


def _compute_note(model, rows) -> str:
    """What the cards to hide the step say: none for a bare count (no step time), '-' where no
    count up to analyses.nics.MAX_CARDS_PER_GPU per GPU hides it, else how per node is taken."""
    from optimus_calc.analyses.nics import MAX_CARDS_PER_GPU
    from optimus_calc.specs.model import BareModel
    if isinstance(model, BareModel):
        return "bare parameter counts have no step time: only memory sizing"
    if any(r["nics_for_compute"] is None for r in rows):
        return (f"cluster (hide step) '-': no count up to {MAX_CARDS_PER_GPU} cards per GPU "
                "hides the optimizer step and its transfers; per node = the memory count there")
    return "per node = max(memory, compute) cards per GPU x GPUs per node"
