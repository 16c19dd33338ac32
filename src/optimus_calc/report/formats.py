"""Render a Document as a rich table, JSON or CSV. One interface, chosen by the Format Enum."""

from __future__ import annotations

import csv
import io
import json
import math
from enum import Enum
from typing import Any, assert_never

from optimus_calc.report.document import Document


class Format(str, Enum):
    TABLE = "table"
    JSON = "json"
    CSV = "csv"


def _clean(value: Any) -> Any:
    """JSON-safe: no NaN/inf ever reaches the output (they would be a silent wrong number)."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"non-finite value {value!r} in output")
        return value
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, Enum):
        return value.value
    return value


def render_json(doc: Document) -> str:
    return json.dumps(_clean(doc.data), indent=2) + "\n"


def _csv_cell(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"non-finite value {value!r} in output")
        return repr(value)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, (list, tuple)):
        return "; ".join(str(v) for v in value)
    return value


def render_csv(doc: Document) -> str:
    if doc.csv is None and not doc.tables:
        return ""
    table = doc.csv if doc.csv is not None else doc.tables[doc.csv_table]
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([c.key for c in table.columns])
    for row in table.rows:
        writer.writerow([_csv_cell(row.get(c.key, "")) for c in table.columns])
    return buf.getvalue()


def _cell_text(value: Any, fmt: str) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    if fmt and isinstance(value, (int, float)):
        return format(value, fmt)
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def render_table(doc: Document, width: int = 120) -> str:
    from rich import box
    from rich.console import Console
    from rich.table import Table as RichTable

    buf = io.StringIO()
    console = Console(file=buf, width=width, no_color=True, color_system=None,
                      highlight=False, emoji=False, soft_wrap=False)
    console.print(doc.title, style="bold", markup=False)
    for key, value in doc.header:
        console.print(f"  {key}: {value}", markup=False)
    for table in doc.tables:
        rt = RichTable(title=table.title, box=box.SIMPLE_HEAVY, title_justify="left",
                       show_edge=False, pad_edge=False)
        for col in table.columns:
            rt.add_column(col.header, justify=col.align, overflow="fold")  # type: ignore[arg-type]
        for row in table.rows:
            rt.add_row(*[_cell_text(row.get(c.key), c.fmt) for c in table.columns])
        console.print(rt)
    for note in doc.notes:
        console.print(f"- {note}", markup=False)
    return buf.getvalue()


def render(doc: Document, fmt: Format) -> str:
    match fmt:
        case Format.TABLE:
            return render_table(doc)
        case Format.JSON:
            return render_json(doc)
        case Format.CSV:
            return render_csv(doc)
        case _:
            assert_never(fmt)
