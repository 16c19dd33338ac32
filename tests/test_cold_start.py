"""Cold start (issue 15, Speed): what a fresh process imports, and the single-threaded BLAS.

Each check runs in a fresh interpreter (a subprocess), because in-process the test session has
already imported everything. Heavy libraries load only where they are used: sympy for `fit`'s
closed forms (`breakeven`'s are generated: tests/test_breakeven_forms.py; `explain` prints the
generated text and evaluates the compiled functions); matplotlib only with `--plot`; rich only
to draw a text table with text other than printable ASCII;
numpy and pydantic not at all for `--version` and `--help`.
"""

import functools
import json
import os
import subprocess
import tempfile
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
HEAVY = ("numpy", "pydantic", "rich", "sympy", "matplotlib", "click")

# One process runs a sequence of commands and reports what is loaded after each: modules only
# accumulate, so a command that loads a library is caught at that command (the ones before it
# did not), and the first command of a sequence sees a fresh interpreter.
PROBE = """
import json, os, sys, io
from optimus_calc.cli.main import main
import gc
reports = []
for args in json.loads(sys.argv[1]):
    code = 0
    if args and args[0] == "@import":  # the positive control: a library imported for sure
        __import__(args[1])
    elif args is not None:
        out, sys.stdout = sys.stdout, io.StringIO()
        try:
            main(args)
        except SystemExit as exc:
            code = exc.code
        sys.stdout = out
    threads = [l.split()[1] for l in open("/proc/self/status") if l.startswith("Threads")] \
        if os.path.exists("/proc/self/status") else [None]
    reports.append({"code": code,
                    "loaded": [m for m in %r if m in sys.modules],
                    "ours": sorted(m for m in sys.modules if m.startswith("optimus_calc")),
                    "threads": threads[0],
                    "collections": sum(s["collections"] for s in gc.get_stats()),
                    "also_loaded": [m for m in ("numpy.ma", "difflib", "tomllib", "shutil",
                                                 "unicodedata")
                                    if m in sys.modules],
                    "env": {k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS",
                            "OMP_NUM_THREADS", "MKL_NUM_THREADS", "PYDANTIC_DISABLE_PLUGINS")}})
print(json.dumps(reports))
""" % (HEAVY,)


# One fresh interpreter per argument list: the tests that check different things about the
# same command (`plan llama70b --nodes 2 [--format json]`) share its probe (make test keeps
# this module on one worker).
pytestmark = pytest.mark.xdist_group("cold_start")


def probe(args, **env_extra):
    """What a fresh process has loaded after running ``args`` (None: nothing): the first
    report of a sequence that starts with ``args`` is that (the commands after it run later,
    in the same process), so such a sequence's process answers it."""
    seq = next((s for s in SEQUENCES if s[0] == args), [args]) if not env_extra else [args]
    return probe_sequence(seq, **env_extra)[0]


def probe_sequence(sequence, **env_extra):
    """The reports after each command of ``sequence``, run one after another in one process."""
    return _probe(json.dumps(sequence), tuple(sorted(env_extra.items())))


