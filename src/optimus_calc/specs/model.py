"""Transformer architecture (dense and MoE) with parameter counts derived from its shape.

Counts are exact for the catalog's architectures: attention projections with grouped-query
attention (KV heads) or multi-head latent attention (MLA: DeepSeek-V2 arXiv 2405.04434 section
2.1, low-rank Q and joint-KV compression with decoupled RoPE keys), 2-matrix (GELU/ReLU/
squared ReLU) or 3-matrix gated (SwiGLU/GeGLU) MLPs, mixture-of-experts layers (routed experts,
router, shared experts with their own width and gate, every ``moe_layer_freq``-th layer after
``first_dense_layers`` dense ones), embeddings, learned positions, norms (any number per layer:
1 for Falcon-7B's parallel block, 4 for Gemma-2/3's pre+post norms) and biases. DeepSeek-V3's
multi-token-prediction (MTP) modules are counted apart (``mtp_params``), never in the total. Nothing here is typed in from a published count:
``published_params`` is kept only to check the derivation against.
"""

from typing import ClassVar, Literal

from optimus_calc.specs.frozen import Field, model_validator

from optimus_calc.specs.base import CatalogEntry, FFNType, Frozen  # noqa: F401 (FFNType)


class Model(CatalogEntry):
    kind: ClassVar[str] = "model"
    family: str = Field(default="", description="model family, e.g. llama")
    arch: Literal["decoder", "encoder"] = Field(default="decoder", description="decoder or encoder")
    layers: int = Field(gt=0, le=100_000, description="transformer layers")
    hidden: int = Field(gt=0, le=1_000_000, description="hidden size h")
    heads: int = Field(gt=0, le=100_000, description="attention (query) heads a")
    kv_heads: int = Field(default=0, ge=0, le=100_000, description="KV heads (0 = heads)")
    head_dim: int = Field(default=0, ge=0, le=100_000, description="head dim (0 = hidden/heads)")
    ffn_hidden: int = Field(gt=0, le=10_000_000, description="MLP intermediate size")
    ffn_type: FFNType = Field(description="gelu/relu/relu2 (2 matrices) or swiglu/geglu (3)")
    vocab: int = Field(gt=0, le=100_000_000, description="vocabulary size V")
    tied_embeddings: bool = Field(description="output head shares the input embedding")
    position_embedding: Literal["learned", "rope", "alibi", "none"] = Field(
        description="positional embedding type")
    max_position: int = Field(default=0, ge=0, le=100_000_000,
                              description="learned position table size (learned only)")
    rope_base: float = Field(default=0, ge=0, le=1e12,
                             description="RoPE base theta, HF rope_theta (0 = not recorded)")
    rope_yarn_factor: float = Field(default=1, ge=1, le=1e6, description="YaRN RoPE scaling "
                                    "factor, HF rope_scaling.factor of rope_type yarn (1: none)")
    rope_yarn_original_max_position: int = Field(default=0, ge=0, le=100_000_000, description=
                                                 "YaRN's original_max_position_embeddings")
    rope_yarn_truncate: bool = Field(default=True, description="YaRN's correction range rounded "
                                     "to integers (HF rope_scaling.truncate; gpt-oss false)")
    norm: Literal["layernorm", "rmsnorm"] = Field(description="normalisation layer")
    norm_bias: bool = Field(default=True, description="LayerNorm has a bias (False: Cohere)")
    attention_bias: bool = Field(default=False, description="biases on Q, K, V projections")
    attention_out_bias: bool = Field(default=False, description="bias on the output projection")
    mlp_bias: bool = Field(default=False, description="biases on MLP matrices")
    qk_norm: bool = Field(default=False, description="per-head norms on Q and K (Qwen3)")
    qk_norm_full: bool = Field(default=False, description="the Q/K norms span all heads' width, "
                               "heads x head_dim and kv_heads x head_dim (OLMo-2, Cohere)")
    attention_sinks: bool = Field(default=False, description="one learned sink logit per head")
    glu_clamp: bool = Field(default=False, description="the gated MLP clamps both halves "
                            "before the activation (GPT-OSS swiglu_limit; Megatron-core "
                            "activation_func_clamp_value); timed for the routed experts")
    sliding_window: int = Field(default=0, ge=0, le=100_000_000, description="tokens a "
                                "windowed layer attends to (0 = no sliding window)")
    sliding_window_layers: int = Field(default=0, ge=0, le=100_000, description="layers with "
                                       "the sliding window (the others attend to all tokens)")
    token_type_vocab: int = Field(default=0, ge=0, le=1000, description="BERT segment embeddings")
    embedding_norm: bool = Field(default=False, description="norm after the embeddings (BERT)")
    final_norm: bool = Field(default=True, description="norm before the output head")
    pooler: bool = Field(default=False, description="BERT pooler (h x h + bias)")
    experts: int = Field(default=0, ge=0, le=100_000, description="routed experts (0 = dense)")
    top_k: int = Field(default=0, ge=0, le=100_000, description="experts per token")
    shared_experts: int = Field(default=0, ge=0, le=1000, description="always-on experts")
    moe_ffn_hidden: int = Field(default=0, ge=0, le=10_000_000,
                                description="expert intermediate size (0 = ffn_hidden)")
    moe_layer_freq: int = Field(default=1, ge=1, le=1000,
                                description="every k-th layer is MoE (1 = all)")
    router_bias: bool = Field(default=False, description="bias on the router (one per expert; "
                              "DeepSeek-V3's e_score_correction_bias)")
    router_groups: int = Field(default=1, ge=1, le=100_000, description="expert groups (HF n_group)")
    router_group_topk: int = Field(default=1, ge=1, le=100_000, description="HF topk_group")
    router_topk_scaling: float = Field(default=1.0, gt=0, le=1000, description="factor on the "
                                       "routed experts' weights (HF routed_scaling_factor)")
    shared_expert_ffn: int = Field(default=0, ge=0, le=10_000_000,
                                   description="shared expert intermediate size (0 = expert's)")
    shared_expert_gate: bool = Field(default=False,
                                     description="sigmoid gate h x 1 on the shared expert (Qwen2-MoE)")
    first_dense_layers: int = Field(default=0, ge=0, le=100_000,
                                    description="leading dense layers before the MoE layers "
                                    "(DeepSeek first_k_dense_replace)")
    q_lora_rank: int = Field(default=0, ge=0, le=1_000_000,
                             description="MLA query compression rank (0 = full-rank query)")
    kv_lora_rank: int = Field(default=0, ge=0, le=1_000_000,
                              description="MLA joint KV compression rank (0 = not MLA)")
    qk_nope_head_dim: int = Field(default=0, ge=0, le=100_000,
                                  description="MLA per-head query/key dim without RoPE")
    qk_rope_head_dim: int = Field(default=0, ge=0, le=100_000,
                                  description="MLA per-head decoupled RoPE query/key dim")
    v_head_dim: int = Field(default=0, ge=0, le=100_000, description="MLA per-head value dim")
    layer_norms: int = Field(default=2, ge=0, le=16,
                             description="hidden-width norms per layer (2 = pre-attention + "
                             "pre-MLP; 1 Falcon-7B parallel block; 4 Gemma-2/3 pre+post)")
    parallel_attention: bool = Field(default=False,
                                     description="attention and MLP read the same input (Falcon)")
    mtp_layers: int = Field(default=0, ge=0, le=100,
                            description="multi-token-prediction modules (reported apart)")
    dropout: float = Field(default=0.0, ge=0.0, le=1.0, strict=True,
                           description="dropout probability in training (HF attention/hidden/"
                           "resid dropout; 0 = none)")
    dropout_source: str = Field(default="", description="where the dropout value comes from")
    seq_len: int = Field(default=2048, gt=0, le=10_000_000,
                         description="default training sequence length (at most Training's "
                                     "bound, specs/training.py)")
    published_params: float = Field(default=0, ge=0, le=1e16, description="published total "
                                    "parameters (check only; at most 1e16 as units.MAX_COUNT)")
    published_active_params: float = Field(
        default=0, ge=0, le=1e16, description="published active parameters (check only)")
    published_params_digits: int = Field(default=0, ge=0, le=12, description="significant "
                                         "decimals in the published billions (0 = 1% tolerance)")
    rotary_percent: float = Field(default=1.0, gt=0, le=1, description="share of each head's "
                                  "dims RoPE rotates (Nemotron-4: 0.5; exported, not timed)")
    norm_zero_centered_gamma: bool = Field(default=False, description="norm weights stored as "
                                           "gamma - 1 (Nemotron-4; exported, not timed)")

    @model_validator(mode="after")
    def _consistent(self) -> "Model":
        if self.kv_heads and self.heads % self.kv_heads:
            raise ValueError(f"heads {self.heads} is not a multiple of kv_heads {self.kv_heads}")
        if not self.head_dim and self.hidden % self.heads:
            raise ValueError(f"hidden {self.hidden} is not divisible by heads {self.heads}; "
                             "give head_dim")
        if self.experts and not self.top_k:
            raise ValueError("an MoE model (experts > 0) needs top_k > 0")
        if self.top_k > self.experts:
            raise ValueError(f"top_k {self.top_k} exceeds experts {self.experts}")
        if self.position_embedding == "learned" and not self.max_position:
            raise ValueError("learned position embeddings need max_position")
        if self.rope_yarn_factor > 1 and self.position_embedding != "rope":
            raise ValueError("rope_yarn_factor scales RoPE: position_embedding must be rope")
        if self.kv_lora_rank and not (self.qk_nope_head_dim + self.qk_rope_head_dim
                                      and self.v_head_dim):
            raise ValueError("an MLA model (kv_lora_rank > 0) needs qk_nope_head_dim or "
                             "qk_rope_head_dim, and v_head_dim")
        if self.q_lora_rank and not self.kv_lora_rank:
            raise ValueError("q_lora_rank is an MLA field: give kv_lora_rank too")
        if self.sliding_window_layers > self.layers or (
                self.sliding_window_layers > 0) != (self.sliding_window > 0):
            raise ValueError("sliding_window_layers must be 1..layers with a sliding_window "
                             "> 0, and 0 without one")
        g, gk, e = self.router_groups, self.router_group_topk, self.experts
        if (g > 1 or gk > 1) and not (e and e % g == 0 and gk <= g and self.top_k <= gk * e // g):
            raise ValueError(f"router_groups {g} / router_group_topk {gk} (n_group / topk_group): "
                             + ("groups must split the experts evenly and a token's groups hold "
                                "its top_k experts" if e else "a dense model has no experts"))
        if self.first_dense_layers >= self.layers and self.experts:
            raise ValueError(f"first_dense_layers {self.first_dense_layers} leaves no MoE layer "
                             f"of {self.layers}")
        return self

    # ---- shape helpers -------------------------------------------------------------------
    @property
    def n_kv(self) -> int:
        return self.kv_heads or self.heads

    @property
    def is_mla(self) -> bool:
        """Multi-head latent attention (DeepSeek-V2/V3)."""
        return self.kv_lora_rank > 0

    @property
    def d_head(self) -> int:
        """Query/key head dim: head_dim, hidden/heads, or for MLA qk_nope + qk_rope."""
        if self.is_mla:
            return self.qk_nope_head_dim + self.qk_rope_head_dim
        return self.head_dim or self.hidden // self.heads

    @property
    def d_value(self) -> int:
        """Value head dim: v_head_dim for MLA, else d_head."""
        return self.v_head_dim if self.is_mla else self.d_head

    @property
    def score_dim(self) -> int:
        """heads x query/key head dim: the inner dimension summed over in Q K^T (all heads)."""
        return self.heads * self.d_head

    @property
    def value_dim(self) -> int:
        """heads x value head dim: the width of softmax(QK^T) V, the output projection's input."""
        return self.heads * self.d_value

    @property
    def has_dropout(self) -> bool:
        return self.dropout > 0.0

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def expert_ffn(self) -> int:
        return self.moe_ffn_hidden or self.ffn_hidden

    @property
    def shared_ffn(self) -> int:
        return self.shared_expert_ffn or self.expert_ffn

    @property
    def moe_layers(self) -> int:
        """Number of MoE layers: after ``first_dense_layers`` dense layers, every
        ``moe_layer_freq``-th layer (layer i, 0-based, is MoE when i >= first_dense_layers and
        (i - first_dense_layers + 1) % moe_layer_freq == 0: Qwen's decoder_sparse_step rule)."""
        if not self.is_moe:
            return 0
        return (self.layers - self.first_dense_layers) // self.moe_layer_freq

    def is_moe_layer(self, i: int) -> bool:
        """Whether 0-based layer ``i`` is an MoE layer (the rule of :attr:`moe_layers`)."""
        return (self.is_moe and i >= self.first_dense_layers
                and (i - self.first_dense_layers + 1) % self.moe_layer_freq == 0)

    @property
    def dense_layers(self) -> int:
        return self.layers - self.moe_layers

    # ---- per-component parameter counts -------------------------------------------------
    def _norm_params(self, width: int) -> int:
        return width * (2 if self.norm == "layernorm" and self.norm_bias else 1)

    @property
    def attention_matrix_params(self) -> int:
        """Per-layer attention projection weights and biases, without norms or sinks.

        Standard/GQA: h*q_dim (Q) + 2*h*kv_dim (K, V) + q_dim*h (O), biases q_dim + 2*kv_dim and h.
        MLA (DeepSeek-V2 eqs. 37-47; transformers modeling_deepseek_v3 DeepseekV3Attention):
        Q = h*r_q + r_q*heads*(nope+rope) (or h*heads*(nope+rope) without q_lora_rank), joint KV
        down-projection h*(r_kv + rope) with the shared RoPE key, up-projection
        r_kv*heads*(nope + v), O = heads*v*h; biases (attention_bias) on the down-projections.
        """
        h = self.hidden
        if self.is_mla:
            qk, r_q, r_kv = self.d_head, self.q_lora_rank, self.kv_lora_rank
            q_in = r_q or h
            p = (h * r_q if r_q else 0) + q_in * self.heads * qk
            p += h * (r_kv + self.qk_rope_head_dim) + r_kv * self.heads * (
                self.qk_nope_head_dim + self.v_head_dim)
            p += self.value_dim * h
            if self.attention_bias:
                p += (r_q or self.heads * qk) + r_kv + self.qk_rope_head_dim
            if self.attention_out_bias:
                p += h
            return p
        q, kv = self.heads * self.d_head, self.n_kv * self.d_head
        p = h * q + 2 * h * kv + q * h
        if self.attention_bias:
            p += q + 2 * kv
        if self.attention_out_bias:
            p += h
        return p

    @property
    def attention_norm_params(self) -> int:
        """Norms inside attention: per-head Q/K norms (Qwen3, Gemma-3), or over all heads' width
        (``qk_norm_full``: OLMo-2, Cohere), or MLA's latent norms (q_a_layernorm over r_q,
        kv_a_layernorm over r_kv)."""
        widths = (self.heads + self.n_kv) * self.d_head if self.qk_norm_full else 2 * self.d_head
        p = self._norm_params(widths) if self.qk_norm else 0
        if self.is_mla:
            p += self._norm_params(self.kv_lora_rank) + (
                self._norm_params(self.q_lora_rank) if self.q_lora_rank else 0)
        return p

    @property
    def attention_params(self) -> int:
        """Per-layer attention parameters: projections, inner norms and sink logits."""
        return (self.attention_matrix_params + self.attention_norm_params
                + (self.heads if self.attention_sinks else 0))

    def _mlp_params(self, ffn: int) -> int:
        m = self.ffn_type.matrices
        p = m * self.hidden * ffn
        if self.mlp_bias:
            p += (m - 1) * ffn + self.hidden
        return p

    @property
    def dense_mlp_params(self) -> int:
        return self._mlp_params(self.ffn_hidden)

    @property
    def expert_params(self) -> int:
        """Parameters of one routed expert."""
        return self._mlp_params(self.expert_ffn)

    @property
    def shared_expert_params(self) -> int:
        """Parameters of one shared expert (its own width if given) and its gate."""
        return self._mlp_params(self.shared_ffn) + (self.hidden if self.shared_expert_gate else 0)

    @property
    def router_params(self) -> int:
        return self.hidden * self.experts + (self.experts if self.router_bias else 0)

    @property
    def layer_norm_params(self) -> int:
        """Hidden-width norms of one layer (``layer_norms`` of them)."""
        return self.layer_norms * self._norm_params(self.hidden)

    @property
    def dense_layer_params(self) -> int:
        return self.attention_params + self.dense_mlp_params + self.layer_norm_params

    @property
    def moe_layer_params(self) -> int:
        """Total parameters of one MoE layer (all experts)."""
        return (self.attention_params + self.layer_norm_params + self.router_params
                + self.experts * self.expert_params
                + self.shared_experts * self.shared_expert_params)

    @property
    def moe_layer_active_params(self) -> int:
        return (self.attention_params + self.layer_norm_params + self.router_params
                + self.top_k * self.expert_params
                + self.shared_experts * self.shared_expert_params)

    @property
    def embedding_params(self) -> int:
        """Input side: token (+ position, segment, norm) embeddings."""
        p = self.vocab * self.hidden
        if self.position_embedding == "learned":
            p += self.max_position * self.hidden
        p += self.token_type_vocab * self.hidden
        if self.embedding_norm:
            p += self._norm_params(self.hidden)
        return p

    @property
    def head_params(self) -> int:
        """Output side: final norm, untied LM head, pooler."""
        p = self._norm_params(self.hidden) if self.final_norm else 0
        if not self.tied_embeddings:
            p += self.vocab * self.hidden
        if self.pooler:
            p += self.hidden * self.hidden + self.hidden
        return p

    @property
    def total_params(self) -> int:
        return (self.embedding_params + self.head_params
                + self.dense_layers * self.dense_layer_params
                + self.moe_layers * self.moe_layer_params)

    @property
    def active_params(self) -> int:
        """Parameters touched per token (MoE: top-k + shared experts); = total for dense."""
        return (self.embedding_params + self.head_params
                + self.dense_layers * self.dense_layer_params
                + self.moe_layers * self.moe_layer_active_params)

    def _mtp(self, layer: int) -> int:
        return self.mtp_layers * (3 * self._norm_params(self.hidden)
                                  + 2 * self.hidden * self.hidden + layer)

    @property
    def mtp_params(self) -> int:
        """Multi-token-prediction modules, not in ``total_params`` (DeepSeek-V3 arXiv 2412.19437
        section 2.2; README_WEIGHTS.md of deepseek-ai/DeepSeek-V3): each has two RMSNorms
        (enorm, hnorm), the projection 2h x h (eh_proj), one transformer layer (an MoE layer
        when the model is MoE) and a final norm; embedding and output head are shared."""
        return self._mtp(self.moe_layer_params if self.is_moe else self.dense_layer_params)

    @property
    def mtp_active_params(self) -> int:
        """Per-token parameters of the MTP modules (top-k + shared experts), shared parts apart."""
        return self._mtp(self.moe_layer_active_params if self.is_moe else self.dense_layer_params)

    @property
    def layer_params_avg(self) -> float:
        return (self.dense_layers * self.dense_layer_params
                + self.moe_layers * self.moe_layer_params) / self.layers

    @property
    def largest_layer_params(self) -> int:
        return max(self.dense_layer_params if self.dense_layers else 0,
                   self.moe_layer_params if self.moe_layers else 0)


class BareModel(Frozen):
    """A bare parameter count (``70e9``, ``70B``): model-state arithmetic only, no architecture."""

    name: str = Field(description="the count as typed")
    total_params: float = Field(gt=0, le=1e16, description="parameters")

    @property
    def active_params(self) -> float:
        return self.total_params

    @property
    def is_moe(self) -> bool:
        return False

    @property
    def has_dropout(self) -> bool:
        """A bare count has no config to read dropout from: no activation masks are modelled."""
        return False
