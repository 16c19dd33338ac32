"""Layering and frozen results: the floors, no import circles, only cli/ imports click
(docs/ARCHITECTURE.md, "Floors"). The exhaustive Enum dispatch is in tests/test_dispatch.py,
the option stack and field errors in tests/test_cli_options.py."""

import ast
import dataclasses
import re
from functools import lru_cache
from pathlib import Path

import pytest

from src_ast import parse

SRC = Path(__file__).resolve().parents[1] / "src" / "optimus_calc"
TESTS = Path(__file__).resolve().parent
# src/ parsed once for this module and test_sizes.py (src_ast.py), on one worker
pytestmark = pytest.mark.xdist_group("src_ast")


@lru_cache(maxsize=None)
def _import_nodes_of(text: str) -> tuple[ast.AST, ...]:
    """The import statements of a module's source (parsed once per text: three tests walk
    every module)."""
    return tuple(n for n in ast.walk(parse(text))
                 if isinstance(n, (ast.Import, ast.ImportFrom)))


def _import_nodes(path: Path) -> tuple[ast.AST, ...]:
    return _import_nodes_of(path.read_text())


def _imports(path: Path) -> set[str]:
    out = set()
    for node in _import_nodes(path):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
    return out


def test_report_never_imports_cli_and_only_cli_imports_click():
    bad = []
    for p in SRC.rglob("*.py"):
        rel = p.relative_to(SRC).as_posix()
        mods = _imports(p)
        if not rel.startswith("cli/") and any(m == "click" or m.startswith("click.")
                                              for m in mods):
            bad.append(f"{rel} imports click")
        if not rel.startswith("cli/") and rel != "__main__.py" and any(
                m.startswith("optimus_calc.cli") for m in mods):
            bad.append(f"{rel} imports optimus_calc.cli")
    assert bad == []


# ---- floors ----------------------------------------------------------------------------------
# The packages and modules of src/optimus_calc from the bottom up. A module may import its own
# floor or a lower one, never a higher one (docs/ARCHITECTURE.md, "Floors"); imports under ``if TYPE_CHECKING``
# count too. Same-floor imports are free (equations import their registry; search/plan imports
# search/space).
FLOORS = (
    ("errors", "units", "record"),             # no optimus_calc import but errors
    ("specs",),                                # pydantic records of what the user gives
    ("equations",),                            # sympy, registered; compiled.py generated
    ("regimes", "regime_residuals"),           # error ranges from validate's residuals (data)
    ("loaders", "catalog", "catalog_snapshot", "hf_import", "profile"),  # file readers -> specs
    ("evaluate",),                             # the one evaluator and its batches of one
    ("frameworks",),                           # which framework runs a layout; its exporters
    ("search",),                               # the planner over evaluate/
    ("analyses", "validate", "gemm_calibration", "public_row", "public_cases",
     "public_cases_moe", "public_cases_long", "public_cases_mpt", "public_cases_2509",
     "public_cases_mlm", "public_cases_tt", "public_cases_dfa", "public_cases_fms",
     "public_cases_small", "public_cases_automodel",
     "public_cases_mds", "public_cases_nemo2407", "public_cases_mb26",
     "public_cases_mb26_moe", "public_cases_mb26_bw",
     "validate_public",
     "validate_loso", "validate_moe", "validate_table"),         # applications on the evaluator and planner
    ("report",),                               # result objects -> Documents
    ("inputs",),                               # the option values -> typed specs
    ("cli", "__main__"),                       # click: the only layer that prints or exits
)
# Known imports up the floors, each to be removed by the issue named (the entry disappears
# with its file: breakeven moves to analyses/ in issue 24).
KNOWN_UP: dict[tuple[str, str], str] = {}


def test_every_floor_names_a_module():
    """A floor names only packages and modules that exist (the `export` package, gone into
    frameworks/, stayed listed here after it moved)."""
    root = SRC
    missing = [name for floor in FLOORS for name in floor
               if not (root / name).is_dir() and not (root / f"{name}.py").is_file()]
    assert missing == []


def _floor_of(name: str) -> int:
    top = name.split("/")[0].split(".")[0].removesuffix(".py")
    for i, floor in enumerate(FLOORS):
        if top in floor:
            return i
    raise AssertionError(f"{name}: on no floor; add it to FLOORS in tests/test_layering.py")


def _up_imports(root: Path) -> list[str]:
    bad = []
    for p in root.rglob("*.py"):
        rel = p.relative_to(root).as_posix()
        if rel == "__init__.py" or rel == "_version.py":
            continue
        mine = _floor_of(rel)
        mods = _imports(p)
        for node in _import_nodes(p):  # from optimus_calc import catalog
            if isinstance(node, ast.ImportFrom) and node.module == "optimus_calc":
                mods |= {f"optimus_calc.{a.name}" for a in node.names
                         if (root / a.name).is_dir() or (root / f"{a.name}.py").exists()}
        for mod in mods:
            if not mod.startswith("optimus_calc.") or (rel, mod) in KNOWN_UP:
                continue
            theirs = _floor_of(mod.removeprefix("optimus_calc.").replace(".", "/"))
            if theirs > mine:
                bad.append(f"{rel} (floor {mine}) imports {mod} (floor {theirs})")
    return sorted(bad)


