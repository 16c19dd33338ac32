"""Closed-form break-even: solve a registry expression for one hardware parameter.

The goals of `breakeven` are inequalities on registry expressions that fall as the parameter
grows: ``optimusnic.exposed_time(optimusnic.pipeline_time(T_in, T_up =
compute.optimizer_step_time(x), T_out, n_L), W_o) <= target`` for a SmartNIC's bandwidths,
cores, clock and fabric (OptimusNIC: the card's per-layer pipeline against the last
micro-batch's backward and the next forward), and ``memory.spill_bytes(B_dev, C(x)) <= 0`` for
its capacity (alone for fit; for hide the spill enters both link stages and is searched). The host
strategies (ZeRO-Offload/Infinity, SuperOffload) run DeepSpeed's step phase by phase (evaluate/offload_step.py); `breakeven` searches over them instead.
Such an expression is a Max/Min/Piecewise of smooth pieces (a roofline); each
piece that contains ``x`` is solved with ``sympy.solve`` and a root is kept only where the full
expression, with every branch, equals the target there. No root means no value of ``x`` alone
meets the goal; the piece free of ``x`` that is left at large ``x`` names what binds instead.

The caller checks every answer against the evaluator, so a composition that drifts from the
engine falls back to a search instead of giving a wrong number.

`breakeven` itself does not import this module: the forms are solved once from it
(:mod:`optimus_calc.analyses.breakeven.formgen`) and evaluated numerically
(:mod:`optimus_calc.analyses.breakeven.numeric`).
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache

import sympy as sp

from optimus_calc.equations.compute import (BW, F_core, F_dev, T_opt, bpp, cores, eta_m,
                                            fpp, nthr, optimizer_step_time, B_core, Pn)
from optimus_calc.equations.memory import B_dev, C, spill_bytes
from optimus_calc.equations.offload import W_o
from optimus_calc.equations.optimusnic import (B_cl, B_gl, P_o, T_in, T_out, T_pipe, T_up,
                                               b_gr, b_wt, exposed_time,
                                               n_gc, n_L, pipeline_time)
from optimus_calc.analyses.breakeven.inversion import Inversion, smallest_root

X = sp.Symbol("x", positive=True)  # the parameter, in its catalog unit
TARGET = sp.Symbol("tau", real=True)           # the goal: expression <= tau
U_up = sp.Symbol("U", real=True)  # the update stage's budget in the pipeline, s
A_cur = sp.Symbol("A", positive=True)  # achievable bandwidth now, min(B_mem eta_m, n_t B_core)

# the catalog fields behind the roofline's limits, to name what binds
LIMIT_NAMES = {nthr: "cores", B_core: "core_bandwidth_GBps",
               F_core: "clock x fp32_flops_per_cycle", BW: "memory_bandwidth_GBps",
               F_dev: "fabric_fp32_TFLOPS"}


@lru_cache(maxsize=256)
def branches(expr: sp.Expr) -> tuple[sp.Expr, ...]:
    """Every smooth piece of ``expr``: each Max/Min argument and Piecewise value taken in turn
    (the cartesian product through sums and products)."""
    if isinstance(expr, (sp.Max, sp.Min)):
        return tuple(b for a in expr.args for b in branches(a))
    if isinstance(expr, sp.Piecewise):
        return tuple(b for value, _cond in expr.args for b in branches(value))
    if not expr.args or isinstance(expr, (sp.Symbol, sp.Number)):
        return (expr,)
    children = [branches(a) for a in expr.args]
    if all(len(c) == 1 for c in children):
        return (expr,)
    return tuple(expr.func(*combo) for combo in itertools.product(*children))


@lru_cache(maxsize=1024)
def _compiled(expr: sp.Expr, names: tuple[sp.Symbol, ...]):
    """``expr`` as a Python function of (x, *names, tau) (sympy's subs through Max/Min is
    slow; lambdify is not)."""
    return sp.lambdify((X, *names, TARGET), expr, modules="math")


@lru_cache(maxsize=256)
def _roots(piece: sp.Expr) -> tuple[sp.Expr, ...]:
    """The roots of ``piece = tau`` in x, symbolic in everything else (cached: the pieces are
    the same for every device of a kind). sympy's own check and simplification are skipped
    (8x faster): :func:`invert` keeps a root only where the whole expression meets the target,
    and the caller checks it against the evaluator."""
    return tuple(sp.solve(sp.Eq(piece, TARGET), X, check=False, simplify=False))


class _Values:
    def __init__(self, values: dict, target: float):
        self.names = tuple(sorted(values, key=lambda s: s.name))
        self.args = tuple(float(values[n]) for n in self.names)
        self.target = target

    def __call__(self, expr: sp.Expr, x: float = 1.0) -> float:
        try:
            return float(_compiled(expr, self.names)(x, *self.args, self.target))
        except (ZeroDivisionError, OverflowError, ValueError, TypeError):
            return math.nan


def invert(expr: sp.Expr, values: dict, target: float, cap: float, integer: bool = False,
           floor_x: float = 1e-12) -> Inversion:
    """Smallest ``x`` in (0, cap] with ``expr(x) <= target``; ``expr`` non-increasing in x.

    ``values`` gives every other symbol a number. Roots of the pieces are candidates; a
    candidate counts only where the whole expression equals the target (the other branches of
    each Max/Min agree)."""
    num = _Values(values, target)

    def ok(x: float) -> bool:
        return num(expr, x) <= target + 1e-9 * max(1.0, abs(target))

    if ok(floor_x):
        return Inversion(floor_x, "holds for any value", any_value=True)
    roots = ((num(root), f"x = {sp.sstr(root)}") for piece in branches(expr)
             if X in piece.free_symbols for root in _roots(piece))
    found = smallest_root(roots, ok, cap, integer)
    return found or Inversion(None, sp.sstr(expr), num(expr, cap))


def binding_pieces(expr: sp.Expr, values: dict, x: float) -> list[sp.Expr]:
    """The pieces of ``expr`` free of x whose value is the whole expression's at ``x``: what
    binds once x no longer does."""
    num = _Values(values, 0.0)
    whole = num(expr, x)
    return [p for p in branches(expr) if X not in p.free_symbols
            and abs(num(p) - whole) <= 1e-9 * max(1.0, abs(whole))]


def value_at(expr: sp.Expr, values: dict, x: float) -> float:
    return _Values(values, 0.0)(expr, x)


# ---- the goal expressions --------------------------------------------------------------------

@lru_cache(maxsize=8)
def optimizer_roofline(per_core: bool) -> sp.Expr:
    """compute.optimizer_step_time with the device's kind (c_n) fixed, so the roofline's
    Piecewise resolves and only the device's own limits remain."""
    return optimizer_step_time.expr.subs(cores, 1 if per_core else 0)


