"""The planner searches the batch rule it documents: each layout's global batch is the smallest
multiple of dp x micro-batch holding 512 sequences, as `step` resolves it (a cold review: the
planner fixed the batch at DP's share and searched only micro-batches dividing it). Each test
failed before the fix."""

from __future__ import annotations

from optimus_calc.evaluate.batch import micro_batches, resolve_global_batch
from optimus_calc.specs.training import Training


def test_micro_batch_candidates():
    # a given batch is split exactly: 8 sequences a replica -> 1, 2, 4, 8; the rule adds the
    # powers of two up to 256 (at DP 512 the share is 1: micro-batch 2 runs 2 x 512 = 1,024)
    assert micro_batches(8, rule=False) == [1, 2, 4, 8]
    assert micro_batches(1, rule=True) == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    assert micro_batches(6, rule=True) == [1, 2, 3, 4, 6, 8, 16, 32, 64, 128, 256]
    assert micro_batches(1, rule=True, pinned={2, 3}) == [2, 3]
    assert micro_batches(8, rule=False, pinned={3, 4}) == [4]
    assert int(resolve_global_batch(512, 2, Training(seq_len=8192))) == 1024


def test_plan_finds_the_micro_batch_the_rule_allows(run):
    # 512 DGX-H100, Llama-3-70B: TP 8, ZeRO-2, micro-batch 2 at 1,024 sequences fits and runs
    # (`step ... --tp 8 --zero 2 --micro-batch 2 --framework megatron`: 1.89 s, 4,444,293
    # tokens/s); the planner recommended TP 2, DP 2,048 at 4,014,449 tokens/s
    d = run("plan", "llama70b", "--node", "dgx-h100", "--nodes", 512, "--format",
            "json").json()
    best = d["recommended"] if "recommended" in d else d["rows"][0]
    s = run("step", "llama70b", "--node", "dgx-h100", "--nodes", 512, "--tp", 8, "--zero", 2,
            "--micro-batch", 2, "--framework", "megatron", "--format", "json").json()
    assert s["tokens_per_s"] > 4.4e6
    assert best["tokens_per_s"] >= s["tokens_per_s"] * (1 - 1e-9)
    pinned = run("plan", "llama70b", "--node", "dgx-h100", "--nodes", 512, "--tp", 8, "--pp", 1,
                 "--micro-batch", 2, "--format", "json")
    assert pinned.code == 0, pinned.err


def test_sweep_never_falls_where_the_review_saw_it_fall(run):
    # sweep --node dgx-h100: Qwen3-30B-A3B 816,759 -> 783,127 tokens/s from 9 to 10 nodes
    rows = run("sweep", "--models", "qwen3-30b-a3b", "--node", "dgx-h100", "--nodes", "9,10",
               "--format", "json").json()["rows"]
    tps = [r["tokens_per_s"] for r in rows]
    assert tps[1] >= tps[0] > 8e5
