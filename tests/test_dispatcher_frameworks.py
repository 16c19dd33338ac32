"""Where each framework runs --moe-dispatcher deepep, read from its own source (review10):
a layout the framework refuses, or runs with another dispatcher than the one the step timed,
is refused by a rule, so neither the step nor the export claims it."""

import pytest

QWEN1 = ("step", "qwen3-30b-a3b", "--node", "dgx-h100", "--nodes", "1", "--pp", "1",
         "--micro-batch", "1", "--global-batch", "64", "--seq-len", "4096", "--zero", "1")
REJECT = "although its rules reject"


def _said(r) -> str:
    return " ".join(r.out.split())


def test_megatron_deepep_needs_more_than_one_rank(run):
    # MoEFlexTokenDispatcher: 'assert self.tp_size * self.ep_size > 1, "DeepEP dispatcher
    # requires TPxEP > 1"' (megatron/core/transformer/moe/token_dispatcher.py L1836 @ d98e8a6;
    # tp_size is the expert TP group's, L86-89): EP 1 with ETP 1 builds no DeepEP dispatcher
    meg = ("--framework", "megatron")
    r = run(*QWEN1, "--ep", "1", "--tp", "1", *meg, "--moe-dispatcher", "deepep")
    assert REJECT in _said(r) and "token_dispatcher.py L1836" in _said(r)
    # ETP x EP = 2 builds it (TP 2, ETP = TP), and so do EP 8 and HybridEP at EP 1 (the
    # HybridEP branch has no such assertion, L1845-1851)
    for args in (("--ep", "1", "--tp", "2"), ("--ep", "8", "--tp", "1")):
        assert REJECT not in _said(run(*QWEN1, *args, *meg, "--moe-dispatcher", "deepep"))
    assert REJECT not in _said(run(*QWEN1, "--ep", "1", "--tp", "1", *meg,
                                   "--moe-dispatcher", "hybridep"))
    # the export refuses what Megatron would refuse
    r = run("plan", *QWEN1[1:], "--ep", "1", "--tp", "1", *meg, "--moe-dispatcher", "deepep",
            "--export", "megatron", "-o", "/dev/null")
    assert r.code == 2


def test_torchtitan_deepep_only_where_its_model_reads_it(run):
    # torchtitan v0.2.2 reads expert_parallel_comm_backend only in llama4's and deepseek_v3's
    # parallelize.py (llama4/infra/parallelize.py L114-135, deepseek_v3 L100-121); qwen3's
    # (L111-118) and gpt_oss's (L106-113) call apply_moe_ep_tp without use_deepep: they run
    # the standard all-to-all, not the deduplicated dispatch the step would time
    tt = ("--framework", "torchtitan", "--zero", "3", "--tp", "1")
    assert REJECT not in _said(run(*QWEN1[:-2], *tt, "--ep", "8"))
    r = run(*QWEN1[:-2], *tt, "--ep", "8", "--moe-dispatcher", "deepep")
    assert REJECT in _said(r) and "qwen3/infra/parallelize.py" in _said(r)


DSV3 = ("step", "deepseek-v3", "--node", "dgx-h100", "--nodes", "32", "--pp", "1",
        "--micro-batch", "1", "--global-batch", "256", "--seq-len", "4096",
        "--framework", "torchtitan", "--zero", "3", "--ep", "64")


def test_torchtitan_deepep_refuses_expert_tp(run):
    # deepseek_v3/infra/parallelize.py L107-111 (llama4 L121-125): 'DeepEP with Expert Tensor
    # Parallelism (ETP) is not supported yet' where parallel_dims.etp_enabled (etp > 1,
    # distributed/parallel_dims.py L350-351); torchtitan's ETP is TP or 1
    assert REJECT not in _said(run(*DSV3, "--tp", "1", "--moe-dispatcher", "deepep"))
    assert REJECT not in _said(run(*DSV3, "--tp", "2"))
    r = run(*DSV3, "--tp", "2", "--moe-dispatcher", "deepep")
    assert REJECT in _said(r) and "deepseek_v3/infra/parallelize.py L107-111" in _said(r)
    # ETP 1 under TP 2 (every TP rank an EP rank) runs it
    assert REJECT not in _said(run(*DSV3, "--tp", "2", "--etp", "1",
                                   "--moe-dispatcher", "deepep"))


