"""The evaluator's time stages: compute (forward, backward, element-wise passes, bubble) and
communication (TP, CP, EP, pipeline p2p, data-parallel) per pipeline stage."""

from __future__ import annotations

import numpy as np

from optimus_calc.equations.recording import active as recording_active, eq, set_scope
from optimus_calc.evaluate.batch import R_FULL, R_NONE, R_SELECTIVE
from optimus_calc.evaluate.context import check_precision
from optimus_calc.evaluate.efficiency import (attention_efficiency, attention_seconds,
                                              attention_span, causal_factor, compute_efficiency,
                                              expert_efficiency, gemm_efficiency)
from optimus_calc.evaluate.fp8 import (amax_time, bf16_head_flops, fp8_gemm_ratio,
                                       gather_bytes_per_param, reads_amax)
from optimus_calc.evaluate.offload_step import zero3_exposed_gather
from optimus_calc.evaluate.records import CommRecord, ComputeRecord, Ctx, MemoryRecord, per_model
from optimus_calc.evaluate.rope import rope_time
from optimus_calc.evaluate.shapes import modules_per_layer, op_sac_widths, separate_norms
from optimus_calc.evaluate.stages import broadcast_small, stage_max
from optimus_calc.evaluate.topology import _RINGS, _either, _ring, _rings  # noqa: F401 (_RINGS)
from optimus_calc.evaluate.topology import (ep_comm_time, group, group_placed, neighbour,
                                            nic_Bps, reduce_and_gather)
from optimus_calc.specs.model import Model
from optimus_calc.specs.assumptions import Assumptions


def layer_flops(model: Model, seq: int) -> tuple[float, float]:
    """(F_l averaged over layers, F_h): forward FLOPs per token of a layer and of the logits."""
    common = dict(P_att=model.attention_matrix_params, d_s=model.score_dim, d_v=model.value_dim,
                  h=model.hidden, m_m=model.ffn_type.matrices, s=attention_span(model, seq))
    dense = float(eq.compute__flops_per_token_layer(E=0, f_a=model.ffn_hidden, **common))
    f_l = dense
    if model.is_moe:
        width = model.expert_ffn * model.top_k + model.shared_ffn * model.shared_experts
        moe = float(eq.compute__flops_per_token_layer(E=model.experts, f_a=width, **common))
        f_l = (model.dense_layers * dense + model.moe_layers * moe) / model.layers
    return f_l, float(eq.compute__logits_flops_per_token(V=model.vocab, h=model.hidden))


def recompute_flops(model: Model, seq: int, rc, f_l: float, policy: float = 0,
                    core: bool = True):
    """F_r of step.backward_flops: full recomputation re-runs the layer's forward, selective
    the attention core (scores and values, Korthikanti et al. 2022 section 5; not where
    ``core`` is False: Megatron's --recompute-modules replace its core_attn), or under
    torchtitan's op AC (``policy`` 1, Assumptions.selective_policy) every second weight GEMM,
    and with no weight GEMM saved (``policy`` 2, no profile sets it) every one."""
    rc = np.asarray(rc)
    core_flops = eq.step__attention_core_flops_per_token(
        d_s=model.score_dim, d_v=model.value_dim, s=attention_span(model, seq))
    if policy == 2:  # no weight GEMM saved: every one re-runs, not the core
        sel = f_l - core_flops
    elif policy:
        _, _, w_r = op_sac_widths(model, policy)
        sel = eq.step__op_sac_recompute_flops_per_token(W_r=w_r)
    else:
        sel = core_flops if core else 0.0
    return np.where(rc == R_FULL, f_l, np.where(rc == R_SELECTIVE, sel, 0.0))


def attention_recomputed(rc, policy: float, core: bool = True):
    """r_a of step.attention_backward_flops: full recomputation re-runs the attention core, and
    so does Korthikanti's selective (not with ``core`` False: --recompute-modules); torchtitan's
    op AC (policy 1, 2) saves the SDPA output."""
    rc = np.asarray(rc)
    return (rc == R_FULL) | ((rc == R_SELECTIVE) & (policy == 0) & core)


