"""Node-limited routing (Assumptions.moe_max_nodes, comm.node_limited_cross_share): a token whose
experts span at most M of the EP group's nodes crosses the network at most once to each of them
under a deduplicating dispatcher (DeepSeek-V3 arXiv 2412.19437 sections 2.1.2 and 3.2.2), and NeMo
AutoModel's benchmark gate puts every token's experts on one node (M = 1)."""

import pytest

from optimus_calc.catalog import load
from optimus_calc.equations import compiled as eq
from optimus_calc.public_cases import public_rows

DSV3 = ("step", "deepseek-v3", "--node", "dgx-h100", "--nodes", "32", "--pp", "4",
        "--interleave", "8", "--ep", "64", "--zero", "1", "--micro-batch", "1",
        "--global-batch", "512", "--seq-len", "4096", "--framework", "torchtitan",
        "--recompute", "full", "--moe-dispatcher", "deepep", "--format", "json")


def test_the_share_by_hand():
    # DeepSeek-V3, top 8, EP 64 over 8 nodes (m = 8 of n = 64 on each): at M = 1 a token's
    # one node is another with probability 56/64, one copy of its 8 crosses: 56 / 64 / 8
    assert eq.comm__node_limited_cross_share(M_r=1, N=8, k=8, m=8, n=64) == pytest.approx(0.109375)
    # at M = 4 (DeepSeek-V3's own limit): 4 x 56/64 = 3.5 other nodes chosen, each reached
    # with probability 1 - (3/4)^8 = 0.899887: 3.149605 copies of 8 = 0.393701
    assert eq.comm__node_limited_cross_share(M_r=4, N=8, k=8, m=8, n=64) == pytest.approx(
        3.5 * (1 - 0.75 ** 8) / 8, rel=1e-12)
    assert eq.comm__node_limited_cross_share(M_r=4, N=8, k=8, m=8, n=64) == pytest.approx(
        0.393701, abs=1e-6)
    # at M = N = 8, and above, it is the unlimited share: 7 (1 - (7/8)^8) / 8 = 0.574342
    for limit in (8, 1e6):
        assert eq.comm__node_limited_cross_share(M_r=limit, N=8, k=8, m=8, n=64) == \
            pytest.approx(7 * (1 - (7 / 8) ** 8) / 8, rel=1e-12)


def test_the_limit_moves_only_a_deduplicating_dispatcher_below_the_groups_nodes(run):
    # DeepSeek-V3's own group-limited routing already limits it to 4 nodes
    # (tests/test_group_limited_routing.py): 8, the group's nodes, changes nothing
    base = run(*DSV3).json()
    one = run(*DSV3, "--assume", "moe_max_nodes=1").json()
    eight = run(*DSV3, "--assume", "moe_max_nodes=8").json()
    nccl = run(*DSV3[:-4], "--moe-dispatcher", "alltoall", "--assume", "moe_max_nodes=1",
               "--format", "json").json()
    nccl0 = run(*DSV3[:-4], "--moe-dispatcher", "alltoall", "--format", "json").json()
    assert eight["ep_comm_s"] == base["ep_comm_s"]
    assert nccl["ep_comm_s"] == nccl0["ep_comm_s"]  # NCCL's all-to-all sends every copy
    # only the network term moves (the NVLink term and the latencies stay): per all-to-all
    # (0.393701 - 0.109375) x z / B_g with z = 4,096 tokens x 7,168 x 8 copies x 2 bytes =
    # 469,762,048 bytes and B_g = one ConnectX-7, 400 Gb/s = 50 GB/s x 0.9 = 45e9 bytes/s:
    # 2.9682 ms; the stage's 16 MoE layers x 8 micro-batches x 6 all-to-alls (dispatch and
    # combine, forward, backward and full recomputation's forward again) = 768: 2.2796 s
    per = (3.5 * (1 - 0.75 ** 8) / 8 - 7 / 64) * 469_762_048 / 45e9
    assert per == pytest.approx(2.9682e-3, rel=1e-4)
    assert base["ep_comm_s"] - one["ep_comm_s"] == pytest.approx(768 * per, rel=1e-4)


@pytest.mark.parametrize("value", ["0.5", "1.5", "0", "1e7"])
def test_a_limit_that_is_not_a_whole_number_of_nodes_is_refused(run, value):
    r = run(*DSV3, "--assume", f"moe_max_nodes={value}")
    assert r.code == 2 and "moe_max_nodes" in r.err and len(r.err.strip().splitlines()) == 1


def test_a_dense_model_refuses_it(run):
    r = run("step", "llama-3-8b", "--assume", "moe_max_nodes=2")
    assert r.code == 2 and "dense" in r.err and "moe_max_nodes" in r.err
    # the no-limit default typed (a profile listing every assumption) is no limit: accepted
    assert run("step", "llama-3-8b", "--assume", "moe_max_nodes=1000000").code == 0


