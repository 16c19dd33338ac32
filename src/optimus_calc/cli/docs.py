"""The command reference (docs/reference/commands.md), generated from the commands' own --help.

`python -m optimus_calc.cli.docs` rewrites the block between the markers of
docs/reference/commands.md; the test suite fails when the page and --help drift apart.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

# the same help option names as the real command line (cli.main's context_settings)
SETTINGS = {"terminal_width": 100, "max_content_width": 100,
            "help_option_names": ["-h", "--help"]}
START, END = "<!-- reference:start -->", "<!-- reference:end -->"
PAGE = Path("docs") / "reference" / "commands.md"  # relative to the repository root


def _help(cmd: click.Command, path: list[str]) -> str:
    from optimus_calc.cli.main import cli
    parent = click.Context(cli, info_name="optimus-calc", **SETTINGS)
    ctx = click.Context(cmd, info_name=" ".join(path), parent=parent, **SETTINGS)
    return cmd.get_help(ctx)


def reference() -> str:
    from optimus_calc.cli.main import COMMANDS, cli
    parts = [START, "", "# Command reference (generated from --help)", ""]
    ctx = click.Context(cli, info_name="optimus-calc", **SETTINGS)
    parts += ["```", cli.get_help(ctx), "```", ""]
    for name in sorted(COMMANDS):
        cmd = cli.get_command(ctx, name)
        subs = [(name, cmd)]
        if isinstance(cmd, click.Group):
            subs = [(f"{name} {s}", cmd.get_command(ctx, s)) for s in cmd.list_commands(ctx)]
        for full, c in subs:
            parts += [f"## `optimus-calc {full}`", "", "```", _help(c, full.split()), "```", ""]
    parts.append(END)
    return "\n".join(parts)


def update(path: Path) -> bool:
    text = path.read_text()
    ref = reference()
    if START in text:
        head, rest = text.split(START, 1)
        tail = rest.split(END, 1)[1]
        new = head + ref + tail
    else:
        new = text.rstrip("\n") + "\n\n" + ref + "\n"
    path.write_text(new)
    return new != text


def main(argv: list[str] | None = None) -> int:  # pragma: no cover - a developer's tool
    """Rewrite the reference of docs/reference/commands.md (or of the page named, which must
    hold the markers: the README no longer carries the reference)."""
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0]) if args else Path(__file__).resolve().parents[3] / PAGE
    if START not in path.read_text():
        print(f"error: {path} has no {START} marker; the reference lives in {PAGE}",
              file=sys.stderr)
        return 2
    if update(path):
        print(f"updated: {path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