def experts_recomputed(rc, policy: float):
    """r_x of compute.moe_expert_backward_flops: full recomputation re-runs the routed experts,
    and so does torchtitan's op AC (policy 1, 2): their torch._grouped_mm is not in its save
    list (evaluate/shapes.op_sac_widths), so its F_r holds them; Korthikanti's does not."""
    rc = np.asarray(rc)
    return (rc == R_FULL) | ((rc == R_SELECTIVE) & (policy > 0))


# r_g of step.tp_comm_time, the same test: torchtitan's op AC saves reduce-scatters, no all-gather
tp_gathers_rerun = experts_recomputed


def experts_rerun(ctx: Ctx):
    """:func:`experts_recomputed` of the batch, made once per context (the compute, the TP
    collectives and the fixed costs read it)."""
    return ctx.memo("experts_recomputed",
                    lambda c: experts_recomputed(c.rc, c.asm.selective_policy))


def _moe_work(ctx: Ctx, tau, r_full):
    """(forward, backward) routed-expert FLOPs of the stage, their grouped-GEMM efficiency and
    one MoE layer's routing HBM bytes per micro-batch (router, permutation, eager bias, clamp)."""
    model, asm = ctx.model, ctx.asm
    if not model.is_moe:
        return 0.0, 0.0, None, 0.0
    fwd = eq.compute__moe_expert_forward_flops(L_moe=ctx.st.moe_layers, f_x=model.expert_ffn,
                                               h=model.hidden, k=model.top_k, tau_g=tau,
                                               m_m=model.ffn_type.matrices)
    bwd = eq.compute__moe_expert_backward_flops(F_xf=fwd, r_x=r_full)
    tokens_mb = ctx.s * ctx.mb / ctx.cp
    fixed = asm.gemm_efficiency if "gemm_efficiency" in asm.model_fields_set else None
    eta_x = expert_efficiency(ctx.hw.gpu, model.hidden, ctx.t, tokens_mb, model.top_k,
                              model.experts, ctx.ep, model.expert_ffn, etp=ctx.t_x, fixed=fixed,
                              streams=asm.moe_expert_gemm_streams, imbalance=ctx.iota)
    rows = dict(b_a=ctx.tr.weight_bytes, k=model.top_k, tau_mb=tokens_mb, t=ctx.t)
    received = asm.moe_permute_received_rows or ctx.tr.moe_dispatcher.value != "alltoall"
    # the alltoall dispatcher's own shard, and its sort by local expert where a GPU has several
    g_p = (ctx.t_x if received else
           1 + ctx.t_x * asm.moe_sort_by_local_expert * (model.experts > ctx.ep))
    route = (eq.compute__moe_permute_bytes(h=model.hidden, g_p=g_p, **rows)
             + eq.compute__moe_router_bytes(E=model.experts, b_r=asm.moe_router_logit_bytes,
                                            tau_mb=tokens_mb, t=ctx.t,
                                            rho_r=asm.moe_router_tp_replicated))
    if model.mlp_bias:  # expert biases: eager unless a profile's fused MLP adds them (0)
        route += eq.compute__moe_expert_bias_bytes(n_b=asm.moe_expert_bias_passes,
                                                   h=model.hidden, t_x=ctx.t_x, **rows)
    if model.glu_clamp:  # the GLU's clamp: likewise
        route += eq.compute__moe_act_clamp_bytes(n_c=asm.moe_act_clamp_passes,
                                                 f_x=model.expert_ffn, **rows)
    return fwd, bwd, eta_x, route


