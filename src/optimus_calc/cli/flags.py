"""Field names of the specs -> the flags a user types: the one place the core's FieldErrors
become command-line messages (``{tp}`` -> ``--tp``)."""

from __future__ import annotations

from optimus_calc.errors import FieldError, InputError

# A field is its flag with dashes unless listed here.
_RENAMED = {"mb": "--micro-batch", "v": "--interleave", "gpu_fraction": "--gpu-fraction",
            "superchip_gpu_fraction": "--gpu-fraction", "sequence_parallel": "--sp",
            "flash_attention": "--flash-attn", "attention_kernel": "--attention-kernel",
            "model_states_only": "--model-states-only",
            "zero_stages": "--zero", "recomputes": "--recompute", "model": "MODEL"}


def flag(field: str) -> str:
    """The flag of a spec field (``micro_batch`` -> ``--micro-batch``)."""
    return _RENAMED.get(field, "--" + field.replace("_", "-"))


class _Flags(dict):
    def get(self, key, default=None):  # every field has a flag
        return flag(key)


def message(exc: InputError) -> str:
    """What the CLI prints for an input error: a FieldError's fields named as flags."""
    if isinstance(exc, FieldError):
        return exc.render(_Flags())
    return str(exc)
