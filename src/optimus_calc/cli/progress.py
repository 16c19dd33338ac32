"""A progress bar on stderr for long searches (issue 20).

The core takes a plain ``progress(done, total)`` callback and knows nothing of terminals; this
module turns it into a rich bar that is drawn only when stderr is a terminal and only once the
work has run for ``DELAY_S`` (about a second: quick commands never flash a bar). It writes to
stderr alone and is transient (erased when done), so JSON/CSV on stdout, files written with
``-o`` and the output tests capture (not a terminal) never contain it.
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from typing import Callable, Iterator

DELAY_S = 1.0  # seconds of work before a bar appears


def _stderr_is_terminal() -> bool:
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError):  # replaced or closed stream
        return False


def _noop(done: int, total: int) -> None:
    return None


@contextmanager
def progress_bar(description: str) -> Iterator[Callable[[int, int], None]]:
    """Yields the callback to hand to the core; the bar (if it was drawn) is removed on exit."""
    if not _stderr_is_terminal():
        yield _noop
        return
    start = time.monotonic()
    state: dict = {}

    def update(done: int, total: int) -> None:
        if "bar" not in state:
            if time.monotonic() - start < DELAY_S or done >= total:
                return
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)
            bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                           TimeElapsedColumn(), TimeRemainingColumn(),
                           console=Console(file=sys.stderr), transient=True)
            bar.start()
            state["bar"], state["task"] = bar, bar.add_task(description, total=total)
        state["bar"].update(state["task"], completed=done, total=total)

    try:
        yield update
    finally:
        if "bar" in state:
            state["bar"].stop()
