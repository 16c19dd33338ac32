"""The one guarded reader of user files: catalog TOML and Hugging Face config.json.

Rules (docs/guide/errors.md): only regular files are read (a FIFO, a device such as /dev/zero, or a
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
    """Remember ``path`` as an input of the current command (resolved only if asked: most
    commands write no file)."""
    try:
        _INPUTS.add(os.path.abspath(path))
    except (OSError, ValueError):
        pass


def inputs_read() -> frozenset[str]:
    """Real paths of the files the current command has read."""
    out = set()
    for p in _INPUTS:
        try:
            out.add(os.path.realpath(p))
        except (OSError, ValueError):
            pass
    return frozenset(out)


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
    """:func:`read_bytes`, decoded as UTF-8 (an InputError otherwise); a leading byte-order mark
    (Excel's "CSV UTF-8", Notepad's UTF-8) is dropped, as config.json's reader does."""
    data = read_bytes(path, what)
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} {str(path)[:200]}: not UTF-8 text (byte {exc.start})") from None


def load_toml(path: str | os.PathLike, what: str = "catalog file",
              snapshot: dict | None = None) -> dict:
    """Read and parse a TOML file under the rules above. ``snapshot`` ({"text", "data"}: this
    file parsed earlier, the built-in catalog's :func:`read_snapshot`) is returned instead of a
    new parse when the file's text is still exactly its text."""
    text = read_text(path, what)
    if snapshot is not None and snapshot.get("text") == text:
        return snapshot["data"]
    check_toml_shape(text, path, what)
    import tomllib  # here: the built-in catalog usually comes from its snapshot (5 ms saved)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{what} {str(path)[:200]}: not valid TOML: {exc}") from None
    except RecursionError:
        raise InputError(f"{what} {str(path)[:200]}: nested too deeply") from None


def read_snapshot(path: str | os.PathLike) -> dict:
    """The built-in catalog's parse snapshot (``{relative path: {"text", "data"}}``, written by
    ``python -m optimus_calc.catalog_snapshot``): a JSON file of the package, not user input;
    parsing JSON is some 30 times faster than TOML. Empty when missing or unreadable, so the
    catalog is then parsed from its TOML files."""
    try:
        with open(path, "rb") as fh:
            data = json.loads(fh.read())
    except (OSError, ValueError):
        return {}
    return data.get("files", {}) if isinstance(data, dict) else {}


