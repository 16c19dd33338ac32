"""Documents for `catalog list` and `catalog show` (pure: data in, Document out)."""

from __future__ import annotations

from typing import Any

from optimus_calc.catalog import Catalog
from optimus_calc.report.common import cite
from optimus_calc.report.document import Column, Document, Table
from optimus_calc.specs.base import CatalogEntry
from optimus_calc.specs.hardware import CPU, GPU, NIC, Link, Node, NVMe, SmartNIC
from optimus_calc.specs.model import Model


def summary(e: CatalogEntry) -> str:
    """One line of the figures that matter for each kind."""
    if isinstance(e, GPU):
        return (f"{e.memory_GB:g} GB, {e.hbm_bandwidth_GBps:g} GB/s HBM, "
                f"{e.peak_TFLOPS.bf16 or e.peak_TFLOPS.fp16:g} TFLOP/s 16-bit")
    if isinstance(e, CPU):
        return f"{e.cores} cores @ {e.base_GHz:g} GHz, {e.memory_bandwidth_GBps:g} GB/s"
    if isinstance(e, SmartNIC):
        mem = f"{e.memory_GB:g}" + (f"+{e.expansion_memory_GB:g}" if e.expansion_memory_GB else "")
        return f"{mem} GB @ {e.memory_bandwidth_GBps:g} GB/s, {e.line_rate_Gbps:g} Gb/s"
    if isinstance(e, NIC):
        return f"{e.line_rate_Gbps:g} Gb/s, host {e.host_link}"
    if isinstance(e, Link):
        return f"{e.bandwidth_GBps:g} GB/s per direction, efficiency {e.efficiency:g}"
    if isinstance(e, NVMe):
        return f"{e.capacity_GB:g} GB, read {e.read_GBps:g} / write {e.write_GBps:g} GB/s"
    if isinstance(e, Node):
        extra = f", {e.smartnics} x {e.smartnic}" if e.smartnics else ""
        return f"{e.gpus} x {e.gpu}, {e.cpus} x {e.cpu}, {e.nics} x {e.nic}{extra}"
    if isinstance(e, Model):
        s = f"{e.total_params / 1e9:.2f}B params"
        if e.is_moe:
            s += f" ({e.active_params / 1e9:.2f}B active, {e.experts} experts top-{e.top_k})"
        return s
    return ""


def list_document(cat: Catalog, kind: str | None) -> Document:
    rows = []
    for e in cat.all(kind):
        rows.append({
            "kind": e.kind, "name": e.name, "aliases": list(e.aliases), "title": e.title,
            "summary": summary(e), "source": cite(e.source),
            "unverified": list(e.unverified), "assumed": list(e.assumed),
        })
    table = Table(
        title="", rows=rows,
        columns=[Column("kind", "kind", align="left"), Column("name", "name", align="left"),
                 Column("summary", "figures", align="left"),
                 Column("aliases", "aliases", align="left"),
                 Column("source", "source", align="left"),
                 Column("unverified", "unverified", align="left"),
                 Column("assumed", "assumed", align="left"), Column("title", "title", align="left")])
    # The table view shows the first four columns only; CSV/JSON get everything.
    view = Table(title="", rows=rows, columns=table.columns[:4])
    doc = Document(title=f"catalog: {len(rows)} entries" + (f" of kind {kind}" if kind else ""),
                   data={"entries": rows}, tables=[view], csv=table,
                   notes=["'optimus-calc catalog show NAME' gives every field and its source."])
    return doc


def model_derived(m: Model) -> dict[str, Any]:
    d: dict[str, Any] = {
        "total_params": m.total_params, "active_params": m.active_params,
        "embedding_params": m.embedding_params, "head_params": m.head_params,
        "attention_params_per_layer": m.attention_params,
        "attention_matrix_params_per_layer": m.attention_matrix_params,
        "score_dim": m.score_dim, "value_dim": m.value_dim,
        "dense_layers": m.dense_layers, "moe_layers": m.moe_layers,
    }
    if m.dense_layers:
        d["dense_layer_params"] = m.dense_layer_params
    if m.is_moe:
        d["moe_layer_params"] = m.moe_layer_params
        d["expert_params"] = m.expert_params
        if m.shared_experts:
            d["shared_expert_params"] = m.shared_expert_params
    if m.mtp_layers:
        d["mtp_params_not_in_total"] = m.mtp_params
        d["mtp_active_params"] = m.mtp_active_params
    if m.published_params:
        d["published_params"] = m.published_params
        d["derived_vs_published_pct"] = 100.0 * (m.total_params / m.published_params - 1.0)
    return d


