"""Catalog loading and lookup: the only module that reads catalog files.

Built-in entries ship inside the package (``optimus_calc/hardware_catalog``, found through
``importlib.resources``); in a source checkout they are read from the repository's top-level
``hardware_catalog/``. Users add directories with ``--catalog-dir`` (repeatable) or the
``OPTIMUS_CALC_CATALOG`` environment variable (``os.pathsep``-separated). Loading is lazy and
cached; every error names the file (and line, or entry and field).
"""

from __future__ import annotations

import os
import types
import typing
from dataclasses import field
from enum import Enum
from functools import lru_cache
from pathlib import Path
from typing import Iterable

from pydantic import ValidationError

from optimus_calc.errors import CatalogError, InputError, UnknownNameError
from optimus_calc.loaders import load_toml, os_message, read_snapshot, user_path
from optimus_calc.specs.base import CatalogEntry, Frozen
from optimus_calc.specs.hardware import CPU, GPU, NIC, Link, Node, NVMe, SmartNIC
from optimus_calc.specs.model import Model
from optimus_calc.record import record

ENV_VAR = "OPTIMUS_CALC_CATALOG"

KINDS: dict[str, type[CatalogEntry]] = {
    "gpu": GPU, "cpu": CPU, "smartnic": SmartNIC, "nic": NIC, "link": Link,
    "nvme": NVMe, "node": Node, "model": Model,
}

# Cross references checked at load time: (kind, field, referenced kind).
_REFS = [
    ("gpu", "scale_up_link", "link"), ("gpu", "host_link", "link"),
    ("smartnic", "host_link", "link"), ("nic", "host_link", "link"),
    ("node", "gpu", "gpu"), ("node", "cpu", "cpu"), ("node", "nic", "nic"),
    ("node", "smartnic", "smartnic"), ("node", "nvme", "nvme"),
    ("node", "intra_link", "link"), ("node", "gpu_host_link", "link"),
]


def builtin_dir() -> Path:
    """Directory of the built-in catalog: inside the installed package, else the repo's (the
    package's own directory, as importlib.resources.files finds it for a package on disk,
    without importing importlib.resources on every command)."""
    packaged = Path(__file__).resolve().parent / "hardware_catalog"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "hardware_catalog"


def normalize(name: str) -> str:
    return str(name).strip().lower().replace("_", "-").replace(" ", "-")


@record(frozen=False)
class Catalog:
    entries: dict[str, dict[str, CatalogEntry]] = field(default_factory=dict)
    aliases: dict[str, tuple[str, str]] = field(default_factory=dict)  # alias -> (kind, name)
    files: dict[str, Path] = field(default_factory=dict)  # name -> file it came from
    sources: list[Path] = field(default_factory=list)  # every file read, entries or not

    def all(self, kind: str | None = None) -> list[CatalogEntry]:
        kinds = [kind] if kind else list(KINDS)
        out: list[CatalogEntry] = []
        for k in kinds:
            out.extend(sorted(self.entries.get(k, {}).values(), key=lambda e: e.name))
        return out

    def find(self, name: str, kind: str | None = None) -> CatalogEntry | None:
        key = normalize(name)
        kinds = [kind] if kind else list(KINDS)
        for k in kinds:
            if key in self.entries.get(k, {}):
                return self.entries[k][key]
        if key in self.aliases:
            k, real = self.aliases[key]
            if kind is None or k == kind:
                return self.entries[k][real]
        return None

    def get(self, name: str, kind: str | None = None, what: str | None = None) -> CatalogEntry:
        entry = self.find(name, kind)
        if entry is not None:
            return entry
        label = what or (kind or "catalog entry")
        pool = [e.name for e in self.all(kind)] + [
            a for a, (k, _) in self.aliases.items() if kind is None or k == kind]
        import difflib  # only for the suggestion of an unknown name
        close = difflib.get_close_matches(normalize(name), pool, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else (
            f"; see 'optimus-calc catalog list --kind {kind}'" if kind else "")
        raise UnknownNameError(f"unknown {label} {str(name)[:80]!r}{hint}")

    def resolves_alias(self, name: str) -> str | None:
        """If ``name`` is an alias, the canonical name it stands for."""
        key = normalize(name)
        if key in self.aliases:
            return self.aliases[key][1]
        return None


def _format_validation(err: ValidationError) -> str:
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first["loc"]) or "(entry)"
    msg = first["msg"]
    rest = [".".join(str(p) for p in e["loc"]) or "(entry)" for e in err.errors()[1:]]
    more = (f" (+{len(rest)} more: {', '.join(repr(r) for r in rest[:5])}"
            f"{', ...' if len(rest) > 5 else ''})" if rest else "")
    if not first["loc"] and first["type"] == "value_error":
        # Cross-field rules (specs/hardware.py) name their field in the message.
        return str(msg).removeprefix("Value error, ") + more
    if first["type"] == "extra_forbidden":
        msg = "unknown key"
    elif first["type"] == "missing":
        msg = "missing required field"
    return f"field {loc!r}: {msg}{more}"


