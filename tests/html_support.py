"""The HTML pages the tests open (issue 34): each command of the README's examples, written
once per test module with ``-o`` as a user writes it, with its ``--format json`` beside it."""

import json
from pathlib import Path

from optimus_calc.cli.main import main

# the "Done when" command of issue 34 and one example of each other command with a page
PAGES = {
    "plan": ["plan", "llama70b", "--nodes", "2"],
    "step": ["step", "llama70b", "--nodes", "2", "--tp", "8", "--pp", "2", "--zero", "1",
             "--tokens", "2e12", "--gpu-hour-price", "2", "--assume", "hbm_efficiency=0.85"],
    "memory": ["memory", "llama70b", "--nodes", "2", "--tp", "4", "--pp", "2",
               "--zero", "1", "--offload", "cpu"],
    "compare": ["compare", "llama70b", "--nodes", "2"],
    "breakeven": ["breakeven", "llama70b", "--nodes", "2"],
}


def run_main(*args) -> int:
    try:
        main([str(a) for a in args])
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    return 0


def write_pages(directory: Path, names=tuple(PAGES), with_json: bool = True) -> dict:
    """{name: (html path, JSON data or None)}."""
    out = {}
    for name in names:
        page = directory / f"{name}.html"
        assert run_main(*PAGES[name], "--format", "html", "-o", page) == 0, name
        data = None
        if with_json:
            js = directory / f"{name}.json"
            assert run_main(*PAGES[name], "--format", "json", "-o", js) == 0, name
            data = json.loads(js.read_text())
        out[name] = (page, data)
    return out
