"""The one evaluator: a batch of layouts in, memory per part and stage, feasibility with reasons,
and every step-time term out, as arrays.

Every number is a call of a compiled equation (:mod:`optimus_calc.equations.compiled`,
generated from the sympy registry that `explain` prints). `memory`, `step`, `compare`, `fit` and
`nics` evaluate a batch of one; the planner evaluates its whole grid with this same function.

Pipeline stages are a trailing array axis. With ``all_stages`` every stage is evaluated (one
layout); otherwise each pipeline degree's stages are reduced to the stages that can bind: a
stage whose shape (layers, MoE layers, parameters, first/last) repeats an earlier stage's holds
no more in-flight micro-batches than it (1F1B: min(p - i, m) falls with i) and takes the same
time, so it can never be the most loaded. The result is exact, not a sample of stages.
"""

from __future__ import annotations

import numpy as np

from optimus_calc.equations import compiled as eq
from optimus_calc.evaluate.batch import (CPU, NONE, NVME, R_FULL, R_NONE, R_SELECTIVE,
                                         SMARTNIC, SUPERCHIP, Batch)
from optimus_calc.evaluate.efficiency import compute_efficiency
from optimus_calc.evaluate.context import Hardware, check_precision
from optimus_calc.evaluate.optimizer import Impl, bytes_per_param, device_from, device_time
from optimus_calc.evaluate.optimizer import flops_per_param
from optimus_calc.evaluate.offload_step import (HostCPU, Overlap, exposed_step,
                                                nvme_optimizer_step,
                                                param_offload_traffic, persistent_params,
                                                zero3_exposed_gather)
from optimus_calc.evaluate.offload_schedules import deepspeed_cpu_step, superoffload_step
from optimus_calc.evaluate.evaluation import Evaluation, _pick, stage_value  # noqa: F401
from optimus_calc.evaluate.reasons import Reason, primary_reason, reasons_of  # noqa: F401
from optimus_calc.evaluate.shapes import activation_coefficients
from optimus_calc.evaluate.stages import StageTable, sorted_unique, stage_table  # noqa: F401
from optimus_calc.specs.model import BareModel, Model
from optimus_calc.specs.training import Assumptions, Training
from optimus_calc.units import GB


class _Rec:
    """Calls compiled equations; with ``on`` it remembers their inputs for `explain`."""

    def __init__(self, on: bool):
        self.on, self.inputs = on, {}

    def __call__(self, name: str, fn, **kw):
        if self.on:
            self.inputs[name] = kw
        return fn(**kw)


def usable_gpu_bytes(hw: Hardware, asm: Assumptions) -> float:
    """GPU memory a layout may fill: the capacity less the safety margin (gpu_headroom)."""
    return hw.gpu.memory_bytes * (1 - asm.gpu_headroom)


def offload_flags(off, offload_params, gpu_fraction):
    """(o_w, o_g, o_o, f_k) of memory.*: what leaves the GPU for each offload target.

    CPU/NVMe (ZeRO-Offload/Infinity): gradients and optimizer state, weights with
    --offload-params; SmartNIC (OptimusNIC): the optimizer state only, gradients stream through;
    superchip (SuperOffload): gradients and state, except the fraction kept on the GPU."""
    off = np.asarray(off)
    cpu_or_nvme = (off == CPU) | (off == NVME)
    o_w = (cpu_or_nvme & (np.asarray(offload_params) == 1)).astype(np.float64)
    o_g = (cpu_or_nvme | (off == SUPERCHIP)).astype(np.float64)
    o_o = (off != NONE).astype(np.float64)
    f_k = np.where(off == SUPERCHIP, gpu_fraction, 0.0)
    return o_w, o_g, o_o, f_k


