"""Options shared by several commands, and writing a Document to stdout or a file."""

from __future__ import annotations

import functools
import shutil
from pathlib import Path
from typing import Callable

import click

from optimus_calc.errors import InputError
from optimus_calc.report.document import Document
from optimus_calc.report.formats import DEFAULT_WIDTH, CsvOptions, Format, render

_META = "optimus_calc.output"  # click context meta key: CSV options and the --plot path


def csv_options(sep: str, decimal: str) -> CsvOptions:
    """Validate --csv-sep / --csv-decimal: single characters that differ."""
    if decimal not in (".", ","):
        raise InputError(f"--csv-decimal {decimal!r}: use '.' or ','")
    if len(sep) == 2 and sep.startswith("\\") and sep[1] == "t":
        sep = "\t"
    if len(sep) != 1:
        raise InputError(f"--csv-sep {sep!r}: give one character, e.g. ',' ';' or '\\t'")
    if sep == decimal:
        raise InputError(f"--csv-sep {sep!r} is also the decimal mark; they must differ "
                         "(e.g. --csv-sep ';' --csv-decimal ',')")
    if sep.isalnum() or sep in "\"'\r\n.+-=@|" or (sep.isspace() and sep != "\t"):
        raise InputError(f"--csv-sep {sep!r}: not usable as a field separator; use , ; or tab")
    return CsvOptions(sep=sep, decimal=decimal)


def output_options(func: Callable) -> Callable:
    @click.option("--format", "fmt", type=click.Choice([f.value for f in Format]),
                  default=Format.TABLE.value, show_default=True, help="Output format.")
    @click.option("-o", "--output", "output", type=str, default=None, metavar="FILE",
                  help="Write to FILE instead of standard output.")
    @click.option("--csv-sep", "csv_sep", default=",", show_default=True, metavar="CHAR",
                  help="CSV field separator (';' for spreadsheets with a decimal comma).")
    @click.option("--csv-decimal", "csv_decimal", default=".", show_default=True,
                  metavar="CHAR", help="CSV decimal mark: '.' or ','.")
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        opts = csv_options(kwargs.pop("csv_sep"), kwargs.pop("csv_decimal"))
        click.get_current_context().meta.setdefault(_META, {})["csv"] = opts
        return func(*args, **kwargs)
    return wrapper


def plot_option(func: Callable) -> Callable:
    """``--plot FILE.png|svg``: the command's picture, drawn by report.plots from its data."""
    @click.option("--plot", "plot", default=None, metavar="FILE",
                  help="Also draw a chart to FILE (.png or .svg; needs matplotlib).")
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        path = kwargs.pop("plot")
        if path is not None:
            from optimus_calc.report.plots import check_path
            check_path(path)  # a bad extension fails before any work
            click.get_current_context().meta.setdefault(_META, {})["plot"] = path
        return func(*args, **kwargs)
    return wrapper


def terminal_width() -> int:
    """The terminal's width (COLUMNS first, as rich and shutil do); 120 when there is none."""
    return max(40, shutil.get_terminal_size(fallback=(DEFAULT_WIDTH, 24)).columns)


def emit(doc: Document, fmt: str, output: str | None) -> None:
    ctx = click.get_current_context(silent=True)
    meta = ctx.meta.get(_META, {}) if ctx is not None else {}
    text = render(doc, Format(fmt), width=terminal_width(),
                  csv_options=meta.get("csv", CsvOptions()))
    if meta.get("plot"):
        from optimus_calc.report.plots import write_plot
        if output not in (None, "-") and Path(output).resolve() == Path(meta["plot"]).resolve():
            raise InputError(f"--plot {meta['plot']!r} and -o {output!r} name the same file")
        write_plot(doc, meta["plot"])
        click.echo(f"wrote {meta['plot']}", err=True)
    if output is None or output == "-":
        click.echo(text, nl=False)
        return
    path = Path(output)
    if path.is_dir():
        raise InputError(f"-o {output!r} is a directory; give a file name")
    if not path.parent.exists():
        raise InputError(f"-o {output!r}: directory {str(path.parent)!r} does not exist")
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"-o {output!r}: cannot write: {exc.strerror}") from None
    click.echo(f"wrote {output}", err=True)
