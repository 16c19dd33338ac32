"""One toy offload target for the tests that register a strategy of their own
(test_strategy_plugin.py, test_contributing.py): the optimizer state in a per-node memory
device that the host CPU steps at the device's bandwidth after the backward, nothing hidden."""

from optimus_calc.equations.recording import eq
from optimus_calc.evaluate.reasons import Reason
from optimus_calc.evaluate.records import DeviceUse, OptimizerUse
from optimus_calc.evaluate.strategies.base import OffloadStrategy, bit

ADAM_BYTES = 28.0   # fused Adam: read p, g, m, v and write p, m, v in fp32


def memory_device(key: str, label: str, device: str, capacity_bytes: float,
                  Bps: float) -> type[OffloadStrategy]:
    """The strategy class of a toy memory device: ``capacity_bytes`` per node, stepped at
    ``Bps``; full when one node's optimizer state exceeds it (``"<device> full"``)."""

    class MemoryDevice(OffloadStrategy):
        offload, __doc__ = key, f"Optimizer state in a {device}, stepped at its bandwidth."

        def flags(self, opar, gfrac):
            return 0.0, 0.0, 1.0, 0.0  # the optimizer state leaves the GPU, nothing else

        def devices(self, ctx, host):
            per = eq.memory__bytes_per_offload_device(B_gpu=host.optimizer, G_n=ctx.gpn, K_n=1)
            return DeviceUse(per, host.optimizer, capacity_bytes, 1, 0.0, 0.0)

        def reasons(self, ctx, dev, host_capacity):
            return bit(dev.bytes_per_device > dev.capacity, Reason.HOST_RAM)

        def reason_text(self, reason, info):
            return f"{device} full" if reason is Reason.HOST_RAM else None

        def optimizer(self, ctx, mem, comp, opt, dev):
            step = opt.shard * ADAM_BYTES / Bps
            moved = opt.shard * (ctx.tr.gradient_bytes + ctx.tr.weight_bytes) / opt.link_Bps
            return OptimizerUse(step, moved, step + moved, 0.0)

    MemoryDevice.label, MemoryDevice.device = label, device
    return MemoryDevice
