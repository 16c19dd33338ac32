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
