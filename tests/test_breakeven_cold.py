"""What a cold `breakeven` loads and builds (issue 35, rows 2 and 3 of its table): the README
example with typed layout flags and the catalog-wide form without them build no pydantic
schema (the typed values click parsed are checked by specs/base.unvalidated, so pydantic's
plug-in loader, importlib.metadata and email are not imported), load no sympy (the generated
closed forms, tests/test_breakeven_forms.py) and no rich, and stay within a module and class
budget next to a cold `plan`'s (tests/test_cold_start_budget.py).

Each probe is a fresh interpreter (in-process the test session has already built everything).
"""

import functools
import json
import subprocess
import sys

import pytest

from test_cold_start_budget import MEASURED_WITH, PROBE, SRC

README = ["breakeven", "llama70b", "--nodes", "2", "--tp", "2", "--pp", "4", "--zero", "3",
          "--recompute", "full", "--seq-len", "2048", "--global-batch", "16"]
CATALOG = ["breakeven", "llama70b", "--nodes", "2"]
NOT_LOADED = ("rich", "sympy", "pydantic.main", "pydantic.plugin._loader", "importlib.metadata",
              "email")

pytestmark = pytest.mark.xdist_group("cold_start")


# After its report the probe runs THEN's commands in the same process, each one's exit status
# and whether sympy is then loaded on a line of their own: test_breakeven_forms.py's check that
# one card's parameters and the fit goal need no sympy after the README example, nor `explain`
# (the generated text, equations/compiled/shown.py) nor `fit`'s closed form of a bare parameter
# count, and that the probe sees sympy once it is there (imported by the probe's last step),
# without a process of its own.
THEN = """
after = []
for args in json.loads(sys.argv[2]):
    code, sys.stdout, keep = 0, io.StringIO(), sys.stdout
    try:
        __import__(args[1]) if args[0] == "@import" else main(args)
    except SystemExit as exc:
        code = exc.code
    sys.stdout = keep
    after.append({"code": code, "sympy": "sympy" in sys.modules})
print(json.dumps(after))
"""
AFTER_README = [README + ["--device", "bluefield-3"],
                README + ["--goal", "fit", "--device", "bluefield-3"],
                ["explain", "memory.spill_bytes", "--format", "json"],
                ["fit", "1e9", "--solve", "layers", "--node", "dgx-2", "--nodes", "4", "--zero",
                 "1", "--model-states-only", "--precision", "fp16", "--format", "json"],
                ["@import", "sympy"]]


def cold(args, then=()):
    """The probe's report of ``args`` in a fresh interpreter, and THEN's of ``then`` after it
    (one process per distinct pair)."""
    return _cold(json.dumps(args), json.dumps(list(then)))


@functools.lru_cache(maxsize=None)
def _cold(args: str, then: str):
    probe = PROBE.replace('for m in ("rich", "sympy", "pydantic.main")',
                          f"for m in {NOT_LOADED!r}")
    assert probe != PROBE  # the probe reports these modules
    p = subprocess.run([sys.executable, "-c", probe + THEN, args, then], capture_output=True,
                       text=True, env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
                       timeout=600)
    assert p.returncode == 0, p.stderr
    report, after = p.stdout.strip().splitlines()[-2:]
    return json.loads(report), tuple(json.loads(after))


@pytest.fixture(scope="module", params=["readme", "catalog"])
def probe(request):
    readme = request.param == "readme"
    return request.param, cold(README, AFTER_README)[0] if readme else cold(CATALOG)[0]


def test_cold_breakeven_builds_no_schema_and_loads_no_sympy(probe):
    # 251a87e built Layout's and Training's schemas for both (fill_layout validated the
    # layout; the typed --seq-len/--global-batch, or the batch rule's global batch, the
    # training), which imported pydantic's plug-in loader with importlib.metadata and email
    _, r = probe
    assert r["code"] == 0
    assert r["schemas"] == []
    assert r["loaded"] == []  # none of NOT_LOADED


# 251a87e, this probe: README example 417 modules (89 ours), 949 classes (111 ours); catalog-wide
# 425 modules (97 ours), 964 classes (126 ours). Without the two schemas: 376 (89) and 818
# (111); 384 (97) and 833 (126). The bounds are those counts: a change that loads more on
# break-even's cold path raises them on purpose.
# plain-specs (the spec classes without pydantic's model machinery, specs/frozen.py): 320 (90)
# and 668 (114); 328 (98) and 683 (129): one module of ours more, three classes of ours more
# (the field, bound and validator records) and pydantic.main, pydantic.fields, annotated_types
# with their modules and classes not imported. The MoE token dispatcher's enum
# (specs/training.MoeDispatcher, issue 32): one class of ours more; the loss's fusion enum
# (specs/training.CrossEntropyFusion, round 16) one more. A YaRN model's unfused RoPE
# (evaluate/rope.py, round 17): one module of ours more. --grad-bytes' parameter type
# (cli/types.DtypeBytes, round 30): one class of ours more.
BUDGET = {"readme": {"our_modules": 91, "ours": 117, "modules": 321, "classes": 671},
          "catalog": {"our_modules": 99, "ours": 132, "modules": 329, "classes": 686}}


def test_cold_breakeven_module_and_class_budget(probe):
    name, r = probe
    budget = BUDGET[name]
    assert r["our_modules"] <= budget["our_modules"] and r["ours"] <= budget["ours"]
    if r["versions"] != MEASURED_WITH:
        pytest.skip(f"library versions {r['versions']}: the totals were counted with "
                    f"{MEASURED_WITH}")
    assert r["modules"] <= budget["modules"]
    assert r["classes"] <= budget["classes"]
