"""Vectorised memory and step time for a whole layout Space, through the compiled equations.

This mirrors evaluate/memory.py and evaluate/step.py term for term on numpy arrays (one call
per equation for all layouts, not one Python call per layout). tests/test_search.py checks that
both paths agree on random layouts. Pipeline stages: the first (most micro-batches in flight,
the embedding) and the last (logits, output head) are evaluated; the planner re-checks its top
candidates with the scalar path, which looks at every stage.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optimus_calc.equations import compiled as eq
from optimus_calc.evaluate.context import Hardware, check_precision
from optimus_calc.evaluate.optimizer import device_from, flops_per_param
from optimus_calc.evaluate.shapes import activation_coefficients, split_layers, stage_shapes
from optimus_calc.evaluate.step import layer_flops
from optimus_calc.search.space import OFFLOAD_CODES, Space
from optimus_calc.specs.model import Model
from optimus_calc.specs.training import Assumptions, Offload, Training
from optimus_calc.units import GB

NONE, CPU, NVME, SMARTNIC, SUPERCHIP = (OFFLOAD_CODES.index(o) for o in (
    Offload.NONE, Offload.CPU, Offload.NVME, Offload.SMARTNIC, Offload.SUPERCHIP))

REASONS = ["GPU memory exceeds capacity", "offloaded state exceeds host RAM",
           "optimizer state exceeds NVMe capacity", "SmartNIC spill exceeds host RAM"]


@dataclass
class Evaluated:
    gpu_bytes: np.ndarray
    step_s: np.ndarray
    mfu: np.ndarray
    tokens_per_s: np.ndarray
    feasible: np.ndarray
    reason: np.ndarray        # index into REASONS, -1 when feasible
    optimizer_s: np.ndarray
    optimizer_exposed_s: np.ndarray
    offload_bytes_per_device: np.ndarray


def _lookup(pp: np.ndarray, table: dict[int, float]) -> np.ndarray:
    keys = np.array(sorted(table), dtype=np.int64)
    vals = np.array([table[k] for k in keys], dtype=np.float64)
    return vals[np.searchsorted(keys, pp)]


def _opt_time(dev, P_n, beta_p, phi_p, state_bytes):
    """compute.optimizer_step_time for one device over arrays of parameter counts."""
    mem = dev.mem_Bps
    if dev.slow_tier_Bps and dev.capacity_bytes:
        state = P_n * state_bytes
        fast = np.minimum(1.0, dev.capacity_bytes / np.maximum(state, 1.0))
        mem = np.where(state > dev.capacity_bytes,
                       1.0 / (fast / dev.mem_Bps + (1 - fast) / dev.slow_tier_Bps), dev.mem_Bps)
    return eq.compute__optimizer_step_time(
        B_core=dev.core_Bps or 1.0, B_mem=mem, F_core=dev.core_flops or 1.0,
        F_dev=dev.device_flops or 1.0, P_n=P_n, beta_p=beta_p, c_n=int(dev.per_core),
        eta_m=dev.mem_eff, n_t=dev.cores if dev.per_core else 1, phi_p=phi_p)


def _ring(name: str, z, alpha, beta, n):
    return np.where(z > 0, getattr(eq, name)(alpha=alpha, beta=beta, n=n, z=z), 0.0)


def evaluate(space: Space, model: Model, hw: Hardware, tr: Training, asm: Assumptions,
             smartnics_per_node: int = 0) -> Evaluated:
    vw = space.views()
    t, pp, dp, cp, ep = vw["tp"], vw["pp"], vw["dp"], vw["cp"], vw["ep"]
    z, off, rc, sp, mb, v = vw["zero"], vw["offload"], vw["recompute"], vw["sp"], vw["mb"], vw["v"]
    f64 = lambda x: np.asarray(x, dtype=np.float64)  # noqa: E731
    gpn, s, gb = hw.gpus_per_node, tr.seq_len, tr.global_batch
    wb, gbytes, ob = tr.weight_bytes, tr.gradient_bytes, tr.optimizer_bytes
    # ---- stage parameters (first and last stage) per pipeline degree -------------------------
    first, last, lmax = {}, {}, {}
    for p in np.unique(pp).tolist():
        sh = stage_shapes(model, p)
        first[p], last[p] = sh[0], sh[-1]
        lmax[p] = max(split_layers(model.layers, p))
    A0, X0, R0, L0 = (_lookup(pp, {k: getattr(x, a) for k, x in first.items()})
                      for a in ("A", "X", "R", "layers"))
    A1, X1, R1, L1 = (_lookup(pp, {k: getattr(x, a) for k, x in last.items()})
                      for a in ("A", "X", "R", "layers"))
    Lm = _lookup(pp, lmax)
    o_g = np.isin(off, [CPU, NVME, SUPERCHIP]).astype(np.float64)
    o_o = (off != NONE).astype(np.float64)
    P0 = eq.memory__params_per_gpu(A=A0, R=R0, X=X0, e=ep, t=t)
    P1 = eq.memory__params_per_gpu(A=A1, R=R1, X=X1, e=ep, t=t)
    q_c, m_c = activation_coefficients(model)
    sigma = ((sp == 1) & (t > 1)).astype(np.float64)
    layer_args = dict(a=model.heads, b=mb, c=cp, d=int(tr.dropout), h=model.hidden, m_c=m_c,
                      phi=int(tr.flash_attention), q_c=q_c, s=s, sigma=sigma, t=t)
    act_layer = eq.memory__activation_layer_bytes(r=rc, **layer_args)
    m = gb // (dp * mb)
    bucket = np.where(z == 0, asm.ddp_bucket_MB * 1e6, asm.zero_bucket_params * gbytes)

    def stage_total(P, L, n_f, lam):
        W = eq.memory__weights_bytes(N_d=dp, P=P, Z=z, b_w=wb, o_w=0)
        G = eq.memory__gradients_bytes(N_d=dp, P=P, Z=z, b_g=gbytes, o_g=o_g)
        O = eq.memory__optimizer_bytes(N_d=dp, P=P, Z=z, b_o=ob, f_k=0.0, o_o=o_o)
        act = eq.memory__stage_activation_bytes(L_s=L, M_layer=act_layer, V=model.vocab, b=mb,
                                                beta_l=asm.logits_bytes, c=cp, lambda_l=lam,
                                                n_f=n_f, p=pp, s=s, t=t, v=v)
        over = eq.memory__overhead_bytes(G=G, M_act=act, M_bkt=bucket,
                                         M_ctx=asm.cuda_context_GB * GB, O=O,
                                         P_big=model.largest_layer_params, W=W, Z=z,
                                         f_frag=asm.fragmentation, t=t)
        return eq.memory__gpu_total_bytes(G=G, M_act=act, M_over=over, O=O, W=W)

    tot0 = stage_total(P0, L0, np.minimum(pp, m), f64(pp == 1))
    tot1 = stage_total(P1, L1, np.minimum(1, m), 1.0)
    worst_first = tot0 >= tot1
    gpu_bytes = np.where(worst_first, tot0, tot1)
    P = np.where(worst_first, P0, P1)
    # ---- offload devices ------------------------------------------------------------------------
    opt_off = eq.memory__optimizer_offloaded_bytes(N_d=dp, P=P, Z=z, b_o=ob, f_k=0.0, o_o=o_o)
    hgrad = eq.memory__host_gradients_bytes(N_d=dp, P=P, Z=z, b_h=asm.host_grad_bytes, o_g=o_g)
    host_cap = hw.node.host_memory_bytes * (1 - asm.host_reserved_fraction)
    k = smartnics_per_node or gpn
    sn_cap = hw.smartnic.memory_bytes if hw.smartnic else 0.0
    sn_dev = eq.memory__bytes_per_offload_device(B_gpu=opt_off, G_n=gpn, K_n=k)
    spill = eq.memory__spill_bytes(B_dev=sn_dev, C=sn_cap)
    drives = max(hw.node.nvme_drives, 1)
    nv_dev = eq.memory__bytes_per_offload_device(B_gpu=opt_off, G_n=gpn, K_n=drives)
    nv_host = gpn * (hgrad + asm.nvme_buffer_count * asm.nvme_buffer_params * 4)
    cpus = max(hw.node.cpus, 1)
    cpu_dev = (opt_off + hgrad) * gpn
    sup_dev = (opt_off + hgrad) * gpn / cpus
    nv_cap = hw.nvme.capacity_GB * GB if hw.nvme else 0.0
    reason = np.full(np.broadcast_shapes(gpu_bytes.shape, off.shape), -1, dtype=np.int64)
    reason = np.where((off == SMARTNIC) & (spill * k > host_cap), 3, reason)
    reason = np.where((off == NVME) & ((nv_dev > nv_cap) | (nv_host > host_cap)),
                      np.where(nv_dev > nv_cap, 2, 1), reason)
    reason = np.where((off == CPU) & (cpu_dev > host_cap), 1, reason)
    reason = np.where((off == SUPERCHIP) & (sup_dev > host_cap / cpus), 1, reason)
    reason = np.where(gpu_bytes > hw.gpu.memory_bytes, 0, reason)
    dev_bytes = np.select([off == SMARTNIC, off == NVME, off == CPU, off == SUPERCHIP],
                          [sn_dev, nv_dev, cpu_dev, sup_dev], 0.0)
    # ---- step time ------------------------------------------------------------------------------
    peak = check_precision(hw.gpu, tr.precision)
    f_l, f_h = layer_flops(model, s)
    f_r = np.array([0.0, 4.0 * s * model.heads * model.d_head, f_l])[rc]
    tokens = gb * s
    model_flops = float(eq.compute__step_flops(F_h=f_h, F_l=f_l, F_r=0, L=model.layers,
                                               tokens=tokens))
    tok_gpu = tokens / dp / (t * cp)
    compute = eq.compute__compute_time(FLOPs=tok_gpu * (3 * (Lm * f_l + f_h) + Lm * f_r),
                                       eta_g=asm.gemm_efficiency, peak=peak)
    act0 = eq.memory__activation_layer_bytes(r=0, **layer_args)
    elem = (asm.elementwise_factor + (rc == 2)) * act0 * Lm * m / (
        hw.gpu.hbm_Bps * asm.hbm_efficiency)
    busy = compute + elem
    bubble = eq.compute__pipeline_bubble(T_c=busy, m=m, p=pp, v=v)
    t_fwd, t_bwd = busy / 3, busy - busy / 3
    il, nic_link = hw.intra_link, hw.nic_host_link
    a_i, B_i = il.alpha_s, il.bandwidth_Bps * il.efficiency
    a_e = hw.nic.alpha_us * 1e-6
    nic = float(eq.comm__nic_bandwidth(B_line=hw.nic.line_rate_Bps, B_pcie=nic_link.bandwidth_Bps,
                                       eta_n=hw.nic.efficiency, eta_p=nic_link.efficiency))
    z_tp = (s / cp) * mb * model.hidden * wb
    ag = _ring("comm__ring_all_gather_time", z_tp, a_i, 1 / B_i, t)
    rs = _ring("comm__ring_reduce_scatter_time", z_tp, a_i, 1 / B_i, t)
    ar = _ring("comm__ring_all_reduce_time", z_tp, a_i, 1 / B_i, t)
    per = np.where(sp == 1, 4 * (ag + rs), 4 * ar) * (1 + 0.5 * (rc == 2))
    tp_comm = np.where(t > 1, (1 - asm.tp_overlap) * per * Lm * m, 0.0)
    def group(size, stride):
        """(alpha, 1/bandwidth) of a ring over ``size`` ranks ``stride`` apart (rails)."""
        per_node = np.where(stride < gpn, np.maximum(1, np.minimum(size, gpn // stride)), 1)
        nodes = np.maximum(1, size // per_node)
        share = per_node / gpn * max(hw.node.nics, 1)
        multi = nodes > 1
        bw = np.where(multi, eq.comm__ring_bandwidth(B_intra=B_i, B_nic=nic, K=share), B_i)
        al = np.where(multi, eq.comm__ring_alpha(N=nodes, alpha_e=a_e, alpha_i=a_i, n=size), a_i)
        return al, 1 / bw

    kv_d = model.n_kv * model.d_head
    a_cp, b_cp = group(cp, t)
    z_cp = 2 * s * mb * kv_d * wb / t
    ag_cp = _ring("comm__ring_all_gather_time", z_cp, a_cp, b_cp, cp)
    rs_cp = _ring("comm__ring_reduce_scatter_time", z_cp, a_cp, b_cp, cp)
    cp_comm = np.where(cp > 1, (1 - asm.cp_overlap) * (ag_cp * np.where(rc == 2, 2, 1) + rs_cp)
                       * Lm * m, 0.0)
    if model.is_moe:
        a_ep, b_ep = group(ep, t)
        z_ep = (s / cp) * mb * model.hidden * wb * model.top_k
        a2a = _ring("comm__all_to_all_time", z_ep, a_ep, b_ep, ep)
        ep_comm = np.where(ep > 1, 4 * a2a * (Lm * model.moe_layers / model.layers) * m, 0.0)
    else:
        ep_comm = 0.0
    inter = t * cp * dp >= gpn
    z_pp = (s / cp) * mb * model.hidden * wb / np.where(sp == 1, t, 1)
    p2p = eq.comm__p2p_time(alpha=np.where(inter, a_e, a_i),
                            beta=1 / np.where(inter, nic, B_i), z=z_pp)
    pp_comm = np.where(pp > 1, (1 - asm.pp_overlap) * 2 * m * v * p2p, 0.0)
    alpha, inv_bw = group(dp, t * cp)
    bw = 1 / inv_bw
    z_g, z_w = gbytes * P, wb * P
    bucket_bytes = asm.zero_bucket_params * gbytes  # as memory.py
    k_g = np.maximum(1, np.ceil(z_g / bucket_bytes))
    k_w = np.where(z == 3, np.maximum(1, Lm), np.maximum(1, np.ceil(z_w / bucket_bytes)))
    bucket_t = _ring("comm__ring_reduce_scatter_time", z_g / k_g, alpha, 1 / bw, dp)
    ar_one = _ring("comm__ring_all_reduce_time", z_g / k_g, alpha, 1 / bw, dp)
    t_ar = k_g * ar_one
    t_rs = k_g * bucket_t
    ag_eq = "comm__multicast_all_gather_time" if tr.multicast else "comm__ring_all_gather_time"
    t_ag = k_w * np.where(dp > 1, _ring(ag_eq, z_w / k_w, alpha, 1 / bw, dp), 0.0)
    ex = lambda T, W: eq.compute__exposed_time(T_opt=T, T_x=0, W=W)  # noqa: E731
    dp_exposed = np.select(
        [dp == 1, z == 0, z == 3],
        [0.0, ex(t_ar, t_bwd) + np.minimum(t_ar, ar_one),
         ex(t_ag, t_fwd) + ex(t_rs + t_ag, t_bwd) + np.minimum(t_rs, bucket_t)],
        ex(t_rs, t_bwd) + np.minimum(t_rs, bucket_t) + ex(t_ag, t_fwd))
    # ---- optimizer --------------------------------------------------------------------------------
    shard = P / np.where(z >= 1, dp, 1)
    phi = flops_per_param(tr.optimizer)
    sgd = tr.optimizer.value == "sgd"
    base_b = 18.0 if sgd else 26.0
    host = hw.gpu_host_link
    link = host.bandwidth_Bps * host.efficiency
    t_gpu = _opt_time(device_from(hw.gpu, 1, asm), shard, base_b + gbytes, phi, ob)
    t_cpu = _opt_time(device_from(hw.cpu, hw.node.cpus, asm), shard * gpn,
                      base_b + asm.host_grad_bytes, phi, ob)
    x_cpu = shard * (gbytes + wb) / link
    if hw.nvme is not None and hw.node.nvme_drives:
        state = shard * gpn * ob
        x_nvme = x_cpu + state / (drives * hw.nvme.read_GBps * 1e9) + state / (
            drives * hw.nvme.write_GBps * 1e9)
    else:
        x_nvme = x_cpu
    opt_s = np.select([off == NONE, off == CPU, off == NVME], [t_gpu, t_cpu, t_cpu], 0.0)
    opt_ex = np.select([off == NONE, off == CPU, off == NVME],
                       [t_gpu, eq.compute__exposed_time(T_opt=t_cpu, T_x=x_cpu, W=0),
                        eq.compute__exposed_time(T_opt=t_cpu, T_x=x_nvme, W=0)], 0.0)
    if hw.smartnic is not None:
        snl = hw.smartnic_host_link
        path = min(link, snl.bandwidth_Bps * snl.efficiency)
        t_sn = _opt_time(device_from(hw.smartnic, 1, asm), shard * gpn / k, base_b + gbytes,
                         phi, ob)
        x_sn = shard * gpn / k * (gbytes + wb) / path + 2 * spill / (
            snl.bandwidth_Bps * snl.efficiency)
        opt_s = np.where(off == SMARTNIC, t_sn, opt_s)
        opt_ex = np.where(off == SMARTNIC, eq.compute__exposed_time(T_opt=t_sn, T_x=x_sn,
                                                                     W=t_fwd + t_bwd), opt_ex)
    if hw.node.superchip:
        t_gr = _opt_time(device_from(hw.cpu, 1, asm), shard * gpn / cpus,
                         base_b + asm.host_grad_bytes, phi, ob)
        x_gr = shard * (asm.host_grad_bytes + wb) / link
        opt_s = np.where(off == SUPERCHIP, t_gr, opt_s)
        opt_ex = np.where(off == SUPERCHIP, eq.compute__exposed_time(T_opt=t_gr, T_x=x_gr,
                                                                      W=t_bwd), opt_ex)
    step = busy + bubble + tp_comm + cp_comm + ep_comm + pp_comm + dp_exposed + opt_ex
    fin = space.finish
    step = fin(step)
    reason = fin(reason)
    return Evaluated(gpu_bytes=fin(gpu_bytes), step_s=step,
                     mfu=model_flops / (step * hw.gpus * peak), tokens_per_s=tokens / step,
                     feasible=reason < 0, reason=reason, optimizer_s=fin(opt_s),
                     optimizer_exposed_s=fin(opt_ex), offload_bytes_per_device=fin(dev_bytes))
