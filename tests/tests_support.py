"""Helpers shared by test modules."""

import contextlib
import io
import json
from functools import lru_cache

import numpy as np

from optimus_calc.evaluate.batch import Batch
from optimus_calc.cli.main import main
from optimus_calc.evaluate.engine import evaluate


def evaluate_space(space, m, hw, base, asm, frameworks=None):
    """The planner's evaluation of a whole space, one value per layout, plus its columns.
    ``feasible``: fits; ``runs``: some framework (of ``frameworks``; default all) runs it
    (frameworks.py)."""
    from optimus_calc.frameworks import framework_support
    chunk = space.whole()
    v = chunk.views()
    ev = evaluate(Batch.from_columns(v), m, hw, base, asm)
    sup = framework_support(v["tp"], v["pp"], v["dp"], v["cp"], v["ep"], v["zero"],
                            v["offload"], v["offload_params"], v["v"], v["mb"], v["sp"],
                            v["recompute"],
                            heads=m.heads, n_kv=m.n_kv, experts=m.experts, layers=m.layers,
                            global_batch=v["gb"], precision=base.precision.value,
                            model=m)
    out = {"gpu_bytes": chunk.finish(ev.gpu_bytes),
           "step_s": chunk.finish(ev.step_time_s),
           "tokens_per_s": chunk.finish(ev.term("tokens_per_s")),
           "optimizer_exposed_s": chunk.finish(ev.term("optimizer_exposed_s")),
           "feasible": chunk.finish(ev.reasons) == 0,
           "runs": chunk.finish(sup.any(frameworks))}
    return out, chunk.columns(np.arange(len(space)))


@lru_cache(maxsize=None)
def cli(*args: str):
    """Run the CLI in-process once per argument list; (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in args])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def cli_json(*args: str) -> dict:
    code, out, err = cli(*args, "--format", "json")
    assert code == 0, err
    return json.loads(out)
