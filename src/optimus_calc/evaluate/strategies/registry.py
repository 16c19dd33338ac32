"""The registry of offload strategies: keys, integer codes (specs.training.offload_code) and
lookup. The package's ``__init__`` registers the built-ins; a plug-in calls :func:`register`."""

from __future__ import annotations

import numpy as np

from optimus_calc.evaluate.stages import STAGE_MAJOR_FROM, by_strategy, ndim
from optimus_calc.evaluate.strategies.base import OffloadStrategy
from optimus_calc.specs.training import Offload, offload_code, offload_of_code, register_offload

_REGISTRY: dict[str, OffloadStrategy] = {}
_CODED: list = []   # coded()'s answer, cleared by register/unregister (the evaluator asks often)


def register(strategy: OffloadStrategy) -> OffloadStrategy:
    """Add ``strategy`` (replacing one with the same key); its key becomes a valid --offload
    value of Layout."""
    strategy.offload = register_offload(strategy.key)
    _REGISTRY[strategy.key] = strategy
    _CODED.clear()
    return strategy


def unregister(key: str) -> None:
    """Remove a strategy (tests that register a toy one clean up with this)."""
    _REGISTRY.pop(key, None)
    _CODED.clear()


def strategies() -> tuple[OffloadStrategy, ...]:
    """The registered strategies in the order of their codes."""
    return tuple(sorted(_REGISTRY.values(), key=lambda s: offload_code(s.offload)))


def coded() -> tuple[tuple[int, OffloadStrategy], ...]:
    """(code, strategy) of every registered strategy, by code: what the evaluator iterates."""
    if not _CODED:
        _CODED.append(tuple((offload_code(s.offload), s) for s in strategies()))
    return _CODED[0]


def strategy(offload: Offload | str) -> OffloadStrategy:
    return _REGISTRY[Offload(offload).value]


def code_of(offload: Offload | str) -> int:
    """The integer code of ``offload`` inside the evaluator's arrays."""
    return offload_code(offload)


def at(code: int) -> OffloadStrategy:
    """The strategy of integer code ``code``."""
    return _REGISTRY[offload_of_code(code).value]


def offered(hw) -> list[Offload]:
    """The targets the node offers, in registry order (the planner's default search)."""
    return [s.offload for s in _REGISTRY.values() if s.offered(hw)]


def offload_device_name(target: Offload, hw) -> str:
    """What holds the offloaded state, as the reports name it (its strategy's)."""
    return strategy(target).device_name(hw)


def device_params(hw, offload: Offload) -> list:
    """The fields of the offload target's hardware that can enter the equations (its
    strategy's list of hw_params.Param)."""
    return strategy(offload).device_params(hw)


def offload_flags(off, offload_params, gpu_fraction, codes=None, mine=None):
    """(o_w, o_g, o_o, f_k) of memory.*: what leaves the GPU under each layout's strategy;
    ``codes``: the strategy codes ``off`` holds, when known (:attr:`Ctx.codes`), and ``mine``
    their layouts (:meth:`Ctx.mine`)."""
    off = np.asarray(off)
    one = [s for c, s in coded() if c in codes] if codes is not None and len(codes) == 1 else 0
    if one:  # every layout: np.where would pick its flags
        flags = one[0].flags(offload_params, gpu_fraction)
        return tuple(np.asarray(x, dtype=np.float64) * np.ones(off.shape) for x in flags)
    pairs: tuple[list, ...] = ([], [], [], [])
    for code, strat in coded():
        if codes is not None and code not in codes:
            continue
        layouts = off == code if mine is None else mine(code)
        if codes is None and not np.any(layouts):
            continue
        for acc, f in zip(pairs, strat.flags(offload_params, gpu_fraction)):
            if ndim(f) or f != 0:  # 0 is what by_strategy leaves outside its layouts
                acc.append((layouts, f, code))
    return tuple(_by_code(p, off, codes) for p in pairs)


def _by_code(pairs: list, off, codes):
    """``by_strategy`` of (layouts, flag) pairs; a small batch's flags that are numbers each
    strategy's, looked up by code (one gather instead of a masked copy per strategy)."""
    if (codes is None or not pairs or off.size > STAGE_MAJOR_FROM
            or any(ndim(f) for _, f, _ in pairs)):
        return by_strategy([(m, f) for m, f, _ in pairs], off.shape)
    table = np.zeros(max(codes) + 1)
    for _, f, code in pairs:
        table[code] = f
    return table[off]


def check_target(layout, hw) -> None:
    """A one-layout command's offload target: --offload-params on a target that keeps the
    weights on the GPU (ZeRO-3; below, check_layout), or a target the node cannot have
    (OffloadStrategy.refusal: SuperOffload without a Grace), is an error, not ignored."""
    from optimus_calc.errors import InputError
    st = strategy(layout.offload)
    movers = [s.key for s in strategies() if s.offloads_params]
    if layout.offload_params and layout.zero == 3 and st.key not in movers:
        raise InputError(f"--offload-params needs an offload target that moves the weights "
                         f"({', '.join(movers)}); --offload {st.key} keeps them on the GPU")
    if why := st.refusal(hw):
        raise InputError(why)
