"""Issue 37, "Properties over everything a user can type": seeded random commands run in-process
(the CLI's own `main`, JSON output), each checked against properties that hold for any input:

- every number in the JSON is finite and not negative (times, bytes, FLOPs, MFU, days, costs);
- exposed DP communication <= its total; MFU <= 1;
- each error range contains its value;
- a faster link, NIC or GPU (a profile raising its efficiency to 1) never gives a slower step;
- the plan's pick, run again with `step` and `memory`, gives the plan's step time and memory.

OPTIMUS_CALC_PROPERTY_CASES sets the number of random commands (default 200, a few seconds);
e.g. OPTIMUS_CALC_PROPERTY_CASES=5000 for a long run. The seed is fixed: a failure names its
command line."""

from __future__ import annotations

import math
import os
import random
from pathlib import Path

import pytest

from test_accounting import random_step_argv

CASES = int(os.environ.get("OPTIMUS_CALC_PROPERTY_CASES", "200"))
MLA = str(Path(__file__).parent / "data" / "hf" / "deepseek_v2")   # a model with MLA attention
RANGED = ("step_time_s", "tokens_per_s", "mfu", "tflops_per_gpu", "gpu_memory_bytes")


def argv_of(rng: random.Random) -> list[str]:
    argv = random_step_argv(rng)
    if rng.random() < 0.1:
        argv[1] = MLA
    if rng.random() < 0.3:
        argv += ["--tokens", rng.choice(["1B", "15T"]), "--gpu-hour-price", "2.5"]
    return argv


def numbers(obj, path=""):
    """(path, value) of every number in a JSON document."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from numbers(v, f"{path}.{k}")
    elif isinstance(obj, list):
        for v in obj:
            yield from numbers(v, f"{path}[]")
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        yield path, obj


def check_numbers(doc, argv):
    for path, v in numbers(doc):
        assert math.isfinite(v), (path, v, argv)
        assert v >= 0, (path, v, argv)


def check_ranges(doc, argv):
    for f in RANGED:
        lo, hi = doc.get(f"{f}_low"), doc.get(f"{f}_high")
        if lo is None or doc.get(f) is None:
            continue
        v = doc[f]
        assert lo <= v * (1 + 1e-12) and v <= hi * (1 + 1e-12), (f, lo, v, hi, argv)


def runnable(run, rng, command="step", n=CASES):
    """Up to ``n`` random commands of ``command`` that run (the generator's refused layouts,
    exit 2, are skipped; anything else fails)."""
    for _ in range(n):
        argv = argv_of(rng)
        argv[0] = command
        r = run(*argv, "--format", "json")
        assert r.code in (0, 2), (argv, r.code, r.err)
        assert "Traceback" not in r.err, argv
        if r.code == 0:
            yield argv, r.json()


def test_step_json_properties(run):
    ran = 0
    for argv, d in runnable(run, random.Random(37_1)):
        ran += 1
        check_numbers(d, argv)
        check_ranges(d, argv)
        assert d["dp_comm_exposed_s"] <= d["dp_comm_s"] * (1 + 1e-12), argv
        # MFU is stated against the BF16 peak (docs/background/fp8.md): FP8 GEMMs run against
        # a peak twice as high (H100, B200, MI300X datasheets), so an FP8 step can reach 2
        bound = 2 if "fp8" in argv else 1
        assert d["mfu"] <= bound and d["mfu_6n"] <= bound and d["mfu_causal"] <= bound, argv
        assert d["step_time_s"] >= d["compute_s"] * (1 - 1e-12), argv
    assert ran >= CASES // 4


def test_memory_json_properties(run):
    ran = 0
    for argv, d in runnable(run, random.Random(37_2), "memory"):
        ran += 1
        check_numbers(d, argv)
        check_ranges(d, argv)
    assert ran >= CASES // 4


def _faster(tmp_path, cat, argv, what: str):
    """A profile making the node's scale-up link, its NIC or its GPU as fast as it can be."""
    node = cat.get(argv[argv.index("--node") + 1], "node")
    body = {"link": f'[link."{node.intra_link}"]\nefficiency = 1.0\n',
            "nic": f'[nic."{node.nic}"]\nefficiency = 1.0\n',
            "gpu": f'[gpu."{node.gpu}"]\ngemm_eta_max = 1.0\nflash_attention_eta = 1.0\n'
                   "attention_eta = 1.0\n"}[what]
    p = tmp_path / f"{what}.toml"
    p.write_text(body)
    return p


def test_faster_link_nic_or_gpu_never_slower(run, tmp_path, cat):
    ran = 0
    for argv, d in runnable(run, random.Random(37_3), n=max(1, CASES // 4)):
        for what in ("link", "nic", "gpu"):
            r = run(*argv, "--profile", _faster(tmp_path, cat, argv, what), "--format", "json")
            assert r.code == 0, (argv, what, r.err)
            assert r.json()["step_time_s"] <= d["step_time_s"] * (1 + 1e-9), (argv, what)
        ran += 1
    assert ran >= 1


PLAN_MODELS = ["llama-2-7b", "mixtral-8x7b", "qwen3-30b-a3b", "gpt2-xl", MLA]
PLAN_NODES = ["dgx-a100", "dgx-h100", "mi300x-node", "xe8545"]


def test_plan_pick_is_reproduced_by_step_and_memory(run):
    rng = random.Random(37_4)
    checked = 0
    for _ in range(max(3, CASES // 40)):
        model, node = rng.choice(PLAN_MODELS), rng.choice(PLAN_NODES)
        nodes = rng.choice(["1", "2"])
        r = run("plan", model, "--node", node, "--nodes", nodes, "--format", "json")
        assert r.code in (0, 2), (model, node, r.err)
        if r.code:
            continue
        d = r.json()
        check_numbers(d, (model, node))
        check_ranges(d, (model, node))
        rec = d["recommended"]
        if rec is None:
            continue
        check_ranges(rec, (model, node))
        lay = ["--node", node, "--nodes", nodes, "--tp", rec["tp"], "--pp", rec["pp"],
               "--dp", rec["dp"], "--cp", rec["cp"], "--ep", rec["ep"], "--zero", rec["zero"],
               "--offload", rec["offload"], "--interleave", rec["interleave"],
               "--micro-batch", rec["micro_batch"], "--global-batch", rec["global_batch"],
               "--recompute", rec["recompute"], "--sp" if rec["sequence_parallel"] else "--no-sp"]
        lay += ["--offload-params"] if rec["offload_params"] else []
        lay += ["--smartnic", rec["smartnic"]] if rec["smartnic"] else []
        lay += ["--framework", rec["frameworks"][0]] if rec["frameworks"] else []
        s = run("step", model, *lay, "--format", "json")
        m = run("memory", model, *lay, "--format", "json")
        assert s.code == 0 and m.code == 0, (lay, s.err, m.err)
        assert s.json()["step_time_s"] == pytest.approx(rec["step_time_s"], rel=1e-9), lay
        assert s.json()["gpu_memory_bytes"] == pytest.approx(rec["gpu_memory_bytes"], rel=1e-9)
        checked += 1
    assert checked >= 1
