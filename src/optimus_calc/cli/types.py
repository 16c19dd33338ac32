"""Click parameter types that never let NaN or infinity in."""

from __future__ import annotations

import math

import click


class FiniteFloat(click.FloatRange):
    """A float range that also rejects NaN and infinities (click's FloatRange accepts NaN)."""

    name = "float"

    def convert(self, value, param, ctx):
        rv = click.types.FloatParamType.convert(self, value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return super().convert(rv, param, ctx)


class OffloadChoice(click.Choice):
    """``--offload``: the keys of the offload strategies registered when the command line is
    parsed (evaluate/strategies), built-ins and plug-ins alike; read lazily, so importing the
    CLI does not import the evaluator and a strategy registered after the import is a choice."""

    def __init__(self) -> None:
        self.case_sensitive = True

    @property
    def choices(self) -> tuple[str, ...]:
        from optimus_calc.evaluate import strategies
        return tuple(s.key for s in strategies.strategies())

    @choices.setter
    def choices(self, value) -> None:  # click's __init__ and copies set it: the registry wins
        pass


class DtypeBytes(click.IntRange):
    """``--grad-bytes``: the size of a gradient dtype, 1 (fp8), 2 (bf16, fp16), 4 (fp32) or 8
    (fp64); a type, so a runs file's column (calibrate) is checked as the flag is."""

    def __init__(self) -> None:
        super().__init__(1, 8)

    def convert(self, value, param, ctx):
        rv = super().convert(value, param, ctx)
        if rv not in (1, 2, 4, 8):
            self.fail(f"{rv} is not a gradient dtype's size: 1 (fp8), 2 (bf16, fp16), 4 (fp32) "
                      "or 8 (fp64)", param, ctx)
        return rv
