"""DeepEP / HybridEP on an EP group that straddles two nodes (review11): comm.dedup_cross_share
counts the group's other nodes as it spans them (topology.placement), not as n / m equal
nodes, which only holds where the group tiles its nodes."""

import pytest

from optimus_calc.equations import compiled as eq

GB200 = ("step", "qwen3-235b-a22b", "--node", "gb200-nvl72", "--tp", "1", "--pp", "1",
         "--zero", "1", "--framework", "megatron", "--format", "json")


def test_a_straddling_group_crosses_to_its_one_other_node_once():
    # EP 32 on 72-GPU racks: the group of ranks 64-95 has 8 ranks on rack 0 and 24 on rack 1
    # (placement: m = 8, N = 2). A token of a rank on rack 0 picks top-8 of 32 ranks' experts,
    # 24/32 of them on rack 1: it crosses once unless all 8 stay home, 1 - (8/32)^8 =
    # 0.99998474 copies of the 8 in the buffer: 0.12499809 of it. The tiled formula
    # (n/m - 1)(1 - (1 - m/n)^k)/k took 32/8 = 4 nodes: 3 x (1 - 0.75^8) / 8 = 0.33745763
    assert eq.comm__dedup_cross_share(k=8, m=8, n=32, N=2) == pytest.approx(
        (1 - 0.25 ** 8) / 8, rel=1e-12)
    assert eq.comm__dedup_cross_share(k=8, m=8, n=32, N=2) == pytest.approx(0.12499809, rel=1e-6)
    # EP 64 on 72: ranks 64-127 are 8 on rack 0, 56 on rack 1: (1 - (8/64)^8) / 8 = 0.12500000
    assert eq.comm__dedup_cross_share(k=8, m=8, n=64, N=2) == pytest.approx(0.125, rel=1e-6)
    # a group that tiles (N = n / m) is unchanged: EP 64 over 8 DGX, 7 (1 - (7/8)^8) / 8
    assert eq.comm__dedup_cross_share(k=8, m=8, n=64, N=8) == pytest.approx(
        7 * (1 - (7 / 8) ** 8) / 8, rel=1e-12)
    # never above NCCL's pairwise share (n - m) / n on the same placement (56/64, 24/32, 2/3)
    for m, n, N in ((8, 64, 2), (8, 32, 2), (1, 3, 2), (8, 64, 8), (8, 16, 2)):
        assert eq.comm__dedup_cross_share(k=8, m=m, n=n, N=N) <= \
            eq.comm__pairwise_cross_share(m=m, n=n)


def test_hybridep_on_ep32_over_four_nvl72_racks(run):
    # Qwen3-235B-A22B (hidden 4096, top-8, 94 MoE layers), EP 32 on 4 x 72 GB200 (DP 288):
    # z = 4096 tokens x 4096 x 8 x 2 B = 268,435,456 bytes; 94 layers x 2 micro-batches
    # (512 / 288 rounded to 576 sequences) x 4 all-to-alls = 752 a step. One all-to-all:
    # 31 x 1.125e-6 s (latency) + 7/32 z x 1.29199e-12 s/B (NVLink) + x z / 45e9 (the NIC):
    # x = 0.12499809 (above) gives 3.4875e-5 + 7.5866e-5 + 7.45640e-4 = 8.56381e-4 s,
    # 752 x that = 0.64400 s; the tiled formula's x = 0.33745763 gave 2.12376e-3 s, 1.5971 s
    hyb = run(*GB200, "--nodes", "4", "--ep", "32", "--moe-dispatcher", "hybridep").json()
    assert hyb["ep_comm_s"] == pytest.approx(0.64400, rel=2e-4)
    nccl = run(*GB200, "--nodes", "4", "--ep", "32").json()
    # NCCL sends 24/32 of z across: 752 x (1.10741e-4 + 0.75 z / 45e9) = 3.4477 s
    assert nccl["ep_comm_s"] == pytest.approx(3.4477, rel=2e-4)
    # the difference is the NIC term alone: 752 x (0.75 - 0.12499809) z / 45e9
    assert nccl["ep_comm_s"] - hyb["ep_comm_s"] == pytest.approx(
        752 * (0.75 - (1 - 0.25 ** 8) / 8) * 268435456 / 45e9, rel=1e-6)


def test_a_pipeline_stage_straddling_two_nodes_sends_over_the_nic(run):
    # llama-3-70b TP 8 PP 3 on 2 nodes of 12 GPUs (--gpus-per-node 12): stage 1 (ranks 8-15)
    # straddles the boundary, so ranks 4-7 of stage 0 send to 12-15 on the other node. One
    # hop: micro-batch 1 x seq 8192 x hidden 8192 x 2 B / TP 8 (SP) = 16,777,216 B; over a
    # ConnectX-7 (3 us + z / 45 GB/s) 3.758272e-4 s, on NVLink (1 us + z x 2.71003e-12)
    # 4.64667e-5 s; 512 micro-batches x 2 (forward, backward) = 1,024 hops a step:
    # 0.384847 s (it was priced on NVLink: 0.0475819 s)
    args = ("step", "llama-3-70b", "--node", "dgx-h100", "--nodes", "2", "--gpus-per-node",
            "12", "--tp", "8", "--pp", "3", "--dp", "1", "--zero", "1", "--format", "json")
    assert run(*args).json()["pp_comm_s"] == pytest.approx(1024 * (3e-6 + 16777216 / 45e9),
                                                           rel=1e-6)
    # the same pipeline inside one 24-GPU node stays on NVLink
    one = run(*args[:5], "1", "--gpus-per-node", "24", *args[8:]).json()
    assert one["pp_comm_s"] == pytest.approx(1024 * (1e-6 + 16777216 * 2.71003e-12), rel=1e-5)
