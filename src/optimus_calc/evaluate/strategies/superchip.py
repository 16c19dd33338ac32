"""SuperOffload (seeds/superoffload.md): on a superchip (NVLink-C2C CPU) gradients and optimizer
state move to the Grace CPU's memory except the fraction kept on the GPU; GraceAdam runs bucket
by bucket behind the backward, casts on the GPU, and the GPU steps its kept fraction after."""

from __future__ import annotations

import numpy as np

from optimus_calc.equations.recording import eq
from optimus_calc.evaluate.offload_schedules import superoffload_step
from optimus_calc.evaluate.offload_step import HostCPU
from optimus_calc.evaluate.optimizer import device_from, device_time
from optimus_calc.evaluate.reasons import Reason
from optimus_calc.evaluate.records import DeviceUse, OptimizerUse, number
from optimus_calc.evaluate.strategies.base import OffloadStrategy, bit
from optimus_calc.specs.training import Offload
from optimus_calc.units import fmt_gb


class SuperchipOffload(OffloadStrategy):
    offload = Offload.SUPERCHIP
    label = "SuperOffload"
    device = "Grace memory"
    step_equation = "offload.superchip_step_time"
    exposed_equation_name = "offload.superchip_exposed_time"

    def compare_entries(self, cat, node):
        return [("SuperOffload (Grace)", None, False)] if node.superchip else []

    def flags(self, opar, gfrac):
        return 0.0, 1.0, 1.0, gfrac

    def offered(self, hw):
        return bool(hw.node.superchip)

    def refusal(self, hw):
        # no what-if: the step on a CPU without NVLink-C2C would be GraceAdam's on no Grace
        if self.offered(hw):
            return None
        return (f"--offload superchip: {hw.node.name} is not a superchip node (no NVLink-C2C "
                "CPU); use --node gh200 or gh200-nvl2")

    def devices(self, ctx, host):
        cpus = ctx.hw.node.cpus
        state = host.optimizer + host.gradients + host.weights
        per = eq.memory__bytes_per_offload_device(B_gpu=state, G_n=ctx.gpn, K_n=cpus)
        cap = number(eq.memory__host_bytes_per_socket(C_u=host.host_capacity, S_n=cpus))
        return DeviceUse(per, state, cap, cpus, 0.0, per * cpus)

    def reasons(self, ctx, dev, host_capacity):
        if not self.offered(ctx.hw):
            return bit(True, Reason.NOT_SUPERCHIP)
        return bit(dev.bytes_per_device > dev.capacity, Reason.GRACE_MEMORY)

    def reason_text(self, reason, info):
        if reason is Reason.NOT_SUPERCHIP:
            return (f"{info['node']} is not a superchip node (no NVLink-C2C CPU); use --node "
                    "gh200 or gh200-nvl2")
        if reason is Reason.GRACE_MEMORY:
            return (f"offloaded state {fmt_gb(info['dev'])} per Grace exceeds its memory "
                    f"{fmt_gb(info['cap'])} usable")
        return None

    def device_params(self, hw):
        from optimus_calc.evaluate.hw_params import host_params
        return host_params("GPU-host link (NVLink-C2C)")

    def device_name(self, hw):
        return f"{hw.cpu.name} memory"

    def optimizer_device(self, hw, layout):
        return f"{hw.cpu.name} (NVLink-C2C)"

    def optimizer(self, ctx, mem, comp, opt, dev):
        if not self.offered(ctx.hw):
            return None
        so, tail = cpu_and_gpu_steps(ctx.hw, ctx.tr, ctx.asm, opt, mem.flags[3], comp.W_b)
        return OptimizerUse(eq.offload__superchip_step_time(T_k=tail, T_s=so.step_s),
                            so.transfer_s,
                            eq.offload__superchip_exposed_time(T_k=tail, T_x=so.exposed_s),
                            comp.W_b)


def cpu_and_gpu_steps(hw, tr, asm, opt, f_k, backward_s):
    """(Grace's step, the GPU's tail) of one rank whose optimizer partition is ``opt.shard``
    (records.OptimizerInputs) with the fraction ``f_k`` kept on the GPU, against a backward of
    ``backward_s``: the evaluator's call, and `breakeven`'s for the exposure floor."""
    p_r = np.maximum(opt.shard * (1 - f_k), 1.0)
    # speculation-then-validation: CPU-Adam behind the backward, casts on the GPU
    # (evaluate/offload_schedules.py)
    so = superoffload_step(p_r, precision=tr.precision, backward_s=backward_s,
                           host=HostCPU.from_catalog(hw.cpu, hw.node.cpus), cpu=hw.cpu,
                           ranks_per_node=hw.gpus_per_node, asm=asm,
                           weight_bytes=tr.weight_bytes, grad_bytes=tr.gradient_bytes,
                           **opt.link_kw)
    tail, _ = device_time(device_from(hw.gpu, 1, asm), opt.shard * f_k, opt.bpp, opt.phi,
                          tr.optimizer_bytes)
    return so, tail


SUPERCHIP = SuperchipOffload()