# Strings and comments (skipped whole: their dots and brackets are text) and the characters that
# give a TOML document its structure. Multi-line forms first, escapes honoured.
_TOML_TOKEN = (  # compiled on first use: the built-in catalog comes from its snapshot
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
    for m in re.finditer(_TOML_TOKEN, text):
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


# ---- runs files in YAML: a small strict subset (no new dependency) ---------------------------
# A list of flat mappings of scalars, top level or under ``runs:``. Anything else YAML allows
# (anchors, aliases, tags, flow collections, block scalars, nesting, several documents) is refused
# naming the line, so a file never means something other than what it says.
_YAML_KEY = r"([A-Za-z_][A-Za-z0-9_-]*)[ \t]*:(?:[ \t]+|$)"  # compiled on first use
_YAML_INT = r"[-+]?[0-9]+"
_YAML_FLOAT = r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
_YAML_UNSUPPORTED = {"&": "anchors", "*": "aliases", "!": "tags", "[": "flow sequences",
                     "{": "flow mappings", "|": "block (multi-line) scalars",
                     ">": "block (multi-line) scalars", "@": "reserved '@'", "`": "reserved '`'",
                     "%": "directives", "-": "nested lists"}


def _yaml_scalar(text: str, where: str) -> str | None:
    """One scalar value as the text a CSV cell would hold (None for null): quotes removed,
    booleans as true/false, numbers normalised (``4e8`` -> ``400000000``)."""
    text = text.strip()
    if text[:1] in ("'", '"'):
        q = text[0]
        end, out = 1, []
        while end < len(text) and text[end] != q or text[end + 1:end + 2] == q == "'":
            if text[end] == "\\" and q == '"':
                if text[end + 1:end + 2] not in ('"', "\\"):
                    raise InputError(f"{where}: escape {text[end:end + 2]!r} is not supported "
                                     "(only \\\" and \\\\)")
                end += 1
            elif text[end] == q:  # '' inside a single-quoted string
                end += 1
            out.append(text[end])
            end += 1
        rest = text[end + 1:].strip()
        if end >= len(text) or (rest and not rest.startswith("#")):
            raise InputError(f"{where}: a quoted value must close on its own line")
        return "".join(out)
    text = "" if text.startswith("#") else re.split(r"[ \t]#", text, maxsplit=1)[0].strip()
    if re.fullmatch(_YAML_INT, text):  # before the '-' of a nested list: -1 is a number
        return str(int(text))
    if re.fullmatch(_YAML_FLOAT, text):
        value = float(text)
        return str(int(value)) if value.is_integer() and abs(value) < 1e18 else repr(value)
    if text[:1] in _YAML_UNSUPPORTED:
        raise InputError(f"{where}: {_YAML_UNSUPPORTED[text[0]]} are not supported in a runs file")
    if ": " in text or text.endswith(":") or text.startswith(("- ", "? ")) or text == "-":
        raise InputError(f"{where}: nested mappings and lists are not supported (one scalar "
                         "value per key)")
    if text in ("", "~", "null", "Null", "NULL"):
        return None
    if text in ("true", "True", "TRUE", "false", "False", "FALSE"):
        return text.lower()
    if text.lower() in (".inf", "+.inf", "-.inf", ".nan"):
        raise InputError(f"{where}: {text!r} is not a finite number")
    return text


def _yaml_lines(text: str, path: str):
    """(line number, indent, content) of each line that is not blank or a comment."""
    for n, raw in enumerate(text.splitlines(), 1):
        body = raw.lstrip(" ")
        if not body.strip() or body.startswith("#"):
            continue
        if body[0] == "\t" or "\t" in raw[:len(raw) - len(body)]:
            raise InputError(f"runs file {path} line {n}: tabs are not allowed in indentation")
        if body.rstrip() in ("---", "...") or body.startswith(("--- ", "%")):
            raise InputError(f"runs file {path} line {n}: document markers and directives are "
                             "not supported (one document per runs file)")
        yield n, len(raw) - len(body), body.rstrip()


def parse_runs_yaml(text: str, path: str | os.PathLike) -> list[tuple[int, dict[str, str]]]:
    """A YAML runs file as (line of the item's dash, key -> scalar text) per run, like the
    CSV's rows (null values left out). The subset: a list of flat mappings, top level or under
    one ``runs:`` key; comments; plain, single- and double-quoted scalars."""
    p = str(path)[:200]
    lines = list(_yaml_lines(text, p))
    if lines and lines[0][1] == 0 and re.fullmatch(r"runs[ \t]*:", lines[0][2]):
        lines = lines[1:]
        if lines and lines[0][1] == 0 and not re.match(r"-( |$)", lines[0][2]):  # items at col 1 ok
            raise InputError(f"runs file {p} line {lines[0][0]}: only one top-level key, "
                             "'runs:', holding the list of runs, is supported")
    if not lines:
        raise InputError(f"runs file {p}: no runs (expected a list of '- key: value' items)")
    dash = lines[0][1]
    items: list[tuple[int, dict[str, str]]] = []
    col = None
    for n, ind, body in lines:
        where = f"runs file {p} line {n}"
        if ind == dash and (body == "-" or body.startswith("- ")):
            if len(items) >= 1000:
                raise InputError(f"runs file {p}: more than 1000 runs")
            items.append((n, {}))
            after = body[1:]
            body = after.lstrip(" ")
            col = ind + 1 + len(after) - len(body) if body else None
            if not body:
                continue
            ind = col
        elif not items or ind <= dash:
            raise InputError(f"{where}: expected a list item '- key: value' at column "
                             f"{dash + 1}; a runs file is a list of runs")
        elif col is None:
            col = ind
        elif ind != col:
            raise InputError(f"{where}: indentation {ind} where the run's keys are at {col} "
                             "(nested values are not supported)")
        m = re.match(_YAML_KEY, body)
        if not m:
            first = body[:1]
            what = (_YAML_UNSUPPORTED.get(first, "") + " are not supported"
                    if first in _YAML_UNSUPPORTED else "expected 'key: value' (plain keys)")
            raise InputError(f"{where}: {what}")
        key, row = m.group(1), items[-1][1]
        if key in row:
            raise InputError(f"{where}: key {key!r} appears twice in one run")
        value = _yaml_scalar(body[m.end():], f"{where}, key {key}")
        row[key] = value  # None kept until the item ends, so a repeated null key is caught
    return [(n, {k: v for k, v in row.items() if v is not None}) for n, row in items]


def toml_file_with(directory: str, exclude: str, needles: tuple[str, ...]) -> str | None:
    """The first ``*.toml`` file of ``directory`` other than ``exclude`` containing one of
    ``needles`` (a ``name = "..."`` line), or None; files over 1 MB or unreadable are skipped."""
    import glob
    target = os.path.realpath(exclude)
    for other in sorted(glob.glob(os.path.join(glob.escape(directory), "*.toml")))[:1000]:
        st = safe_stat(other)
        if os.path.realpath(other) == target or st is None or st.st_size > 1 << 20:
            continue
        try:
            with open(other, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        if any(n in text for n in needles):
            return other
    return None
