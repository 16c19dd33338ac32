"""The planner's search over one physics profile, chunk by chunk, in three exact filters:

0. the rules: a layout no framework of the profile runs can never be recommended under it, so
   it is counted (by the framework's first failing rule) and dropped before anything is
   evaluated; what is left (the layouts a framework runs, or, in the what-if search, the
   SmartNIC layouts) is cut into blocks of switch values evaluated whole (pools.blocks);
1. memory and feasibility of what is left (the first pass);
2. the step time of the layouts that fit (the second pass); the best join the pools.

Each filter only removes layouts the next could not rank (tests/test_search.py checks the
recommendation against a brute-force evaluation of every layout)."""

from __future__ import annotations

from enum import Enum

import numpy as np

from optimus_calc.equations import compiled as eq
from optimus_calc.evaluate import strategies
from optimus_calc.evaluate.batch import Batch
from optimus_calc.evaluate.context import Hardware
from optimus_calc.evaluate.engine import Reason, compute_bound_s, evaluate, evaluate_window
from optimus_calc.evaluate.reasons import primary_reason
from optimus_calc.evaluate.stages import stage_table
from optimus_calc.frameworks import Framework, Reason as FrameworkReason
from optimus_calc.search.pools import Pending, SearchState, Tally, blocks
from optimus_calc.search.space import Chunk, Gather, Space, grid_rules, profile_filter
from optimus_calc.specs.model import Model
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Offload, Training
from optimus_calc.record import record


class Objective(str, Enum):
    """What the planner ranks by (ties broken by the other key). A plan's GPUs are fixed, so
    time to train a token budget (tokens / tokens/s) and its cost (GPU-hours x price) rank
    exactly as throughput; they differ in what the report states. Throughput, not step time:
    under the default batch rule each layout's step carries its own global batch."""

    THROUGHPUT = "throughput"  # tokens/s (step.tokens_per_s), then GPU memory
    TIME = "time"              # time to train --tokens: ranks as throughput
    MEMORY = "memory"          # GPU memory, then tokens/s
    COST = "cost"              # cost to train --tokens at --gpu-hour-price: ranks as throughput

    @property
    def by_memory(self) -> bool:
        return self is Objective.MEMORY


def tokens_per_s(step_s, global_batch, seq_len: int) -> np.ndarray:
    """step.tokens_per_s of layouts with these step times (or lower bounds on them: the
    equation falls as the step grows, so a bound on the step bounds the throughput) and global
    batches: tokens per step = global batch x sequence (evaluate/work.py, as the evaluator)."""
    tokens = np.asarray(global_batch, dtype=np.float64) * seq_len
    return np.asarray(eq.step__tokens_per_s(T_step=step_s, tokens=tokens), dtype=np.float64)


# Layouts x stages evaluated at once, which bounds the planner's memory (~30 such arrays at peak)
CHUNK_ELEMENTS = 1 << 18
TP_PP_KEY = 1_000_003  # --distinct's (TP, PP) key TP x this + PP: above any PP, never shared


def _rank(tps, gpu, objective: Objective) -> np.ndarray:
    """Indices in rank order: most tokens/s first (then least GPU memory), or least GPU memory
    first (then most tokens/s). np.lexsort sorts by its last key first."""
    if objective.by_memory:
        return np.lexsort((-np.asarray(tps), gpu))
    return np.lexsort((gpu, -np.asarray(tps)))


def _shortlist(order: np.ndarray, tp, pp, keep: int, distinct: bool) -> np.ndarray:
    """The first ``keep`` of ``order`` and, with ``distinct``, the best of each (TP, PP)."""
    if not distinct:
        return order[:keep]
    _, first = np.unique(tp[order] * TP_PP_KEY + pp[order], return_index=True)
    return order[np.sort(first)][:keep]


NOT_RUNNABLE = "no framework runs it (see framework_rejections)"


def _count_rejections(n_gone: int, dropped: list, tally: Tally) -> None:
    """Filter 0's counts (space.profile_filter): the layouts no framework of the profile runs,
    by each framework's first failing rule."""
    tally.n_dropped += n_gone
    for _, code, n in dropped:
        text = FrameworkReason(code).text
        tally.dropped[text] = tally.dropped.get(text, 0) + n


def _block_parts(space: Space, rows: int, run, smart) -> list:
    """Filter 0, the rules (``run``, ``smart``: space.profile_filter's over the whole grid),
    as search/pools.py's blocks, each (its switch values with the (ZeRO, offload) pairs on
    one axis, its grid points, where they cut into the chunks of ``rows`` grid points, whether
    a framework runs its layouts): the layouts a framework runs, and apart the SmartNIC
    layouts none runs (the what-if), so neither keeps the other's rows and switch values."""
    sw = space.switches
    cuts = np.arange(0, len(space.base) + rows, rows)
    out = []
    for y, runnable in ((run, True), (smart, False)):
        for (pairs, sps), at in ([] if y is None else blocks(y)):
            zi, oi = (list(i) for i in zip(*pairs))
            values = (np.asarray(sw[0])[zi], np.asarray(sw[1])[oi], sw[2],
                      np.asarray(sw[3])[list(sps)])
            out.append((values, at, np.searchsorted(at, cuts), runnable))
    return out


