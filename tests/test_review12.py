"""Defects found by reading the product cold (branch review12): each test pins the corrected
behaviour."""

from __future__ import annotations

import csv
import io

import pytest


def _row(cands, **want):
    return next(c for c in cands if all(c[k] == v for k, v in want.items()))


def _step(run, model, *args):
    return run("step", model, *args, "--format", "json").json()


def test_plan_times_megatron_sp_off_rows_without_tp_comm_overlap(run):
    # Megatron-LM's --tp-comm-overlap asserts --sequence-parallel (arguments.py L1441-1442,
    # frameworks/megatron._tp_comm_overlap): `step --no-sp` exposes the TP all-reduces. The
    # planner applied the profile once, at the default SP on, so its SP-off rows kept
    # tp_overlap = 1: 7.6735 s here instead of step's 7.8683 s (0.1948 s of TP hidden).
    args = ("--node", "dgx-h100", "--framework", "megatron", "--tp", "2", "--zero", "1",
            "--global-batch", "64")
    plan = run("plan", "llama-3-8b", *args, "--offloads", "none", "--recompute", "none",
               "--micro-batch", "1", "--pp", "1", "--top", "2", "--format", "json").json()
    cands = plan["candidates"]
    off = _row(cands, sequence_parallel=False)
    on = _row(cands, sequence_parallel=True)
    nosp = _step(run, "llama-3-8b", *args, "--no-sp")
    sp = _step(run, "llama-3-8b", *args)
    # SP off, --tp-comm-overlap cannot apply: the TP traffic is what the flag off exposes
    bare = _step(run, "llama-3-8b", *args, "--no-sp", "--no-tp-comm-overlap")
    assert nosp["breakdown"]["tp_comm_s"] == bare["breakdown"]["tp_comm_s"] > 0
    assert sp["breakdown"]["tp_comm_s"] == 0.0
    assert off["step_time_s"] == pytest.approx(nosp["step_time_s"], rel=1e-9)
    assert on["step_time_s"] == pytest.approx(sp["step_time_s"], rel=1e-9)
    # one profile still (Megatron-LM's), searched in two parts
    assert plan["profiles"] == 1 and plan["evaluated"] == 2


def test_plan_times_full_recompute_rows_without_megatron_ep_overlap(run):
    # --overlap-moe-expert-parallel-comm is refused with full recompute (transformer_config.py
    # L3021-3023, frameworks/megatron._ep_comm_overlap): step exposes the all-to-alls (1.4706 s
    # here). The planner hid them on its full-recompute rows: 6.016 s instead of 7.487 s.
    lay = ("--node", "dgx-h100", "--nodes", "4", "--framework", "megatron",
           "--overlap-moe-expert-parallel-comm", "--ep", "8", "--tp", "1", "--pp", "1")
    plan = run("plan", "qwen3-30b-a3b", *lay, "--recompute", "full", "--zero", "2",
               "--offloads", "none", "--micro-batch", "8", "--top", "1",
               "--format", "json").json()
    c = plan["recommended"]
    assert (c["dp"], c["recompute"], c["global_batch"]) == (32, "full", 512)
    st = _step(run, "qwen3-30b-a3b", *lay, "--zero", "2", "--micro-batch", "8",
               "--recompute", "full")
    # refused with full recompute, the flag leaves the all-to-alls as exposed as without it
    off = _step(run, "qwen3-30b-a3b", *[a for a in lay if a != "--overlap-moe-expert-parallel-"
                                         "comm"], "--zero", "2", "--micro-batch", "8",
                "--recompute", "full")
    assert st["breakdown"]["ep_comm_s"] == off["breakdown"]["ep_comm_s"] > 0
    assert c["step_time_s"] == pytest.approx(st["step_time_s"], rel=1e-9)
    assert c["step_time_s"] == pytest.approx(off["step_time_s"], rel=1e-9)