def compute_stage(ctx: Ctx, mem: MemoryRecord) -> ComputeRecord:
    model, hw, tr, asm, s, rc = ctx.model, ctx.hw, ctx.tr, ctx.asm, ctx.s, ctx.rc
    Ls, last = ctx.st.layers, ctx.st.last
    peak = check_precision(hw.gpu, tr.precision)
    # not while `explain` records: a model's layer FLOPs at this length kept (per_model), and
    # with no layout recomputing (rc 0 = R_NONE) F_r and r_a zeros without their calls
    quiet = not recording_active()
    f_l, f_h = (per_model(model, ("layer_flops", s), lambda mdl: layer_flops(mdl, s)) if quiet
                else layer_flops(model, s))
    none = quiet and not rc.any()
    f_r = (np.zeros(rc.shape) if none
           else recompute_flops(model, s, rc, f_l, asm.selective_policy, not tr.recompute_modules))
    tokens = ctx.gb * s
    tau = tokens / (ctx.dp * ctx.cp * ctx.t)
    F_fwd = eq.step__forward_flops(F_h=f_h, F_l=f_l, L_stage=Ls, lambda_h=last, tau_g=tau)
    F_bwd = eq.step__backward_flops(F_h=f_h, F_l=f_l, F_r=f_r, L_stage=Ls, lambda_h=last,
                                    tau_g=tau)
    # efficiency following the work: weight GEMMs by size, the attention core by its kernel on
    # the FLOPs it executes, experts by their grouped GEMMs (evaluate/efficiency.py)
    kappa = causal_factor(tr.flash_attention)
    f_att = eq.step__attention_core_flops(L_stage=Ls, d_s=model.score_dim, d_v=model.value_dim,
                                          s=attention_span(model, s), tau_g=tau)
    r_a = (np.zeros(rc.shape, dtype=bool) if none
           else attention_recomputed(rc, asm.selective_policy, not tr.recompute_modules))
    f_att_b = eq.step__attention_backward_flops(F_af=f_att, r_a=r_a)
    f_run, f_run_b = f_att, f_att_b  # what the kernel runs: unfused, the whole window-masked s
    if getattr(model, "sliding_window_layers", 0):
        f_run = eq.step__attention_core_flops(L_stage=Ls, d_s=model.score_dim, d_v=model.value_dim,
                                              s=attention_span(model, s, tr.flash_attention),
                                              tau_g=tau)
        f_run_b = eq.step__attention_backward_flops(F_af=f_run, r_a=r_a)
    r_x = experts_rerun(ctx)
    x_f, x_b, eta_x, route = _moe_work(ctx, tau, r_x)
    eff = dict(gpu=hw.gpu, h=model.hidden, t=ctx.t, s=s / ctx.cp, b=ctx.mb,
               flash=tr.flash_attention, asm=asm, kernel=tr.attention_kernel, eta_x=eta_x,
               fp8=fp8_gemm_ratio(tr, asm), fp8_peak=tr.gemm_recipe.peak,
               d_head=getattr(model, "d_head", 128))
    if not recording_active() and "gemm_efficiency" not in asm.model_fields_set:
        # the weight GEMMs' and attention kernel's curves, once for both passes (`explain`
        # shows each pass's calls as made)
        eff["curves"] = (gemm_efficiency(hw.gpu, eff["h"], eff["t"], eff["s"], eff["b"]),
                         attention_efficiency(hw.gpu, eff["flash"], eff["kernel"], asm,
                                              eff["d_head"]))
    act0 = (mem.act0 if mem.act0 is not None and not recording_active()  # `explain`: as made
            else eq.memory__activation_layer_bytes(r=0, **mem.layer_args))
    fwd_pass = eq.step__elementwise_forward_passes(f_e=asm.elementwise_factor)
    bwd_pass = eq.step__elementwise_backward_passes(f_e=asm.elementwise_factor,
                                                    r_full=(rc == R_FULL))
    hbm = dict(B_hbm=hw.gpu.hbm_Bps, eta_hbm=asm.hbm_efficiency, m=ctx.m)
    set_scope("forward")
    a_f = eq.compute__causal_attention_flops(F_af=f_run, kappa_c=kappa)
    F_fx = F_fwd - (f_att - a_f)  # what the kernels execute
    eta_f = compute_efficiency(total_flops=F_fx, attn_flops=a_f, expert_flops=x_f, **eff,
                               bf16_gemm_flops=bf16_head_flops(tr, f_h, last, tau, False))
    T_cf = eq.compute__compute_time(FLOPs=F_fx, eta_g=eta_f, peak=peak)
    T_ef = _elementwise(ctx, mem, "forward", (fwd_pass, act0), (1, route), 1, hbm,
                        asm.loss_forward_bytes_per_logit)
    set_scope("backward")
    a_b = eq.compute__causal_attention_flops(F_af=f_run_b, kappa_c=kappa)
    set_scope("attention core")   # what a CP ring hides (step.cp_comm_time); recorded before
    T_att = attention_seconds(a_f + a_b, peak, hw.gpu, tr.flash_attention, tr.attention_kernel,
                              asm, eff.get("curves", (0, None))[1], eff["d_head"])  # shown
    set_scope("backward")   # by default (`explain compute.compute_time`: the last call)
    F_bx = F_bwd - (f_att_b - a_b)
    eta_b = compute_efficiency(total_flops=F_bx, attn_flops=a_b, expert_flops=x_b, **eff,
                               bf16_gemm_flops=bf16_head_flops(tr, f_h, last, tau, True))
    T_cb = eq.compute__compute_time(FLOPs=F_bx, eta_g=eta_b, peak=peak)
    t_rm = _modules_rerun(ctx, hbm)  # before: `explain` shows the activations' call
    T_eb = _elementwise(ctx, mem, "backward", (bwd_pass, act0), (1 + r_x, route),
                        1 + (rc == R_FULL), hbm, asm.loss_backward_bytes_per_logit) + t_rm
    set_scope("")
    T_f = eq.step__forward_time(T_cf=T_cf, T_ef=T_ef)
    T_b = eq.step__backward_time(T_cb=T_cb, T_eb=T_eb)
    bubble = eq.compute__pipeline_bubble(T_c=stage_max(T_f + T_b)[..., None], m=ctx.m,
                                         p=ctx.pp, v=ctx.v)
    return ComputeRecord(f_l, f_h, f_r, tokens, peak, T_cf, T_cb, T_ef, T_eb, T_f, T_b, bubble,
                         T_f / ctx.m, T_b / ctx.m, T_att)