def _runnable(space: Space, i: int, parts: list) -> list:
    """The parts of chunk ``i`` (:func:`_block_parts`), each (sub-chunk, runnable, wanted):
    a block's grid points in the chunk, every layout of it wanted (the blocks are exact)."""
    out = []
    for values, at, cut, runnable in parts:
        if cut[i] == cut[i + 1]:
            continue
        sub = Chunk(space.base[at[cut[i]:cut[i + 1]]], values, paired=True)
        want = np.ones(sub.shape, dtype=bool)
        out.append((sub, want if runnable else np.zeros_like(want), want))
    return out


def _first_pass(chunk: Chunk, runs, want, cx: SearchState):
    """Filter 1, over the (sub-)chunk's grid x switches: memory and feasibility, counted over
    the runnable layouts, and a lower bound on the step time from compute, the EP all-to-alls
    and the fixed host time (engine.compute_bound_s, computed on the axes they depend on). Returns (fits: wanted and feasible, GPU bytes, bound or None),
    arrays of the chunk's shape; the bound is a function computing it on demand (on the grid
    points ``rows`` when given; broadcast against the chunk: :func:`_bound_at`), or None."""
    ev, bound = evaluate_window(Batch.from_columns(chunk.views()), cx.model, cx.hw, cx.base,
                                cx.asm, compute_bound_s, stages=cx.table, lazy=True)
    tally = cx.tally
    reasons = np.broadcast_to(ev.reasons, chunk.shape)
    gpu = np.broadcast_to(ev.gpu_bytes, chunk.shape)
    every = runs.all()  # a block a framework runs: every layout (no masked gathers)
    prim = primary_reason(reasons.reshape(-1) if every else reasons[runs])
    tally.counts += np.bincount(prim[prim >= 0], minlength=len(Reason))
    if runs.any():
        tally.smallest = min(tally.smallest, float(gpu.min() if every else gpu[runs].min()))
    fits = want & (reasons == 0)
    tally.feasible += int(np.count_nonzero(fits if every else fits & runs))
    return fits, gpu, bound


def _second_pass(cols: dict, gpu_sel: np.ndarray, runs_sel: np.ndarray, cx: SearchState) -> None:
    """The step time of the layouts ``cols`` (they fit and are wanted; ``gpu_sel`` and
    ``runs_sel`` theirs); the best of them join the pools."""
    ev2 = evaluate(Batch.from_columns(cols), cx.model, cx.hw, cx.base, cx.asm, stages=cx.table)
    tally, objective, top_k, distinct = cx.tally, cx.objective, cx.top_k, cx.distinct
    step_sel = np.asarray(ev2.step_time_s)
    tps_sel = np.asarray(ev2.term("tokens_per_s"))
    off_sel = cols["offload"]
    none_code = strategies.code_of(Offload.NONE)
    smart_code = strategies.code_of(Offload.SMARTNIC)
    for mask, target in ((runs_sel, tally.pool), (off_sel == smart_code, tally.whatif)):
        sel = np.flatnonzero(mask)
        if sel.size == 0:
            continue
        step, g, tps = step_sel[sel], gpu_sel[sel], tps_sel[sel]
        if target is tally.pool:
            offs = off_sel[sel]
            if (offs == none_code).any():
                tally.best_none = max(tally.best_none, float(tps[offs == none_code].max()))
        order = _rank(tps, g, objective)
        keep_n = top_k if target is tally.pool else 1
        pick = _shortlist(order, cols["tp"][sel], cols["pp"][sel], keep_n,
                          distinct and target is tally.pool)
        picked = {k: v[sel][pick] for k, v in cols.items()}
        picked.update(step=step[pick], gpu=g[pick], tps=tps[pick])
        target.add(picked)


# Second-pass layouts evaluated in one call once this many are pending (a search tactic: the
# result is the same for any value; memory stays bounded by it plus one chunk).
SECOND_PASS_BATCH = 4096


# Layouts whose step is evaluated first in each chunk, per target (the top K, the best without
# offload, the what-if), the most promising by the bound: they set the thresholds the others
# are pruned against. A search tactic, not physics: any value gives the same result.
PROBE = 48
# Relative slack on the bound: the pass-2 evaluation of a layout repeats the pass-1 operations
# on the same numbers, but a vectorised transcendental may round differently with the layout;
# a layout is pruned only when its bound exceeds the threshold by more than this.
BOUND_SLACK = 1e-9


