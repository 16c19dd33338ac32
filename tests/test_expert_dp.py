"""The expert-DP group's collectives on its own placement (evaluate/work._expert_dp_group).

Megatron-core orders expert ranks "tp-ep-dp-pp" (parallel_state.initialize_model_parallel):
with EP 8 filling an 8-GPU node, the expert-DP group holds one GPU per node, and its ring
crosses every node through that GPU's own NIC. It was timed on the whole DP group's ring
(all eight NICs of the node), 8x too fast: Megatron-Bridge's B200 gpt-oss-120b EP 8 rows came
out 40-48% fast, its EP 64 rows (no expert-DP group) 8-10%."""

import pytest

from optimus_calc.evaluate.topology import group_placed

ARGS = ("step", "gpt-oss-120b", "--node", "dgx-b200", "--nodes", "8", "--micro-batch", "4",
        "--global-batch", "1280", "--seq-len", "4096", "--framework", "megatron", "--zero", "1",
        "--recompute", "selective", "--format", "json")


def test_one_rank_per_node_rides_one_nic(cat):
    from optimus_calc.evaluate.context import resolve_hardware
    hw = resolve_hardware(cat, "dgx-b200", 8)
    # DP 64, 8 ranks per node: the ring gets the node's 8 NICs (capped by NVLink)
    _, b_dp, _ = group_placed(hw, 64, 1)
    # expert-DP 8 ranks 8 apart: one per node, one NIC (dgx-b200: 400 Gb/s ConnectX-7 per GPU,
    # at the catalog's 0.9 efficiency: 50 GB/s x 0.9 = 45 GB/s)
    _, b_x, nodes = group_placed(hw, 8, 8)
    assert int(nodes) == 8
    assert 1 / b_x == pytest.approx(45e9, rel=1e-9)
    assert 1 / b_dp == pytest.approx(8 * 45e9, rel=1e-9)


def test_expert_gradients_and_weights_cross_the_nodes_at_one_nic(run):
    # gpt-oss-120b: 36 layers x 128 experts x 3 x 2880 x 2880 = 114.65e9 expert parameters; EP 8
    # holds 14.34e9 per GPU (the evaluator's 1.43377e10). Bandwidth alone, on the expert-DP
    # ring of 8 nodes at 45 GB/s: the fp32 gradients' reduce-scatter 7/8 x 14.3377e9 x 4 /
    # 45e9 = 1.1152 s and the bf16 weights' all-gather 7/8 x 14.3377e9 x 2 / 45e9 = 0.5576 s:
    # 1.6728 s before the dense part and the latencies (the run: 1.71 s). On the whole DP
    # group's ring it was 0.25 s.
    dp = run(*ARGS, "--ep", "8").json()["dp_comm_s"]
    assert 1.6728 <= dp <= 1.6728 * 1.05
    # EP 64 = DP: every expert on one GPU, nothing of it to reduce or gather; the dense
    # 2.13e9 parameters over 64 ranks only (was 0.045 s with the experts gathered over DP)
    assert run(*ARGS, "--ep", "64").json()["dp_comm_s"] < 0.04


def test_explain_shows_the_expert_reduction_and_gather_apart(run):
    # each has its own scope, so `explain` shows both (the gather, evaluated last, hid the
    # reduction's values): the fp32 expert gradients in 29 buckets, ceil(14.3377e9 x 4 B /
    # 2e9 B) = ceil(28.68), of 14.3377e9 x 4 / 29 = 1.97761e9 B each, reduce-scattered over
    # the 8 ranks (bus factor 7/8); the bf16 weights all-gathered in k_w = 33 pieces of
    # 14.3377e9 x 2 / 33 = 8.68952e8 B
    def values(scope):
        r = run("explain", "comm.nccl_pipelined_time", *ARGS[1:-2], "--ep", "8", "--for", scope,
                "--format", "json")
        assert r.code == 0, r.err
        return r.json()["values"]
    red, gat = values("dp experts"), values("dp experts gather")
    assert red["F"] == 0.875 and red["z"] == pytest.approx(1.97761e9, rel=1e-5)
    assert gat["F"] == 0.875 and gat["z"] == pytest.approx(8.68952e8, rel=1e-5)