def layer_flops(model: Model, seq: int) -> tuple[float, float]:
    """(F_l averaged over layers, F_h): forward FLOPs per token of a layer and of the logits."""
    common = dict(P_att=model.attention_matrix_params, d_s=model.score_dim, d_v=model.value_dim,
                  h=model.hidden, m_m=model.ffn_type.matrices, s=seq)
    dense = float(eq.compute__flops_per_token_layer(E=0, f_a=model.ffn_hidden, **common))
    f_l = dense
    if model.is_moe:
        width = model.expert_ffn * model.top_k + model.shared_ffn * model.shared_experts
        moe = float(eq.compute__flops_per_token_layer(E=model.experts, f_a=width, **common))
        f_l = (model.dense_layers * dense + model.moe_layers * moe) / model.layers
    return f_l, 2.0 * model.hidden * model.vocab


def recompute_flops(model: Model, seq: int, rc, f_l: float):
    """F_r of step.backward_flops: full recomputation re-runs the layer's forward, selective
    the attention core (scores and values, Korthikanti et al. 2022 section 5)."""
    rc = np.asarray(rc)
    core = 2.0 * seq * (model.score_dim + model.value_dim)
    return np.where(rc == R_FULL, f_l, np.where(rc == R_SELECTIVE, core, 0.0))


def modules_per_layer(model: Model, asm: Assumptions) -> float:
    """Parameterised submodules DeepSpeed ZeRO-3 gathers one by one in a layer (its hooks fetch
    every module with parameters, partitioned_param_coordinator.py): the attention projections
    (q, k, v, o), the MLP's matrices, the norms, and for MoE layers every expert's matrices and
    the router, averaged over the layers. ``zero3_modules_per_layer`` overrides it (FSDP wraps
    one module per transformer block: 1)."""
    if asm.zero3_modules_per_layer > 0:
        return asm.zero3_modules_per_layer
    dense = 4 + model.ffn_type.matrices + model.layer_norms
    if not model.is_moe:
        return float(dense)
    moe = 4 + model.layer_norms + 1 + model.ffn_type.matrices * (model.experts
                                                                 + model.shared_experts)
    return (model.dense_layers * dense + model.moe_layers * moe) / model.layers


