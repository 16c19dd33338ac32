"""Document for `optimus-calc comm`."""

from __future__ import annotations

from dataclasses import asdict

from optimus_calc.report.document import Column, Document, Table
from optimus_calc.units import fmt_bytes


def _result_data(r) -> dict:
    d = {"collective": r.collective.value, "algo": r.algo.value, "size_bytes": r.size_bytes,
         "ranks": r.ranks, "nodes": r.nodes, "time_s": r.time_s, "algbw_GBps": r.algbw_GBps,
         "busbw_GBps": r.busbw_GBps, "phases": [asdict(p) for p in r.phases]}
    if r.injected_bytes_per_rank is not None:
        d["injected_bytes_per_rank"] = r.injected_bytes_per_rank
    if r.compression is not None:
        d["compression"] = r.compression
    return d


def comm_document(results: list, topo, hw, assumptions_note: str,
                  binary: bool = False) -> Document:
    first = results[0]
    header = [("topology", f"{topo.ranks} ranks = {topo.nodes} node(s) x {topo.per_node} GPUs "
                           f"({hw.node.name}, {hw.gpu.name})"),
              ("intra-node", f"{topo.intra_link}: {topo.intra_Bps / 1e9:.1f} GB/s effective per "
                             f"GPU per direction, alpha {topo.alpha_intra_s * 1e6:g} us"),
              ("inter-node", f"{topo.inter_link}: {topo.nic_Bps / 1e9:.2f} GB/s effective per "
                             f"NIC, {topo.node_network_Bps / 1e9:.1f} GB/s per node, alpha "
                             f"{topo.alpha_inter_s * 1e6:g} us" if topo.nodes > 1 else "unused"),
              ("bus bandwidth", f"nccl-tests convention: algbw x {first.collective.bus_factor_text}")]
    rows = [{"size": fmt_bytes(r.size_bytes, binary=binary),
             "size_bytes": r.size_bytes, "time_s": r.time_s, "time_us": r.time_s * 1e6,
             "algbw_GBps": r.algbw_GBps, "busbw_GBps": r.busbw_GBps} for r in results]
    tables = [Table(title=f"{first.algo.value} {first.collective.value}", rows=rows, columns=[
        Column("size", "size"), Column("time_us", "time (us)", ".1f"),
        Column("algbw_GBps", "algbw (GB/s)", ".2f"), Column("busbw_GBps", "busbw (GB/s)", ".2f")])]
    csv = Table(title="", rows=rows, columns=[
        Column(k, k) for k in ("size_bytes", "time_s", "algbw_GBps", "busbw_GBps")])
    notes = [assumptions_note]
    if len(results) == 1:
        phase_rows = [{"phase": p.name, "link": p.link, "bytes": fmt_bytes(p.bytes),
                       "time_us": p.time_s * 1e6} for p in first.phases]
        if phase_rows:
            tables.append(Table(title="breakdown", rows=phase_rows, columns=[
                Column("phase", "phase", align="left"), Column("link", "link", align="left"),
                Column("bytes", "bytes per rank"), Column("time_us", "time (us)", ".1f")]))
        if first.compression:
            c = first.compression
            notes.append(f"SqueezeNIC: r = {c['ratio']}, hardware compression on "
                         f"{c['compress_on']} at {c['compressor_GBps']:g} GB/s, GPU at "
                         f"{c['gpu_compressor_GBps']:g} GB/s; equations 1-3 count the whole "
                         "partition at every step, so compare them with each other")
            tables.append(Table(title="SqueezeNIC equations 1-3",
                                rows=[{"a": k, "t": c[f"{k}_s"] * 1e6} for k in
                                      ("baseline", "approach1", "approach2")],
                                columns=[Column("a", "approach", align="left"),
                                         Column("t", "time (us)", ".1f")]))
            notes.append(f"fastest: {c['best']}")
        if first.injected_bytes_per_rank is not None:
            notes.append(f"bytes injected per rank: {fmt_bytes(first.injected_bytes_per_rank)}")
    data = _result_data(first) if len(results) == 1 else {
        "collective": first.collective.value, "algo": first.algo.value,
        "rows": [_result_data(r) for r in results]}
    data["topology"] = {"ranks": topo.ranks, "nodes": topo.nodes, "per_node": topo.per_node,
                        "intra_Bps": topo.intra_Bps, "nic_Bps": topo.nic_Bps,
                        "node_network_Bps": topo.node_network_Bps,
                        "alpha_intra_s": topo.alpha_intra_s, "alpha_inter_s": topo.alpha_inter_s}
    return Document(title=f"comm: {first.collective.value} on {hw.node.name}", data=data,
                    header=header, tables=tables, notes=notes, csv=csv, plot="comm")
