"""Resolve what the user typed into specs: a model name, a config.json path, or a count."""

from __future__ import annotations

import stat
from pathlib import Path

from optimus_calc.catalog import Catalog
from optimus_calc.errors import InputError
from optimus_calc.loaders import safe_stat
from optimus_calc.specs.model import BareModel, Model
from optimus_calc.units import looks_like_count, parse_count


def resolve_model(text: str, cat: Catalog) -> Model | BareModel:
    """A catalog name or alias, a path to a Hugging Face config.json, or a parameter count."""
    raw = str(text).strip()
    if not raw:
        raise InputError("MODEL is empty; give a catalog name, a config.json path or a count")
    entry = cat.find(raw, "model")
    if entry is not None:
        return entry  # type: ignore[return-value]
    st = safe_stat(raw)  # never raises: a name too long for the file system is "no file"
    is_dir = st is not None and stat.S_ISDIR(st.st_mode)
    # Any existing non-directory (a file, or a FIFO or device the loader will refuse by name).
    if raw.endswith(".json") or "/" in raw or (st is not None and not is_dir):
        from optimus_calc.hf_import import load_hf_config
        if is_dir:
            raw = str(Path(raw) / "config.json")
            st = safe_stat(raw)
        if st is None:
            raise InputError(f"MODEL {raw[:200]!r}: no such file")
        return load_hf_config(raw)
    if looks_like_count(raw):
        return BareModel(name=raw, total_params=parse_count(raw, "MODEL"))
    cat.get(raw, "model", what="model")  # raises with did-you-mean
    raise AssertionError("unreachable")