def model_derivation(m: Model) -> list[dict[str, Any]]:
    """Per-part parameter counts: per layer, times how many layers, total and per-token
    active. The ``total`` and ``active`` columns sum to ``total_params`` / ``active_params``
    (MTP modules are listed after the sum, apart)."""
    L, D, E = m.layers, m.dense_layers, m.moe_layers
    mla = (f" (MLA: q rank {m.q_lora_rank or 'full'}, kv rank {m.kv_lora_rank}, "
           f"qk {m.qk_nope_head_dim}+{m.qk_rope_head_dim}, v {m.v_head_dim})" if m.is_mla else "")
    final_norm = m._norm_params(m.hidden) if m.final_norm else 0
    rows: list[dict[str, Any]] = [
        {"part": "embedding", "per_layer": None, "layers": None,
         "total": m.embedding_params, "active": m.embedding_params},
        {"part": "attention projections" + mla, "per_layer": m.attention_matrix_params,
         "layers": L, "total": L * m.attention_matrix_params,
         "active": L * m.attention_matrix_params},
    ]
    inner = m.attention_norm_params + (m.heads if m.attention_sinks else 0)
    if inner:
        rows.append({"part": "attention norms / sinks", "per_layer": inner, "layers": L,
                     "total": L * inner, "active": L * inner})
    if D:
        rows.append({"part": f"dense MLP ({m.ffn_type.value}, {m.ffn_hidden})",
                     "per_layer": m.dense_mlp_params, "layers": D,
                     "total": D * m.dense_mlp_params, "active": D * m.dense_mlp_params})
    if E:
        rows.append({"part": f"routed experts ({m.experts} x {m.expert_ffn}, top-{m.top_k})",
                     "per_layer": m.experts * m.expert_params, "layers": E,
                     "total": E * m.experts * m.expert_params,
                     "active": E * m.top_k * m.expert_params})
        if m.shared_experts:
            sh = m.shared_experts * m.shared_expert_params
            rows.append({"part": f"shared experts ({m.shared_experts} x {m.shared_ffn}"
                         + (", gated" if m.shared_expert_gate else "") + ")",
                         "per_layer": sh, "layers": E, "total": E * sh, "active": E * sh})
        rows.append({"part": "router", "per_layer": m.router_params, "layers": E,
                     "total": E * m.router_params, "active": E * m.router_params})
    rows.append({"part": f"layer norms ({m.layer_norms} x {m.norm})",
                 "per_layer": m.layer_norm_params, "layers": L,
                 "total": L * m.layer_norm_params, "active": L * m.layer_norm_params})
    head = m.head_params - final_norm
    if final_norm:
        rows.append({"part": "final norm", "per_layer": None, "layers": None,
                     "total": final_norm, "active": final_norm})
    rows.append({"part": "output head" + (" (tied: shares the embedding)"
                                          if m.tied_embeddings else ""),
                 "per_layer": None, "layers": None, "total": head, "active": head})
    rows.append({"part": "total", "per_layer": None, "layers": None,
                 "total": m.total_params, "active": m.active_params})
    if m.mtp_layers:
        rows.append({"part": f"MTP modules ({m.mtp_layers}; apart, not in the total)",
                     "per_layer": None, "layers": None,
                     "total": m.mtp_params, "active": m.mtp_active_params})
    return rows


def entry_file(cat: Catalog, name: str) -> str:
    """Where an entry came from: 'builtin:<path in the catalog>' or the user file's path."""
    from optimus_calc.catalog import builtin_dir
    path = cat.files.get(name)
    if path is None:
        return ""
    try:
        return "builtin:" + path.resolve().relative_to(builtin_dir().resolve()).as_posix()
    except ValueError:
        return str(path)


def show_document(cat: Catalog, entry: CatalogEntry, asked: str,
                  file: str | None = None) -> Document:
    """``file`` names an imported config.json (the entry is then not from the catalog)."""
    fields = entry.model_dump(mode="json")
    data: dict[str, Any] = {"kind": entry.kind, **fields,
                            "file": file if file is not None else entry_file(cat, entry.name)}
    header = [("kind", entry.kind), ("source", cite(entry.source))]
    canonical = cat.resolves_alias(asked)
    if canonical:
        header.insert(0, ("alias", f"{asked!r} is an alias of {canonical!r}"))
        data["alias_of"] = canonical
    if isinstance(entry, Model):
        data["derived"] = model_derived(entry)
        data["derivation"] = model_derivation(entry)
    rows = []
    for k, v in fields.items():
        if k in ("name",) or v in ("", [], None):
            continue
        if isinstance(v, bool):  # a switch (a GPU's mxfp8): no CSV cell reads as a boolean
            v = "yes" if v else "no"
        if isinstance(v, dict):
            v = ", ".join(f"{a}={b:g}" if isinstance(b, (int, float)) else f"{a}={b}"
                          for a, b in v.items() if b)
        mark = " (unverified)" if k in entry.unverified else (
            " (assumed)" if k in entry.assumed else "")
        rows.append({"field": k, "value": f"{v}{mark}" if not isinstance(v, list) else
                     f"{', '.join(map(str, v))}{mark}"})
    tables = [Table(title="fields", rows=rows, columns=[
        Column("field", "field", align="left"), Column("value", "value", align="left")])]
    if isinstance(entry, Model):
        drows = [{"quantity": k, "value": (f"{v:,.0f}" if isinstance(v, int) or float(v).is_integer()
                                           else f"{v:.3f}")}
                 for k, v in data["derived"].items()]
        tables.append(Table(title="derived from the architecture", rows=drows, columns=[
            Column("quantity", "quantity", align="left"), Column("value", "value")]))

        def _n(v: Any) -> str:
            return "" if v is None else f"{v:,}"
        prow = [{k: (_n(v) if k != "part" else v) for k, v in r.items()}
                for r in data["derivation"]]
        tables.append(Table(title="parameter derivation (per part)", rows=prow, columns=[
            Column("part", "part", align="left"), Column("per_layer", "per layer"),
            Column("layers", "layers"), Column("total", "total"),
            Column("active", "active per token")]))
    return Document(title=f"{entry.name}: {entry.title or summary(entry)}", data=data,
                    tables=tables, header=header)
