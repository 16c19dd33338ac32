"""Without --global-batch the planner runs each layout at the smallest batch its DP allows (the
smallest multiple of DP holding 512 sequences), split by the micro-batches dividing each
replica's share (docs/guide/plan.md). A search that also took the powers of two (each at the
rule's rounded-up batch) was tried and reverted this round: at 125,000 nodes it picked
2,000,000 sequences a step where DP alone needs 62,500."""

from __future__ import annotations


def test_each_layout_runs_the_smallest_batch_its_dp_allows(run):
    # 512 DGX-H100 = 4,096 GPUs; every DP divides 4,096 and is >= 512 at TP <= 8, so the rule's
    # batch is DP itself (one sequence a replica) and the micro-batch is 1
    d = run("plan", "llama70b", "--node", "dgx-h100", "--nodes", 512, "--format",
            "json").json()
    r = d["recommended"]
    assert r["global_batch"] == r["dp"] and r["micro_batch"] == 1


def test_a_given_batch_is_split_by_every_micro_batch_dividing_its_share(run):
    # --global-batch 1024 at DP 512 (TP 8): a share of 2, so micro-batch 2 is searched (the
    # layout docs/guide/plan.md names: 4,444,293 tokens/s) and `step` reproduces the pick
    d = run("plan", "llama70b", "--node", "dgx-h100", "--nodes", 512, "--tp", 8, "--pp", 1,
            "--global-batch", 1024, "--format", "json").json()
    r = d["recommended"]
    assert r["global_batch"] == 1024 and r["micro_batch"] in (1, 2)
    s = run("step", "llama70b", "--node", "dgx-h100", "--nodes", 512, "--tp", 8, "--zero",
            r["zero"], "--micro-batch", r["micro_batch"], "--global-batch", 1024,
            "--recompute", r["recompute"], "--offload", r["offload"], "--framework",
            r["framework"].split(",")[0], "--format", "json").json()
    assert abs(s["step_time_s"] / r["step_time_s"] - 1) < 1e-9


def test_a_refused_micro_batch_says_how_to_run_it(run):
    # `plan llama-2-7b --micro-batch 3` (no layout: DP's share of the rule's batch is 64 at DP
    # 8, which 3 does not divide) named TP's rule, which TP 8 meets, and not the way out
    r = run("plan", "llama-2-7b", "--micro-batch", 3)
    assert r.code == 2 and "TP must divide" not in r.err
    assert "give --global-batch to run a larger micro-batch" in r.err
    assert run("plan", "llama-2-7b", "--micro-batch", 3, "--global-batch", 24).code == 0
