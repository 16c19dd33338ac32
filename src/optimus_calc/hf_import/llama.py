"""Llama-like decoders: RMSNorm, RoPE, gated SiLU MLP, grouped-query attention (llama, mistral,
qwen2, qwen3, phi3, granite, olmo2) and their mixture-of-experts relatives (mixtral, qwen2_moe,
qwen3_moe, gpt_oss)."""

from __future__ import annotations

from optimus_calc.errors import InputError
from optimus_calc.hf_import.config import DROPOUT_KEYS, Cfg, seq_len, sliding


def llama_like(c: Cfg, *, qkv_bias: bool = False, qk_norm: bool = False) -> dict:
    d = dict(
        layers=c.int("num_hidden_layers"), hidden=c.int("hidden_size"),
        heads=c.int("num_attention_heads"),
        kv_heads=c.int("num_key_value_heads", default=0),
        head_dim=c.int("head_dim", default=0),
        ffn_hidden=c.int("intermediate_size"), ffn_type="swiglu", vocab=c.int("vocab_size"),
        tied_embeddings=c.bool("tie_word_embeddings", False),
        position_embedding="rope", norm="rmsnorm", rope_base=c.num("rope_theta", 0.0),
        attention_bias=c.bool("attention_bias", qkv_bias),
        attention_out_bias=c.bool("attention_bias", False) and not qkv_bias,
        mlp_bias=c.bool("mlp_bias", False), qk_norm=qk_norm,
        seq_len=seq_len(c, 4096), dropout=c.prob(*DROPOUT_KEYS),
    )
    return {**d, **yarn(c)}


def yarn(c: Cfg) -> dict:
    """A YaRN ``rope_scaling`` (rope_type or type "yarn": transformers modeling_rope_utils.py
    _compute_yarn_parameters): its factor (required), original_max_position_embeddings and
    truncate (default true, as there); another scaling, or null: nothing (plain RoPE); not a
    JSON object: an error naming the field."""
    if c.data.get("rope_scaling") is None:
        return {}
    r = c.sub("rope_scaling")
    if r.str("rope_type", r.str("type", "")) != "yarn":
        return {}
    return dict(rope_yarn_factor=r.num("factor"),
                rope_yarn_original_max_position=r.int("original_max_position_embeddings",
                                                      default=0),
                rope_yarn_truncate=r.bool("truncate", True))


def mixtral(c: Cfg) -> dict:
    """Mixtral: MixtralAttention is Mistral's (a ``sliding_window`` on every layer; MixtralConfig's
    default None)."""
    d = llama_like(c)
    d.update(experts=c.int("num_local_experts"), top_k=c.int("num_experts_per_tok"),
             **sliding(c, d["layers"], 0, 0))
    return d


def qwen3_moe(c: Cfg) -> dict:
    d = llama_like(c, qk_norm=True)
    d.update(experts=c.int("num_experts"), top_k=c.int("num_experts_per_tok"),
             moe_ffn_hidden=c.int("moe_intermediate_size"),
             moe_layer_freq=c.int("decoder_sparse_step", default=1, minimum=1))
    dense_prefix(c, d)
    return d


def dense_prefix(c: Cfg, d: dict) -> None:
    """Qwen's ``mlp_only_layers``: supported when they are the first k layers (a dense prefix)."""
    only = c.int_list("mlp_only_layers")
    if only:
        if sorted(only) != list(range(len(only))):
            raise InputError(f"{c.path}: field 'mlp_only_layers': only a leading run of dense "
                             f"layers (0, 1, ..., k-1) is supported, got {only[:8]}")
        d["first_dense_layers"] = len(only)


def qwen2_moe(c: Cfg) -> dict:
    """Qwen1.5-MoE / Qwen2-MoE (transformers modeling_qwen2_moe.Qwen2MoeSparseMoeBlock): routed
    experts of moe_intermediate_size, one shared expert of shared_expert_intermediate_size with
    a sigmoid gate Linear(h, 1, bias=False), QKV biases."""
    d = llama_like(c, qkv_bias=True)
    shared = c.int("shared_expert_intermediate_size", default=0)
    d.update(experts=c.int("num_experts"), top_k=c.int("num_experts_per_tok"),
             moe_ffn_hidden=c.int("moe_intermediate_size"),
             shared_experts=1 if shared else 0, shared_expert_ffn=shared,
             shared_expert_gate=bool(shared),
             moe_layer_freq=c.int("decoder_sparse_step", default=1, minimum=1))
    dense_prefix(c, d)
    return d


def gpt_oss(c: Cfg) -> dict:
    """gpt-oss: GptOssConfig's 128-token window on every other layer (the first of each pair)."""
    d = llama_like(c)
    # GptOssExperts clamps both halves at swiglu_limit (GptOssConfig default 7.0)
    d.update(attention_bias=True, attention_out_bias=True, mlp_bias=True, attention_sinks=True,
             glu_clamp=True,
             experts=c.int("num_local_experts"), top_k=c.int("num_experts_per_tok"),
             router_bias=True, **sliding(c, d["layers"], 128, 2))
    return d


def mistral(c: Cfg) -> dict:
    """Mistral: the Llama layout; MistralConfig's ``sliding_window`` (4096 in Mistral-7B-v0.1,
    null from v0.2) on every layer (Jiang et al. 2023 section 2). A config without the field
    gets the class default, 4096 (transformers configuration_mistral.py, MistralConfig
    ``sliding_window: int | None = 4096``)."""
    d = llama_like(c)
    return {**d, **sliding(c, d["layers"], 4096, 0)}


def phi3(c: Cfg) -> dict:
    """Phi-3 / Phi-4: the Llama layout; Phi3Config's ``sliding_window`` (2047 in
    Phi-3-mini-4k, null in Phi-4) on every layer: Phi3Attention.forward passes
    config.sliding_window to every layer's attention (transformers models/phi3/modeling_phi3.py
    @ 43c2b48)."""
    d = llama_like(c)
    return {**d, **sliding(c, d["layers"], 0, 0)}


def granite(c: Cfg) -> dict:
    """IBM Granite (transformers modeling_granite.py): the Llama layout (``attention_bias`` on
    Q, K, V and O, ``mlp_bias``); ``embedding_multiplier``, ``attention_multiplier``,
    ``residual_multiplier`` and ``logits_scaling`` scale activations and change no count."""
    return llama_like(c)


def olmo2(c: Cfg) -> dict:
    """OLMo-2 (transformers modeling_olmo2.py): RMSNorm Q/K norms over the whole projection width
    (q_norm heads x head_dim, k_norm kv_heads x head_dim) and post-norms only
    (post_attention_layernorm, post_feedforward_layernorm: still two per layer)."""
    d = llama_like(c, qk_norm=True)
    d["qk_norm_full"] = True
    return d
