"""Helpers shared by test modules."""

import numpy as np

from optimus_calc.evaluate.batch import Batch
from optimus_calc.evaluate.engine import evaluate


def evaluate_space(space, m, hw, base, asm):
    """The planner's evaluation of a whole space, one value per layout, plus its columns."""
    chunk = space.whole()
    ev = evaluate(Batch.from_columns(chunk.views()), m, hw, base, asm)
    out = {"gpu_bytes": chunk.finish(ev.gpu_bytes),
           "step_s": chunk.finish(ev.step_time_s),
           "optimizer_exposed_s": chunk.finish(ev.term("optimizer_exposed_s")),
           "feasible": chunk.finish(ev.reasons) == 0}
    return out, chunk.columns(np.arange(len(space)))
