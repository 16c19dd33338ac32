"""Large mixture-of-experts families with dense prefixes, shared experts and MTP modules:
deepseek_v2, deepseek_v3 (MLA), glm4_moe (GLM-4.5), llama4 (text model of Scout / Maverick)."""

from __future__ import annotations

from optimus_calc.errors import InputError
from optimus_calc.hf_import.config import DROPOUT_KEYS, Cfg, seq_len, text_model


def deepseek(c: Cfg, *, v3: bool) -> dict:
    """DeepSeek-V2/V3 (transformers configuration_deepseek_v3.py / the hub's
    configuration_deepseek.py): MLA attention, n_shared_experts shared experts of
    moe_intermediate_size (modeling_deepseek builds them as one MLP of
    moe_intermediate_size * n_shared_experts: the same count), first_k_dense_replace dense
    layers of intermediate_size, MTP modules (num_nextn_predict_layers) counted apart. V3's
    router carries e_score_correction_bias (one per expert): counted as a router bias."""
    routed = c.int("n_routed_experts", default=0)
    d = dict(
        layers=c.int("num_hidden_layers"), hidden=c.int("hidden_size"),
        heads=c.int("num_attention_heads"),
        kv_heads=c.int("num_key_value_heads", default=0),
        ffn_hidden=c.int("intermediate_size"), ffn_type="swiglu", vocab=c.int("vocab_size"),
        tied_embeddings=c.bool("tie_word_embeddings", False),
        position_embedding="rope", norm="rmsnorm",
        attention_bias=c.bool("attention_bias", False),
        q_lora_rank=c.int("q_lora_rank", default=0),
        kv_lora_rank=c.int("kv_lora_rank", minimum=1),
        qk_nope_head_dim=c.int("qk_nope_head_dim"), qk_rope_head_dim=c.int("qk_rope_head_dim"),
        v_head_dim=c.int("v_head_dim"),
        seq_len=seq_len(c, 4096), dropout=c.prob(*DROPOUT_KEYS),
        mtp_layers=c.int("num_nextn_predict_layers", default=0),
    )
    if d["kv_heads"] and d["kv_heads"] != d["heads"]:
        raise InputError(f"{c.path}: field 'num_key_value_heads': MLA up-projects K and V for "
                         f"every head; {d['kv_heads']} != num_attention_heads {d['heads']}")
    if routed:
        d.update(experts=routed, top_k=c.int("num_experts_per_tok", minimum=1),
                 moe_ffn_hidden=c.int("moe_intermediate_size", minimum=1),
                 shared_experts=c.int("n_shared_experts", default=0),
                 first_dense_layers=c.int("first_k_dense_replace", default=0),
                 moe_layer_freq=c.int("moe_layer_freq", default=1, minimum=1),
                 router_bias=v3 and c.str("topk_method", "noaux_tc") == "noaux_tc",
                 # DeepseekV3Config's default 2.5, DeepseekV2Config's 1.0
                 router_topk_scaling=c.num("routed_scaling_factor", 2.5 if v3 else 1.0))
        # group-limited routing: V3 always (transformers DeepseekV3TopkRouter; its config's
        # defaults n_group 8, topk_group 4), V2 under topk_method group_limited_greedy
        if v3 or c.str("topk_method", "greedy") == "group_limited_greedy":
            d.update(router_groups=c.int("n_group", default=8 if v3 else 1, minimum=1),
                     router_group_topk=c.int("topk_group", default=4 if v3 else 1, minimum=1))
    return d


