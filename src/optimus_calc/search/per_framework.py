"""The planner per framework, outside the inner search: :func:`search` once per group of
frameworks with identical physics profiles (frameworks/physics.py), the tops merged, so a layout
two frameworks run with different physics is two rows with their own memory and time."""

from __future__ import annotations

import numpy as np

from optimus_calc.evaluate.context import Hardware
from optimus_calc.frameworks import Framework, framework_support
from optimus_calc.search.passes import CHUNK_ELEMENTS, SearchResult, _rank, _shortlist, search
from optimus_calc.search.space import Space
from optimus_calc.specs.model import Model
from optimus_calc.specs.training import Assumptions, Training
from optimus_calc.record import record


@record
class GridRules:
    """Every framework's rules over a space's grid, evaluated once for all physics profiles and
    chunks: ``reason[f]`` is the code of ``f``'s first failing rule (0: it runs the layout) of
    shape (zero, offload, 1, 1, grid points): the rules read the grid columns and the ZeRO and
    offload switches, never recompute or sequence parallelism (frameworks.framework_support)."""

    reason: dict

    def rejected(self, views: dict, lo: int, frameworks: tuple):
        """For a chunk (its ``views``, its first grid point ``lo``): (the reason arrays of
        ``frameworks`` over its grid points, runnable by one of them, not runnable but kept, the
        number of kept layouts each of those stands for), the last three over (zero, offload,
        1, 1, grid); kept: Chunk.keep (SP only with TP, parameter offload only with ZeRO-3),
        so a (zero, offload, grid point) stands for each of its kept (recompute, SP) pairs."""
        nb = views["tp"].shape[-1]
        reason = {f: self.reason[f][..., lo:lo + nb] for f in frameworks}
        runs = np.zeros(next(iter(reason.values())).shape, dtype=bool)
        for r in reason.values():
            runs |= r == 0
        kept = (views["offload_params"] == 0) | (views["zero"] == 3)
        pairs = ((views["sp"] == 0) | (views["tp"] > 1)).sum(axis=3, keepdims=True)
        gone = kept & ~runs
        weight = np.broadcast_to(pairs * views["recompute"].size, gone.shape)[gone]
        return reason, runs, gone, weight


def grid_rules(space: Space, model: Model, base: Training, frameworks) -> GridRules:
    """:class:`GridRules` of ``frameworks`` over ``space`` (the physics profiles change neither
    the precision nor the batch the rules read: frameworks/base.PhysicsProfile)."""
    z, o = (len(v) for v in space.switches[:2])
    parts = []
    for chunk in space.chunks(max(1, CHUNK_ELEMENTS // (z * o))):
        v = chunk.views()
        parts.append(framework_support(
            v["tp"], v["pp"], v["dp"], v["cp"], v["ep"], v["zero"], v["offload"],
            v["offload_params"], v["v"], v["mb"], v["sp"], v["recompute"],
            heads=model.heads, n_kv=model.n_kv, experts=model.experts, layers=model.layers,
            global_batch=v["gb"], precision=base.precision.value, model=model,
            fp8_recipe=base.fp8_recipe.value, frameworks=tuple(frameworks)).reason)
    shape = (z, o, 1, 1)
    return GridRules({f: (np.concatenate([np.broadcast_to(p[f], shape + p[f].shape[-1:])
                                          for p in parts], axis=-1)
                          if parts else np.zeros(shape + (0,), dtype=np.int16))
                      for f in (parts[0] if parts else frameworks)})


def search_per_framework(model: Model, hw: Hardware, base: Training, asm: Assumptions,
                         space: Space, objective, top_k: int, distinct: bool,
                         frameworks: tuple[Framework, ...], physics: bool):
    """:func:`search` once per group of frameworks with identical physics profiles (its rules
    as the filter, its profile applied: frameworks/physics.py), the tops merged: a layout two
    frameworks run with different physics is two rows. Returns (merged SearchResult, the top's
    (group index, row) pairs, the groups). Without ``physics`` one framework-neutral search
    over all of ``frameworks`` (``--framework any``). The SmartNIC what-if (no framework runs
    OptimusNIC) is searched in the first group only: it is the one whose result is reported."""
    from optimus_calc.frameworks.physics import profile_groups
    groups = profile_groups(frameworks, base, asm) if physics else [(frameworks, base, asm)]
    rules = grid_rules(space, model, base, frameworks)  # once for every profile
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
