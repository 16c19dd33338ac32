"""Import a Hugging Face ``config.json`` from a local file (no network) as a :class:`Model`.

Supported ``model_type`` values: llama, mistral, mixtral, qwen2, qwen3, qwen3_moe, gpt2,
gpt_neox, bloom, opt, phi3, gpt_oss. Defaults follow each transformers config class (for
example ``tie_word_embeddings`` is False for Llama but True for GPT-2, BLOOM and OPT).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable

from pydantic import ValidationError

from optimus_calc.errors import InputError
from optimus_calc.specs.model import Model


class _Cfg:
    def __init__(self, data: dict, path: Path):
        self.data, self.path = data, path

    def req(self, *keys: str) -> Any:
        for k in keys:
            if k in self.data and self.data[k] is not None:
                return self.data[k]
        raise InputError(f"{self.path}: missing field {keys[0]!r} "
                         f"(model_type {self.data.get('model_type')!r})")

    def opt(self, key: str, default: Any) -> Any:
        v = self.data.get(key)
        return default if v is None else v


def _act(c: _Cfg, key: str, default: str) -> str:
    act = str(c.opt(key, default)).lower()
    return "relu" if act == "relu" else "gelu"


def _llama_like(c: _Cfg, *, qkv_bias: bool = False, qk_norm: bool = False) -> dict:
    d = dict(
        layers=c.req("num_hidden_layers"), hidden=c.req("hidden_size"),
        heads=c.req("num_attention_heads"),
        kv_heads=c.opt("num_key_value_heads", 0) or 0,
        head_dim=c.opt("head_dim", 0) or 0,
        ffn_hidden=c.req("intermediate_size"), ffn_type="swiglu", vocab=c.req("vocab_size"),
        tied_embeddings=bool(c.opt("tie_word_embeddings", False)),
        position_embedding="rope", norm="rmsnorm", rope_base=c.opt("rope_theta", 0),
        attention_bias=bool(c.opt("attention_bias", qkv_bias)),
        attention_out_bias=bool(c.opt("attention_bias", False)) and not qkv_bias,
        mlp_bias=bool(c.opt("mlp_bias", False)), qk_norm=qk_norm,
        seq_len=min(int(c.opt("max_position_embeddings", 4096)), 8192),
    )
    return d


def _mixtral(c: _Cfg) -> dict:
    d = _llama_like(c)
    d.update(experts=c.req("num_local_experts"), top_k=c.req("num_experts_per_tok"))
    return d


def _qwen3_moe(c: _Cfg) -> dict:
    d = _llama_like(c, qk_norm=True)
    d.update(experts=c.req("num_experts"), top_k=c.req("num_experts_per_tok"),
             moe_ffn_hidden=c.req("moe_intermediate_size"),
             moe_layer_freq=int(c.opt("decoder_sparse_step", 1)))
    return d


def _gpt_oss(c: _Cfg) -> dict:
    d = _llama_like(c)
    d.update(attention_bias=True, attention_out_bias=True, mlp_bias=True, attention_sinks=True,
             experts=c.req("num_local_experts"), top_k=c.req("num_experts_per_tok"),
             router_bias=True)
    return d


def _gpt2(c: _Cfg) -> dict:
    h = c.req("n_embd", "hidden_size")
    return dict(
        layers=c.req("n_layer", "num_hidden_layers"), hidden=h,
        heads=c.req("n_head", "num_attention_heads"),
        ffn_hidden=c.opt("n_inner", None) or 4 * h, ffn_type=_act(c, "activation_function", "gelu"),
        vocab=c.req("vocab_size"), tied_embeddings=bool(c.opt("tie_word_embeddings", True)),
        position_embedding="learned", max_position=c.req("n_positions", "max_position_embeddings"),
        norm="layernorm", attention_bias=True, attention_out_bias=True, mlp_bias=True,
        seq_len=min(int(c.opt("n_positions", 1024)), 8192),
    )


def _gpt_neox(c: _Cfg) -> dict:
    bias = bool(c.opt("attention_bias", True))
    return dict(
        layers=c.req("num_hidden_layers"), hidden=c.req("hidden_size"),
        heads=c.req("num_attention_heads"), ffn_hidden=c.req("intermediate_size"),
        ffn_type=_act(c, "hidden_act", "gelu"), vocab=c.req("vocab_size"),
        tied_embeddings=bool(c.opt("tie_word_embeddings", False)), position_embedding="rope",
        norm="layernorm", attention_bias=bias, attention_out_bias=bias, mlp_bias=True,
        seq_len=min(int(c.opt("max_position_embeddings", 2048)), 8192),
    )


def _bloom(c: _Cfg) -> dict:
    h = c.req("hidden_size", "n_embed")
    return dict(
        layers=c.req("n_layer", "num_hidden_layers"), hidden=h,
        heads=c.req("n_head", "num_attention_heads"), ffn_hidden=4 * h, ffn_type="gelu",
        vocab=c.req("vocab_size"), tied_embeddings=bool(c.opt("tie_word_embeddings", True)),
        position_embedding="alibi", norm="layernorm", attention_bias=True,
        attention_out_bias=True, mlp_bias=True, embedding_norm=True, seq_len=2048,
    )


def _opt(c: _Cfg) -> dict:
    h = c.req("hidden_size")
    if c.opt("word_embed_proj_dim", h) != h:
        raise InputError(f"{c.path}: OPT with word_embed_proj_dim != hidden_size "
                         "(project_in/out) is not supported")
    return dict(
        layers=c.req("num_hidden_layers"), hidden=h, heads=c.req("num_attention_heads"),
        ffn_hidden=c.req("ffn_dim"), ffn_type=_act(c, "activation_function", "relu"),
        vocab=c.req("vocab_size"), tied_embeddings=bool(c.opt("tie_word_embeddings", True)),
        position_embedding="learned", max_position=int(c.req("max_position_embeddings")) + 2,
        norm="layernorm", attention_bias=bool(c.opt("enable_bias", True)),
        attention_out_bias=bool(c.opt("enable_bias", True)),
        mlp_bias=bool(c.opt("enable_bias", True)),
        final_norm=bool(c.opt("do_layer_norm_before", True)), seq_len=2048,
    )


MAPPERS: dict[str, Callable[[_Cfg], dict]] = {
    "llama": _llama_like,
    "mistral": _llama_like,
    "mixtral": _mixtral,
    "qwen2": lambda c: _llama_like(c, qkv_bias=True),
    "qwen3": lambda c: _llama_like(c, qk_norm=True),
    "qwen3_moe": _qwen3_moe,
    "phi3": _llama_like,
    "gpt_oss": _gpt_oss,
    "gpt2": _gpt2,
    "gpt_neox": _gpt_neox,
    "bloom": _bloom,
    "opt": _opt,
}


def _name_for(data: dict, path: Path) -> str:
    raw = str(data.get("_name_or_path") or path.parent.name or path.stem)
    raw = raw.rsplit("/", 1)[-1].lower()
    slug = re.sub(r"[^a-z0-9.+-]+", "-", raw).strip("-.") or "model"
    return f"hf-{slug}"[:80]


def load_hf_config(path: str | Path) -> Model:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{p}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise InputError(f"{p}: not a UTF-8 text file") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{p}: not valid JSON (line {exc.lineno}, column {exc.colno})") from None
    if not isinstance(data, dict):
        raise InputError(f"{p}: expected a JSON object")
    mtype = data.get("model_type")
    if mtype is None:
        raise InputError(f"{p}: missing field 'model_type'")
    if mtype not in MAPPERS:
        raise InputError(f"{p}: unsupported model_type {str(mtype)[:40]!r}; supported: "
                         f"{', '.join(sorted(MAPPERS))}")
    cfg = _Cfg(data, p)
    fields = MAPPERS[mtype](cfg)
    try:
        return Model(name=_name_for(data, p), family=str(mtype),
                     source=f"Hugging Face config.json at {p}", **fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first["loc"])
        raise InputError(f"{p}: field {loc!r}: {first['msg']}") from None
