"""Megatron-LM ``pretrain_gpt.py`` arguments for a layout: the architecture, parallel, batch,
pipeline-split, ZeRO (distributed optimizer / Megatron-FSDP), offload and precision flags.

Flag names and rules are Megatron-LM's at commit d98e8a64ddf34856e74b24714e3bedb2f5a39553
(megatron/training/arguments.py and the config dataclasses it turns into flags through
megatron/training/argument_utils.py ``ArgumentGroupFactory``); tests check every flag against
the extracted option list.
"""

from __future__ import annotations

from typing import assert_never



from optimus_calc.evaluate.shapes import split_layers
from optimus_calc.export import ExportError, grad_accumulation, require
from optimus_calc.frameworks import Framework
from optimus_calc.specs.training import Offload, Optimizer, Precision, Recompute, ZeroStage

# Megatron's default dropout (TransformerConfig.hidden_dropout / attention_dropout = 0.1,
# megatron/core/transformer/transformer_config.py L188-191): written when the plan assumed
# dropout (--dropout), 0 otherwise.
MEGATRON_DEFAULT_DROPOUT = 0.1
# arguments.py L2441: --make-vocab-size-divisible-by default 128 (padding multiple per TP rank)
MEGATRON_VOCAB_MULTIPLE = 128


def pipeline_split(layers: int, pp: int) -> tuple[int, int, int] | None:
    """(first, middle, last) layers per stage for an uneven split, None when even.

    Megatron takes the first and last stage counts (--decoder-first/last-pipeline-num-layers,
    both > 0) and splits the rest evenly over the middle stages
    (core/transformer/transformer_config.py L2294-2352). The middle stages get
    ceil(layers / pp) (or the floor, whichever loads the busiest stage least), so the most
    loaded stage holds as many layers as in the planner's split; the first stage, which keeps
    the most micro-batches in flight under 1F1B, gets the fewer of the remaining layers.
    """
    if pp <= 1 or layers % pp == 0:
        return None
    if pp == 2:
        return layers // 2, 0, layers - layers // 2
    best = None
    for mid in (-(-layers // pp), layers // pp):
        rest = layers - (pp - 2) * mid
        if mid < 1 or rest < 2:
            continue
        last = min(max(mid, -(-rest // 2)), rest - 1)
        first = rest - last
        key = (max(first, mid, last), first)
        if best is None or key < best[0]:
            best = (key, (first, mid, last))
    if best is None:
        raise ExportError(f"no Megatron-LM split of {layers} layers over {pp} pipeline stages "
                          "gives every stage at least one layer")
    return best[1]


def layout_string(stage_layers: list[int]) -> str:
    """Megatron's --pipeline-model-parallel-layout for layers per stage: the embedding (E) on
    the first stage, the loss (L) on the last, stages split by '|', 't*n' for n layers."""
    parts = [f"t*{n}" if n else "" for n in stage_layers]
    parts[0], parts[-1] = "E" + parts[0], parts[-1] + "L"
    return "|".join(parts)


def _vocab_multiple(vocab: int, tp: int) -> int:
    """The largest --make-vocab-size-divisible-by <= 128 that pads nothing: Megatron pads the
    vocabulary to a multiple of this x TP (megatron/training/vocab_utils.py L58).
    1 when even that pads (vocab not a multiple of TP)."""
    for d in range(MEGATRON_VOCAB_MULTIPLE, 0, -1):
        if vocab % (d * tp) == 0:
            return d
    return 1


def megatron_arg_list(layout, training, model, gpus_per_node: int | None = None
                      ) -> tuple[list[tuple[str, str | None]], list[str]]:
    """The (flag, value) pairs (value None for a switch) and comment lines."""
    require(layout, training, model, Framework.MEGATRON)
    lay, tr, m = layout, training, model
    notes: list[str] = []
    a: list[tuple[str, str | None]] = []

    def add(flag: str, value=None) -> None:
        a.append((flag, None if value is None else str(value)))

    if m.arch != "decoder":
        raise ExportError(f"{m.name} is an encoder; the export targets Megatron-LM's GPT "
                          "(decoder) pretraining script")
    # ---- architecture ------------------------------------------------------------------
    add("--num-layers", m.layers)
    add("--hidden-size", m.hidden)
    add("--ffn-hidden-size", m.ffn_hidden)
    add("--num-attention-heads", m.heads)
    add("--kv-channels", m.d_head)
    if m.n_kv != m.heads:
        add("--group-query-attention")
        add("--num-query-groups", m.n_kv)
    if m.ffn_type.value == "swiglu":
        add("--swiglu")
    elif m.ffn_type.value != "gelu":
        raise ExportError(f"{m.name}: a {m.ffn_type.value} MLP has no Megatron-LM flag "
                          "(--swiglu or the default GeLU)")
    add("--normalization", "RMSNorm" if m.norm == "rmsnorm" else "LayerNorm")
    if m.qk_norm:
        add("--qk-layernorm")
    if m.position_embedding == "rope":
        add("--position-embedding-type", "rope")
        if m.rope_base:
            add("--rotary-base", int(m.rope_base))
        else:
            notes.append(f"--rotary-base: the catalog entry for {m.name} has no rope_base; "
                         "Megatron's default 10000 applies (set it to the model's rope_theta)")
    elif m.position_embedding == "learned":
        add("--position-embedding-type", "learned_absolute")
    elif m.position_embedding == "none":
        add("--position-embedding-type", "none")
    else:
        raise ExportError(f"{m.name}: {m.position_embedding} position embeddings have no "
                          "Megatron-LM setting")
    max_pos = max(m.max_position, tr.seq_len) if m.position_embedding == "learned" \
        else max(m.seq_len, tr.seq_len)
    add("--max-position-embeddings", max_pos)
    add("--seq-length", tr.seq_len)
    if not m.tied_embeddings:
        add("--untie-embeddings-and-output-weights")
    biases = (m.attention_bias, m.attention_out_bias, m.mlp_bias)
    if biases == (False, False, False):
        add("--disable-bias-linear")
    elif biases == (True, False, False):
        add("--disable-bias-linear")
        add("--add-qkv-bias")
    elif biases != (True, True, True):
        raise ExportError(f"{m.name}: biases on {biases} (QKV, output, MLP) have no Megatron-LM "
                          "setting (all, none, or QKV only)")
    if m.attention_sinks:
        add("--softmax-type", "learnable")
    dropout = MEGATRON_DEFAULT_DROPOUT if tr.dropout else 0.0
    add("--attention-dropout", dropout)
    add("--hidden-dropout", dropout)
    add("--vocab-size", m.vocab)
    mult = _vocab_multiple(m.vocab, lay.tp)
    add("--make-vocab-size-divisible-by", mult)
    if m.vocab % lay.tp:
        notes.append(f"vocabulary {m.vocab} is not a multiple of TP {lay.tp}: Megatron pads it")
    notes.append("tokenizer: add --tokenizer-type HuggingFaceTokenizer --tokenizer-model "
                 f"<{m.name} tokenizer> and the data flags (--data-path ...)")
    if m.is_moe:
        add("--num-experts", m.experts)
        add("--moe-router-topk", m.top_k)
        add("--moe-ffn-hidden-size", m.expert_ffn)
        if m.shared_experts:
            add("--moe-shared-expert-intermediate-size", m.shared_experts * m.expert_ffn)
        if m.moe_layer_freq > 1:
            pattern = [1 if (i + 1) % m.moe_layer_freq == 0 else 0 for i in range(m.layers)]
            add("--moe-layer-freq", "'[" + ",".join(map(str, pattern)) + "]'")
        if m.router_bias:
            notes.append("router bias: Megatron-LM's router has no bias term; the count differs "
                         f"by {m.router_params - m.hidden * m.experts} parameters per MoE layer")
    # ---- parallelism and batch -----------------------------------------------------------
    add("--tensor-model-parallel-size", lay.tp)
    add("--pipeline-model-parallel-size", lay.pp)
    if lay.cp > 1:
        add("--context-parallel-size", lay.cp)
    if lay.ep > 1:
        add("--expert-model-parallel-size", lay.ep)
    if tr.sequence_parallel and lay.tp > 1:
        add("--sequence-parallel")
    add("--micro-batch-size", tr.micro_batch)
    add("--global-batch-size", tr.global_batch)
    n_micro = grad_accumulation(lay, tr)
    if lay.interleave > 1:
        add("--num-layers-per-virtual-pipeline-stage", m.layers // (lay.pp * lay.interleave))
        if n_micro % lay.pp:
            # the default group size (= PP) needs a multiple of PP micro-batches; one group of
            # all of them satisfies schedules.py L1160-1178
            add("--microbatch-group-size-per-virtual-pipeline-stage", n_micro)
    split = pipeline_split(m.layers, lay.pp)
    planned = split_layers(m.layers, lay.pp)
    if split and max(split) <= max(planned):
        add("--decoder-first-pipeline-num-layers", split[0])
        add("--decoder-last-pipeline-num-layers", split[2])
        notes.append(f"uneven pipeline split: {split[0]} + {lay.pp - 2} x {split[1]} + "
                     f"{split[2]} = {m.layers} layers")
    elif split:
        # first/last counts alone would overload a stage: give Megatron the planner's split
        # (arguments.py L3103, core/transformer/pipeline_parallel_layer_layout.py L283-301)
        add("--pipeline-model-parallel-layout", layout_string(planned))
        notes.append(f"uneven pipeline split: {planned} layers per stage")
    mode = tr.recompute
    match mode:
        case Recompute.NONE:
            pass
        case Recompute.SELECTIVE:
            add("--recompute-granularity", "selective")
        case Recompute.FULL:
            add("--recompute-granularity", "full")
            add("--recompute-method", "uniform")
            add("--recompute-num-layers", 1)
        case _:
            assert_never(mode)
    # ---- ZeRO and offload ----------------------------------------------------------------
    if lay.zero is ZeroStage.OS:
        add("--use-distributed-optimizer")
    elif lay.zero >= ZeroStage.OS_G:
        # Megatron-FSDP (arguments.py L1118-1135, L3190): optim_grads = ZeRO-2,
        # optim_grads_params = ZeRO-3; it needs the fsdp_dtensor checkpoint format (L1169-1170)
        add("--use-megatron-fsdp")
        add("--data-parallel-sharding-strategy",
            "optim_grads_params" if lay.zero is ZeroStage.OS_G_P else "optim_grads")
        add("--ckpt-format", "fsdp_dtensor")
        if lay.zero is ZeroStage.OS_G_P:
            add("--init-model-with-meta-device")
    if lay.offload is Offload.CPU:
        # needs the precision-aware optimizer (arguments.py L1884-1887)
        add("--optimizer-cpu-offload")
        add("--use-precision-aware-optimizer")
        add("--optimizer-offload-fraction", 1.0)
    # ---- precision and optimizer ---------------------------------------------------------
    prec = tr.precision
    match prec:
        case Precision.BF16:
            add("--bf16")
        case Precision.FP16:
            add("--fp16")
        case Precision.FP32:
            pass  # Megatron-LM's default
        case _:
            assert_never(prec)
    add("--optimizer", "sgd" if tr.optimizer is Optimizer.SGD else "adam")
    gpn = gpus_per_node or min(lay.gpus, 8)
    nodes = max(1, lay.gpus // gpn)
    head = [f"# Megatron-LM ({lay.gpus} GPUs): torchrun --nproc-per-node {gpn} --nnodes "
            f"{nodes} pretrain_gpt.py ARGS"] + [f"# {n}" for n in notes]
    return a, head


def megatron_args(layout, training, model, gpus_per_node: int | None = None) -> str:
    args, head = megatron_arg_list(layout, training, model, gpus_per_node)
    lines = [f if v is None else f"{f} {v}" for f, v in args]
    return "\n".join(head + [" \\\n  ".join(lines)]) + "\n"


__all__ = ["megatron_args", "megatron_arg_list", "pipeline_split", "layout_string"]

