"""`optimus-calc` alone, the first thing a newcomer types, and the version (issue 36)."""

import importlib.metadata
import tomllib
from pathlib import Path

import pytest

from optimus_calc import __version__
from optimus_calc.cli.main import COMMANDS

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("args", [[], ["--debug"], ["--catalog-dir", "hardware_catalog"]])
def test_no_command_prints_the_usage_and_the_commands(run, args):
    r = run(*args)
    assert r.code == 2 and r.out == ""
    lines = r.err.rstrip("\n").split("\n")
    assert lines[0] == "Usage: optimus-calc [OPTIONS] COMMAND [ARGS]..."
    assert lines[-1] == "error: no command given; name one of the commands above"
    assert sum(line.startswith("error:") for line in lines) == 1
    listed = {line.split()[0] for line in lines if line.startswith("  ") and line.split()}
    assert set(COMMANDS) <= listed
    # readable: wrapped into lines, not one 1,485-character error line
    assert max(len(line) for line in lines) <= 120


def test_version_is_0_3_0_from_one_place(run):
    r = run("--version")
    assert r.code == 0 and r.out.strip() == "optimus-calc, version 0.3.0"
    assert __version__ == "0.3.0"
    # pyproject.toml reads it from the package (no second literal to keep in step)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["hatch"]["version"]["path"] == "src/optimus_calc/__init__.py"
    assert importlib.metadata.version("optimus-calc") == __version__


def test_changelog_has_a_dated_section_for_the_version():
    """The release is cut: a dated section for the version, one line per change (no prose
    paragraphs: every entry is one line starting with "- ")."""
    import re
    text = (ROOT / "CHANGELOG.md").read_text()
    m = re.search(rf"^## {re.escape(__version__)} \((\d{{4}}-\d{{2}}-\d{{2}})\)$", text, re.M)
    assert m, f"no dated section for {__version__}"
    section = text[m.end():].split("\n## ", 1)[0]
    entries = [line for line in section.splitlines() if line and not line.startswith("#")]
    assert entries and all(line.startswith("- ") for line in entries), "one line per change"
    assert "(unreleased)" not in text and "## Unreleased" not in text.split(m.group(0))[1]
