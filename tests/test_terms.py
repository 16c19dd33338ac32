"""Step-time and memory terms by hand, written to kill the mutants `make mutate` found surviving
(README, "Mutation testing"): each test pins one piece of physics the other tests left free.

Hardware figures (catalog): DGX A100 = 8 x A100-80GB, NVLink 3 300 GB/s x 0.77 = 231 GB/s,
alpha 1 us; 8 x ConnectX-6 200 Gb/s = 25 GB/s x 0.9 = 22.5 GB/s (PCIe 4 x16 31.5 x 0.76 = 23.9
GB/s does not bind), alpha 3 us. DeepSpeed buckets: 5e8 elements (Assumptions).
"""

import math

import pytest


def _json(run, cmd, *args):
    r = run(cmd, *args, "--format", "json")
    assert r.code == 0, r.err
    return r.json()


def _ring(n, alpha, beta, z, k):
    """k buckets of z/k bytes, each a ring reduce-scatter (or all-gather) over n ranks."""
    return k * (n - 1) * alpha + (n - 1) / n * beta * z


@pytest.mark.parametrize("args,n,alpha,B", [
    # TP 8 fills each node: the 2 DP ranks sit on different nodes, one NIC each
    # (rail-optimised: a group of 1 GPU per node gets 1/8 of the node's 8 NICs = 22.5 GB/s);
    # alpha: ring_alpha = (N alpha_e + (n - N) alpha_i) / n = (2 x 3 + 0) / 2 = 3 us
    (("--tp", "8"), 2, 3e-6, 22.5e9),
    # TP 1: 16 DP ranks, 8 per node: the ring is bound by the node's 8 NICs, 180 GB/s
    # (< NVLink 231 GB/s); alpha = (2 x 3 + 14 x 1) / 16 = 1.25 us
    ((), 16, 1.25e-6, 180e9),
])
def test_zero1_dp_traffic_across_nodes_by_hand(run, args, n, alpha, B):
    lay = ("--nodes", "2", "--zero", "1", *args)
    st = _json(run, "step", "llama-2-7b", *lay)
    P = _json(run, "memory", "llama-2-7b", *lay)["per_gpu"]["params"]
    z = 2 * P  # bf16 gradients (reduce-scattered) and weights (all-gathered) of one GPU's shard
    k = math.ceil(z / (5e8 * 2))  # buckets of 5e8 elements
    # ZeRO-1: one reduce-scatter and one all-gather per step (not per micro-batch)
    expected = 2 * _ring(n, alpha, 1 / B, z, k)
    assert st["dp_comm_s"] == pytest.approx(expected, rel=1e-9)
    # (TP 8: P = 842,534,912, k = 2: 4 x 3 us + 0.5 x 4P / 22.5e9 = 0.0749 s)
