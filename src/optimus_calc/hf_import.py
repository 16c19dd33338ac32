"""Import a Hugging Face ``config.json`` from a local file (no network) as a :class:`Model`.

Supported ``model_type`` values: llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe,
gpt2, gpt_neox, bloom, opt, phi3, gpt_oss, deepseek_v2, deepseek_v3, gemma2, gemma3 (and
gemma3_text), falcon (and the legacy RefinedWebModel / RefinedWeb). Defaults follow each
transformers config class (for example ``tie_word_embeddings`` is False for Llama but True for
GPT-2, BLOOM, OPT, Gemma and Falcon). Fields are strictly typed: a string where a number or a
boolean belongs, a list, NaN or an out-of-range number is an input error naming the field.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Callable

from pydantic import ValidationError

from optimus_calc.errors import InputError
from optimus_calc.loaders import parse_json, read_text
from optimus_calc.specs.model import Model


_MISSING = object()


class _Cfg:
    """A config.json object with strictly typed field access: every field read is checked
    (integers are JSON integers, booleans JSON booleans, floats finite), and a bad one is an
    InputError naming the file and the field (issue 15: a string "false" is not True)."""

    def __init__(self, data: dict, path: Path, prefix: str = ""):
        self.data, self.path, self.prefix = data, path, prefix

    def _bad(self, key: str, want: str, v: Any) -> InputError:
        shown = json.dumps(v)[:40] if not isinstance(v, float) else repr(v)
        return InputError(f"{self.path}: field {self.prefix + key!r}: expected {want}, "
                          f"got {shown}")

    def _raw(self, keys: tuple[str, ...], default: Any) -> tuple[str, Any]:
        for k in keys:
            if k in self.data and self.data[k] is not None:
                return k, self.data[k]
        if default is _MISSING:
            raise InputError(f"{self.path}: missing field {self.prefix + keys[0]!r} "
                             f"(model_type {self.data.get('model_type')!r})")
        return keys[0], default

    def int(self, *keys: str, default: Any = _MISSING, minimum: int = 0) -> int:
        k, v = self._raw(keys, default)
        if isinstance(v, float) and math.isfinite(v) and v.is_integer():
            v = int(v)
        if isinstance(v, bool) or not isinstance(v, int):
            raise self._bad(k, "an integer", v)
        if v < minimum:
            raise self._bad(k, f"an integer >= {minimum}", v)
        return v

    def bool(self, key: str, default: bool) -> bool:
        k, v = self._raw((key,), default)
        if not isinstance(v, bool):
            raise self._bad(k, "true or false (a JSON boolean)", v)
        return v

    def num(self, key: str, default: float) -> float:
        """A finite, non-negative number (e.g. rope_theta)."""
        k, v = self._raw((key,), default)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
                math.isfinite(v) and v >= 0):
            raise self._bad(k, "a finite number >= 0", v)
        return float(v)

    def prob(self, *keys: str, default: float = 0.0) -> float:
        """The largest of the dropout probabilities given (absent = default)."""
        out = None
        for k in keys:
            if k in self.data and self.data[k] is not None:
                v = self.data[k]
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
                        math.isfinite(v) and 0.0 <= v <= 1.0):
                    raise self._bad(k, "a probability between 0 and 1", v)
                out = max(out or 0.0, float(v))
        return default if out is None else out

    def str(self, key: str, default: str) -> str:
        k, v = self._raw((key,), default)
        if not isinstance(v, str):
            raise self._bad(k, "a string", v)
        return v

    def int_list(self, key: str) -> list[int]:
        v = self.data.get(key)
        if v is None:
            return []
        if not isinstance(v, list) or any(isinstance(x, bool) or not isinstance(x, int)
                                          for x in v):
            raise self._bad(key, "a list of integers", v)
        return list(v)

    def sub(self, key: str) -> "_Cfg":
        v = self.data.get(key)
        if not isinstance(v, dict):
            raise self._bad(key, "a JSON object", v)
        return _Cfg(v, self.path, f"{self.prefix}{key}.")


def _act(c: _Cfg, key: str, default: str) -> str:
    act = c.str(key, default).lower()
    return "relu" if act == "relu" else "gelu"


def _gated(c: _Cfg, *keys: str, default: str = "silu") -> str:
    """SwiGLU for SiLU-gated MLPs, GeGLU for GELU-gated ones (Gemma's gelu_pytorch_tanh)."""
    act = default
    for k in keys:
        if c.data.get(k) is not None:
            act = c.str(k, default)
            break
    return "geglu" if act.lower().startswith("gelu") else "swiglu"


# transformers' defaults for the dropout probability fields: 0 unless a config sets them
_DROPOUT_KEYS = ("attention_dropout", "hidden_dropout", "resid_pdrop", "attn_pdrop",
                 "embd_pdrop", "dropout", "hidden_dropout_prob",
                 "attention_probs_dropout_prob")


def _seq_len(c: _Cfg, default: int) -> int:
    return min(c.int("max_position_embeddings", default=default, minimum=1), 8192)


def _llama_like(c: _Cfg, *, qkv_bias: bool = False, qk_norm: bool = False) -> dict:
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
        seq_len=_seq_len(c, 4096), dropout=c.prob(*_DROPOUT_KEYS),
    )
    return d


