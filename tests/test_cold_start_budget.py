"""What a cold `plan` builds (issue 35): pydantic twins (specs/frozen.py) only for what it
validates, and no pydantic model machinery at all when the user typed nothing but the model and
the node count (defaults and values of validated specs are built without validating them,
specs/base.unvalidated), the built-in catalog taken from its validated snapshot without
validating it again, and an upper bound on the modules and classes.

Each probe is a fresh interpreter (in-process the test session has already built everything).
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

PROBE = """
import builtins, io, json, sys
made = {"classes": 0, "ours": 0}
build = builtins.__build_class__
def counting(func, name, *args, **kw):
    made["classes"] += 1
    made["ours"] += func.__module__.startswith("optimus_calc")
    return build(func, name, *args, **kw)
builtins.__build_class__ = counting
from optimus_calc.cli.main import main
out, sys.stdout = sys.stdout, io.StringIO()
try:
    main(json.loads(sys.argv[1]))
except SystemExit as exc:
    code = exc.code
sys.stdout = out
modules = len(sys.modules)
loaded = set(sys.modules)
counted = dict(made)  # as the command left them (the imports below build more)
ours_loaded = sum(m.startswith("optimus_calc") for m in sys.modules)
from optimus_calc.specs.frozen import Frozen, _SPEC_OF
def subclasses(c):
    for s in c.__subclasses__():
        yield s
        yield from subclasses(s)
models = sorted(c.__name__ for c in subclasses(Frozen))
twins = sorted(c.__name__ for c in _SPEC_OF.values())
import importlib.metadata as md, numpy, pydantic
versions = [sys.version_info[:2], numpy.__version__, pydantic.VERSION, md.version("click"),
            md.version("rich")]
print(json.dumps({"code": code, "modules": modules, "our_modules": ours_loaded,
                  "loaded": [m for m in ("rich", "sympy", "pydantic.main") if m in loaded],
                  "versions": versions,
                  "schemas": twins, "models": models, **counted}))
