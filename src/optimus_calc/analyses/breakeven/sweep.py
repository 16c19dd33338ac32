"""`breakeven --sweep global-batch|micro-batches`: where the offload starts to pay off.

OptimusNIC's window is one micro-batch's backward + the next forward (+ the exposed DP time), so
what decides is the
micro-batch size: ``global-batch`` grows the global batch with the micro-batches per step fixed
(each micro-batch larger), ``micro-batches`` splits the same global batch into more or fewer
micro-batches. At each point the evaluator gives the offloaded step and the same layout's step
with the optimizer on the GPU; the offload pays off where its step is no longer (in time; where
the GPU layout does not fit memory the offload is needed anyway, which the table marks). The
break-even batch is the first point from which it pays off to the end of the sweep.
"""

from __future__ import annotations

import dataclasses

from optimus_calc.analyses.breakeven.case import Case, measure
from optimus_calc.specs.training import Offload
from optimus_calc.record import record

MAX_POINTS = 12
# a search bound, not physics: the global-batch sweep stops at 16x the given batch
MAX_BATCH_MULTIPLE = 16


@record
class BatchPoint:
    global_batch: int
    micro_batches: int
    micro_batch: int
    offload_step_s: float
    offload_fits: bool
    gpu_step_s: float          # the same layout with the optimizer on the GPU
    gpu_fits: bool
    exposed_s: float
    window_s: float

    @property
    def pays_off(self) -> bool:
        """The offloaded layout fits and its step is no longer than on the GPU (whether or not
        the GPU layout fits memory: the table says so)."""
        return self.offload_fits and self.offload_step_s <= self.gpu_step_s


@record
class BatchSweep:
    what: str                   # "global-batch" or "micro-batches"
    points: tuple[BatchPoint, ...]

    @property
    def breakeven(self) -> BatchPoint | None:
        """The first point from which the offload pays off at every later point where it fits
        GPU memory (the largest micro-batches may not fit at all)."""
        out = None
        for p in reversed([p for p in self.points if p.offload_fits]):
            if not p.pays_off:
                break
            out = p
        return out


def _point(case: Case, gb: int, mb: int) -> BatchPoint:
    tr = case.training.model_copy(update={"global_batch": gb, "micro_batch": mb})
    off = measure(dataclasses.replace(case, training=tr))
    gpu_layout = case.layout.model_copy(update={"offload": Offload.NONE, "smartnic": None})
    gpu = measure(dataclasses.replace(case, training=tr, layout=gpu_layout))
    return BatchPoint(gb, gb // (case.layout.dp * mb), mb, off.step_time_s, off.reasons == 0,
                      gpu.step_time_s, gpu.reasons == 0, off.optimizer_exposed_s, off.window_s)


def sweep_batch(case: Case, what: str) -> BatchSweep:
    """Doubling micro-batch sizes from 1: at the layout's micro-batches per step
    (``global-batch``) or at its global batch (``micro-batches``, sizes dividing it)."""
    tr, dp = case.training, case.layout.dp
    m_now = max(1, tr.global_batch // (dp * tr.micro_batch))
    points = []
    mb = 1
    while len(points) < MAX_POINTS:
        if what == "global-batch":
            points.append(_point(case, dp * mb * m_now, mb))
        elif tr.global_batch % (dp * mb) == 0:
            points.append(_point(case, tr.global_batch, mb))
        if dp * mb >= tr.global_batch * (MAX_BATCH_MULTIPLE if what == "global-batch" else 1):
            break
        mb *= 2
    return BatchSweep(what, tuple(points))
