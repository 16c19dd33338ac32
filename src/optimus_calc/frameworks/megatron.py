"""Megatron-LM (``NVIDIA/Megatron-LM``): rules, launch path, environment, exporter, profile.

Pinned at commit d98e8a64ddf34856e74b24714e3bedb2f5a39553 (2026-08-22); every file and line
below refers to it. ZeRO-1 is the distributed optimizer, ZeRO-2/3 are Megatron-FSDP.
"""

from __future__ import annotations

from optimus_calc.evaluate.shapes import max_chunks
from optimus_calc.frameworks.base import (OFF_CPU, SMARTNIC, EnvVar, Exporter, FrameworkPlugin,
                                          PhysicsProfile, Rule, Setting, dividing_into,
                                          not_dividing, runs_offloads, refuses_kernel,
                                          runs_precisions, unbuildable_everywhere)
from optimus_calc.specs.training import Offload, Precision, Recompute

COMMIT = "d98e8a64ddf34856e74b24714e3bedb2f5a39553"
_MG = "Megatron-LM"


def _row(name: str, what: str, source: str, when) -> Rule:
    return Rule(name, f"{_MG}: {what} ({source})", source, when)


def _deepep_one_rank(x):
    """DeepEP over a one-rank expert TP x EP group; None unless the run is an MoE model's with
    --moe-dispatcher deepep (HybridEP's branch asserts nothing, token_dispatcher.py L1845)."""
    if not x.experts or x.moe_dispatcher != "deepep":
        return None
    return x.etp * x.ep <= 1


def _interleave_micro(x):
    """Fewer micro-batches per step than PP stages: global / (dp x micro) < pp, no division."""
    if x.gb is None:
        return None
    return (x.v > 1) & (x.gb < x.pp * x.dp * x.mb)


def unbuildable(m) -> str | None:
    """Why Megatron-LM's GPT model (pretrain_gpt.py) cannot build ``m`` from flags, or None."""
    if m.arch != "decoder":
        return f"{m.name} is an encoder; the export targets Megatron-LM's GPT (decoder) script"
    if m.parallel_attention:
        return (f"{m.name}: parallel attention + MLP blocks (Falcon, GPT-J) have no Megatron-LM "
                "flag at d98e8a64 (TransformerLayer runs attention, then the MLP); the export "
                "would build a different model")
    if m.ffn_type.value not in ("swiglu", "gelu", "relu2"):  # relu2: argument_utils.py L320
        return (f"{m.name}: a {m.ffn_type.value} MLP has no Megatron-LM flag (--swiglu, "
                "--squared-relu or the default GeLU)")
    if getattr(m, "qk_norm_full", False):
        return (f"{m.name}: Q/K norms over all heads (OLMo-2) have no Megatron-LM flag: --qk-"
                "layernorm builds one head_dim-wide norm per head (megatron/core/transformer/"
                "attention.py, hidden_size_per_attention_head); the export would build another")
    if m.position_embedding not in ("rope", "learned", "none"):
        return f"{m.name}: {m.position_embedding} position embeddings have no Megatron-LM setting"
    biases = (m.attention_bias, m.attention_out_bias, m.mlp_bias)
    if biases not in ((False, False, False), (True, False, False), (True, True, True)):
        return (f"{m.name}: biases on (QKV, output, MLP) = {biases} have no Megatron-LM "
                "setting (all, none, or QKV only)")
    return None


_ARCH_SOURCE = ("training/arguments.py L2397 (position embeddings), L2450 (--swiglu), L2448 "
                "(--squared-relu); core/transformer/transformer_config.py L212-218 (biases)")

# What Megatron-LM runs (an allowlist: a target not named here is refused): the optimizer on
# the GPU, or on the host with --optimizer-cpu-offload (training/arguments.py L2918).
OFFLOAD_TARGETS: tuple[Offload, ...] = (Offload.NONE, Offload.CPU)
# --bf16, --fp16 or fp32, FP8 (MG_FP8_TE checks the recipe) and NVFP4 through Transformer Engine
PRECISIONS: tuple[str, ...] = ("bf16", "fp16", "fp32", "fp8", "nvfp4")

