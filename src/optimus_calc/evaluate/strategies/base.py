"""What an offload strategy is: one object per target (none, cpu, nvme, smartnic, superchip).

A strategy knows what leaves the GPU (the o_w, o_g, o_o, f_k flags of memory.*), the devices
that hold it (bytes, capacity, count per node), why a layout is infeasible on them (Reasons and
their texts), the optimizer step it runs with its transfers, exposure and overlap window, the
names of its devices, and whether a node offers it. The evaluator iterates the registry
(strategies/__init__.py) instead of branching on targets; a new target is one module plus one
``register(...)`` line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from optimus_calc.evaluate.reasons import Reason
from optimus_calc.specs.training import Offload

if TYPE_CHECKING:
    from optimus_calc.evaluate.context import Hardware
    from optimus_calc.evaluate.records import (ComputeRecord, Ctx, DeviceUse, Devices,
                                               HostState, MemoryRecord, OptimizerInputs,
                                               OptimizerUse)
    from optimus_calc.specs.training import Layout


def bit(cond, reason: Reason):
    """``cond`` (bool array) as the bit of ``reason``."""
    return np.asarray(cond, dtype=np.int64) << int(reason)


class OffloadStrategy:
    """Defaults: nothing leaves the GPU, no device, always offered, no optimizer step."""

    offload: Offload         # a new target may give its value as a string: register() makes
    label: str = ""          # how reports name the strategy, e.g. "ZeRO-Offload"
    device: str = ""         # what one of its devices is, e.g. "host RAM"
    offloads_params: bool = False  # its flags() move the ZeRO-3 weights with --offload-params
    # the equation whose result is its optimizer step (OptimizerUse.step_s): the step report
    # names it and `explain` prints it; "" when the step is computed outside the equations
    step_equation: str = ""
    # the equation whose result is its exposed optimizer time (StepEstimate.optimizer_exposed_s):
    # the step report names it for `explain`
    exposed_equation_name: str = "compute.exposed_time"

    def exposed_equation(self, zero: int) -> str:
        """The equation of the exposed optimizer time at ZeRO stage ``zero``."""
        return self.exposed_equation_name

    @property
    def key(self) -> str:
        return self.offload.value if isinstance(self.offload, Offload) else str(self.offload)

    # ---- memory ------------------------------------------------------------------------------
    def flags(self, opar, gfrac) -> tuple:
        """(o_w, o_g, o_o, f_k) of memory.*: weights, gradients, optimizer state that leave the
        GPU, and the optimizer fraction kept on it."""
        return 0.0, 0.0, 0.0, 0.0

    # ---- devices ------------------------------------------------------------------------------
    def offered(self, hw: Hardware) -> bool:
        """Whether the node has what the strategy needs (the planner searches only these)."""
        return True

    def refusal(self, hw: Hardware) -> str | None:
        """Why a one-layout command (step, memory, explain, fit) refuses this target on ``hw``,
        or None: a target the node cannot have at all, where a what-if would price a device
        that does not exist (the planner searches only the offered ones)."""
        return None

    def devices(self, ctx: Ctx, host: HostState) -> DeviceUse:
        from optimus_calc.evaluate.records import DeviceUse
        return DeviceUse(0.0, 0.0, 0.0, 0, 0.0, 0.0)

    def reasons(self, ctx: Ctx, dev: Devices, host_capacity: float):
        """Bits of Reason for the layouts of this strategy (``dev``: reduced to the most loaded
        stage)."""
        return 0

    def reason_text(self, reason: Reason, info: dict) -> str | None:
        """The sentence for ``reason`` (``info``: figures of the layout), None if not ours."""
        return None

    def fits_on_device(self, bytes_per_device: float, capacity: float, spill: float) -> bool:
        return bytes_per_device <= capacity

    def devices_per_gpu_for_capacity(self, hw: Hardware, bytes_per_gpu: float) -> int:
        """Devices one GPU's offloaded state would need to fit (0: not sized per GPU)."""
        return 0

    def notes(self, hw: Hardware, layout: Layout, info: dict) -> list[str]:
        return []

    def compare_entries(self, cat, node) -> list[tuple[str, str | None, bool]]:
        """`compare`'s rows of this target on ``node``: (label, SmartNIC name or None, what-if:
        hardware the node lacks). Default: one row, named by its label and device."""
        return [(f"{self.label or self.key} ({self.device or self.key})", None, False)]

    def device_params(self, hw: Hardware) -> list:
        """The catalog fields of its devices `breakeven` and --sensitivity may vary
        (hw_params.Param)."""
        return []

    def step_notes(self, offload) -> list[str]:
        """Notes for the step report (``offload``: the memory report's OffloadMemory)."""
        return []

    def device_name(self, hw: Hardware) -> str:
        """One device, as the memory report names it."""
        return self.device

    def optimizer_device(self, hw: Hardware, layout: Layout) -> str:
        """The device(s) that run the optimizer step, as the step report names them."""
        return self.device_name(hw)

    # ---- optimizer step -----------------------------------------------------------------------
    def optimizer(self, ctx: Ctx, mem: MemoryRecord, comp: ComputeRecord, opt: OptimizerInputs,
                  dev: DeviceUse) -> OptimizerUse | None:
        """The step on the strategy's device; None when the node cannot run it (its layouts are
        infeasible and their step is 0)."""
        return None
