"""What inverting a break-even goal for one parameter gives (sym.invert with sympy,
numeric.invert with the generated forms)."""

from __future__ import annotations

from optimus_calc.record import record


@record
class Inversion:
    value: float | None        # smallest x meeting the goal; None: no x alone does
    formula: str               # x = ... as solved, or the expression when never
    floor: float = 0.0         # the expression at the cap (when never)
    any_value: bool = False    # the goal holds for every x > 0


def smallest_root(roots, ok, cap: float, integer: bool) -> Inversion | None:
    """The smallest of ``roots`` ((value, formula) pairs, lazily computed) that is positive,
    finite, at most ``cap`` (rounded up to an integer for a count) and meets the goal (``ok``);
    None when none does. One rule for the sympy and the generated-form inversions."""
    import math
    best: tuple[float, str] | None = None
    for x, text in roots:
        if not (x > 0 and math.isfinite(x)) or x > cap * (1 + 1e-12):
            continue
        if integer:
            x = float(math.ceil(x - 1e-9))
        if ok(x) and (best is None or x < best[0]):
            best = (x, text)
    return None if best is None else Inversion(best[0], best[1])
