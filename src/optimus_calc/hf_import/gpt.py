"""LayerNorm families with biases and 2-matrix MLPs: gpt2, gpt_neox, bloom, opt, falcon (and the
legacy RefinedWeb types), starcoder2, nemotron."""

from __future__ import annotations

from optimus_calc.errors import InputError
from optimus_calc.hf_import.config import DROPOUT_KEYS, Cfg, act, seq_len, sliding


def falcon(c: Cfg) -> dict:
    """Falcon (transformers configuration_falcon.py / modeling_falcon.py; the legacy
    RefinedWebModel (7B) and RefinedWeb (40B) configs mapped as NeMo's falcon converter does).
    Fused QKV of heads + 2 x KV heads of hidden/heads; KV heads: num_kv_heads with the new
    decoder architecture, 1 with multi_query, else all heads. Norms per layer: 2 (ln_attn,
    ln_mlp) in the new architecture, 1 shared input norm for the parallel block, else 2."""
    mtype = c.data.get("model_type")
    new = c.bool("new_decoder_architecture", mtype == "RefinedWeb")
    heads = c.int("num_attention_heads", "n_head")
    if new:
        kv = c.int("num_kv_heads", "n_head_kv", default=heads)
    elif c.bool("multi_query", True):
        kv = 1
    else:
        kv = heads
    h = c.int("hidden_size")
    parallel = c.bool("parallel_attn", True)
    bias = c.bool("bias", False)
    alibi = c.bool("alibi", False)
    return dict(
        layers=c.int("num_hidden_layers", "n_layer"), hidden=h, heads=heads, kv_heads=kv,
        ffn_hidden=c.int("ffn_hidden_size", default=4 * h),
        ffn_type=act(c, "activation", "gelu"), vocab=c.int("vocab_size"),
        tied_embeddings=c.bool("tie_word_embeddings", True),
        position_embedding="alibi" if alibi else "rope", norm="layernorm",
        layer_norms=2 if new or not parallel else 1, parallel_attention=parallel,
        attention_bias=bias, attention_out_bias=bias, mlp_bias=bias,
        seq_len=seq_len(c, 2048), dropout=c.prob(*DROPOUT_KEYS),
    )


def gpt2(c: Cfg) -> dict:
    h = c.int("n_embd", "hidden_size")
    return dict(
        layers=c.int("n_layer", "num_hidden_layers"), hidden=h,
        heads=c.int("n_head", "num_attention_heads"),
        ffn_hidden=c.int("n_inner", default=0) or 4 * h,
        ffn_type=act(c, "activation_function", "gelu"),
        vocab=c.int("vocab_size"), tied_embeddings=c.bool("tie_word_embeddings", True),
        position_embedding="learned",
        max_position=c.int("n_positions", "max_position_embeddings"),
        norm="layernorm", attention_bias=True, attention_out_bias=True, mlp_bias=True,
        seq_len=min(c.int("n_positions", default=1024, minimum=1), 8192),
        # GPT2Config defaults resid/embd/attn_pdrop 0.1
        dropout=c.prob("resid_pdrop", "embd_pdrop", "attn_pdrop", default=0.1),
    )


def gpt_neox(c: Cfg) -> dict:
    bias = c.bool("attention_bias", True)
    return dict(
        layers=c.int("num_hidden_layers"), hidden=c.int("hidden_size"),
        heads=c.int("num_attention_heads"), ffn_hidden=c.int("intermediate_size"),
        ffn_type=act(c, "hidden_act", "gelu"), vocab=c.int("vocab_size"),
        tied_embeddings=c.bool("tie_word_embeddings", False), position_embedding="rope",
        norm="layernorm", attention_bias=bias, attention_out_bias=bias, mlp_bias=True,
        seq_len=seq_len(c, 2048), dropout=c.prob(*DROPOUT_KEYS),
    )


def bloom(c: Cfg) -> dict:
    h = c.int("hidden_size", "n_embed")
    return dict(
        layers=c.int("n_layer", "num_hidden_layers"), hidden=h,
        heads=c.int("n_head", "num_attention_heads"), ffn_hidden=4 * h, ffn_type="gelu",
        vocab=c.int("vocab_size"), tied_embeddings=c.bool("tie_word_embeddings", True),
        position_embedding="alibi", norm="layernorm", attention_bias=True,
        attention_out_bias=True, mlp_bias=True, embedding_norm=True, seq_len=2048,
        dropout=c.prob(*DROPOUT_KEYS),
    )


