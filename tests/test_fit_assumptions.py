"""`fit --solve nodes` under `--assume`: the fewest nodes is the smallest count `memory` says fits
with the same assumptions (every other fit test uses the default assumptions; written during the
sampled mutation run of 2026-11-26, docs/hardening.md "Mutation score")."""

from tests_support import cli_json

ARGS = ("llama-2-13b", "--zero", "3")
FRAG = ("--assume", "fragmentation=0.5")


def test_fit_nodes_honours_assumptions():
    # default fragmentation: one DGX A100 holds Llama-2 13B under ZeRO-3; with half of every
    # allocation lost to fragmentation (assumed 0.5) one node no longer fits, two do
    assert cli_json("fit", *ARGS, "--solve", "nodes")["min_nodes"] == 1
    assert cli_json("fit", *ARGS, "--solve", "nodes", *FRAG)["min_nodes"] == 2
    assert cli_json("memory", *ARGS, "--nodes", "1", *FRAG)["fits"] is False
    assert cli_json("memory", *ARGS, "--nodes", "2", *FRAG)["fits"] is True
