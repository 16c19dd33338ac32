"""Options shared by several commands, and writing a Document to stdout or a file."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Callable

import click

from optimus_calc.errors import InputError
from optimus_calc.report.document import Document
from optimus_calc.report.formats import Format, render


def output_options(func: Callable) -> Callable:
    @click.option("--format", "fmt", type=click.Choice([f.value for f in Format]),
                  default=Format.TABLE.value, show_default=True, help="Output format.")
    @click.option("-o", "--output", "output", type=str, default=None, metavar="FILE",
                  help="Write to FILE instead of standard output.")
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)
    return wrapper


def emit(doc: Document, fmt: str, output: str | None) -> None:
    """Render ``doc`` in ``fmt`` to standard output or the file ``output``."""
    write_output(render(doc, Format(fmt)), output)


def write_output(text: str, output: str | None) -> None:
    """``text`` to standard output (no ``-o`` or ``-o -``) or the file ``output``."""
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