def _kth(values: np.ndarray, k: int) -> float:
    return float(np.partition(values, k - 1)[k - 1]) if len(values) >= k else np.inf


def _loss(d: dict, objective: Objective) -> np.ndarray:
    """The primary key of ``d``'s layouts, smaller better: GPU bytes, or minus tokens/s."""
    return d["gpu"] if objective.by_memory else -np.asarray(d["tps"])


def _pool_threshold(tally: Tally, objective: Objective, top_k: int, distinct: bool) -> float:
    """The primary key (:func:`_loss`) a layout must not exceed to reach the top K so far: the
    K-th smallest (with ``distinct``, of the per-(TP, PP) bests); inf below K."""
    pool = tally.pool.merged()
    if not pool:
        return np.inf
    v = _loss(pool, objective)
    if distinct:
        group = pool["tp"] * TP_PP_KEY + pool["pp"]
        order = np.lexsort((v, group))
        _, first = np.unique(group[order], return_index=True)
        v = v[order][first]
    return _kth(v, top_k)


def _still_needed(ub, gpu, runs, off, tally: Tally, objective: Objective, top_k: int,
                  distinct: bool) -> np.ndarray:
    """Which layouts (flat arrays) could still change the result: enter the top K, beat the
    most tokens/s without offload, or (a SmartNIC layout) the what-if. A layout is dropped only
    when its exact key (GPU bytes) exceeds the threshold or the upper bound ``ub`` of its
    tokens/s (from the step's lower bound) falls short of it."""
    high = ub * (1 + BOUND_SLACK)
    whatif = tally.whatif.merged()
    smart = off == strategies.code_of(Offload.SMARTNIC)
    # dropped only where the key is known to miss the threshold (a NaN is never dropped)
    threshold = _pool_threshold(tally, objective, top_k, distinct)
    if objective.by_memory:
        need = runs & ~(gpu > threshold)
        need |= smart & ~(gpu > (whatif["gpu"].min() if whatif else np.inf))
    else:
        need = runs & ~(-high > threshold)
        need |= smart & ~(high < (whatif["tps"].max() if whatif else 0.0))
    none = runs & (off == strategies.code_of(Offload.NONE))
    return need | (none & ~(high < tally.best_none))


def _settled(tally: Tally, objective: Objective, top_k: int, distinct: bool, runs, off) -> bool:
    """Whether every target these layouts could join already has a threshold."""
    none = runs & (off == strategies.code_of(Offload.NONE))
    return (np.isfinite(_pool_threshold(tally, objective, top_k, distinct))
            and (tally.best_none > 0 or not none.any())
            and (bool(tally.whatif.merged()) or bool(runs.all())))


# Below this share of a chunk's grid points holding a layout that fits, the bound is computed
# on those grid points only (engine.evaluate_window's rows): cutting the context costs less
# than the compute it saves. A tactic: the same bounds.
BOUND_ROWS_SHARE = 0.8


def _bound_at(chunk: Chunk, flat: np.ndarray, bound) -> np.ndarray:
    """The step's lower bound (``bound``: _first_pass's) at flat positions ``flat`` of the
    chunk, computed on the grid points holding them (the grid is the last axis: a position is
    switch index x grid points + grid point)."""
    nb = chunk.shape[-1]
    switch, point = np.divmod(flat, nb)
    held = np.zeros(nb, dtype=bool)
    held[point] = True
    rows = np.flatnonzero(held)
    if rows.size >= BOUND_ROWS_SHARE * held.size:
        return np.broadcast_to(bound(), chunk.shape).reshape(-1)[flat]
    at = np.cumsum(held) - 1  # a grid point's position among ``rows``
    cut = np.broadcast_to(bound(rows), chunk.shape[:-1] + (rows.size,)).reshape(-1)
    return cut[switch * rows.size + at[point]]


