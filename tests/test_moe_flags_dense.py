"""MoE-only launch choices on a dense model (review11): --moe-dispatcher deepep|hybridep and
--moe-pad-expert-input-to-capacity were accepted on llama-3-8b, ignored by the step and the
export, while step's JSON said "moe_dispatcher": "hybridep". They are errors naming the flag,
as --ep on a dense model is (evaluate/context.check_moe_flags)."""

import pytest

LLAMA = ("llama-3-8b", "--node", "dgx-h100")


@pytest.mark.parametrize("cmd", ["step", "memory", "compare", "plan", "nics"])
def test_a_dispatcher_on_a_dense_model_is_an_error(run, cmd):
    r = run(cmd, *LLAMA, "--moe-dispatcher", "hybridep")
    assert r.code == 2 and not r.out
    assert r.err.strip() == ("error: --moe-dispatcher hybridep: llama-3-8b is dense (no "
                             "experts); the token dispatcher applies to MoE models")


def test_padding_to_capacity_on_a_dense_model_is_an_error(run):
    r = run("step", *LLAMA, "--moe-pad-expert-input-to-capacity")
    assert r.code == 2 and "--moe-pad-expert-input-to-capacity: llama-3-8b is dense" in r.err
    assert "\n" not in r.err.strip()


def test_the_ep_overlap_on_a_dense_model_is_an_error(run):
    # ignored before: a dense model has no expert all-to-all to overlap
    r = run("step", *LLAMA, "--overlap-moe-expert-parallel-comm")
    assert r.code == 2 and r.err.strip() == (
        "error: --overlap-moe-expert-parallel-comm: llama-3-8b is dense (no experts); the "
        "expert-parallel overlap applies to MoE models")


def test_sweep_takes_the_dispatcher_for_its_moe_models(run):
    # dense models only: the error names the model; with an MoE model among them the
    # dispatcher applies to it, and the dense rows are as without the flag
    r = run("sweep", "--models", "llama-3-8b", "--node", "dgx-h100", "--moe-dispatcher",
            "deepep")
    assert r.code == 2 and r.err.startswith("error: --models llama-3-8b: --moe-dispatcher")
    args = ("sweep", "--models", "llama-3-8b,qwen3-30b-a3b", "--node", "dgx-h100", "--nodes",
            "2", "--framework", "megatron", "--format", "json")
    plain, deep = run(*args).json()["rows"], run(*args, "--moe-dispatcher", "deepep").json()["rows"]
    assert deep[0]["step_time_s"] == plain[0]["step_time_s"]  # llama-3-8b: no all-to-all


def test_the_default_dispatcher_stays_accepted_on_a_dense_model(run):
    # alltoall is the default: naming it says nothing new, so it is no error
    r = run("step", *LLAMA, "--moe-dispatcher", "alltoall", "--format", "json")
    assert r.code == 0 and "moe_dispatcher" not in r.json()["training"]



def test_the_most_loaded_expert_on_a_dense_model_is_an_error(run):
    # --moe-imbalance (or --assume moe_imbalance) was accepted and ignored on a dense model
    r = run("step", *LLAMA, "--moe-imbalance", "1.3")
    assert r.code == 2 and r.err.strip() == (
        "error: --moe-imbalance 1.3 (or --assume moe_imbalance): llama-3-8b is dense (no "
        "experts); the most-loaded expert applies to MoE models")
    assert run("plan", *LLAMA, "--assume", "moe_imbalance=1.2").code == 2
    assert run("step", "mixtral-8x7b", "--node", "dgx-h100", "--ep", "8", "--moe-imbalance",
               "1.3").code == 0


@pytest.mark.parametrize("cmd", ["nics", "breakeven"])
def test_etp_alone_pins_the_layout_nics_and_breakeven_size(run, cmd):
    # round 18: --etp was missing from the options that mean "this layout", so `nics
    # llama-3-8b --etp 1` sized the planner's layout and said nothing; now a dense model
    # refuses it as step does, and an MoE model's given layout is the one sized
    r = run(cmd, *LLAMA, "--etp", "1")
    assert r.code == 2 and r.err.strip() == ("error: --etp 1: llama-3-8b is dense (no experts); "
                                             "expert parallelism applies to MoE models")


def test_nics_sizes_the_given_expert_layout_and_names_it(run):
    # qwen3-30b-a3b on one DGX A100, EP 4 x ETP 2 = 8 ranks = TP x CP x DP (parallel folding):
    # the title names the given layout with its expert degrees, the JSON carries them
    args = ("nics", "qwen3-30b-a3b", "--node", "dgx-a100", "--ep", "4", "--etp", "2",
            "--zero", "3")
    r = run(*args)
    assert r.code == 0
    assert r.out.splitlines()[0].endswith(
        "sized for the given layout (TP=1 PP=1 DP=8 EP=4 ETP=2, ZeRO-3)")
    d = run(*args, "--format", "json").json()
    assert (d["layout"]["ep"], d["layout"]["etp"], d["sized_for"]) == (4, 2, "the given layout")


def test_nics_refuses_parameter_offload(run):
    # nics sizes the SmartNIC offload, which keeps the weights on the GPU; --offload-params was
    # ignored (planner mode) or sized without effect (given layout) before round 18
    for extra in ((), ("--zero", "3")):
        r = run("nics", "llama70b", "--nodes", "2", "--offload-params", *extra)
        assert r.code == 2 and r.err.startswith("error: --offload-params: nics sizes the "
                                                "SmartNIC offload")