def _group(hw: Hardware, size, stride, nic_Bps: float):
    """(alpha, beta) of a ring over ``size`` ranks ``stride`` apart: inside a node over the
    scale-up link, across nodes bounded by the group's share of the node's NICs (rail-optimised:
    each GPU drives its own NIC)."""
    gpn = hw.gpus_per_node
    il = hw.intra_link
    a_i, b_i = il.alpha_s, il.bandwidth_Bps * il.efficiency
    size = np.asarray(size)
    stride = np.asarray(stride)
    per_node = np.where(stride < gpn, np.maximum(1, np.minimum(size, gpn // np.maximum(stride, 1))),
                        1)
    nodes = np.maximum(1, size // per_node)
    share = per_node / gpn * max(hw.node.nics, 1)
    multi = nodes > 1
    bw = np.where(multi, eq.comm__ring_bandwidth(B_intra=b_i, B_nic=nic_Bps, K=share), b_i)
    al = np.where(multi, eq.comm__ring_alpha(N=nodes, alpha_e=hw.nic.alpha_us * 1e-6,
                                             alpha_i=a_i, n=size), a_i)
    return al, 1.0 / bw


def evaluate(batch: Batch, model: Model | BareModel, hw: Hardware, tr: Training,
             asm: Assumptions, all_stages: bool = False, record: bool = False,
             stages: StageTable | None = None, with_step: bool = True) -> Evaluation:
    """Evaluate every layout of ``batch``. ``stages`` (from :func:`stage_table` over the
    batch's pipeline degrees) may be given to reuse it across the chunks of a search."""
    rec = _Rec(record)
    L = lambda x: np.asarray(x)[..., None]  # noqa: E731  per-layout value -> stage axis
    t, pp, dp, cp, ep = L(batch.tp), L(batch.pp), L(batch.dp), L(batch.cp), L(batch.ep)
    z, off, rc, spf, mb, v = (L(batch.zero), L(batch.offload), L(batch.recompute), L(batch.sp),
                              L(batch.mb), L(batch.v))
    opar, gfrac = L(batch.offload_params), L(batch.gpu_fraction)
    spill_ok, sn_k = L(batch.allow_spill), L(batch.smartnics_per_node)
    gpn, s = hw.gpus_per_node, tr.seq_len
    gb = np.where(L(batch.gb) > 0, L(batch.gb), tr.global_batch)  # the batch rule's, per layout
    wb, gbytes, ob = tr.weight_bytes, tr.gradient_bytes, tr.optimizer_bytes
    m = gb // (dp * mb)

    st = (stages or stage_table(model, batch.pp, all_stages)).lookup(batch.pp)
    idx, Ls, Lmoe, last = st["index"], st["layers"], st["moe_layers"], st["last"]

    # ---- memory per stage ----------------------------------------------------------------
    o_w, o_g, o_o, f_k = offload_flags(off, opar, gfrac)
    P = rec("memory.params_per_gpu", eq.memory__params_per_gpu,
            A=st["A"], R=st["R"], X=st["X"], e=ep, t=t)
    p_x = st["X"] / (ep * t)  # issue 19: states shard over DP x CP, experts over DP x CP / EP
    n_sh = rec("memory.zero_shard_degree", eq.memory__zero_shard_degree,
               D_p=dp, P=P, P_x=p_x, c=cp, e=ep)
    if isinstance(model, Model):  # ZeRO-Infinity keeps persistent tensors and live modules
        p_pers = persistent_params([model.hidden] * model.layer_norms, Ls, asm)
        p_mod = model.hidden * max(model.ffn_hidden, model.expert_ffn if model.is_moe else 0,
                                   model.score_dim) / t
    else:  # a bare count has no modules: nothing resident is known
        p_pers, p_mod = 0.0, 0.0
    w_res = rec("memory.zero3_offload_param_resident_bytes",
                eq.memory__zero3_offload_param_resident_bytes,
                B_pf=asm.zero3_prefetch_bucket_params, M_live=asm.zero3_max_live_params,
                P_pers=p_pers, b_g=gbytes, b_w=wb, p_mod=p_mod)
    W = rec("memory.weights_bytes", eq.memory__weights_bytes,
            N_d=n_sh, P=P, W_res=w_res, Z=z, b_w=wb, o_w=o_w)
    G = rec("memory.gradients_bytes", eq.memory__gradients_bytes,
            N_d=n_sh, P=P, Z=z, b_g=gbytes, o_g=o_g)
    O = rec("memory.optimizer_bytes", eq.memory__optimizer_bytes,
            N_d=n_sh, P=P, Z=z, b_o=ob, f_k=f_k, o_o=o_o)
    n_f = np.minimum(pp - idx, m)
    zero_arr = np.zeros(np.broadcast_shapes(np.shape(W), np.shape(G), np.shape(O)))
    states_only = tr.model_states_only or isinstance(model, BareModel)
    sigma = ((spf == 1) & (t > 1)).astype(np.float64)
    if states_only:
        act = over = zero_arr
        layer_args: dict = {}
    else:
        assert isinstance(model, Model)
        q_c, m_c = activation_coefficients(model)
        layer_args = dict(a=model.heads, b=mb, c=cp, d=int(tr.dropout), h=model.hidden,
                          m_c=m_c, phi=int(tr.flash_attention), q_c=q_c, s=s, sigma=sigma, t=t)
        act_layer = rec("memory.activation_layer_bytes", eq.memory__activation_layer_bytes,
                        r=rc, **layer_args)
        act = rec("memory.stage_activation_bytes", eq.memory__stage_activation_bytes,
                  L_s=Ls, M_layer=act_layer, V=model.vocab, b=mb, beta_l=asm.logits_bytes,
                  c=cp, lambda_l=last, n_f=n_f, p=pp, s=s, t=t, v=v)
        cap_bkt = np.where(z == 0, asm.ddp_bucket_MB * 1e6, asm.zero_bucket_params * gbytes)
        bkt = rec("memory.bucket_bytes", eq.memory__bucket_bytes, B_cap=cap_bkt, P=P, b_g=gbytes)
        over = rec("memory.overhead_bytes", eq.memory__overhead_bytes,
                   G=G, M_act=act, M_bkt=bkt, M_ctx=asm.cuda_context_GB * GB, O=O,
                   P_big=model.largest_layer_params, W=W, Z=z, f_frag=asm.fragmentation, t=t)
    total = rec("memory.gpu_total_bytes", eq.memory__gpu_total_bytes,
                G=G, M_act=act, M_over=over, O=O, W=W)
    worst_mem = np.argmax(total, axis=-1)
    gpu_bytes = total.max(axis=-1)

    # ---- offload devices per stage ----------------------------------------------------------
    opt_off = rec("memory.optimizer_offloaded_bytes", eq.memory__optimizer_offloaded_bytes,
                  N_d=n_sh, P=P, Z=z, b_o=ob, f_k=f_k, o_o=o_o)
    hgrad = rec("memory.host_gradients_bytes", eq.memory__host_gradients_bytes,
                N_d=n_sh, P=P, Z=z, b_h=asm.host_grad_bytes, o_g=o_g)
    hw_w = rec("memory.host_weights_bytes", eq.memory__host_weights_bytes,
               N_d=n_sh, P=P, Z=z, b_w=wb, o_w=o_w)
    host_cap = hw.node.host_memory_bytes * (1 - asm.host_reserved_fraction)
    per_dev = eq.memory__bytes_per_offload_device
    k_sn = np.where(sn_k > 0, sn_k, gpn)
    sn_cap = hw.smartnic.memory_bytes if hw.smartnic is not None else 0.0
    sn_dev = per_dev(B_gpu=opt_off, G_n=gpn, K_n=k_sn)
    spill = eq.memory__spill_bytes(B_dev=sn_dev, C=sn_cap)
    drives = hw.node.nvme_drives if hw.nvme is not None else 0
    nv_dev = per_dev(B_gpu=opt_off + hw_w, G_n=gpn, K_n=max(drives, 1))
    nv_host = gpn * (hgrad + asm.nvme_buffer_count * asm.nvme_buffer_params * 4)
    nv_cap = hw.nvme.capacity_GB * GB if hw.nvme is not None else 0.0
    host_state = opt_off + hgrad + hw_w
    cpu_dev = per_dev(B_gpu=host_state, G_n=gpn, K_n=1)
    cpus = hw.node.cpus
    sup_dev = per_dev(B_gpu=host_state, G_n=gpn, K_n=cpus)
    conds = [off == SMARTNIC, off == NVME, off == CPU, off == SUPERCHIP]
    dev_bytes = np.select(conds, [sn_dev, nv_dev, cpu_dev, sup_dev], 0.0).max(axis=-1)
    gpu_off = np.select(conds, [opt_off, opt_off + hw_w, host_state, host_state], 0.0
                        ).max(axis=-1)
    dev_cap = np.select(conds, [sn_cap, nv_cap, host_cap, host_cap / cpus], 0.0)[..., 0]
    dev_per_node = np.select(conds, [k_sn, drives, 1, cpus], 0)[..., 0]
    spill_dev = np.where(off == SMARTNIC, spill, 0.0).max(axis=-1)
    host_node = np.select(conds, [spill * k_sn, nv_host, cpu_dev, sup_dev * cpus], 0.0
                          ).max(axis=-1)
    offc = off[..., 0]
    bit = lambda cond, r: np.asarray(cond, dtype=np.int64) << int(r)  # noqa: E731
    bits = bit(gpu_bytes > usable_gpu_bytes(hw, asm), Reason.GPU_MEMORY)
    smart = offc == SMARTNIC
    bits = bits | bit(smart & (spill_dev * k_sn[..., 0] > host_cap), Reason.SMARTNIC_SPILL_HOST)
    bits |= bit(smart & (spill_dev > 0) & (spill_ok[..., 0] == 0), Reason.SMARTNIC_NO_SPILL)
    if drives and hw.nvme is not None:
        bits |= bit((offc == NVME) & (dev_bytes > nv_cap), Reason.NVME_CAPACITY)
        bits |= bit((offc == NVME) & (host_node > host_cap), Reason.HOST_RAM)
    else:
        bits |= bit(offc == NVME, Reason.NO_NVME)
    bits |= bit((offc == CPU) & (dev_bytes > host_cap), Reason.HOST_RAM)
    if hw.node.superchip:
        bits |= bit((offc == SUPERCHIP) & (dev_bytes > host_cap / cpus), Reason.GRACE_MEMORY)
    else:
        bits |= bit(offc == SUPERCHIP, Reason.NOT_SUPERCHIP)

    common = dict(
        stage_index=idx, stage_layers=Ls, params_stage=P, weights_stage=W,
        gradients_stage=G, optimizer_stage=O, activations_stage=act,
        overhead_stage=over, total_stage=total, in_flight_stage=n_f,
        worst_memory=worst_mem, gpu_bytes=gpu_bytes, capacity_bytes=hw.gpu.memory_bytes,
        micro_batches=m[..., 0], offload_bytes_per_gpu=gpu_off,
        offload_bytes_per_device=dev_bytes, offload_capacity_per_device=dev_cap,
        offload_devices_per_node=dev_per_node, spill_bytes_per_device=spill_dev,
        host_bytes_per_node=host_node, host_capacity_bytes=host_cap, reasons=bits)
    if states_only or not with_step:  # the planner's first pass: memory and feasibility only
        return Evaluation(has_step=False, inputs=rec.inputs, **common)
    assert isinstance(model, Model)

    # ---- compute per stage --------------------------------------------------------------------
    peak = check_precision(hw.gpu, tr.precision)
    f_l, f_h = layer_flops(model, s)
    f_r = recompute_flops(model, s, rc, f_l)
    tokens = gb * s
    tau = tokens / (dp * cp * t)
    F_fwd = rec("step.forward_flops", eq.step__forward_flops,
                F_h=f_h, F_l=f_l, L_stage=Ls, lambda_h=last, tau_g=tau)
    F_bwd = rec("step.backward_flops", eq.step__backward_flops,
                F_h=f_h, F_l=f_l, F_r=f_r, L_stage=Ls, lambda_h=last, tau_g=tau)
    # efficiency that follows the work: weight GEMMs by their size, the attention core by its
    # kernel (evaluate/efficiency.py; --assume gemm_efficiency=X replaces the curve)
    f_att = tau * Ls * 2.0 * s * (model.score_dim + model.value_dim)  # forward attention core
    eff = dict(gpu=hw.gpu, h=model.hidden, t=t, s=s / cp, b=mb, flash=tr.flash_attention,
               asm=asm)
    eta_f = compute_efficiency(total_flops=F_fwd, attn_flops=f_att, **eff)
    eta_b = compute_efficiency(total_flops=F_bwd, attn_flops=f_att * (2 + (rc != R_NONE)),
                               **eff)
    T_cf = eq.compute__compute_time(FLOPs=F_fwd, eta_g=eta_f, peak=peak)
    T_cb = rec("compute.compute_time", eq.compute__compute_time,
               FLOPs=F_bwd, eta_g=eta_b, peak=peak)
    act0 = eq.memory__activation_layer_bytes(r=0, **layer_args)
    fwd_pass = min(1.0, asm.elementwise_factor)
    bwd_pass = asm.elementwise_factor - fwd_pass + (rc == R_FULL)
    hbm = dict(B_hbm=hw.gpu.hbm_Bps, eta_hbm=asm.hbm_efficiency, L_stage=Ls, M_l=act0, m=m)
    T_ef = eq.step__elementwise_time(n_pass=fwd_pass, **hbm)
    T_eb = rec("step.elementwise_time", eq.step__elementwise_time, n_pass=bwd_pass, **hbm)
    T_f = rec("step.forward_time", eq.step__forward_time, T_cf=T_cf, T_ef=T_ef)
    T_b = rec("step.backward_time", eq.step__backward_time, T_cb=T_cb, T_eb=T_eb)
    bubble = rec("compute.pipeline_bubble", eq.compute__pipeline_bubble,
                 T_c=(T_f + T_b).max(axis=-1)[..., None], m=m, p=pp, v=v)
    W_f, W_b = T_f / m, T_b / m

    # ---- communication per stage --------------------------------------------------------------
    nic_Bps = float(eq.comm__nic_bandwidth(
        B_line=hw.nic.line_rate_Bps, B_pcie=hw.nic_host_link.bandwidth_Bps,
        eta_n=hw.nic.efficiency, eta_p=hw.nic_host_link.efficiency))
    h = model.hidden
    a_tp, b_tp = _group(hw, t, 1, nic_Bps)
    z_tp = (s / cp) * mb * h * wb
    ring = dict(alpha=a_tp, beta=b_tp, n=t, z=z_tp)
    T_tp = rec("step.tp_comm_time", eq.step__tp_comm_time,
               L_stage=Ls, T_ag=eq.comm__ring_all_gather_time(**ring),
               T_ar=eq.comm__ring_all_reduce_time(**ring),
               T_rs=eq.comm__ring_reduce_scatter_time(**ring), m=m, o_tp=asm.tp_overlap,
               r_full=(rc == R_FULL).astype(np.float64), sigma_sp=sigma)
    a_cp, b_cp = _group(hw, cp, t, nic_Bps)
    ring = dict(alpha=a_cp, beta=b_cp, n=cp, z=2 * s * mb * model.n_kv * model.d_head * wb / t)
    T_cp = rec("step.cp_comm_time", eq.step__cp_comm_time,
               L_stage=Ls, T_ag=eq.comm__ring_all_gather_time(**ring),
               T_rs=eq.comm__ring_reduce_scatter_time(**ring), m=m, o_cp=asm.cp_overlap,
               r_full=(rc == R_FULL).astype(np.float64))
    if model.is_moe:
        a_ep, b_ep = _group(hw, ep, t, nic_Bps)
        a2a = eq.comm__all_to_all_time(alpha=a_ep, beta=b_ep, n=ep,
                                       z=(s / cp) * mb * h * wb * model.top_k)
    else:
        a2a = 0.0
    T_ep = rec("step.ep_comm_time", eq.step__ep_comm_time, L_moe=Lmoe, T_a2a=a2a, m=m)
    inter = t * cp * dp >= gpn  # neighbouring stages sit on different nodes
    il = hw.intra_link
    p2p = eq.comm__p2p_time(alpha=np.where(inter, hw.nic.alpha_us * 1e-6, il.alpha_s),
                            beta=1.0 / np.where(inter, nic_Bps, il.bandwidth_Bps * il.efficiency),
                            z=(s / cp) * mb * h * wb / np.where(spf == 1, t, 1))
    T_pp = rec("step.pp_comm_time", eq.step__pp_comm_time,
               T_p2p=np.where(pp > 1, p2p, 0.0), m=m, o_pp=asm.pp_overlap, v=v)
    n_dp = dp * cp  # issue 19: data parallel with context parallel (experts: n_dp / ep)
    a_dp, b_dp = _group(hw, n_dp, t, nic_Bps)
    z_g, z_w = gbytes * (P - p_x), wb * P
    cap_g = np.where(z == 0, asm.ddp_bucket_MB * 1e6, asm.zero_bucket_params * gbytes)
    k_g, k_x = np.maximum(1, np.ceil(z_g / cap_g)), np.ceil(gbytes * p_x / cap_g)
    dpr = dict(alpha=a_dp, beta=b_dp, n=n_dp, z=z_g / k_g)
    T_bkt = np.where(z == 0, eq.comm__ring_all_reduce_time(**dpr),
                     eq.comm__ring_reduce_scatter_time(**dpr))
    dpx = dict(alpha=a_dp, beta=b_dp, n=n_dp / ep, z=gbytes * p_x / np.maximum(k_x, 1))
    T_bkx = np.where(z == 0, eq.comm__ring_all_reduce_time(**dpx),
                     eq.comm__ring_reduce_scatter_time(**dpx))
    n_mod = np.maximum(1, Ls) * modules_per_layer(model, asm)  # ZeRO-3 gathers module by module
    k_w = np.where(z == 3, n_mod, np.maximum(1, np.ceil(z_w / (asm.zero_bucket_params * wb))))
    gather = (eq.comm__multicast_all_gather_time if tr.multicast
              else eq.comm__ring_all_gather_time)
    t_piece = gather(alpha=a_dp, beta=b_dp, n=n_dp, z=z_w / k_w)
    T_gat = np.where(z == 0, 0.0, k_w * t_piece)
    r_full = (rc == R_FULL).astype(np.float64)
    g_x = zero3_exposed_gather(modules=n_mod, module_params=P / n_mod, gather_s=t_piece,
                               compute_per_module_s=(W_f + W_b) / ((2 + r_full) * n_mod),
                               asm=asm, recompute_full=r_full)
    dp_args = dict(T_gat=T_gat, T_red=k_g * T_bkt + k_x * T_bkx, Z=z, m=m)
    T_dp = rec("step.dp_comm_time", eq.step__dp_comm_time, **dp_args)
    T_dpx = rec("step.dp_exposed_time", eq.step__dp_exposed_time,
                G_x=np.where((z == 3) & (n_dp > 1), g_x, 0.0), T_bkt=T_bkt, W_b=W_b, W_f=W_f,
                **dp_args)

    # ---- optimizer step on the device that owns the state -------------------------------------
    shard = P / np.where(z >= 1, n_sh, 1)
    phi = flops_per_param(tr.optimizer)
    bpp = lambda g: bytes_per_param(tr.optimizer, Impl.FUSED, g)  # noqa: E731
    host = hw.gpu_host_link
    link = host.bandwidth_Bps * host.efficiency
    t_gpu, _ = device_time(device_from(hw.gpu, 1, asm), shard, bpp(gbytes), phi, ob)
    zeros = np.zeros_like(np.asarray(t_gpu, dtype=np.float64))
    exposed = eq.compute__exposed_time
    opt_s, opt_x, opt_ex = [t_gpu], [zeros], [exposed(T_opt=t_gpu, T_x=0.0, W=0.0)]
    opt_w = [zeros]  # the window each strategy's step overlaps with
    choices = [off == NONE]
    # ZeRO-Offload / ZeRO-Infinity: DeepSpeed's offloaded step phase by phase, per ZeRO stage
    host_cpu = HostCPU.from_catalog(hw.cpu, cpus)
    link_kw = dict(link_GBps=host.bandwidth_GBps, link_eff=host.efficiency)
    ds = deepspeed_cpu_step(shard, zero=z, bucketed_params=P, precision=tr.precision,  # i19
                            backward_s=W_b,
                            host=host_cpu, cpu=hw.cpu, ranks_per_node=gpn, asm=asm,
                            weight_bytes=wb, grad_bytes=gbytes, **link_kw)
    t_cpu, x_cpu = ds.step_s, ds.transfer_s
    steps = [(CPU, t_cpu, x_cpu, ds.exposed_s)]
    if drives and hw.nvme is not None:
        nv = nvme_optimizer_step(shard, t_cpu, ranks_per_node=gpn, drives=drives,
                                 read_GBps=hw.nvme.read_GBps, write_GBps=hw.nvme.write_GBps,
                                 asm=asm)
        steps.append((NVME, nv.step_s, x_cpu + nv.read_s + nv.write_s,
                      exposed_step(Overlap.NONE, nv.step_s)))
    for code, t_s, x, t_ex in steps:
        choices.append(off == code)
        opt_s.append(t_s)
        opt_x.append(x)
        opt_ex.append(t_ex)
        opt_w.append(zeros)
    if hw.smartnic is not None:  # OptimusNIC: a roofline on the card, hidden per layer
        snl = hw.smartnic_host_link
        snl_Bps = snl.bandwidth_Bps * snl.efficiency
        t_sn, _ = device_time(device_from(hw.smartnic, 1, asm), shard * gpn / k_sn, bpp(gbytes),
                              phi, ob)
        # each GPU sends its shard's gradients (and takes its weights back) over its own link;
        # each card receives the shards of the GPUs it serves over its link; the slower side
        # sets the time, and a spill streams from host RAM and back over the card's link
        x_sn = np.maximum(shard * (gbytes + wb) / link,
                          shard * gpn / k_sn * (gbytes + wb) / snl_Bps) + 2 * spill / snl_Bps
        choices.append(off == SMARTNIC)
        opt_s.append(t_sn)
        opt_x.append(x_sn)
        opt_ex.append(exposed_step(Overlap.PER_LAYER, t_sn + x_sn, backward_s=W_b + W_f))
        opt_w.append(W_b + W_f)
    if hw.node.superchip:  # SuperOffload: GraceAdam behind the backward, casts on the GPU
        p_r = np.maximum(shard * (1 - f_k), 1.0)
        so = superoffload_step(p_r, precision=tr.precision, backward_s=W_b,  # issue 19
                               host=host_cpu, cpu=hw.cpu, ranks_per_node=gpn, asm=asm,
                               weight_bytes=wb, grad_bytes=gbytes, **link_kw)
        tail, _ = device_time(device_from(hw.gpu, 1, asm), shard * f_k, bpp(gbytes), phi, ob)
        choices.append(off == SUPERCHIP)
        opt_s.append(so.step_s + tail)
        opt_x.append(so.transfer_s)
        opt_ex.append(so.exposed_s + tail)
        opt_w.append(W_b)
    T_opt = np.select(choices, opt_s, 0.0)
    T_x = np.select(choices, opt_x, 0.0)
    T_ox = np.select(choices, opt_ex, 0.0)
    T_w = np.select(choices, [np.broadcast_to(w, np.shape(T_ox)) for w in opt_w], 0.0)
    # ZeRO-Infinity parameter offload: weights stream in every forward and backward
    T_po = 0.0
    if np.any(np.asarray(opar) == 1):
        po = dict(dp=dp, micro_batches=m, weight_bytes=wb, recompute_full=r_full,
                  compute_per_microbatch_s=(T_f + T_b) / m, asm=asm, **link_kw)
        T_po = np.where((opar == 1) & (off == CPU),
                        param_offload_traffic(P, target="cpu", **po).exposed_s, 0.0)
        if drives and hw.nvme is not None:
            T_po = T_po + np.where((opar == 1) & (off == NVME), param_offload_traffic(
                P, target="nvme", ranks_per_node=gpn, drives=drives,
                read_GBps=hw.nvme.read_GBps, **po).exposed_s, 0.0)

    # ---- compose ---------------------------------------------------------------------------------
    step_stage = rec("step.time", eq.step__time,
                     T_b=T_b, T_bubble=bubble, T_cp=T_cp, T_dp=T_dpx, T_ep=T_ep, T_f=T_f,
                     T_opt=T_ox, T_po=T_po, T_pp=T_pp, T_tp=T_tp)
    worst_t = np.argmax(step_stage, axis=-1)
    step = step_stage.max(axis=-1)
    model_flops = eq.compute__step_flops(F_h=f_h, F_l=f_l, F_r=0, L=model.layers,
                                         tokens=tokens)[..., 0]
    tokens = tokens[..., 0]
    rec("step.mfu", eq.step__mfu, F_model=model_flops, N_gpus=hw.gpus, T_step=step, peak=peak)
    rec("step.tokens_per_s", eq.step__tokens_per_s, T_step=step, tokens=tokens)
    per_stage = {
        "forward_s": T_f, "backward_s": T_b, "compute_s": T_cf + T_cb,
        "elementwise_s": T_ef + T_eb, "bubble_s": bubble, "tp_comm_s": T_tp,
        "cp_comm_s": T_cp, "ep_comm_s": T_ep, "pp_comm_s": T_pp, "dp_comm_s": T_dp,
        "dp_comm_exposed_s": T_dpx, "optimizer_s": T_opt, "optimizer_exposed_s": T_ox,
        "offload_transfer_s": T_x, "optimizer_window_s": T_w,
        "param_offload_exposed_s": T_po if np.ndim(T_po) else np.zeros((1,)),
        "hardware_flops": eq.compute__step_flops(F_h=f_h, F_l=f_l, F_r=f_r, L=model.layers,
                                                 tokens=tokens[..., None])}
    return Evaluation(has_step=True, step_time_s=step, worst_time=worst_t,
                      stage_terms=per_stage, step_figures=dict(
                          model_flops=model_flops, peak=peak, tokens=tokens, gpus=hw.gpus),
                      inputs=rec.inputs, **common)
