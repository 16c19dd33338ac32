"""docs/ARCHITECTURE.md names only packages, files and tests that exist (issue 36): a renamed or
removed module fails here until the page follows it."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "ARCHITECTURE.md"
# backticked paths: a directory (ending in /) or a file with one of these suffixes, optionally
# followed by ::test_name
PATH = re.compile(r"`([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]*)*(?:/|\.py|\.md|\.json|\.toml))"
                  r"(?:::(\w+))?`")
BASES = (ROOT, ROOT / "src" / "optimus_calc", ROOT / "docs")


def _named():
    return PATH.findall(PAGE.read_text())


def test_the_page_names_paths():
    """The pattern finds the floors, the stages and the generated files (a check of the check)."""
    names = {path for path, _ in _named()}
    assert {"evaluate/engine.py", "tests/test_layering.py", "equations/compiled/",
            "hardware_catalog/parsed.json"} <= names


def test_every_named_path_exists():
    missing = [path for path, _ in _named()
               if not any((base / path).exists() for base in BASES)]
    assert missing == []


def test_every_named_test_exists():
    missing = []
    for path, test in _named():
        if test and f"def {test}(" not in (ROOT / path).read_text():
            missing.append(f"{path}::{test}")
    assert missing == []
