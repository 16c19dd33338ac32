"""Memory of one layout: per-GPU breakdown for every pipeline stage, offload devices, fit.

All arithmetic goes through :mod:`optimus_calc.equations.compiled`, generated from the sympy
equations in :mod:`optimus_calc.equations.memory`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from optimus_calc.equations import compiled as eq
from optimus_calc.evaluate.context import OFFLOAD_DEVICE, Hardware
from optimus_calc.evaluate.shapes import StageShape, activation_coefficients, stage_shapes
from optimus_calc.specs.model import BareModel, Model
from optimus_calc.specs.training import Assumptions, Layout, Offload, Training
from optimus_calc.units import GB, fmt_gb


@dataclass
class StageMemory:
    index: int
    layers: int
    params: float
    weights_bytes: float
    gradients_bytes: float
    optimizer_bytes: float
    activations_bytes: float
    overhead_bytes: float
    total_bytes: float
    micro_batches_in_flight: int
    inputs: dict[str, dict[str, float]] = field(default_factory=dict, repr=False)


@dataclass
class OffloadMemory:
    target: Offload
    device: str
    devices: int                       # in the whole cluster
    devices_per_node: int
    bytes_per_gpu: float               # what one GPU moves off (optimizer shard etc.)
    bytes_per_device: float
    capacity_bytes_per_device: float
    spill_to_host_bytes_per_device: float
    fits_on_device: bool
    host_bytes_per_node: float
    host_capacity_bytes_per_node: float
    devices_per_gpu_for_capacity: int  # cards per GPU that would hold the shard (SmartNIC)


@dataclass
class MemoryEstimate:
    stages: list[StageMemory]
    worst: StageMemory
    capacity_bytes: float
    offload: OffloadMemory
    fits: bool
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    model_states_total_bytes: float = 0.0
    micro_batches: int = 1

    @property
    def headroom_bytes(self) -> float:
        return self.capacity_bytes - self.worst.total_bytes


def offload_flags(layout: Layout) -> tuple[int, int, int, float]:
    """(o_w, o_g, o_o, f_k) for the offload target."""
    o = layout.offload
    if o is Offload.NONE:
        return 0, 0, 0, 0.0
    if o is Offload.SMARTNIC:
        return 0, 0, 1, 0.0  # OptimusNIC: gradients stream through, the GPU keeps 4D/N_p
    if o is Offload.SUPERCHIP:
        return 0, 1, 1, layout.superchip_gpu_fraction
    return int(layout.offload_params), 1, 1, 0.0  # cpu, nvme


def _call(inputs: dict, name: str, **kw) -> float:
    """Evaluate a compiled equation and remember its inputs (for `explain`)."""
    inputs[name] = {k: float(v) for k, v in kw.items()}
    return float(getattr(eq, name.replace(".", "__"))(**kw))


def _stage_memory(sh: StageShape, model: Model | BareModel, hw: Hardware, layout: Layout,
                  tr: Training, asm: Assumptions, n_micro: int, flags) -> StageMemory:
    o_w, o_g, o_o, f_k = flags
    ins: dict[str, dict[str, float]] = {}
    P = _call(ins, "memory.params_per_gpu", A=sh.A, R=sh.R, X=sh.X, e=layout.ep, t=layout.tp)
    z = int(layout.zero)
    W = _call(ins, "memory.weights_bytes", N_d=layout.dp, P=P, Z=z, b_w=tr.weight_bytes,
              o_w=o_w)
    G = _call(ins, "memory.gradients_bytes", N_d=layout.dp, P=P, Z=z, b_g=tr.gradient_bytes,
              o_g=o_g)
    O = _call(ins, "memory.optimizer_bytes", N_d=layout.dp, P=P, Z=z, b_o=tr.optimizer_bytes,
              f_k=f_k, o_o=o_o)
    in_flight = min(layout.pp - sh.index, n_micro)
    if tr.model_states_only:
        total = _call(ins, "memory.gpu_total_bytes", G=G, M_act=0.0, M_over=0.0, O=O, W=W)
        return StageMemory(sh.index, sh.layers, P, W, G, O, 0.0, 0.0, total, in_flight, ins)
    assert isinstance(model, Model)
    q_c, m_c = activation_coefficients(model)
    per_layer = _call(
        ins, "memory.activation_layer_bytes",
        a=model.heads, b=tr.micro_batch, c=layout.cp, d=int(tr.dropout), h=model.hidden,
        m_c=m_c, phi=int(tr.flash_attention), q_c=q_c, r=tr.recompute.code, s=tr.seq_len,
        sigma=int(tr.sequence_parallel and layout.tp > 1), t=layout.tp)
    act = _call(
        ins, "memory.stage_activation_bytes",
        L_s=sh.layers, M_layer=per_layer, V=model.vocab, b=tr.micro_batch,
        beta_l=asm.logits_bytes, c=layout.cp, lambda_l=int(sh.last), n_f=in_flight,
        p=layout.pp, s=tr.seq_len, t=layout.tp, v=layout.interleave)
    bucket = (asm.ddp_bucket_MB * 1e6 if layout.zero == 0
              else asm.zero_bucket_params * tr.gradient_bytes)
    over = _call(
        ins, "memory.overhead_bytes",
        G=G, M_act=act, M_bkt=bucket, M_ctx=asm.cuda_context_GB * GB, O=O,
        P_big=model.largest_layer_params, W=W, Z=z, f_frag=asm.fragmentation, t=layout.tp)
    total = _call(ins, "memory.gpu_total_bytes", G=G, M_act=act, M_over=over, O=O, W=W)
    return StageMemory(sh.index, sh.layers, P, W, G, O, act, over, total, in_flight, ins)


def _offload(worst: StageMemory, hw: Hardware, layout: Layout, tr: Training, asm: Assumptions,
             flags, reasons: list[str], notes: list[str]) -> OffloadMemory:
    o_w, o_g, o_o, f_k = flags
    z, P, G_n, ins = int(layout.zero), worst.params, hw.gpus_per_node, worst.inputs
    opt = _call(ins, "memory.optimizer_offloaded_bytes", N_d=layout.dp, P=P, Z=z,
                b_o=tr.optimizer_bytes, f_k=f_k, o_o=o_o)
    hgrad = _call(ins, "memory.host_gradients_bytes", N_d=layout.dp, P=P, Z=z,
                  b_h=asm.host_grad_bytes, o_g=o_g)
    hw_w = _call(ins, "memory.host_weights_bytes", N_d=layout.dp, P=P, Z=z,
                 b_w=tr.weight_bytes, o_w=o_w)
    host_cap = hw.node.host_memory_bytes * (1 - asm.host_reserved_fraction)
    target = layout.offload
    name = OFFLOAD_DEVICE[target]
    if target is Offload.NONE:
        return OffloadMemory(target, name, 0, 0, 0.0, 0.0, 0.0, 0.0, True, 0.0, host_cap, 0)
    if target is Offload.SMARTNIC:
        sn = hw.smartnic
        assert sn is not None
        k = layout.smartnics_per_node or G_n
        per_dev = _call(ins, "memory.bytes_per_offload_device", B_gpu=opt, G_n=G_n, K_n=k)
        spill = _call(ins, "memory.spill_bytes", B_dev=per_dev, C=sn.memory_bytes)
        per_gpu_cards = max(1, math.ceil(opt / sn.memory_bytes)) if opt > 0 else 0
        host = spill * k
        if spill > 0:
            msg = (f"optimizer shard {fmt_gb(per_dev)} per card exceeds {sn.name} memory "
                   f"{fmt_gb(sn.memory_bytes)}")
            if layout.allow_spill:
                notes.append(f"{msg}: {fmt_gb(spill)} per card spills to host RAM "
                             f"({per_gpu_cards} cards per GPU would hold it)")
            else:
                reasons.append(f"{msg} and spill to host is disabled (--no-spill); "
                               f"{per_gpu_cards} cards per GPU would hold it")
        if host > host_cap:
            reasons.append(f"SmartNIC spill {fmt_gb(host)} per node exceeds host RAM "
                           f"{fmt_gb(host_cap)} usable on {hw.node.name}")
        return OffloadMemory(target, f"SmartNIC {sn.name}", k * hw.nodes, k, opt, per_dev,
                             sn.memory_bytes, spill, spill == 0, host, host_cap, per_gpu_cards)
    if target is Offload.NVME:
        drives = hw.node.nvme_drives
        if not drives or hw.nvme is None:
            reasons.append(f"{hw.node.name} has no NVMe drives for ZeRO-Infinity")
            return OffloadMemory(target, name, 0, 0, opt + hw_w, 0.0, 0.0, 0.0, False, 0.0,
                                 host_cap, 0)
        per_dev = _call(ins, "memory.bytes_per_offload_device", B_gpu=opt + hw_w, G_n=G_n,
                        K_n=drives)
        pinned = asm.nvme_buffer_count * asm.nvme_buffer_params * 4
        host = G_n * (hgrad + pinned)
        cap = hw.nvme.capacity_GB * GB
        if per_dev > cap:
            reasons.append(f"optimizer state {fmt_gb(per_dev)} per drive exceeds {hw.nvme.name} "
                           f"capacity {fmt_gb(cap)}")
        if host > host_cap:
            reasons.append(f"host buffers and fp32 gradients {fmt_gb(host)} per node exceed host "
                           f"RAM {fmt_gb(host_cap)} usable on {hw.node.name}")
        return OffloadMemory(target, f"NVMe {hw.nvme.name}", drives * hw.nodes, drives,
                             opt + hw_w, per_dev, cap, 0.0, per_dev <= cap, host, host_cap, 0)
    if target is Offload.SUPERCHIP and not hw.node.superchip:
        reasons.append(f"{hw.node.name} is not a superchip node (no NVLink-C2C CPU); "
                       "use --node gh200 or gh200-nvl2")
    per_gpu = opt + hgrad + hw_w
    if target is Offload.SUPERCHIP:
        k = hw.node.cpus
        per_dev = _call(ins, "memory.bytes_per_offload_device", B_gpu=per_gpu, G_n=G_n, K_n=k)
        cap = host_cap / k
        if per_dev > cap:
            reasons.append(f"offloaded state {fmt_gb(per_dev)} per Grace exceeds its memory "
                           f"{fmt_gb(cap)} usable")
        return OffloadMemory(target, f"{hw.cpu.name} memory", k * hw.nodes, k, per_gpu, per_dev,
                             cap, 0.0, per_dev <= cap, per_dev * k, host_cap, 0)
    per_dev = _call(ins, "memory.bytes_per_offload_device", B_gpu=per_gpu, G_n=G_n, K_n=1)
    if per_dev > host_cap:
        reasons.append(f"offloaded state {fmt_gb(per_dev)} per node exceeds host RAM "
                       f"{fmt_gb(host_cap)} usable on {hw.node.name}")
    return OffloadMemory(target, f"host RAM ({hw.node.cpus} x {hw.cpu.name})", hw.nodes, 1,
                         per_gpu, per_dev, host_cap, 0.0, per_dev <= host_cap, per_dev, host_cap, 0)


def estimate_memory(model: Model | BareModel, hw: Hardware, layout: Layout, tr: Training,
                    asm: Assumptions) -> MemoryEstimate:
    flags = offload_flags(layout)
    n_micro = tr.global_batch // (layout.dp * tr.micro_batch)
    stages = [_stage_memory(sh, model, hw, layout, tr, asm, n_micro, flags)
              for sh in stage_shapes(model, layout.pp)]
    worst = max(stages, key=lambda st: (st.total_bytes, -st.index))
    reasons: list[str] = []
    notes: list[str] = []
    cap = hw.gpu.memory_bytes
    if worst.total_bytes > cap:
        reasons.append(
            f"GPU memory {fmt_gb(worst.total_bytes)} on stage {worst.index} exceeds "
            f"{hw.gpu.name} capacity {fmt_gb(cap)} (model states "
            f"{fmt_gb(worst.weights_bytes + worst.gradients_bytes + worst.optimizer_bytes)}, "
            f"activations {fmt_gb(worst.activations_bytes)}, overheads "
            f"{fmt_gb(worst.overhead_bytes)})")
    off = _offload(worst, hw, layout, tr, asm, flags, reasons, notes)
    per_param = tr.weight_bytes + tr.gradient_bytes + tr.optimizer_bytes
    total_states = model.total_params * per_param
    if isinstance(model, BareModel):
        notes.append(f"{model.name} is a bare parameter count: parameters split evenly over "
                     "pipeline stages; no activations")
    if layout.offload is Offload.SMARTNIC and hw.smartnic_implicit:
        notes.append(f"{hw.node.name} has no SmartNIC; assuming one {hw.smartnic.name} per GPU "
                     "(--smartnic NAME)")
    return MemoryEstimate(stages=stages, worst=worst, capacity_bytes=cap, offload=off,
                          fits=not reasons, reasons=reasons, notes=notes,
                          model_states_total_bytes=total_states, micro_batches=n_micro)
