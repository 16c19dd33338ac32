"""The golden-output cases: one invocation per command, rendered in every format.

Regenerate after an intended change with: python tests/golden_cases.py
"""

import tempfile
from pathlib import Path

GOLDEN = Path(__file__).parent / "golden"

CASES = {
    "catalog_list": ["catalog", "list", "--kind", "nic"],
    "catalog_show": ["catalog", "show", "a100-80gb"],
    "memory": ["memory", "70e9", "--nodes", "2", "--tp", "2", "--pp", "4", "--zero", "3",
               "--offload", "smartnic", "--model-states-only"],
    "fit": ["fit", "1e9", "--solve", "layers", "--node", "dgx-2", "--nodes", "4", "--zero", "1",
            "--model-states-only", "--precision", "fp16"],
    "comm": ["comm", "all-reduce", "--sizes", "1MiB..64MiB", "--nodes", "2"],
    "step": ["step", "llama-2-7b", "--tp", "8", "--seq-len", "4096", "--global-batch", "64"],
    "optimizer_step": ["optimizer-step", "--params", "302M", "--device", "bluefield-2",
                       "--impl", "pytorch"],
    "compare": ["compare", "llama-2-13b", "--seq-len", "4096", "--global-batch", "16"],
    "validate": ["validate"],
    # the profile goes to the temporary directory (it carries the date); outputs show basenames
    "calibrate": ["calibrate", str(Path(__file__).parent / "data" / "calibrate_runs.csv"), "-o",
                  str(Path(tempfile.gettempdir()) / "optimus-calc-golden-profile.toml")],
    "plan": ["plan", "llama-2-13b", "--seq-len", "4096", "--global-batch", "64"],
    "nics": ["nics", "70e9", "--nodes", "2", "--tp", "2", "--pp", "4", "--zero", "3",
             "--smartnic", "bluefield-3", "--model-states-only"],
    "sweep": ["sweep", "--models", "llama-2-7b", "--nodes", "1,2", "--seq-len", "2048"],
    "breakeven": ["breakeven", "llama70b", "--nodes", "2", "--tp", "2", "--pp", "4", "--zero",
                  "3", "--recompute", "full", "--seq-len", "2048", "--global-batch", "16",
                  "--device", "bluefield-3"],
    "explain": ["explain", "memory.optimizer_bytes", "70e9", "--nodes", "2", "--tp", "2",
                "--pp", "4", "--zero", "3", "--model-states-only"],
}
FORMATS = ["table", "json", "csv"]
# every pair pinned: explain's table prints the generated text (equations/compiled/shown.py), which
# the freshness test ties to the installed sympy, not sympy's printer at run time
SKIP: set[tuple[str, str]] = set()


def render(name: str, fmt: str) -> str:
    import contextlib
    import io

    from optimus_calc.cli.main import main
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            main([*CASES[name], "--format", fmt])
        except SystemExit as exc:
            assert exc.code == 0, (name, fmt, exc.code)
    return out.getvalue()


if __name__ == "__main__":
    import os
    os.environ["COLUMNS"] = "120"  # as tests/conftest.py pins it
    GOLDEN.mkdir(exist_ok=True)
    for name in CASES:
        for fmt in FORMATS:
            if (name, fmt) in SKIP:
                continue
            (GOLDEN / f"{name}.{fmt}").write_text(render(name, fmt))
    print(f"wrote {GOLDEN}")
