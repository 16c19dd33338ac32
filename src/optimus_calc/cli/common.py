"""Options shared by several commands, and writing a Document to stdout or a file."""

from __future__ import annotations

import functools
import os
import shutil
import stat
import sys
import tempfile
import unicodedata
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
    invisible = sep != "\t" and (sep.isspace() or unicodedata.category(sep)[0] in "CZ")
    if sep.isalnum() or sep in "\"'\r\n.+-=@|" or invisible:  # ESC, DEL, NUL, bidi marks...
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
        write_stdout(text)
        return
    write_file(output, text)


def write_stdout(text: str) -> None:
    """Standard output; a full device or an I/O error is an input error, not a traceback."""
    try:
        click.echo(text, nl=False)
    except BrokenPipeError:
        raise
    except OSError as exc:
        _silence_stdout()
        raise InputError(f"cannot write to standard output: {exc.strerror or exc}") from None


def _silence_stdout() -> None:
    """Point fd 1 at /dev/null so the interpreter's final flush of the text already buffered
    does not fail a second time (the recipe of Python's signal docs for SIGPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def write_file(output: str, text: str, flag: str = "-o") -> None:
    """Write ``text`` to ``output`` atomically: a temporary file in the same directory, then
    ``os.replace``. A failed write leaves an existing file intact and no new file behind.
    Refuses a path that is one of the command's own inputs (loaders.inputs_read). A device or
    FIFO that already exists (``/dev/null``, ``/dev/stdout``) is written directly."""
    from optimus_calc.loaders import inputs_read, os_message, safe_stat

    shown = output[:200]
    target = os.path.realpath(output) if os.path.islink(output) else output
    st = safe_stat(target)
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise InputError(f"{flag} {shown!r} is a directory; give a file name")
    if os.path.realpath(target) in inputs_read() or (
            st is not None and any(_same(st, p) for p in inputs_read())):
        raise InputError(f"{flag} {shown!r} is an input of this command; refusing to overwrite "
                         "it (give another file name)")
    parent = os.path.dirname(target) or "."
    pst = safe_stat(parent)
    if pst is None or not stat.S_ISDIR(pst.st_mode):
        raise InputError(f"{flag} {shown!r}: directory {parent[:200]!r} does not exist")
    data = text.encode("utf-8")
    try:
        if st is not None and not stat.S_ISREG(st.st_mode):
            with open(target, "wb") as fh:  # a device or FIFO: nothing to replace atomically
                fh.write(data)
        else:
            _atomic_write(target, data, st)
    except OSError as exc:
        raise InputError(f"{flag} {shown!r}: cannot write: {os_message(exc)}") from None
    click.echo(f"wrote {output}", err=True)


def _same(st: os.stat_result, path: str) -> bool:
    from optimus_calc.loaders import safe_stat
    other = safe_stat(path)
    return other is not None and (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino)


def _atomic_write(target: str, data: bytes, st: os.stat_result | None) -> None:
    directory, name = os.path.split(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{name[:100]}.", suffix=".tmp", dir=directory or ".")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if st is not None:
            mode = stat.S_IMODE(st.st_mode)
        else:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
