"""Options shared by several commands, and writing a Document to stdout or a file."""

from __future__ import annotations

import functools
import os
import stat
import sys
from typing import Callable

import click

from optimus_calc.errors import InputError
from optimus_calc.report.document import Document
from optimus_calc.report.formats import DEFAULT_WIDTH, CsvOptions, Format, render

_META = "optimus_calc.output"  # click context meta key: CSV options and the --plot path


def _category(char: str) -> str:
    import unicodedata
    return unicodedata.category(char)


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
    # the usual separators are visible (unicodedata, a compiled module, loads for the others)
    invisible = sep not in ",;\t" and (sep.isspace() or _category(sep)[0] in "CZ")
    if sep.isalnum() or sep in "\"'\r\n.+-=@|" or invisible:  # ESC, DEL, NUL, bidi marks...
        raise InputError(f"--csv-sep {sep!r}: not usable as a field separator; use , ; or tab")
    return CsvOptions(sep=sep, decimal=decimal)


def refuse_typed(names: tuple[str, ...], applies: bool, needs: str) -> None:
    """A flag is never silently ignored (docs/guide/errors.md): where ``applies`` is False, an
    error naming those of the options ``names`` the command line gave ("--compress-on applies
    with --compression R"); nothing where none was given."""
    if applies:
        return
    ctx = click.get_current_context()
    typed = [f"--{n.replace('_', '-')}" for n in names
             if ctx.get_parameter_source(n) is not click.core.ParameterSource.DEFAULT]
    if typed:
        raise InputError(f"{' and '.join(typed)} appl{'y' if len(typed) > 1 else 'ies'} {needs}")


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
        refuse_typed(("csv_sep", "csv_decimal"), kwargs.get("fmt") == Format.CSV.value,
                     "to --format csv")
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
            check_target(path, "--plot")
            check_path(path)  # a bad extension fails before any work
            click.get_current_context().meta.setdefault(_META, {})["plot"] = path
        return func(*args, **kwargs)
    return wrapper


