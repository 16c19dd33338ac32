"""The registry of equations. Every equation in optimus-calc is defined once, here or in a
sibling module, through :func:`equation`."""

from __future__ import annotations
from optimus_calc.record import record


import sympy as sp


@record
class Equation:
    name: str               # dotted, e.g. "memory.optimizer_bytes"; also the compiled function
    expr: sp.Expr
    args: tuple[sp.Symbol, ...]  # argument order of the compiled function
    unit: str
    source: str              # paper + equation/table number
    doc: str
    symbols: dict[str, str]  # symbol name -> meaning (with unit)

    @property
    def func_name(self) -> str:
        return self.name.replace(".", "__")

    def lambdified(self):
        """The expression compiled by sympy.lambdify (used by `explain`, which shows it)."""
        return sp.lambdify(self.args, self.expr, modules="numpy")


REGISTRY: dict[str, Equation] = {}
_MEANINGS: dict[str, str] = {}


def sym(name: str, meaning: str, **assumptions) -> sp.Symbol:
    """A documented symbol. Symbols are positive reals unless told otherwise."""
    assumptions.setdefault("nonnegative", True)
    s = sp.Symbol(name, real=True, **assumptions)
    _MEANINGS[name] = meaning
    return s


def equation(name: str, expr: sp.Expr, unit: str, source: str, doc: str) -> Equation:
    args = tuple(sorted(expr.free_symbols, key=lambda s: s.name))
    eq = Equation(name=name, expr=expr, args=args, unit=unit, source=source, doc=doc,
                  symbols={s.name: _MEANINGS.get(s.name, "") for s in args})
    if name in REGISTRY:
        raise ValueError(f"equation {name} defined twice")
    REGISTRY[name] = eq
    return eq


# The modules that register equations, imported by name (never statically: they import this
# module, and the registry stays the floor below them).
MODULES = ("memory", "comm", "compute", "step", "offload", "efficiency", "train", "optimusnic",
           "fp8")


def load_module(prefix: str) -> dict[str, Equation]:
    """Import the one module whose equations are named ``prefix.*`` (each module registers only
    its own prefix: tests/test_explain_all.py checks it), so `explain NAME` builds one module's
    expressions instead of all nine."""
    import importlib
    if prefix in MODULES:
        importlib.import_module(f"optimus_calc.equations.{prefix}")
    return REGISTRY


def load_all() -> dict[str, Equation]:
    """Import every equation module so the registry is complete."""
    import importlib
    for mod in MODULES:
        try:
            importlib.import_module(f"optimus_calc.equations.{mod}")
        except ModuleNotFoundError as exc:  # modules land issue by issue
            if exc.name != f"optimus_calc.equations.{mod}":
                raise
    return REGISTRY