def test_no_import_runs_up_the_floors():
    assert _up_imports(SRC) == []


def test_the_floor_test_fails_on_an_import_up(tmp_path):
    # a copy of two modules where the evaluator imports the planner: caught, with both floors
    (tmp_path / "evaluate").mkdir()
    (tmp_path / "evaluate" / "x.py").write_text("from optimus_calc.search.plan import plan\n")
    (tmp_path / "search").mkdir()
    (tmp_path / "search" / "y.py").write_text(
        "if True:\n    from optimus_calc.evaluate.engine import evaluate\n")
    (tmp_path / "catalog.py").write_text("from optimus_calc import report, errors, __version__\n")
    (tmp_path / "report").mkdir()
    (tmp_path / "errors.py").write_text("")
    assert _up_imports(tmp_path) == [
        "catalog.py (floor 4) imports optimus_calc.report (floor 9)",
        "evaluate/x.py (floor 5) imports optimus_calc.search.plan (floor 7)"]


def _module_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules it imports (``from pkg import mod`` counts as pkg.mod), lazy and
    TYPE_CHECKING imports included, KNOWN_UP edges left out."""
    def name(p: Path) -> str:
        return ("optimus_calc." + p.relative_to(root).with_suffix("").as_posix()
                .replace("/", ".")).removesuffix(".__init__")
    files = {name(p): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for mod, p in files.items():
        rel = p.relative_to(root).as_posix()
        out = set()
        for node in _import_nodes(p):
            if isinstance(node, ast.Import):
                targets = {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                targets = {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in files
                           else node.module for a in node.names}
            else:
                continue
            out |= {t for t in targets if t in files and (rel, t) not in KNOWN_UP and t != mod}
        graph[mod] = out
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    found, done = [], set()

    def visit(node: str, path: list[str]) -> None:
        for nxt in sorted(graph[node]):
            if nxt in path:
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in done:
                visit(nxt, path + [nxt])
        done.add(node)

    for start in sorted(graph):
        if start not in done:
            visit(start, [start])
    return found


def test_no_import_circles_between_modules():
    assert _cycles(_module_graph(SRC)) == []
    # the check sees a circle through a lazy import (the one registry <-> memory had)
    assert _cycles({"a": {"b"}, "b": {"a"}}) == [["a", "b", "a"]]


def test_no_getattr_on_the_compiled_equations():
    # equations are called by their compiled function, never looked up by a name string
    pat = re.compile(r"getattr\(\s*(eq|compiled|C)\s*,")
    hits = [f"{p.name}:{i}" for root in (SRC, TESTS) for p in root.rglob("*.py")
            for i, line in enumerate(p.read_text().splitlines(), 1) if pat.search(line)]
    assert hits == []


def test_result_objects_are_frozen():
    from optimus_calc.analyses.breakeven import DeviceResult
    from optimus_calc.analyses.compare import Comparison, Strategy, StrategyResult
    from optimus_calc.analyses.fit import FitResult
    from optimus_calc.analyses.sweep import SweepSpec
    from optimus_calc.evaluate.memory import MemoryEstimate, OffloadMemory, StageMemory
    from optimus_calc.evaluate.optimizer import OptDevice, OptStep
    from optimus_calc.evaluate.step import StepEstimate
    from optimus_calc.inputs import Inputs, SearchInputs
    from optimus_calc.analyses.nics import NicSizing
    from optimus_calc.search.plan import Candidate, PlanResult
    from optimus_calc.report.document import Column, Document, Table
    from optimus_calc.analyses.sweep import SweepPoint
    from optimus_calc.validate import Case
    for cls in (Comparison, Strategy, StrategyResult, FitResult, MemoryEstimate, OffloadMemory,
                StageMemory, OptDevice, OptStep, StepEstimate, Inputs, SearchInputs, Candidate,
                NicSizing, PlanResult, SweepPoint, Case, Column, Document, Table, DeviceResult,
                SweepSpec):
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, cls.__name__


def test_the_repository_tracks_no_stray_outputs():
    """Plots and pages a command writes belong in a temporary directory, never in the tree:
    020e8bde committed four (sweep.png, compare.png, memory.svg, busbw.svg) from a hand run of
    docs/guide/outputs.md's --plot examples in the repository root. The tracked top level is
    the project's own files; the only tracked image is the README's screenshot."""
    import shutil
    import subprocess
    root = Path(__file__).resolve().parents[1]
    if shutil.which("git") is None or not (root / ".git").exists():
        pytest.skip("not a git checkout (an installed or unpacked copy)")
    files = subprocess.run(["git", "-C", str(root), "ls-files"], capture_output=True, text=True,
                           check=True).stdout.split()
    top = {f.split("/")[0] for f in files}
    assert top <= {".ci", ".gitignore", "CHANGELOG.md", "CONTRIBUTING.md", "Makefile", "README.md",
                   "benchmarks", "docs", "hardware_catalog", "mkdocs.yml", "pyproject.toml", "src",
                   "tests", "tools"}, sorted(top)
    images = [f for f in files if f.rsplit(".", 1)[-1] in ("png", "svg", "jpg", "pdf", "html")]
    assert images == ["docs/img/plan-html.png"], images
