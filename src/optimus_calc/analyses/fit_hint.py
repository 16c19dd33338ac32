"""The fewest option changes that make a layout that does not fit fit (`step` and `memory`:
the note after "DOES NOT FIT"). Pure: the candidates are the user's own options with
``--zero``, ``--recompute`` and ``--cp`` changed, each resolved by the command's own resolver
(inputs.build_inputs, passed in: the same rules and framework checks as if typed) and measured
by the memory model.

Candidates come in rounds of one, two, then three changed options; the first round with any
layout that fits answers, and among its layouts the fastest step wins (the least GPU memory
where there is no step time: a bare parameter count, --model-states-only). Each option only moves
towards less memory: ZeRO up to 3, recomputation from none to selective to full, CP doubled
while TP x PP x CP divides the GPUs (DP shrinks to match; a given ``--dp`` is rewritten).

A framework rule does not raise (the command notes it), so each layout that fits is checked
against the rules as well: a candidate the framework named by ``--framework`` (else every
framework) refuses is no answer; only where the user's own layout is refused too and no
candidate at all is run by the rules (a what-if: a SmartNIC target, an architecture the framework
cannot build) does a refused one answer, said as such."""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import combinations, product

from optimus_calc.errors import InputError

RECOMPUTE_ORDER = ("none", "selective", "full")
MAX_CHANGES = 3


@dataclass(frozen=True)
class FitHint:
    """A layout that fits: the options that changed (flag -> value, as typed), its worst
    GPU's memory, step time and MFU."""
    flags: tuple[tuple[str, str], ...]
    gpu_memory_bytes: float
    step_time_s: float | None   # None without a step time (bare count, model states only)
    mfu: float | None
    runs: bool = True   # False: the framework rules refuse it, as they refuse the user's layout

    @property
    def text(self) -> str:
        return " ".join(f"{f} {v}" for f, v in self.flags)

    def as_dict(self) -> dict:
        return {"flags": self.text, "gpu_memory_bytes": self.gpu_memory_bytes,
                "step_time_s": self.step_time_s, "mfu": self.mfu, "framework_runs": self.runs}


def _choices(inp, kw: dict) -> dict[str, list[dict]]:
    """Per option, the kw updates that each lower memory (never the current value)."""
    lay, tr = inp.layout, inp.training
    zero = [{"zero": z} for z in range(int(lay.zero) + 1, 4)]
    cur = RECOMPUTE_ORDER.index(tr.recompute.value)
    # full recomputation re-runs all; --recompute-modules needs selective (None: not given)
    rec = [{"recompute": r, "recompute_modules": None} for r in RECOMPUTE_ORDER[cur + 1:]]
    cps, cp = [], lay.cp * 2
    while inp.hw.gpus % (lay.tp * lay.pp * cp) == 0:
        dp = inp.hw.gpus // (lay.tp * lay.pp * cp)
        cps.append({"cp": cp, "dp": dp if kw.get("dp") is not None else None})
        cp *= 2
    return {"zero": zero, "recompute": rec, "cp": cps}


def _flags(update: dict) -> tuple[tuple[str, str], ...]:
    return tuple((f"--{k}", str(v)) for k, v in update.items() if v is not None)


def _has_step(inp) -> bool:
    from optimus_calc.specs.model import Model
    return isinstance(inp.model, Model) and not inp.training.model_states_only


