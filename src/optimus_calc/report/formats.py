"""Render a Document as a rich table, JSON, CSV or a self-contained HTML page (report/html.py).
One interface, chosen by the Format Enum.

CSV is written for spreadsheets (issue 13): one type per column (integers for bytes, parameter
counts and other counts, fixed decimals for every other number, ``TRUE``/``FALSE``), list cells
joined by :data:`LIST_SEP`, no scientific notation, a configurable field separator and decimal
mark, identical rows written once, and OWASP's CSV-injection rule (a text cell starting with
``= + - @``, tab or carriage return gets a leading ``'``). Text that reaches a terminal (tables
and CSV) has its control characters (ANSI escape sequences included) shown as visible escapes,
and table cells are never parsed as rich markup.
"""

from __future__ import annotations

import io
import json
import re
from enum import Enum
from typing import Any, assert_never

from optimus_calc.report import plain_table
from optimus_calc.report.cells import _cell_text, _clean, _finite
from optimus_calc.report.document import Column, Document
from optimus_calc.record import record

COMPACT_WIDTH = 100  # below this many columns the table view drops its optional columns
DEFAULT_WIDTH = 120  # when no terminal and no COLUMNS say otherwise
LIST_SEP = "|"  # one separator for every list-valued CSV cell (never the field separator)
INJECTION_START = ("=", "+", "-", "@", "\t", "\r")  # OWASP CSV injection prevention


class Format(str, Enum):
    TABLE = "table"
    JSON = "json"
    CSV = "csv"
    HTML = "html"


@record
class CsvOptions:
    """Field separator and decimal mark (``--csv-sep ; --csv-decimal ,`` for German Excel)."""
    sep: str = ","
    decimal: str = "."


# What a terminal would act on: Unicode category Cc (exactly U+0000-U+001F and U+007F-U+009F)
# and the bidirectional overrides/isolates (U+202A-U+202E, U+2066-U+2069), invisible, which
# reorder what a terminal shows
# compiled on first use (re caches them): a command uses one of the two
_UNSAFE = r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
_UNSAFE_NL = r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"


def _escape(m: re.Match) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe_text(text: str, keep_newlines: bool = True) -> str:
    """Control characters (ESC of ANSI sequences, C0/C1, DEL, bidi overrides) as visible
    ``\\xNN`` / ``\\uNNNN`` escapes, so catalog text cannot drive the terminal. One regular
    expression pass (a table renders some 75 cells and lines)."""
    return re.sub(_UNSAFE if keep_newlines else _UNSAFE_NL, _escape, str(text))


def render_json(doc: Document) -> str:
    # ensure_ascii escapes every control character (\u001b), so JSON is terminal-safe as is
    return json.dumps(_clean(doc.data), indent=2) + "\n"


# ---------------------------------------------------------------------------------------- CSV

_INT_WORD = r"(^|_)(bytes|params|flops|count)(_|$)"  # compiled on first use (CSV)
INT_KEYS = {"tokens", "steps"}


def is_int_key(key: str) -> bool:
    """Columns whose numbers are whole by nature: bytes (``gpu_total_bytes``,
    ``optimizer_bytes_per_gpu``), parameter and other counts. Rates are ``_Bps``/``_per_s``."""
    return key in INT_KEYS or (bool(re.search(_INT_WORD, key)) and not key.endswith("_per_s"))


def float_decimals(key: str) -> int:
    """Fixed decimals by unit: seconds to the nanosecond, rates and percentages to 0.001; the
    unit read before a qualifier (``step_time_s_low``, ``optimizer_s_one_card``)."""
    key = re.sub(r"_(low|high|one_card)$", "", key)
    if key.endswith(("_per_s", "_pct", "_GBps", "_Bps", "_MWh", "_usd", "_hours", "_days",
                     "tflops_per_gpu")):  # TFLOP/s per GPU: a rate
        return 3
    if key.endswith("_s"):
        return 9
    return 6


def column_kind(key: str, values: list[Any]) -> str:
    """One type per CSV column: 'int', 'float', 'bool', 'list' or 'text'."""
    vals = [v.value if isinstance(v, Enum) else v for v in values if v is not None]
    if not vals:
        return "text"
    if any(isinstance(v, (list, tuple)) for v in vals):
        return "list"
    if all(isinstance(v, bool) for v in vals):
        return "bool"
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
        if is_int_key(key) or all(isinstance(v, int) for v in vals):
            return "int"
        return "float"
    return "text"