def terminal_width() -> int:
    """The terminal's width (COLUMNS first, as rich and shutil do); 120 when there is none.
    The columns ``shutil.get_terminal_size(fallback=(120, 24))`` returns, without importing
    shutil (and the compression modules it loads) on every command."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):  # no stdout, or not a terminal
            columns = DEFAULT_WIDTH
        columns = columns or DEFAULT_WIDTH
    return max(40, columns)


def emit(doc: Document, fmt: str, output: str | None) -> None:
    """Render ``doc`` and write it, and its chart with ``--plot``, through the one writer:
    :func:`write_stdout` or :func:`write_file` (the chart always the latter)."""
    ctx = click.get_current_context(silent=True)
    meta = ctx.meta.get(_META, {}) if ctx is not None else {}
    doc = with_profile(doc, ctx)
    if fmt == Format.HTML.value:
        doc = with_command(doc)
    text = render(doc, Format(fmt), width=terminal_width(),
                  csv_options=meta.get("csv", CsvOptions()))
    if meta.get("plot"):
        from optimus_calc.report.plots import plot_bytes
        plot = meta["plot"]
        if output not in (None, "-") and _same_path(output, plot):
            raise InputError(f"--plot {plot[:200]!r} and -o {output[:200]!r} name the same file")
        write_file(plot, plot_bytes(doc, plot), "--plot")
    if output is None or output == "-":
        write_stdout(text)
        return
    write_file(output, text)


def with_command(doc: Document) -> Document:
    """The command line that reproduces an HTML page, and the version that drew it."""
    import shlex

    from optimus_calc import __version__
    from optimus_calc.cli.main import ARGS
    from optimus_calc.report.html_parts import with_html
    return with_html(doc, command=shlex.join(["optimus-calc", *ARGS]), version=__version__)


def with_profile(doc: Document, ctx: click.Context | None) -> Document:
    """Name the calibration profile in use (--profile) in the header and the JSON."""
    app = ctx.find_root().obj if ctx is not None else None
    profile = getattr(app, "profile", None)
    if profile is None:
        return doc
    from dataclasses import replace
    label, gpu = profile.label, ((doc.data or {}).get("hardware") or {}).get("gpu")
    fitted = {getattr(app.catalog.find(n, "gpu"), "name", n) for n in profile.gpus}
    if gpu and fitted and gpu not in fitted:  # its GPU fields are another GPU's
        rest = [k for k, t in (("assumptions", profile.assumptions), ("link", profile.links),
                               ("NIC", profile.nics)) if t]
        label += (f"; its GPU fields are {', '.join(sorted(fitted))}'s: {gpu} keeps the "
                  "catalog's" + (f" (its {', '.join(rest)} tables apply)" if rest
                                 else ", so nothing of it applies"))
    return replace(doc, header=[("profile", label)] + list(doc.header),
                   data={**doc.data, "profile": profile.data()})


def _same_path(a: str, b: str) -> bool:
    try:
        return os.path.realpath(a) == os.path.realpath(b)
    except (OSError, ValueError):
        return a == b


def write_stdout(text: str) -> None:
    """Standard output, written whole: a short write is retried, and a full device (ENOSPC),
    a file-size limit (EFBIG, ``ulimit -f``) or an I/O error is a one-line input error, never a
    silent truncation with exit 0 (Python's buffered stdout drops the rest of a short write).
    A closed standard output (``>&-``: Python then sets sys.stdout to None and click.echo writes
    nothing) is the same error."""
    if sys.stdout is None:
        raise InputError("cannot write to standard output: it is closed (give -o FILE)")
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (a test's capture)
        click.echo(text, nl=False)
        return
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    try:
        sys.stdout.flush()
        _write_all(fd, text.encode(encoding, errors="replace"))
    except BrokenPipeError:  # the reader went away (`| head`): end quietly, exit 0. Raised
        _silence_stdout()     # on, click's main would turn it into exit 1 (click 8.5 main())
        sys.exit(0)
    except OSError as exc:
        _silence_stdout()
        raise InputError(f"cannot write to standard output: {exc.strerror or exc}") from None


def _write_all(fd: int, data: bytes) -> None:
    """``os.write`` until every byte is out; a descriptor left non-blocking waits until ready."""
    import errno
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view[:1 << 20])
        except BlockingIOError:
            import select  # only for a descriptor left non-blocking
            select.select([], [fd], [])
            continue
        if n <= 0:
            raise OSError(errno.EIO, "short write")
        view = view[n:]


def _silence_stdout() -> None:
    """Point fd 1 at /dev/null so the interpreter's final flush of the text already buffered
    does not fail a second time (the recipe of Python's signal docs for SIGPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def check_target(output: str, flag: str = "-o") -> None:
    """What can be said of an output name before any work: a name ending in '/' names a
    directory (``--plot /x.png/`` must not write /x.png), an existing directory is one, and the
    directory it goes in must exist."""
    from optimus_calc.loaders import safe_stat
    if output.endswith(("/", os.sep)) or (os.altsep and output.endswith(os.altsep)):
        raise InputError(f"{flag} {output[:200]!r} ends in '/', so it names a directory; give "
                         "a file name")
    st = safe_stat(output)
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise InputError(f"{flag} {output[:200]!r} is a directory; give a file name")
    parent = os.path.dirname(output) or "."
    pst = safe_stat(parent)
    if pst is None or not stat.S_ISDIR(pst.st_mode):
        raise InputError(f"{flag} {output[:200]!r}: directory {parent[:200]!r} does not exist")
    if st is None or stat.S_ISREG(st.st_mode):  # a file will be created there: can it be?
        import tempfile
        try:
            fd, probe = tempfile.mkstemp(prefix=".optimus-calc-probe.", dir=parent)
        except OSError as exc:
            raise InputError(f"{flag} {output[:200]!r}: cannot write in {parent[:200]!r}: "
                             f"{exc.strerror}") from None
        os.close(fd)
        os.unlink(probe)


def write_file(output: str, data: str | bytes, flag: str = "-o") -> None:
    """The one writer of output files (``-o``, ``--plot``): ``data`` goes to a temporary file in
    the same directory (named from a shortened ``output``), then ``os.replace``. A failed write
    leaves an existing file intact and no new file behind; every failure (no such directory,
    read-only or pseudo file system such as /proc, a name too long, a full disk) is one line.
    Refuses a path that is one of the command's own inputs (loaders.inputs_read). A device or
    FIFO that already exists (``/dev/null``, ``/dev/stdout``) is written directly, opened
    non-blocking so a FIFO nobody reads is an error, not a hang."""
    from optimus_calc.loaders import inputs_read, safe_stat

    shown = output[:200]
    check_target(output, flag)
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
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        if st is not None and not stat.S_ISREG(st.st_mode):
            _write_special(target, payload)  # a device or FIFO: nothing to replace atomically
        else:
            _atomic_write(target, payload, st)
    except OSError as exc:
        raise InputError(f"{flag} {shown!r}: cannot write: {_write_reason(exc)}") from None
    from optimus_calc.errors import visible
    click.echo(f"wrote {visible(output)}", err=True)


def _write_reason(exc: OSError) -> str:
    import errno
    from optimus_calc.loaders import os_message
    if exc.errno == errno.ENXIO:
        return "a FIFO that no process is reading"
    return os_message(exc)


def _write_special(target: str, data: bytes) -> None:
    """An existing device or FIFO: opened without blocking (ENXIO for a FIFO with no reader),
    then written whole in blocking mode."""
    import fcntl
    fd = os.open(target, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
        _write_all(fd, data)
    finally:
        os.close(fd)


def _same(st: os.stat_result, path: str) -> bool:
    from optimus_calc.loaders import safe_stat
    other = safe_stat(path)
    return other is not None and (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino)


def _atomic_write(target: str, data: bytes, st: os.stat_result | None) -> None:
    import tempfile  # only when a file is written (off the cold path)
    directory, name = os.path.split(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{name[:100]}.", suffix=".tmp", dir=directory or ".")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if st is not None:
            mode = stat.S_IMODE(st.st_mode)
        else:  # a new file; a script (the Megatron-LM export's #!/bin/bash) made executable
            umask = os.umask(0)
            os.umask(umask)
            mode = (0o777 if data.startswith(b"#!") else 0o666) & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