def test_a_group_that_straddles_racks_never_crosses_more_than_unlimited(run):
    # EP 32 on 72-GPU racks (topology.placement): 8 ranks on one rack, 24 on the next (N = 2).
    # At M = 1 a token crosses with probability 24/32, one copy of 8: 0.75 / 8 = 0.09375 of
    # the buffer against the unlimited 1 - (8/32)^8 over 8 = 0.124998; the even draw's form
    # at M = 2 would be 2 x 0.75 x (1 - 0.5^8) / 8 = 0.187, above it, and is capped: M = 2 is
    # the unlimited time
    base = ("step", "qwen3-235b-a22b", "--node", "gb200-nvl72", "--nodes", "4", "--ep", "32",
            "--tp", "1", "--pp", "1", "--zero", "1", "--framework", "megatron",
            "--moe-dispatcher", "hybridep", "--format", "json")
    free = run(*base).json()["ep_comm_s"]
    one = run(*base, "--assume", "moe_max_nodes=1").json()["ep_comm_s"]
    two = run(*base, "--assume", "moe_max_nodes=2").json()["ep_comm_s"]
    assert two == free and one < free
    assert eq.comm__node_limited_cross_share(M_r=1, N=2, k=8, m=8, n=32) == pytest.approx(0.09375)
    # the even form at M = 2 (2 x 0.75 x (1 - 0.5^8) / 8 = 0.187) capped at the unlimited share
    assert eq.comm__node_limited_cross_share(M_r=2, N=2, k=8, m=8, n=32) == pytest.approx(
        (1 - 0.25 ** 8) / 8, rel=1e-12)
    assert eq.comm__dedup_cross_share(k=8, m=8, n=32, N=2) == pytest.approx(
        (1 - 0.25 ** 8) / 8)


def test_the_planners_layouts_are_steps_layouts(run):
    # a plan over EP 16 (2 nodes: the limit of 4 does not bind), 64 and 128 (8 and 16 nodes:
    # it binds) evaluates them in one batch; each candidate's time is `step`'s on its layout
    d = run("plan", "qwen3-30b-a3b", "--node", "dgx-h100", "--nodes", "16", "--ep",
            "16,64,128", "--tp", "1", "--pp", "1", "--moe-dispatcher", "deepep", "--framework",
            "megatron", "--assume", "moe_max_nodes=4", "--top", "30", "--format", "json").json()
    cands = d["candidates"]
    assert {c["ep"] for c in cands} == {16, 64, 128}
    for ep in (16, 64, 128):
        c = next(c for c in cands if c["ep"] == ep)
        lay = ("step", "qwen3-30b-a3b", "--node", "dgx-h100", "--nodes", "16", "--tp", "1",
               "--pp", "1", "--dp", c["dp"], "--ep", ep, "--zero", c["zero"], "--micro-batch",
               c["micro_batch"], "--global-batch", c["global_batch"], "--recompute",
               c["recompute"], "--interleave", c["interleave"],
               "--sp" if c["sequence_parallel"] else "--no-sp", "--moe-dispatcher", "deepep",
               "--framework", "megatron", "--format", "json")
        s = run(*lay, "--assume", "moe_max_nodes=4")
        assert s.code == 0, s.err
        assert s.json()["step_time_s"] == pytest.approx(c["step_time_s"], rel=1e-9), ep
        # EP 16 spans 2 nodes, under the limit: the unlimited time; EP 64 and 128 are faster
        free = run(*lay).json()["ep_comm_s"]
        assert (s.json()["ep_comm_s"] == free) if ep == 16 else (s.json()["ep_comm_s"] < free)


def test_automodels_moe_rows_route_each_token_to_one_node():
    # FakeBalancedGate: token t to experts 8t ... 8t + 7 (mod the count); a node holds 32
    # (DeepSeek-V3, 256 / EP 64 x 8) or 96 (Kimi-K2, 384 / EP 32 x 8) experts, multiples of 8
    rows = [r for r in public_rows() if r.source.startswith("NVIDIA-NeMo/Automodel")
            and r.ep > 1]
    assert len(rows) == 4 and all(dict(r.assume) == {"moe_max_nodes": 1.0} for r in rows)
    # the gate's indices (arange(tokens * k).view(-1, k) % experts), experts in order over the
    # EP ranks (ExpertParallel shards dimension 0: layers.py L426-429 @ 89e3a9fdd), EP the
    # innermost mesh dimension (fsdp2.py L251-264), 8 ranks a node: every token of a 4,096-token micro-batch on one node, and the
    # tokens spread over the nodes within 2% (balanced; exactly on DeepSeek-V3's 8 nodes, and
    # Kimi-K2's 4,096 x 8 / 384 is not a whole number of cycles: 1,020-1,032 a node)
    for experts, ep, k in ((256, 64, 8), (384, 32, 8)):
        per_node = experts // ep * 8
        nodes = [{(t * k + j) % experts // per_node for j in range(k)} for t in range(4096)]
        assert all(len(s) == 1 for s in nodes)
        counts = [sum(s == {i} for s in nodes) for i in range(ep // 8)]
        assert max(counts) <= 1.02 * min(counts)


def test_megatron_bridges_h100_deepseek_row_routes_to_four_nodes():
    # DeepSeekV3Provider: 8 groups of 32 experts, 4 a token (deepseek_provider.py L178-179 @
    # v0.1.0rc4); at EP 64 over 8 DGX H100 (4 experts a GPU) a group is a node: M = 4
    (row,) = [r for r in public_rows() if r.label.startswith("H100 DeepSeek-V3 FP8 TP2 PP8")]
    # the model's own routing gives it (comm.routing_node_limit), nothing typed for the row
    assert "moe_max_nodes" not in dict(row.assume) and row.dispatcher == "deepep"
    m = load().get(row.model, "model")
    assert (m.router_groups, m.router_group_topk) == (8, 4)
    assert (256 // 8) == (256 // row.ep) * 8  # a group's experts are one node's
    # EP 64 at stride 1 (the row's ETP 1): blocks of 64 ranks, 8 whole nodes: tiled (T_n = 1)
    assert eq.comm__routing_node_limit(G_r=8, M_a=1e6, N=row.ep // 8, T_n=1, g_r=4) == 4
