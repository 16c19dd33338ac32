"""The layout `breakeven` studies when none is pinned: the planner's recommendation for the
node with the device, its optimizer on that device (for a SmartNIC, which no framework runs, the
planner's what-if: the best layout that offloads to the card)."""

from __future__ import annotations

import dataclasses

from optimus_calc.analyses.breakeven.case import Case
from optimus_calc.errors import InputError
from optimus_calc.evaluate.stages import stage_table
from optimus_calc.specs.training import Offload


_DEVICE_FIELDS = ("smartnics_per_node", "allow_spill", "superchip_gpu_fraction")


def planned_case(base: Case, offload: Offload | None) -> Case:
    """``base`` on the planner's recommended layout (and its micro-batch and recomputation)
    among the layouts that offload to ``offload`` (None: the planner's own choice)."""
    from optimus_calc.search.plan import plan

    offloads = [offload] if offload is not None else None
    res = plan(base.model, base.hw, base.training, base.asm, offloads=offloads, top_k=1)
    rec = res.recommended
    if offload is Offload.SMARTNIC:  # no framework runs OptimusNIC: the planner's what-if
        rec = res.what_if or rec
    if rec is None:
        what = f" offloading to {offload.value}" if offload is not None else ""
        raise InputError(f"no layout of {base.model.name}{what} fits on {base.hw.nodes} x "
                         f"{base.hw.node.name}: {res.why}; pin one with --tp/--pp/--zero")
    # the planner searches none of the device options typed with it (--smartnics-per-node,
    # --no-spill, --gpu-fraction): they stay as given
    kept = {k: getattr(base.layout, k) for k in _DEVICE_FIELDS}
    return dataclasses.replace(base, layout=rec.layout.model_copy(update=kept),
                               training=rec.training,
                               stages=stage_table(base.model, [rec.layout.pp], False,
                                                  [rec.layout.interleave],
                                                  base.asm.pipeline_extra_layers_first > 0))