def test_compare_json_and_csv_name_the_layout_the_table_shows(run):
    # compare's defaults are not step's: without layout options TP = the node's GPUs (8 divides
    # llama-3-70b's 64 heads), ZeRO-3 and selective recompute. The table's header said
    # "TP=8 PP=1 DP=8, ZeRO-3" and "recompute selective"; JSON and CSV said neither, so a
    # script reading them could not rebuild the layout (step with the same flags gives TP 1).
    args = ("compare", "llama70b", "--node", "dgx-h100", "--nodes", "8")
    d = run(*args, "--format", "json").json()
    # etp null: a dense model, whose layout copies into step without --etp (round 17)
    assert d["layout"] == {"tp": 8, "pp": 1, "dp": 8, "cp": 1, "ep": 1, "etp": None, "zero": 3,
                           "interleave": 1}
    assert (d["training"]["recompute"], d["training"]["micro_batch"]) == ("selective", 1)
    rows = list(csv.DictReader(io.StringIO(run(*args, "--format", "csv").out)))
    assert len(rows) == len(d["strategies"])
    for row in rows:
        assert (row["tp"], row["dp"], row["zero"], row["recompute"]) == ("8", "8", "3",
                                                                         "selective")
    # the no-offload row is step's figure for that layout
    st = run("step", "llama70b", "--node", "dgx-h100", "--nodes", "8", "--tp", "8", "--zero",
             "3", "--recompute", "selective", "--format", "json").json()
    assert d["strategies"][0]["step_time_s"] == pytest.approx(st["step_time_s"], rel=1e-12)


def test_compare_help_shows_no_default_it_does_not_use(run):
    # `compare --help` said "--tp [default: 1]", "--zero [default: 0]" and "--recompute
    # [default: none]" (the options shared with step) above a description saying it uses TP =
    # the node's GPUs, ZeRO-3 and selective recomputation; step's help keeps its defaults
    text = " ".join(run("compare", "--help").out.split())
    assert "ZeRO-3 and selective recomputation" in text
    for opt in ("--tp INTEGER RANGE [1<=x<=1000000]", "--zero INTEGER RANGE ZeRO stage 0-3. "
                "[0<=x<=3]", "--recompute [none|selective|full] Activation recomputation. --sp"):
        assert opt in text
    assert "--tp INTEGER RANGE [default: 1; 1<=x<=1000000]" in " ".join(
        run("step", "--help").out.split())


def test_sweep_rows_name_the_physics_profile_that_timed_them(run):
    # sweep searches each framework's physics profile (--framework each, the default) but its
    # rows said neither the framework nor the expert TP: mixtral-8x7b's winner on one DGX H100
    # is timed with DeepSpeed's profile (ZeRO-2, CPU offload: DeepSpeed moves the bf16
    # gradients off, Megatron-LM keeps fp32 ones on the GPU), so `step` without --framework
    # gave another number for the row's layout
    d = run("sweep", "--models", "mixtral-8x7b", "--node", "dgx-h100", "--nodes", "1",
            "--format", "json").json()
    row = d["rows"][0]
    assert row["framework"] == "deepspeed, megatron-deepspeed"
    assert (row["tp"], row["ep"], row["etp"], row["zero"], row["offload"],
            row["offload_params"]) == (1, 4, 1, 2, "cpu", False)
    args = ("step", "mixtral-8x7b", "--node", "dgx-h100", "--tp", "1", "--ep", "4",
            "--zero", "2", "--offload", "cpu", "--micro-batch", str(row["micro_batch"]),
            "--recompute", row["recompute"], "--format", "json")
    timed = run(*args, "--framework", "deepspeed").json()
    assert row["step_time_s"] == pytest.approx(timed["step_time_s"], rel=1e-12)
    neutral = run(*args).json()
    assert abs(neutral["step_time_s"] / row["step_time_s"] - 1) > 1e-3


def test_plan_html_of_a_neutral_search_times_the_layout_as_its_table(run, tmp_path):
    # `plan --framework any` times every layout with framework-neutral parameters, but its
    # HTML page rebuilt the recommended layout under the profile of the first framework that
    # runs it (the row's "framework" lists them): here Megatron-LM's, whose --tp-comm-overlap
    # hides the TP communication, so the page's step breakdown said 128.6562 s below a table
    # saying 155.42 s, and named the Megatron-LM profile
    args = ("plan", "llama70b", "--node", "dgx-h100", "--nodes", "4", "--framework", "any",
            "--tp", "8", "--pp", "4", "--interleave", "2", "--top", "1")
    rec = run(*args, "--format", "json").json()["recommended"]
    assert rec["framework"] == "megatron, torchtitan"  # who runs it, not whose physics
    page = tmp_path / "plan.html"
    assert run(*args, "--format", "html", "-o", str(page)).code == 0
    text = page.read_text()
    assert f"{rec['step_time_s']:.4f}" in text and "128.6562" not in text
    assert "framework-neutral parameters" in text
    assert "Megatron-LM profile (--framework megatron)" not in text


