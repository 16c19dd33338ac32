"""A user catalog file with one entry copied from a built-in one and edited: what the catalog
hardening tests (test_catalog_entry_fields.py, test_output_atomic.py, test_hardening.py) feed
the commands."""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path

from optimus_calc import catalog as catalog_mod

BUILTIN = catalog_mod.builtin_dir()


def _builtin(kind: str, name: str) -> dict:
    for path in sorted(BUILTIN.rglob("*.toml")):
        for entry in tomllib.loads(path.read_text()).get(kind, []):
            if entry["name"] == name:
                return dict(entry)
    raise KeyError(name)


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and math.isinf(v):
        return "inf"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(v)


def _entry_file(tmp_path: Path, kind: str, base: str, drop=(), **changes) -> Path:
    """A user catalog with one entry copied from a built-in one, renamed, then edited."""
    e = _builtin(kind, base)
    e.pop("aliases", None)
    e["name"] = "my-" + kind
    for k in drop:
        e.pop(k)
    e.update(changes)
    d = tmp_path / "cat"
    d.mkdir(exist_ok=True)
    f = d / f"{kind}.toml"
    f.write_text(f"[[{kind}]]\n" + "".join(f"{k} = {_toml_value(v)}\n" for k, v in e.items()))
    return f
