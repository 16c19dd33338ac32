"""Gemma-2/3 (pre+post norms, GeGLU, decoupled head_dim) and Cohere Command-R (parallel block
with one shared LayerNorm without bias)."""

from __future__ import annotations

from optimus_calc.hf_import.config import DROPOUT_KEYS, Cfg, gated, seq_len, sliding, text_model


def gemma(c: Cfg, *, qk_norm: bool, vocab_default: int | None, full_every: int = 2) -> dict:
    """Gemma-2/3 (transformers modeling_gemma2/gemma3): head_dim independent of hidden/heads,
    GeGLU MLP (gelu_pytorch_tanh), four RMSNorms per layer (input, post-attention,
    pre- and post-feedforward), tied embeddings; Gemma-3 adds per-head Q/K RMSNorms. The
    config's sliding window (Gemma2Config / Gemma3TextConfig default 4096) on every layer but
    each ``full_every``-th."""
    vocab = (c.int("vocab_size") if vocab_default is None
             else c.int("vocab_size", default=vocab_default))
    layers = c.int("num_hidden_layers")
    return dict(
        **sliding(c, layers, 4096, full_every),
        layers=layers, hidden=c.int("hidden_size"),
        heads=c.int("num_attention_heads"), kv_heads=c.int("num_key_value_heads", default=0),
        head_dim=c.int("head_dim", default=256),
        ffn_hidden=c.int("intermediate_size"),
        ffn_type=gated(c, "hidden_activation", "hidden_act", default="gelu_pytorch_tanh"),
        vocab=vocab, tied_embeddings=c.bool("tie_word_embeddings", True),
        position_embedding="rope", norm="rmsnorm", layer_norms=4, qk_norm=qk_norm,
        attention_bias=c.bool("attention_bias", False),
        attention_out_bias=c.bool("attention_bias", False),
        seq_len=seq_len(c, 8192), dropout=c.prob(*DROPOUT_KEYS),
    )


def gemma3(c: Cfg) -> dict:
    """``gemma3`` (multimodal: the language model is ``text_config``; the SigLIP vision tower
    is not counted) or ``gemma3_text``. Gemma3TextConfig's vocab_size default 262,208 applies
    when the hub config omits it (google/gemma-3-27b-pt does)."""
    t = text_model(c, "gemma3")  # five windowed layers to a full one (sliding_window_pattern 6)
    return gemma(t, qk_norm=True, vocab_default=262_208,
                 full_every=t.int("sliding_window_pattern", default=6, minimum=1))


def cohere(c: Cfg) -> dict:
    """Cohere Command-R / R+ (transformers modeling_cohere.py): attention and MLP in parallel on
    one shared input norm per layer; CohereLayerNorm has a weight and no bias (also the final
    norm); SwiGLU MLP; tied embeddings (CohereConfig default); with ``use_qk_norm`` (R+) Q and K
    LayerNorms whose weights span heads x head_dim and kv_heads x head_dim. ``logit_scale``
    changes no count."""
    bias = c.bool("attention_bias", False)
    qk = c.bool("use_qk_norm", False)
    return dict(
        layers=c.int("num_hidden_layers"), hidden=c.int("hidden_size"),
        heads=c.int("num_attention_heads"), kv_heads=c.int("num_key_value_heads", default=0),
        ffn_hidden=c.int("intermediate_size"), ffn_type="swiglu", vocab=c.int("vocab_size"),
        tied_embeddings=c.bool("tie_word_embeddings", True), position_embedding="rope",
        rope_base=c.num("rope_theta", 0.0), norm="layernorm", norm_bias=False, layer_norms=1,
        parallel_attention=True, qk_norm=qk, qk_norm_full=qk, attention_bias=bias,
        attention_out_bias=bias, seq_len=seq_len(c, 8192), dropout=c.prob(*DROPOUT_KEYS),
    )
