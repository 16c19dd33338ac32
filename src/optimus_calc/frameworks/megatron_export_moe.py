"""The MoE layers (experts, layer pattern, router), the token dispatcher and its overlap and
token-drop flags of the Megatron-LM export (frameworks/megatron_export.py): --num-experts and
the router's flags, --moe-token-dispatcher-type, --moe-flex-dispatcher-backend,
--overlap-moe-expert-parallel-comm, --moe-pad-expert-input-to-capacity, each written where
Megatron-LM @ d98e8a6 accepts it."""

from __future__ import annotations

from optimus_calc.frameworks.exporting import ExportError
from optimus_calc.specs.training import Precision, Recompute


# Routers the Model record does not carry, by family, from the models' published config.json
# (the group-limited routing, n_group / topk_group, and routed_scaling_factor are the model's:
# Model.router_groups, router_topk_scaling):
# deepseek-ai/DeepSeek-V3: scoring_func "sigmoid", topk_method "noaux_tc" (a per-expert bias
# updated outside the gradient);
# deepseek-ai/DeepSeek-V2: scoring_func "softmax", group_limited_greedy, norm_topk_prob false;
# Qwen/Qwen1.5-MoE-A2.7B:
# norm_topk_prob false (Qwen2MoeConfig's default too). Without renormalising the top-k weights
# the softmax runs over all experts before the top-k: Megatron's --moe-router-pre-softmax
# (its default softmax after the top-k renormalises). Flags: transformer_config.py L780-821.
ROUTERS: dict[str, dict[str, str | None]] = {
    "deepseek_v3": {"--moe-router-score-function": "sigmoid",
                    "--moe-router-enable-expert-bias": None},
    "deepseek_v2": {"--moe-router-score-function": "softmax",
                    "--moe-router-pre-softmax": None},
    "qwen2_moe": {"--moe-router-pre-softmax": None},
    # meta-llama/Llama-4-Scout config.json: top-1 routing, the chosen expert's logit through a
    # sigmoid (transformers Llama4TextMoe); Megatron refuses softmax after a top-1 choice
    # (transformer_config.py L2661-2669)
    "llama4": {"--moe-router-score-function": "sigmoid"},
    # zai-org GLM-4.5 / 4.5-Air config.json, transformers modeling_glm4_moe.py Glm4MoeTopkRouter:
    # sigmoid scores with e_score_correction_bias (Megatron's expert bias, a buffer); n_group = 1
    # (no group-limited routing); routed_scaling_factor from the model (below)
    "glm4_moe": {"--moe-router-score-function": "sigmoid",
                 "--moe-router-enable-expert-bias": None},
}


def moe_layers(a, m, routers: dict) -> None:
    """Experts, the dense/MoE layer pattern, the router (``routers``: ROUTERS)
    and the shared experts."""
    if not m.is_moe:
        return
    a.add("--num-experts", m.experts)
    a.add("--moe-router-topk", m.top_k)
    a.add("--moe-ffn-hidden-size", m.expert_ffn)
    if m.shared_experts:
        # one shared MLP of the summed width (transformer_config.py L701)
        a.add("--moe-shared-expert-intermediate-size", m.shared_experts * m.shared_ffn)
        if m.shared_expert_gate:
            a.add("--moe-shared-expert-gate")  # transformer_config.py L713
    pattern = [1 if m.is_moe_layer(i) else 0 for i in range(m.layers)]
    if not all(pattern):
        # a list expression, evaluated by arguments.py moe_freq_type (L327-347)
        a.add("--moe-layer-freq", "[" + ",".join(map(str, pattern)) + "]")
    router = routers.get(m.family.replace("-", "_"), {})
    for flag, value in router.items():
        a.add(flag, value)
    if m.router_groups > 1:  # group-limited routing (transformer_config.py L2671-2688 checks)
        a.add("--moe-router-num-groups", m.router_groups)
        a.add("--moe-router-group-topk", m.router_group_topk)
    if m.router_topk_scaling != 1 and "--moe-router-topk-scaling-factor" not in router:
        a.add("--moe-router-topk-scaling-factor", m.router_topk_scaling)
    if m.top_k == 1 and "--moe-router-score-function" not in router:
        # softmax over a single chosen logit has no gradient: Megatron asks for the softmax
        # over all experts first (transformer_config.py L2661-2669)
        a.add("--moe-router-pre-softmax")
    # Megatron's router has a bias exactly when the linear layers do (add_bias_linear,
    # core/transformer/moe/router.py L67-72): gpt-oss's biased linears build its router bias
    megatron_bias = ("--disable-bias-linear", None) not in a.pairs
    if m.router_bias and not megatron_bias and "--moe-router-enable-expert-bias" not in router:
        a.notes.append("router bias: with --disable-bias-linear Megatron-LM's router has no bias "
                       f"term; the count differs by {m.router_params - m.hidden * m.experts} "
                       "parameters per MoE layer")
    elif megatron_bias and not m.router_bias:
        a.notes.append("router bias: Megatron-LM's router takes the linear layers' bias "
                       f"(router.py L67-72), {m.experts} parameters per MoE layer the model "
                       "does not have")
    elif m.router_bias and not megatron_bias:
        a.notes.append("expert bias: Megatron keeps it as a buffer, not a parameter "
                       f"({m.experts} values per MoE layer outside the parameter count)")


