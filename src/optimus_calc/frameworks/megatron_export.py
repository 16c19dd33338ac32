"""Megatron-LM ``pretrain_gpt.py`` launch script for a layout: the environment Megatron
asserts, then the architecture (MLA, MoE with its dense layers, router and shared experts),
parallel, batch, exact pipeline split, ZeRO (distributed optimizer / Megatron-FSDP), offload and
precision flags.

Flag names and rules are Megatron-LM's at commit d98e8a64ddf34856e74b24714e3bedb2f5a39553
(megatron/training/arguments.py and the config dataclasses it turns into flags through
megatron/training/argument_utils.py ``ArgumentGroupFactory``); tests check every flag against
the extracted option list.
"""

from __future__ import annotations

import shlex
from typing import assert_never

from optimus_calc.evaluate.shapes import split_layers, virtual_stage_layers
from optimus_calc.frameworks.megatron import unbuildable
from optimus_calc.frameworks.megatron_export_moe import (
    ROUTERS, cross_entropy, cuda_graph, dispatcher, ep_overlap, graph_environment, moe_layers,
    token_drop)
from optimus_calc.frameworks.exporting import (ExportError, environment_lines,
                                               grad_accumulation, node_split, require)
from optimus_calc.frameworks import Framework
from optimus_calc.frameworks.registry import named_kernel
from optimus_calc.specs.training import (Fp8Recipe, Offload, Optimizer, Precision, Recompute,
                                         ZeroStage)

# Megatron's default dropout (TransformerConfig.hidden_dropout / attention_dropout = 0.1,
# megatron/core/transformer/transformer_config.py L188-191): written when the plan assumed
# dropout (--dropout), 0 otherwise.
MEGATRON_DEFAULT_DROPOUT = 0.1
# --attention-backend and --flash-attention-version of a named kernel (fa1: rule MG_FA1)
BACKENDS = {"fa2": ("flash", 2), "fa3": ("flash", 3), "cudnn": ("fused", None)}
# arguments.py L2441: --make-vocab-size-divisible-by default 128 (padding multiple per TP rank)
MEGATRON_VOCAB_MULTIPLE = 128


def stage_layout(stage_layers: list[int], mtp_layers: int = 0) -> str:
    """Megatron's --pipeline-model-parallel-layout for layers per stage: the embedding (E) on
    the first stage, the MTP layers (m) and the loss (L) on the last, stages split by '|',
    't*n' for n layers (core/transformer/pipeline_parallel_layer_layout.py L86-135, L283-310)."""
    parts = [f"t*{n}" if n else "" for n in stage_layers]
    parts[0] = "E" + parts[0]
    parts[-1] = parts[-1] + "m" * mtp_layers + "L"
    return "|".join(parts)


def layout_string(stage_layers: list[int]) -> str:
    """The layout without MTP layers (kept for callers of the earlier name)."""
    return stage_layout(stage_layers)


def _vocab_multiple(vocab: int, tp: int) -> int:
    """The largest --make-vocab-size-divisible-by <= 128 that pads nothing: Megatron pads the
    vocabulary to a multiple of this x TP (megatron/training/vocab_utils.py L58).
    1 when even that pads (vocab not a multiple of TP)."""
    for d in range(MEGATRON_VOCAB_MULTIPLE, 0, -1):
        if vocab % (d * tp) == 0:
            return d
    return 1


class _Args:
    """Collects (flag, value) pairs (value None for a switch) and comment lines."""

    def __init__(self) -> None:
        self.pairs: list[tuple[str, str | None]] = []
        self.notes: list[str] = []

    def add(self, flag: str, value=None) -> None:
        self.pairs.append((flag, None if value is None else str(value)))


def _refuse_unbuildable(m) -> None:
    if why := unbuildable(m):
        raise ExportError(why)


def _attention(a: _Args, m) -> None:
    a.add("--num-attention-heads", m.heads)
    if m.is_mla:
        # MLA: arguments.py L3546-3556; the query is compressed when q_lora_rank > 0
        a.add("--multi-latent-attention")
        if m.q_lora_rank:
            a.add("--q-lora-rank", m.q_lora_rank)
        a.add("--kv-lora-rank", m.kv_lora_rank)
        a.add("--qk-head-dim", m.qk_nope_head_dim)
        a.add("--qk-pos-emb-head-dim", m.qk_rope_head_dim)
        a.add("--v-head-dim", m.v_head_dim)
        # MLA takes YaRN by default (transformer_config.py L3306); the Model carries no rope
        # scaling, so plain RoPE (arguments.py L2906)
        a.add("--rope-type", "rope")
        a.notes.append("MLA with plain RoPE: if config.json has a YaRN rope_scaling, use "
                       "--rope-type yarn --rotary-scaling-factor F --mscale M --mscale-all-dim A")
        return
    a.add("--kv-channels", m.d_head)
    if m.n_kv != m.heads:
        a.add("--group-query-attention")
        a.add("--num-query-groups", m.n_kv)


