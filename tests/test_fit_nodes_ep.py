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


def test_fit_nodes_searches_to_the_tools_gpu_bound_by_bisection(run):
    """A bare 4.18e15 parameters at ZeRO-3, model states only: 16 B x 4.18e15 over the 76 GB
    usable of an 80 GB H100-class GPU (0.95 of 80e9; dgx-a100's a100-80gb) is 880,000 GPUs,
    110,000 nodes of 8 (a cold review: the search stopped at 100,000 nodes and its doubling at
    65,536, while `memory` fits from 110,000 and the tool models 1,000,000 GPUs)."""
    d = run("fit", "4.18e15", "--zero", 3, "--solve", "nodes", "--model-states-only",
            "--format", "json").json()
    assert d["min_nodes"] == 110_000 and "bisection" in d["method"]
    fits = [run("memory", "4.18e15", "--zero", 3, "--model-states-only", "--nodes", n,
                "--format", "json").json()["fits"] for n in (109_999, 110_000)]
    assert fits == [False, True]
    # 5e15 needs 80 GB a GPU at 1,000,000 GPUs: no answer, and what binds is read at the
    # largest count searched (125,000 nodes), not at one node (8,360,000 GB before)
    r = run("fit", "5e15", "--zero", 3, "--solve", "nodes", "--model-states-only")
    text = " ".join(r.out.split())
    assert "no node count up to 125000 fits" in text
    assert "of the 80.0 GB on stage 0, which exceeds the 76.0 GB usable" in text


def test_the_bisection_answers_what_a_scan_of_every_count_answers(run):
    # bare 3e12 at ZeRO-3, model states only: 16 x 3e12 / 76e9 = 631.6 GPUs -> 632, 79 nodes;
    # at TP 8 PP 5 (a unit of 5 nodes): 16 x 3e12 / (40 dp) <= 76e9 -> dp 16, 640 GPUs, 80
    # nodes; EP 16 on Qwen3-30B-A3B (a unit of 2). The answer fits and one unit below does
    # not, or cannot run
    for argv, unit, want in ((("3e12", "--zero", 3, "--model-states-only"), 1, 79),
                             (("3e12", "--zero", 3, "--tp", 8, "--pp", 5,
                               "--model-states-only"), 5, 80),
                             (("qwen3-30b-a3b", "--node", "dgx-h100", "--ep", 16, "--zero", 1),
                              2, 2)):
        n = run("fit", *argv, "--solve", "nodes", "--format", "json").json()["min_nodes"]
        assert n == want
        at = [run("memory", *argv, "--nodes", m, "--format", "json") for m in (n - unit, n)]
        assert at[1].json()["fits"] and (n == unit or at[0].code == 2
                                         or not at[0].json()["fits"])
