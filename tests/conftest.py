import os
import sys
from pathlib import Path

# Tables are laid out for the terminal's width (COLUMNS first): pin it so golden files and
# every table assertion are the same in any terminal, CI log or pipe.
os.environ["COLUMNS"] = "120"

sys.path.insert(0, str(Path(__file__).parent))
import gc
import json

import pytest

from optimus_calc import catalog as catalog_mod
from optimus_calc import validate as validate_mod
from optimus_calc import validate_public as validate_public_mod
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.cli.main import main

# `validate` (every public case and the leave-one-source-out fits, ~1.5 s CPU) is run by some ten
# tests (its three golden formats, the docs example, the regimes' and the accuracy page's
# checks) on the same catalog and assumptions: computed once per worker for equal inputs, each
# test still rendering and checking the same deterministic cases (frozen records, a new list).
# No assumptions and the defaults are one key (run_all and run_public read None as the
# defaults), and the public rows `validate` cannot express (`not_expressed`, which runs every
# public row again) are kept the same way.
_RUN_ALL = validate_mod.run_all
_RUN_PUBLIC = validate_public_mod.run_public
_RUN_ALL_DONE: dict[str, list] = {}


def _key(cat, asm, *rest) -> str:
    # the fields given too: an efficiency typed at its default value is not the default
    # (evaluate/efficiency.py reads model_fields_set)
    given = sorted(asm.model_fields_set) if asm is not None else []
    return repr((cat.entries, cat.aliases, asm or Assumptions(), given, *rest))


def _run_all_once(cat, asm=None, cross_validate=True):
    key = _key(cat, asm, cross_validate)
    if key not in _RUN_ALL_DONE:
        # run_all(cross_validate=True) is with_loso over run_all(cross_validate=False)'s cases
        # (validate.py): those cases computed once for both
        _RUN_ALL_DONE[key] = (validate_mod.with_loso(_run_all_once(cat, asm, False), cat)[0]
                              if cross_validate else _RUN_ALL(cat, asm, False))
    return list(_RUN_ALL_DONE[key])


def _run_public_once(cat, asm=None):
    key = _key(cat, asm, "public")
    if key not in _RUN_ALL_DONE:
        _RUN_ALL_DONE[key] = _RUN_PUBLIC(cat, asm)
    return list(_RUN_ALL_DONE[key])


validate_mod.run_all = _run_all_once
validate_public_mod.run_public = _run_public_once

# The planner's, the sweep's and break-even's results the same way (tests/session_memo.py): not
# while a test has monkeypatched anything.
import session_memo  # noqa: E402

session_memo.install()


def _patching(method):
    def patched(self, *args, **kwargs):
        if not (args and args[0] is os.environ):  # setenv, delenv: the core reads no variable
            session_memo.note_patch()
        return method(self, *args, **kwargs)
    return patched


for _name in ("setattr", "delattr", "setitem", "delitem"):
    setattr(pytest.MonkeyPatch, _name, _patching(getattr(pytest.MonkeyPatch, _name)))


def pytest_configure(config):
    config.addinivalue_line("markers", "fresh: computed anew, never from the session's shared "
                            "results (tests/session_memo.py): a test of determinism")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    session_memo.new_test()
    if item.get_closest_marker("fresh"):
        session_memo.note_patch()


def pytest_sessionstart(session):
    """Under mutmut (MUTANT_UNDER_TEST set in the processes it forks, one per mutant), forget
    what earlier test sessions of the parent process cached: a cached CLI run, `validate` or
    evaluation computed without the mutant would hide it (docs/hardening.md, "Mutation score")."""
    if not os.environ.get("MUTANT_UNDER_TEST"):
        return
    import functools
    _RUN_ALL_DONE.clear()
    session_memo.clear()
    gc.unfreeze()  # the parent session's frozen objects (below) are not in get_objects()
    for obj in gc.get_objects():
        if isinstance(obj, functools._lru_cache_wrapper):
            obj.cache_clear()


