"""Import a Hugging Face ``config.json`` from a local file (no network) as a :class:`Model`.

Supported ``model_type`` values are the keys of :data:`MAPPERS`, one module per family group:
``llama`` (Llama-like decoders and their MoE relatives, granite, olmo2), ``gpt`` (LayerNorm
families with biases: gpt2, gpt_neox, bloom, opt, falcon, starcoder2, nemotron), ``gemma``
(gemma2/3, cohere) and ``moe`` (deepseek_v2/v3, glm4_moe, llama4). Defaults follow each
transformers config class (for example ``tie_word_embeddings`` is False for Llama but True for
GPT-2, BLOOM, OPT, Gemma, Falcon and Cohere). Fields are strictly typed (:mod:`.config`): a string
where a number or a boolean belongs, a list, NaN or an out-of-range number is an input error
naming the field. Multimodal configs (gemma3, llama4) import their language model only
(``text_config``); the model name ends in ``-text`` and its source says so.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable

from pydantic import ValidationError

from optimus_calc.errors import InputError
from optimus_calc.hf_import import gemma, gpt, llama, moe
from optimus_calc.hf_import.config import Cfg
from optimus_calc.loaders import parse_json, read_text
from optimus_calc.specs.model import Model

MAPPERS: dict[str, Callable[[Cfg], dict]] = {
    "llama": llama.llama_like,
    "mistral": llama.mistral,
    "mixtral": llama.mixtral,
    "qwen2": lambda c: llama.llama_like(c, qkv_bias=True),
    "qwen2_moe": llama.qwen2_moe,
    "qwen3": lambda c: llama.llama_like(c, qk_norm=True),
    "qwen3_moe": llama.qwen3_moe,
    "phi3": llama.phi3,
    "granite": llama.granite,
    "olmo2": llama.olmo2,
    "gpt_oss": llama.gpt_oss,
    "gpt2": gpt.gpt2,
    "gpt_neox": gpt.gpt_neox,
    "bloom": gpt.bloom,
    "opt": gpt.opt,
    "falcon": gpt.falcon,
    "RefinedWebModel": gpt.falcon,
    "RefinedWeb": gpt.falcon,
    "starcoder2": gpt.starcoder2,
    "nemotron": gpt.nemotron,
    "gemma2": lambda c: gemma.gemma(c, qk_norm=False, vocab_default=None),
    "gemma3": gemma.gemma3,
    "gemma3_text": gemma.gemma3,
    "cohere": gemma.cohere,
    "deepseek_v2": lambda c: moe.deepseek(c, v3=False),
    "deepseek_v3": lambda c: moe.deepseek(c, v3=True),
    "glm4_moe": moe.glm4_moe,
    "llama4": moe.llama4,
    "llama4_text": moe.llama4,
}

# legacy / text-only model_type spellings mapped to the family they are
_FAMILY = {"RefinedWebModel": "falcon", "RefinedWeb": "falcon", "gemma3_text": "gemma3",
           "llama4_text": "llama4"}
# multimodal wrappers: only the language model (text_config) is imported
TEXT_ONLY = {"gemma3", "llama4"}


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
    cfg = Cfg(data, p)
    fields = MAPPERS[mtype](cfg)
    fields.setdefault("dropout_source", "config.json dropout fields (largest of attention_dropout, "
                      "hidden_dropout, resid/embd/attn_pdrop, ...; the transformers config "
                      "class default when absent)")
    try:
        name, source = _name_for(data, p), f"Hugging Face config.json at {p}"
        if mtype in TEXT_ONLY:
            name = f"{name[:75]}-text"
            source += " (text model only: text_config; the vision encoder is not counted)"
        return Model(name=name, family=_FAMILY.get(mtype, mtype), source=source, **fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first["loc"])
        key = cfg.source_of(first.get("input")) if loc else None
        where = f"field {key!r} (the model's {loc})" if key and key != loc else f"field {loc!r}"
        msg = str(first["msg"]).removeprefix("Value error, ")
        # a check across fields (Model's validator) has no location: name none
        raise InputError(f"{p}: {where}: {msg}" if loc else f"{p}: {msg}") from None