def _read_file(path: Path, snapshot: dict | None = None) -> dict:
    """Through the one guarded reader (loaders.py): regular files of bounded size only;
    ``snapshot``: the built-in file's earlier parse, used while its text is unchanged."""
    try:
        return load_toml(path, "catalog file", snapshot)
    except CatalogError:
        raise
    except InputError as exc:
        raise CatalogError(str(exc)) from None


def _toml_files(directory: Path) -> list[Path]:
    """Every ``*.toml`` under ``directory``, sorted. A directory that cannot be listed (no
    permission, an I/O error) is an error naming it, never skipped: a silently missing file
    only shows up later as "unknown model". Symlinked directories are followed once each."""
    def fail(exc: OSError) -> None:
        where = exc.filename if exc.filename is not None else directory
        raise CatalogError(f"catalog directory {str(where)[:200]!r}: cannot read: "
                           f"{os_message(exc)}") from None

    try:
        if not directory.is_dir():
            raise CatalogError(f"catalog directory {str(directory)[:200]!r} " + (
                "is not a directory" if os.path.lexists(directory) else "does not exist"))
        found, seen = [], set()
        for root, dirs, files in os.walk(directory, onerror=fail, followlinks=True):
            st = os.stat(root)
            if (st.st_dev, st.st_ino) in seen:  # a symlink loop or a second link to a directory
                dirs[:] = []
                continue
            seen.add((st.st_dev, st.st_ino))
            found += [Path(root) / f for f in files if f.endswith(".toml")]
        return sorted(found)
    except OSError as exc:
        raise CatalogError(f"catalog directory {str(directory)[:200]!r}: "
                           f"{os_message(exc)}") from None


# The built-in catalog parsed (catalog_snapshot.py writes it; tests/test_catalog.py checks it
# is fresh): a file whose text still equals the snapshot's is not parsed again.
SNAPSHOT = "parsed.json"


def _converter(annotation):
    """How a field of a validated entry, as JSON gives it back, becomes the field's type: None
    when it already is (numbers, strings, literals), else a function of (value, raw)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        inner = _converter(args[0]) if len(args) == 1 else None
        return None if inner is None else (
            lambda v, raw: None if v is None else inner(v, raw))
    if isinstance(annotation, type) and issubclass(annotation, Frozen):
        return lambda v, raw: trusted_entry(annotation, v, raw if isinstance(raw, dict) else {})
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return lambda v, raw: annotation(v)
    if origin is tuple:
        args = typing.get_args(annotation)
        if len(args) == 2 and args[1] is Ellipsis:
            each = _converter(args[0])
            return (lambda v, raw: tuple(v)) if each is None else (
                lambda v, raw: tuple(each(x, None) for x in v))
        convs = [_converter(a) or (lambda x, raw: x) for a in args]
        return lambda v, raw: tuple(c(x, None) for c, x in zip(convs, v))
    if origin in (dict, list):
        each = _converter(typing.get_args(annotation)[-1])
        if each is None:
            return (lambda v, raw: dict(v)) if origin is dict else (lambda v, raw: list(v))
        if origin is dict:
            return lambda v, raw: {k: each(x, None) for k, x in v.items()}
        return lambda v, raw: [each(x, None) for x in v]
    return None


@lru_cache(maxsize=None)
def _converters(cls: type[Frozen]) -> tuple[tuple[str, object], ...]:
    return tuple((name, _converter(f.annotation)) for name, f in cls.model_fields.items())


@lru_cache(maxsize=None)
def _field_names(cls: type[Frozen]) -> frozenset[str]:
    """The class's field names, looked up once (``cls.model_fields`` is a property)."""
    return frozenset(cls.model_fields)


def trusted_entry(cls: type[Frozen], data: dict, raw: dict) -> Frozen:
    """An entry of the built-in catalog from its validated snapshot (catalog_snapshot.py writes
    every entry as validated), built without validating it again (``model_construct``): nested
    models, enums and tuples rebuilt, and the fields set are the keys the TOML file gives.
    tests/test_cold_start_budget.py checks that every built-in entry built this way equals the
    validated one, field by field and type."""
    values = {}
    for name, conv in _converters(cls):
        if name in data:
            v = data[name]
            values[name] = v if conv is None or v is None else conv(v, raw.get(name))
    return cls.model_construct(_fields_set=set(raw).intersection(_field_names(cls)), **values)


