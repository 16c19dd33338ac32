"""Exact output of every command in every format, and byte-identical reruns."""

import pytest

from golden_cases import CASES, FORMATS, GOLDEN, SKIP, render

PAIRS = [(n, f) for n in CASES for f in FORMATS if (n, f) not in SKIP]


@pytest.mark.parametrize("name,fmt", PAIRS, ids=[f"{n}.{f}" for n, f in PAIRS])
def test_golden_output(name, fmt, monkeypatch):
    monkeypatch.delenv("OPTIMUS_CALC_CATALOG", raising=False)
    expected = (GOLDEN / f"{name}.{fmt}").read_text()
    got = render(name, fmt)
    assert got == expected, f"{name}.{fmt} changed: run python tests/golden_cases.py if intended"


@pytest.mark.fresh  # each render computes its command anew (tests/session_memo.py)
@pytest.mark.parametrize("name", ["memory", "plan", "comm", "sweep"])
def test_deterministic(name):
    for fmt in ("json", "csv"):
        assert render(name, fmt) == render(name, fmt)


def test_every_command_has_a_golden_case():
    from optimus_calc.cli.main import COMMANDS
    covered = {CASES[n][0] for n in CASES}
    assert set(COMMANDS) <= covered
