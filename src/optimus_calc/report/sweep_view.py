"""Document for `optimus-calc sweep`: one row per configuration, for spreadsheets."""

from __future__ import annotations

from optimus_calc.report.common import (TrainRequest, applied_imbalance, applied_modules,
                                        imbalance_note, launch_data, launch_text, pct,
                                        search_unread_note, shown_training, train_figures)
from optimus_calc.report.document import Column, Document, Table
from optimus_calc.report.plan_view import candidate_data, candidate_ranges

SWEEP_COLUMNS = [
    "model", "node", "nodes", "gpus", "seq_len", "global_batch", "precision", "smartnic", "fits",
    "tp", "pp", "dp", "cp", "ep", "etp", "zero", "offload", "offload_params", "recompute",
    "sequence_parallel", "micro_batch", "interleave", "framework", "gpu_memory_bytes", "gpu_headroom_bytes", "step_time_s",
    "mfu_pct", "tokens_per_s", "whatif_smartnic_step_time_s", "whatif_smartnic_tokens_per_s",
    "optimizer_bytes_per_gpu", "nics_per_gpu_for_memory", "nics_per_gpu_for_compute",
    "layouts_evaluated", "layouts_feasible", "reason"]
TRAIN_COLUMNS = ["tokens", "steps", "train_days", "gpu_hours", "energy_MWh", "cost_usd"]
# error ranges of the headline figures (regimes.py): null where unvalidated
RANGE_COLUMNS = ["step_time_s_low", "step_time_s_high", "tokens_per_s_low", "tokens_per_s_high",
                 "mfu_pct_low", "mfu_pct_high", "gpu_memory_bytes_low", "gpu_memory_bytes_high",
                 "error_range", "error_range_basis"]
TRAIN_RANGE_COLUMNS = ["train_days_low", "train_days_high", "cost_usd_low", "cost_usd_high"]


def sweep_row(p, train: TrainRequest | None = None, profile=None) -> dict:
    """One :class:`optimus_calc.analyses.sweep.SweepPoint` as a row of SWEEP_COLUMNS (and
    TRAIN_COLUMNS with a token budget)."""
    res = p.result
    tr = shown_training(res.training)
    row = dict.fromkeys(SWEEP_COLUMNS + (TRAIN_COLUMNS if train else []) + RANGE_COLUMNS
                        + (TRAIN_RANGE_COLUMNS if train else []))
    row.update(model=res.model.name, node=res.hw.node.name, nodes=p.nodes, gpus=res.hw.gpus,
               seq_len=tr.seq_len, global_batch=tr.global_batch, precision=tr.precision.value,
               fits=res.recommended is not None, layouts_evaluated=res.evaluated,
               layouts_feasible=res.feasible, reason="" if res.recommended else res.why,
               smartnic_offered=res.hw.smartnic.name, **launch_data(tr),
               global_batch_rule=res.training.global_batch is None)  # JSON: the rule's batch
    if "recompute_modules" in row:  # the search's list as the winner runs it; none: ""
        row["recompute_modules"] = (applied_modules(res.recommended.training, res.model)
                                    if res.recommended else "")
    if train:
        row["tokens"] = train.tokens  # context, also where nothing fits
    if res.model.is_moe:  # the typed value on every MoE row, the applied one with a layout
        row.update(moe_imbalance=p.assumptions.moe_imbalance, moe_imbalance_applied=None)
    if not res.recommended and getattr(p, "offload", None) is not None:
        row["offload"] = p.offload.value  # the target the point was asked for
    if res.recommended:
        r = res.recommended
        d = candidate_data(r, res.model)
        row.update({k: d[k] for k in d if k in row})
        row["mfu_pct"] = pct(r.mfu)
        row["mfu"] = r.mfu
        row.update(applied_imbalance(res.model, p.assumptions, r.layout, typed=True))
        row["sequence_parallel"] = r.training.sequence_parallel
        row.update(train_figures(train, r.step_s, r.training, res.hw, p.assumptions))
        ranges = candidate_ranges(r, res, profile, row)
        ranges.update(mfu_pct_low=pct(ranges.get("mfu_low")),
                      mfu_pct_high=pct(ranges.get("mfu_high")))
        row.update({k: v for k, v in ranges.items() if k in row})
    if p.sizing is not None and res.what_if is not None:
        # the SmartNIC columns describe the what-if (no framework runs OptimusNIC): the best
        # layout with the card offered and the cards it needs; rows that differ only in a
        # SmartNIC that gives no what-if are one row
        z, w = p.sizing, res.what_if
        row.update(smartnic=res.hw.smartnic.name, whatif_smartnic_step_time_s=w.step_s,
                   whatif_smartnic_tokens_per_s=w.tokens_per_s,
                   optimizer_bytes_per_gpu=z.optimizer_bytes_per_gpu,
                   nics_per_gpu_for_memory=z.nics_per_gpu_for_memory,
                   nics_per_gpu_for_compute=z.nics_per_gpu_for_compute)
    return row