def _modules_rerun(ctx: Ctx, hbm):
    """The backward's element-wise time of Megatron's --recompute-modules on the stage's MoE
    layers where the layout recomputes selectively (step.elementwise_time; 0 without them)."""
    model, tr, asm = ctx.model, ctx.tr, ctx.asm
    if not (tr.recompute_modules and model.is_moe):
        return 0.0
    set_scope("backward recompute modules")
    mods = set(tr.recompute_modules)
    rows = dict(b_a=tr.weight_bytes, tau_mb=ctx.s * ctx.mb / ctx.cp, t=ctx.t)
    m_r = 0.0
    if "moe_act" in mods:
        m_r = eq.compute__moe_act_recompute_bytes(
            f_x=model.expert_ffn, k=model.top_k, m_m=model.ffn_type.matrices,
            n_cf=min(asm.moe_act_clamp_forward_passes, asm.moe_act_clamp_passes)
            * model.glu_clamp, **rows)  # the forward's part of the clamp's passes
    if "layernorm" in mods:
        m_r = m_r + eq.compute__norm_recompute_bytes(
            b_a=rows["b_a"], h=model.hidden, n_n=separate_norms(model), tau_mb=rows["tau_mb"],
            t_n=np.where(ctx.spf == 1, ctx.t, 1))
    on = (ctx.rc == R_SELECTIVE) & (asm.selective_policy == 0)
    return eq.step__elementwise_time(n_pass=on, L_stage=ctx.st.moe_layers, M_l=m_r, **hbm)


def _elementwise(ctx: Ctx, mem: MemoryRecord, scope: str, stored, routing, directions, hbm,
                 loss_bpl):
    """The stage's element-wise time in one pass direction (step.elementwise_time): the stored
    activations ``stored`` = (passes, bytes per layer), plus an MoE model's routing buffers
    ``routing`` (on its MoE layers), a recipe's amax passes, a YaRN model's unfused RoPE
    (evaluate/rope.py), each over ``directions`` pass directions (forward 1; backward 1, 2 where
    full recomputation re-runs the forward) and, on the last stage, the loss
    over the logits at ``loss_bpl`` bytes each (compute.loss_bytes). The additions are recorded
    under scopes of their own ("forward routing", "forward amax"), made first, so that
    `explain step.elementwise_time` shows the activations' call, not the last addition's (the
    loss is its own equation, compute.loss_time). A dense model's routing (0 bytes) and a recipe
    without amax passes add nothing."""
    set_scope(scope)
    loss = eq.compute__loss_bytes(beta_loss=loss_bpl, tau_mb=ctx.s * ctx.mb / ctx.cp,
                                  V=ctx.model.vocab, t=ctx.t)
    t_loss = eq.compute__loss_time(lambda_h=ctx.st.last, M_loss=loss, **hbm)
    t_route = t_amax = None
    if ctx.model.is_moe:
        set_scope(f"{scope} routing")
        t_route = eq.step__elementwise_time(n_pass=routing[0], L_stage=ctx.st.moe_layers,
                                            M_l=routing[1], **hbm)
    if reads_amax(ctx):
        set_scope(f"{scope} amax")
        t_amax = amax_time(ctx, mem.layer_args, hbm, directions)
    t_rope = rope_time(ctx, hbm, scope, directions - 1)  # 1 where the forward re-runs
    set_scope(scope)
    T = eq.step__elementwise_time(n_pass=stored[0], L_stage=ctx.st.layers, M_l=stored[1], **hbm)
    for t in (t_route, t_amax, t_rope):  # in the order they were summed before: the same numbers
        if t is not None:
            T = T + t
    return T + t_loss


