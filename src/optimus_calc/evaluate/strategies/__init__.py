"""The offload strategies, one module each, and their registry.

``register(strategy)`` adds one; the evaluator, the memory and step reports and the planner
iterate :func:`strategies`. A layout's ``offload`` is stored in arrays as the strategy's code,
its position in the registry (the built-ins keep the order of the Offload enum).
"""

from __future__ import annotations

from optimus_calc.evaluate.strategies.base import OffloadStrategy
from optimus_calc.specs.training import Offload, register_offload

_REGISTRY: dict[str, OffloadStrategy] = {}


def register(strategy: OffloadStrategy) -> OffloadStrategy:
    """Add ``strategy`` (replacing one with the same key); its key becomes a valid --offload
    value of Layout."""
    strategy.offload = register_offload(strategy.key)
    _REGISTRY[strategy.key] = strategy
    return strategy


def unregister(key: str) -> None:
    """Remove a strategy (tests that register a toy one clean up with this)."""
    _REGISTRY.pop(key, None)


def strategies() -> tuple[OffloadStrategy, ...]:
    return tuple(_REGISTRY.values())


def strategy(offload: Offload | str) -> OffloadStrategy:
    return _REGISTRY[Offload(offload).value]


def code_of(offload: Offload | str) -> int:
    """The integer code of ``offload`` inside the evaluator's arrays."""
    return list(_REGISTRY).index(Offload(offload).value)


def at(code: int) -> OffloadStrategy:
    """The strategy of integer code ``code``."""
    return list(_REGISTRY.values())[int(code)]


def offered(hw) -> list[Offload]:
    """The targets the node offers, in registry order (the planner's default search)."""
    return [s.offload for s in _REGISTRY.values() if s.offered(hw)]


def _register_builtins() -> None:
    from optimus_calc.evaluate.strategies.cpu import CPU
    from optimus_calc.evaluate.strategies.none import NONE
    from optimus_calc.evaluate.strategies.nvme import NVME
    from optimus_calc.evaluate.strategies.smartnic import SMARTNIC
    from optimus_calc.evaluate.strategies.superchip import SUPERCHIP
    for s in (NONE, CPU, NVME, SMARTNIC, SUPERCHIP):
        register(s)


_register_builtins()