RULES: tuple[Rule, ...] = (
    SMARTNIC,
    runs_offloads("MG_OFFLOAD_TARGET", _MG, OFFLOAD_TARGETS, "training/arguments.py L2918",
                  "--optimizer-cpu-offload"),
    runs_precisions("MG_PRECISION", f"{_MG}: trains in fp16, bf16, fp32, FP8 or NVFP4 (args."
                    "fp16, args.bf16, training/arguments.py L1195-1206; FP8 as MG_FP8_TE; "
                    "--fp4-format e2m1, L1099-1109)",
                    "training/arguments.py L1195-1206", PRECISIONS),
    refuses_kernel("MG_FA1", f"{_MG}: no FlashAttention-1 (--attention-kernel fa1): "
                   "--flash-attention-version is 2, 3 or 4 (core/transformer/"
                   "transformer_config.py L157, L3194-3197), and Transformer Engine's flash "
                   "backend needs flash-attn >= 2.1.1 (Transformer Engine utils.py L123 @ "
                   "d0067d0d); its other backends are cuDNN's and unfused",
                   "core/transformer/transformer_config.py L157, L3194-3197", "fa1"),
    _row("MG_HEADS_TP", "num_attention_heads must be a multiple of TP",
         "megatron/core/transformer/transformer_config.py L1446",
         lambda x: not_dividing(x.heads, x.tp)),
    _row("MG_GROUPS_TP", "num_query_groups must be a multiple or a divisor of TP",
         "megatron/core/transformer/transformer_config.py L1460-1463",
         lambda x: not_dividing(x.n_kv, x.tp) & ~dividing_into(x.tp, x.n_kv)),
    _row("MG_EXPERTS_EP", "experts must be a multiple of the expert-parallel size",
         "megatron/training/arguments.py L1655-1658", lambda x: x.experts_bad),
    _row("MG_DEEPEP_RANKS", "the DeepEP dispatcher (--moe-dispatcher deepep) needs expert TP x "
         "EP > 1 (MoEFlexTokenDispatcher asserts \"DeepEP dispatcher requires TPxEP > 1\", "
         "its tp_size the expert TP group's, L86-89)",
         "megatron/core/transformer/moe/token_dispatcher.py L1836", _deepep_one_rank),
    _row("MG_MOE_SP", "an MoE model with TP > 1 trains only with sequence parallelism (not "
         "--no-sp)", "megatron/core/transformer/moe/moe_layer.py L636-640",
         lambda x: x.tp_without_sp if x.experts else None),
    _row("MG_GRAPH_EXPERT_TP", "--cuda-graph-impl full_iteration on an MoE model runs the TE op "
         "fuser's grouped MLP (--use-transformer-engine-op-fuser), which refuses expert TP > 1",
         "megatron/core/transformer/moe/experts.py L287-289, L397-398",
         lambda x: (x.etp > 1) if x.experts and x.cuda_graph else None),  # None: not MoE+graph
    _row("MG_FSDP_PP", "ZeRO-2/3 is Megatron-FSDP, documented to compose with TP, CP and EP "
         "but not PP", "docs/user-guide/features/megatron_fsdp.md L318; Megatron-FSDP v2 "
         "rejects PP, core/distributed/fsdp/mcore_fsdp_adapter.py L627-638",
         lambda x: (x.zero >= 2) & (x.pp > 1)),
    Rule("MG_OFFLOAD_PARAMS", f"{_MG}: no parameter offload (only the optimizer state, "
         "--optimizer-cpu-offload, training/arguments.py L2918)",
         "training/arguments.py L2918", lambda x: x.oparams),
    Rule("MG_OFFLOAD_ZERO0", f"{_MG}: --optimizer-cpu-offload needs "
         "--use-precision-aware-optimizer (training/arguments.py L1884-1887), which needs the "
         "distributed optimizer, ZeRO >= 1 (core/optimizer/__init__.py L1057-1060)",
         "training/arguments.py L1884-1887", lambda x: (x.off == OFF_CPU) & (x.zero == 0)),
    _row("MG_FP8_TE", "FP8 runs through Transformer Engine recipes only (--fp8-format, "
         "--fp8-recipe delayed/tensorwise/mxfp8/blockwise/custom), not torchao float8",
         "megatron/core/transformer/transformer_config.py L587-600, megatron/core/fp8_utils.py "
         "L762-795", lambda x: x.fp8_unless("te-delayed", "te-current", "mxfp8")),
    _row("MG_INTERLEAVE_PP", "the interleaved schedule needs PP > 1",
         "training/arguments.py L1000-1003", lambda x: (x.v > 1) & (x.pp < 2)),
    # an uneven split runs through --pipeline-model-parallel-layout (the export writes the
    # evaluated split, megatron_export._pipeline; arguments.py L941-951 derives the virtual
    # stages from it): only a virtual stage without a layer is refused
    _row("MG_INTERLEAVE_LAYERS", "interleaving needs a layer, the embedding or the loss in "
         "every virtual stage (PP x interleave <= layers + 2; an uneven split runs as "
         "--pipeline-model-parallel-layout)", "training/arguments.py L941-951, core/"
         "transformer/pipeline_parallel_layer_layout.py L40-55",
         lambda x: (x.v > 1) & (x.pp * x.v > max_chunks(x.layers))),
    _row("MG_CP_SEQ", "context parallelism cuts the sequence into 2 x CP chunks: the sequence "
         "must be a multiple of 2 x CP", "training/arguments.py L1335-1338",
         lambda x: None if x.seq_len is None else (x.cp > 1) & x.seq_not_dividing(2 * x.cp)),
    # the embedding's output is scattered over TP along the sequence (each CP rank's s / CP
    # tokens), and _split_along_first_dim asserts the split is even (the stored Megatron-LM
    # checkout is 00caa53, not COMMIT: mappings.py L56-70 there)
    _row("MG_SP_SEQ", "sequence parallelism splits each CP rank's sequence over TP: the "
         "sequence must be a multiple of TP x CP (or --no-sp)", "megatron/core/tensor_parallel/"
         "mappings.py L56-70 @ 00caa53 (_split_along_first_dim)",
         lambda x: None if x.seq_len is None else (x.tp > 1) & x.sp
         & x.seq_not_dividing(x.tp * x.cp)),
    _row("MG_INTERLEAVE_MICRO", "the interleaved schedule needs at least PP micro-batches",
         "core/pipeline_parallel/schedules.py L1160-1168", _interleave_micro),
    # the window the export writes (--window-size) reaches Transformer Engine's attention
    _row("MG_CP_WINDOW", "context parallelism with a sliding window: Transformer Engine "
         "refuses it on --cp-comm-type p2p, the default ring the profile times (a2a and "
         "all_gather are not modelled)", "TransformerEngine @ d0067d0 transformer_engine/"
         "pytorch/attention/dot_product_attention/context_parallel.py L5054-5060",
         lambda x: None if not getattr(x.model, "sliding_window_layers", 0) else x.cp > 1),
    Rule("MG_ARCH", f"{_MG}: pretrain_gpt.py cannot build this architecture from its flags (an "
         "encoder, parallel attention + MLP, a GEGLU or plain ReLU MLP, ALiBi or partial biases) "
         f"({_ARCH_SOURCE})", _ARCH_SOURCE, unbuildable_everywhere(unbuildable), on_model=True),
)


