"""The planner per framework, outside the inner search: :func:`search` once per group of
frameworks with identical physics profiles (frameworks/physics.py), the tops merged, so a layout
two frameworks run with different physics is two rows with their own memory and time."""

from __future__ import annotations

import numpy as np

from optimus_calc.evaluate.context import Hardware
from optimus_calc.frameworks import Framework
from optimus_calc.search.passes import (CHUNK_ELEMENTS, SearchResult, _rank, _shortlist,
                                        search)
from optimus_calc.search.space import Space, grid_rules
from optimus_calc.specs.model import Model
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import RECOMPUTE_CODES, Training


# A large search allocates and frees many arrays of a few MB (each chunk's temporaries). glibc
# serves a block above its mmap threshold (128 KiB, raised to the largest block freed) with a
# fresh mmap and unmaps it on free, so each costs page faults again: on the worst known plan
# (qwen3-30b-a3b on 720 nodes, 5.8 M layouts) 187,000 faults and 0.5 s of system time, a quarter
# of the command's CPU. From LARGE_SPACE layouts on, blocks up to KEEP_BLOCK_BYTES come from the
# heap and up to KEEP_FREE_BYTES of freed heap are kept for the next chunk (22,000 faults, the
# same peak memory). A tactic of the process, not physics; where mallopt is missing, nothing.
LARGE_SPACE = 1 << 20
KEEP_BLOCK_BYTES = 32 << 20  # glibc's largest mmap threshold on 64-bit systems
KEEP_FREE_BYTES = 64 << 20
_KEPT: list = []

# Layouts whose rules are evaluated at once (grid_rules): a 2-byte code each and a few boolean
# temporaries, so 16 times the evaluator's CHUNK_ELEMENTS holds less memory than one of its
# chunks; the worst known plan's 3.3 M (ZeRO x offload x SP x grid point) in one pass, no
# concatenation. A tactic: any value gives the same codes.
RULE_ELEMENTS = CHUNK_ELEMENTS * 16


def _keep_freed_blocks() -> None:
    if _KEPT:
        return
    _KEPT.append(True)
    try:
        import ctypes
        mallopt = ctypes.CDLL(None).mallopt
    except (ImportError, OSError, AttributeError):
        return
    mallopt(-3, KEEP_BLOCK_BYTES)  # M_MMAP_THRESHOLD (malloc.h)
    mallopt(-1, KEEP_FREE_BYTES)   # M_TRIM_THRESHOLD


def search_per_framework(model: Model, hw: Hardware, base: Training, asm: Assumptions,
                         space: Space, objective, top_k: int, distinct: bool,
                         frameworks: tuple[Framework, ...], physics: bool,
                         yields: frozenset = frozenset()):
    """:func:`search` once per group of frameworks with identical physics profiles (its rules
    as the filter, its profile applied: frameworks/physics.py), the tops merged: a layout two
    frameworks run with different physics is two rows. Returns (merged SearchResult, the top's
    (group index, row) pairs, the groups). Without ``physics`` one framework-neutral search
    over all of ``frameworks`` (``--framework any``). The SmartNIC what-if (no framework runs
    OptimusNIC) is searched in the first group only: it is the one whose result is reported."""
    if len(space) >= LARGE_SPACE:
        _keep_freed_blocks()
    rules = grid_rules(space, model, base, frameworks, RULE_ELEMENTS)  # once for every profile
    parts = _parts(space, model, base, asm, frameworks, physics, yields)
    first = parts[0][0]
    results = [search(model, hw, tr, a, sub, objective, top_k, distinct, fs,
                      what_if=fs == first, rules=sub_rules)
               for fs, tr, a, sub, sub_rules in (_sliced(p, space, rules) for p in parts)]
    groups = [p[:3] for p in parts]
    rows = [(g, i) for g, r in enumerate(results) for i in range(len(r.top.get("tp", ())))]
    picks: list = []
    if rows:
        col = lambda k: np.array([results[g].top[k][i] for g, i in rows])  # noqa: E731
        order = _rank(col("tps"), col("gpu"), objective)
        picks = [rows[j] for j in _shortlist(order, col("tp"), col("pp"), top_k, distinct)]

    def total(name):
        out: dict = {}
        for r in results:
            for k, v in getattr(r, name).items():
                out[k] = out.get(k, 0) + v
        return out
    merged = SearchResult(
        {}, sum(r.feasible for r in results), total("infeasible_by_reason"),
        min(r.smallest_gpu_bytes for r in results), max(r.best_no_offload_tps for r in results),
        _best_what_if([r.what_if for r, p in zip(results, parts) if p[0] == first], objective),
        dict(sorted(total("framework_rejections").items(), key=lambda kv: -kv[1])))
    return merged, picks, groups, results


def _parts(space: Space, model, base: Training, asm: Assumptions, frameworks, physics: bool,
           yields) -> list[tuple]:
    """(frameworks, training, assumptions, recompute codes, SP values) per search: each group
    of frameworks/physics.profile_parts (a group cut where its profile reads a switch the
    space varies per layout), or one framework-neutral search over the whole space."""
    rec, sp = (tuple(int(x) for x in v) for v in space.switches[2:])
    if not physics:
        return [(tuple(frameworks), base, asm, rec, sp)]
    from optimus_calc.frameworks.physics import profile_parts
    modes = {RECOMPUTE_CODES[r]: r for r in rec}
    return [(fs, tr, a, tuple(modes[m] for m in ms), tuple(int(x) for x in ss))
            for fs, tr, a, ms, ss in profile_parts(frameworks, base, asm, model, yields,
                                                   tuple(modes), tuple(bool(x) for x in sp))]


def _sliced(part: tuple, space: Space, rules: dict) -> tuple:
    """(frameworks, training, assumptions, the part's sub-space, its rules): ``space`` with
    the part's recompute and SP values only, and the rules on that SP axis (grid_rules keeps
    an axis of 1 where no rule reads SP)."""
    fs, tr, a, rec, sp = part
    zero, off, rec_all, sp_all = space.switches
    if rec == tuple(int(x) for x in rec_all) and sp == tuple(int(x) for x in sp_all):
        return fs, tr, a, space, rules
    ix = [list(np.asarray(sp_all)).index(x) for x in sp]
    sub = Space(space.base, (zero, off, np.asarray(rec, dtype=np.int64),
                             np.asarray(sp, dtype=np.int64)))
    return fs, tr, a, sub, {f: r if r.shape[3] == 1 else r[:, :, :, ix, :]
                            for f, r in rules.items()}


def _best_what_if(found: list, objective) -> dict:
    """The best SmartNIC what-if of the first group's searches (passes._result's ranking)."""
    found = [w for w in found if w]
    if len(found) < 2:
        return found[0] if found else {}
    both = {k: np.concatenate([w[k] for w in found]) for k in found[0]}
    order = _rank(both["tps"], both["gpu"], objective)[:1]
    return {k: v[order] for k, v in both.items()}


def profile_count(groups) -> int:
    """The physics profiles searched: a group cut into parts (per_framework._parts) is one."""
    return len(dict.fromkeys(fs for fs, _, _ in groups))


def groups_note(groups) -> list[str]:
    if profile_count(groups) < 2:
        return []
    return [f"each layout evaluated under {profile_count(groups)} framework physics profiles ("
            + "; ".join(", ".join(str(getattr(f, "value", f)) for f in fs)
                        for fs in dict.fromkeys(fs for fs, _, _ in groups))
            + "): a layout two frameworks run with different physics is two rows"]
