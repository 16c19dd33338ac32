"""ZeRO-Infinity (DeepSpeed offload_optimizer: nvme): optimizer state (and weights with
--offload-params) on the node's NVMe drives (a RAID0 the ranks share), fp32 gradients and swap
buffers in host RAM; the CPU step plus the swaps, after the backward."""

from __future__ import annotations

import numpy as np

from optimus_calc.equations.recording import eq
from optimus_calc.evaluate.offload_step import Overlap, exposed_step, nvme_optimizer_step
from optimus_calc.evaluate.reasons import Reason
from optimus_calc.evaluate.records import DeviceUse, OptimizerUse
from optimus_calc.evaluate.strategies.base import OffloadStrategy, bit
from optimus_calc.evaluate.strategies.cpu import ctx_code, host_phases, param_exposed
from optimus_calc.specs.training import Offload, Precision
from optimus_calc.units import GB, fmt_gb


def drives(hw) -> int:
    return hw.node.nvme_drives if hw.nvme is not None else 0


class NVMeOffload(OffloadStrategy):
    offload = Offload.NVME
    label = "ZeRO-Infinity"
    device = "NVMe drive"
    offloads_params = True
    step_equation = "offload.nvme_step_time"  # the CPU step plus the swaps (offload_step.py)
    exposed_equation_name = "offload.exposed_zero_offload"

    def compare_entries(self, cat, node):
        return [("ZeRO-Infinity (NVMe)", None, False)] if node.nvme_drives else []

    def flags(self, opar, gfrac):
        return (np.asarray(opar) == 1).astype(np.float64), 1.0, 1.0, 0.0

    def offered(self, hw):
        return bool(drives(hw))

    def refusal(self, hw):
        # no what-if: the step would stream the optimizer state to drives that do not exist
        if self.offered(hw):
            return None
        return (f"--offload nvme: {hw.node.name} has no NVMe drives for ZeRO-Infinity (a node "
                "with drives in the catalog, or --catalog-dir with your own)")

    def devices(self, ctx, host):
        hw, asm = ctx.hw, ctx.asm
        n = drives(hw)
        on_drives = host.optimizer + host.weights
        per = eq.memory__bytes_per_offload_device(B_gpu=on_drives, G_n=ctx.gpn, K_n=max(n, 1))
        buffers = eq.memory__nvme_host_bytes(
            B_hg=host.gradients, G_n=ctx.gpn, N_buf=asm.nvme_buffer_count,
            P_buf=asm.nvme_buffer_params, b_buf=Precision.FP32.weight_bytes)  # fp32 buffers
        cap = hw.nvme.capacity_GB * GB if hw.nvme is not None else 0.0
        return DeviceUse(per, on_drives, cap, n, 0.0, buffers)

    def reasons(self, ctx, dev, host_capacity):
        if not self.offered(ctx.hw):
            return bit(True, Reason.NO_NVME)
        return (bit(dev.bytes_per_device > dev.capacity, Reason.NVME_CAPACITY)
                | bit(dev.host_per_node > host_capacity, Reason.HOST_RAM))

    def reason_text(self, reason, info):
        hw = info["hw"]
        if reason is Reason.HOST_RAM:
            return (f"host buffers and fp32 gradients {fmt_gb(info['host'])} per node exceed "
                    f"host RAM {fmt_gb(info['host_cap'])} usable on {info['node']}")
        if reason is Reason.NVME_CAPACITY:
            return (f"optimizer state {fmt_gb(info['dev'])} per drive exceeds "
                    f"{hw.nvme.name if hw.nvme else 'NVMe'} capacity {fmt_gb(info['cap'])}")
        if reason is Reason.NO_NVME:
            return f"{info['node']} has no NVMe drives for ZeRO-Infinity"
        return None

    def device_params(self, hw):
        from optimus_calc.evaluate.hw_params import host_params
        return host_params()

    def device_name(self, hw):
        return f"NVMe {hw.nvme.name}" if hw.nvme is not None else "NVMe drive"

    def optimizer_device(self, hw, layout):
        return f"{hw.node.cpus} x {hw.cpu.name}"

    def optimizer(self, ctx, mem, comp, opt, dev):
        hw = ctx.hw
        if not self.offered(hw):
            return None
        t_cpu, x_cpu, _ = host_phases(ctx, mem, comp, opt)
        nv = nvme_optimizer_step(opt.shard, t_cpu, ranks_per_node=ctx.gpn, drives=drives(hw),
                                 read_GBps=hw.nvme.read_GBps, write_GBps=hw.nvme.write_GBps,
                                 asm=ctx.asm, grad_write=False)
        po = param_exposed(ctx, mem, comp, opt, "nvme", code=ctx_code(self),
                           ranks_per_node=ctx.gpn, drives=drives(hw),
                           read_GBps=hw.nvme.read_GBps)
        return OptimizerUse(nv.step_s, x_cpu + nv.read_s + nv.write_s,
                            exposed_step(Overlap.NONE, nv.step_s), 0.0, po)


NVME = NVMeOffload()
