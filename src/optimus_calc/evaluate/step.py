"""Step time of one layout: compute roofline, bubble, TP/PP/DP communication with overlap
rules, and the optimizer step on the device that owns the state (per offload strategy)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from optimus_calc.equations import compiled as eq
from optimus_calc.evaluate import comm as C
from optimus_calc.evaluate.context import Hardware, check_precision
from optimus_calc.evaluate.memory import MemoryEstimate
from optimus_calc.evaluate.optimizer import Impl, device_from, optimizer_step
from optimus_calc.evaluate.shapes import split_layers
from optimus_calc.specs.model import Model
from optimus_calc.specs.training import Assumptions, Layout, Offload, Recompute, Training


@dataclass
class StepEstimate:
    step_time_s: float
    compute_s: float
    elementwise_s: float
    bubble_s: float
    tp_comm_s: float
    cp_comm_s: float
    ep_comm_s: float
    pp_comm_s: float
    dp_comm_s: float
    dp_comm_exposed_s: float
    optimizer_s: float
    optimizer_exposed_s: float
    offload_transfer_s: float
    model_flops: float
    hardware_flops: float
    mfu: float
    tflops_per_gpu: float
    tokens_per_s: float
    optimizer_device: str
    notes: list[str] = field(default_factory=list)


def layer_flops(model: Model, seq: int) -> tuple[float, float]:
    """(F_l averaged over layers, F_h): forward FLOPs per token of a layer and of the logits."""
    q_d, kv_d = model.heads * model.d_head, model.n_kv * model.d_head
    m_m = model.ffn_type.matrices
    dense = float(eq.compute__flops_per_token_layer(E=0, f=model.ffn_hidden, h=model.hidden,
                                                    k_e=1, kv_d=kv_d, m_m=m_m, q_d=q_d, s=seq))
    f_l = dense
    if model.is_moe:
        moe = float(eq.compute__flops_per_token_layer(
            E=model.experts, f=model.expert_ffn, h=model.hidden,
            k_e=model.top_k + model.shared_experts, kv_d=kv_d, m_m=m_m, q_d=q_d, s=seq))
        f_l = (model.dense_layers * dense + model.moe_layers * moe) / model.layers
    return f_l, 2.0 * model.hidden * model.vocab


def recompute_flops(model: Model, seq: int, mode: Recompute, f_l: float) -> float:
    if mode is Recompute.FULL:
        return f_l
    if mode is Recompute.SELECTIVE:  # the attention core: scores and values, 4 s q_d
        return 4.0 * seq * model.heads * model.d_head
    return 0.0


def _group_topology(hw: Hardware, size: int, stride: int, nic_Bps: float) -> C.Topology:
    """Ranks ``stride`` apart: members per node, nodes spanned, and the group's NIC share."""
    gpn = hw.gpus_per_node
    per_node = max(1, min(size, gpn // stride)) if stride < gpn else 1
    nodes = max(1, size // per_node)
    share = per_node / gpn * max(hw.node.nics, 1)  # rail-optimised: the group's NICs
    il = hw.intra_link
    return C.Topology(size, nodes, per_node, il.alpha_s, hw.nic.alpha_us * 1e-6,
                      il.bandwidth_Bps * il.efficiency, nic_Bps, share,  # type: ignore[arg-type]
                      il.name, f"{share:g} x {hw.nic.name}")


def _ring(coll: C.Collective, z: float, topo: C.Topology) -> float:
    return C.collective_time(coll, C.Algo.RING, z, topo).time_s if z > 0 else 0.0


def estimate_step(model: Model, hw: Hardware, layout: Layout, tr: Training, asm: Assumptions,
                  mem: MemoryEstimate) -> StepEstimate:
    t, pp, dp, cp, v = layout.tp, layout.pp, layout.dp, layout.cp, layout.interleave
    s, b = tr.seq_len, tr.micro_batch
    m = tr.global_batch // (dp * b)
    peak = check_precision(hw.gpu, tr.precision)
    notes: list[str] = []
    f_l, f_h = layer_flops(model, s)
    f_r = recompute_flops(model, s, tr.recompute, f_l)
    tokens = tr.global_batch * s
    model_flops = float(eq.compute__step_flops(F_h=f_h, F_l=f_l, F_r=0, L=model.layers,
                                               tokens=tokens))
    hw_flops = float(eq.compute__step_flops(F_h=f_h, F_l=f_l, F_r=f_r, L=model.layers,
                                            tokens=tokens))
    # the most loaded stage: most layers, plus the logits on the last stage
    layers = max(split_layers(model.layers, pp))
    tok_gpu = tokens / dp / (t * cp)
    stage_flops = tok_gpu * (3 * (layers * f_l + f_h) + layers * f_r)
    compute = float(eq.compute__compute_time(FLOPs=stage_flops, eta_g=asm.gemm_efficiency,
                                             peak=peak))
    worst = mem.worst
    per_layer_act = worst.inputs.get("memory.activation_layer_bytes")
    act_layer = float(eq.memory__activation_layer_bytes(**{**per_layer_act, "r": 0})) \
        if per_layer_act else 0.0
    passes = asm.elementwise_factor + (1 if tr.recompute is Recompute.FULL else 0)
    elem = passes * act_layer * layers * m / (hw.gpu.hbm_Bps * asm.hbm_efficiency)
    bubble = float(eq.compute__pipeline_bubble(T_c=compute + elem, m=m, p=pp, v=v))
    t_fwd = (compute + elem) / 3  # forward is a third of forward + backward FLOPs
    t_bwd = (compute + elem) - t_fwd

    nic_Bps = float(eq.comm__nic_bandwidth(
        B_line=hw.nic.line_rate_Bps, B_pcie=hw.nic_host_link.bandwidth_Bps,
        eta_n=hw.nic.efficiency, eta_p=hw.nic_host_link.efficiency))
    wb = tr.weight_bytes
    # TP: per layer per micro-batch, SP: 4 all-gathers + 4 reduce-scatters (fwd + bwd),
    # else 4 all-reduces (Korthikanti et al. 2022 section 4.2.2); full recompute adds the forward
    tp_topo = _group_topology(hw, t, 1, nic_Bps)
    z_tp = (s / cp) * b * model.hidden * wb
    if t > 1:
        extra = 0.5 if tr.recompute is Recompute.FULL else 0.0
        if tr.sequence_parallel:
            per = 4 * (_ring(C.Collective.ALL_GATHER, z_tp, tp_topo)
                       + _ring(C.Collective.REDUCE_SCATTER, z_tp, tp_topo))
        else:
            per = 4 * _ring(C.Collective.ALL_REDUCE, z_tp, tp_topo)
        tp_comm = (1 - asm.tp_overlap) * per * (1 + extra) * layers * m
    else:
        tp_comm = 0.0
    # CP: K and V all-gathered over the CP group in forward, their gradients reduce-scattered
    # in backward (ring attention); full recompute gathers again. Ranks are TP apart.
    kv_d = model.n_kv * model.d_head
    if cp > 1:
        cp_topo = _group_topology(hw, cp, t, nic_Bps)
        z_cp = 2 * s * b * kv_d * wb / t
        ag_cp = _ring(C.Collective.ALL_GATHER, z_cp, cp_topo)
        per_cp = ag_cp * (2 if tr.recompute is Recompute.FULL else 1) + _ring(
            C.Collective.REDUCE_SCATTER, z_cp, cp_topo)
        cp_comm = (1 - asm.cp_overlap) * per_cp * layers * m
    else:
        cp_comm = 0.0
    # EP: each MoE layer dispatches and combines its tokens' top-k copies with all-to-alls,
    # forward and backward (4 per layer per micro-batch); ranks are TP apart
    if layout.ep > 1 and model.is_moe:
        ep_topo = _group_topology(hw, layout.ep, t, nic_Bps)
        z_ep = (s / cp) * b * model.hidden * wb * model.top_k
        moe_stage = layers * model.moe_layers / model.layers
        ep_comm = 4 * _ring(C.Collective.ALL_TO_ALL, z_ep, ep_topo) * moe_stage * m
    else:
        ep_comm = 0.0
    # PP: one activation forward and one gradient backward per micro-batch per model chunk
    if pp > 1:
        inter = t * cp * dp >= hw.gpus_per_node
        z_pp = (s / cp) * b * model.hidden * wb / (t if tr.sequence_parallel else 1)
        link_Bps = nic_Bps if inter else hw.intra_link.bandwidth_Bps * hw.intra_link.efficiency
        alpha = hw.nic.alpha_us * 1e-6 if inter else hw.intra_link.alpha_s
        p2p = float(eq.comm__p2p_time(alpha=alpha, beta=1.0 / link_Bps, z=z_pp))
        pp_comm = (1 - asm.pp_overlap) * 2 * m * v * p2p
    else:
        pp_comm = 0.0
    # DP: gradients reduce-scattered (ZeRO 1-3) or all-reduced (ZeRO 0) in buckets of
    # zero_bucket_params elements; ZeRO-3 gathers parameters layer by layer (each collective
    # pays its own latency); ZeRO-1/2 gather the updated parameters in buckets too
    dp_topo = _group_topology(hw, dp, t * cp, nic_Bps)
    P = worst.params
    z_g, z_w = tr.gradient_bytes * P, wb * P
    bucket_bytes = asm.zero_bucket_params * tr.gradient_bytes  # as memory.py
    k_g = max(1, math.ceil(z_g / bucket_bytes))
    k_w = max(1, layers) if layout.zero == 3 else max(1, math.ceil(z_w / bucket_bytes))
    bucket_t = _ring(C.Collective.REDUCE_SCATTER, z_g / k_g, dp_topo)
    if dp == 1:
        dp_comm = dp_exposed = 0.0
    elif layout.zero == 0:
        t_ar = k_g * _ring(C.Collective.ALL_REDUCE, z_g / k_g, dp_topo)
        dp_comm = t_ar
        dp_exposed = float(eq.compute__exposed_time(T_opt=t_ar, T_x=0, W=t_bwd)) + min(
            t_ar, _ring(C.Collective.ALL_REDUCE, z_g / k_g, dp_topo))
    else:
        t_rs = k_g * bucket_t
        algo = C.Algo.MULTICAST if tr.multicast else C.Algo.RING
        t_ag = k_w * (C.collective_time(C.Collective.ALL_GATHER, algo, z_w / k_w, dp_topo).time_s
                      if z_w > 0 else 0.0)
        if layout.zero == 3:  # gathers in forward (prefetched) and again in backward: 1.5x
            dp_comm = t_rs + 2 * t_ag
            dp_exposed = (float(eq.compute__exposed_time(T_opt=t_ag, T_x=0, W=t_fwd))
                          + float(eq.compute__exposed_time(T_opt=t_rs + t_ag, T_x=0, W=t_bwd))
                          + min(t_rs, bucket_t))
        else:
            dp_comm = t_rs + t_ag
            dp_exposed = (float(eq.compute__exposed_time(T_opt=t_rs, T_x=0, W=t_bwd))
                          + min(t_rs, bucket_t)
                          + float(eq.compute__exposed_time(T_opt=t_ag, T_x=0, W=t_fwd)))
    opt_s, opt_exposed, transfer, device = _optimizer(model, hw, layout, tr, asm, mem,
                                                      t_fwd, t_bwd, notes)
    step = compute + elem + bubble + tp_comm + cp_comm + ep_comm + pp_comm + dp_exposed + opt_exposed
    n_gpus = hw.gpus
    mfu = model_flops / (step * n_gpus * peak) if step > 0 else 0.0
    return StepEstimate(
        step_time_s=step, compute_s=compute, elementwise_s=elem, bubble_s=bubble,
        tp_comm_s=tp_comm, cp_comm_s=cp_comm, ep_comm_s=ep_comm, pp_comm_s=pp_comm, dp_comm_s=dp_comm, dp_comm_exposed_s=dp_exposed,
        optimizer_s=opt_s, optimizer_exposed_s=opt_exposed, offload_transfer_s=transfer,
        model_flops=model_flops, hardware_flops=hw_flops, mfu=mfu,
        tflops_per_gpu=hw_flops / step / n_gpus / 1e12 if step else 0.0,
        tokens_per_s=tokens / step if step else 0.0, optimizer_device=device, notes=notes)


def _optimizer(model, hw: Hardware, layout: Layout, tr: Training, asm: Assumptions,
               mem: MemoryEstimate, t_fwd: float, t_bwd: float, notes: list[str]):
    """(optimizer_s, optimizer_exposed_s, offload_transfer_s, device name)."""
    P = mem.worst.params
    shard = P / (layout.dp if layout.zero >= 1 else 1)
    g_n = hw.gpus_per_node
    target = layout.offload
    gpu_dev = device_from(hw.gpu, 1, asm)
    if target is Offload.NONE:
        st = optimizer_step(gpu_dev, shard, tr.optimizer, Impl.FUSED, tr.gradient_bytes,
                            state_bytes=tr.optimizer_bytes)
        return st.time_s, st.time_s, 0.0, hw.gpu.name
    host = hw.gpu_host_link
    link_Bps = host.bandwidth_Bps * host.efficiency
    if target in (Offload.CPU, Offload.NVME):
        cpu = device_from(hw.cpu, hw.node.cpus, asm)
        st = optimizer_step(cpu, shard * g_n, tr.optimizer, Impl.FUSED, asm.host_grad_bytes,
                            state_bytes=tr.optimizer_bytes)
        x = shard * (tr.gradient_bytes + tr.weight_bytes) / link_Bps
        if target is Offload.NVME and hw.nvme is not None and hw.node.nvme_drives:
            state = shard * g_n * tr.optimizer_bytes
            d = hw.node.nvme_drives
            x += state / (d * hw.nvme.read_GBps * 1e9) + state / (d * hw.nvme.write_GBps * 1e9)
        exposed = float(eq.compute__exposed_time(T_opt=st.time_s, T_x=x, W=0))
        return st.time_s, exposed, x, f"{hw.node.cpus} x {hw.cpu.name}"
    if target is Offload.SMARTNIC:
        sn = hw.smartnic
        k = layout.smartnics_per_node or g_n
        dev = device_from(sn, 1, asm)
        st = optimizer_step(dev, shard * g_n / k, tr.optimizer, Impl.FUSED, tr.gradient_bytes,
                            state_bytes=tr.optimizer_bytes)
        nic_link = hw.smartnic_host_link
        path = min(link_Bps, nic_link.bandwidth_Bps * nic_link.efficiency)
        x = shard * g_n / k * (tr.gradient_bytes + tr.weight_bytes) / path
        spill = mem.offload.spill_to_host_bytes_per_device
        if spill > 0:  # the spilled state streams from host RAM and back every step
            x += 2 * spill / (nic_link.bandwidth_Bps * nic_link.efficiency)
            notes.append("SmartNIC spill streams from host RAM every step (in offload_transfer_s)")
        exposed = float(eq.compute__exposed_time(T_opt=st.time_s, T_x=x, W=t_fwd + t_bwd))
        return st.time_s, exposed, x, f"{k} x {sn.name} per node"
    # superchip (SuperOffload): Grace steps (1 - f_k) of the shard, overlapped with backward
    f_k = layout.superchip_gpu_fraction
    grace = device_from(hw.cpu, 1, asm)
    per_cpu = shard * (1 - f_k) * g_n / max(hw.node.cpus, 1)
    st = optimizer_step(grace, per_cpu, tr.optimizer, Impl.FUSED, asm.host_grad_bytes,
                            state_bytes=tr.optimizer_bytes)
    x = shard * (1 - f_k) * (asm.host_grad_bytes + tr.weight_bytes) / link_Bps
    tail = optimizer_step(gpu_dev, shard * f_k, tr.optimizer, Impl.FUSED,
                          tr.gradient_bytes, state_bytes=tr.optimizer_bytes).time_s if f_k > 0 else 0.0
    exposed = float(eq.compute__exposed_time(T_opt=st.time_s, T_x=x, W=t_bwd)) + tail
    return st.time_s + tail, exposed, x, f"{hw.cpu.name} (NVLink-C2C)"
