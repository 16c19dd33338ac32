"""Issue 23, input hardening: the guarded reader bounds what tomllib builds (structure, not
text), and an unreadable catalog directory is a one-line error (split by subject from
test_hardening_3.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from optimus_calc import catalog as catalog_mod
from optimus_calc.errors import InputError
from optimus_calc.loaders import MAX_TOML_DEPTH, MAX_TOML_TOKENS, check_toml_shape

from cli_process import BUILTIN, one_line
from cli_process import cli_cpu as cli


# --- 1. the guarded reader bounds what tomllib builds ----------------------------------------

@pytest.mark.parametrize("name, text", [
    # 60 kB of one dotted key: before, gigabytes and minutes (MemoryError at a 3 GiB cap)
    ("dotted", ".".join(["a"] * 30_000) + " = 1\n"),
    ("header", "[" + ".".join(["a"] * 30_000) + "]\nx = 1\n"),
    ("inline", "x = " + "{a = " * 5_000 + "1" + "}" * 5_000 + "\n"),
    ("mixed", "[" + ".".join(["t"] * 20) + "]\n" + ".".join(["k"] * 10) + " = [[[1]]]\n"),
    ("tokens", "".join(f"x{i} = 1\n" for i in range(40_000))),
])
def test_toml_shape_refused_before_tomllib(tmp_path, name, text):
    (tmp_path / f"{name}.toml").write_text(text)
    r, cpu = cli("--catalog-dir", tmp_path, "catalog", "list", timeout=30)
    err = one_line(r)
    assert f"{name}.toml" in err
    assert ("nested too deeply" in err) if name != "tokens" else (f"{MAX_TOML_TOKENS:,}" in err)
    assert cpu < 2.0, f"{cpu:.2f} s of CPU"  # start-up included; memory capped at 1 GiB


def test_toml_shape_counts_structure_not_text():
    """Dots and brackets inside strings and comments are text, not nesting: a catalog file
    with a long dotted description, URL or comment is accepted; the same depth as keys is not."""
    deep = ".".join(["a"] * 200)
    check_toml_shape(f'[[gpu]]\nsource = "{deep} [[[[ {{{{"\nnotes = \'{deep}\'\n# {deep}\n'
                     f'title = """\n{deep}\n\\""" [ ."""\nx = \'\'\'{deep}\'\'\'\n', "ok.toml")
    check_toml_shape("[a.b.c]\n" + ".".join(["k"] * (MAX_TOML_DEPTH - 5)) + " = 1\n", "ok.toml")
    with pytest.raises(InputError, match=r"bad\.toml: line 2: nested too deeply"):
        check_toml_shape("[a.b.c]\n" + ".".join(["k"] * MAX_TOML_DEPTH) + " = 1\n", "bad.toml")
    with pytest.raises(InputError, match="nested too deeply"):
        check_toml_shape("x = " + "[" * (MAX_TOML_DEPTH + 1) + "]" * (MAX_TOML_DEPTH + 1),
                         "bad.toml")


def test_builtin_catalog_is_far_inside_the_toml_bounds():
    for path in sorted(BUILTIN.rglob("*.toml")):
        check_toml_shape(path.read_text(), path)  # raises if a built-in file came near


def _refuse_scandir(monkeypatch, bad: Path):
    real = os.scandir

    def scandir(path="."):
        if os.path.realpath(path) == os.path.realpath(bad):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)
    monkeypatch.setattr(os, "scandir", scandir)


@pytest.mark.parametrize("where", ["flag", "env", "subdirectory"])
def test_unreadable_catalog_directory_is_an_error(run, tmp_path, monkeypatch, where):
    """Before: skipped silently, so the user saw "unknown model" with no hint. (Root reads any
    directory, so the refusal is simulated at os.scandir; the next test uses chmod.)"""
    d = tmp_path / "mine"
    (d / "sub").mkdir(parents=True)
    bad = d / "sub" if where == "subdirectory" else d
    _refuse_scandir(monkeypatch, bad)
    catalog_mod.load.cache_clear()
    if where == "env":
        monkeypatch.setenv(catalog_mod.ENV_VAR, str(d))
        r = run("catalog", "list")
    else:
        r = run("--catalog-dir", d, "catalog", "list")
    catalog_mod.load.cache_clear()
    err = one_line(r)
    assert str(bad) in err and "cannot read" in err and "Permission denied" in err
    assert r.out == ""


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a directory of mode 000")
def test_unreadable_catalog_directory_chmod(tmp_path):
    d = tmp_path / "locked"
    d.mkdir()
    d.chmod(0)
    try:
        r, _ = cli("--catalog-dir", d, "catalog", "list")
    finally:
        d.chmod(0o755)
    assert "locked" in one_line(r)
