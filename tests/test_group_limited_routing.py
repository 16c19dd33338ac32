"""The model's group-limited routing (Model.router_groups / router_group_topk, HF n_group /
topk_group; comm.routing_node_limit): Megatron-LM splits the experts into equal contiguous
groups and takes a token's top-k from its best group_topk groups (moe_utils.py
group_limited_topk L673-725 @ d98e8a6), local experts lie contiguous by EP rank (moe_layer.py
L188-196), so where the groups nest in the EP group's nodes a token reaches at most its groups'
nodes, and a deduplicating dispatcher sends it across the network at most to those."""

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from optimus_calc.catalog import load
from optimus_calc.equations import compiled as eq
from optimus_calc.frameworks.megatron_export import megatron_arg_list
from optimus_calc.hf_import import load_hf_config
from optimus_calc.specs.model import Model
from optimus_calc.specs.training import Layout, Training

HF = Path(__file__).parent / "data" / "hf"
DSV3 = ("step", "deepseek-v3", "--node", "dgx-h100", "--nodes", "32", "--pp", "4",
        "--interleave", "8", "--ep", "64", "--zero", "1", "--micro-batch", "1",
        "--global-batch", "512", "--seq-len", "4096", "--framework", "torchtitan",
        "--recompute", "full", "--moe-dispatcher", "deepep", "--format", "json")


@pytest.mark.parametrize("G, g, N, tiled, nodes", [
    (8, 4, 8, 1, 4),    # DeepSeek-V3 over EP 64 on 8 DGX nodes: a group is a node, 4 of them
    (8, 4, 16, 1, 8),   # EP 128 on 16 nodes: a group fills 2 nodes, 4 groups 8 nodes
    (8, 4, 4, 1, 4),    # EP 32 on 4 nodes: 2 groups a node, 4 groups reach all 4
    (8, 4, 2, 1, 4),    # 2 nodes: at least 2 (the share takes min(limit, N))
    (8, 4, 3, 1, 8),    # 3 nodes do not nest with 8 groups: a group may straddle 2 nodes
    (8, 4, 8, 0, 8),    # EP 64 at stride 8 on 72-GPU racks: blocks straddle racks, 2 a group
    (1, 1, 8, 1, 8),    # no groups: the group's own nodes, no limit
])
def test_the_limit_by_hand(G, g, N, tiled, nodes):
    assert eq.comm__routing_node_limit(G_r=G, M_a=1e6, N=N, T_n=tiled, g_r=g) == nodes
    # the run's limit (--assume moe_max_nodes) binds below it
    assert eq.comm__routing_node_limit(G_r=G, M_a=1, N=N, T_n=tiled, g_r=g) == 1