def _mixtral(c: _Cfg) -> dict:
    d = _llama_like(c)
    d.update(experts=c.int("num_local_experts"), top_k=c.int("num_experts_per_tok"))
    return d


def _qwen3_moe(c: _Cfg) -> dict:
    d = _llama_like(c, qk_norm=True)
    d.update(experts=c.int("num_experts"), top_k=c.int("num_experts_per_tok"),
             moe_ffn_hidden=c.int("moe_intermediate_size"),
             moe_layer_freq=c.int("decoder_sparse_step", default=1, minimum=1))
    _dense_prefix(c, d)
    return d


def _dense_prefix(c: _Cfg, d: dict) -> None:
    """Qwen's ``mlp_only_layers``: supported when they are the first k layers (a dense prefix)."""
    only = c.int_list("mlp_only_layers")
    if only:
        if sorted(only) != list(range(len(only))):
            raise InputError(f"{c.path}: field 'mlp_only_layers': only a leading run of dense "
                             f"layers (0, 1, ..., k-1) is supported, got {only[:8]}")
        d["first_dense_layers"] = len(only)


def _qwen2_moe(c: _Cfg) -> dict:
    """Qwen1.5-MoE / Qwen2-MoE (transformers modeling_qwen2_moe.Qwen2MoeSparseMoeBlock): routed
    experts of moe_intermediate_size, one shared expert of shared_expert_intermediate_size with
    a sigmoid gate Linear(h, 1, bias=False), QKV biases."""
    d = _llama_like(c, qkv_bias=True)
    shared = c.int("shared_expert_intermediate_size", default=0)
    d.update(experts=c.int("num_experts"), top_k=c.int("num_experts_per_tok"),
             moe_ffn_hidden=c.int("moe_intermediate_size"),
             shared_experts=1 if shared else 0, shared_expert_ffn=shared,
             shared_expert_gate=bool(shared),
             moe_layer_freq=c.int("decoder_sparse_step", default=1, minimum=1))
    _dense_prefix(c, d)
    return d


def _deepseek(c: _Cfg, *, v3: bool) -> dict:
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
        seq_len=_seq_len(c, 4096), dropout=c.prob(*_DROPOUT_KEYS),
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
                 router_bias=v3 and c.str("topk_method", "noaux_tc") == "noaux_tc")
    return d


def _gemma(c: _Cfg, *, qk_norm: bool, vocab_default: int | None) -> dict:
    """Gemma-2/3 (transformers modeling_gemma2/gemma3): head_dim independent of hidden/heads,
    GeGLU MLP (gelu_pytorch_tanh), four RMSNorms per layer (input, post-attention,
    pre- and post-feedforward), tied embeddings; Gemma-3 adds per-head Q/K RMSNorms."""
    vocab = (c.int("vocab_size") if vocab_default is None
             else c.int("vocab_size", default=vocab_default))
    return dict(
        layers=c.int("num_hidden_layers"), hidden=c.int("hidden_size"),
        heads=c.int("num_attention_heads"), kv_heads=c.int("num_key_value_heads", default=0),
        head_dim=c.int("head_dim", default=256),
        ffn_hidden=c.int("intermediate_size"),
        ffn_type=_gated(c, "hidden_activation", "hidden_act", default="gelu_pytorch_tanh"),
        vocab=vocab, tied_embeddings=c.bool("tie_word_embeddings", True),
        position_embedding="rope", norm="rmsnorm", layer_norms=4, qk_norm=qk_norm,
        attention_bias=c.bool("attention_bias", False),
        attention_out_bias=c.bool("attention_bias", False),
        seq_len=_seq_len(c, 8192), dropout=c.prob(*_DROPOUT_KEYS),
    )