def _number(value: Any, key: str, kind: str, opts: CsvOptions) -> str:
    if kind == "int":
        return str(int(round(_finite(float(value)))))
    text = f"{_finite(float(value)):.{float_decimals(key)}f}"
    if text.startswith("-") and not text.strip("-0."):  # a tiny negative rounds to "-0.000"
        text = text[1:]
    return text.replace(".", opts.decimal) if opts.decimal != "." else text


def _text(value: Any) -> str:
    raw = str(value.value if isinstance(value, Enum) else value)
    text = safe_text(raw, keep_newlines=False)
    if raw.startswith(INJECTION_START):
        text = "'" + text
    return text


def _list_item(value: Any, key: str, opts: CsvOptions) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _number(value, key, "int" if is_int_key(key) or value.is_integer() else "float",
                       opts)
    return safe_text(str(value.value if isinstance(value, Enum) else value), False)


def csv_cell(value: Any, key: str, kind: str, opts: CsvOptions = CsvOptions()) -> str:
    if value is None:
        return ""
    if kind == "bool":
        return "TRUE" if value else "FALSE"
    if kind in ("int", "float"):
        return _number(value, key, kind, opts)
    if kind == "list":
        items = value if isinstance(value, (list, tuple)) else [value]
        cell = LIST_SEP.join(_list_item(v, key, opts) for v in items)
        return "'" + cell if cell.startswith(INJECTION_START) else cell
    if isinstance(value, float):
        return _number(value, key, "float", opts)
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    return _text(value)


def render_csv(doc: Document, opts: CsvOptions = CsvOptions()) -> str:
    if doc.csv is None and not doc.tables:
        return ""
    table = doc.csv if doc.csv is not None else doc.tables[doc.csv_table]
    kinds = {c.key: column_kind(c.key, [row.get(c.key) for row in table.rows])
             for c in table.columns}
    import csv  # only for --format csv (off the cold text path)
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter=opts.sep, lineterminator="\n")
    writer.writerow([c.key for c in table.columns])
    seen: set[tuple[str, ...]] = set()
    for row in table.rows:
        cells = tuple(csv_cell(row.get(c.key), c.key, kinds[c.key], opts) for c in table.columns)
        if cells in seen:  # identical rows say nothing twice
            continue
        seen.add(cells)
        writer.writerow(cells)
    return buf.getvalue()


# -------------------------------------------------------------------------------------- table

def render_table(doc: Document, width: int = DEFAULT_WIDTH, use_rich: bool = False) -> str:
    """Text table at ``width`` columns; under :data:`COMPACT_WIDTH` the columns marked
    ``compact=False`` are left out. Text is wrapped at word boundaries, numbers never split.
    A NaN or infinity, in a cell or in the data behind the header and notes, is refused as JSON
    and CSV refuse it: it is a bug, never an answer. Drawn by report/plain_table.py when every
    character is one it draws (plain_table.plain: printable ASCII and Latin-1) and each table
    fits the page, else (or ``use_rich``) by rich: the same text."""
    _clean(doc.data)
    compact = width < COMPACT_WIDTH
    texts = [safe_text(doc.title)] + [safe_text(f"  {key}: {value}") for key, value in doc.header]
    notes = [safe_text(f"- {note}") for note in doc.notes]
    tables = [(safe_text(t.title) if t.title else None, _layout(t, width, compact))
              for t in doc.tables]
    everything = texts + notes + [x for title, lay in tables for x in _strings(title, lay)]
    pad = (1, 1) if not compact else (1, 0)
    if not use_rich and all(plain_table.plain(x) for x in everything) and all(
            sum(lay[1]) + sum(pad) * len(lay[1]) - sum(pad) + len(lay[1]) - 1 <= width
            for _, lay in tables if lay[1]):
        lines = [line for x in texts for line in plain_table.wrap(x, width)]
        for title, (headers, widths, aligns, rows, caption) in tables:
            if title:
                lines += plain_table.wrap(title, width)
            lines += plain_table.table(headers, rows, widths, aligns, pad, caption) \
                if widths else [""]
        lines += [line for x in notes for line in plain_table.wrap(x, width)]
        return "".join(line + "\n" for line in lines)
    return _render_rich(texts, notes, tables, width, compact)


def _strings(title, lay) -> list[str]:
    headers, _, _, rows, caption = lay
    return ([title] if title else []) + headers + [c for r in rows for c in r] + (
        [caption] if caption else [])