def optimusnic_exposed(card_step: sp.Expr, t_in: sp.Expr = T_in,
                       t_out: sp.Expr = T_out) -> sp.Expr:
    """optimusnic.exposed_time over optimusnic.pipeline_time with the update stage T_up = the
    card's step (and, for the spill, the link stages as expressions): the engine's composition
    (evaluate/optimusnic.py)."""
    pipe = pipeline_time.expr.subs({T_up: card_step, T_in: t_in, T_out: t_out},
                                   simultaneous=True)
    return exposed_time.expr.subs(T_pipe, pipe)


def update_goal(roofline: sp.Expr) -> sp.Expr:
    """The card's update stage beyond its budget U: Max(0, T_up - U). optimusnic.pipeline_time
    rises with T_up (the link stages fixed), so the pipeline fits the window (plus a target)
    exactly when T_up <= U, U = State.update_budget_s (the pipeline solved for T_up)."""
    return sp.Max(0, roofline - U_up)


@lru_cache(maxsize=64)
def exposed_goal(per_core: bool, symbol: sp.Symbol, scale: float) -> sp.Expr:
    """The update stage (compute.optimizer_step_time with the roofline symbol ``symbol`` =
    scale * x, x in the catalog's unit) beyond its budget in the OptimusNIC pipeline."""
    return update_goal(optimizer_roofline(per_core).subs(symbol, scale * X))


@lru_cache(maxsize=8)
def exposed_goal_joint(per_core: bool) -> sp.Expr:
    """As :func:`exposed_goal` with B_mem and B_core scaled together by x / A: x is the
    achievable bandwidth min(B_mem eta_m, n_t B_core) of one card, A its value now."""
    opt = optimizer_roofline(per_core).subs({BW: BW * X / A_cur, B_core: B_core * X / A_cur},
                                            simultaneous=True)
    return update_goal(opt)


@lru_cache(maxsize=64)
def spill_fit_goal(scale: float, offset: float) -> sp.Expr:
    """memory.spill_bytes with the capacity C = scale * x + offset (both memory tiers)."""
    return spill_bytes.expr.subs(C, scale * X + offset)


ROOFLINE_SYMBOLS = {"B_mem": BW, "B_core": B_core, "n_t": nthr, "F_core": F_core,
                    "F_dev": F_dev}

__all__ = ["Inversion", "invert", "branches", "binding_pieces", "value_at", "optimizer_roofline",
           "optimusnic_exposed", "exposed_goal", "exposed_goal_joint", "spill_fit_goal",
           "ROOFLINE_SYMBOLS", "LIMIT_NAMES", "X", "A_cur",
           "TARGET", "BW", "B_core", "nthr", "F_core", "F_dev", "Pn", "bpp", "fpp", "eta_m",
           "T_opt", "W_o", "B_dev", "U_up", "T_in", "T_out", "n_L", "P_o", "b_gr", "b_wt", "B_gl",
           "B_cl", "n_gc"]
