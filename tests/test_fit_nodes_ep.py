"""`fit --solve nodes` with expert parallelism wider than a node (review11): the node counts
tried started at one node, whose layout check (EP divides DP x CP) raised out of the search,
so `fit qwen3-30b-a3b --node dgx-h100 --tp 1 --ep 16 --nodes 4 --solve nodes` said
"--ep 16 must divide dp x cp = 8" about a node count the user never gave. The node unit now
holds EP x ETP in a stage's GPUs too (analyses/fit.node_unit)."""

from optimus_calc.analyses.fit import node_unit


def test_the_node_unit_holds_the_expert_group():
    # lcm(TP PP CP, PP EP ETP) GPUs over 8-GPU nodes: EP 16 at TP 1 is 16 GPUs, 2 nodes;
    # TP 2 ETP 1 EP 16: lcm(2, 16) = 16, 2 nodes; TP 8 PP 5: 40 GPUs, 5 nodes (as before);
    # TP 8 PP 2 EP 4 (ETP = TP 8): lcm(16, 64) = 64, 8 nodes
    assert [node_unit(8, 1, 1, 1, 16), node_unit(8, 2, 1, 1, 16, 1), node_unit(8, 8, 5, 1),
            node_unit(8, 8, 2, 1, 4)] == [2, 2, 5, 8]
    # 72-GPU racks: EP 32 needs 288 GPUs' multiples of 32 per stage: lcm(1, 32) = 32 -> 4
    assert node_unit(72, 1, 1, 1, 32) == 4


def test_fit_solves_nodes_for_ep_wider_than_a_node(run):
    # Qwen3-30B-A3B EP 16 on DGX H100: one node (DP 8) cannot hold EP 16; two can, and the
    # layout fits there (`step ... --nodes 2`: 76.0 GB of 80 GB at ZeRO-0)
    base = ("fit", "qwen3-30b-a3b", "--node", "dgx-h100", "--tp", "1", "--ep", "16",
            "--solve", "nodes", "--format", "json")
    for extra in ((), ("--nodes", "4")):
        r = run(*base, *extra)
        assert r.code == 0, r.err
        assert r.json()["min_nodes"] == 2
