"""Document for `optimus-calc comm`: renders an evaluate.comm.CommReport, computes nothing."""

from __future__ import annotations

from dataclasses import asdict

from optimus_calc.report.document import Column, Document, Table
from optimus_calc.units import fmt_bytes


def _squeeze_data(row) -> dict:
    s = row.squeeze
    return {"ratio": s.ratio, "compress_on": s.site.value, "approach": s.approach.value,
            "compressor_GBps": s.compressor_GBps, "node_compressor_GBps": s.node_compressor_GBps,
            "gpu_compressor_GBps": s.gpu_compressor_GBps, "baseline_s": s.baseline_s,
            "approach1_s": s.approach1_s, "approach2_s": s.approach2_s,
            "chosen": row.compressed, "fastest": row.fastest}


def _result_data(row) -> dict:
    r = row.uncompressed
    d = {"collective": r.collective.value, "algo": r.algo.value, "reported": row.label,
         "size_bytes": row.size_bytes, "ranks": r.ranks, "nodes": r.nodes,
         "time_s": row.time_s, "algbw_GBps": row.algbw_GBps, "busbw_GBps": row.busbw_GBps,
         "phases": [asdict(p) for p in r.phases]}
    if r.pipeline_chunks is not None:
        d["pipeline_chunks"] = r.pipeline_chunks
        d["chunk_bytes"] = r.chunk_bytes
    if r.injected_bytes_per_rank is not None:
        d["injected_bytes_per_rank"] = r.injected_bytes_per_rank
    if row.squeeze is not None:
        d["uncompressed_time_s"] = r.time_s
        d["compression"] = _squeeze_data(row)
    return d


def comm_document(rep, binary: bool = False) -> Document:
    topo, first = rep.topology, rep.rows[0]
    header = [("topology", f"{topo.ranks} ranks = {topo.nodes} node(s) x {topo.per_node} GPUs "
                           f"({rep.node}, {rep.gpu})"),
              ("intra-node", f"{topo.intra_link}: {topo.intra_Bps / 1e9:.1f} GB/s effective per "
                             f"GPU per direction, alpha {topo.alpha_intra_s * 1e6:g} us"),
              ("inter-node", f"{topo.inter_link}: {topo.nic_Bps / 1e9:.2f} GB/s effective per "
                             f"NIC, {topo.node_network_Bps / 1e9:.1f} GB/s per node, alpha "
                             f"{topo.alpha_inter_s * 1e6:g} us" if topo.nodes > 1 else "unused"),
              ("bus bandwidth", f"nccl-tests convention: algbw x {rep.collective.bus_factor_text}")]
    labels = {r.label for r in rep.rows}
    mixed = len(labels) > 1
    rows = [{"size": fmt_bytes(r.size_bytes, binary=binary), "algorithm": r.label,
             "size_bytes": r.size_bytes, "time_s": r.time_s, "time_us": r.time_s * 1e6,
             "algbw_GBps": r.algbw_GBps, "busbw_GBps": r.busbw_GBps} for r in rep.rows]
    cols = [Column("size", "size"), Column("time_us", "time (us)", ".1f"),
            Column("algbw_GBps", "algbw (GB/s)", ".2f"),
            Column("busbw_GBps", "busbw (GB/s)", ".2f")]
    if mixed:
        cols.append(Column("algorithm", "algorithm", align="left"))
    title = rep.collective.value + " (algorithm per row)" if mixed else first.label
    tables = [Table(title=title, rows=rows, columns=cols)]
    csv = Table(title="", rows=rows, columns=[
        Column(k, k) for k in ("size_bytes", "time_s", "algbw_GBps", "busbw_GBps")])
    notes = [f"efficiencies: {rep.intra_link} {rep.intra_efficiency:g} "
             f"({'override' if rep.intra_efficiency_overridden else 'catalog'}), {rep.nic} "
             f"{rep.nic_efficiency:g}; alphas "
             f"{'overridden' if rep.alpha_overridden else 'assumed (catalog)'}; "
             "see `optimus-calc catalog show LINK` for sources"]
    if topo.ranks == 1:
        notes.append("one rank: the collective moves nothing (0 s); its bandwidths are shown as "
                     "0 by convention, not measured")
    if first.uncompressed.protocol:
        notes.append("latency: NCCL's tuning model (src/graph/tuning.cc), base + per-step "
                     "latency of the protocol (LL, LL128, Simple) its model predicts fastest"
                     + (f"; {first.uncompressed.protocol} here" if len(rep.rows) == 1 else ""))
    if len(rep.rows) == 1:
        u = first.uncompressed
        phase_rows = [{"phase": p.name, "link": p.link, "bytes": fmt_bytes(p.bytes),
                       "time_us": p.time_s * 1e6} for p in u.phases]
        if phase_rows and not first.compressed:
            tables.append(Table(title="breakdown", rows=phase_rows, columns=[
                Column("phase", "phase", align="left"), Column("link", "link", align="left"),
                Column("bytes", "bytes per rank"), Column("time_us", "time (us)", ".1f")]))
        if u.pipeline_chunks is not None:
            notes.append(f"phases pipelined over {u.pipeline_chunks} chunk(s) of "
                         f"{fmt_bytes(u.chunk_bytes, binary=True)} (hier_chunk_bytes, NCCL's "
                         "default NCCL_BUFFSIZE): the slower of NVLink (reduce-scatter + "
                         "all-gather) and the network sets the pace, the other adds one chunk")
        if first.squeeze is not None:
            s = first.squeeze
            notes.append(f"SqueezeNIC: r = {s.ratio:g}, hardware compression on {s.site.value} "
                         f"({s.compressor_GBps:g} GB/s each, {s.node_compressor_GBps:g} GB/s "
                         f"per node), GPU kernel {s.gpu_compressor_GBps:g} GB/s; equations 1-3 "
                         "on the same per-GPU buffer as the ring, local all-gather included")
            tables.append(Table(title="all-reduce candidates (same buffer, every GPU gets the "
                                      "result)",
                                rows=[{"a": k, "t": t * 1e6} for k, t in first.candidates],
                                columns=[Column("a", "algorithm", align="left"),
                                         Column("t", "time (us)", ".1f")]))
            verdict = (f"reported: {first.label}" if first.compressed else
                       f"compression not chosen: approach {s.approach.value} "
                       f"({s.approach_s * 1e6:.1f} us) is not faster than "
                       f"{first.label} ({u.time_s * 1e6:.1f} us)")
            notes.append(verdict)
            notes.append(f"fastest: {first.fastest}")
        if u.injected_bytes_per_rank is not None:
            notes.append(f"bytes injected per rank: {fmt_bytes(u.injected_bytes_per_rank)}")
    data = _result_data(first) if len(rep.rows) == 1 else {
        "collective": rep.collective.value, "algo": rep.algo.value,
        "rows": [_result_data(r) for r in rep.rows]}
    data["topology"] = {"ranks": topo.ranks, "nodes": topo.nodes, "per_node": topo.per_node,
                        "intra_Bps": topo.intra_Bps, "nic_Bps": topo.nic_Bps,
                        "node_network_Bps": topo.node_network_Bps,
                        "alpha_intra_s": topo.alpha_intra_s, "alpha_inter_s": topo.alpha_inter_s}
    data["size_units"] = "binary" if binary else "decimal"  # how the table names the sizes
    return Document(title=f"comm: {rep.collective.value} on {rep.node}", data=data,
                    header=header, tables=tables, notes=notes, csv=csv, plot="comm")