def _window(a: _Args, m) -> None:
    """The window the plan timed: --window-size "W-1,0", W keys with the query's (Megatron-Bridge
    @ 067f987 models/mistral/mistral_bridge.py L56-58, gpt_oss/gpt_oss_bridge.py L87-88); all
    but every N-th layer: --window-attn-skip-freq N (core/transformer/utils.py L531-542)."""
    n, L = m.sliding_window_layers, m.layers
    if not n:
        return
    a.add("--window-size", f"{m.sliding_window - 1},0")  # training/arguments.py L2384-2394
    every = next((k for k in range(2, L + 1) if L - L // k == n), None)
    if n < L:
        a.add("--window-attn-skip-freq", every or f"[1]*{n}+[0]*{L - n}")
    if n < L and not every:
        a.notes.append(f"--window-attn-skip-freq: {n} windowed layers of {L} first; write the "
                       "config's layer_types as its 1/0 list")


def _mlp_and_norm(a: _Args, m) -> None:
    """The MLP's activation and the norm: --swiglu, --squared-relu (argument_utils.py L320-322
    @ d98e8a6, with bias-GeLU fusion off: on unless biases are, arguments.py L1605-1606, L2892,
    and refused with squared ReLU, transformer_config.py L2420-2425), --normalization and
    --apply-layernorm-1p (layernorm_zero_centered_gamma, transformer_config.py L206)."""
    for flag in {"swiglu": ("--swiglu",), "relu2": ("--squared-relu", "--no-bias-gelu-fusion")
                 }.get(m.ffn_type.value, ()):
        a.add(flag)
    if m.glu_clamp:  # GPT-OSS: TransformerConfig fields without a flag (L231-237 there)
        a.notes.append("the clamped quick-GELU GLU (activation_func quick_gelu, glu_linear_"
                       "offset 1.0, activation_func_clamp_value 7.0: Megatron-Bridge "
                       "gpt_oss_provider.py L79-84 @ v0.3.0; core/transformer/transformer_"
                       "config.py L231-237) has no pretrain_gpt.py flag: this script runs "
                       "--swiglu; the step timed the clamp")
    a.add("--normalization", "RMSNorm" if m.norm == "rmsnorm" else "LayerNorm")
    if m.norm_zero_centered_gamma:
        a.add("--apply-layernorm-1p")


def _architecture(a: _Args, m, tr, tp: int) -> None:
    a.add("--num-layers", m.layers)
    a.add("--hidden-size", m.hidden)
    a.add("--ffn-hidden-size", m.ffn_hidden)
    _attention(a, m)
    _window(a, m)
    # the attention kernel the plan assumed (transformer_config.py L151, L157; core/transformer/
    # enums.py L51-57): a named one pinned, unfused for --no-flash-attn, else auto (TE's pick)
    backend, version = (("unfused", None) if not tr.flash_attention
                        else BACKENDS.get(named_kernel(tr), (None, None)))
    if backend:
        a.add("--attention-backend", backend)
    if version:
        a.add("--flash-attention-version", version)
    _mlp_and_norm(a, m)
    if m.qk_norm or m.is_mla:
        # MLA's latent norms (q_a / kv_a layernorm) are built only with this switch
        # (core/models/gpt/gpt_layer_specs.py L428-429, the local MLA spec)
        a.add("--qk-layernorm")
    if m.position_embedding == "rope":
        a.add("--position-embedding-type", "yarn" if m.rope_yarn_factor > 1 else "rope")
        if m.rope_yarn_factor > 1:  # training/argument_utils.py L384-413 (arguments.py L2400,
            # L3558): beta fast 32, slow 1, --mscale 1, --mscale-all-dim 0 as Megatron's defaults
            a.add("--rotary-scaling-factor", m.rope_yarn_factor)
            if m.rope_yarn_original_max_position:
                a.add("--yarn-original-max-position-embeddings",
                      m.rope_yarn_original_max_position)
            if not m.rope_yarn_truncate:  # HF truncate false: endpoints not rounded
                a.add("--no-yarn-correction-range-round-to-int")  # arguments.py L2406-2410
        if m.rotary_percent < 1:  # arguments.py L2420 (Nemotron-4: 0.5)
            a.add("--rotary-percent", m.rotary_percent)
        if m.rope_base:
            a.add("--rotary-base", int(m.rope_base))
        else:
            a.notes.append(f"--rotary-base: the catalog entry for {m.name} has no rope_base; "
                           "Megatron's default 10000 applies (set it to the model's rope_theta)")
    else:
        a.add("--position-embedding-type",
              "learned_absolute" if m.position_embedding == "learned" else "none")
    a.add("--max-position-embeddings", max(m.max_position, tr.seq_len)
          if m.position_embedding == "learned" else max(m.seq_len, tr.seq_len))
    a.add("--seq-length", tr.seq_len)
    if not m.tied_embeddings:
        a.add("--untie-embeddings-and-output-weights")
    biases = (m.attention_bias, m.attention_out_bias, m.mlp_bias)
    if biases == (False, False, False):
        a.add("--disable-bias-linear")
    elif biases == (True, False, False):
        a.add("--disable-bias-linear")
        a.add("--add-qkv-bias")
    if m.attention_sinks:
        a.add("--softmax-type", "learnable")
    dropout = MEGATRON_DEFAULT_DROPOUT if tr.dropout else 0.0
    a.add("--attention-dropout", dropout)
    a.add("--hidden-dropout", dropout)
    a.add("--vocab-size", m.vocab)
    a.add("--make-vocab-size-divisible-by", _vocab_multiple(m.vocab, tp))
    if m.vocab % tp:
        a.notes.append(f"vocabulary {m.vocab} is not a multiple of TP {tp}: Megatron pads it")
    a.notes.append("tokenizer: add --tokenizer-type HuggingFaceTokenizer --tokenizer-model "
                   f"<{m.name} tokenizer> and the data flags (--data-path ...)")
    if m.mtp_layers:
        a.add("--mtp-num-layers", m.mtp_layers)


def _pipeline(a: _Args, lay, m, n_micro: int, extra_first: bool = False) -> None:
    """The evaluated split (shapes.split_layers / virtual_stage_layers with ``extra_first``,
    the plan's Assumptions.pipeline_extra_layers_first), pinned where it is uneven."""
    if lay.interleave > 1:
        if m.layers % (lay.pp * lay.interleave):
            # the evaluated virtual stages in Megatron's order (stage v x pp + p runs on rank p,
            # pipeline_parallel_layer_layout.py L47-54); the layout sets the interleave
            chunks = virtual_stage_layers(m.layers, lay.pp, lay.interleave, extra_first)
            a.add("--pipeline-model-parallel-layout", stage_layout(chunks, m.mtp_layers))
            a.notes.append(f"virtual pipeline split as evaluated: {chunks} layers per chunk")
        else:
            a.add("--num-layers-per-virtual-pipeline-stage", m.layers // (lay.pp * lay.interleave))
        if n_micro % lay.pp:
            # the default group size (= PP) needs a multiple of PP micro-batches; one group of
            # all of them satisfies schedules.py L1160-1178
            a.add("--microbatch-group-size-per-virtual-pipeline-stage", n_micro)
        return
    planned = split_layers(m.layers, lay.pp, extra_first)
    if len(set(planned)) > 1:
        # the evaluator's split, stage by stage (arguments.py L3103)
        a.add("--pipeline-model-parallel-layout", stage_layout(planned, m.mtp_layers))
        a.notes.append(f"pipeline split as evaluated: {planned} layers per stage")


def _parallel_and_batch(a: _Args, lay, tr, m, extra_first: bool = False) -> None:
    a.add("--tensor-model-parallel-size", lay.tp)
    a.add("--pipeline-model-parallel-size", lay.pp)
    if lay.cp > 1:
        a.add("--context-parallel-size", lay.cp)
    if lay.ep > 1:
        a.add("--expert-model-parallel-size", lay.ep)
    if getattr(lay, "etp", None) is not None:  # parallel folding (default: TP)
        a.add("--expert-tensor-parallel-size", lay.etp)
    if tr.sequence_parallel and lay.tp > 1:
        a.add("--sequence-parallel")
    a.add("--micro-batch-size", tr.micro_batch)
    a.add("--global-batch-size", tr.global_batch)
    _pipeline(a, lay, m, grad_accumulation(lay, tr), extra_first)
    mode = tr.recompute
    match mode:
        case Recompute.NONE:
            pass
        case Recompute.SELECTIVE:  # --recompute-modules' list replaces the default core_attn
            a.add("--recompute-granularity", "selective")  # (transformer_config.py L1940-1941)
            if tr.recompute_modules:  # (moe_act's --moe-grouped-gemm: megatron_export_moe)
                a.add("--recompute-modules", " ".join(tr.recompute_modules))
        case Recompute.FULL:
            a.add("--recompute-granularity", "full")
            a.add("--recompute-method", "uniform")
            a.add("--recompute-num-layers", 1)
        case _:
            assert_never(mode)


def _zero_precision(a: _Args, lay, tr) -> None:
    if lay.zero is ZeroStage.OS:
        a.add("--use-distributed-optimizer")
    elif lay.zero >= ZeroStage.OS_G:
        # Megatron-FSDP (arguments.py L1118-1135, L3190): optim_grads = ZeRO-2,
        # optim_grads_params = ZeRO-3; it needs the fsdp_dtensor checkpoint format (L1169-1170)
        a.add("--use-megatron-fsdp")
        a.add("--data-parallel-sharding-strategy",
              "optim_grads_params" if lay.zero is ZeroStage.OS_G_P else "optim_grads")
        a.add("--ckpt-format", "fsdp_dtensor")
        if lay.zero is ZeroStage.OS_G_P:
            a.add("--init-model-with-meta-device")
    if lay.offload is Offload.CPU:
        # needs the precision-aware optimizer (arguments.py L1884-1887)
        a.add("--optimizer-cpu-offload")
        a.add("--use-precision-aware-optimizer")
        a.add("--optimizer-offload-fraction", 1.0)
    prec = tr.precision
    match prec:
        case Precision.BF16:
            a.add("--bf16")
        case Precision.FP16:
            a.add("--fp16")
        case Precision.FP32:
            pass  # Megatron-LM's default
        case Precision.FP8:
            # bf16 weights with Transformer Engine FP8 GEMMs: --fp8-format (TransformerConfig.fp8,
            # e4m3 forward / e5m2 gradients = hybrid) and --fp8-recipe, transformer_config.py
            # L587-600 @ d98e8a6 (tensorwise = TE Float8CurrentScaling, fp8_utils.py L775-777)
            a.add("--bf16")
            a.add("--fp8-format", "hybrid")
            a.add("--fp8-recipe", {Fp8Recipe.TE_DELAYED: "delayed",
                                   Fp8Recipe.MXFP8: "mxfp8"}.get(tr.fp8_recipe, "tensorwise"))
            # FP8 parameters where the plan timed them (fp8.primary_weight_saving_bytes): the
            # distributed optimizer or Megatron-FSDP (arguments.py L1095-1097), not with
            # --optimizer-cpu-offload (L1889-1890 allows the delayed recipe only)
            if (tr.fp8_param_gather and lay.zero >= ZeroStage.OS
                    and lay.offload is Offload.NONE):
                a.add("--fp8-param-gather")  # arguments.py L2016-2018
        case Precision.NVFP4:
            # bf16 weights with Transformer Engine NVFP4 GEMMs (TransformerConfig.fp4 'e2m1',
            # fp4_recipe 'nvfp4', transformer_config.py L671-686 @ d98e8a6; TE >= 2.7,
            # arguments.py L1107-1109), FP4 parameters as Megatron-Bridge's bf16_with_nvfp4_mixed
            # sets (fp4_param_gather True) where the plan timed them: the distributed optimizer
            # only (Fp8Recipe.params_max_zero; Megatron-FSDP does not act on it)
            a.add("--bf16")
            a.add("--fp4-format", "e2m1")
            a.add("--fp4-recipe", "nvfp4")
            if (tr.fp8_param_gather and lay.zero == ZeroStage.OS
                    and lay.offload is Offload.NONE):
                a.add("--fp4-param-gather")  # transformer_config.py L683-689
        case _:
            assert_never(prec)
    if prec in (Precision.BF16, Precision.FP8, Precision.NVFP4) and tr.grad_bytes == 2:
        # --grad-bytes 2: bf16 gradients, accumulated and reduced in bf16 (arguments.py
        # L1213-1214; L3053), where Megatron-LM's bf16 default is fp32 (the profile's 4 bytes)
        a.add("--grad-reduce-in-bf16")
    a.add("--optimizer", "sgd" if tr.optimizer is Optimizer.SGD else "adam")


def _overlaps(a: _Args, lay, tr) -> None:
    """The communication overlaps the Megatron-LM profile times (frameworks/megatron.py), each
    written only where Megatron-LM's validate_args accepts it: --overlap-param-gather needs the
    distributed optimizer or Megatron-FSDP and --overlap-grad-reduce (arguments.py
    L1024-1029); --tp-comm-overlap needs sequence parallelism (L1441-1442), hence TP > 1, and
    Transformer Engine (the default --transformer-impl)."""
    if tr.overlap_grad_reduce:
        a.add("--overlap-grad-reduce")  # arguments.py L3121-3122
        if tr.overlap_param_gather and lay.zero >= ZeroStage.OS:
            a.add("--overlap-param-gather")  # arguments.py L3148-3149
    if not tr.overlap_p2p_comm and lay.interleave > 1:
        a.add("--no-overlap-p2p-communication")  # arguments.py L3118-3120 (default on)
    if tr.overlap_moe_expert_parallel_comm:
        ep_overlap(a, lay, tr)
    if tr.tp_comm_overlap and tr.sequence_parallel and lay.tp > 1:
        # ModelParallelConfig.tp_comm_overlap (core/model_parallel_config.py L265), a flag
        # through ArgumentGroupFactory(TransformerConfig) (arguments.py L2373)
        a.add("--tp-comm-overlap")
        a.notes.append("--tp-comm-overlap: on GPUs without CUDA multicast (before Hopper) "
                       "Transformer Engine asks for UB_SKIPMC=1 (CUDA IPC instead; "
                       "TransformerEngine transformer_engine/pytorch/module/base.py L217-225 "
                       "@ d0067d0)")


def megatron_arg_list(layout, training, model, gpus_per_node: int | None = None,
                      extra_first: bool | None = None
                      ) -> tuple[list[tuple[str, str | None]], list[str]]:
    """The (flag, value) pairs (value None for a switch) and comment lines; ``extra_first``:
    the pipeline split the plan evaluated (None: Megatron-LM's, shapes.split_layers)."""
    _refuse_unbuildable(model)  # the specific refusal first
    require(layout, training, model, Framework.MEGATRON)
    a = _Args()
    _architecture(a, model, training, layout.tp)
    moe_layers(a, model, ROUTERS)
    _parallel_and_batch(a, layout, training, model, bool(extra_first))
    _zero_precision(a, layout, training)
    dispatcher(a, model, training)
    _overlaps(a, layout, training)
    token_drop(a, model, training)
    cuda_graph(a, model, training)
    cross_entropy(a, training)
    gpn, nodes = node_split(layout.gpus, gpus_per_node)
    head = [f"# Megatron-LM @ d98e8a64 ({layout.gpus} GPUs, {nodes} x {gpn}): run this script "
            "on every node from the Megatron-LM checkout, with MASTER_ADDR/NODE_RANK set"]
    return a.pairs, head + [f"# {n}" for n in a.notes]


def _quoted(flag: str, value: str) -> str:
    """The value as shell words: a list flag (nargs "+") one word per item."""
    items = value.split(" ") if flag == "--recompute-modules" else [value]
    return " ".join(shlex.quote(x) for x in items)


def megatron_args(layout, training, model, gpus_per_node: int | None = None,
                  extra_first: bool | None = None) -> str:
    args, head = megatron_arg_list(layout, training, model, gpus_per_node, extra_first)
    gpn, nodes = node_split(layout.gpus, gpus_per_node)
    env = environment_lines(layout, Framework.MEGATRON) + graph_environment(model, training)
    launch = (f"torchrun --nproc-per-node {gpn} --nnodes {nodes} --node-rank ${{NODE_RANK:-0}} "
              "--master-addr ${MASTER_ADDR:-localhost} --master-port ${MASTER_PORT:-6000} "
              "pretrain_gpt.py")
    lines = [launch] + [f if v is None else f"{f} {_quoted(f, v)}" for f, v in args]
    return "\n".join(["#!/bin/bash"] + head + env + [" \\\n  ".join(lines)]) + "\n"


__all__ = ["megatron_args", "megatron_arg_list", "stage_layout", "layout_string", "ROUTERS"]
