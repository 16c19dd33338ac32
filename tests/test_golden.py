"""Exact output of every command in every format, and byte-identical reruns.

Golden files pin formatting, not physics: text must match exactly, and a number printed at full
precision (JSON, CSV) may differ from the file in its last digits only (relative 1e-9). Such digits
move with the numerical library's version (numpy's summation order), not with the model.
"""

import math
import re

import pytest

from golden_cases import CASES, FORMATS, GOLDEN, SKIP, render

PAIRS = [(n, f) for n in CASES for f in FORMATS if (n, f) not in SKIP]


@pytest.mark.parametrize("name,fmt", PAIRS, ids=[f"{n}.{f}" for n, f in PAIRS])
def test_golden_output(name, fmt, monkeypatch):
    monkeypatch.delenv("OPTIMUS_CALC_CATALOG", raising=False)
    expected = (GOLDEN / f"{name}.{fmt}").read_text()
    got = render(name, fmt)
    assert same_up_to_last_digits(got, expected), \
        f"{name}.{fmt} changed: run python tests/golden_cases.py if intended"


_NUMBER = re.compile(r"-?\d+\.\d{9,}(?:[eE][-+]?\d+)?")


def same_up_to_last_digits(got, expected):
    """Equal text, except full-precision numbers (9+ decimals) within relative 1e-9."""
    if got == expected:
        return True
    a, b = _NUMBER.split(got), _NUMBER.split(expected)
    if a != b:
        return False
    return all(math.isclose(float(x), float(y), rel_tol=1e-9, abs_tol=1e-15)
               for x, y in zip(_NUMBER.findall(got), _NUMBER.findall(expected)))


def test_last_digit_tolerance_is_for_digits_only():
    # 0.1234567891 vs ...892: relative 8e-10, same; a word or a 4th-digit change is not
    assert same_up_to_last_digits("x 0.1234567891\n", "x 0.1234567892\n")
    assert not same_up_to_last_digits("x 0.1234567891\n", "y 0.1234567891\n")
    assert not same_up_to_last_digits("x 0.1235567891\n", "x 0.1234567891\n")
    assert not same_up_to_last_digits("x 0.123\n", "x 0.124\n")


@pytest.mark.fresh  # each render computes its command anew (tests/session_memo.py)
@pytest.mark.parametrize("name", ["memory", "plan", "comm", "sweep"])
def test_deterministic(name):
    for fmt in ("json", "csv"):
        assert render(name, fmt) == render(name, fmt)


def test_every_command_has_a_golden_case():
    from optimus_calc.cli.main import COMMANDS
    covered = {CASES[n][0] for n in CASES}
    assert set(COMMANDS) <= covered