@functools.lru_cache(maxsize=None)
def _probe(args: str, env_extra: tuple):
    env = {"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin", **dict(env_extra)}
    p = subprocess.run([sys.executable, "-c", PROBE, args], capture_output=True,
                       text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    return tuple(json.loads(p.stdout.strip().splitlines()[-1]))


def test_importing_the_entry_point_loads_click_only():
    r = probe(None)
    assert r["loaded"] == ["click"]


@pytest.mark.parametrize("args", [["--version"], ["--help"]])
def test_version_and_help_load_no_numerics(args):
    r = probe(args)
    assert r["code"] == 0 and r["loaded"] == ["click"]
    # nor the file loader, a spec or any command module: the entry point, its package and errors
    assert r["ours"] == ["optimus_calc", "optimus_calc.cli", "optimus_calc.cli.main",
                         "optimus_calc.errors"]


HOT_TABLES = [
    ["plan", "llama70b", "--nodes", "2"],
    ["memory", "llama70b", "--nodes", "2", "--tp", "8"],
    ["step", "llama70b", "--nodes", "2", "--tp", "8"],
    ["compare", "llama70b", "--nodes", "2"],
    ["comm", "all-reduce", "--size", "1e9", "--nodes", "2"],
]
MACHINE = [
    ["plan", "llama70b", "--nodes", "2", "--format", "json"],
    ["memory", "llama70b", "--nodes", "2", "--tp", "8", "--format", "csv"],
    ["step", "llama-2-7b", "--format", "json"],  # test_regimes.py: no validate module
    # test_outputs_display.py: no matplotlib without --plot
    ["memory", "70e9", "--model-states-only", "--format", "json"],
]
# fit's closed form for the layers of a bare parameter count (affine in the count: read from
# the memory model, fit.solve_params_closed_form), then sympy imported by the probe itself: no
# command loads it now, so the control is that the probe sees it once it is there
FIT_CLOSED_FORM = ["fit", "1e9", "--solve", "layers", "--node", "dgx-2", "--nodes", "4",
                   "--zero", "1", "--model-states-only", "--precision", "fp16", "--format", "json"]
SYMPY_CONTROL = ["@import", "sympy"]
# the design-review page lists its equations from the generated text (compiled/text.py)
HTML = ["step", "llama-2-7b", "--format", "html", "-o",
        os.path.join(tempfile.gettempdir(), f"optimus-calc-probe-{os.getpid()}.html")]
# ... and compare's, whose chart is bars too (report/svg_bars.py)
HTML_COMPARE = ["compare", "llama-2-7b", "--format", "html", "-o",
                os.path.join(tempfile.gettempdir(), f"optimus-calc-probe-c-{os.getpid()}.html")]
# ... and comm's, whose bandwidth lines are written as SVG directly (report/svg_lines.py)
HTML_COMM = ["comm", "all-reduce", "--sizes", "1KB..1GB", "--nodes", "2", "--format", "html",
             "-o", os.path.join(tempfile.gettempdir(), f"optimus-calc-probe-l-{os.getpid()}.html")]
# `explain`'s list of equations and an unknown name read the generated text (compiled/text.py);
# one equation, its values and its LaTeX the generated text too (compiled/shown.py) and the
# compiled function of the expression (before: 1.2 s, sympy built and printed it)
EXPLAIN_TEXT = [["explain"], ["explain", "no.such_equation"],
                ["explain", "memory.weights_bytes", "--format", "json"],
                ["explain", "step.time", "llama-2-7b", "--latex"]]
# the machine formats, the HTML page, explain's pages and an unknown name, then fit's closed
# form in the same process (the positive control for sympy): one fresh interpreter for the
# tests of this module and of the two above
MACHINE_THEN_EXPLAIN = [*MACHINE, HTML, HTML_COMPARE, HTML_COMM, *EXPLAIN_TEXT,
                        FIT_CLOSED_FORM, SYMPY_CONTROL]
# the hot tables, then a misspelt model (the positive control for difflib, which only "did you
# mean" loads): one fresh interpreter
MISSPELT = ["memory", "llama-70"]
HOT_THEN_MISSPELT = [*HOT_TABLES, MISSPELT]
SEQUENCES = (HOT_THEN_MISSPELT, MACHINE_THEN_EXPLAIN)


@pytest.mark.parametrize("i", range(len(HOT_TABLES)))
def test_hot_path_table_loads_no_sympy_or_matplotlib(i):
    r = probe_sequence(HOT_THEN_MISSPELT)[i]  # after the first i + 1 commands, in one process
    assert r["code"] == 0
    # the numbers need numpy and pydantic; nothing else heavy: a table of printable ASCII is
    # drawn without rich (report/plain_table.py; tests/test_plain_table.py: other text is not)
    assert r["loaded"] == ["numpy", "pydantic", "click"]


@pytest.mark.parametrize("i", range(len(MACHINE)))
def test_machine_formats_do_not_load_rich(i):
    r = probe_sequence(MACHINE_THEN_EXPLAIN)[i]
    assert r["code"] == 0 and r["loaded"] == ["numpy", "pydantic", "click"]


@pytest.mark.parametrize("i", range(3))
def test_the_html_page_lists_its_equations_without_sympy(i):
    r = probe_sequence(MACHINE_THEN_EXPLAIN)[len(MACHINE) + i]
    for page in (HTML, HTML_COMPARE, HTML_COMM):
        if os.path.exists(page[-1]):
            os.remove(page[-1])
    assert r["code"] == 0 and "sympy" not in r["loaded"]
    # the step page's memory and step charts and compare's chart are written as SVG directly
    # (report/svg_bars.py), comm's lines too (report/svg_lines.py): before, importing
    # matplotlib for them was ~1 s of a 1.6 s page
    assert "matplotlib" not in r["loaded"]


@pytest.mark.parametrize("i", range(len(EXPLAIN_TEXT)))
def test_explain_lists_refuses_and_prints_an_equation_without_sympy(i):
    # before: `explain` took 1.7 s building every equation to list their names (cold review)
    r = probe_sequence(MACHINE_THEN_EXPLAIN)[len(MACHINE) + 3 + i]
    assert r["code"] == (0, 2, 0, 0)[i] and "sympy" not in r["loaded"]


def test_fit_closed_form_loads_no_sympy_and_the_probe_sees_it_once_there():
    # fit's closed form took ~1 s solving in sympy; the positive control: the probe sees a
    # library imported late in a sequence (every step before it ran without it)
    *_, fit, r = probe_sequence(MACHINE_THEN_EXPLAIN)
    assert fit["code"] == 0 and "sympy" not in fit["loaded"]
    assert "sympy" in r["loaded"]


def test_blas_single_threaded_by_default():
    r = probe(None)
    assert r["env"] == {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                        "MKL_NUM_THREADS": "1", "PYDANTIC_DISABLE_PLUGINS": "__all__"}


def test_user_thread_settings_win():
    r = probe(None, OPENBLAS_NUM_THREADS="4", OMP_NUM_THREADS="3", PYDANTIC_DISABLE_PLUGINS="")
    assert r["env"] == {"OPENBLAS_NUM_THREADS": "4", "OMP_NUM_THREADS": "3",
                        "MKL_NUM_THREADS": "1", "PYDANTIC_DISABLE_PLUGINS": ""}


def test_python_dash_m_sets_blas_before_numpy():
    # `python -m optimus_calc` goes through __main__.py; numpy reads the variable at import
    code = ("import runpy, sys, os; sys.argv = ['optimus_calc', '--version']\n"
            "try:\n runpy.run_module('optimus_calc', run_name='__main__')\n"
            "except SystemExit: pass\n"
            "print(os.environ.get('OPENBLAS_NUM_THREADS'))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}, timeout=60)
    assert p.returncode == 0 and p.stdout.strip().splitlines()[-1] == "1"


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc (Linux)")
def test_numpy_starts_no_blas_threads():
    # OpenBLAS starts its pool when numpy loads; with the default of 1 the process keeps one
    # thread. Counted after `plan` (which imports numpy) from /proc/self/status.
    r = probe(["plan", "llama70b", "--nodes", "2", "--format", "json"])
    assert r["code"] == 0 and "numpy" in r["loaded"]
    assert r["threads"] == "1"


def test_plan_skips_numpy_ma_and_difflib():
    # np.unique's default path imports numpy.ma (numpy 2); difflib is only for "did you mean";
    # tomllib only when a catalog file differs from the built-in snapshot (catalog_snapshot.py);
    # shutil (and the compression modules it loads) not for the terminal's width, unicodedata
    # only to check an unusual --csv-sep (cli/common.py)
    r = probe(["plan", "llama70b", "--nodes", "2"])
    assert r["code"] == 0 and r["also_loaded"] == []
    # the probe sees them when a command does load them: a misspelt model name suggests (the
    # commands before it in the process had not loaded difflib)
    *_, before, misspelt = probe_sequence(HOT_THEN_MISSPELT)
    assert "difflib" not in before["also_loaded"] and "difflib" in misspelt["also_loaded"]
    sep = probe(["plan", "llama70b", "--nodes", "2", "--format", "csv", "--csv-sep", ":"])
    assert sep["code"] == 0 and sep["also_loaded"] == ["unicodedata"]


def test_sorted_unique_is_np_unique():
    import numpy as np
    from optimus_calc.evaluate.stages import sorted_unique
    assert sorted_unique([8, 2, 8, 4, 2, 1]).tolist() == [1, 2, 4, 8]
    assert sorted_unique(np.array([[3, 3], [1, 5]])).tolist() == [1, 3, 5]  # flattened
    assert sorted_unique(np.array([2.0, 2.0])).dtype == np.float64
    assert sorted_unique([]).size == 0


@pytest.mark.parametrize("args", [["plan", "llama70b", "--nodes", "2", "--format", "json"],
                                  ["memory", "no-such-model"], ["--help"]])
def test_garbage_collector_paused_for_the_command_only(run, args):
    # LazyGroup.invoke pauses the collector while a command is imported and runs; whatever the
    # command then does (or fails to do), the collector is back on
    import gc
    assert gc.isenabled()
    run(*args)
    assert gc.isenabled()


def test_command_runs_few_collections():
    # plan --format json: 105 collections when the command module was imported with the
    # collector on, 34 with it paused for the import only, 29 with it paused for the whole
    # command (CPython 3.11, default thresholds: the rest are the entry point's own imports)
    r = probe(["plan", "llama70b", "--nodes", "2", "--format", "json"])
    assert r["code"] == 0 and r["collections"] <= 31
