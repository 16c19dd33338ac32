"""What one search of the planner carries between its passes (search/passes.py): the pools of
layouts that can still make the top K, the tally of counts, the second pass's pending layouts,
and the read-only state every pass reads, as records instead of positional tuples.
It also cuts the rule filter's wanted layouts into blocks for the first pass (below).
"""

from __future__ import annotations

from dataclasses import field

import numpy as np

from optimus_calc.evaluate.context import Hardware
from optimus_calc.record import record
from optimus_calc.specs.model import Model
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Training


@record(frozen=False)
class Pool:
    """The few layouts that can still make the top K, gathered chunk by chunk."""

    cols: list = field(default_factory=list)

    def add(self, cols: dict) -> None:
        self.cols.append(cols)

    def merged(self) -> dict:
        return {k: np.concatenate([c[k] for c in self.cols]) for k in (self.cols or [{}])[0]}


@record(frozen=False)
class Tally:
    """What `search` gathers over the chunks: counts by reason, framework rejections, the
    feasible count, the smallest GPU footprint of a runnable layout, the most tokens/s of a
    runnable layout without offload (0: none yet) and the two pools."""

    counts: np.ndarray
    dropped: dict[str, int] = field(default_factory=dict)
    n_dropped: int = 0
    feasible: int = 0
    smallest: float = np.inf
    best_none: float = 0.0
    pool: Pool = field(default_factory=Pool)
    whatif: Pool = field(default_factory=Pool)


@record(frozen=False)
class Pending:
    """Second-pass layouts gathered over chunks and evaluated together: an evaluator call
    costs a few milliseconds whatever its size, and a large space's many chunks each leave a
    few layouts (the worst known input: some 200 calls of about 7 ms)."""

    parts: list = field(default_factory=list)
    n: int = 0

    def add(self, cols: dict, gpu: np.ndarray, runs: np.ndarray) -> None:
        if len(gpu):
            self.parts.append((cols, gpu, runs))
            self.n += len(gpu)

    def take(self) -> tuple:
        cols = {k: np.concatenate([p[0][k] for p in self.parts]) for k in self.parts[0][0]}
        out = (cols, np.concatenate([p[1] for p in self.parts]),
               np.concatenate([p[2] for p in self.parts]))
        self.parts, self.n = [], 0
        return out


@record
class SearchState:
    """What every pass of one search reads (one physics profile), instead of a positional tuple;
    ``tally`` is the one mutable part, the counts and pools the passes add to."""

    model: Model
    hw: Hardware
    base: Training
    asm: Assumptions
    table: object       # stages.StageTable of the space's pipeline degrees
    objective: object   # passes.Objective
    top_k: int
    distinct: bool
    tally: Tally


# ---- the rule filter's wanted layouts as blocks the first pass takes whole -----------------
# A grid point's wanted layouts (search/space.profile_filter: a framework of the profile runs
# them) form a pattern over the ZeRO x offload x sequence-parallelism switches that is seldom a
# product of value sets: DeepSpeed offloads only from ZeRO-1, torchtitan's CPU offload needs
# ZeRO-3 with the weights, Megatron-LM offloads only with its distributed optimizer. Evaluated
# over the pattern's bounding box (every ZeRO stage with every offload target of the pattern),
# the worst known plan (qwen3-30b-a3b on 720 nodes) computed the memory of 2.9 M layouts for
# 1.76 M wanted. Here each pattern is cut into blocks: the (ZeRO, offload) pairs with the same
# SP values, evaluated as one paired axis (space.Chunk's ``paired``) times those SP values and
# every recompute value; every grid point holding a block is listed under it. The first pass
# then evaluates each wanted layout once and nothing else, a grid point's pairs in one call
# (the compute bound, which depends on neither switch, is computed once per grid point and SP
# value), the grid points of a block gathered into few calls (space.Gather). A tactic: the same
# layouts are evaluated.

Block = tuple[tuple[tuple[int, int], ...], tuple[int, ...]]  # ((zero i, offload i) ..., SP i)


def pattern_blocks(p: np.ndarray) -> list[Block]:
    """Disjoint blocks covering the boolean pattern ``p`` of shape (zero, offload, SP)
    exactly: the (zero, offload) index pairs holding the same SP values, each block's pairs
    offload-major (a strategy's pairs are then one run along the axis: stages.by_strategy),
    the blocks in the order of their first pair."""
    by_sp: dict[bytes, list[tuple[int, int]]] = {}
    for o in range(p.shape[1]):
        for z in range(p.shape[0]):
            if p[z, o].any():
                by_sp.setdefault(p[z, o].tobytes(), []).append((z, o))
    return [(tuple(pairs), tuple(int(s) for s in np.flatnonzero(p[pairs[0]])))
            for pairs in by_sp.values()]


def pattern_keys(cols: np.ndarray) -> np.ndarray:
    """Each column of the boolean ``cols`` as integer words (row k: bit k % 64 of word
    k // 64), shape (words, columns): equal columns have equal words, all 0 where a column
    holds nothing. Built a byte (8 rows) at a time along the long axis: numpy's packbits
    across it walks the array by strides."""
    bits = cols.view(np.uint8)
    words = np.zeros((-(-len(bits) // 64), bits.shape[1]), dtype=np.uint64)
    for j in range(0, len(bits), 8):
        byte = bits[j].copy()
        for i in range(1, min(8, len(bits) - j)):
            byte |= bits[j + i] << np.uint8(i)
        words[j // 64] |= byte.astype(np.uint64) << np.uint64(j % 64)
    return words


def blocks(y: np.ndarray) -> list[tuple[Block, np.ndarray]]:
    """The blocks of ``y`` (wanted layouts over zero, offload, 1, SP, grid points: the rule
    filter's), each with the grid points holding it (ascending), the blocks in the order of
    their first grid point; [] when nothing is wanted. The grid points are grouped by pattern
    one pattern at a time (a search has a few: one pass each, no sort)."""
    z, o, _, s, nb = y.shape
    cols = y.reshape(z * o * s, nb)
    words = pattern_keys(cols)
    idx = np.flatnonzero(words.any(axis=0))
    words = words[:, idx]
    members: dict[Block, list[np.ndarray]] = {}
    while idx.size:
        same = (words == words[:, :1]).all(axis=0)
        for block in pattern_blocks(cols[:, idx[0]].reshape(z, o, s)):
            members.setdefault(block, []).append(idx[same])
        idx, words = idx[~same], words[:, ~same]
    out = [(b, np.sort(np.concatenate(r)) if len(r) > 1 else r[0]) for b, r in members.items()]
    return sorted(out, key=lambda br: int(br[1][0]))