@pytest.mark.parametrize("argv, message", [
    (("optimizer-step", "--params", "-70B", "--device", "h100"), "--params '-70B' must be > 0"),
    (("step", "llama-3-8b", "--tokens", "-2T"), "--tokens '-2T' must be > 0"),
    (("comm", "all-reduce", "--size", "-1"), "--size '-1' must be > 0"),
    (("comm", "all-reduce", "--sizes", "-1KB..1GB"), "--sizes '-1KB' must be > 0"),
    # not a number with or without its sign: as before
    (("comm", "all-reduce", "--size", "-x"), "--size '-x' is not a size"),
    (("optimizer-step", "--params", "-", "--device", "h100"), "--params '-' is not a number"),
])
def test_a_negative_count_or_size_is_named_negative(run, argv, message):
    # "-70B" was "not a number; use e.g. 70e9, 70B, 302M" although it is one: the suggestion
    # repeated the user's own spelling; 0 already said "must be > 0"
    r = run(*argv)
    assert r.code == 2 and r.err.count("\n") == 1
    assert r.err.startswith("error: " + message)


def test_gpu_fraction_applies_to_the_superchip_offload_only(run):
    # --gpu-fraction was taken and ignored without --offload superchip (its siblings
    # --smartnic, --smartnics-per-node, --no-spill are refused off their target)
    r = run("step", "llama-3-8b", "--offload", "cpu", "--zero", "1", "--gpu-fraction", "0.5")
    assert r.code == 2 and r.err == ("error: --gpu-fraction applies to --offload superchip "
                                     "(got --offload cpu)\n")
    sc = ("step", "llama-3-8b", "--node", "gh200", "--offload", "superchip", "--format", "json")
    default, given = run(*sc).json(), run(*sc, "--gpu-fraction", "0.1").json()
    assert default["step_time_s"] == given["step_time_s"]  # the default is still 0.1
    half = run(*sc, "--gpu-fraction", "0.5").json()
    # half the Adam state (12 bytes/param) on the GPU instead of a tenth: 0.4 x 12 x 8.03e9
    # bytes = 38.55 GB more, x 1.05 for the allocator's fragmentation (assumption 0.05)
    assert half["gpu_memory_bytes"] - default["gpu_memory_bytes"] == pytest.approx(
        0.4 * 12 * 8.030261248e9 * 1.05, rel=1e-6)
    # compare and breakeven evaluate every target: the value goes to the superchip row
    assert run("compare", "llama-3-8b", "--node", "gh200", "--gpu-fraction", "0.5").code == 0


@pytest.mark.parametrize("seq, cp, extra, runs", [
    # Megatron-LM scatters the embedding's output over TP along the sequence
    # (_split_along_first_dim asserts dim_size % world_size == 0): 4,097 tokens over TP 2
    (4097, 1, (), False),
    (4097, 1, ("--no-sp",), True),  # no sequence parallelism: no split
    (4096, 1, (), True),
    # with CP each rank holds s / CP tokens, split over TP: 4,100 / 2 = 2,050 = 2 x 1,025
    (4100, 2, (), True),
    # 4,098 / 2 = 2,049 is odd, but 4,098 is no multiple of 2 x CP = 4 either (MG_CP_SEQ)
    (4098, 2, (), False),
])
def test_megatron_refuses_a_sequence_tp_does_not_split(run, seq, cp, extra, runs):
    d = run("step", "llama-3-8b", "--tp", "2", "--cp", str(cp), "--seq-len", str(seq), *extra,
            "--format", "json").json()
    verdict = d["frameworks"]["megatron"]
    assert (verdict == "runs") is runs, verdict
    if not runs and cp == 1:
        assert verdict.startswith("Megatron-LM: sequence parallelism splits each CP rank's "
                                  "sequence over TP")


def test_a_dense_rows_layout_copies_into_step(run):
    # plan's CSV gave a dense model's rows etp = TP (8), and `step ... --etp 8` refuses a dense
    # model: etp is empty where EP is 1 and --etp was not given (report/common.layout_data)
    import csv
    import io
    text = run("plan", "llama-3-8b", "--nodes", "2", "--format", "csv").out
    row = next(csv.DictReader(io.StringIO(text)))
    assert row["ep"] == "1" and row["etp"] == ""
    flags = [f"--{k}" if k != "micro_batch" else "--micro-batch" for k in ("tp", "pp", "ep")]
    args = [x for k, f in zip(("tp", "pp", "ep"), flags) for x in (f, row[k])]
    assert run("step", "llama-3-8b", "--nodes", "2", *args, "--format", "json").code == 0
    # with an expert grid (EP > 1) the experts' TP is shown: TP by default
    moe = run("step", "mixtral-8x7b", "--node", "dgx-h100", "--tp", "2", "--ep", "4",
              "--format", "json").json()["layout"]
    assert (moe["ep"], moe["etp"]) == (4, 2)
