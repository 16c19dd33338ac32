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
from optimus_calc.specs.training import Training


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
    from optimus_calc.frameworks.physics import profile_groups
    groups = (profile_groups(frameworks, base, asm, model, yields) if physics
              else [(frameworks, base, asm)])
    if len(space) >= LARGE_SPACE:
        _keep_freed_blocks()
    rules = grid_rules(space, model, base, frameworks, RULE_ELEMENTS)  # once for every profile
    results = [search(model, hw, tr, a, space, objective, top_k, distinct, fs, what_if=g == 0,
                      rules=rules)
               for g, (fs, tr, a) in enumerate(groups)]
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
    first = results[0]
    merged = SearchResult(
        {}, sum(r.feasible for r in results), total("infeasible_by_reason"),
        min(r.smallest_gpu_bytes for r in results), max(r.best_no_offload_tps for r in results),
        first.what_if, dict(sorted(total("framework_rejections").items(), key=lambda kv: -kv[1])))
    return merged, picks, groups, results


def groups_note(groups) -> list[str]:
    if len(groups) < 2:
        return []
    return [f"each layout evaluated under {len(groups)} framework physics profiles ("
            + "; ".join(", ".join(str(getattr(f, "value", f)) for f in fs)
                        for fs, _, _ in groups)
            + "): a layout two frameworks run with different physics is two rows"]
