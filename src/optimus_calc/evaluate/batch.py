"""A batch of layouts as arrays: the one input of the evaluator.

One layout (the `memory`, `step`, `compare`, `fit`, `nics` commands) is a batch of one; the planner
passes the whole search grid. Fields may be numpy arrays of any broadcastable shape, or scalars.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np

from optimus_calc.specs.training import Layout, Recompute, Training

# Integer codes of the closed sets inside arrays (position in the Enum's declaration order; an
# offload strategy registered beyond the built-ins takes the next code, see offload_code).
from optimus_calc.specs.training import RECOMPUTE_CODES  # noqa: E402
from optimus_calc.specs.training import offload_code  # noqa: E402
from optimus_calc.record import record
R_NONE, R_SELECTIVE, R_FULL = (RECOMPUTE_CODES.index(r) for r in (
    Recompute.NONE, Recompute.SELECTIVE, Recompute.FULL))




BATCH_RULE_SEQUENCES = 512
"""The global-batch rule of every command when --global-batch is not given: the smallest multiple
of dp x micro-batch that holds at least 512 sequences (a choice, not a measurement: Narayanan et
al. SC'21 Table 1's smallest batch; 1M tokens at 2048). Adding GPUs then never forces a smaller
batch, and every layout divides its batch exactly."""


def rule_global_batch(dp, micro_batch, target: int = BATCH_RULE_SEQUENCES):
    """The rule's global batch (arrays welcome)."""
    per = np.asarray(dp) * np.asarray(micro_batch)
    return -(-target // per) * per


def resolve_global_batch(dp, micro_batch, tr: Training):
    """The global batch of a layout (arrays welcome): the training's, or when it is None the
    rule's. The one place the batch is decided: every command and the planner call it."""
    if tr.global_batch is not None:
        shape = np.shape(dp)
        if np.shape(micro_batch) != shape:
            shape = np.broadcast_shapes(shape, np.shape(micro_batch))
        return np.broadcast_to(np.asarray(tr.global_batch), shape).copy()
    return rule_global_batch(dp, micro_batch)


@record
class Batch:
    """Layout and per-layout training fields; every field broadcasts against the others."""

    tp: np.ndarray
    pp: np.ndarray
    dp: np.ndarray
    cp: np.ndarray
    ep: np.ndarray
    zero: np.ndarray
    offload: np.ndarray          # index into OFFLOAD_CODES
    recompute: np.ndarray        # index into RECOMPUTE_CODES
    sp: np.ndarray               # 1 with sequence parallelism
    mb: np.ndarray               # micro-batch size
    v: np.ndarray                # model chunks per GPU (interleaving)
    offload_params: np.ndarray | int = 0     # 1: ZeRO-3 weights offloaded with the optimizer
    # SuperOffload: optimizer fraction kept on the GPU (Layout's default, the published ratio)
    gpu_fraction: np.ndarray | float = Layout.model_fields["superchip_gpu_fraction"].default
    allow_spill: np.ndarray | int = 1        # SmartNIC state may spill to host RAM
    smartnics_per_node: np.ndarray | int = 0  # 0: one per GPU
    etp: np.ndarray | int = 0                # expert TP (0: as TP; parallel folding sets it)

    @classmethod
    def of(cls, layout: Layout, tr: Training) -> "Batch":
        """A batch of one layout (arrays of shape (1,))."""
        a = lambda x: np.array([x])  # noqa: E731
        return cls(tp=a(layout.tp), pp=a(layout.pp), dp=a(layout.dp), cp=a(layout.cp),
                   ep=a(layout.ep), zero=a(int(layout.zero)),
                   offload=a(offload_code(layout.offload)),
                   recompute=a(RECOMPUTE_CODES.index(tr.recompute)),
                   sp=a(int(tr.sequence_parallel)), mb=a(tr.micro_batch),
                   v=a(layout.interleave), offload_params=a(int(layout.offload_params)),
                   gpu_fraction=a(layout.superchip_gpu_fraction),
                   allow_spill=a(int(layout.allow_spill)),
                   smartnics_per_node=a(layout.smartnics_per_node),
                   etp=a(layout.etp or 0))

    @classmethod
    def of_many(cls, layouts: list[Layout], trainings: list[Training]) -> "Batch":
        """A flat batch of the given layouts (arrays of shape (n,)), row i = ``Batch.of`` of
        layout i."""
        rows = [cls.of(lay, tr) for lay, tr in zip(layouts, trainings)]
        return cls(**{f.name: np.concatenate([getattr(r, f.name) for r in rows])
                      for f in fields(cls)})

    @classmethod
    def from_columns(cls, cols: dict) -> "Batch":
        return cls(**{f.name: cols[f.name] for f in fields(cls) if f.name in cols})
