"""Transformer architecture (dense and MoE) with parameter counts derived from its shape.

Counts are exact for the catalog's architectures: attention projections with grouped-query
attention (KV heads), 2-matrix (GELU/ReLU) or 3-matrix gated (SwiGLU) MLPs, mixture-of-experts
layers (routed experts, router, shared experts, every ``moe_layer_freq``-th layer), embeddings,
learned positions, norms and biases. Nothing here is typed in from a published count:
``published_params`` is kept only to check the derivation against.
"""

from __future__ import annotations

from enum import Enum
from typing import ClassVar, Literal

from pydantic import Field, model_validator

from optimus_calc.specs.base import CatalogEntry, Frozen


class FFNType(str, Enum):
    GELU = "gelu"
    RELU = "relu"
    SWIGLU = "swiglu"
    GEGLU = "geglu"

    @property
    def matrices(self) -> int:
        """Weight matrices per MLP: 2 for GELU/ReLU, 3 for gated (SwiGLU/GeGLU)."""
        return 3 if self in (FFNType.SWIGLU, FFNType.GEGLU) else 2


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
    ffn_type: FFNType = Field(description="gelu/relu (2 matrices) or swiglu/geglu (3)")
    vocab: int = Field(gt=0, le=100_000_000, description="vocabulary size V")
    tied_embeddings: bool = Field(description="output head shares the input embedding")
    position_embedding: Literal["learned", "rope", "alibi", "none"] = Field(
        description="positional embedding type")
    max_position: int = Field(default=0, ge=0, le=100_000_000,
                              description="learned position table size (learned only)")
    rope_base: float = Field(default=0, ge=0, le=1e12,
                             description="RoPE base theta, HF rope_theta (0 = not recorded)")
    norm: Literal["layernorm", "rmsnorm"] = Field(description="normalisation layer")
    attention_bias: bool = Field(default=False, description="biases on Q, K, V projections")
    attention_out_bias: bool = Field(default=False, description="bias on the output projection")
    mlp_bias: bool = Field(default=False, description="biases on MLP matrices")
    qk_norm: bool = Field(default=False, description="per-head norms on Q and K (Qwen3)")
    attention_sinks: bool = Field(default=False, description="one learned sink logit per head")
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
    router_bias: bool = Field(default=False, description="bias on the router")
    seq_len: int = Field(default=2048, gt=0, le=100_000_000,
                         description="default training sequence length")
    published_params: float = Field(
        default=0, ge=0, description="published total parameters (check only, never used)")
    published_active_params: float = Field(
        default=0, ge=0, description="published active parameters (check only)")
    published_params_digits: int = Field(
        default=0, ge=0, le=12,
        description="significant decimals in the published billions (0 = use 1% tolerance)")

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
        return self

    # ---- shape helpers -------------------------------------------------------------------
    @property
    def n_kv(self) -> int:
        return self.kv_heads or self.heads

    @property
    def d_head(self) -> int:
        return self.head_dim or self.hidden // self.heads

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def expert_ffn(self) -> int:
        return self.moe_ffn_hidden or self.ffn_hidden

    @property
    def moe_layers(self) -> int:
        """Number of MoE layers: every ``moe_layer_freq``-th layer, counting from the last."""
        return self.layers // self.moe_layer_freq if self.is_moe else 0

    @property
    def dense_layers(self) -> int:
        return self.layers - self.moe_layers

    # ---- per-component parameter counts -------------------------------------------------
    def _norm_params(self, width: int) -> int:
        return width * (2 if self.norm == "layernorm" else 1)

    @property
    def attention_params(self) -> int:
        h, q, kv = self.hidden, self.heads * self.d_head, self.n_kv * self.d_head
        p = h * q + 2 * h * kv + q * h
        if self.attention_bias:
            p += q + 2 * kv
        if self.attention_out_bias:
            p += h
        if self.qk_norm:
            p += 2 * self._norm_params(self.d_head)
        if self.attention_sinks:
            p += self.heads
        return p

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
        """Parameters of one routed (or shared) expert."""
        return self._mlp_params(self.expert_ffn)

    @property
    def router_params(self) -> int:
        return self.hidden * self.experts + (self.experts if self.router_bias else 0)

    @property
    def layer_norm_params(self) -> int:
        return 2 * self._norm_params(self.hidden)

    @property
    def dense_layer_params(self) -> int:
        return self.attention_params + self.dense_mlp_params + self.layer_norm_params

    @property
    def moe_layer_params(self) -> int:
        """Total parameters of one MoE layer (all experts)."""
        return (self.attention_params + self.layer_norm_params + self.router_params
                + (self.experts + self.shared_experts) * self.expert_params)

    @property
    def moe_layer_active_params(self) -> int:
        return (self.attention_params + self.layer_norm_params + self.router_params
                + (self.top_k + self.shared_experts) * self.expert_params)

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
