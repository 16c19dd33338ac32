"""A command's result as plain data: what every output format renders.

Pure: no rich, no click, no files. Each command builds one :class:`Document`.
"""

from __future__ import annotations

from dataclasses import field
from optimus_calc.record import record
from typing import Any


@record
class Column:
    key: str
    header: str
    fmt: str = ""  # python format spec for the table view, e.g. ".2f"; CSV/JSON get raw values
    align: str = "right"
    compact: bool = True  # False: dropped from the table view on terminals under 100 columns


@record
class Table:
    title: str
    columns: list[Column]
    rows: list[dict[str, Any]]


@record
class Document:
    title: str
    data: dict[str, Any]  # the JSON payload
    tables: list[Table] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # shown under the tables in table view
    header: list[tuple[str, str]] = field(default_factory=list)  # key/value lines on top
    csv_table: int = 0  # which table is the CSV output
    csv: Table | None = None  # a CSV-only table (wider than the terminal view); overrides csv_table
    plot: str = ""  # which picture `--plot FILE` draws from `data` (report.plots), "" for none
    # what only `--format html` shows (report/html.py): the page kind, the Documents of the parts
    # it embeds, the equations, the exports, the command; never in the JSON, CSV or table
    html: dict[str, Any] = field(default_factory=dict)