def _model_parallel(ctx: Ctx, mem: MemoryRecord, nic: float, T_att=0.0):
    """TP, CP and EP per stage (step.tp/cp/ep_comm_time over their rings; EP: ep_comm_time)."""
    model, hw, asm, s, mb, wb = ctx.model, ctx.hw, ctx.asm, ctx.s, ctx.mb, ctx.tr.weight_bytes
    t, cp, Ls, m = ctx.t, ctx.cp, ctx.st.layers, ctx.m
    set_scope("tp")
    a_tp, b_tp, nodes = group_placed(hw, t, 1, nic=nic)
    z_tp = eq.step__tp_message_bytes(b=mb, b_w=wb, c=cp, h=model.hidden, s=s)
    T_ag, T_ar, T_rs = _rings(ctx, ("all-gather", "all-reduce", "reduce-scatter"), n=t, stride=1,
                              z=z_tp, beta=b_tp, alpha=a_tp, nodes=nodes)
    T_tp = eq.step__tp_comm_time(
        L_stage=Ls, T_ag=T_ag, T_ar=T_ar, T_rs=T_rs, m=m, o_tp=asm.tp_overlap,
        o_tb=asm.tp_backward_overlap, r_g=experts_rerun(ctx),
        r_full=ctx.r_full, sigma_sp=mem.sigma)
    set_scope("cp")
    # one rank per CP group everywhere: NCCL's rings take 0 s (rings._ring), their group unread
    # (`explain` sees the calls)
    one = not recording_active() and asm.nccl_latency_model and not (np.asarray(cp) > 1).any()
    if one and np.isfinite(T_att).all():
        # then T_cp = max(0, L m (0 (r + 1) + 0) - T_att o_cp) = +0 (T_att finite, o_cp >= 0)
        T_cp = np.zeros(broadcast_small(Ls.shape, np.shape(m), np.shape(T_att), np.shape(cp),
                                        np.shape(t), np.shape(mb), ctx.r_full.shape))
    else:
        a_cp, b_cp = (0.0, 0.0) if one else group(hw, cp, t, nic=nic)
        z_cp = eq.step__cp_message_bytes(b=mb, b_w=wb, d_head=model.d_head, n_kv=model.n_kv,
                                         s=s, t=t)
        T_ag, T_rs = _rings(ctx, ("all-gather", "reduce-scatter"), n=cp, stride=t, z=z_cp,
                            beta=b_cp, alpha=a_cp)
        T_cp = eq.step__cp_comm_time(
            L_stage=Ls, T_ag=T_ag, T_rs=T_rs, m=m, o_cp=asm.cp_overlap, T_att=T_att,
            r_full=ctx.r_full)
    T_ep = ep_comm_time(ctx, nic)
    set_scope("pp")
    # a pipeline over more than one node hops between nodes (stages of s = t x cp x dp ranks
    # fill, tile or straddle nodes); 1F1B's steady state runs at its slowest hop
    s_pp = t * cp * ctx.dp
    inter = (s_pp >= ctx.gpn) | (ctx.pp * s_pp > ctx.gpn)
    alpha, beta = neighbour(hw, inter, nic)
    z_pp = eq.step__p2p_message_bytes(b=mb, b_w=wb, c=cp, h=model.hidden, s=s,
                                      t_sp=np.where(ctx.spf == 1, t, 1))
    p2p = eq.comm__p2p_time(alpha=alpha, beta=beta, z=z_pp)
    T_pp = eq.step__pp_comm_time(T_p2p=np.where(ctx.pp > 1, p2p, 0.0), m=m, o_pp=asm.pp_overlap,
                                 o_pi=asm.pp_overlap_interleaved, p=ctx.pp, v=ctx.v)
    return T_tp, T_cp, T_ep, T_pp


