"""The README documents every command: its --help is embedded verbatim and must not drift."""

from pathlib import Path

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
