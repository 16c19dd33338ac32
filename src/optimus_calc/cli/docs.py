"""The README's command reference, generated from the commands' own --help.

`python -m optimus_calc.cli.docs README.md` rewrites the block between the markers; the test
suite fails when the README and --help drift apart.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

# the same help option names as the real command line (cli.main's context_settings)
SETTINGS = {"terminal_width": 100, "max_content_width": 100,
            "help_option_names": ["-h", "--help"]}
START, END = "<!-- reference:start -->", "<!-- reference:end -->"


def _help(cmd: click.Command, path: list[str]) -> str:
    from optimus_calc.cli.main import cli
    parent = click.Context(cli, info_name="optimus-calc", **SETTINGS)
    ctx = click.Context(cmd, info_name=" ".join(path), parent=parent, **SETTINGS)
    return cmd.get_help(ctx)


def reference() -> str:
    from optimus_calc.cli.main import COMMANDS, cli
    parts = [START, "", "## Command reference (generated from --help)", ""]
    ctx = click.Context(cli, info_name="optimus-calc", **SETTINGS)
    parts += ["```", cli.get_help(ctx), "```", ""]
    for name in sorted(COMMANDS):
        cmd = cli.get_command(ctx, name)
        subs = [(name, cmd)]
        if isinstance(cmd, click.Group):
            subs = [(f"{name} {s}", cmd.get_command(ctx, s)) for s in cmd.list_commands(ctx)]
        for full, c in subs:
            parts += [f"### `optimus-calc {full}`", "", "```", _help(c, full.split()), "```", ""]
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


if __name__ == "__main__":  # pragma: no cover
    update(Path(sys.argv[1] if len(sys.argv) > 1 else "README.md"))