def _measure(cand, update: dict, memory_only: bool = False) -> FitHint | None:
    """The candidate's hint when it fits, else None (``memory_only``: no step evaluated).
    One evaluation: memory only (the planner's first pass: the same memory stage) where no
    step is asked, else memory and step together (`step`'s own evaluation, read by
    estimate_step as `step` reads it; a second, full one for each candidate that fits cost
    a non-fitting `step` half its time)."""
    from optimus_calc.evaluate.batch import Batch
    from optimus_calc.evaluate.engine import evaluate
    from optimus_calc.evaluate.memory import memory_from
    from optimus_calc.evaluate.step import estimate_step
    lay, tr, asm = cand.layout, cand.training, cand.assumptions
    stepping = not memory_only and _has_step(cand)
    ev = evaluate(Batch.of(lay, tr), cand.model, cand.hw, tr, asm, all_stages=True,
                  with_step=stepping)
    mem = memory_from(ev, cand.model, cand.hw, lay, tr, asm)
    if not mem.fits:
        return None
    if not stepping:
        return FitHint(_flags(update), mem.worst.total_bytes, None, None)
    st = estimate_step(cand.model, cand.hw, lay, tr, asm, mem)  # reads ``ev``
    return FitHint(_flags(update), mem.worst.total_bytes, st.step_time_s, st.mfu)


def _runs(inp) -> bool:
    """Whether the framework ``--framework NAME`` names (else any) runs the layout by its rules,
    read on the training they are read on for the header (physics.choose: before the profile);
    True without rules (a bare parameter count)."""
    from optimus_calc.frameworks import layout_support
    from optimus_calc.specs.model import Model
    if not isinstance(inp.model, Model):
        return True
    choice = inp.framework
    tr = choice.before[0] if choice is not None and choice.before else inp.training
    named = (choice.key if choice is not None and choice.requested not in (None, "auto")
             else None)
    return any(int(r) == 0 for f, r in layout_support(inp.layout, tr, inp.model).items()
               if named in (None, str(getattr(f, "value", f))))


def _key(h: FitHint) -> float:
    return h.gpu_memory_bytes if h.step_time_s is None else h.step_time_s


def _none_can_fit(resolve, kw: dict, choices: dict) -> bool:
    """True when no candidate can fit, read from the few that relieve memory most: for each
    ZeRO stage on offer (ZeRO-3's gather buffers can outweigh what it shards at DP 1, so every
    stage is tried), full recomputation (or the current mode) and the largest CP. The memory
    model falls with recomputation (none > selective > full) and with CP at a fixed GPU count
    (tests/test_fit_hint.py checks both), so when these do not fit no mix of smaller changes
    does. False (search them all) as soon as one fits or one of them cannot be resolved."""
    most = {**(choices["recompute"][-1] if choices["recompute"] else {}),
            **(choices["cp"][-1] if choices["cp"] else {})}
    for z in [{}] + choices["zero"]:
        update = {**z, **most}
        if not update:
            continue  # the user's own layout: it does not fit
        try:
            cand = resolve({**kw, **update})
        except (InputError, ValueError):
            return False  # no shortcut: the full search sees what runs
        if _measure(cand, update, memory_only=True) is not None:
            return False
    return True


def _picks(choices: dict, names: tuple, cand_of, prune: bool = True):
    """The candidates of one combination of changed options, in product order (ZeRO's outermost),
    less those that cannot fit: for each ZeRO pick, where the strongest recomputation and CP
    on offer do not fit (measured memory-only), no weaker mix of them does (memory falls with
    both, as :func:`_none_can_fit` reads it), so that pick's others are not measured. Not
    ``prune``: every candidate (a what-if search reads whether the rules run any that does not
    fit, and the rules are not monotone in CP)."""
    zeros = choices["zero"] if "zero" in names else [None]
    rest = [k for k in names if k != "zero"]
    for z in zeros:
        if prune and rest and all(choices[n] for n in rest):
            update = {**(z or {}), **{k: v for n in rest for k, v in choices[n][-1].items()}}
            cand = cand_of(update)
            if cand is not None and _measure(cand, update, memory_only=True) is None:
                continue
        yield from product(*([z] if n == "zero" else choices[n] for n in names))


