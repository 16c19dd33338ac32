"""`explain --assumptions` with --assume, --profile, --headroom: the value in effect beside the
default (rev13c). Before, the flags were accepted and ignored: the listing showed only defaults,
and a layout flag (--tp 2) passed silently."""

from __future__ import annotations

from pathlib import Path

import pytest

A100 = Path(__file__).resolve().parents[1] / "docs" / "examples" / "a100.toml"


def _rows(run, *args):
    r = run("explain", "--assumptions", *args, "--format", "json")
    assert r.code == 0, r.err
    return {row["name"]: row for row in r.json()["assumptions"]}


def test_assume_and_headroom_show_in_effect(run):
    rows = _rows(run, "--assume", "step_fixed_s=3", "--headroom", "0.1")
    # typed values; defaults from specs/assumptions.py: step_fixed_s 0, gpu_headroom 0.05
    assert (rows["step_fixed_s"]["default"], rows["step_fixed_s"]["value"]) == (0, 3)
    assert rows["gpu_headroom"]["default"] == pytest.approx(0.05)
    assert rows["gpu_headroom"]["value"] == pytest.approx(0.1)
    assert rows["fragmentation"]["value"] == rows["fragmentation"]["default"]


def test_profile_shows_its_values(run):
    # docs/examples/a100.toml [assumptions]: step_fixed_s = 0.143696
    rows = _rows(run, "--profile", A100)
    assert rows["step_fixed_s"]["value"] == pytest.approx(0.143696)


def test_no_flags_lists_defaults_only(run):
    rows = _rows(run)
    assert "value" not in rows["step_fixed_s"]


def test_a_layout_flag_is_refused(run):
    r = run("explain", "--assumptions", "--tp", "2")
    assert r.code == 2 and r.err.count("\n") == 1, r.err
    assert r.err.startswith("error: --tp describes a layout")