"""


def cold(args):
    p = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args)], capture_output=True,
                       text=True, env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
                       timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def plan():
    return cold(["plan", "llama70b", "--nodes", "2"])


def test_cold_plan_builds_schemas_only_for_its_input(plan):
    # 2691995 built all 16 model classes' schemas at import; 991ec23 only the command's input
    # (Assumptions, Layout, Training; the catalog's eight kinds come from the validated
    # snapshot); now none: the defaults, the model's sequence length and the search's own
    # layouts need no validation, and a schema's first build also imported pydantic's plug-in
    # loader (importlib.metadata, email, socket: 38 modules). plain-specs: the spec classes are
    # plain classes whose pydantic twin is built only to validate, so a cold plan does not import
    # pydantic's model machinery (pydantic.main, pydantic.fields with annotated_types)
    assert plan["code"] == 0
    assert plan["schemas"] == []
    assert "pydantic.main" not in plan["loaded"]
    assert {"GPU", "Model", "Node", "SmartNIC", "Flops"} <= set(plan["models"])


def test_typed_values_checked_without_a_schema_but_assumptions_validated():
    # a value the user typed that validation could only accept as it is (an int within the
    # field's bounds, an enum's value: what click's IntRange and Choice parsed) is checked by
    # specs/base.unvalidated itself, so --seq-len builds no Training schema; --assume still
    # validates Assumptions (its field validators); a bad value is still the one-line error
    # (tests/test_unvalidated.py, tests/test_cli*.py)
    typed = cold(["plan", "llama70b", "--nodes", "2", "--seq-len", "8192", "--assume",
                  "gpu_headroom=0.1"])
    assert typed["code"] == 0
    assert typed["schemas"] == ["Assumptions"]
    assert "pydantic.main" in typed["loaded"]  # the twin that validated it


# the libraries the total module count below was measured with (Python, numpy, pydantic, click,
# rich): another version loads other modules of its own
MEASURED_WITH = [[3, 11], "2.4.6", "2.14.4", "8.5.1", "15.0.0"]


def test_cold_plan_module_and_class_budget(plan):
    # 2691995, this probe: 460 modules (83 ours), 1,029 classes created (109 ours), 16 schemas
    # built; bounds at this commit's count (457, 83, 1,025, 3 schemas; importlib.resources is
    # no longer ours to import): a change that loads more on the plan path raises them on purpose.
    # 85 of ours since the round's merges: evaluate.nccl (NCCL's latency model, issue 32) and
    # report.cells (the cell text the table and the HTML page share, issue 34); one class more;
    # two more: the records issue 36 asks for (evaluate/stages.StageColumns for ctx.st,
    # evaluate/records.OptimizerRecord from optimizer_stage); and search/pools.py with its
    # SearchState (issue 36's frozen search context instead of a positional tuple)
    # df799ae: 460 modules (86 ours), 1,029 classes (113 ours). Then the text table of printable
    # ASCII drawn without rich (report/plain_table.py, one module of ours more): 415 modules,
    # 951 classes, rich's 45 modules and 78 classes gone
    # 991ec23: 415 modules, 951 classes, 3 schemas. No schema built (specs/base.unvalidated):
    # 377 modules (pydantic's plug-in loader and importlib.metadata with email, socket, zipfile
    # not imported), 832 classes; csv and tempfile imported only to write CSV or a file: 374
    # modules, 820 classes. speed-cold2: shutil (with zlib, bz2, lzma, fnmatch) and unicodedata
    # not imported for the terminal width and the default CSV separator: 366 modules, 809 classes.
    # plain-specs: the spec classes without pydantic's model machinery (specs/frozen.py; 88 of
    # ours: frozen.py; 116 classes of ours: its field, bound and validator records): 318
    # modules, 670 classes. The MoE token dispatcher's enum (specs/training.MoeDispatcher,
    # --moe-dispatcher, issue 32): 117 classes of ours, 671. The loss's fusion enum
    # (specs/training.CrossEntropyFusion, --cross-entropy-fusion, round 16): 118, 672. A YaRN
    # model's unfused RoPE (evaluate/rope.py, compute.rope_bytes, round 17): 89 of ours, 319
    # --grad-bytes' parameter type (cli/types.DtypeBytes: a dtype's size, checked in calibrate's
    # runs files too, round 30): 119 classes of ours, 673
    assert plan["our_modules"] <= 89 and plan["ours"] <= 119
    assert len(plan["schemas"]) == 0
    assert "rich" not in plan["loaded"]
    if plan["versions"] != MEASURED_WITH:
        pytest.skip(f"library versions {plan['versions']}: the totals were counted with "
                    f"{MEASURED_WITH}")
    assert plan["modules"] <= 319
    assert plan["classes"] <= 673


def _deep_same(a, b, where=""):
    """Equal values of the same types, nested models field by field (and their fields set)."""
    from optimus_calc.specs.frozen import Frozen
    assert type(a) is type(b), (where, type(a), type(b))
    if isinstance(a, Frozen):
        assert a.model_fields_set == b.model_fields_set, where
        for name in type(a).model_fields:
            _deep_same(getattr(a, name), getattr(b, name), f"{where}.{name}")
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _deep_same(x, y, f"{where}[{i}]")
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for k in a:
            _deep_same(a[k], b[k], f"{where}[{k}]")
    else:
        assert a == b, where


def test_trusted_catalog_equals_the_validated_one():
    """Every built-in entry built from the snapshot without validation (catalog.trusted_entry)
    is the entry pydantic validates from its TOML text: same values, types and fields set."""
    import tomllib
    from optimus_calc import catalog as C
    from optimus_calc.loaders import read_snapshot
    snap = read_snapshot(C.builtin_dir() / C.SNAPSHOT)
    count = 0
    for path in C._toml_files(C.builtin_dir()):
        rel = path.relative_to(C.builtin_dir()).as_posix()
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        for kind, items in data.items():
            for i, raw in enumerate(items):
                trusted = C.trusted_entry(C.KINDS[kind], snap[rel]["valid"][kind][i], raw)
                _deep_same(trusted, C.KINDS[kind].model_validate(raw), f"{rel}:{kind}[{i}]")
                count += 1
    assert count >= 50  # the whole catalog: GPUs, CPUs, cards, links, nodes, models


def test_unvalidated_specs_equal_the_validated_ones():
    """specs/base.unvalidated builds what validation builds (values, types, fields set) for the
    cold plan's specs: the default assumptions (their integer defaults become floats), a
    training of defaults and a model's sequence length, and every layout a plan reports."""
    from optimus_calc import catalog as C
    from optimus_calc.search.plan import plan
    from optimus_calc.evaluate.context import resolve_hardware
    from optimus_calc.specs.assumptions import Assumptions
    from optimus_calc.specs.base import unvalidated
    from optimus_calc.specs.training import Layout, Training
    _deep_same(unvalidated(Assumptions, {}), Assumptions(), "Assumptions()")
    assert type(unvalidated(Assumptions, {}).sac_saves_ep_all_to_all) is float  # default=1
    # the reports' dict(assumptions) is model_dump()'s dict (flat fields, same order), built
    # without a serializer
    for asm in (unvalidated(Assumptions, {}), Assumptions(gpu_headroom=0.2)):
        assert list(dict(asm).items()) == list(asm.model_dump().items())
    fields = dict(seq_len=8192, global_batch=None, precision="bf16", optimizer="adam",
                  grad_bytes=0, flash_attention=True, dropout=False, multicast=False)
    _deep_same(unvalidated(Training, fields, ("seq_len", "dropout")), Training(**fields))
    cat = C.load(())
    model = cat.get("llama70b", "model")
    hw = resolve_hardware(cat, "dgx-a100", 2)
    res = plan(model, hw, Training(seq_len=4096), Assumptions(), top_k=5)
    lays = [c.layout for c in (res.recommended, *res.top) if c is not None]
    assert len(lays) >= 2
    for lay in lays:
        _deep_same(lay, Layout(**{k: getattr(lay, k) for k in lay.model_fields_set}))


