"""The documentation's examples (README.md and docs/**/*.md), generated from the real commands.

A fenced block preceded by ``<!-- example -->`` and opening with ``$ optimus-calc ARGS`` is an
example: its body is what ``optimus-calc ARGS`` prints (standard output, then standard error),
run in-process from the repository root with a 120-column terminal, trailing blanks removed.
A block opening with ``$ cat FILE`` shows that file of the repository (an input an example reads).
Options select the output lines shown (``...`` stands where lines were left out), separated by
``;``: ``lines=1-12,20-25`` (1-based ranges), ``head=N``, ``tail=N``, ``from=TEXT`` (from the first
line containing TEXT to the end), ``match=REGEX`` (the lines the regular expression finds); and
``columns=N`` runs the command at an N-column terminal instead of 120.

``python -m optimus_calc.cli.examples`` rewrites every example of README.md and docs/ (or of the
files named); the test suite fails when one differs from what its command prints now
(tests/test_docs.py).
"""

from __future__ import annotations
from optimus_calc.record import record

import contextlib
import io
import os
import re
import shlex
import sys
from pathlib import Path

MARK = re.compile(r"^<!-- example(?::\s*(?P<opts>.*?))?\s*-->\s*$")
PROMPT = "$ optimus-calc "
CAT = "$ cat "
WIDTH = "120"
ELLIPSIS = "..."


@record
class Example:
    start: int          # index of the opening fence line
    end: int            # index of the closing fence line
    args: tuple[str, ...]
    opts: tuple[tuple[str, str], ...]  # (key, value) output selections; () = every line
    body: tuple[str, ...]  # the lines between the fences as the page has them
    program: str = "optimus-calc"  # or "cat": the block shows a file

    @property
    def command(self) -> str:
        return f"$ {self.program} " + shlex.join(self.args)


KEYS = ("lines", "head", "tail", "from", "match", "columns")
SELECTIONS = KEYS[:-1]


def _options(opts: str | None) -> tuple[tuple[str, str], ...]:
    out = []
    for part in (opts or "").split(";"):
        if not part.strip():
            continue
        key, _, value = part.partition("=")
        if key.strip() not in KEYS or not value:
            raise ValueError(f"unknown example option {part!r} (one of {', '.join(KEYS)})")
        out.append((key.strip(), value.strip()))
    return tuple(out)


def _kept(opts: tuple[tuple[str, str], ...], output: list[str]) -> list[int]:
    """0-based indices of the output lines the options keep (all when there are none)."""
    opts = tuple((k, v) for k, v in opts if k in SELECTIONS)
    if not opts:
        return list(range(len(output)))
    keep: set[int] = set()
    n = len(output)
    for key, value in opts:
        if key == "lines":
            for part in value.split(","):
                a, _, b = part.partition("-")
                keep.update(range(int(a) - 1, min(int(b or a), n)))
        elif key == "head":
            keep.update(range(min(int(value), n)))
        elif key == "tail":
            keep.update(range(max(0, n - int(value)), n))
        elif key == "from":
            first = next((i for i, line in enumerate(output) if value in line), n)
            keep.update(range(first, n))
        else:  # match
            rx = re.compile(value)
            keep.update(i for i, line in enumerate(output) if rx.search(line))
    return sorted(keep)


def find(text: str) -> list[Example]:
    """Every marked example of ``text`` (a Markdown page)."""
    lines = text.split("\n")
    found = []
    for i, line in enumerate(lines):
        m = MARK.match(line)
        if not m:
            continue
        if i + 2 >= len(lines) or not lines[i + 1].startswith("```") \
                or not lines[i + 2].startswith((PROMPT, CAT)):
            raise ValueError(f"line {i + 1}: an example marker must precede a fenced block "
                             f"opening with '{PROMPT.strip()} ...' or '{CAT.strip()} FILE'")
        end = next(j for j in range(i + 2, len(lines)) if lines[j].startswith("```"))
        prompt = PROMPT if lines[i + 2].startswith(PROMPT) else CAT
        args = tuple(shlex.split(lines[i + 2][len(prompt):]))
        found.append(Example(start=i + 1, end=end, args=args, opts=_options(m.group("opts")),
                             body=tuple(lines[i + 2:end]), program=prompt.split()[1]))
    return found


def run(args: tuple[str, ...], width: str = WIDTH) -> list[str]:
    """What ``optimus-calc ARGS`` prints (stdout, then stderr), as lines without trailing blanks,
    at a ``width``-column terminal."""
    from optimus_calc.cli.main import main
    out, err = io.StringIO(), io.StringIO()
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = width
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(list(args))
            except SystemExit:
                pass
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    text = out.getvalue() + err.getvalue()
    return [line.rstrip() for line in text.rstrip("\n").split("\n")]


def output(ex: Example) -> list[str]:
    """What the example shows: the command's output, or the file's text for ``$ cat FILE``."""
    if ex.program == "cat":
        text = Path(*ex.args).read_text()
        return [line.rstrip() for line in text.rstrip("\n").split("\n")]
    return run(ex.args, dict(ex.opts).get("columns", WIDTH))


def render(ex: Example, output: list[str]) -> list[str]:
    """The block's body: the command line, then the kept output lines."""
    body, last = [ex.command], -1
    for i in _kept(ex.opts, output):
        if i > last + 1:
            body.append(ELLIPSIS)
        body.append(output[i])
        last = i
    if any(k in SELECTIONS for k, _ in ex.opts) and last < len(output) - 1:
        body.append(ELLIPSIS)
    return body


def regenerate(text: str) -> tuple[str, list[Example]]:
    """``text`` with every example's body replaced by its command's output, and the examples
    whose body changed."""
    lines = text.split("\n")
    changed = []
    for ex in reversed(find(text)):
        body = render(ex, output(ex))
        if tuple(body) != ex.body:
            changed.append(ex)
            lines[ex.start + 1:ex.end] = body
    return "\n".join(lines), changed[::-1]


def root() -> Path:
    """The repository root: examples run from there."""
    return Path(__file__).resolve().parents[3]


def pages(base: Path) -> list[Path]:
    """Every page whose examples are generated: README.md, then docs/**/*.md."""
    return [base / "README.md", *sorted((base / "docs").rglob("*.md"))]


def main(argv: list[str] | None = None) -> int:  # pragma: no cover - a developer's tool
    """Regenerate the examples of the pages named (default: README.md and docs/**/*.md)."""
    args = sys.argv[1:] if argv is None else argv
    if any(a.startswith("-") for a in args):  # no options: a usage line, not a missing file
        print("usage: python -m optimus_calc.cli.examples [PAGE.md ...] (default: README.md "
              "and docs/**/*.md)", file=sys.stderr)
        return 0 if set(args) & {"-h", "--help"} else 2
    named = [Path(a).resolve() for a in args]
    missing = [str(p) for p in named if not p.is_file()]
    if missing:
        print(f"error: no such page: {', '.join(missing)}", file=sys.stderr)
        return 2
    base = root()
    os.chdir(base)  # example paths are relative to the repository root
    for path in named or pages(base):
        new, changed = regenerate(path.read_text())
        path.write_text(new)
        for ex in changed:
            print(f"updated: {path.relative_to(base)}: {ex.command}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
