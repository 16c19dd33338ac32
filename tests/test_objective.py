"""The planner ranks by what the user pays for (issue 33): tokens/s, or the time or cost to
train a token budget (which rank the same on a plan's fixed GPUs), or GPU memory. Under the
default batch rule each layout's step carries its own global batch, so the fastest step is not
the fastest training."""

import pytest

# issue 33, measured on the tool before the fix: `plan llama70b --node dgx-h100 --nodes 112`
# recommended TP8 PP2 DP56 ZeRO-1 (the shortest step, 5.74 s for 56 x 10 = 560 sequences) at
# 798,723 tokens/s, while TP4 PP1 DP224 ZeRO-3 (672 sequences a step) trains faster
OLD_PICK_TPS = 798_723


def test_plan_112_nodes_recommends_the_most_tokens_per_s_it_lists(run):
    d = run("plan", "llama70b", "--node", "dgx-h100", "--nodes", 112, "--top", 10,
            "--format", "json").json()
    assert d["objective"] == "throughput"
    rows = d["candidates"]
    rec = d["recommended"]
    assert rec["tokens_per_s"] == max(r["tokens_per_s"] for r in rows)
    assert [r["tokens_per_s"] for r in rows] == sorted((r["tokens_per_s"] for r in rows),
                                                       reverse=True)
    assert rec["tokens_per_s"] > OLD_PICK_TPS
    # tokens/s = global batch x 8192 / step, the global batch the smallest multiple of
    # DP x micro-batch holding 512 sequences (e.g. DP 56, micro-batch 1: 56 x 10 = 560; DP 224:
    # 224 x 3 = 672), so layouts carry different batches and the fastest step need not win
    gb = rec["global_batch"]
    unit = rec["dp"] * rec["micro_batch"]
    assert gb % unit == 0 and gb >= 512 and gb - unit < 512
    assert rec["tokens_per_s"] == pytest.approx(gb * 8192 / rec["step_time_s"], rel=1e-12)


def test_header_says_what_ranked(run):
    text = run("plan", "llama-2-7b", "--nodes", 1).out
    assert "objective: throughput (most tokens/s first, then least GPU memory)" in text
    text = run("plan", "llama-2-7b", "--nodes", 1, "--objective", "memory").out
    assert "objective: GPU memory (least first, then most tokens/s)" in text


def test_sweep_best_throughput_never_falls_as_nodes_grow(run):
    # the sweep: 521k, 775k, 807k, 799k, 1,025k tokens/s when ranked by step time
    rows = run("sweep", "--models", "llama70b", "--node", "dgx-h100", "--nodes",
               "64,96,100,112,128", "--format", "json").json()["rows"]
    tps = [r["tokens_per_s"] for r in rows]
    assert [r["nodes"] for r in rows] == [64, 96, 100, 112, 128]
    assert all(a < b for a, b in zip(tps, tps[1:])), tps
    assert tps[3] > OLD_PICK_TPS


def test_sweep_never_falls_over_consecutive_node_counts(run):
    # every node count from 1 to 24 of an 8B model under the default batch rule
    rows = run("sweep", "--models", "llama-3-8b", "--node", "dgx-h100", "--nodes",
               ",".join(str(n) for n in range(1, 25)), "--format", "json").json()["rows"]
    tps = [r["tokens_per_s"] for r in rows]
    assert len(tps) == 24 and all(a <= b for a, b in zip(tps, tps[1:])), tps


def test_time_and_cost_objectives_state_the_budget_and_rank_as_throughput(run):
    base = ("plan", "llama-2-7b", "--nodes", 2, "--format", "json")
    t = run(*base).json()
    d = run(*base, "--objective", "cost", "--tokens", "1T", "--gpu-hour-price", 2).json()
    assert d["objective"] == "cost" and d["why"].startswith("cheapest to train of")
    assert [c["tokens_per_s"] for c in d["candidates"]] == \
        [c["tokens_per_s"] for c in t["candidates"]]
    rec = d["recommended"]
    # days = 1e12 tokens / tokens/s / 86,400 s; cost = days x 24 h x 16 GPUs x $2
    days = 1e12 / rec["tokens_per_s"] / 86_400
    assert rec["train_days"] == pytest.approx(days, rel=1e-9)
    assert rec["cost_usd"] == pytest.approx(days * 24 * 16 * 2, rel=1e-9)


@pytest.mark.parametrize("args,msg", [
    (("--objective", "time"), "--objective time needs --tokens"),
    (("--objective", "cost", "--tokens", "1T"), "--objective cost needs --gpu-hour-price"),
])
@pytest.mark.parametrize("cmd", ["plan", "sweep"])
def test_time_and_cost_need_their_budget(run, cmd, args, msg):
    target = ("llama-2-7b",) if cmd == "plan" else ("--models", "llama-2-7b")
    r = run(cmd, *target, *args)
    assert r.code == 2 and msg in r.err and "Traceback" not in r.err


@pytest.mark.parametrize("objective", ["throughput", "memory"])
def test_nics_sizes_for_the_layout_its_objective_ranks_first(run, objective):
    rec = run("plan", "llama70b", "--nodes", 2, "--objective", objective,
              "--format", "json").json()["recommended"]
    d = run("nics", "llama70b", "--nodes", 2, "--objective", objective, "--format", "json").json()
    # the recommended row's degrees (etp: null for a dense model in both)
    assert d["layout"] == {k: rec[k] for k in ("tp", "pp", "dp", "cp", "ep", "etp",
                                               "interleave", "zero")}
    r = run("nics", "llama70b", "--nodes", 2, "--objective", "cost")
    assert r.code == 2 and "'cost' is not one of 'throughput', 'memory'" in r.err
