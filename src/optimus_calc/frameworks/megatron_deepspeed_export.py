"""Megatron-DeepSpeed ``pretrain_gpt.py`` arguments for a layout: the whole model in its own
dialect, then parallelism, batch, ZeRO and MoE. The DeepSpeed exporter writes them into the
``_launch`` command of the JSON when only Megatron-DeepSpeed runs the layout.

Flags are Megatron-DeepSpeed's at commit 4efb479d5317ce9b86096b9d8e3e8030b0b5263b
(megatron/arguments.py; lines below), which differ from Megatron-LM's: GQA is
``--num-key-value-heads`` (not ``--group-query-attention --num-query-groups``), RoPE is
``--use-rotary-position-embeddings --rotary-position-embeddings-theta`` (an int) with
``--no-position-embedding``, biases are all-or-none (``--disable-bias-linear``).
"""

from __future__ import annotations

import shlex

from optimus_calc.frameworks.exporting import ExportError
from optimus_calc.frameworks.megatron_deepspeed import unbuildable
from optimus_calc.frameworks.registry import named_kernel
from optimus_calc.specs.training import Precision, Recompute

# megatron/arguments.py L644: --make-vocab-size-divisible-by default 128; the vocabulary is padded
# to a multiple of it x TP (megatron/tokenizer/tokenizer.py L58-71)
VOCAB_MULTIPLE = 128


def vocab_multiple(vocab: int, tp: int) -> int:
    """The largest --make-vocab-size-divisible-by <= 128 that pads nothing (1 if none does)."""
    for d in range(VOCAB_MULTIPLE, 0, -1):
        if vocab % (d * tp) == 0:
            return d
    return 1


def model_args(layout, training, model) -> tuple[list[tuple[str, str | None]], list[str]]:
    """(flag, value or None for a switch) pairs of the architecture, and notes."""
    m, tr, lay = model, training, layout
    why = unbuildable(m)
    if why:
        raise ExportError(why)
    a: list[tuple[str, str | None]] = []
    notes: list[str] = []

    def add(flag: str, value=None) -> None:
        a.append((flag, None if value is None else str(value)))

    # network size: megatron/arguments.py L602-637
    add("--num-layers", m.layers)
    add("--hidden-size", m.hidden)
    # every expert is the layer's ParallelMLP (transformer.py L1069-1071): with MoE in every
    # layer the MLP width is the experts'
    every_layer_moe = m.is_moe and m.moe_layer_freq == 1
    add("--ffn-hidden-size", m.expert_ffn if every_layer_moe else m.ffn_hidden)
    add("--num-attention-heads", m.heads)
    if m.n_kv != m.heads:
        add("--num-key-value-heads", m.n_kv)  # L623
    if m.d_head * m.heads != m.hidden:
        add("--kv-channels", m.d_head)  # L625
    add("--seq-length", tr.seq_len)  # L1278
    if m.position_embedding == "learned":
        # the learned table has max-position-embeddings rows (language_model.py L163-170)
        add("--max-position-embeddings", max(m.max_position or tr.seq_len, tr.seq_len))
    else:
        add("--max-position-embeddings", tr.seq_len)
        add("--no-position-embedding")  # L640
        if m.position_embedding == "rope":
            add("--use-rotary-position-embeddings")  # L633
            add("--rotary-position-embeddings-theta", int(m.rope_base or 10000))  # L635
    add("--normalization", m.norm)  # L647
    if m.ffn_type.value == "swiglu":
        add("--swiglu")  # L670
    if not (m.attention_bias or m.mlp_bias):
        add("--disable-bias-linear")  # L937
    if not m.tied_embeddings:
        add("--untie-embeddings-and-output-weights")  # L680
    divisor = vocab_multiple(m.vocab, lay.tp)
    add("--make-vocab-size-divisible-by", divisor)  # L644
    notes.append(f"the tokenizer (data arguments) must have {m.vocab} tokens: padded to a "
                 f"multiple of {divisor} x TP {lay.tp} (megatron/tokenizer/tokenizer.py "
                 "L58-71), the planned embedding")
    # the fused attention kernel: FlashAttention-1 (L927) when the run names it, else -2 (L930,
    # transformer.py L396-410); without a flag the core attention is unfused (--no-flash-attn)
    if tr.flash_attention:
        add("--use-flash-attn-v1" if named_kernel(tr) == "fa1" else "--use-flash-attn-v2")
        if not named_kernel(tr):
            notes.append("--use-flash-attn-v2: FlashAttention-2, the kernel the DeepSpeed "
                         "engine's profile times (flash_attention_2_over_cudnn: also where the "
                         "GPU's default is cuDNN's, H100, B200)")
    rate = m.dropout if tr.dropout else 0.0  # its defaults are 0.1 (L768-771)
    add("--attention-dropout", rate)
    add("--hidden-dropout", rate)
    if m.is_moe:
        add("--num-experts", m.experts)  # L608
        add("--topk", m.top_k)  # L612
        add("--expert-interval", m.moe_layer_freq)  # L614 (default 2)
        add("--moe-expert-parallel-size", lay.ep)  # L1159
        if lay.tp > 1:
            # the plan shards experts over EP x TP; without this flag each expert is whole
            # on every TP rank (L1151, transformer.py L1067-1071)
            add("--enable-expert-tensor-parallelism")
        if int(lay.zero) >= 1:
            # ZeRO needs the experts in their own parameter groups (L921; DeepSpeed
            # runtime/zero/stage_1_and_2.py asserts a 'moe' group)
            add("--create-moe-param-group")
    return a, notes


def launch_args(layout, training, model) -> tuple[str, list[str]]:
    """The pretrain_gpt.py argument string (model, parallelism, batch, ZeRO) and notes."""
    lay, tr = layout, training
    pairs, notes = model_args(layout, training, model)
    pairs += [("--tensor-model-parallel-size", str(lay.tp)),
              ("--pipeline-model-parallel-size", str(lay.pp)),
              ("--micro-batch-size", str(tr.micro_batch)),
              ("--global-batch-size", str(tr.global_batch)),
              ("--zero-stage", str(int(lay.zero)))]  # L1487
    if lay.pp == 1:
        # only then is the mpu passed to deepspeed.initialize (megatron/training.py L612)
        # and the non-pipeline model built, which ZeRO-2/3 need (pipe/engine.py L76-77)
        pairs.append(("--no-pipeline-parallel", None))  # L954
    # the model's dtype, as the DeepSpeed config's bf16 / fp16 block says (L1111-1114; the
    # params dtype follows it, L187-193)
    if tr.precision is Precision.BF16:
        pairs.append(("--bf16", None))
    elif tr.precision is Precision.FP16:
        pairs.append(("--fp16", None))
    match tr.recompute:
        case Recompute.FULL:
            # whole layers (transformer.py L1691, L2082) through DeepSpeed's checkpointing,
            # which reads the config's activation_checkpointing block (initialize.py L266)
            pairs += [("--checkpoint-activations", None),  # L864
                      ("--deepspeed-activation-checkpointing", None)]  # L1524
        case Recompute.SELECTIVE:
            pairs.append(("--recompute-granularity", "selective"))  # L830; core attention
        case Recompute.NONE:
            pass
    if tr.sequence_parallel and lay.tp > 1:
        pairs.append(("--sequence-parallel", None))  # L972
    words = []
    for flag, value in pairs:
        words.append(flag if value is None else f"{flag} {shlex.quote(value)}")
    return " ".join(words), notes
