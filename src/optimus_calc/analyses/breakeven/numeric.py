"""Break-even's closed forms evaluated as numbers, without sympy.

The forms are solved once (:mod:`optimus_calc.analyses.breakeven.formgen` over
:mod:`optimus_calc.analyses.breakeven.sym`) into the generated module
:mod:`optimus_calc.analyses.breakeven.compiled_forms`; here they are inverted the way
:func:`optimus_calc.analyses.breakeven.sym.invert` inverts a sympy expression: the roots of the
pieces are candidates, and one counts only where the whole goal holds there (the other branches
of each Max/Min agree). The goal is ``form <= 0``. Values are given by symbol name
(``{"P_n": ..., "K_x": ...}``). A key that is not generated is built at run time with sympy.
"""

from __future__ import annotations

import math

from optimus_calc.analyses.breakeven.inversion import Inversion, smallest_root

TOL = 1e-9  # the goal holds within this much of 0 (as sym.invert's target + 1e-9 max(1, |target|))


def form(key: tuple) -> dict:
    """The generated form of ``key`` (formgen.keys), or the same built with sympy when that key
    is not generated."""
    from optimus_calc.analyses.breakeven.compiled_forms import FORMS

    found = FORMS.get(key)
    if found is None:  # not generated: solve it now (imports sympy)
        from optimus_calc.analyses.breakeven.formgen import build
        found = build(key)
    return found


def _num(fn, x: float, values: dict) -> float:
    try:
        return float(fn(x, **values))
    except (ZeroDivisionError, OverflowError, ValueError, TypeError, KeyError):
        return math.nan


def invert(f: dict, values: dict, cap: float, integer: bool = False,
           floor_x: float = 1e-12) -> Inversion:
    """Smallest ``x`` in (0, cap] with ``goal(x) <= 0``; the goal non-increasing in x."""
    goal = f["goal"]

    def ok(x: float) -> bool:
        return _num(goal, x, values) <= TOL

    if ok(floor_x):
        return Inversion(floor_x, "holds for any value", any_value=True)
    found = smallest_root(((_num(root, 1.0, values), text) for root, text in f["roots"]), ok,
                          cap, integer)
    return found or Inversion(None, f["text"], _num(goal, cap, values))


def roof_at(f: dict, values: dict, x: float) -> float:
    """The roofline alone (the card's step) at ``x``."""
    return _num(f["roof"], x, values)


def binding_names(f: dict, values: dict, x: float) -> list[tuple[str, ...]]:
    """The symbols of each roofline piece free of x whose value is the roofline's at ``x``:
    what binds once x no longer does (as sym.binding_pieces)."""
    whole = roof_at(f, values, x)
    return [names for fn, names in f["roof_pieces"]
            if abs(_num(fn, 1.0, values) - whole) <= 1e-9 * max(1.0, abs(whole))]
