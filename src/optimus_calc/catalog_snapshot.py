"""Write the built-in catalog's parse snapshot: ``python -m optimus_calc.catalog_snapshot``.

Each built-in TOML file's text, what ``tomllib`` makes of it and each of its entries as validated
(``model_dump(mode="json")``), in one JSON file beside them (catalog.SNAPSHOT). At start-up the catalog reads the snapshot instead of parsing a file whose
text is unchanged (a cold `plan` parsed 12 TOML files in some 40 ms; the JSON takes about 2).
An edited file no longer matches its text and is parsed as before, so a stale snapshot costs
time, never a wrong number; tests/test_catalog.py fails when it is stale. The validated entries
are built without validating them again (catalog.trusted_entry: no schema is built for a
catalog class on a command that reads only the built-in catalog).
"""

from __future__ import annotations

import json
import sys
import tomllib

from optimus_calc.catalog import KINDS, SNAPSHOT, _toml_files, builtin_dir


def snapshot() -> str:
    root = builtin_dir()
    files = {}
    for path in _toml_files(root):
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
        valid = {kind: [KINDS[kind].model_validate(raw).model_dump(mode="json") for raw in items]
                 for kind, items in data.items()}
        files[path.relative_to(root).as_posix()] = {"text": text, "data": data, "valid": valid}
    return json.dumps({"format": 2, "files": files}, indent=None, sort_keys=True,
                      allow_nan=False) + "\n"


def main() -> int:
    out = builtin_dir() / SNAPSHOT
    out.write_text(snapshot(), encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
