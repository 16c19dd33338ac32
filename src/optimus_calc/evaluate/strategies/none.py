"""No offload: the optimizer state stays on the GPU, which runs the step after the backward."""

from __future__ import annotations

from optimus_calc.equations.recording import eq
from optimus_calc.evaluate.optimizer import device_from, device_time
from optimus_calc.evaluate.records import OptimizerUse
from optimus_calc.evaluate.strategies.base import OffloadStrategy
from optimus_calc.specs.training import Offload


class NoOffload(OffloadStrategy):
    offload = Offload.NONE
    label = "no offload"
    device = "none"
    step_equation = "compute.optimizer_step_time"  # the GPU's roofline (optimizer.device_time)

    def compare_entries(self, cat, node):
        return [("no offload (optimizer on GPU)", None, False)]

    def fits_on_device(self, bytes_per_device, capacity, spill) -> bool:
        return True

    def optimizer_device(self, hw, layout) -> str:
        return hw.gpu.name

    def optimizer(self, ctx, mem, comp, opt, dev):
        t_gpu, _ = device_time(device_from(ctx.hw.gpu, 1, ctx.asm), opt.shard, opt.bpp, opt.phi,
                               ctx.tr.optimizer_bytes)
        # no transfer, no overlap window: the 0 the merge leaves outside every strategy's layouts
        return OptimizerUse(t_gpu, 0.0, eq.compute__exposed_time(T_opt=t_gpu, T_x=0.0, W=0.0),
                            0.0, 0.0)


NONE = NoOffload()