def fit_hint(resolve, kw: dict, inp) -> FitHint | None:
    """The fastest layout that fits with the fewest of --zero, --recompute, --cp changed from
    ``kw`` (the command's options, resolved as ``inp``; ``resolve(kw)`` resolves a candidate's,
    raising InputError where a check refuses it; the framework rules are read by _runs); None
    when none within MAX_CHANGES does."""
    choices = _choices(inp, kw)
    if _none_can_fit(resolve, kw, choices):
        return None
    what_if = not _runs(inp)
    fallback, unfit = None, []   # the first round's best refused one; what did not fit
    resolved: dict[tuple, object] = {}

    def cand_of(update: dict):
        """The resolved candidate, once per update; None where a check refuses it."""
        key = tuple(update.items())
        if key not in resolved:
            try:
                resolved[key] = resolve({**kw, **update})
            except (InputError, ValueError):
                resolved[key] = None  # a check refuses it: not a layout the user could run
        return resolved[key]
    for n in range(1, MAX_CHANGES + 1):
        best = {True: None, False: None}
        for names in combinations(choices, n):
            for picks in _picks(choices, names, cand_of, prune=not what_if):
                update = {k: v for p in picks for k, v in p.items()}
                cand = cand_of(update)
                if cand is None:
                    continue
                hint = _measure(cand, update)
                if hint is None:
                    unfit += [cand] if what_if else []
                    continue
                runs = _runs(cand)
                if not (runs or what_if):
                    continue  # the framework's rules refuse it
                if best[runs] is None or _key(hint) < _key(best[runs]):
                    best[runs] = hint if runs else replace(hint, runs=False)
        if best[True] is not None:
            return best[True]
        fallback = fallback or best[False]
    # a refused one answers only where no change is run by the rules (the user's a what-if)
    return None if fallback is None or any(_runs(c) for c in unfit) else fallback


def hint_note(hint: FitHint | None, plannable: bool) -> str:
    """The note under "DOES NOT FIT"; ``plannable``: the model has an architecture, so
    `optimus-calc plan` can search it (a bare parameter count cannot)."""
    plan = "; `optimus-calc plan` searches every layout" if plannable else ""
    if hint is None:
        return ("no change of --zero, --recompute and --cp makes it fit"
                + (" (of the layouts the framework rules run)" if plannable else "")
                + (plan + " (TP, PP, offload, micro-batch, more nodes)" if plannable else ""))
    step = ("" if hint.step_time_s is None else
            f", step {hint.step_time_s:.4g} s, MFU {hint.mfu:.1%}")
    refused = ("" if hint.runs else "; a what-if, as your layout: the framework rules refuse "
               "it too")
    return (f"fits with {hint.text} (the fewest of --zero, --recompute and --cp changed, the "
            f"{'least memory' if hint.step_time_s is None else 'fastest'} such: GPU memory "
            f"{hint.gpu_memory_bytes / 1e9:.1f} GB{step}{refused}){plan}")


def csv_fields(hint: FitHint | None) -> dict:
    """The hint as CSV columns, empty where there is none: the flags as ``zero=3 cp=4`` (a cell
    starting with "-" would be quoted by the CSV-injection rule, report/formats.py)."""
    return {"fit_hint": " ".join(f"{f[2:]}={v}" for f, v in hint.flags) if hint else "",
            "fit_hint_gpu_memory_bytes": hint.gpu_memory_bytes if hint else None,
            "fit_hint_step_time_s": hint.step_time_s if hint else None}


@dataclass(frozen=True)
class HintParts:
    """What `step` and `memory` show of a fit hint: JSON's ``fit_hint``, the note after DOES NOT
    FIT (None where the layout fits), the CSV columns."""
    data: dict | None
    note: str | None
    columns: dict


def report_parts(fit, inp) -> HintParts:
    """``fit``: (fits, FitHint or None) from the command, or None (nothing asked)."""
    hint = fit[1] if fit else None
    note = hint_note(hint, plannable(inp)) if fit and not fit[0] else None
    return HintParts(hint.as_dict() if hint else None, note, csv_fields(hint))


def plannable(inp) -> bool:
    """Whether `plan` takes the model (an architecture, not a bare parameter count)."""
    from optimus_calc.specs.model import Model
    return isinstance(inp.model, Model)
