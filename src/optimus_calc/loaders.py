"""The one guarded reader of user files: catalog TOML and Hugging Face config.json.

Rules (README, "Errors"): only regular files are read (a FIFO, a device such as /dev/zero, or a
symlink to one is an input error, never a hang or an unbounded read); a file larger than
:data:`MAX_INPUT_BYTES` is an input error; text must be UTF-8; nesting deeper than the parser's
recursion limit is an input error. TOML is scanned before ``tomllib`` builds anything
(:func:`check_toml_shape`): what it builds grows with the square of a dotted key's depth (60 kB
of ``a.a.a...`` took gigabytes), so nesting deeper than :data:`MAX_TOML_DEPTH` levels or more than
:data:`MAX_TOML_TOKENS` keys, values and separators is an input error. Every message names the
file.

Every file read here is remembered for the current command (:func:`inputs_read`), so that
``-o FILE`` can refuse to overwrite one of the command's own inputs.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import tomllib
from pathlib import Path

from optimus_calc.errors import InputError

# The largest built-in catalog file is under 20 kB and the largest Hugging Face config.json we
# know of (DeepSeek-V3, Llama-4) under 10 kB; 4 MB leaves a 200x margin and still bounds memory.
MAX_INPUT_BYTES = 4_000_000

# The built-in catalog nests three levels (``[[gpu]]``, a key, an inline table) and holds about
# 5,000 structural tokens in all its files together; 32 levels and 50,000 tokens per file leave a
# wide margin while bounding tomllib to well under a second and a few tens of MB.
MAX_TOML_DEPTH = 32
MAX_TOML_TOKENS = 50_000

_INPUTS: set[str] = set()


def reset_inputs() -> None:
    """Forget the inputs of the previous command (the CLI calls this once per run)."""
    _INPUTS.clear()


def note_input(path: str | os.PathLike) -> None:
    """Remember ``path`` as an input of the current command."""
    try:
        _INPUTS.add(os.path.realpath(path))
    except (OSError, ValueError):
        pass


def inputs_read() -> frozenset[str]:
    """Real paths of the files the current command has read."""
    return frozenset(_INPUTS)


def os_message(exc: OSError) -> str:
    """A short reason for an OSError (ENAMETOOLONG, ELOOP, EACCES...) without the path."""
    if exc.errno == errno.ENAMETOOLONG:
        return "file name too long"
    return exc.strerror or type(exc).__name__


def safe_stat(path: str | os.PathLike) -> os.stat_result | None:
    """``os.stat`` that returns None for a path that does not exist (or cannot, such as a name
    too long for the file system) instead of raising."""
    try:
        return os.stat(path)
    except (OSError, ValueError):
        return None


def read_bytes(path: str | os.PathLike, what: str = "file",
               limit: int = MAX_INPUT_BYTES) -> bytes:
    """Read a regular file of at most ``limit`` bytes; anything else is an InputError naming it.

    The file is opened non-blocking (a FIFO swapped in after the check cannot hang the open) and
    checked again on the open descriptor, then read at most ``limit + 1`` bytes."""
    p = str(path)
    try:
        st = os.stat(p)
    except (OSError, ValueError) as exc:
        reason = os_message(exc) if isinstance(exc, OSError) else "invalid file name"
        raise InputError(f"{what} {p[:200]}: cannot read: {reason}") from None
    _check_regular(st, p, what, limit)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(f"{what} {p[:200]}: cannot read: {os_message(exc)}") from None
    try:
        _check_regular(os.fstat(fd), p, what, limit)
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise InputError(f"{what} {p[:200]}: cannot read: {os_message(exc)}") from None
    finally:
        os.close(fd)
    if total > limit:
        raise InputError(f"{what} {p[:200]}: larger than the {limit:,} byte limit for input files")
    note_input(p)
    return b"".join(chunks)


def _check_regular(st: os.stat_result, p: str, what: str, limit: int) -> None:
    if not stat.S_ISREG(st.st_mode):
        kind = ("a directory" if stat.S_ISDIR(st.st_mode) else
                "a FIFO" if stat.S_ISFIFO(st.st_mode) else
                "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else
                "a socket" if stat.S_ISSOCK(st.st_mode) else "not a file")
        raise InputError(f"{what} {p[:200]}: is {kind}, not a regular file")
    if st.st_size > limit:
        raise InputError(f"{what} {p[:200]}: {st.st_size:,} bytes is larger than the "
                         f"{limit:,} byte limit for input files")


def read_text(path: str | os.PathLike, what: str = "file") -> str:
    """:func:`read_bytes`, decoded as UTF-8 (an InputError otherwise)."""
    data = read_bytes(path, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} {str(path)[:200]}: not UTF-8 text (byte {exc.start})") from None


def load_toml(path: str | os.PathLike, what: str = "catalog file") -> dict:
    """Read and parse a TOML file under the rules above."""
    text = read_text(path, what)
    check_toml_shape(text, path, what)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{what} {str(path)[:200]}: not valid TOML: {exc}") from None
    except RecursionError:
        raise InputError(f"{what} {str(path)[:200]}: nested too deeply") from None


# Strings and comments (skipped whole: their dots and brackets are text) and the characters that
# give a TOML document its structure. Multi-line forms first, escapes honoured.
_TOML_TOKEN = re.compile(
    r'"""(?:\\[\s\S]|[^\\])*?"""'  # multi-line basic string
    r"|'''[\s\S]*?'''"             # multi-line literal string
    r'|"(?:\\.|[^"\\\n])*"'          # basic string
    r"|'[^'\n]*'"                  # literal string
    r"|#[^\n]*|[\[\]{}.,=\n]")       # comment, structure


def check_toml_shape(text: str, path: str | os.PathLike, what: str = "catalog file") -> None:
    """Refuse a TOML text nested deeper than :data:`MAX_TOML_DEPTH` (table-header parts +
    dotted-key parts + open arrays and inline tables, counted together) or with more than
    :data:`MAX_TOML_TOKENS` structural tokens, before ``tomllib`` builds it. One linear pass;
    a dot inside a number counts as a key part, so the depth is an upper bound."""
    depth, tokens = _TomlDepth(), 0
    for m in _TOML_TOKEN.finditer(text):
        tokens += 1
        if tokens > MAX_TOML_TOKENS:
            raise InputError(f"{what} {str(path)[:200]}: more than {MAX_TOML_TOKENS:,} keys, "
                             "values and separators")
        if depth.step(m.group()[0]) > MAX_TOML_DEPTH:
            line = text.count("\n", 0, m.start()) + 1
            raise InputError(f"{what} {str(path)[:200]}: line {line}: nested too deeply (more "
                             f"than {MAX_TOML_DEPTH} levels of tables, dotted keys and arrays)")


class _TomlDepth:
    """The nesting depth at each structural token of a TOML text (see check_toml_shape)."""

    def __init__(self) -> None:
        self.header = 0        # depth of the current [table] / [[array of tables]]
        self.level = 0         # depth of the innermost open array / inline table (or header)
        self.cur = 0           # depth reached by the key being read at that level
        self.dots = 0          # dots in the key (or header) being read
        self.stack: list[tuple[int, int]] = []
        self.line_start = True
        self.in_header = False

    def step(self, ch: str) -> int:
        if ch == "\n":
            if not self.stack:
                self.level = self.cur = self.header
                self.dots, self.line_start = 0, True
            return 0
        if ch in "\"'#":  # a string or a comment: one value, no structure
            self.line_start = False
            return 0
        if ch == "[" and (self.line_start or self.in_header) and not self.stack:
            self.in_header, self.dots, self.line_start = True, 0, False  # [table] or [[table]]
            return 0
        self.line_start = False
        if self.in_header:
            if ch == "]":
                self.in_header = False
                self.header = self.level = self.cur = self.dots + 1
                self.dots = 0
                return self.header
            self.dots += ch == "."
            return self.dots + 1
        return self._value(ch)

    def _value(self, ch: str) -> int:
        if ch == ".":
            self.dots += 1
        elif ch == "=":
            self.cur, self.dots = self.cur + self.dots + 1, 0
        elif ch in "[{":
            self.stack.append((self.level, self.cur))
            self.level = self.cur = self.cur + 1
            self.dots = 0
        elif ch == ",":
            self.cur, self.dots = self.level, 0
        elif ch in "]}" and self.stack:
            self.level, self.cur = self.stack.pop()
            self.dots = 0
        return self.cur + self.dots + 1


def parse_json(text: str, path: str | os.PathLike, what: str = "file", parse_constant=None):
    """``json.loads`` whose nesting errors are InputErrors naming the file."""
    try:
        return json.loads(text, parse_constant=parse_constant)
    except RecursionError:
        raise InputError(f"{what} {str(path)[:200]}: nested too deeply") from None


def user_path(text: str, what: str) -> Path:
    """A path typed by the user, ``~`` expanded; an unknown ``~user`` is an InputError."""
    out = os.path.expanduser(text)
    if out.startswith("~"):
        raise InputError(f"{what} {text[:200]!r}: cannot expand '~' (no such user or no home "
                         "directory)")
    return Path(out)