def pytest_collection_finish(session):
    """What collection built (the test modules, everything they import, the parametrized
    cases) lives until the session ends: frozen (``gc.freeze``), so the cyclic collector's full
    collections do not walk it again and again (the product's entry point does the same,
    cli/main.py)."""
    gc.freeze()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After a module's last test (its module fixtures torn down): its garbage collected and
    what outlives it (imported libraries, caches) frozen like collection's objects. Before, the
    serial suite ran 13 full collections over everything, 2.2 s of its CPU; now each object is
    walked about once more."""
    yield
    if nextitem is None or nextitem.module is not item.module:
        gc.collect()
        gc.freeze()


@pytest.fixture(scope="session")
def cat():
    return catalog_mod.load(())


class Result:
    def __init__(self, code, out, err):
        self.code, self.out, self.err = code, out, err

    def json(self):
        return json.loads(self.out)


@pytest.fixture
def run(capsys, monkeypatch):
    """Run the CLI in-process; returns exit code, stdout and stderr."""
    monkeypatch.delenv(catalog_mod.ENV_VAR, raising=False)
    monkeypatch.delenv("OPTIMUS_CALC_PROFILE", raising=False)  # a user's profile (--profile)

    def _run(*args):
        code = 0
        try:
            main([str(a) for a in args])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        out, err = capsys.readouterr()
        return Result(code, out, err)
    return _run


@pytest.fixture(scope="session")
def html_pages(tmp_path_factory):
    """The HTML pages (html_support.PAGES) and their JSON, written once per worker for
    test_html.py and test_html_browser.py (one xdist group, so one worker writes them)."""
    from html_support import write_pages
    return write_pages(tmp_path_factory.mktemp("html"))


# The tests that run `validate`'s cases with the built-in catalog and default assumptions (the
# cache above), kept on one pytest-xdist worker (make test: --dist loadgroup) so that only one
# worker computes them.
VALIDATE_USERS = (
    "tests/test_accuracy.py::test_validate_counts",
    "tests/test_cuda_graph.py::test_rows_on_a_graph_do_not_fit_the_host_constants",
    "tests/test_drop_pad.py::test_the_shipped_constants_are_the_fit_of_the_public_moe_rows",
    "tests/test_ep_overlap_docs.py::",
    "tests/test_break9.py::test_a_reader_that_stops_early_ends_the_run_quietly",
    "tests/test_docs.py::test_example_is_what_the_command_prints[docs/guide/validate.md:",
    "tests/test_fuzz.py::test_random_argv[10]",  # its seed draws a bare `validate`
    "tests/test_golden.py::test_golden_output[validate.",
    "tests/test_outputs.py::test_every_command_csv_is_typed[validate]",
    "tests/test_outputs.py::test_sources_name_papers_not_missing_files",
    "tests/test_regimes.py::test_residual_table_is_fresh",
    "tests/test_regimes.py::test_validate_prints_errors_per_regime",
    "tests/test_step.py::test_calibration_all_within_tolerance",
    "tests/test_step.py::test_validate_command",
)


@pytest.hookimpl(trylast=True)  # after pytest-xdist's own hook
def pytest_collection_modifyitems(config, items):
    """`--dist loadgroup` sends the tests of one ``xdist_group`` to one worker: pytest-xdist
    (3.8) names each such test ``NODEID@GROUP`` by setting ``item._nodeid``, which pytest 9 no
    longer reads (a node's id is ``item._id``), so every group was split over the workers
    (each worker wrote the HTML pages, built the wheel, ran the cold-start probes). The name
    is set here where pytest-xdist's did not take. A test without a group is in its module's:
    a module's fixtures and caches are then built by one worker, not both (`--dist loadfile`
    does that too, but ignores the groups across modules: it took 4% less CPU than tests sent
    one by one, two alternating runs each)."""
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        if item.nodeid.rfind("@") > item.nodeid.rfind("]"):
            continue  # named by pytest-xdist (pytest < 9)
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        if not names and item.nodeid.startswith(VALIDATE_USERS):
            names = ["validate"]
        names = names or [item.nodeid.split("::", 1)[0]]
        nodeid = f"{item.nodeid}@{'_'.join(names)}"
        node_id = getattr(item, "_id", None)
        if hasattr(type(node_id), "parse"):  # pytest >= 9: a NodeId
            item._id = type(node_id).parse(nodeid)
        else:
            item._nodeid = nodeid