def opt(c: Cfg) -> dict:
    h = c.int("hidden_size")
    if c.int("word_embed_proj_dim", default=h) != h:
        raise InputError(f"{c.path}: OPT with word_embed_proj_dim != hidden_size "
                         "(project_in/out) is not supported")
    bias = c.bool("enable_bias", True)
    return dict(
        layers=c.int("num_hidden_layers"), hidden=h, heads=c.int("num_attention_heads"),
        ffn_hidden=c.int("ffn_dim"), ffn_type=act(c, "activation_function", "relu"),
        vocab=c.int("vocab_size"), tied_embeddings=c.bool("tie_word_embeddings", True),
        position_embedding="learned", max_position=c.int("max_position_embeddings") + 2,
        norm="layernorm", attention_bias=bias, attention_out_bias=bias, mlp_bias=bias,
        final_norm=c.bool("do_layer_norm_before", True), seq_len=2048,
        # OPTConfig: dropout 0.1 (residual), attention_dropout 0.0
        dropout=c.prob("dropout", "attention_dropout", default=0.1),
    )


def starcoder2(c: Cfg) -> dict:
    """StarCoder2 (transformers modeling_starcoder2.py): GQA with biases on Q, K, V and O
    (``use_bias``), a 2-matrix GELU MLP (c_fc, c_proj) with biases, LayerNorm with bias (two per
    layer and a final one), RoPE. Starcoder2Config sets no ``tie_word_embeddings``, so
    PretrainedConfig's default (tied) applies when the file omits it."""
    bias = c.bool("use_bias", True)
    sw = sliding(c, c.int("num_hidden_layers"), 0, 0)  # its window on every layer
    return dict(**sw,
        layers=c.int("num_hidden_layers"), hidden=c.int("hidden_size"),
        heads=c.int("num_attention_heads"), kv_heads=c.int("num_key_value_heads", default=0),
        ffn_hidden=c.int("intermediate_size"), ffn_type=act(c, "hidden_act", "gelu_pytorch_tanh"),
        vocab=c.int("vocab_size"), tied_embeddings=c.bool("tie_word_embeddings", True),
        position_embedding="rope", rope_base=c.num("rope_theta", 0.0), norm="layernorm",
        attention_bias=bias, attention_out_bias=bias, mlp_bias=bias, seq_len=seq_len(c, 4096),
        dropout=c.prob(*DROPOUT_KEYS, "residual_dropout", "embedding_dropout"),
    )


def nemotron(c: Cfg) -> dict:
    """Nemotron-4 / Minitron (transformers modeling_nemotron.py): a 2-matrix MLP (up_proj,
    down_proj) with squared ReLU (``hidden_act`` relu2), LayerNorm1P (a LayerNorm with weight and
    bias, the weight stored as an offset from 1: the same count), GQA with an explicit
    ``head_dim``, partial rotary (``partial_rotary_factor``: rotary_percent, no parameters;
    the 1P norm: norm_zero_centered_gamma), untied embeddings by default,
    ``attention_bias`` (Q, K, V and O) and ``mlp_bias`` False by default."""
    bias = c.bool("attention_bias", False)
    return dict(
        layers=c.int("num_hidden_layers"), hidden=c.int("hidden_size"),
        heads=c.int("num_attention_heads"), kv_heads=c.int("num_key_value_heads", default=0),
        head_dim=c.int("head_dim", default=0), ffn_hidden=c.int("intermediate_size"),
        ffn_type=act(c, "hidden_act", "relu2"), vocab=c.int("vocab_size"),
        tied_embeddings=c.bool("tie_word_embeddings", False), position_embedding="rope",
        rope_base=c.num("rope_theta", 0.0), norm="layernorm", attention_bias=bias,
        rotary_percent=c.num("partial_rotary_factor", 1.0), norm_zero_centered_gamma=True,
        attention_out_bias=bias, mlp_bias=c.bool("mlp_bias", False), seq_len=seq_len(c, 4096),
        dropout=c.prob(*DROPOUT_KEYS),
    )