def environment(layout) -> tuple[EnvVar, ...]:
    """What ``validate_args`` asserts about CUDA_DEVICE_MAX_CONNECTIONS on GPUs before
    Blackwell (the requirement is lifted from compute capability 10 on)."""
    if int(layout.zero) >= 2:
        return (EnvVar("CUDA_DEVICE_MAX_CONNECTIONS", None,
                       "Megatron-FSDP asserts it is unset or > 1 "
                       "(megatron/training/arguments.py L1166-1167)"),)
    if layout.tp > 1 or layout.cp > 1:
        return (EnvVar("CUDA_DEVICE_MAX_CONNECTIONS", "1",
                       "tensor or context parallelism asserts it on GPUs before Blackwell "
                       "(megatron/training/arguments.py L1477-1479)"),)
    return ()


# Megatron-Bridge's recipes launch with all three overlaps on (recipes/common.py L83-84; comm_
# overlap.py L575-578 with DP > 1; L442-451 keep --tp-comm-overlap only with TP > 1, SP and TE;
# @ 067f987): the Training defaults, which the export writes and --no-... flags turn off.
BRIDGE = "Megatron-Bridge src/megatron/bridge/recipes/common.py L83-84 @ 067f987"


def _gather_overlap(tr) -> bool:
    """--overlap-param-gather is valid only with --overlap-grad-reduce (arguments.py
    L1024-1029): without it the gather follows the optimizer step."""
    return bool(tr.overlap_param_gather and tr.overlap_grad_reduce)


