"""Documents for `catalog list` and `catalog show` (pure: data in, Document out)."""

from __future__ import annotations

from typing import Any

from optimus_calc.catalog import Catalog
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
            "summary": summary(e), "source": e.source,
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
        "dense_layers": m.dense_layers, "moe_layers": m.moe_layers,
    }
    if m.dense_layers:
        d["dense_layer_params"] = m.dense_layer_params
    if m.is_moe:
        d["moe_layer_params"] = m.moe_layer_params
        d["expert_params"] = m.expert_params
    if m.published_params:
        d["published_params"] = m.published_params
        d["derived_vs_published_pct"] = 100.0 * (m.total_params / m.published_params - 1.0)
    return d


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


def show_document(cat: Catalog, entry: CatalogEntry, asked: str) -> Document:
    fields = entry.model_dump(mode="json")
    data: dict[str, Any] = {"kind": entry.kind, **fields,
                            "file": entry_file(cat, entry.name)}
    header = [("kind", entry.kind), ("source", entry.source)]
    canonical = cat.resolves_alias(asked)
    if canonical:
        header.insert(0, ("alias", f"{asked!r} is an alias of {canonical!r}"))
        data["alias_of"] = canonical
    if isinstance(entry, Model):
        data["derived"] = model_derived(entry)
    rows = []
    for k, v in fields.items():
        if k in ("name",) or v in ("", [], None):
            continue
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
    return Document(title=f"{entry.name}: {entry.title or summary(entry)}", data=data,
                    tables=tables, header=header)
