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
