"""``--format html``: one self-contained page per answer (issue 34), for a design review.

Rendered by Jinja2 (autoescaping on, so a model or catalog name with ``<``, ``&`` or quotes is
text, never markup) from the same :class:`Document` the table, JSON and CSV formats render, and
from the Documents it embeds (``Document.html``, report/html_parts.py). Every table cell is the
table format's text (formats.cell_text: the same rounding), each number keeps its raw value in
``data-sort`` and each headline figure names its JSON path in ``data-json``, so a test can hold
the page to the JSON. No network request: styles and the little sorting/folding script are
inlined from the package's templates (report/templates/), charts are inline SVG.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from optimus_calc.report.document import Document, Table
from optimus_calc.report.cells import _clean, cell_text

GB = 1e9


@lru_cache(maxsize=1)
def _env():
    import jinja2
    return jinja2.Environment(
        loader=jinja2.PackageLoader("optimus_calc", "report/templates"),
        autoescape=True, trim_blocks=True, lstrip_blocks=True,
        undefined=jinja2.StrictUndefined)


# ------------------------------------------------------------------------------------- tables

def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def table_view(table: Table, ident: str, sortable: bool | None = None,
               caption: str = "") -> dict[str, Any]:
    """A Document table as the template draws it: headers, and per cell the table format's
    text, whether it is a number (right-aligned) and its raw value to sort by. ``caption``
    names a table that has no title of its own."""
    cols = [{"key": c.key, "header": c.header, "right": c.align == "right"}
            for c in table.columns]
    rows = []
    for r in table.rows:
        cells = []
        for c in table.columns:
            v = r.get(c.key)
            num = _number(v)
            cells.append({"text": cell_text(v, c.fmt), "num": num or c.align == "right",
                          "sort": repr(float(v)) if num else None, "key": c.key})
        rows.append(cells)
    if sortable is None:
        sortable = len(rows) > 2
    return {"id": ident, "title": table.title or caption, "columns": cols, "rows": rows,
            "sortable": sortable, "wide": len(cols) > 12}


# -------------------------------------------------------------------------------------- cards

# (label, key, format, divisor, unit): the headline figures, from the answer's JSON
_TIME_CARDS = (("step time", "step_time_s", ",.2f", 1.0, "s"),
               ("throughput", "tokens_per_s", ",.0f", 1.0, "tokens/s"),
               ("MFU", "mfu", ".1%", 1.0, ""),
               ("GPU memory", "gpu_memory_bytes", ",.1f", GB, "GB"),
               ("time to train", "train_days", ",.1f", 1.0, "days"),
               ("GPU-hours", "gpu_hours", ",.0f", 1.0, "GPU-h"),
               ("cost to train", "cost_usd", ",.0f", 1.0, "USD"))
_MEMORY_CARDS = (("GPU memory", "per_gpu.total_bytes", ",.1f", GB, "GB"),
                 ("usable", "per_gpu.usable_bytes", ",.1f", GB, "GB"),
                 ("free of usable", "per_gpu.headroom_bytes", ",.1f", GB, "GB"),
                 ("short of usable", "per_gpu.shortfall_bytes", ",.1f", GB, "GB"))


def json_at(data: Any, path: str) -> Any:
    """The value at a dotted ``path`` of a Document's data (None when absent)."""
    for part in path.split("."):
        if isinstance(data, dict):
            data = data.get(part)
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return None
    return data


def _range(data: dict, prefix: str, key: str, fmt: str, div: float, unit: str) -> str:
    lo, hi = json_at(data, prefix + key + "_low"), json_at(data, prefix + key + "_high")
    if not (_number(lo) and _number(hi)):
        return ""
    return f"{format(lo / div, fmt)} to {format(hi / div, fmt)} {unit}".strip()


def cards(data: dict, kind: str) -> list[dict[str, Any]]:
    """The headline figures of the answer, each with the JSON path it shows."""
    prefix = "recommended." if kind == "plan" else ""
    specs = _MEMORY_CARDS if kind == "memory" else _TIME_CARDS
    out = []
    for label, key, fmt, div, unit in specs:
        value = json_at(data, prefix + key)
        if not _number(value) or (key.endswith("shortfall_bytes") and value == 0) or (
                key.endswith("headroom_bytes") and json_at(data, "per_gpu.shortfall_bytes")):
            continue
        out.append({"label": label, "path": prefix + key, "value": repr(float(value)),
                    "fmt": fmt, "div": repr(div), "unit": unit,
                    "text": format(value / div, fmt),
                    "range": _range(data, prefix, key, fmt, div, unit)})
    return out


def _basis(data: dict, kind: str) -> dict[str, str]:
    d = json_at(data, "recommended") if kind == "plan" else data
    if not isinstance(d, dict):
        return {}
    return {"time": str(d.get("error_range_basis") or ""),
            "time_label": str(d.get("error_range") or ""),
            "memory_label": str(d.get("memory_error_range") or "")}


# ----------------------------------------------------------------------------------- sections

def _kind(doc: Document) -> str:
    kind = doc.html.get("kind")
    if kind:
        return str(kind)
    head = doc.title.split(":", 1)[0].strip()
    return head if head in ("plan", "step", "memory", "compare", "breakeven") else "other"


def _layout_line(d: dict) -> str:
    """"TP 4 · PP 1 · DP 4 · ZeRO-3 · offload cpu · ..." of a layout's data ("" without one)."""
    if not all(k in d for k in ("tp", "pp", "dp")):
        return ""
    s = f"TP {d['tp']} · PP {d['pp']} · DP {d['dp']}"
    for k in ("cp", "ep"):
        if (d.get(k) or 1) > 1:
            s += f" · {k.upper()} {d[k]}"
    if (d.get("interleave") or 1) > 1:
        s += f" · interleave {d['interleave']}"
    if "zero" in d:
        s += f" · ZeRO-{d['zero']}"
    if "offload" in d:
        s += f" · offload {d['offload']}"
    if d.get("smartnic"):
        s += f" ({d['smartnic']})"
    if "micro_batch" in d:
        s += f" · micro-batch {d['micro_batch']}"
    if "recompute" in d:
        s += f" · recompute {d['recompute']}"
    return s