def glm4_moe(c: Cfg) -> dict:
    """GLM-4.5 / GLM-4.5-Air (transformers modeling_glm4_moe.py): ``first_k_dense_replace``
    dense layers of ``intermediate_size``, then MoE layers of ``n_routed_experts`` routed experts
    and one shared MLP of ``moe_intermediate_size`` x ``n_shared_experts`` (counted as that many
    shared experts: the same count); the router weight plus its e_score_correction_bias (one per
    expert, stored in the checkpoint: counted as a router bias, as for DeepSeek-V3); biases on Q,
    K, V only (``attention_bias``; o_proj has none); per-head Q/K RMSNorms with ``use_qk_norm``;
    partial rotary (no parameters); MTP modules (``num_nextn_predict_layers``, in the hub
    config, not in Glm4MoeConfig) counted apart like DeepSeek's."""
    return dict(
        layers=c.int("num_hidden_layers"), hidden=c.int("hidden_size"),
        heads=c.int("num_attention_heads"), kv_heads=c.int("num_key_value_heads", default=0),
        head_dim=c.int("head_dim", default=0), ffn_hidden=c.int("intermediate_size"),
        ffn_type="swiglu", vocab=c.int("vocab_size"),
        tied_embeddings=c.bool("tie_word_embeddings", False), position_embedding="rope",
        rope_base=c.num("rope_theta", 0.0), norm="rmsnorm",
        attention_bias=c.bool("attention_bias", False), qk_norm=c.bool("use_qk_norm", False),
        experts=c.int("n_routed_experts", minimum=1),
        top_k=c.int("num_experts_per_tok", minimum=1),
        moe_ffn_hidden=c.int("moe_intermediate_size", minimum=1),
        shared_experts=c.int("n_shared_experts", default=1),
        first_dense_layers=c.int("first_k_dense_replace", default=1), router_bias=True,
        router_topk_scaling=c.num("routed_scaling_factor", 1.0),
        # Glm4MoeTopkRouter routes group-limited as DeepSeek-V3's (its config's defaults 1 / 1)
        router_groups=c.int("n_group", default=1, minimum=1),
        router_group_topk=c.int("topk_group", default=1, minimum=1),
        mtp_layers=c.int("num_nextn_predict_layers", default=0),
        seq_len=seq_len(c, 4096), dropout=c.prob(*DROPOUT_KEYS),
    )


def llama4(c: Cfg) -> dict:
    """Llama 4 Scout / Maverick, the text model only (``text_config`` of ``llama4``, or a
    ``llama4_text`` config; transformers modeling_llama4.py). MoE layers every
    ``interleave_moe_layer_step``-th layer (layer i is MoE when (i + 1) % step == 0, the
    default ``moe_layers`` of Llama4TextConfig; an explicit list must follow that rule), each
    with ``num_local_experts`` routed SwiGLU experts of ``intermediate_size``, one shared expert of
    the same width and a router h x experts without bias; dense layers use
    ``intermediate_size_mlp``. The Q/K norm is an L2 norm without weights (no parameters);
    ``no_rope_layers`` and chunked attention change no count."""
    t = text_model(c, "llama4")
    layers = t.int("num_hidden_layers")
    step = t.int("interleave_moe_layer_step", default=1, minimum=1)
    given = t.int_list("moe_layers")
    if given and sorted(given) != list(range(step - 1, layers, step)):
        raise InputError(f"{t.path}: field '{t.prefix}moe_layers': only every "
                         f"interleave_moe_layer_step-th layer ({step}) is supported, got "
                         f"{given[:8]}")
    bias = t.bool("attention_bias", False)
    return dict(
        layers=layers, hidden=t.int("hidden_size"), heads=t.int("num_attention_heads"),
        kv_heads=t.int("num_key_value_heads", default=0), head_dim=t.int("head_dim", default=128),
        ffn_hidden=t.int("intermediate_size_mlp"), ffn_type="swiglu", vocab=t.int("vocab_size"),
        tied_embeddings=t.bool("tie_word_embeddings", False), position_embedding="rope",
        rope_base=t.num("rope_theta", 0.0), norm="rmsnorm", attention_bias=bias,
        attention_out_bias=bias, experts=t.int("num_local_experts", minimum=1),
        top_k=t.int("num_experts_per_tok", minimum=1),
        moe_ffn_hidden=t.int("intermediate_size", minimum=1), shared_experts=1,
        moe_layer_freq=step, seq_len=seq_len(t, 8192), dropout=t.prob(*DROPOUT_KEYS),
    )