# The share of the EP all-to-all that --overlap-moe-expert-parallel-comm hides: fitted (was
# assumed 1) on the 39 public rows that run it, jointly with the MoE host constants
# (Assumptions.moe_layer_host_s, moe_layer_fixed_s; validate_moe.fit_overlap); every one of the
# 39 was predicted fast with 1. Below 1: the dispatcher's kernels take SMs from the compute they
# overlap (Megatron-Bridge perf_recipes/gpt_oss/common.py L32-33 @ 067f987df: HybridEP on 32
# SMs), and a micro-batch's all-to-all can outlast the other one's compute (refits: round 17's
# 0.60 raised the held-out error, round 21's 0.52 lowered it; tests/test_drop_pad.py)
EP_OVERLAP_SHARE = 0.56
EP_OVERLAP_SOURCE = ("--overlap-moe-expert-parallel-comm: megatron/core/model_parallel_config.py "
                     "L343-346, transformer/transformer_config.py L3002-3041; Megatron-Bridge "
                     "scripts/performance/utils/helpers.py L183-187 @ v0.2.1; the share "
                     "hidden fitted on 39 public rows (validate_moe.fit_overlap; docs/moe.md)")

_CUDA_GRAPH = ("--cuda-graph-impl full_iteration: docs/user-guide/features/cuda_graph.md "
               "L114-127, L162-182 @ d98e8a6")

GRAPH_DROPOUT = ("--cuda-graph-impl full_iteration with --recompute selective and --dropout: "
                 "Megatron-LM refuses attention dropout in graphed attention recomputation "
                 "(core/transformer/transformer_config.py L2874-2884 @ d98e8a6); leave out "
                 "--dropout or use --recompute none or full")


def refused_recomputes(tr) -> tuple[Recompute, ...]:
    """The recompute modes Megatron-LM refuses with ``tr``'s launch flags: selective under a
    full-iteration graph with dropout (its core_attn, recompute_modules' default L1940-1941 but
    for --recompute-modules, would replay a dropout mask: transformer_config.py L2874-2884)."""
    if tr.cuda_graph_full_iteration and tr.dropout and not tr.recompute_modules:
        return (Recompute.SELECTIVE,)
    return ()


def launch_flag_error(model, tr, read=None) -> str | None:
    """Why Megatron-LM refuses this combination of its launch flags on ``model``, or None: a
    graph with dropout under selective recompute (:func:`refused_recomputes`), --recompute-
    modules under delayed FP8 scaling, a graph on MoE without HybridEP (cuda_graph.md
    L162-182), padding on DeepEP (transformer_config.py L1754-1761); on ``read``, ``tr`` as
    the --framework named reads its flags (physics.unread_dropped), if given."""
    tr = tr if read is None else read
    if tr.recompute in refused_recomputes(tr):
        return GRAPH_DROPOUT
    if tr.recompute_modules and (tr.precision.value, tr.fp8_recipe.value) == ("fp8", "te-delayed"):
        return ("--recompute-modules with --fp8-recipe te-delayed: Megatron-LM refuses them under "
                "delayed scaling (transformer_config.py L2001-2006 @ d98e8a6): use te-current")
    if not getattr(model, "is_moe", False):
        return None
    if tr.cuda_graph_full_iteration and tr.moe_dispatcher.value != "hybridep":
        return ("--cuda-graph-impl full_iteration on an MoE model needs --moe-dispatcher "
                "hybridep: expert dispatch has dynamic shapes and is captured only with "
                "HybridEP's paged stash (Megatron-LM docs/user-guide/features/cuda_graph.md "
                "L162-182 @ d98e8a6)")
    if tr.moe_pad_expert_input_to_capacity and tr.moe_dispatcher.value == "deepep":
        return ("--moe-pad-expert-input-to-capacity with --moe-dispatcher deepep: Megatron-LM's "
                "flex dispatcher refuses padding on its DeepEP backend (megatron/core/"
                "transformer/transformer_config.py L1754-1761 @ d98e8a6): use alltoall or "
                "hybridep, or leave the flag out")
    return None


def _ep_comm_overlap(tr) -> bool:
    """--overlap-moe-expert-parallel-comm, refused with full recompute and in FP32
    (transformer_config.py L3021-3023, L3034-3037)."""
    return bool(tr.overlap_moe_expert_parallel_comm and tr.recompute is not Recompute.FULL
                and tr.precision is not Precision.FP32)


def _tp_comm_overlap(tr) -> bool:
    """--tp-comm-overlap asserts sequence parallelism (arguments.py L1441-1442)."""
    return bool(tr.tp_comm_overlap and tr.sequence_parallel)