@pytest.mark.parametrize("model,ok", [("qwen3-30b-a3b", False), ("deepseek-v3", True)])
def test_torchtitan_export_writes_deepep_only_where_it_runs(run, tmp_path, model, ok):
    out = tmp_path / "job.toml"
    nodes = "32" if model == "deepseek-v3" else "2"
    r = run("plan", model, "--node", "dgx-h100", "--nodes", nodes, "--ep", "16", "--tp", "1",
            "--pp", "1", "--framework", "torchtitan", "--moe-dispatcher", "deepep",
            "--export", "torchtitan", "-o", out)
    if ok:
        assert r.code == 0
        assert 'expert_parallel_comm_backend = "deepep"' in out.read_text()
    else:
        assert r.code == 2 and not out.exists()


def test_the_step_says_which_dispatcher_it_timed(run):
    # the dispatcher moves the EP time (tests/test_dispatcher.py: 20.51 s -> 6.75 s on two
    # DGX H100) and no field of the report named it: the MoE note does, and the JSON's
    # training block where it is not the default (as fp8_recipe where the run is FP8)
    args = ("step", "qwen3-30b-a3b", "--node", "dgx-h100", "--nodes", "2", "--ep", "16",
            "--tp", "1", "--framework", "megatron")
    assert "tokens dispatched by NCCL's all-to-all (comm.pairwise_cross_share) (--moe-dispatcher " \
        "alltoall)" in _said(run(*args))
    text = _said(run(*args, "--moe-dispatcher", "deepep"))
    assert "(comm.dedup_cross_share) (--moe-dispatcher deepep)" in text
    assert "--moe-dispatcher hybridep" in _said(run(*args, "--moe-dispatcher", "hybridep"))
    assert "moe_dispatcher" not in run(*args, "--format", "json").json()["training"]
    deep = run(*args, "--moe-dispatcher", "hybridep", "--cuda-graph-impl", "full_iteration",
               "--format", "json").json()["training"]
    assert (deep["moe_dispatcher"], deep["cuda_graph_impl"]) == ("hybridep", "full_iteration")
    # a dense model has no dispatcher: an error since review11 (tests/test_moe_flags_dense.py)
    dense = run("step", "llama-3-8b", "--node", "dgx-h100", "--moe-dispatcher", "deepep")
    assert dense.code == 2 and "llama-3-8b is dense" in dense.err


@pytest.mark.parametrize("flags,source", [
    (("--cuda-graph-impl", "full_iteration"), "cuda_graph.md L162-182"),
    (("--moe-dispatcher", "deepep", "--moe-pad-expert-input-to-capacity"), "L1754-1761"),
])
def test_sweep_checks_every_model_for_the_moe_launch_flags(run, flags, source):
    # the sweep checked the launch flags against its first model only: a dense first model let
    # an MoE one run a full-iteration graph with NCCL's all-to-all (its host sync priced 0), or
    # DeepEP padded to capacity, both of which Megatron-LM refuses (step and plan exit 2)
    args = ("sweep", "--node", "dgx-h100", "--nodes", "1", *flags)
    r = run(*args, "--models", "llama-3-8b,qwen3-30b-a3b")
    assert r.code == 2 and source in r.err and "qwen3-30b-a3b" in r.err
    assert "\n" not in r.err.strip()
    # the dense model alone: the graph runs; DeepEP and the padding are MoE-only flags, an
    # error on a sweep of dense models only (review11)
    alone = run(*args, "--models", "llama-3-8b")
    assert alone.code == (2 if "--moe-dispatcher" in flags else 0)