def _load_dir(directory: Path, cat: Catalog, builtin: bool) -> None:
    snap = read_snapshot(directory / SNAPSHOT) if builtin else {}
    for path in _toml_files(directory):
        snapped = snap.get(path.relative_to(directory).as_posix())
        data = _read_file(path, snapped)
        # the file's text is the snapshot's: its entries were validated when it was written
        valid = snapped.get("valid") if snapped is not None and data is snapped["data"] else None
        cat.sources.append(path)
        for kind, items in data.items():
            if kind not in KINDS:
                raise CatalogError(
                    f"{path}: unknown table [[{kind}]]; expected one of {', '.join(KINDS)}")
            if not isinstance(items, list):
                raise CatalogError(f"{path}: [{kind}] must be an array of tables [[{kind}]]")
            for i, raw in enumerate(items):
                label = raw.get("name", f"#{i + 1}") if isinstance(raw, dict) else f"#{i + 1}"
                try:
                    entry = (KINDS[kind].model_validate(raw) if valid is None else
                             trusted_entry(KINDS[kind], valid[kind][i], raw))
                except ValidationError as exc:
                    raise CatalogError(
                        f"{path}: [[{kind}]] {label!s}: {_format_validation(exc)}") from None
                _register(cat, kind, entry, path, builtin)


def check_entries(text: str, label: str) -> None:
    """Validate catalog TOML ``text`` (a file about to be written as ``label``) as loading it
    would, each table against its kind's fields and bounds: a CatalogError with the loader's
    message otherwise (names and references across files are checked when a catalog loads)."""
    import tomllib
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"{label}: not valid TOML: {exc}") from None
    for kind, items in data.items():
        for i, raw in enumerate(items if kind in KINDS and isinstance(items, list) else ()):
            try:
                KINDS[kind].model_validate(raw)
            except ValidationError as exc:
                raise CatalogError(f"{label}: [[{kind}]] {raw.get('name', i + 1)!s}: "
                                   f"{_format_validation(exc)}") from None


def _register(cat: Catalog, kind: str, entry: CatalogEntry, path: Path, builtin: bool) -> None:
    names = (entry.name, *entry.aliases)
    for n in names:
        clash = None
        for k, table in cat.entries.items():
            if n in table:
                clash = (k, n)
        if n in cat.aliases:
            clash = cat.aliases[n]
        if clash:
            where = cat.files.get(clash[1], "?")
            origin = "a built-in entry" if not builtin and str(where).startswith(
                str(builtin_dir())) else f"{clash[0]} {clash[1]!r} in {where}"
            raise CatalogError(f"{path}: [[{kind}]] name {n!r} clashes with {origin}")
    cat.entries.setdefault(kind, {})[entry.name] = entry
    for a in entry.aliases:
        cat.aliases[a] = (kind, entry.name)
    cat.files[entry.name] = path


def _check_refs(cat: Catalog) -> None:
    for kind, attr, target in _REFS:
        for entry in cat.entries.get(kind, {}).values():
            ref = getattr(entry, attr)
            if ref is not None and ref not in cat.entries.get(target, {}):
                raise CatalogError(
                    f"{cat.files[entry.name]}: [[{kind}]] {entry.name}: field {attr!r}: "
                    f"no {target} named {ref!r}")


def user_dirs(extra: Iterable[str] = ()) -> tuple[str, ...]:
    env = [p for p in os.environ.get(ENV_VAR, "").split(os.pathsep) if p]
    return tuple(env) + tuple(extra)


def unique_dirs(dirs: Iterable[str]) -> list[Path]:
    """Each directory once, in first-seen order: ``d``, ``d/``, ``./d``, a symlink to it, the
    same directory from the environment variable and a flag, or the built-in directory itself
    are one directory, not a name clash with itself."""
    seen = {os.path.realpath(builtin_dir())}
    out: list[Path] = []
    for d in dirs:
        path = user_path(d, "catalog directory")
        try:
            key = os.path.realpath(path)
        except (OSError, ValueError):
            key = str(path)
        if key not in seen:
            seen.add(key)
            out.append(path)
    return out


@lru_cache(maxsize=8)
def load(extra_dirs: tuple[str, ...] = ()) -> Catalog:
    """Load the built-in catalog plus ``extra_dirs`` (already including the env variable)."""
    cat = Catalog()
    _load_dir(builtin_dir(), cat, builtin=True)
    for d in unique_dirs(extra_dirs):
        _load_dir(d, cat, builtin=False)
    _check_refs(cat)
    return cat
