"""The registry of equations. Every equation in optimus-calc is defined once, here or in a
sibling module, through :func:`equation`."""

from __future__ import annotations

import sys

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
    module: str              # the module that defined it (its symbols' meanings are read there)
    local: dict[str, str]    # the meanings its module had given its symbols' names by then

    @property
    def symbols(self) -> dict[str, str]:
        """Symbol name -> meaning (with unit): its own module's at the equation (a module may
        reuse a name: compute's t), else the module it reads the symbol from (:func:`meaning`)."""
        return {s.name: self.local.get(s.name) or meaning(s.name, self.module)
                for s in self.args}

    @property
    def func_name(self) -> str:
        return self.name.replace(".", "__")

    def lambdified(self):
        """The expression compiled by sympy.lambdify (the tests check the generated compiled
        function, which `explain` evaluates, against it)."""
        return sp.lambdify(self.args, self.expr, modules="numpy")


REGISTRY: dict[str, Equation] = {}
# module -> symbol name -> meaning, as each module's sym() calls gave them: two modules may name
# different quantities alike (comm's m, GPUs per node; step's m, micro-batches)
_MEANINGS: dict[str, dict[str, str]] = {}


def _caller_module(depth: int = 2) -> str:
    return sys._getframe(depth).f_globals.get("__name__", "")


def sym(name: str, meaning: str, **assumptions) -> sp.Symbol:
    """A documented symbol. Symbols are positive reals unless told otherwise."""
    assumptions.setdefault("nonnegative", True)
    s = sp.Symbol(name, real=True, **assumptions)
    _MEANINGS.setdefault(_caller_module(), {})[name] = meaning
    return s


def meaning(name: str, module: str) -> str:
    """What ``name`` means in equations of ``module``: its own sym() if it made one, else the
    nearest module before it in MODULES' order that did (the meaning an equation took when
    codegen imported the modules in that order; not necessarily the module it imports the
    symbol from), else the first after it. Independent of the order in which the modules were
    imported (a test compares the generated text)."""
    order = [f"{__package__}.{m}" for m in MODULES]
    if name in _MEANINGS.get(module, {}):
        return _MEANINGS[module][name]
    i = order.index(module) if module in order else len(order)
    others = sorted(set(_MEANINGS) - set(order))
    for m in [*reversed(order[:i]), *order[i:], *others]:
        if name in _MEANINGS.get(m, {}):
            return _MEANINGS[m][name]
    return ""


def equation(name: str, expr: sp.Expr, unit: str, source: str, doc: str) -> Equation:
    args = tuple(sorted(expr.free_symbols, key=lambda s: s.name))
    module = _caller_module()
    own = _MEANINGS.get(module, {})
    eq = Equation(name=name, expr=expr, args=args, unit=unit, source=source, doc=doc,
                  module=module, local={s.name: own[s.name] for s in args if s.name in own})
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