def _gemma3(c: _Cfg) -> dict:
    """``gemma3`` (multimodal: the language model is ``text_config``; the SigLIP vision tower
    is not counted) or ``gemma3_text``. Gemma3TextConfig's vocab_size default 262,208 applies
    when the hub config omits it (google/gemma-3-27b-pt does)."""
    t = c.sub("text_config") if c.data.get("model_type") == "gemma3" else c
    if t is not c and "tie_word_embeddings" in c.data and "tie_word_embeddings" not in t.data:
        t.data = {**t.data, "tie_word_embeddings": c.data["tie_word_embeddings"]}
    return _gemma(t, qk_norm=True, vocab_default=262_208)


def _falcon(c: _Cfg) -> dict:
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
        ffn_type=_act(c, "activation", "gelu"), vocab=c.int("vocab_size"),
        tied_embeddings=c.bool("tie_word_embeddings", True),
        position_embedding="alibi" if alibi else "rope", norm="layernorm",
        layer_norms=2 if new or not parallel else 1, parallel_attention=parallel,
        attention_bias=bias, attention_out_bias=bias, mlp_bias=bias,
        seq_len=_seq_len(c, 2048), dropout=c.prob(*_DROPOUT_KEYS),
    )


def _gpt_oss(c: _Cfg) -> dict:
    d = _llama_like(c)
    d.update(attention_bias=True, attention_out_bias=True, mlp_bias=True, attention_sinks=True,
             experts=c.int("num_local_experts"), top_k=c.int("num_experts_per_tok"),
             router_bias=True)
    return d


def _gpt2(c: _Cfg) -> dict:
    h = c.int("n_embd", "hidden_size")
    return dict(
        layers=c.int("n_layer", "num_hidden_layers"), hidden=h,
        heads=c.int("n_head", "num_attention_heads"),
        ffn_hidden=c.int("n_inner", default=0) or 4 * h,
        ffn_type=_act(c, "activation_function", "gelu"),
        vocab=c.int("vocab_size"), tied_embeddings=c.bool("tie_word_embeddings", True),
        position_embedding="learned",
        max_position=c.int("n_positions", "max_position_embeddings"),
        norm="layernorm", attention_bias=True, attention_out_bias=True, mlp_bias=True,
        seq_len=min(c.int("n_positions", default=1024, minimum=1), 8192),
        # GPT2Config defaults resid/embd/attn_pdrop 0.1
        dropout=c.prob("resid_pdrop", "embd_pdrop", "attn_pdrop", default=0.1),
    )


def _gpt_neox(c: _Cfg) -> dict:
    bias = c.bool("attention_bias", True)
    return dict(
        layers=c.int("num_hidden_layers"), hidden=c.int("hidden_size"),
        heads=c.int("num_attention_heads"), ffn_hidden=c.int("intermediate_size"),
        ffn_type=_act(c, "hidden_act", "gelu"), vocab=c.int("vocab_size"),
        tied_embeddings=c.bool("tie_word_embeddings", False), position_embedding="rope",
        norm="layernorm", attention_bias=bias, attention_out_bias=bias, mlp_bias=True,
        seq_len=_seq_len(c, 2048), dropout=c.prob(*_DROPOUT_KEYS),
    )


def _bloom(c: _Cfg) -> dict:
    h = c.int("hidden_size", "n_embed")
    return dict(
        layers=c.int("n_layer", "num_hidden_layers"), hidden=h,
        heads=c.int("n_head", "num_attention_heads"), ffn_hidden=4 * h, ffn_type="gelu",
        vocab=c.int("vocab_size"), tied_embeddings=c.bool("tie_word_embeddings", True),
        position_embedding="alibi", norm="layernorm", attention_bias=True,
        attention_out_bias=True, mlp_bias=True, embedding_norm=True, seq_len=2048,
        dropout=c.prob(*_DROPOUT_KEYS),
    )


