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