def test_the_bound_is_never_below_the_worst_token_by_enumeration():
    # Megatron's rank order (topology._straddle): EP group q of block j holds ranks
    # j size stride + q + i stride; EP rank i holds experts [i E/size, (i+1) E/size); group k
    # the experts [k E/G, (k+1) E/G). For every placement of a period of the tiling, the most
    # nodes any g groups cover is at most the limit (a cold review's brute force, round 29,
    # found the untiled NVL72 layouts below it before T_n)
    from itertools import combinations
    import numpy as np
    from optimus_calc.evaluate.topology import _placement, nests
    for gpn, size, stride, G, g, E in [
            (72, 64, 8, 8, 4, 256), (72, 32, 1, 8, 4, 256), (72, 16, 2, 8, 2, 256),
            (8, 64, 1, 8, 4, 256), (8, 128, 2, 8, 4, 256), (16, 32, 4, 4, 1, 256),
            (72, 128, 4, 16, 3, 256), (4, 16, 2, 8, 2, 256),
            # a stride that does not nest in the node: 72-rank blocks of stride 3 tile 8-GPU
            # nodes but hold 3, 3 and 2 of a group (the second review's case, 96 experts)
            (8, 24, 3, 12, 4, 96), (16, 48, 3, 12, 4, 96), (72, 9, 16, 3, 1, 288)]:
        worst = 0
        for j in range(int(np.lcm(gpn, size * stride)) // (size * stride) + 1):
            for q in range(stride):
                node = [(j * size * stride + q + i * stride) // gpn for i in range(size)]
                groups = [{node[e * size // E] for e in range(k * E // G, (k + 1) * E // G)}
                          for k in range(G)]
                worst = max([worst] + [len(set().union(*c)) for c in combinations(groups, g)])
        N = _placement(gpn, np.array([size]), np.array([stride]))[1][0]
        limit = eq.comm__routing_node_limit(G_r=G, M_a=1e6, N=N, g_r=g,
                                            T_n=float(nests(gpn, size, stride)))
        assert min(limit, N) >= worst, (gpn, size, stride, G, g)


def test_a_straddling_rack_layout_is_timed_as_without_groups(run, tmp_path):
    # GB200 NVL72 racks (72 GPUs), TP 8 with EP 64 (experts' TP 8): the EP blocks of 512 ranks
    # straddle racks, so groups are not nodes and the limit (8) does not bind
    cfg = json.loads((HF / "deepseek_v3" / "config.json").read_text())
    (tmp_path / "free.json").write_text(json.dumps({**cfg, "n_group": 1, "topk_group": 1}))
    args = ("--node", "gb200-nvl72", "--nodes", "64", "--tp", "8", "--ep", "64", "--seq-len",
            "4096", "--global-batch", "4608", "--moe-dispatcher", "hybridep", "--format", "json")
    grouped = run("step", "deepseek-v3", *args).json()
    free = run("step", str(tmp_path / "free.json"), *args).json()
    assert grouped["ep_comm_s"] == free["ep_comm_s"]


# DeepSeek-V3, top 8, EP 64 over 8 nodes (m = 8 of n = 64 on each): unlimited, a token's 8
# experts reach 7 (1 - (7/8)^8) other nodes, one copy of 8 each: 0.574342 of the buffer; at 4
# nodes, 4 x 56/64 = 3.5 other nodes chosen, each reached with probability 1 - (3/4)^8: 0.393701
UNLIMITED, LIMITED = 7 * (1 - (7 / 8) ** 8) / 8, 3.5 * (1 - 0.75 ** 8) / 8


def test_deepseek_v3_routes_to_four_nodes_by_its_groups(run):
    assert (UNLIMITED, LIMITED) == pytest.approx((0.574342, 0.393701), abs=1e-6)
    # the catalog's DeepSeek-V3 (config.json n_group 8, topk_group 4): the limit is 4 without
    # --assume, so typing 4 (or 8, the group's nodes: min(8, 4)) changes nothing
    base = run(*DSV3).json()
    assert run(*DSV3, "--assume", "moe_max_nodes=4").json()["ep_comm_s"] == base["ep_comm_s"]
    assert run(*DSV3, "--assume", "moe_max_nodes=8").json()["ep_comm_s"] == base["ep_comm_s"]


def test_against_the_same_model_without_groups(run, tmp_path):
    # the HF config (the catalog's source) as is, and with n_group = topk_group = 1
    cfg = json.loads((HF / "deepseek_v3" / "config.json").read_text())
    (tmp_path / "grouped.json").write_text(json.dumps(cfg))
    (tmp_path / "free.json").write_text(json.dumps({**cfg, "n_group": 1, "topk_group": 1}))
    grouped = run("step", str(tmp_path / "grouped.json"), *DSV3[2:]).json()
    free = run("step", str(tmp_path / "free.json"), *DSV3[2:]).json()
    assert grouped["ep_comm_s"] == run(*DSV3).json()["ep_comm_s"]  # the catalog's model
    # only the network term moves, by (0.574342 - 0.393701) of the buffer per all-to-all:
    # z = 4,096 tokens x 7,168 x 8 copies x 2 bytes = 469,762,048 bytes over one ConnectX-7
    # (50 GB/s x 0.9 = 45e9 B/s), 768 all-to-alls (16 MoE layers x 8 micro-batches x 6:
    # dispatch and combine, forward, backward, recomputed forward;
    # tests/test_node_limited_routing.py): 768 x 0.180641 x 469,762,048 / 45e9 = 1.4483 s
    fall = 768 * (UNLIMITED - LIMITED) * 469_762_048 / 45e9
    assert fall == pytest.approx(1.4483, rel=1e-4)
    assert free["ep_comm_s"] - grouped["ep_comm_s"] == pytest.approx(fall, rel=1e-4)


def test_nccl_all_to_all_does_not_move(run):
    # NCCL's all-to-all sends every copy whatever the routing
    a2a = run(*DSV3[:-4], "--moe-dispatcher", "alltoall", "--format", "json").json()
    a2a_4 = run(*DSV3[:-4], "--moe-dispatcher", "alltoall", "--assume", "moe_max_nodes=4",
                "--format", "json").json()
    assert a2a["ep_comm_s"] == a2a_4["ep_comm_s"]


def test_the_step_says_so(run):
    # the layout's reach (topology.ep_reach): EP 64 over 8 DGX nodes, 4 of them
    text = " ".join(run(*DSV3[:-2]).out.split())
    assert ("4 of its 8 expert groups: at most 4 of the EP group's 8 nodes "
            "(comm.routing_node_limit)") in text
    # the run's own limit is said apart, not credited to the groups
    one_node = " ".join(run(*DSV3[:-2], "--assume", "moe_max_nodes=1").out.split())
    assert "at most 4 of the EP group's 8 nodes" in one_node and "at most 1 node" in one_node
    # NVL72 racks at the experts' TP 8: the groups span every rack, no limit
    rack = " ".join(run("step", "deepseek-v3", "--node", "gb200-nvl72", "--nodes", "64", "--tp",
                        "8", "--ep", "64", "--seq-len", "4096", "--global-batch", "4608",
                        "--moe-dispatcher", "hybridep").out.split())
    assert "they can span all 8 of the EP group's nodes here, no limit" in rack
    # one node: nothing crosses, no count
    one = " ".join(run("step", "deepseek-v3", "--node", "dgx-h100", "--nodes", "2", "--ep", "8",
                       "--global-batch", "16", "--moe-dispatcher", "deepep").out.split())
    assert "8 expert groups (comm.routing_node_limit)" in one


@pytest.mark.parametrize("name, groups, scaling", [("deepseek_v3", (8, 4), 2.5),
                                                   ("deepseek_v2", (8, 3), 16.0),
                                                   ("glm4_moe", (1, 1), 1.0)])
def test_hugging_face_configs_carry_their_groups(name, groups, scaling):
    # each config.json's n_group / topk_group and routed_scaling_factor
    m = load_hf_config(HF / name / "config.json")
    assert (m.router_groups, m.router_group_topk, m.router_topk_scaling) == (*groups, scaling)


def test_a_glm_config_with_groups_keeps_them(tmp_path):
    # Glm4MoeTopkRouter routes by n_group / topk_group as DeepSeek-V3's: 128 experts in 8 groups
    cfg = json.loads((HF / "glm4_moe" / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**cfg, "n_group": 8, "topk_group": 4}))
    m = load_hf_config(tmp_path / "config.json")
    assert (m.router_groups, m.router_group_topk) == (8, 4)


def test_an_inconsistent_config_is_a_one_line_error(run, tmp_path):
    # 256 experts do not split into 7 groups
    cfg = json.loads((HF / "deepseek_v3" / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**cfg, "n_group": 7}))
    r = run("step", str(tmp_path / "config.json"), "--node", "dgx-h100")
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1
    assert "n_group" in r.err and "config.json" in r.err


def test_a_v3_config_without_the_keys_takes_the_config_class_defaults(tmp_path):
    # DeepseekV3Config: n_group 8, topk_group 4, routed_scaling_factor 2.5
    cfg = json.loads((HF / "deepseek_v3" / "config.json").read_text())
    for key in ("n_group", "topk_group", "routed_scaling_factor"):
        cfg.pop(key)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    m = load_hf_config(tmp_path / "config.json")
    assert (m.router_groups, m.router_group_topk, m.router_topk_scaling) == (8, 4, 2.5)


def test_a_greedy_v2_config_has_no_groups(tmp_path):
    # DeepSeek-V2-Lite routes greedily (topk_method "greedy"): n_group is not read
    cfg = json.loads((HF / "deepseek_v2" / "config.json").read_text())
    cfg.update(topk_method="greedy")
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    m = load_hf_config(tmp_path / "config.json")
    assert (m.router_groups, m.router_group_topk) == (1, 1)


def test_the_export_writes_the_models_groups_only():
    m = load_hf_config(HF / "deepseek_v3" / "config.json")
    lay, tr = Layout(tp=1, pp=1, dp=8, ep=8, zero=1), Training(seq_len=2048, global_batch=64)
    args = dict(megatron_arg_list(lay, tr, m, 8)[0])
    assert (args["--moe-router-num-groups"], args["--moe-router-group-topk"]) == ("8", "4")
    # a DeepSeek-V3-family model without groups (Kimi-K2's n_group 1) writes none: the family
    # table wrote 8 and 4 for every deepseek_v3 model before
    flat = m.model_copy(update={"router_groups": 1, "router_group_topk": 1,
                                "router_topk_scaling": 2.827})
    args = dict(megatron_arg_list(lay, tr, flat, 8)[0])
    assert "--moe-router-num-groups" not in args and "--moe-router-group-topk" not in args
    # and its own scaling factor (Kimi-K2's routed_scaling_factor 2.827), not the family's 2.5
    assert args["--moe-router-topk-scaling-factor"] == "2.827"
    v2 = load_hf_config(HF / "deepseek_v2" / "config.json")
    args = dict(megatron_arg_list(Layout(tp=1, pp=1, dp=8, ep=8, zero=1), tr, v2, 8)[0])
    assert (args["--moe-router-num-groups"], args["--moe-router-group-topk"],
            args["--moe-router-topk-scaling-factor"]) == ("8", "3", "16.0")


@pytest.mark.parametrize("update", [
    dict(router_groups=7),                          # 256 experts do not split into 7
    dict(router_groups=8, router_group_topk=9),     # more groups a token than groups
    dict(router_groups=64, router_group_topk=1),    # 1 group of 4 experts cannot hold top 8
    dict(router_groups=1, router_group_topk=2),
])
def test_inconsistent_groups_are_refused(update):
    base = load().get("deepseek-v3", "model").model_dump()
    with pytest.raises(ValidationError, match="router_groups"):
        Model(**{**base, **update})


def test_a_dense_model_refuses_groups():
    base = load().get("llama-3-8b", "model").model_dump()
    with pytest.raises(ValidationError, match="a dense model has no experts"):
        Model(**{**base, "router_groups": 8, "router_group_topk": 4})
