"""Megatron-DeepSpeed (``deepspeedai/Megatron-DeepSpeed``): Megatron's model and tensor /
pipeline parallelism (its own ``mpu``) on DeepSpeed's engine, so DeepSpeed's ZeRO and offload
rows apply as well.

Pinned at commit 4efb479d5317ce9b86096b9d8e3e8030b0b5263b (2025-07-16); every file and line
below refers to it. Its launch path is ``pretrain_gpt.py --deepspeed --deepspeed_config
ds_config.json`` with its own (older Megatron) argument dialect, written by the DeepSpeed exporter
(``--export deepspeed``, megatron_deepspeed_export.py) when a layout only runs here. Its GPT model
is megatron/model/gpt_model.py on megatron/model/transformer.py, with DeepSpeed-MoE for experts:
:func:`unbuildable` says which architectures that code cannot build from its flags.
"""

from __future__ import annotations

from optimus_calc.frameworks.base import (FrameworkPlugin, Rule, refuses_kernel,
                                          unbuildable_everywhere)
from optimus_calc.frameworks.deepspeed import ENGINE_PROFILE, ENGINE_RULES

COMMIT = "4efb479d5317ce9b86096b9d8e3e8030b0b5263b"
_MD = "Megatron-DeepSpeed"


def unbuildable(m) -> str | None:
    """Why Megatron-DeepSpeed's pretrain_gpt.py cannot build ``m`` from its flags, or None."""
    n = m.name
    if m.arch != "decoder":
        return f"{n} is an encoder; the export targets Megatron-DeepSpeed's GPT script"
    if m.parallel_attention:
        return (f"{n}: parallel attention + MLP blocks have no {_MD} flag "
                "(ParallelTransformerLayer runs attention, then the MLP: megatron/model/"
                "transformer.py L1331-1390)")
    if m.is_mla:
        return f"{n}: multi-latent attention has no {_MD} flag (megatron/arguments.py L599-687)"
    if m.sliding_window_layers:
        return (f"{n}: sliding-window attention has no {_MD} flag (megatron/arguments.py has "
                "no window argument; ParallelAttention attends causally to the whole sequence, "
                "megatron/model/transformer.py L606-612)")
    if m.qk_norm or m.qk_norm_full or m.attention_sinks:
        return (f"{n}: Q/K norms or attention sinks have no {_MD} flag (ParallelAttention, "
                "megatron/model/transformer.py L507-962)")
    if m.ffn_type.value not in ("swiglu", "gelu"):
        return (f"{n}: a {m.ffn_type.value} MLP has no {_MD} flag here (--swiglu or the "
                "default GeLU, megatron/model/transformer.py L131-141)")
    if m.position_embedding not in ("rope", "learned", "none"):
        return f"{n}: {m.position_embedding} position embeddings have no {_MD} flag"
    if m.position_embedding == "rope" and m.rope_base != int(m.rope_base):
        return (f"{n}: RoPE base {m.rope_base} is not an integer; "
                "--rotary-position-embeddings-theta takes an int (megatron/arguments.py L635)")
    biases = (m.attention_bias, m.attention_out_bias, m.mlp_bias)
    if biases not in ((False, False, False), (True, True, True)):
        return (f"{n}: biases on (QKV, output, MLP) = {biases}; {_MD} has one switch for all "
                "linear biases, --disable-bias-linear (megatron/arguments.py L937, "
                "megatron/model/transformer.py L122, L585, L637)")
    if m.norm == "layernorm" and not m.norm_bias:
        return f"{n}: a LayerNorm without bias has no {_MD} flag (--normalization layernorm|rmsnorm)"
    if (m.layer_norms != 2 or m.embedding_norm or not m.final_norm or m.token_type_vocab
            or m.pooler):
        return (f"{n}: its norms or embedding extras differ from {_MD}'s pre-norm GPT (two "
                "norms per layer and a final norm, megatron/model/transformer.py L988-1058)")
    if m.mtp_layers:
        return f"{n}: {_MD} builds no multi-token-prediction module"
    if m.is_moe:
        return _moe_unbuildable(m)
    return None