def _equation_groups(eqs: list[dict]) -> list[dict[str, Any]]:
    groups: dict[str, list] = {}
    for i, e in enumerate(eqs):
        inputs = [(k, format(v, ".6g")) for k, v in e["inputs"].items()]
        groups.setdefault(e["stage"], []).append(
            {**e, "n": i, "inputs_list": inputs, "result_text": format(e["result"], ".6g"),
             "result_raw": repr(float(e["result"]))})
    return [{"stage": s, "rows": rows} for s, rows in groups.items()]


def _part(doc: Document | None, ident: str) -> dict[str, Any] | None:
    if doc is None:
        return None
    return {"title": doc.title, "header": doc.header, "notes": doc.notes, "data": doc.data,
            "tables": [table_view(t, f"{ident}-{i}", sortable=False)
                       for i, t in enumerate(doc.tables)]}


def _charts(doc: Document, kind: str, mem: Document | None, step: Document | None) -> dict:
    from optimus_calc.report import html_charts as C
    out: dict[str, str] = {}
    if mem is not None and isinstance(mem.data.get("per_gpu"), dict):
        out["memory"] = C.memory_chart(mem.data["per_gpu"])
    if step is not None and isinstance(step.data.get("breakdown"), dict):
        out["step"] = C.step_chart(step.data)
    if doc.plot == "compare" and isinstance(doc.data.get("strategies"), list):
        out["compare"] = C.compare_chart(doc.data)  # bars written directly, as memory's
    elif kind not in ("plan", "step", "memory") and doc.plot in C.LINE_CHARTS:
        # the command's --plot chart as SVG lines (sweep, comm; breakeven with --sweep) or
        # signed bars (breakeven --sensitivity)
        out[doc.plot] = C.LINE_CHARTS[doc.plot](doc.data, doc.title.split("\n")[0])
        if doc.plot == "batch_sweep" and isinstance(doc.data.get("sensitivity"), list):
            # breakeven --sweep with --sensitivity: both charts (--plot FILE draws the sweep's)
            out["sensitivity"] = C.sensitivity_chart(doc.data, doc.title.split("\n")[0])
    return out


def _hidden_rows(step: Document | None) -> list[dict[str, str]]:
    if step is None or not isinstance(step.data.get("breakdown"), dict):
        return []
    from optimus_calc.report.html_charts import hidden_parts
    return [{"part": n, "text": f"{v:.4f}", "sort": repr(v)} for n, v in hidden_parts(step.data)]


def page_context(doc: Document) -> dict[str, Any]:
    """Everything the template shows, as plain values (the template computes nothing)."""
    _clean(doc.data)  # no NaN or infinity reaches a page either
    kind = _kind(doc)
    h = doc.html
    mem = h.get("memory") if kind == "plan" else (doc if kind == "memory" else h.get("memory"))
    step = h.get("step") if kind == "plan" else (doc if kind == "step" else h.get("step"))
    # sortable: the plan's layouts and the rows of compare and breakeven; a breakdown that
    # ends in its total (step, memory) keeps its order
    tables = [table_view(t, f"t{i}", sortable=(i == 0 if kind == "plan" else
                                               kind not in ("step", "memory") and None),
                         caption=doc.title.split("\n")[0] if i == 0 else "")
              for i, t in enumerate(doc.tables)]
    rec = doc.data.get("recommended") if kind == "plan" else None
    rejections = [{"reason": r, "count": f"{n:,}", "sort": repr(float(n))}
                  for r, n in (doc.data.get("framework_rejections") or {}).items()]
    eqs = h.get("equations") or []
    ctx = {
        "title": doc.title, "kind": kind, "header": doc.header,
        # a rejection has its own table on the page: its note would say it twice
        "notes": [n for n in doc.notes if not (
            n.strip().startswith("rejected") and any(r["reason"] in n for r in rejections))],
        "cards": cards(doc.data, kind) if kind in ("plan", "step", "memory") else [],
        "basis": _basis(doc.data, kind),
        "recommended": rec, "layout_line": _layout_line(rec) if rec else (
            _layout_line(doc.data["layout"]) if isinstance(doc.data.get("layout"), dict)
            else ""),
        "why": doc.data.get("why", "") if kind == "plan" else "",
        "fits": doc.data.get("fits"),
        "tables": tables,
        "memory": _part(mem, "mem") if mem is not doc else None,
        "step": _part(step, "step") if step is not doc else None,
        "charts": _charts(doc, kind, mem, step),
        "hidden": _hidden_rows(step),
        "rejections": rejections,
        "assumptions": h.get("assumptions") or [],
        "equations": _equation_groups(eqs), "equation_count": len(eqs),
        "exports": h.get("exports") or {},
        "command": h.get("command", ""), "version": h.get("version", ""),
    }
    ctx["has_answer"] = bool(kind == "plan" or ctx["layout_line"] or ctx["cards"]
                             or ctx["fits"] is not None or ctx["notes"])
    ctx["has_question"] = bool(ctx["header"] or ctx["assumptions"])
    return ctx


def render_html(doc: Document) -> str:
    """``doc`` as one self-contained HTML5 page."""
    ctx = page_context(doc)
    env = _env()
    return env.get_template("page.html.j2").render(
        **ctx, css=env.loader.get_source(env, "page.css")[0],
        js=env.loader.get_source(env, "page.js")[0])