def _render_rich(texts, notes, tables, width: int, compact: bool) -> str:
    from rich import box
    from rich.console import Console, Group
    from rich.table import Table as RichTable
    from rich.text import Text

    buf = io.StringIO()
    console = Console(file=buf, width=width, no_color=True, color_system=None,
                      highlight=False, emoji=False, soft_wrap=False, markup=False)
    parts = [Text(texts[0], style="bold")] + [Text(x) for x in texts[1:]]
    for title, (headers, widths, aligns, rows, caption) in tables:
        if title:  # printed apart: rich crops a table title wider than its table
            parts.append(Text(title))
        rt = RichTable(caption=Text(caption) if caption else None, caption_justify="left",
                       box=box.SIMPLE_HEAVY, title_justify="left", show_edge=False,
                       pad_edge=False, padding=(0, 1) if not compact else (0, 0, 0, 1))
        for h, w, a in zip(headers, widths, aligns):
            rt.add_column(Text(h), justify=a, overflow="fold", width=w)  # type: ignore[arg-type]
        for r in rows:
            rt.add_row(*[Text(c) for c in r])
        parts.append(rt)
    parts += [Text(x) for x in notes]
    console.print(Group(*parts))  # one print: rich's per-call set-up is most of a small table
    return buf.getvalue()


def _layout(table, width: int, compact: bool):
    """(headers, widths, aligns, rows of cell texts, caption or None) of a table that fits
    ``width``: every column at least as wide as its longest word;
    when that does not fit, the optional (``compact=False``) columns go first, then columns
    from the right, named in a caption. Only a word longer than its cap (a long path or URL,
    or a table of two columns that still does not fit) is folded."""
    def needed(cols, mins, pad):
        return sum(mins[c.key] for c in cols) + pad * len(cols)
    all_cells = {c.key: [safe_text(_cell_text(row.get(c.key), c.fmt)) for row in table.rows]
                 for c in table.columns}
    mins = {}
    for i, c in enumerate(table.columns):
        # never split a word: a column is at least as wide as its longest word (numbers
        # are one word), capped so one long path or URL cannot starve the others
        words = [w for cell in all_cells[c.key] for w in cell.split()] + c.header.split()
        cap = max(12, width // 2 if i == 0 else width // 4)
        mins[c.key] = min(max((len(w) for w in words), default=1), cap)
    pad = 3 if not compact else 2  # padding and the column separator
    cols: list[Column] = [c for c in table.columns if c.compact or not compact]
    if needed(cols, mins, pad) > width:
        cols = [c for c in cols if c.compact]
    hidden = []
    while len(cols) > 2 and needed(cols, mins, pad) > width:
        hidden.insert(0, cols.pop().header)  # fewer columns rather than split words
    caption = (f"not shown at {width} columns: {', '.join(hidden)} (widen the terminal "
               "or use --format csv/json)") if hidden else None
    # widths decided here, not by rich's collapse (which can squeeze a column to nothing):
    # every column gets its longest word; the room left goes first to one-line cells, then
    # to one-line headers, cheapest first
    cell_width = {c.key: max([len(line) for cell in all_cells[c.key]
                              for line in cell.split("\n")] + [mins[c.key]]) for c in cols}
    room = width - needed(cols, mins, pad)
    widths = dict(mins)
    for target in (cell_width, {c.key: max(cell_width[c.key], len(c.header)) for c in cols}):
        for c in sorted(cols, key=lambda c: target[c.key] - widths[c.key]):
            extra = max(0, target[c.key] - widths[c.key])
            if extra <= room:
                widths[c.key] += extra
                room -= extra
    for c in cols:  # what is left goes to the first cells that still wrap
        extra = min(room, max(0, cell_width[c.key] - widths[c.key]))
        widths[c.key] += extra
        room -= extra
    return ([safe_text(c.header) for c in cols], [widths[c.key] for c in cols],
            [c.align for c in cols],
            [[all_cells[c.key][i] for c in cols] for i in range(len(table.rows))], caption)


def render(doc: Document, fmt: Format, width: int = DEFAULT_WIDTH,
           csv_options: CsvOptions = CsvOptions()) -> str:
    match fmt:
        case Format.TABLE:
            return render_table(doc, width)
        case Format.CSV:
            return render_csv(doc, csv_options)
        case Format.JSON:
            return render_json(doc)
        case Format.HTML:
            from optimus_calc.report.html import render_html
            return render_html(doc)
        case _:
            assert_never(fmt)