def _moe_unbuildable(m) -> str | None:
    """DeepSpeed-MoE as Megatron-DeepSpeed builds it (megatron/model/transformer.py L1060-1080):
    every expert is the layer's ParallelMLP (--ffn-hidden-size), a bias-free top-k gate
    (deepspeed/moe/sharded_moe.py L560), MoE layers where the 1-based layer number is a
    multiple of --expert-interval (transformer.py L1650-1660), no shared experts."""
    n = m.name
    if m.shared_experts:
        return (f"{n}: shared experts have no {_MD} flag (DeepSpeed-MoE's residual MoE, "
                "--mlp-type residual, adds a dense MLP with a learned mix, not a shared expert)")
    if m.first_dense_layers:
        return (f"{n}: {m.first_dense_layers} leading dense layers have no {_MD} flag (MoE "
                "layers are every --expert-interval-th, transformer.py L1650-1660)")
    if m.moe_layer_freq > 1 and m.expert_ffn != m.ffn_hidden:
        return (f"{n}: experts of {m.expert_ffn} beside dense MLPs of {m.ffn_hidden}; "
                f"{_MD}'s experts are the layer's ParallelMLP of --ffn-hidden-size "
                "(megatron/model/transformer.py L1069-1071)")
    if m.router_bias or m.router_topk_scaling != 1.0:
        return (f"{n}: a router bias or top-k scaling has no {_MD} flag (DeepSpeed-MoE's "
                "TopKGate is a bias-free linear, deepspeed/moe/sharded_moe.py L560)")
    return None




RULES: tuple[Rule, ...] = ENGINE_RULES + (
    Rule("MD_KV_TP", "Megatron-DeepSpeed: attention and KV heads must divide by TP "
         "(megatron/model/transformer.py L562-567)", "megatron/model/transformer.py L562-567",
         lambda x: x.heads_bad),
    # the embedding's output is scattered over TP along the sequence; the split asserts it is
    # even (megatron/core/tensor_parallel/mappings.py L46-58, _split_along_first_dim)
    Rule("MD_SP_SEQ", f"{_MD}: sequence parallelism splits the sequence over TP: the sequence "
         "must be a multiple of TP (or --no-sp) (megatron/core/tensor_parallel/mappings.py "
         "L56-58)", "megatron/core/tensor_parallel/mappings.py L56-58",
         lambda x: None if x.seq_len is None else (x.tp > 1) & x.sp & x.seq_not_dividing(x.tp)),
    Rule("MD_ARCH", f"{_MD}: pretrain_gpt.py cannot build this architecture from its flags (an "
         "encoder, parallel attention + MLP, MLA, a sliding window, Q/K norms, a GEGLU/ReLU MLP, "
         "ALiBi, partial biases, shared experts or leading dense layers; megatron/arguments.py "
         "L599-687, megatron/model/transformer.py L98-1080)", "megatron/arguments.py L599-687",
         unbuildable_everywhere(unbuildable), on_model=True),
    *(refuses_kernel(f"MD_{k.upper()}", f"{_MD}: its attention is FlashAttention-1 or -2 "
                     "(--use-flash-attn-v1 / -v2 / -triton, megatron/arguments.py L927-935; "
                     "megatron/model/transformer.py L396-410) or unfused, not "
                     f"{what} (--attention-kernel {k})", "megatron/arguments.py L927-935", k)
      for k, what in (("fa3", "FlashAttention-3"), ("cudnn", "cuDNN's fused attention"))),
)

LAUNCH = ("deepspeed --num_nodes N --num_gpus G pretrain_gpt.py --tensor-model-parallel-size T "
          "--pipeline-model-parallel-size P ... --deepspeed --deepspeed_config ds_config.json")

PLUGIN = FrameworkPlugin(
    key="megatron-deepspeed", label="Megatron-DeepSpeed", repo="deepspeedai/Megatron-DeepSpeed",
    commit=COMMIT, rules=RULES, launch=LAUNCH, exported_by="deepspeed",
    profile=ENGINE_PROFILE)  # the engine's gradient dtype, offload and ZeRO-3 fetches
