"""OptimusNIC (seeds/optimusnic.md): the optimizer state on SmartNICs (one per GPU unless
--smartnics-per-node), gradients stream through; the card runs the step layer by layer while
the GPU goes on, and state that does not fit spills to host RAM over the card's link."""

from __future__ import annotations

import numpy as np

from optimus_calc.evaluate import optimusnic

from optimus_calc.equations.recording import eq
from optimus_calc.evaluate.optimizer import device_from, device_time
from optimus_calc.evaluate.reasons import Reason
from optimus_calc.evaluate.records import DeviceUse, OptimizerUse
from optimus_calc.evaluate.strategies.base import OffloadStrategy, bit
from optimus_calc.specs.training import Offload
from optimus_calc.units import fmt_gb


def cards_per_gpu(bytes_per_gpu: float, card_bytes: float) -> int:
    """SmartNICs one GPU's offloaded state needs to fit without spilling (0 when none moves):
    the same comparison as the spill (memory.spill_bytes), fractions of a byte included (a
    state a quarter byte over one card spills, so it needs two; int() had said one)."""
    if bytes_per_gpu <= 0:
        return 0
    return max(1, int(-(-float(bytes_per_gpu) // float(card_bytes))))


def _holding(cards: int, hw) -> str:
    """"2 cards per GPU (16 per node, --smartnics-per-node) would hold it"."""
    return (f"{cards} card{'s' if cards != 1 else ''} per GPU ({cards * hw.gpus_per_node} per "
            "node, --smartnics-per-node) would hold it")


def cards_per_node(ctx):
    """K_n: SmartNICs per node (--smartnics-per-node; 0 means one per GPU), made once per
    context (the devices, the reasons and the optimizer step ask)."""
    return ctx.memo("cards_per_node", lambda c: np.where(c.sn_k > 0, c.sn_k, c.gpn))


class SmartNICOffload(OffloadStrategy):
    offload = Offload.SMARTNIC
    label = "OptimusNIC"
    device = "SmartNIC"
    step_equation = "compute.optimizer_step_time"  # the card's roofline (optimizer.device_time)
    exposed_equation_name = "optimusnic.exposed_time"

    def compare_entries(self, cat, node):
        """One row per catalog SmartNIC; a card the node does not have is a what-if."""
        out = []
        for sn in cat.all("smartnic"):
            lacks = sn.name != node.smartnic
            out.append((f"OptimusNIC ({sn.name}{', what-if' if lacks else ''})", sn.name, lacks))
        return out

    def flags(self, opar, gfrac):
        return 0.0, 0.0, 1.0, 0.0

    def offered(self, hw):
        return hw.smartnic is not None and not hw.smartnic_implicit

    def devices(self, ctx, host):
        hw = ctx.hw
        k = cards_per_node(ctx)
        cap = hw.smartnic.memory_bytes if hw.smartnic is not None else 0.0
        per = eq.memory__bytes_per_offload_device(B_gpu=host.optimizer, G_n=ctx.gpn, K_n=k)
        spill = eq.memory__spill_bytes(B_dev=per, C=cap)
        return DeviceUse(per, host.optimizer, cap, k, spill, spill * k)

    def reasons(self, ctx, dev, host_capacity):
        k = cards_per_node(ctx)[..., 0]
        return (bit(dev.spill * k > host_capacity, Reason.SMARTNIC_SPILL_HOST)
                | bit((dev.spill > 0) & (ctx.spill_ok[..., 0] == 0), Reason.SMARTNIC_NO_SPILL))

    def reason_text(self, reason, info):
        if reason is Reason.SMARTNIC_SPILL_HOST:
            return (f"SmartNIC spill {fmt_gb(info['host'])} per node exceeds host RAM "
                    f"{fmt_gb(info['host_cap'])} usable on {info['node']}")
        if reason is Reason.SMARTNIC_NO_SPILL:
            cards = cards_per_gpu(info["per_gpu"], info["cap"])
            return (f"optimizer shard {fmt_gb(info['dev'])} per card exceeds "
                    f"{info['hw'].smartnic.name} memory {fmt_gb(info['cap'])} and spill to host "
                    f"is disabled (--no-spill); {_holding(cards, info['hw'])}")
        return None

    def fits_on_device(self, bytes_per_device, capacity, spill) -> bool:
        return spill == 0

    def devices_per_gpu_for_capacity(self, hw, bytes_per_gpu):
        return cards_per_gpu(bytes_per_gpu, hw.smartnic.memory_bytes)

    def notes(self, hw, layout, info):
        sn, out = hw.smartnic, []
        cards = cards_per_gpu(info["per_gpu"], sn.memory_bytes)
        if info["spill"] > 0 and layout.allow_spill:
            out.append(f"optimizer shard {fmt_gb(info['dev'])} per card exceeds {sn.name} memory "
                       f"{fmt_gb(sn.memory_bytes)}: {fmt_gb(info['spill'])} per card spills to "
                       f"host RAM ({_holding(cards, hw)})")
        if hw.smartnic_implicit:
            out.append(f"{hw.node.name} has no SmartNIC; assuming one {sn.name} per GPU "
                       "(--smartnic NAME)")
        return out

    def step_notes(self, offload):
        if offload.spill_to_host_bytes_per_device > 0:
            return ["SmartNIC spill streams from host RAM every step (in offload_transfer_s)"]
        return []

    def device_params(self, hw):
        from optimus_calc.evaluate.hw_params import smartnic_params
        return smartnic_params(hw)

    def device_name(self, hw):
        return f"SmartNIC {hw.smartnic.name}" if hw.smartnic is not None else "SmartNIC"

    def optimizer_device(self, hw, layout):
        k = layout.smartnics_per_node or hw.gpus_per_node
        name = hw.smartnic.name if hw.smartnic is not None else "SmartNIC"
        return f"{k} x {name} per node"

    @staticmethod
    def window(ctx, comp, dp_exposed_s):
        """Per stage, the time the card's layer-by-layer step overlaps with
        (optimusnic.overlap_window): one micro-batch's backward and forward and the exposed
        data-parallel time of that micro-batch (step.dp_exposed_time ``dp_exposed_s``)."""
        return eq.optimusnic__overlap_window(T_dp=dp_exposed_s, W_b=comp.W_b, W_f=comp.W_f,
                                             Z=ctx.z, m=ctx.m)

    @classmethod
    def window_of(cls, comp, comm, ctx):
        """:meth:`window` from the records (NIC sizing's reader, engine.evaluate_window)."""
        return cls.window(ctx, comp, comm.T_dpx)

    def optimizer(self, ctx, mem, comp, opt, dev):
        hw = ctx.hw
        if hw.smartnic is None:
            return None
        k = cards_per_node(ctx)
        snl = hw.smartnic_host_link
        snl_Bps = snl.bandwidth_Bps * snl.efficiency
        per_card = opt.shard * ctx.gpn / k
        # the card's roofline, the pipeline's update stage too (optimusnic.card_update_time:
        # the same device, bytes and FLOPs per parameter and state bytes)
        t_sn, _ = device_time(device_from(hw.smartnic, 1, ctx.asm), per_card, opt.bpp, opt.phi,
                              ctx.tr.optimizer_bytes)
        x_sn = eq.offload__smartnic_transfer_time(
            B_le=opt.link_Bps, B_sn=snl_Bps, G_n=ctx.gpn, K_n=k, P_r=opt.shard, S=dev.spill,
            b_g=ctx.tr.gradient_bytes, b_w=ctx.tr.weight_bytes)
        window = self.window(ctx, comp, opt.dp_tail_s)
        exposed = optimusnic.exposed(hw, ctx.tr, ctx.asm, shard_params=opt.shard,
                                     cards_per_node=k, spill_bytes=dev.spill, window_s=window,
                                     layers=ctx.st.layers, update=(per_card, t_sn))
        return OptimizerUse(t_sn, x_sn, exposed, window, 0.0)


SMARTNIC = SmartNICOffload()
