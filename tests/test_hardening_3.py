"""Issue 23, hardening round 3: what tomllib builds, assumption floors, the table's refusal of
non-finite values, sweep's size, the one output writer (stdout, -o, --plot), nics = 0, control
characters as --csv-sep, superchip offload on a non-superchip node (Ctrl-C: test_ctrl_c.py).
Each case asserts the exit status, the one-line message and that nothing was written or left
partial. Each failed on the code before the fix (memory exhausted, NaN or a 9e36 s step with
exit 0, minutes of sweep, exit 1, a hang, a silent truncation, or "fits on device yes" beside
"DOES NOT FIT")."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from optimus_calc.report.document import Document
from optimus_calc.report.formats import Format, render
from optimus_calc.specs.assumptions import Assumptions

from cli_process import BUILTIN, one_line


# --- 2. assumption floors beside the catalog's ----------------------------------------------

def _bounds(name: str) -> tuple[float, float]:
    lo = hi = None
    for m in Assumptions.model_fields[name].metadata:
        lo = getattr(m, "ge", None) if getattr(m, "ge", None) is not None else lo
        hi = getattr(m, "le", None) if getattr(m, "le", None) is not None else hi
    assert lo is not None and hi is not None, f"{name} has no floor or ceiling"
    assert not any(getattr(m, "gt", None) is not None for m in
                   Assumptions.model_fields[name].metadata), f"{name}: a > 0 floor is no floor"
    return lo, hi


# commands that between them use every assumption: DP buckets (ZeRO 0-3), ZeRO-3 gathers, CPU,
# NVMe and superchip offload, host RAM, energy, compression
FLOOR_CMDS = [
    ("step", "llama-3-8b", "--nodes", "2", "--zero", "3", "--offload", "cpu"),
    ("step", "llama-3-8b", "--nodes", "2", "--zero", "3", "--offload", "nvme", "--tokens", "1e9"),
    ("step", "llama-3-8b", "--node", "gh200", "--zero", "3", "--offload", "superchip"),
    ("step", "llama-3-8b", "--nodes", "2", "--pp", "2", "--tp", "2"),
]


MOE_ONLY = {"moe_imbalance", "moe_max_nodes"}
FLOOR_CMDS_MOE = [("step", "mixtral-8x7b", "--nodes", "2", "--ep", "8", "--zero", "1"),
                  ("step", "qwen3-30b-a3b", "--nodes", "2", "--ep", "16", "--zero", "3")]
# the imbalance a layout's routing allows (efficiency.moe_imbalance_cap, EP min(k, E / EP) / k):
# Mixtral-8x7B at EP 8, 8 x min(2, 8 / 8) / 2 = 4; Qwen3-30B-A3B at EP 16, 16 x min(8, 8) / 8 = 16
ROUTING_CAP = {"mixtral-8x7b": 4.0, "qwen3-30b-a3b": 16.0}


@pytest.mark.parametrize("name", Assumptions().names())
def test_every_assumption_has_a_floor_that_keeps_times_physical(run, name):
    lo, hi = _bounds(name)
    below = [lo - max(abs(lo) * 0.5, 1e-3) if lo else -1.0]
    if lo >= 0.01:
        below.append(1e-300)  # the issue's value: positive, but no physical quantity
    for value in below + [hi * 2 + 1]:
        err = one_line(run("step", "llama-3-8b", "--assume", f"{name}={value!r}"))
        assert f"--assume {name}" in err
        bound = lo if value < lo else hi
        numbers = [float(x) for x in re.findall(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?", err)]
        assert bound in numbers, (bound, err)  # the message states the bound it broke
    # at the floor: an answer, every number finite, in every format (an MoE-only assumption
    # on an MoE model: on a dense one it is refused, evaluate/context.check_moe_flags)
    for args in (FLOOR_CMDS_MOE if name in MOE_ONLY else FLOOR_CMDS):
        top = ROUTING_CAP[args[1]] if name == "moe_imbalance" else hi
        if top < hi:  # above the layout's routing cap: capped there, and said
            out = " ".join(run(*args, "--assume", f"{name}={hi!r}").out.split())
            assert f"--moe-imbalance {hi:g} capped at {top:g} at EP" in out
        for value in {lo, top}:
            r = run(*args, "--assume", f"{name}={value!r}", "--format", "json")
            assert r.code == 0, (args, value, r.err)
            d = r.json()
            assert math.isfinite(d["step_time_s"]) and d["step_time_s"] > 0
        table = run(*args, "--assume", f"{name}={lo!r}")
        assert table.code == 0 and not re.search(r"\b(nan|inf)\b", table.out, re.I), table.out


@pytest.mark.parametrize("item", [
    "zero3_modules_per_layer=1e-300", "zero3_modules_per_layer=0.5",
    "offload_threads_per_rank=1e-300", "offload_threads_per_rank=0.99",
])
def test_counts_are_zero_for_derived_or_at_least_one(run, item):
    """Before: `step llama-3-8b --nodes 2 --zero 3 --assume zero3_modules_per_layer=1e-300`
    printed `step time nan` and `MFU nan%` with exit 0."""
    err = one_line(run("step", "llama-3-8b", "--nodes", "2", "--zero", "3", "--offload", "cpu",
                       "--assume", item))
    assert f"--assume {item.split('=')[0]}" in err and "0 (derived) or at least 1" in err


@pytest.mark.parametrize("item", ["cpu_pass_efficiency=1e-300", "cpu_pass_efficiency=1e-9",
                                  "cpu_mask_elems_per_cycle=1e-300", "nvme_efficiency=1e-300",
                                  "superoffload_core_fraction=1e-300", "ddp_bucket_MB=0"])
def test_issue_values_are_refused(run, item):
    """Before: cpu_pass_efficiency=1e-300 gave a 9.2e36 s step, 1e-9 a 9.2e8 s one."""
    err = one_line(run("step", "llama-3-8b", "--zero", "2", "--offload", "cpu",
                       "--assume", item))
    assert f"--assume {item.split('=')[0]}" in err and "greater than or equal to" in err


# --- 3. the table refuses non-finite values as JSON and CSV do -------------------------------

@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("fmt", list(Format))
def test_every_format_refuses_non_finite(fmt, bad):
    from optimus_calc.report.document import Column, Table
    doc = Document(title="t", data={"step_time_s": bad},
                   tables=[Table("", columns=[Column("step_time_s", "step s", fmt=".3f")],
                                 rows=[{"step_time_s": bad}])])
    with pytest.raises(ValueError, match="non-finite"):
        render(doc, fmt)
    cell_only = Document(title="t", data={},
                         tables=[Table("", columns=[Column("x", "x")], rows=[{"x": bad}])])
    if fmt is not Format.JSON:  # JSON prints data, not cells
        with pytest.raises(ValueError, match="non-finite"):
            render(cell_only, fmt)


# --- 4. sweep: deduplicated, at most MAX_SWEEP_POINTS points ----------------------------------

@pytest.mark.parametrize("flag", ["--nodes", "--seq-len", "--global-batch"])
def test_sweep_of_20000_values_is_refused_at_once(run, flag):
    import time
    from optimus_calc.cli.plan_cmd import MAX_SWEEP_POINTS
    values = ",".join(str(i) for i in range(1, 20_001))
    t0 = time.perf_counter()
    r = run("sweep", "--models", "llama70b", flag, values, "--format", "csv")
    assert time.perf_counter() - t0 < 2.0  # before: past 30 s
    err = one_line(r)
    assert flag in err and f"{MAX_SWEEP_POINTS:,}" in err and "20,000" in err
    assert r.out == ""


def test_sweep_deduplicates_its_lists(run):
    many = ",".join(["8"] * 20_000)
    r = run("sweep", "--models", "llama70b,llama70b", "--nodes", many, "--seq-len",
            "4096,4096", "--format", "csv")
    assert r.code == 0, r.err
    rows = r.out.strip().splitlines()
    assert len(rows) == 2, rows  # the header and one point


def _left(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


# --- 6. catalog and flags --------------------------------------------------------------------

def _node_without_nics(tmp_path: Path) -> Path:
    import tomllib
    src = tomllib.loads((BUILTIN / "nodes" / "nvidia-dgx.toml").read_text())
    node = next(n for n in src["node"] if n["name"] == "dgx-a100")
    lines = ["[[node]]"]
    for k, v in node.items():
        if k in ("aliases",):
            continue
        v = "nonic" if k == "name" else (0 if k == "nics" else v)
        lines.append(f"{k} = {json.dumps(v)}")
    d = tmp_path / "cat"
    d.mkdir()
    (d / "nonic.toml").write_text("\n".join(lines) + "\n")
    return d


def test_node_without_nics_at_two_nodes_is_an_error(run, tmp_path):
    """Before: modelled as one NIC per node, silently."""
    d = _node_without_nics(tmp_path)
    err = one_line(run("--catalog-dir", d, "step", "llama-3-8b", "--node", "nonic",
                       "--nodes", "2"))
    assert "nonic" in err and "'nics'" in err and "nonic.toml" in err and "--nodes 2" in err
    assert run("--catalog-dir", d, "step", "llama-3-8b", "--node", "nonic").code == 0


@pytest.mark.parametrize("sep", ["\x1b", "\x7f", "\x00", "\x01", "\x1f", "\x85", "\u200e",
                                 "\u2028", "\u202e", "\ufeff"])
def test_control_characters_are_not_csv_separators(run, sep):
    err = one_line(run("catalog", "list", "--format", "csv", "--csv-sep", sep))
    assert "--csv-sep" in err and "not usable" in err


@pytest.mark.parametrize("sep", [";", "\t", "\\t", ":"])
def test_usable_csv_separators_still_work(run, sep):
    r = run("catalog", "list", "--format", "csv", "--csv-sep", sep)
    assert r.code == 0 and r.out.startswith("kind" + ("\t" if "t" in sep else sep) + "name")


@pytest.mark.parametrize("cmd", [("memory",), ("step",), ("explain", "step.time")])
def test_superchip_offload_on_a_dgx_a100_is_refused(run, cmd):
    """Round 29: "fits on device no" beside 49.9 GB of 921.6 GB, and `step` priced GraceAdam at
    0 s on an "epyc-7742 (NVLink-C2C)" that does not exist, where `plan --offloads superchip`
    refused: now the one-layout commands refuse it too (OffloadStrategy.refusal), exit 2."""
    r = run(*cmd, "llama70b", "--nodes", "2", "--tp", "8", "--zero", "3", "--offload", "superchip")
    assert r.code == 2 and r.out == ""
    assert one_line(r) == ("error: --offload superchip: dgx-a100 is not a superchip node (no "
                           "NVLink-C2C CPU); use --node gh200 or gh200-nvl2\n")
    gh = run("memory", "llama70b", "--node", "gh200", "--nodes", "16", "--tp", "1", "--zero",
             "3", "--offload", "superchip", "--format", "json").json()
    assert gh["offload"]["fits_on_device"] is True  # a superchip node still holds it


def test_unwritable_plot_directory_fails_before_any_work(run, monkeypatch):
    """`--plot /proc/x.png`: the directory cannot take a new file; refused before the model is
    evaluated (the evaluator is never called)."""
    import optimus_calc.evaluate.engine as engine
    import optimus_calc.evaluate.memory as memory

    def boom(*a, **k):
        raise AssertionError("evaluated before the output path was checked")
    monkeypatch.setattr(engine, "evaluate", boom)
    monkeypatch.setattr(memory, "evaluate", boom)
    r = run("memory", "llama70b", "--nodes", "2", "--plot", "/proc/x.png")
    assert r.code == 2 and r.err.count("\n") == 1 and "/proc" in r.err
