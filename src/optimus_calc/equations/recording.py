"""Every call of a compiled equation, recorded when asked (for `explain`).

The evaluator and its helpers call equations through :data:`eq`, a stand-in for
:mod:`optimus_calc.equations.compiled`. Outside :func:`recording` it hands back the compiled
function itself (no cost on the planner's hot path); inside, each call is remembered with its
inputs, its result and the evaluator stage (memory, offload devices, compute, ...) that made it,
so no caller writes a hand `rec(...)`.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import field
from functools import lru_cache

from optimus_calc.equations import compiled as _compiled
from optimus_calc.record import record

STAGES = ("memory", "offload devices", "compute", "communication", "optimizer",
          "composition", "training", "collectives")
"""The evaluator's stages in the order `explain --all` prints them."""


@record
class Call:
    """One evaluation of equation ``name``: its keyword inputs and result (arrays as given)."""

    name: str
    stage: str
    scope: str        # what the call was for, e.g. "tp" or "forward" ("" when single)
    inputs: dict
    result: object


@record(frozen=False)
class Recorder:
    calls: list[Call] = field(default_factory=list)
    stage: str = ""
    scope: str = ""

    def last(self, name: str) -> Call | None:
        """The last call of ``name`` (the one the command's figure comes from)."""
        for call in reversed(self.calls):
            if call.name == name:
                return call
        return None

    def by_name(self) -> dict[str, list[Call]]:
        out: dict[str, list[Call]] = {}
        for call in self.calls:
            out.setdefault(call.name, []).append(call)
        return out


_ACTIVE: ContextVar[Recorder | None] = ContextVar("optimus_calc_recorder", default=None)


@lru_cache(maxsize=None)
def _params(fn) -> tuple[str, ...]:
    return tuple(inspect.signature(fn).parameters)


def _wrap(rec: Recorder, attr: str, fn):
    name = attr.replace("__", ".", 1)

    def call(*args, **kw):
        result = fn(*args, **kw)
        inputs = dict(zip(_params(fn), args)) | kw
        rec.calls.append(Call(name, rec.stage, rec.scope, inputs, result))
        return result
    return call


# Recordings open now (any thread). While none is, a looked-up equation is kept in the stand-in's
# own __dict__, so later lookups are plain attribute reads (~50 ns instead of ~750 ns through
# __getattr__, some 100 per evaluation); opening a recording empties it again. A speed tactic:
# the same function either way. (A thread that looks an equation up while another opens a
# recording could keep it unrecorded: the CLI records and evaluates in one thread.)
_OPEN = [0]


class _Equations:
    """``eq.<module>__<name>(...)``: the compiled equation, recorded while a Recorder is on."""

    def __getattr__(self, attr: str):
        fn = getattr(_compiled, attr)
        rec = _ACTIVE.get()
        if rec is None:
            if not _OPEN[0]:
                self.__dict__[attr] = fn
            return fn
        return _wrap(rec, attr, fn)


eq = _Equations()


def active() -> bool:
    """Whether the calls made now are recorded (inside :func:`recording` with a Recorder): a
    speed tactic may skip a call whose value it knows only when nobody is watching."""
    return _ACTIVE.get() is not None


@contextmanager
def recording(rec: Recorder | None) -> Iterator[Recorder | None]:
    """Record every equation call made inside the block into ``rec`` (None: record nothing)."""
    if rec is None:
        yield None
        return
    _OPEN[0] += 1
    eq.__dict__.clear()  # every lookup through __getattr__ again, which records
    token = _ACTIVE.set(rec)
    try:
        yield rec
    finally:
        _ACTIVE.reset(token)
        _OPEN[0] -= 1


@contextmanager
def section(stage: str | None = None, scope: str | None = None) -> Iterator[None]:
    """Label the calls made inside the block with an evaluator stage and/or a scope."""
    rec = _ACTIVE.get()
    if rec is None:
        yield
        return
    old = rec.stage, rec.scope
    rec.stage = old[0] if stage is None else stage
    rec.scope = old[1] if scope is None else scope
    try:
        yield
    finally:
        rec.stage, rec.scope = old


def set_stage(stage: str, scope: str = "") -> None:
    """Label the calls that follow with an evaluator stage (and scope), until the next label."""
    rec = _ACTIVE.get()
    if rec is not None:
        rec.stage, rec.scope = stage, scope


def set_scope(scope: str) -> None:
    """Label the calls that follow with a scope within the current stage."""
    rec = _ACTIVE.get()
    if rec is not None:
        rec.scope = scope