def _has_dispatcher(a) -> bool:
    return any(flag == "--moe-token-dispatcher-type" for flag, _ in a.pairs)


def dispatcher(a, m, tr) -> None:
    """The token dispatcher the step timed, named for every MoE model: Megatron-LM's default is
    'allgather' (TransformerConfig.moe_token_dispatcher_type, megatron/core/transformer/
    transformer_config.py L891 @ d98e8a6), whose all-gather and reduce-scatter of the EP
    group's tokens is not the all-to-all the tool prices; --moe-dispatcher deepep or hybridep
    is the flex dispatcher with that backend (moe_flex_dispatcher_backend, L898)."""
    if not m.is_moe:
        return
    # the routed experts as one grouped GEMM (TEGroupedMLP), as the step times them; without
    # the flag Megatron-LM builds SequentialMLP, a GEMM per local expert (models/gpt/
    # moe_module_specs.py L43, L82 @ d98e8a6); --recompute-modules moe_act needs it (transformer_
    # config.py L1964-1967)
    a.add("--moe-grouped-gemm")
    if tr.moe_dispatcher.dedups_nodes:
        a.add("--moe-token-dispatcher-type", "flex")
        a.add("--moe-flex-dispatcher-backend", tr.moe_dispatcher.value)
    else:
        a.add("--moe-token-dispatcher-type", "alltoall")


def cuda_graph(a, m, tr) -> None:
    """--cuda-graph-impl full_iteration with what it needs (docs/user-guide/features/
    cuda_graph.md @ d98e8a6): --no-check-for-nan-in-loss-and-grad (L125-126; arguments.py
    L1237), and on an MoE model HybridEP's paged stash (L162-182): the TE op fuser, the
    per-rank capacity factor and --moe-paged-stash (transformer_config.py L1019, L1364, L2210-
    2216). The capacity 1.5 is Megatron-Bridge's (perf_recipes/qwen/common.py L36-51 @
    v0.6.0): a rank's dispatch buffer holds 1.5x its balanced tokens, the excess dropped."""
    if not tr.cuda_graph_full_iteration:
        return
    from optimus_calc.frameworks.megatron import GRAPH_DROPOUT, refused_recomputes
    if tr.recompute in refused_recomputes(tr):  # a plan pinned to it never gets here (inputs)
        raise ExportError(GRAPH_DROPOUT)
    a.add("--cuda-graph-impl", "full_iteration")
    a.add("--no-check-for-nan-in-loss-and-grad")
    if m.is_moe:
        a.add("--use-transformer-engine-op-fuser")
        if m.ffn_type.value == "relu2":  # the fused path's squared ReLU (experts.py L417-421,
            a.add("--use-fused-weighted-squared-relu")  # transformer_config.py L516 @ d98e8a6)
        a.add("--moe-expert-rank-capacity-factor", "1.5")
        a.add("--moe-paged-stash")
        a.notes.append("--cuda-graph-impl full_iteration on MoE: HybridEP's paged stash drops "
                       "the tokens past 1.5x a rank's balanced share (Megatron-Bridge "
                       "perf_recipes/qwen/common.py L45 @ v0.6.0); the plan timed no drop")