def test_unvalidated_refuses_what_needs_validating():
    """A value that is not its field's default, an unknown field or a missing required one is
    left to validation (None): it may be out of bounds, of the wrong type or a typo."""
    from optimus_calc.specs.assumptions import Assumptions
    from optimus_calc.specs.base import unvalidated
    from optimus_calc.specs.training import Training
    assert unvalidated(Training, {"seq_len": 0}) is None            # typed: validated
    assert unvalidated(Training, {"seq_len": 4096, "micro_batch": 0}, ("seq_len",)) is None
    assert unvalidated(Training, {"seq_len": 4096, "precision": "bf17"}, ("seq_len",)) is None
    assert unvalidated(Training, {"micro_batch": 1}) is None        # seq_len is required
    assert unvalidated(Training, {"seq_len": 4096, "seqlen": 1}, ("seq_len",)) is None
    assert unvalidated(Assumptions, {"gpu_headroom": 1}) is None    # an int, not the float
    assert unvalidated(Training, {"seq_len": 4096, "dropout": 1}, ("seq_len",)) is None


def test_an_edited_builtin_file_is_validated(tmp_path, monkeypatch):
    """A file whose text differs from the snapshot's is parsed and validated as before: its
    bad value is an error naming the file, never a stale trusted entry."""
    import shutil
    from optimus_calc import catalog as C
    from optimus_calc.errors import CatalogError
    root = tmp_path / "hardware_catalog"
    shutil.copytree(C.builtin_dir(), root)
    gpus = next(root.rglob("gpus/*.toml"))
    text = gpus.read_text(encoding="utf-8")
    gpus.write_text(text.replace("memory_GB = ", "memory_GB = -", 1), encoding="utf-8")
    monkeypatch.setattr(C, "builtin_dir", lambda: root)
    C.load.cache_clear()
    try:
        with pytest.raises(CatalogError, match="memory_GB"):
            C.load(())
    finally:
        C.load.cache_clear()


EXIT_PROBE = """
import atexit, gc, sys
atexit.register(lambda: sys.stderr.write(f"frozen={gc.get_freeze_count()}"))
from optimus_calc.cli.main import main
if sys.argv[1] == "entry":
    sys.argv = ["optimus-calc", "catalog", "list", "--kind", "nic"]
    main()
try:
    main(["catalog", "list", "--kind", "nic"])
except SystemExit:
    pass
"""


@pytest.mark.parametrize("how", ["entry", "in-process"])
def test_only_the_process_entry_point_freezes_its_objects(how):
    # main() without arguments (console script, python -m) ends the process: its objects are
    # frozen so the interpreter's exit does not collect over them; main(argv) in-process leaves
    # the caller's collector alone (nothing frozen)
    p = subprocess.run([sys.executable, "-c", EXIT_PROBE, how], capture_output=True, text=True,
                       env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "nic" in p.stdout.lower()
    frozen = int(p.stderr.rsplit("frozen=", 1)[1])
    assert (frozen > 10_000) if how == "entry" else frozen == 0