def _expert_dp_group(ctx: Ctx, n_dp, nic: float) -> dict:
    """Ring arguments of the expert-DP group, DP x CP x TP / (EP x ETP) ranks EP x ETP apart
    (Megatron-core's expert rank order "tp-ep-dp-pp", parallel_state.py
    initialize_model_parallel; torchtitan's dp_shard_mod_ep mesh), on its own placement: with
    EP filling the node it has one rank per node, whose ring crosses every node through that
    GPU's NIC (topology.group_placed), not the whole DP group's NICs."""
    n_x, stride = n_dp * ctx.t / (ctx.ep * ctx.t_x), ctx.t_x * ctx.ep
    a_x, b_x, _ = group_placed(ctx.hw, n_x, stride, nic=nic)
    return dict(n=n_x, stride=stride, beta=b_x, alpha=a_x)


def _data_parallel(ctx: Ctx, mem: MemoryRecord, comp: ComputeRecord, nic: float):
    """Gradient reduction and ZeRO weight gathers per stage (step.dp_comm/exposed_time)."""
    hw, asm, tr, z, dp, P = ctx.hw, ctx.asm, ctx.tr, ctx.z, ctx.dp, mem.P
    gbytes, wb = tr.gradient_bytes, gather_bytes_per_param(ctx, P, mem.flags)  # gathers'
    set_scope("dp")
    # ZeRO/FSDP/DDP reduce over data parallel x context parallel (Megatron's data-parallel group
    # with context parallel, torchtitan's dp_shard x cp mesh); expert gradients over DP x CP / EP
    n_dp = dp * ctx.cp
    a_dp, b_dp, nodes = group_placed(hw, n_dp, ctx.t, nic=nic)
    p_x = mem.p_x
    cap_g = eq.memory__bucket_capacity_bytes(M_ddp=asm.ddp_bucket_MB, Z=z,
                                             Z_bk=asm.zero_bucket_params, b_g=gbytes)
    P_d = P - p_x  # the dense (non-expert) parameters
    k_g = eq.step__gradient_buckets(B_cap=cap_g, P=P_d, b_g=gbytes)
    dpr = dict(n=n_dp, stride=ctx.t, beta=b_dp, alpha=a_dp,
               z=eq.step__dp_bucket_bytes(P=P_d, b_g=gbytes, n_bk=k_g))
    n_mod = np.maximum(1, ctx.st.layers) * modules_per_layer(ctx.model, asm)
    # DDP (ZeRO-0) all-reduces; so does ZeRO-1 where the profile says (zero1_grad_all_reduce)
    ar = (z == 0) | ((z == 1) & (asm.zero1_grad_all_reduce > 0))
    both = None
    if not tr.multicast and not recording_active():  # the gather's sizes first: its ring and
        k_w = eq.step__weight_gathers(P=P, Z=z, Z_b=asm.zero_bucket_params, n_mod=n_mod)
        z_piece = eq.step__dp_gather_piece_bytes(P=P_d, b_w=wb, k_w=k_w)  # with the reduction
        both = reduce_and_gather(ctx, ar, dpr, z_piece, nodes)
    T_bkt = both[0] if both else _either(ctx, ar, "all-reduce", "reduce-scatter", dpr)
    T_red = k_g * T_bkt
    moe = np.any(np.asarray(p_x) > 0)
    if moe:  # MoE: the expert gradients reduce over the expert-DP group
        set_scope("dp experts")
        k_x = eq.step__gradient_buckets(B_cap=cap_g, P=p_x, b_g=gbytes)
        dpx = dict(_expert_dp_group(ctx, n_dp, nic),
                   z=eq.step__dp_bucket_bytes(P=p_x, b_g=gbytes, n_bk=k_x))
        T_bkx = _either(ctx, ar, "all-reduce", "reduce-scatter", dpx)
        T_red = T_red + np.where(np.asarray(p_x) > 0, k_x * T_bkx, 0.0)
        set_scope("dp")
    if both:
        t_piece = both[1]
    else:
        k_w = eq.step__weight_gathers(P=P, Z=z, Z_b=asm.zero_bucket_params, n_mod=n_mod)
        # a piece's dense weights over the DP group (all of it for a dense model)
        z_piece = eq.step__dp_gather_piece_bytes(P=P_d, b_w=wb, k_w=k_w)
        t_piece = (eq.comm__multicast_all_gather_time(alpha=a_dp, beta=b_dp, n=n_dp, z=z_piece)
                   if tr.multicast else _ring(ctx, "all-gather", n_dp, ctx.t, z_piece, b_dp, a_dp))
    if moe:  # and its expert weights over the expert-DP group (a scope of its own: `explain`
        set_scope("dp experts gather")  # shows one call per scope, the reduction's above)
        x = _expert_dp_group(ctx, n_dp, nic)
        z_px = eq.step__dp_gather_piece_bytes(P=p_x, b_w=wb, k_w=k_w)
        t_piece = t_piece + np.where(np.asarray(p_x) > 0, _ring(
            ctx, "all-gather", x["n"], x["stride"], z_px, x["beta"], x["alpha"]), 0.0)
        set_scope("dp")
    T_gat = eq.step__dp_gather_time(Z=z, k_w=k_w, t_g=t_piece)
    g_x = _zero3_wait(ctx, (z == 3) & (n_dp > 1), n_mod, P, t_piece, comp, T_red, T_bkt)
    # the per-module fixed cost of every gather pass, as the exposed term charges it (in G_x)
    A_g = np.where(n_dp > 1, n_mod * asm.zero3_gather_latency_us * 1e-6, 0.0)
    dp_args = dict(T_gat=T_gat, T_red=T_red, Z=z, m=ctx.m, A_g=A_g,
                   r_z=ctx.r_full * asm.zero3_recompute_regathers)
    T_dp = eq.step__dp_comm_time(**dp_args)
    # o_dr 0 after the backward: ZeRO-1's all-reduce, PP's flush, an engine's ZeRO-0 all-reduce
    after = ((ar & (z == 1)) | ((ctx.pp > 1) & (asm.dp_reduce_after_pipeline > 0))
             | ((z == 0) & (asm.dp_reduce_after_backward > 0)))
    T_dpx = eq.step__dp_exposed_time(G_x=g_x, T_bkt=T_bkt, o_pg=asm.dp_gather_overlap,
                                     o_dr=np.where(after, 0.0, asm.dp_reduce_overlap),
                                     W_b=comp.W_b, W_f=comp.W_f, **dp_args)
    set_scope("")
    return T_dp, T_dpx


