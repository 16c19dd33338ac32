"""What one search of the planner carries between its passes (search/passes.py): the pools of
layouts that can still make the top K, the tally of counts, the second pass's pending layouts,
and the read-only state every pass reads, as records instead of positional tuples."""

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