def _opt(c: _Cfg) -> dict:
    h = c.int("hidden_size")
    if c.int("word_embed_proj_dim", default=h) != h:
        raise InputError(f"{c.path}: OPT with word_embed_proj_dim != hidden_size "
                         "(project_in/out) is not supported")
    bias = c.bool("enable_bias", True)
    return dict(
        layers=c.int("num_hidden_layers"), hidden=h, heads=c.int("num_attention_heads"),
        ffn_hidden=c.int("ffn_dim"), ffn_type=_act(c, "activation_function", "relu"),
        vocab=c.int("vocab_size"), tied_embeddings=c.bool("tie_word_embeddings", True),
        position_embedding="learned", max_position=c.int("max_position_embeddings") + 2,
        norm="layernorm", attention_bias=bias, attention_out_bias=bias, mlp_bias=bias,
        final_norm=c.bool("do_layer_norm_before", True), seq_len=2048,
        # OPTConfig: dropout 0.1 (residual), attention_dropout 0.0
        dropout=c.prob("dropout", "attention_dropout", default=0.1),
    )


MAPPERS: dict[str, Callable[[_Cfg], dict]] = {
    "llama": _llama_like,
    "mistral": _llama_like,
    "mixtral": _mixtral,
    "qwen2": lambda c: _llama_like(c, qkv_bias=True),
    "qwen2_moe": _qwen2_moe,
    "qwen3": lambda c: _llama_like(c, qk_norm=True),
    "qwen3_moe": _qwen3_moe,
    "phi3": _llama_like,
    "gpt_oss": _gpt_oss,
    "gpt2": _gpt2,
    "gpt_neox": _gpt_neox,
    "bloom": _bloom,
    "opt": _opt,
    "deepseek_v2": lambda c: _deepseek(c, v3=False),
    "deepseek_v3": lambda c: _deepseek(c, v3=True),
    "gemma2": lambda c: _gemma(c, qk_norm=False, vocab_default=None),
    "gemma3": _gemma3,
    "gemma3_text": _gemma3,
    "falcon": _falcon,
    "RefinedWebModel": _falcon,
    "RefinedWeb": _falcon,
}

# legacy model_type spellings mapped to the family they are
_FAMILY = {"RefinedWebModel": "falcon", "RefinedWeb": "falcon", "gemma3_text": "gemma3"}


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name} (not JSON)")


def _name_for(data: dict, path: Path) -> str:
    raw = data.get("_name_or_path")
    raw = str(raw if isinstance(raw, str) and raw else path.parent.name or path.stem)
    raw = raw.rsplit("/", 1)[-1].lower()
    slug = re.sub(r"[^a-z0-9.+-]+", "-", raw).strip("-.") or "model"
    return f"hf-{slug}"[:80]


def load_hf_config(path: str | Path) -> Model:
    p = Path(path)
    text = read_text(p, "MODEL")  # regular files of bounded size only (loaders.py)
    try:
        data = parse_json(text.removeprefix("\ufeff"), p, "MODEL",
                          parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InputError(f"{p}: not valid JSON (line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise InputError(f"{p}: JSON nested too deeply") from None
    except ValueError as exc:  # NaN / Infinity literals
        raise InputError(f"{p}: {exc}") from None
    if not isinstance(data, dict):
        raise InputError(f"{p}: expected a JSON object")
    mtype = data.get("model_type")
    if mtype is None:
        raise InputError(f"{p}: missing field 'model_type'")
    if not isinstance(mtype, str):
        raise InputError(f"{p}: field 'model_type': expected a string, got "
                         f"{json.dumps(mtype)[:40]}")
    if mtype not in MAPPERS:
        raise InputError(f"{p}: unsupported model_type {mtype[:40]!r}; supported: "
                         f"{', '.join(sorted(MAPPERS))}")
    cfg = _Cfg(data, p)
    fields = MAPPERS[mtype](cfg)
    fields.setdefault("dropout_source", "config.json dropout fields (largest of attention_dropout, "
                      "hidden_dropout, resid/embd/attn_pdrop, ...; the transformers config "
                      "class default when absent)")
    try:
        return Model(name=_name_for(data, p), family=_FAMILY.get(mtype, mtype),
                     source=f"Hugging Face config.json at {p}", **fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first["loc"])
        raise InputError(f"{p}: field {loc!r}: {first['msg']}") from None
