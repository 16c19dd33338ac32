"""Equation sources that name a file of this repository name one that exists (a source a reader
cannot open is no source): its scripts (benchmarks/fit_*.py, calibrate_*.py), its modules and
its docs pages. Files of other projects (FlashAttention's benchmarks/..., Megatron-LM's ...)
are cited with their project and are not checked here."""

from __future__ import annotations

import re
from pathlib import Path

from optimus_calc.equations.registry import load_all

ROOT = Path(__file__).resolve().parents[1]
OWN = re.compile(r"(?<![\w/])(benchmarks/(?:fit|calibrate)_\w+\.py|src/optimus_calc/[\w/]+\.py"
                 r"|docs/[\w/.-]+\.md)")


def test_own_files_cited_by_equations_exist():
    cited = {(e.name, p) for e in load_all().values() for p in OWN.findall(e.source)}
    assert cited, "the pattern finds the repository's own files"  # e.g. docs/reference/...
    missing = sorted((n, p) for n, p in cited if not (ROOT / p).exists())
    assert missing == []
