"""Helpers shared by test modules."""

import numpy as np

from optimus_calc.evaluate.batch import Batch
from optimus_calc.evaluate.engine import evaluate


def evaluate_space(space, m, hw, base, asm):
    """The planner's evaluation of a whole space, one value per layout, plus its columns.
    ``feasible``: fits; ``runs``: some framework runs it (frameworks.py)."""
    from optimus_calc.frameworks import framework_support
    chunk = space.whole()
    v = chunk.views()
    ev = evaluate(Batch.from_columns(v), m, hw, base, asm)
    sup = framework_support(v["tp"], v["pp"], v["dp"], v["cp"], v["ep"], v["zero"],
                            v["offload"], 0, v["v"], v["mb"], v["sp"], v["recompute"],
                            heads=m.heads, n_kv=m.n_kv, experts=m.experts, layers=m.layers,
                            global_batch=base.global_batch, precision=base.precision.value,
                            model=m)
    out = {"gpu_bytes": chunk.finish(ev.gpu_bytes),
           "step_s": chunk.finish(ev.step_time_s),
           "optimizer_exposed_s": chunk.finish(ev.term("optimizer_exposed_s")),
           "feasible": chunk.finish(ev.reasons) == 0,
           "runs": chunk.finish(sup.any())}
    return out, chunk.columns(np.arange(len(space)))
