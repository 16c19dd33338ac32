"""Strictly typed access to a config.json object (:class:`Cfg`) and the small readers every
family mapper shares: activation -> MLP type, dropout fields, training sequence length."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from optimus_calc.errors import InputError

_MISSING = object()


class Cfg:
    """A config.json object with strictly typed field access: every field read is checked
    (integers are JSON integers, booleans JSON booleans, floats finite), and a bad one is an
    InputError naming the file and the field (issue 15: a string "false" is not True)."""

    def __init__(self, data: dict, path: Path, prefix: str = "", reads: dict | None = None):
        self.data, self.path, self.prefix = data, path, prefix
        self.reads = {} if reads is None else reads  # file key -> value, for error messages

    def source_of(self, value: Any) -> str | None:
        """The one file key read whose value is ``value`` (None if none or several): names the
        config.json field behind a Model field that fails validation."""
        keys = [k for k, v in self.reads.items() if type(v) is type(value) and v == value]
        return keys[0] if len(keys) == 1 else None

    def _bad(self, key: str, want: str, v: Any) -> InputError:
        shown = json.dumps(v)[:40] if not isinstance(v, float) else repr(v)
        return InputError(f"{self.path}: field {self.prefix + key!r}: expected {want}, "
                          f"got {shown}")

    def _raw(self, keys: tuple[str, ...], default: Any) -> tuple[str, Any]:
        for k in keys:
            if k in self.data and self.data[k] is not None:
                self.reads[self.prefix + k] = self.data[k]
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

    def num(self, key: str, default: Any = _MISSING) -> float:
        """A finite, non-negative number (e.g. rope_theta); without ``default`` required."""
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

    def sub(self, key: str) -> "Cfg":
        v = self.data.get(key)
        if not isinstance(v, dict):
            raise self._bad(key, "a JSON object", v)
        return Cfg(v, self.path, f"{self.prefix}{key}.", self.reads)


def act(c: Cfg, key: str, default: str) -> str:
    """The 2-matrix MLP activation: relu, relu2 (squared ReLU, Nemotron) or gelu (any GELU)."""
    name = c.str(key, default).lower()
    return name if name in ("relu", "relu2") else "gelu"


def gated(c: Cfg, *keys: str, default: str = "silu") -> str:
    """SwiGLU for SiLU-gated MLPs, GeGLU for GELU-gated ones (Gemma's gelu_pytorch_tanh)."""
    act = default
    for k in keys:
        if c.data.get(k) is not None:
            act = c.str(k, default)
            break
    return "geglu" if act.lower().startswith("gelu") else "swiglu"


# transformers' defaults for the dropout probability fields: 0 unless a config sets them
DROPOUT_KEYS = ("attention_dropout", "hidden_dropout", "resid_pdrop", "attn_pdrop",
                 "embd_pdrop", "dropout", "hidden_dropout_prob",
                 "attention_probs_dropout_prob")


def seq_len(c: Cfg, default: int) -> int:
    return min(c.int("max_position_embeddings", default=default, minimum=1), 8192)



def text_model(c: Cfg, outer: str) -> Cfg:
    """The language model of a multimodal wrapper config (``model_type`` ``outer``, e.g.
    gemma3, llama4): its ``text_config``, the wrapper's ``tie_word_embeddings`` applying when the
    inner config has none. A text-only config (gemma3_text, llama4_text) is returned as is."""
    if c.data.get("model_type") != outer:
        return c
    t = c.sub("text_config")
    if "tie_word_embeddings" in c.data and "tie_word_embeddings" not in t.data:
        t.data = {**t.data, "tie_word_embeddings": c.data["tie_word_embeddings"]}
    return t


def sliding(c: Cfg, layers: int, window: int, full_every: int) -> dict:
    """``sliding_window`` and ``sliding_window_layers``: the config's window (``window`` where
    it omits it; null or 0: none) on its ``layer_types``' "sliding_attention" layers, or where
    it gives none on the family's pattern, every ``full_every``-th layer full (0: all windowed;
    transformers configuration_gpt_oss.py L102-105, configuration_gemma2.py L95-98)."""
    if "sliding_window" in c.data and c.data["sliding_window"] is None:
        return {}  # an explicit null: no window (the class default applies only when absent)
    w = c.int("sliding_window", default=window)
    if not w:
        return {}
    types = c.data.get("layer_types")
    if types is None:
        n = layers - (layers // full_every if full_every else 0)
    elif isinstance(types, list) and len(types) == layers and all(
            t in ("sliding_attention", "full_attention") for t in types):
        n = types.count("sliding_attention")
    else:
        raise c._bad("layer_types", f"a list of {layers} \"sliding_attention\" or "
                     "\"full_attention\"", types)
    return dict(sliding_window=w, sliding_window_layers=n) if n else {}