def _zero3_wait(ctx: Ctx, on, n_mod, P, t_piece, comp: ComputeRecord, T_red, T_bkt):
    """G_x of step.dp_exposed_time: the ZeRO-3 gathers a micro-batch waits for where ``on``
    (ZeRO-3 over more than one rank), else 0. A batch with no such layout skips the computation
    unless `explain` records it (a speed tactic: the same zeros)."""
    asm, r_full = ctx.asm, ctx.r_full
    if not recording_active() and not on.any():
        return np.zeros(broadcast_small(on.shape, np.shape(n_mod), np.shape(P), np.shape(t_piece),
                                        np.shape(comp.W_f), np.shape(comp.W_b),
                                        np.shape(r_full), np.shape(T_red)))
    T_rb = eq.offload__zero3_overlapped_reduce_time(o_dr=asm.dp_reduce_overlap, T_red=T_red,
                                                    T_bkt=T_bkt)
    g_x = zero3_exposed_gather(modules=n_mod, module_params=P / n_mod, gather_s=t_piece,
                               forward_s=comp.W_f, backward_s=comp.W_b, asm=asm,
                               recompute_full=r_full, reduce_s=T_rb)
    return np.where(on, g_x, 0.0)


def comm_stage(ctx: Ctx, mem: MemoryRecord, comp: ComputeRecord) -> CommRecord:
    nic = nic_Bps(ctx.hw)
    T_tp, T_cp, T_ep, T_pp = _model_parallel(ctx, mem, nic, comp.T_att)
    T_dp, T_dpx = _data_parallel(ctx, mem, comp, nic)
    return CommRecord(T_tp, T_cp, T_ep, T_pp, T_dp, T_dpx)
