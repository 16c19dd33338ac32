"""--cuda-graph-impl full_iteration (Megatron-LM launch flag; docs/user-guide/features/
cuda_graph.md L114-127, L162-182 @ d98e8a6): one CUDA graph per iteration, no host launch and
no host sync per MoE layer, so the Megatron profile sets moe_layer_fixed_s and moe_layer_host_s
to 0; on an MoE model it needs HybridEP's paged stash."""

import pytest

QWEN = ("step", "qwen3-30b-a3b", "--node", "dgx-h100", "--ep", "8", "--tp", "1", "--pp", "1",
        "--micro-batch", "1", "--global-batch", "8", "--framework", "megatron",
        "--moe-dispatcher", "hybridep", "--format", "json")


def test_the_graph_replays_the_moe_layers_without_the_host(run):
    # 48 MoE layers, 1 micro-batch: (1.3 ms sync + 2.0 ms launches) x 48 = 0.1584 s eagerly
    eager = run(*QWEN).json()
    graph = run(*QWEN, "--cuda-graph-impl", "full_iteration").json()
    assert eager["fixed_s"] == pytest.approx(0.1584)
    assert graph["fixed_s"] == 0.0
    assert eager["step_time_s"] - graph["step_time_s"] == pytest.approx(0.1584)
    # framework-neutral physics reads no launch flag (as --overlap-grad-reduce)
    neutral = [a for a in QWEN if a not in ("--framework", "megatron")]
    assert run(*neutral, "--cuda-graph-impl", "full_iteration").json()["fixed_s"] == \
        run(*neutral).json()["fixed_s"]


def test_an_moe_graph_needs_hybridep(run):
    args = [a if a != "hybridep" else "alltoall" for a in QWEN]
    r = run(*args, "--cuda-graph-impl", "full_iteration")
    assert r.code == 2 and "cuda_graph.md L162-182" in r.err
    # a dense model needs no dispatcher
    dense = run("step", "llama-3-8b", "--node", "dgx-h100", "--framework", "megatron",
                "--cuda-graph-impl", "full_iteration", "--format", "json")
    assert dense.code == 0 and dense.json()["fixed_s"] == 0.0


def test_the_export_writes_what_the_graph_needs(run, tmp_path):
    out = tmp_path / "run.sh"
    r = run("plan", "qwen3-30b-a3b", "--node", "dgx-h100", "--ep", "8", "--tp", "1", "--pp", "1",
            "--framework", "megatron", "--moe-dispatcher", "hybridep", "--cuda-graph-impl",
            "full_iteration", "--export", "megatron", "-o", out)
    assert r.code == 0
    text = out.read_text()
    # cuda_graph.md L125-126 (the NaN check syncs the host), L176-182 (paged stash); the
    # capacity is Megatron-Bridge's (perf_recipes/qwen/common.py L45 @ v0.6.0)
    for flag in ("--cuda-graph-impl full_iteration", "--no-check-for-nan-in-loss-and-grad",
                 "--use-transformer-engine-op-fuser", "--moe-expert-rank-capacity-factor 1.5",
                 "--moe-paged-stash", "--moe-flex-dispatcher-backend hybridep"):
        assert flag in text, flag
    # the op fuser's grouped MLP of a gated (SwiGLU) expert MLP is built only with
    # NVTE_CUTEDSL_FUSED_GROUPED_MLP > 0 (experts.py L454 @ d98e8a6), and TEGroupedMLP asserts
    # it under the op fuser (L287-289): the script sets it before the launch
    env = "export NVTE_CUTEDSL_FUSED_GROUPED_MLP=1"
    assert env in text and text.index(env) < text.index("torchrun")
    eager = tmp_path / "eager.sh"
    assert run("plan", "qwen3-30b-a3b", "--node", "dgx-h100", "--ep", "8", "--tp", "1", "--pp",
               "1", "--framework", "megatron", "--moe-dispatcher", "hybridep", "--export",
               "megatron", "-o", eager).code == 0
    assert "NVTE_CUTEDSL_FUSED_GROUPED_MLP" not in eager.read_text()


def test_an_moe_graph_refuses_expert_tp(run):
    # the fused grouped MLP refuses a TP group of its own (experts.py L397 @ d98e8a6: "Tensor
    # parallelism is not supported"): expert TP 2 is not a Megatron-LM layout under the graph;
    # expert TP 1 with attention TP 2 (parallel folding, --etp 1) is, and so is TP 2 eagerly
    args = ("step", "qwen3-30b-a3b", "--node", "dgx-h100", "--ep", "4", "--tp", "2",
            "--micro-batch", "1", "--global-batch", "8", "--framework", "megatron",
            "--moe-dispatcher", "hybridep", "--format", "json")
    graph = ("--cuda-graph-impl", "full_iteration")
    why = run(*args, *graph).json()["frameworks"]["megatron"]
    assert "refuses expert TP > 1" in why and "experts.py L287-289, L397-398" in why
    assert run(*args, *graph, "--etp", "1").json()["frameworks"]["megatron"] == "runs"
    assert run(*args).json()["frameworks"]["megatron"] == "runs"


def test_rows_on_a_graph_do_not_fit_the_host_constants(cat):
    # the GB200 Qwen3-30B-A3B rows of 26.06-26.08 run a full-iteration graph: their step does
    # not move with the default host constants, so their slopes are 0 (validate_moe.host_row)
    from optimus_calc.validate import run_all
    cases = run_all(cat, cross_validate=False)
    rows = {c.case: c.host(i) for i, c in enumerate(cases) if c.host is not None}
    graph = [h for k, h in rows.items() if "GB200 qwen3-30b-a3b" in k and "(26.06)" in k]
    assert len(graph) == 1 and graph[0].K == 0.0 and graph[0].K_f == 0.0
    eager = [h for k, h in rows.items() if "GB200 qwen3-30b-a3b" in k and "(26.04)" in k]
    assert len(eager) == 1 and eager[0].K_f > 0


def test_the_export_refuses_graphed_attention_recompute_with_dropout(run, tmp_path):
    # Megatron-LM's TransformerConfig: with --recompute-granularity selective (recompute_modules
    # default ["core_attn"], transformer_config.py L1940-1941) under a full-iteration graph,
    # "attention dropout is not supported with graphed attention recomputation" (L2874-2884
    # @ d98e8a6): --dropout writes --attention-dropout 0.1, which Megatron would refuse
    base = ("plan", "llama-3-8b", "--node", "dgx-h100", "--framework", "megatron", "--tp", "1",
            "--pp", "1", "--cuda-graph-impl", "full_iteration", "--export", "megatron")
    out = tmp_path / "run.sh"
    r = run(*base, "--recompute", "selective", "--dropout", "-o", out)
    assert r.code == 2 and "L2874-2884" in r.err and "\n" not in r.err.strip()
    assert not out.exists()
    # without dropout, or with full recompute (L2855-2858: full recompute needs the graph), it
    # is written
    for extra in (("--recompute", "selective"), ("--recompute", "full", "--dropout")):
        assert run(*base, *extra, "-o", out).code == 0
        assert "--cuda-graph-impl full_iteration" in out.read_text()