_LOSS = {"native": "--cross-entropy-loss-fusion: core/model_parallel_config.py L320-328, "
                   "core/models/common/language_module/language_module.py L173-198 @ d98e8a6 "
                   "(compute.loss_bytes)",
         "te": "--cross-entropy-fusion-impl te: language_module.py L174-195 @ d98e8a6 "
               "(compute.loss_bytes); Megatron-Bridge's recipes (llama_provider.py L186 @ "
               "684a686, scripts/performance/utils/overrides.py L83-84)"}


def _loss_is(impl: str):
    return lambda tr: tr.cross_entropy_fusion.value == impl


# What the exported launch (megatron_export.py) runs. Every Megatron-LM line at d98e8a6.
_HYBRID_OPT = "megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py L150-179"
PROFILE = PhysicsProfile((
    # bf16 forces fp32 gradient accumulation and all-reduce (accumulate_allreduce_grads_in_fp32)
    # unless --grad-reduce-in-bf16; the DDP main-grad buffer then holds fp32: 4 bytes/param.
    # FP8 runs launch with --bf16 too (megatron_export.py): the same rule
    Setting("grad_bytes", 4, "megatron/training/arguments.py L1204-1217; megatron/core/"
            "distributed/param_and_grad_buffer.py L888-924", ("bf16", "fp8", "nvfp4")),
    # --optimizer-cpu-offload (HybridDeviceOptimizer) reads the GPU param's grad and copies it
    # to pinned CPU grads at step(): the fp32 gradient buffer stays on the GPU
    Setting("grads_stay_on_gpu", 1, "megatron/core/optimizer/cpu_offloading/"
            "hybrid_optimizer.py L100-115, L150-179"),
    # ... and the D2H copies run after the backward and the DP reduction, not during it
    Setting("ds_zero1_overlap_comm", 0, _HYBRID_OPT),
    Setting("ds_zero2_overlap_comm", 0, _HYBRID_OPT),
    # the backward's TP collectives are issued async before the weight-gradient GEMM
    # (CUDA_DEVICE_MAX_CONNECTIONS=1, which environment() exports) and waited after it
    Setting("tp_backward_overlap", 1, "megatron/core/tensor_parallel/layers.py L694-711, "
            "L790, L807"),
    # --overlap-grad-reduce: buckets reduced as the backward fills them (all but the last
    # hidden); without it one bucket, reduced after the backward
    Setting("dp_reduce_overlap", 1, "--overlap-grad-reduce: megatron/training/arguments.py "
            "L3121-3122; megatron/core/distributed/distributed_data_parallel.py L131-137; "
            + BRIDGE, when=lambda tr: bool(tr.overlap_grad_reduce)),
    Setting("dp_reduce_overlap", 0, "--no-overlap-grad-reduce: megatron/training/"
            "arguments.py L3121-3122; megatron/core/distributed/distributed_data_parallel.py "
            "L131-137; finalize_model_grads.py L640", when=lambda tr: not tr.overlap_grad_reduce),
    # --overlap-param-gather: the distributed optimizer's all-gather overlaps the next forward;
    # without it (or without --overlap-grad-reduce, which it needs) it follows the step
    Setting("dp_gather_overlap", 1, "--overlap-param-gather: megatron/training/arguments.py "
            "L3148-3149, L1024-1029; " + BRIDGE, when=_gather_overlap),
    Setting("dp_gather_overlap", 0, "--no-overlap-param-gather: megatron/training/"
            "arguments.py L3148-3149, L1024-1029 (needs --overlap-grad-reduce)",
            when=lambda tr: not _gather_overlap(tr)),
    # --tp-comm-overlap: Transformer Engine userbuffers pipeline the forward and backward TP
    # all-gathers / reduce-scatters with the GEMMs (core/model_parallel_config.py L265-269);
    # assumed fully hidden, as the H100 GEMM curve is fitted with the Megatron-LM README's
    # --tp-comm-overlap runs (gemm_calibration.H100_TP_OVERLAP); --assume tp_overlap=X wins
    Setting("tp_overlap", 1, "--tp-comm-overlap: megatron/core/model_parallel_config.py "
            "L265-269; megatron/training/arguments.py L1441-1442 (needs --sequence-parallel); "
            "Megatron-Bridge src/megatron/bridge/recipes/llama/h100/llama3.py L795-798 @ "
            "067f987", when=_tp_comm_overlap),
    # --overlap-moe-expert-parallel-comm (combined 1F1B: one micro-batch's dispatch/combine
    # behind another's compute) is off by default; on, EP_OVERLAP_SHARE of it hidden
    # (TransformerConfig refuses it with full recompute; with PP > 1 it needs an interleaved
    # schedule, which the export checks: megatron_export_moe.ep_overlap)
    Setting("ep_overlap", 0, "megatron/core/model_parallel_config.py L343",
            when=lambda tr: not _ep_comm_overlap(tr)),
    # context parallelism: --cp-comm-type p2p (the default) runs Transformer Engine's ring,
    # which sends block i+1's K/V on a side stream while block i's attention computes (block 0
    # is local): every transfer hides while a block's attention outlasts it (assumed; where CP
    # is used the blocks are thousands of tokens long)
    Setting("cp_overlap", 1, "megatron/training/arguments.py L3221 (--cp-comm-type default "
            "p2p); TransformerEngine @ d0067d0 transformer_engine/pytorch/attention/"
            "dot_product_attention/context_parallel.py L1698-1715 (AttnFuncWithCPAndKVP2P)"),
    # --overlap-p2p-communication (default on): interleaved 1F1B overlaps each chunk's sends
    # and receives with the next chunk's compute; Megatron forces it off without a virtual
    # pipeline, so plain 1F1B keeps pp_overlap. Megatron-Bridge sets it for VP > 1 likewise
    Setting("pp_overlap_interleaved", 1, "megatron/training/arguments.py L3118-3120, "
            "L1010-1012; Megatron-Bridge v0.2.0 src/megatron/bridge/training/comm_overlap.py "
            "L451-457; the steady state's sends fully hidden: assumed",
            when=lambda tr: tr.overlap_p2p_comm),
    Setting("pp_overlap_interleaved", 0, "--no-overlap-p2p-communication: megatron/training/"
            "arguments.py L3118-3120", when=lambda tr: not tr.overlap_p2p_comm),
    Setting("ep_overlap_needs_interleave", 1, "megatron/core/transformer/transformer_config.py "
            "L3007-3011 (a virtual pipeline when PP > 1)"),
    Setting("ep_overlap", EP_OVERLAP_SHARE, EP_OVERLAP_SOURCE, when=_ep_comm_overlap),
    # ZeRO-3 is Megatron-FSDP (optim_grads_params): it gathers and reduce-scatters whole
    # TransformerLayers (the default fsdp_unit_modules, core/distributed/fsdp/
    # mcore_fsdp_adapter.py L163-173), one all-gather per layer, not per submodule
    Setting("zero3_modules_per_layer", 1, "megatron/core/distributed/fsdp/"
            "mcore_fsdp_adapter.py L163-173"),
    # a recomputed layer reuses its backward's gather (one gather for both)
    Setting("zero3_recompute_regathers", 0, "megatron/core/distributed/fsdp/src/megatron_fsdp/"
            "megatron_fsdp.py L128-130 @ d98e8a6"),
    # ... and always prefetches the next unit (the AllGatherPipeline adds the next bucket group
    # before it checks suggested_AG_prefetch_size), uncapped: DeepSpeed's cap on live
    # parameters (stops a unit above half of it) set to its largest value turns it off
    Setting("zero3_max_live_params", 1e13, "megatron/core/distributed/fsdp/src/"
            "megatron_fsdp/param_and_grad_buffer.py L4487-4512; megatron_fsdp.py L420-444"),
    # --moe-pad-expert-input-to-capacity (with --moe-expert-capacity-factor): the alltoall
    # dispatcher's preprocess returns the static per-expert counts (capacity x ranks) built on
    # the host, no device-to-host copy, so no MoE layer waits on the host (core_v0.14.0
    # token_dispatcher.py L444-467; the dropless path syncs, L523, L532): no EP degree pays
    # moe_layer_host_s. Megatron-Bridge 25.09 runs it (training/utils/moe_token_drop.py L18-57
    # @ 684a686), as NeMo's Mixtral recipe (callbacks/moe_token_drop.py L38-39 @ v2.2.0)
    Setting("moe_host_sync_min_ep", 1e6, "--moe-pad-expert-input-to-capacity: megatron/core/"
            "transformer/moe/token_dispatcher.py L444-467 @ core_v0.14.0 (L517-540 @ d98e8a6)",
            when=lambda tr: bool(tr.moe_pad_expert_input_to_capacity)),
    # --cuda-graph-impl full_iteration: one graph per iteration replays every kernel without a
    # host launch and cannot hold a host sync (cuda_graph.md L114-127 @ d98e8a6: the NaN check
    # is off for that reason); with HybridEP's paged stash the dispatch buffers are pre-sized
    # (L162-182): neither the MoE layer's launches nor its sync reach the host
    # --fp8-param-gather (NVIDIA's FP8 recipes): Transformer Engine FP8 parameters, no 16-bit
    # copy of the GEMM weights, gathered in FP8 (fp8.primary_weight_saving_bytes; with the
    # distributed optimizer or Megatron-FSDP only, arguments.py L1095-1097: ZeRO >= 1 there)
    Setting("fp8_primary_weights", 1, "--fp8-param-gather: megatron/training/arguments.py "
            "L2016-2018; Megatron-Bridge src/megatron/bridge/training/mixed_precision.py L218, "
            "L251, L289 @ v0.3.0", when=lambda tr: bool(
                tr.fp8_param_gather and tr.precision.value in ("fp8", "nvfp4")
                and tr.gemm_recipe.transformer_engine)),
    Setting("moe_layer_fixed_s", 0.0, _CUDA_GRAPH, when=lambda tr: tr.cuda_graph_full_iteration),
    Setting("moe_layer_host_s", 0.0, _CUDA_GRAPH, when=lambda tr: tr.cuda_graph_full_iteration),
    # the graph's MoE layers run the TE op fuser's grouped MLP (the export's flag; MG_GRAPH_
    # EXPERT_TP), which adds fc2's bias and clamps in its fused ops, not in eager torch
    *(Setting(k, 0.0, "core/transformer/moe/experts.py L357-361, L548-589, L623-636 @ d98e8a6 "
              "(scale_bias, ScaledClampedQGeGLU in the fused grouped MLP)",
              when=lambda tr: tr.cuda_graph_full_iteration)
      for k in ("moe_expert_bias_passes", "moe_act_clamp_passes",
                "moe_act_clamp_forward_passes")),
    # the loss over the logits (compute.loss_bytes): --cross-entropy-loss-fusion, natively
    # fused (what the export writes) or Transformer Engine's (Megatron-Bridge's recipes);
    # without the flag Megatron-LM's unfused count, the assumptions' default
    *(Setting(f"loss_{d}_bytes_per_logit", v, _LOSS[impl], when=_loss_is(impl))
      for impl, vals in (("native", (22.0, 10.0)), ("te", (8.0, 14.0)))
      for d, v in zip(("forward", "backward"), vals)),
    # a YaRN model's RoPE: Megatron-core leaves the fused kernel when mscale != 1 (YaRN's
    # concentration factor) and runs it in eager torch (compute.rope_bytes counts the bytes)
    *(Setting(f"rope_unfused_{d}_bytes_per_element", v, "megatron/core/models/common/"
              "embeddings/rope_utils.py L92-156, L340-356; training/arguments.py L1628-1629 "
              "@ d98e8a6 (compute.rope_bytes)")
      for d, v in (("forward", 20.0), ("backward", 24.0))),
))

LAUNCH = "torchrun --nproc-per-node G --nnodes N pretrain_gpt.py ARGS (Megatron-LM's GPT trainer)"

PLUGIN = FrameworkPlugin(
    key="megatron", label="Megatron-LM", repo="NVIDIA/Megatron-LM", commit=COMMIT,
    rules=RULES, launch=LAUNCH, environment=environment, profile=PROFILE,
    exporter=Exporter("megatron", "a Megatron-LM launch script (torchrun pretrain_gpt.py)",
                      "optimus_calc.frameworks.megatron_export", "megatron_args"),
    launch_flags=tuple((f, {"overlap_p2p_comm": "--overlap-p2p-communication",
                            "cuda_graph_full_iteration": "--cuda-graph-impl full_iteration"}
                        .get(f, "--" + f.replace("_", "-"))) for f in (
        "overlap_grad_reduce", "overlap_param_gather", "overlap_p2p_comm",
        "overlap_moe_expert_parallel_comm", "cuda_graph_full_iteration", "cross_entropy_fusion",
        "moe_pad_expert_input_to_capacity", "tp_comm_overlap", "fp8_param_gather",
        "recompute_modules")))
