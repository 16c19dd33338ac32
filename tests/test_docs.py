"""The README documents every command: its --help is embedded verbatim and must not drift."""

from pathlib import Path

import pytest

from optimus_calc.cli.docs import END, START, reference
from optimus_calc.cli.main import COMMANDS

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_reference_matches_help():
    text = README.read_text()
    assert START in text and END in text
    block = START + text.split(START, 1)[1].split(END, 1)[0] + END
    assert block == reference(), (
        "README command reference is stale: run python -m optimus_calc.cli.docs README.md")


def test_every_command_has_an_example_in_readme():
    text = README.read_text().split(START, 1)[0]
    for name in COMMANDS:
        assert f"optimus-calc {name}" in text, f"no example of `{name}` above the reference"


def test_readme_set_up_commands():
    text = README.read_text()
    assert "make run" in text and "make test" in text


def test_changelog_exists():
    assert (README.parent / "CHANGELOG.md").read_text().startswith("# Changelog")


def _examples():
    from optimus_calc.cli.examples import find
    return find(README.read_text())


@pytest.mark.parametrize("ex", _examples(), ids=lambda ex: f"L{ex.start + 2}")
def test_readme_example_is_what_the_command_prints(ex, monkeypatch):
    """Every `<!-- example -->` block is the real output of its command, run from the repository
    root (regenerate with: python -m optimus_calc.cli.examples README.md)."""
    from optimus_calc.cli.examples import render, run
    monkeypatch.chdir(README.parent)
    assert list(ex.body) == render(ex, run(ex.args)), (
        f"README example at line {ex.start + 2} is stale: "
        "run python -m optimus_calc.cli.examples README.md")


def test_readme_has_examples_of_most_commands():
    """Generated examples cover the main commands (28 `$ optimus-calc` blocks were checked by eye
    before the generator; now they are generated)."""
    commands = {ex.args[0] for ex in _examples()}
    assert {"plan", "memory", "step", "compare", "breakeven", "sweep", "comm", "fit", "explain",
            "validate", "catalog", "nics", "optimizer-step"} <= commands