def sweep_rows(points, train: TrainRequest | None = None, profile=None) -> list[dict]:
    """The rows of ``points``, one per distinct winner: points that differ only in the SmartNIC
    offered, and whose winner does not use it, give one row."""
    rows: list[dict] = []
    for p in points:
        row = sweep_row(p, train, profile)
        key = tuple(v for k, v in row.items() if k != "smartnic_offered")
        if any(key == tuple(v for k, v in o.items() if k != "smartnic_offered") for o in rows):
            continue  # the same winner whatever SmartNIC was offered
        rows.append(row)
    return rows


def sweep_document(points, train: TrainRequest | None = None, profile=None,
                   si=None) -> Document:
    """The sweep's rows; ``si``: the search's shared inputs (SearchInputs), for the note on
    launch flags none of its profiles reads."""
    from optimus_calc.report.plan_view import objective_text
    rows = sweep_rows(points, train, profile)
    launch = launch_data(points[0].result.training) if points else {}  # one for every point
    moe = (["moe_imbalance", "moe_imbalance_applied"]  # an MoE model's rows (empty: dense)
           if any(p.result.model.is_moe for p in points) else [])
    csv_cols = (SWEEP_COLUMNS + list(launch) + moe + (TRAIN_COLUMNS if train else [])
                + RANGE_COLUMNS + (TRAIN_RANGE_COLUMNS if train else []))
    table = Table(title="", rows=rows, columns=[Column(k, k) for k in csv_cols])
    # most telling columns first: a narrow terminal hides them from the right
    view_cols = [Column(k, k, align="left") for k in ("model", "node", "nodes", "smartnic")]
    view_cols += [Column("tokens_per_s", "tokens/s", ",.0f"), Column("mfu", "MFU", ".1%"),
                  Column("step_time_s", "step s", ".2f")]
    if train:
        view_cols.append(Column("train_days", "days", ",.1f"))
        if train.gpu_hour_price is not None:
            view_cols.append(Column("cost_usd", "USD", ",.0f"))
    view_cols += [
        Column("offload", "offload", align="left"), Column("tp", "TP"), Column("pp", "PP"),
        Column("dp", "DP"), Column("zero", "ZeRO"), Column("gpu_GB", "GPU GB", ".1f"),
        Column("global_batch", "batch", compact=False),
        Column("fits", "fits", compact=False),
        Column("nics_per_gpu_for_memory", "NICs/GPU", compact=False)]
    view = Table(title="", rows=[{**r, "gpu_GB": None if r["gpu_memory_bytes"] is None
                                  else r["gpu_memory_bytes"] / 1e9} for r in rows],
                 columns=view_cols)
    header = ([("objective", "each point's first layout by " + objective_text(
        points[0].result.objective))] if points else [])
    if launch:
        header.append(("launch", launch_text(points[0].result.training).removeprefix(", ")))
    data: dict = {"rows": rows}
    notes = _no_layout_notes(rows) + _imbalance_notes(points)
    if si is not None and (unread := search_unread_note(si)):
        notes.append(unread)
        data["unread_launch_flags"] = unread
    return Document(title=f"sweep: {len(rows)} configurations", data=data, notes=notes,
                    header=header,
                    tables=[view], csv=table, plot="sweep")


def _no_layout_notes(rows: list[dict], most: int = 10) -> list[str]:
    """Why each row without a layout has none (the text table shows dashes there; the CSV's
    reason column says it too), the first ``most`` and a count of the rest."""
    out = [f"{r['model']} on {r['nodes']} x {r['node']}"
           + (f", offload {r['offload']}" if r["offload"] else "") + f": {r['reason']}"
           for r in rows if not r["fits"]]
    return out[:most] + ([f"... and {len(out) - most} more rows without a layout (the CSV's "
                          "reason column)"] if len(out) > most else [])


def _imbalance_notes(points, most: int = 10) -> list[str]:
    """Where a point's recommended layout caps --moe-imbalance (report.common.imbalance_note),
    the first ``most`` and a count of the rest."""
    out = [n for p in points if p.result.recommended is not None
           for n in imbalance_note(p.result.model, p.assumptions, p.result.recommended.layout,
                                   f"{p.result.model.name} on {p.nodes} x "
                                   f"{p.result.hw.node.name}'s ")]
    out = list(dict.fromkeys(out))
    return out[:most] + ([f"... and {len(out) - most} more points where it is capped"]
                         if len(out) > most else [])