def graph_environment(m, tr) -> list[str]:
    """The environment a full-iteration graph's MoE layers need: TEGroupedMLP asserts under
    --use-transformer-engine-op-fuser that its fused grouped MLP is supported (megatron/core/
    transformer/moe/experts.py L287-289 @ d98e8a6), which for a gated (GLU) expert MLP it is
    only with NVTE_CUTEDSL_FUSED_GROUPED_MLP > 0 (L454) and expert TP 1 (L397, the rule
    MG_GRAPH_EXPERT_TP)."""
    if not (tr.cuda_graph_full_iteration and m.is_moe and m.ffn_type.matrices == 3):
        return []
    return ["export NVTE_CUTEDSL_FUSED_GROUPED_MLP=1  # the TE op fuser's grouped MLP for a "
            "gated expert MLP (megatron/core/transformer/moe/experts.py L287-289, L454)"]


def cross_entropy(a, tr) -> None:
    """The loss the profile timed (compute.loss_bytes): --cross-entropy-loss-fusion for the
    native fused one; Transformer Engine's is refused at d98e8a6 (training/arguments.py
    L1697-1702, core/model_parallel_config.py L536-541)."""
    if tr.cross_entropy_fusion.value == "te":
        raise ExportError("--cross-entropy-fusion te: Megatron-LM refuses Transformer Engine's "
                          "cross entropy (training/arguments.py L1697-1702 @ d98e8a6); export "
                          "with --cross-entropy-fusion native or none")
    if tr.cross_entropy_fusion.value == "native":
        a.add("--cross-entropy-loss-fusion")


def ep_overlap(a, lay, tr) -> None:
    """--overlap-moe-expert-parallel-comm where TransformerConfig accepts it (transformer_config.py
    L3002-3041 @ d98e8a6: EP > 1, a virtual pipeline when PP > 1, no full recompute, the
    alltoall or flex dispatcher, bf16 or fp16 weights: FP8 launches with --bf16), else a note
    why it is left out."""
    why = ("EP is 1" if lay.ep <= 1 else
           "PP > 1 needs an interleaved schedule" if lay.pp > 1 and lay.interleave <= 1 else
           "full recompute" if tr.recompute is Recompute.FULL else
           "FP32 (bf16 or fp16 only, L3034-3037)" if tr.precision is Precision.FP32 else "")
    if why:
        a.notes.append(f"--overlap-moe-expert-parallel-comm left out: {why} "
                       "(transformer_config.py L3002-3041)")
        return
    if not _has_dispatcher(a):  # the default allgather refuses it; flex takes it
        a.add("--moe-token-dispatcher-type", "alltoall")
    a.add("--overlap-moe-expert-parallel-comm")
    a.notes.append("--overlap-moe-expert-parallel-comm: Megatron-Bridge pairs it with "
                   "--delay-wgrad-compute (scripts/performance/utils/helpers.py L183-187)")


def token_drop(a, m, tr) -> None:
    """--moe-pad-expert-input-to-capacity: token drop at capacity factor 1.0 (Megatron-Bridge's
    apply_moe_token_drop, training/utils/moe_token_drop.py L18-57 @ 684a686), the inputs padded
    to capacity; the capacity factor works with the alltoall dispatcher (the assertion there,
    L39-42) and asks for aux_loss, seq_aux_loss, global_aux_loss or no load balancing
    (transformer_config.py L1836-1850 @ d98e8a6)."""
    if not (m.is_moe and tr.moe_pad_expert_input_to_capacity):
        return
    if not _has_dispatcher(a):  # HybridEP pads too (DeepEP is refused: inputs.py)
        a.add("--moe-token-dispatcher-type", "alltoall")
    a.add("--moe-expert-capacity-factor", "1.0")
    a.add("--moe-pad-expert-input-to-capacity")