def _step_pass(chunk: Chunk, flat: np.ndarray, gpu, runs, bound, cx: SearchState,
               pending: Pending) -> None:
    """Filter 2 with the bound: the layouts of ``flat`` that can still change the result join
    the pending second pass. Until every target has a threshold, the most promising of each
    (by the bound; by GPU bytes for the memory objective) are evaluated at once to set it."""
    tally, objective, top_k, distinct = cx.tally, cx.objective, cx.top_k, cx.distinct

    def pick(m):
        f = flat[m]
        return chunk.columns_at(f), gpu.reshape(-1)[f], runs.reshape(-1)[f]
    if bound is None or flat.size <= 3 * PROBE:
        pending.add(*pick(slice(None)))
        return
    views = chunk.views()
    g, r = gpu.reshape(-1)[flat], runs.reshape(-1)[flat]
    # an upper bound on each layout's tokens/s, from the lower bound on its step
    ub = tokens_per_s(_bound_at(chunk, flat, bound),
                      np.broadcast_to(views["gb"], chunk.shape).reshape(-1)[flat], cx.base.seq_len)
    off = np.broadcast_to(views["offload"], chunk.shape).reshape(-1)[flat]
    probe = np.zeros(flat.size, dtype=bool)
    if not _settled(tally, objective, top_k, distinct, r, off) and pending.n:
        _second_pass(*pending.take(), cx)  # what is pending may settle it
    if not _settled(tally, objective, top_k, distinct, r, off):
        order = _rank(ub, g, objective)
        cols = chunk.columns_at(flat[order])  # with --distinct the best of each (TP, PP) first
        for i, target in enumerate((r, r & (off == strategies.code_of(Offload.NONE)), ~r)):
            sel = np.flatnonzero(target[order])
            first = _shortlist(sel, cols["tp"], cols["pp"], PROBE, distinct and i == 0)
            probe[order[first]] = True
        _second_pass(*pick(probe), cx)
    rest = ~probe & _still_needed(ub, g, r, off, tally, objective, top_k, distinct)
    pending.add(*pick(rest))


def _result(tally: Tally, objective: Objective, top_k: int, distinct: bool) -> SearchResult:
    """The ranked top K and the best what-if of the pools, with the counts by reason."""
    merged = tally.pool.merged()
    if merged:
        order = _rank(merged["tps"], merged["gpu"], objective)
        merged = {k: v[_shortlist(order, merged["tp"], merged["pp"], top_k, distinct)]
                  for k, v in merged.items()}
    best_whatif = tally.whatif.merged()
    if best_whatif:
        order = _rank(best_whatif["tps"], best_whatif["gpu"], objective)[:1]
        best_whatif = {k: v[order] for k, v in best_whatif.items()}
    by_reason = {r.text: int(tally.counts[r]) for r in Reason if tally.counts[r]}
    if tally.n_dropped:
        by_reason[NOT_RUNNABLE] = tally.n_dropped
    return SearchResult(merged, tally.feasible, by_reason, tally.smallest, tally.best_none,
                        best_whatif, dict(sorted(tally.dropped.items(), key=lambda kv: -kv[1])))


def search(model: Model, hw: Hardware, base: Training, asm: Assumptions, space: Space,
           objective: Objective, top_k: int, distinct: bool,
           frameworks: tuple[Framework, ...] = tuple(Framework), what_if: bool = True,
           rules=None):
    """Rank ``space`` under one physics profile (``base``, ``asm``) chunk by chunk: keep the
    top K of the layouts that fit and that one of ``frameworks`` runs and, with ``what_if``,
    the best SmartNIC layout apart (no framework runs OptimusNIC); count the rest by reason
    (the rules first, then memory); the figures `_why` needs. Memory is bounded by the chunk.
    ``rules``: space.grid_rules over ``space`` (computed here when None)."""
    table = stage_table(model, space.base[:, 1], False, space.base[:, 6],  # (pp, v) pairs
                        asm.pipeline_extra_layers_first > 0)
    width = table.index.shape[1]
    rows = max(1, CHUNK_ELEMENTS // (space.switch_count * width))
    tally = Tally(counts=np.zeros(len(Reason), dtype=np.int64))
    frameworks = tuple(frameworks)
    pending = Pending()
    cx = SearchState(model, hw, base, asm, table, objective, top_k, distinct, tally)
    gather = Gather(CHUNK_ELEMENTS // width)

    def evaluate_part(sub, runs, want):
        fits, gpu, bound = _first_pass(sub, runs, want, cx)
        flat = np.flatnonzero(fits)
        if flat.size:
            _step_pass(sub, flat, gpu, runs, bound, cx, pending)
        if pending.n >= SECOND_PASS_BATCH:
            _second_pass(*pending.take(), cx)
    if rules is None:
        rules = grid_rules(space, model, base, frameworks, CHUNK_ELEMENTS)
    run, smart, _, n_gone, dropped = profile_filter(
        rules, space, frameworks, what_if, strategies.code_of(Offload.SMARTNIC), rows)
    _count_rejections(n_gone, dropped, tally)
    parts = _block_parts(space, rows, run, smart)
    for i in range(-(-len(space.base) // rows)):
        for sub, runs, want in _runnable(space, i, parts):
            for part in gather.add(sub, runs, want):
                evaluate_part(*part)
    for part in gather.flush():
        evaluate_part(*part)
    if pending.n:
        _second_pass(*pending.take(), cx)
    return _result(tally, objective, top_k, distinct)


@record
class SearchResult:
    top: dict
    feasible: int
    infeasible_by_reason: dict[str, int]
    smallest_gpu_bytes: float   # of the layouts a framework runs (inf: none runs)
    best_no_offload_tps: float  # most tokens/s of a runnable layout without offload (0: none)
    what_if: dict
    framework_rejections: dict[str, int]
