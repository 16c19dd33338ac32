"""The planner's, the sweep's, break-even's and fit's results, and the HTML pages' charts,
shared across the tests of a session (conftest.py installs it), as conftest.py shares
`validate`'s cases.

Many tests run the same command in other formats, with `-o` or `--plot`, or the same layout
with other break-even flags (the golden files' table/JSON/CSV, the CSV and display checks, the
docs examples): the same pure computation again, ~10 s of the serial suite's CPU. Here each of
the functions :func:`install` names is computed once per worker for equal inputs and its result
returned to every later caller; each test still parses, renders and checks its own output.

Equal inputs: the arguments' pickled bytes (every field of every spec, the catalog's entries;
arguments that do not pickle, e.g. a callable, are not shared) and the same registered offload
strategies and frameworks. Not shared while the running test has monkeypatched an attribute or
an item other than an environment variable (:func:`note_patch`: a test that replaces an
evaluator or a constant, or counts evaluations, gets the real computation; the core reads no
environment variable), nor in a test marked ``fresh`` (a test of determinism: each of its
runs computes anew), nor under mutmut (conftest.py). A result is a frozen record its callers
read, never write. OPTIMUS_CALC_TEST_MEMO=verify computes every call anyway and fails when a
shared result differs from the fresh one (repr); =off turns the sharing off.
"""

from __future__ import annotations

import enum
import functools
import importlib
import io
import os
import pickle

_DONE: dict = {}
_PATCHED = [False]
MODE = os.environ.get("OPTIMUS_CALC_TEST_MEMO", "on")


def clear() -> None:
    _DONE.clear()


def note_patch() -> None:
    """The running test has monkeypatched something: its calls are computed, not shared."""
    _PATCHED[0] = True


def new_test() -> None:
    """A test begins: nothing patched yet."""
    _PATCHED[0] = False


def _registries() -> tuple:
    """The registered offload strategies and frameworks (a test may register a toy one)."""
    from optimus_calc.evaluate.strategies import registry as strategies
    from optimus_calc.frameworks import registry as frameworks
    return (tuple((k, id(v)) for k, v in strategies._REGISTRY.items()),
            tuple((k, id(v)) for k, v in frameworks._PLUGINS.items()))


class _Pickler(pickle.Pickler):
    """An enum member as its class's name, its name and its value (the Framework enum is built
    at run time from the registry, which the key holds, and does not pickle by reference)."""
    def reducer_override(self, obj):
        if isinstance(obj, enum.Enum):
            cls = type(obj)
            return str, (f"{cls.__module__}.{cls.__qualname__}.{obj.name}={obj.value!r}",)
        return NotImplemented


def _key(name: str, args, kwargs):
    buf = io.BytesIO()
    try:
        _Pickler(buf, protocol=5).dump((args, sorted(kwargs.items())))
    except (pickle.PicklingError, TypeError, AttributeError):
        return None
    return name, _registries(), buf.getvalue()


def share(module: str, name: str, cacheable=lambda *a, **k: True) -> None:
    """Replace ``module.name`` with its shared version; ``cacheable(*args, **kwargs)`` says
    whether a call may be shared (e.g. no progress callback to call)."""
    mod = importlib.import_module(module)
    real = getattr(mod, name)

    @functools.wraps(real)
    def shared(*args, **kwargs):
        if MODE == "off" or _PATCHED[0] or not cacheable(*args, **kwargs):
            return real(*args, **kwargs)
        key = _key(f"{module}.{name}", args, kwargs)
        if key is None:
            return real(*args, **kwargs)
        if key not in _DONE:
            _DONE[key] = real(*args, **kwargs)
        elif MODE == "verify":
            fresh = real(*args, **kwargs)
            assert repr(fresh) == repr(_DONE[key]), f"{module}.{name}: shared result differs"
        return _DONE[key]
    setattr(mod, name, shared)


def _no_progress(cat, spec, progress=None, typed=None):
    from optimus_calc.cli.progress import _noop
    return progress is None or progress is _noop


def install() -> None:
    share("optimus_calc.search.plan", "plan_search")
    share("optimus_calc.analyses.sweep", "sweep", _no_progress)
    share("optimus_calc.analyses.breakeven", "solve_device")
    share("optimus_calc.cli.breakeven_cmd", "_minimum_card")
    share("optimus_calc.analyses.fit", "solve")
    share("optimus_calc.analyses.fit", "explain_fit")
    for chart in ("memory_chart", "step_chart", "compare_chart"):  # an HTML page's SVG charts
        share("optimus_calc.report.html_charts", chart)
