"""The one evaluator: a batch of layouts in, memory per part and stage, feasibility with reasons,
and every step-time term out, as arrays.

Every number is a call of a compiled equation (:mod:`optimus_calc.equations.compiled`,
generated from the sympy registry that `explain` prints), made through the recording stand-in
so `explain` can show each one. `memory`, `step`, `compare`, `fit` and `nics` evaluate a batch
of one; the planner evaluates its whole grid with this same function.

The evaluation runs in stages over a frozen context (records.py), each returning a frozen
record: memory, offload devices and feasibility, compute and communication (work.py), the
optimizer step, and the composition of the step time as a sum of named terms. The offload
targets are strategy objects (strategies/): the evaluator iterates the registry. Pipeline stages are a trailing array axis. With ``all_stages`` every stage is evaluated (one
layout); otherwise each pipeline degree's stages are reduced to the stages that can bind: a
stage whose shape (layers, MoE layers, parameters, first/last) repeats an earlier stage's holds
no more in-flight micro-batches than it (1F1B: min(p - i, m) falls with i) and takes the same
time, so it can never be the most loaded. The result is exact, not a sample of stages.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from optimus_calc.equations.recording import (Recorder, eq, recording, set_scope, set_stage,
                                              active as recording_active)
from optimus_calc.evaluate import fp8
from optimus_calc.evaluate import strategies as S
from optimus_calc.evaluate.batch import R_FULL, R_SELECTIVE, Batch
from optimus_calc.evaluate.context import Hardware
from optimus_calc.evaluate.efficiency import attention_span
from optimus_calc.evaluate.evaluation import Evaluation
from optimus_calc.evaluate.offload_step import persistent_params
from optimus_calc.evaluate.optimizer import Impl, bytes_per_param, flops_per_param
from optimus_calc.evaluate.reasons import Reason
from optimus_calc.evaluate.records import (CommRecord, ComputeRecord, Ctx, Devices, HostState,
                                           MemoryRecord, OptimizerInputs, OptimizerRecord,
                                           active_params, at_grid, make_ctx, number, per_model)
from optimus_calc.evaluate.shapes import (activation_coefficients, clamp_copy, op_sac_widths,
                                          discarded_coefficients, routed_coefficient)
from optimus_calc.evaluate.stages import (STAGE_MAJOR_FROM, StageTable, broadcast_small,
                                          by_strategy, ndim, shaped, stage_argmax, stage_max)
from optimus_calc.evaluate.strategies.base import bit
from optimus_calc.evaluate.topology import ep_comm_time, nic_Bps
from optimus_calc.evaluate.work import comm_stage, compute_stage, experts_rerun
from optimus_calc.specs.model import BareModel, Model
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Training
from optimus_calc.units import GB


def usable_gpu_bytes(hw: Hardware, asm: Assumptions) -> float:
    """GPU memory a layout may fill: the capacity less the safety margin (gpu_headroom). The one
    place this is computed (memory, fit and the planner read it)."""
    return float(eq.memory__usable_gpu_bytes(C_gpu=hw.gpu.memory_bytes, f_h=asm.gpu_headroom))


def evaluate(batch: Batch, model: Model | BareModel, hw: Hardware, tr: Training,
             asm: Assumptions, all_stages: bool = False, record: bool = False,
             stages: StageTable | None = None, with_step: bool = True) -> Evaluation:
    """Evaluate every layout of ``batch``. ``stages`` (from :func:`stage_table` over the
    batch's pipeline degrees) may be given to reuse it across the chunks of a search. With
    ``record`` every equation call is kept (inputs, result, stage) for `explain`."""
    rec = Recorder() if record else None
    with recording(rec):
        ctx = make_ctx(batch, model, hw, tr, asm, all_stages, stages)
        ev = _evaluate(ctx, with_step)
    return ev if rec is None else dataclasses.replace(ev, calls=tuple(rec.calls))


def _first(ctx: Ctx, worst: bool = True):
    """Memory, offload devices and feasibility: (memory record, devices, Evaluation fields);
    without ``worst`` no most loaded stage (worst_memory None: evaluate_window's readers)."""
    set_stage("memory")
    mem = memory_stage(ctx)
    set_stage("offload devices")
    dev = devices_stage(ctx, mem)
    common = dict(
        stage_index=ctx.st.index, stage_layers=ctx.st.layers, params_stage=mem.P,
        weights_stage=mem.W, gradients_stage=mem.G, optimizer_stage=mem.O,
        activations_stage=mem.act, overhead_stage=mem.over, total_stage=mem.total,
        in_flight_stage=mem.n_f, gpu_bytes=mem.gpu_bytes, micro_batches=ctx.m[..., 0],
        worst_memory=mem.worst if worst else None, capacity_bytes=ctx.hw.gpu.memory_bytes,
        offload_bytes_per_gpu=dev.bytes_per_gpu, offload_bytes_per_device=dev.bytes_per_device,
        offload_capacity_per_device=dev.capacity, offload_devices_per_node=dev.per_node,
        spill_bytes_per_device=dev.spill, host_bytes_per_node=dev.host_per_node,
        host_capacity_bytes=dev.host_capacity, reasons=dev.reasons,
        shard_degree_stage=mem.n_sh)
    return mem, dev, common


def evaluate_window(batch: Batch, model: Model | BareModel, hw: Hardware, tr: Training,
                    asm: Assumptions, window, all_stages: bool = False,
                    stages: StageTable | None = None, lazy: bool = False,
                    comm: bool = False) -> tuple[Evaluation, np.ndarray | None]:
    """The first pass's evaluation (memory, devices, feasibility; the stages that can bind) and
    ``window(compute, ctx)`` (``comm``: ``window(compute, communication, ctx)``), no optimizer
    step: NIC sizing's SmartNIC window or :func:`compute_bound_s`; None with model states only.
    ``lazy``: a function computing it (given ``rows``, at a chunk's grid points: at_grid)."""
    ctx = make_ctx(batch, model, hw, tr, asm, all_stages, stages)
    mem, _, common = _first(ctx, worst=False)
    if mem.states_only:
        return Evaluation(has_step=False, **common), None

    def computed(rows=None):
        set_stage("compute")
        c, m = (ctx, mem) if rows is None else at_grid(ctx, mem, rows)
        comp = compute_stage(c, m)
        return window(comp, comm_stage(c, m, comp), c) if comm else window(comp, c)
    return Evaluation(has_step=False, **common), (computed if lazy else computed())


def _evaluate(ctx: Ctx, with_step: bool) -> Evaluation:
    mem, dev, common = _first(ctx)
    if mem.states_only or not with_step:  # the planner's first pass: memory and feasibility
        return Evaluation(has_step=False, **common)
    set_stage("compute")
    comp = compute_stage(ctx, mem)
    set_stage("communication")
    comm = comm_stage(ctx, mem, comp)
    set_stage("optimizer")
    opt = optimizer_stage(ctx, mem, comp, dev, comm)
    set_stage("composition")
    return compose(ctx, mem, comp, comm, opt, common)


# ---- memory per stage ----------------------------------------------------------------------

def _resident_params(ctx: Ctx):
    """(P_pers, p_mod): what ZeRO-Infinity keeps resident: persistent tensors, a live module."""
    model = ctx.model
    if not isinstance(model, Model):  # a bare count has no modules: nothing resident is known
        return 0.0, 0.0
    p_pers = persistent_params([model.hidden] * model.layer_norms, ctx.st.layers, ctx.asm)
    p_mod = model.hidden * max(model.ffn_hidden, model.expert_ffn if model.is_moe else 0,
                               model.score_dim) / ctx.t
    return p_pers, p_mod


def _activations(ctx: Ctx, P, W, G, O, sigma, n_f):
    """(activations, overheads, layer_args) per stage; zeros with model states only."""
    model, asm, tr, st = ctx.model, ctx.asm, ctx.tr, ctx.st
    assert isinstance(model, Model)
    q_c, m_c = per_model(model, "activation_coefficients", activation_coefficients)
    layer_args = dict(a=model.heads, b=ctx.mb, c=ctx.cp, d=int(tr.dropout), h=model.hidden,
                      iota=ctx.iota, m_c=m_c, phi=int(tr.flash_attention), q_c=q_c, s=ctx.s,
                      sigma=sigma, t=ctx.t, x_c=routed_coefficient(model))
    act_layer = raw = eq.memory__activation_layer_bytes(r=ctx.rc, **layer_args)
    if asm.selective_policy:  # torchtitan's op AC keeps its own set (memory.op_sac_layer_bytes)
        i_c, o_c, _ = op_sac_widths(model, asm.selective_policy)
        sac = eq.memory__op_sac_layer_bytes(i_c=i_c, o_c=o_c, **{
            k: layer_args[k] for k in ("b", "c", "h", "s", "sigma", "t")})
        act_layer = np.where(ctx.rc == R_SELECTIVE, sac, act_layer)
    act_layer = fp8.activation_layer_bytes(ctx, act_layer, layer_args)
    sub = {k: layer_args[k] for k in ("b", "c", "h", "s", "sigma", "t")}
    if tr.recompute_modules and model.is_moe:  # what --recompute-modules discard (selective),
        l_r, x_r = discarded_coefficients(model, tr.recompute_modules)  # as FP8 saved them
        kappa = 1 - (fp8.saved_input_bytes_less(tr) / 2 if fp8.is_fp8(tr) else 0.0)
        gone = eq.memory__discarded_activation_bytes(kappa_k=kappa, l_r=l_r, x_r=x_r, **sub)
        act_layer = act_layer - np.where(ctx.rc == R_SELECTIVE, gone, 0.0)
    if c_k := clamp_copy(model):  # memory only (its traffic: compute.moe_act_clamp_bytes)
        copy = eq.memory__glu_clamp_copy_bytes(c_k=c_k, **{k: sub[k] for k in "bchst"})
        sel = ("moe_act" in tr.recompute_modules) or asm.selective_policy > 0  # (its text)
        act_layer = act_layer + np.where((ctx.rc == R_FULL) | (ctx.rc == R_SELECTIVE) & sel,
                                         0.0, copy)
    if asm.selective_policy and model.is_moe:  # and its save list may keep the EP all-to-alls
        a2a = eq.memory__op_sac_ep_saved_bytes(
            L_moe=st.moe_layers, L_s=np.maximum(st.layers, 1), b=ctx.mb, b_w=tr.weight_bytes,
            c=ctx.cp, e=ctx.ep, h=model.hidden, iota=ctx.iota, k=model.top_k, s=ctx.s,
            t=ctx.t, t_x=ctx.t_x, w_a=asm.sac_saves_ep_all_to_all)
        act_layer = act_layer + np.where(ctx.rc == R_SELECTIVE, a2a, 0.0)
    act = eq.memory__stage_activation_bytes(
        L_s=st.layers, M_layer=act_layer, V=model.vocab, b=ctx.mb, beta_l=asm.logits_bytes,
        c=ctx.cp, lambda_l=st.last, n_f=n_f, p=ctx.pp,
        s=ctx.s, t=ctx.t, v=ctx.v)
    # full recompute re-materialises one layer at a time on top of the checkpoints (r = 0 is
    # ``raw`` again where no layout recomputes, unless `explain` records the call)
    same = not recording_active() and not ctx.rc.any() and all(
        v.shape == raw.shape for v in layer_args.values() if type(v) is np.ndarray)
    act0 = raw if same else eq.memory__activation_layer_bytes(r=0, **layer_args)
    if not same:  # (same: no layout recomputes, M_l0 x 0 = +0 would be added to act >= +0)
        act = act + eq.memory__recompute_working_bytes(M_l0=act0, r_f=ctx.r_full)
    z, gbytes = ctx.z, tr.gradient_bytes
    cap_bkt = eq.memory__bucket_capacity_bytes(M_ddp=asm.ddp_bucket_MB, Z=z,
                                               Z_bk=asm.zero_bucket_params, b_g=gbytes)
    bkt = eq.memory__bucket_bytes(B_cap=cap_bkt, P=P, b_g=gbytes)
    over = eq.memory__overhead_bytes(
        G=G, M_act=act, M_bkt=bkt, M_ctx=asm.cuda_context_GB * GB, O=O,
        P_big=per_model(model, "largest_layer_params", lambda m: m.largest_layer_params), W=W,
        Z=z, f_frag=asm.fragmentation, t=ctx.t)
    return act, over, layer_args, act0


def memory_stage(ctx: Ctx) -> MemoryRecord:
    tr, asm, st, z, dp = ctx.tr, ctx.asm, ctx.st, ctx.z, ctx.dp
    wb, gbytes, ob = tr.weight_bytes, tr.gradient_bytes, tr.optimizer_bytes
    flags = o_w, o_g, o_o, f_k = S.offload_flags(ctx.off, ctx.opar, ctx.gfrac, ctx.codes, ctx.mine)
    t_x = ctx.t_x
    P = eq.memory__params_per_gpu(A=st.A, R=st.R, X=st.X, e=ctx.ep, t=ctx.t, t_x=t_x)
    # ZeRO/FSDP states shard over DP x CP; expert states over expert-DP DP x CP x TP / (EP x ETP)
    p_x = st.X / (ctx.ep * t_x)
    n_sh = eq.memory__zero_shard_degree(D_p=dp, P=P, P_x=p_x, c=ctx.cp, e=ctx.ep, t=ctx.t,
                                        t_x=t_x)
    p_pers, p_mod = _resident_params(ctx)
    w_res = eq.memory__zero3_offload_param_resident_bytes(
        B_pf=asm.zero3_prefetch_bucket_params, M_live=asm.zero3_max_live_params, P_pers=p_pers,
        b_g=gbytes, b_w=wb, p_mod=p_mod)
    W = eq.memory__weights_bytes(N_d=n_sh, P=P, W_res=w_res, Z=z, b_w=wb, o_w=o_w)
    if ndim(w8 := fp8.weight_copy_bytes(ctx)) or w8:  # FP8 copies of the GEMM weights (TE)
        W = W + w8
    if ndim(w16 := fp8.primary_weight_saving_bytes(ctx, n_sh, flags)) or w16:  # FP8 params:
        W = W - w16  # no 16-bit copy of the GEMM weights
    G = eq.memory__gradients_bytes(N_d=n_sh, P=P, Z=z, a_bf=asm.zero1_grad_all_reduce, b_g=gbytes,
                                   b_w=wb, k_g=asm.grads_stay_on_gpu, o_g=o_g)
    O = eq.memory__optimizer_bytes(N_d=n_sh, P=P, Z=z, b_o=ob, f_k=f_k, o_o=o_o)
    n_f = np.minimum(ctx.pp - st.index, ctx.m)
    states_only = tr.model_states_only or isinstance(ctx.model, BareModel)
    sigma = ((ctx.spf == 1) & (ctx.t > 1)).astype(np.float64)
    if states_only:
        act = over = np.zeros(np.broadcast_shapes(np.shape(W), np.shape(G), np.shape(O)))
        layer_args: dict = {}
        act0 = None
    else:
        act, over, layer_args, act0 = _activations(ctx, P, W, G, O, sigma, n_f)
    total = eq.memory__gpu_total_bytes(G=G, M_act=act, M_over=over, O=O, W=W)
    return MemoryRecord(flags, P, W, G, O, act, over, total, n_f, sigma, layer_args,
                        states_only, n_sh, p_x, act0)


# ---- offload devices and feasibility --------------------------------------------------------

def host_state(ctx: Ctx, mem: MemoryRecord) -> HostState:
    """What one GPU moves off (per stage) and the host RAM a node can give to it."""
    tr, asm, z, dp, P = ctx.tr, ctx.asm, ctx.z, mem.n_sh, mem.P
    o_w, o_g, o_o, f_k = mem.flags
    return HostState(
        optimizer=eq.memory__optimizer_offloaded_bytes(N_d=dp, P=P, Z=z, b_o=tr.optimizer_bytes,
                                                       f_k=f_k, o_o=o_o),
        gradients=eq.memory__host_gradients_bytes(N_d=dp, P=P, Z=z, b_h=asm.host_grad_bytes,
                                                  o_g=o_g),
        weights=eq.memory__host_weights_bytes(N_d=dp, P=P, Z=z, b_w=tr.weight_bytes, o_w=o_w),
        host_capacity=number(eq.memory__usable_host_bytes(C_node=ctx.hw.node.host_memory_bytes,
                                                            f_r=asm.host_reserved_fraction)))


def devices_stage(ctx: Ctx, mem: MemoryRecord) -> Devices:
    """Each layout's offload devices (its strategy's), reduced to the most loaded stage, and
    the feasibility bits: GPU memory, then each strategy's own reasons."""
    host = host_state(ctx, mem)
    offc = ctx.off[..., 0]
    # a layout's strategy is the same on every stage: a large batch reduces over the stages, then
    # selects (no per-stage array per figure); a small one selects, then reduces (fewer calls)
    full = broadcast_small(ctx.off.shape, mem.total.shape)
    small = math.prod(full) <= STAGE_MAJOR_FROM
    staged = ("bytes_per_device", "bytes_per_gpu", "spill", "host_per_node")
    pairs: dict[str, list] = {k: [] for k in staged + ("capacity", "per_node")}
    uses = {}
    for code, strat in S.coded():
        if not ctx.uses(code):
            continue
        set_scope(strat.key)
        use = uses[code] = strat.devices(ctx, host)
        mine, mine0 = ctx.mine(code), ctx.mine(code, 0)  # True: every layout (merged alike)
        for name in pairs:
            value = getattr(use, name)
            if ndim(value) == 0 and value == 0:
                continue  # the strategies' layouts are disjoint: 0 is what ``mine`` gets
            if name in staged and not small:
                value = stage_max(value)
            elif name not in staged and ndim(value):
                value = np.asarray(value)[..., 0]
            pairs[name].append((mine if name in staged and small else mine0, value))
    set_scope("")
    acc = {k: (stage_max(by_strategy(pairs[k], full)) if small
               else by_strategy(pairs[k], full[:-1])) for k in staged}
    acc.update(capacity=by_strategy(pairs["capacity"], offc.shape),
               per_node=by_strategy(pairs["per_node"], offc.shape, np.int64))
    red = Devices(**acc, host_capacity=host.host_capacity, reasons=None, uses=uses)
    bits = bit(mem.gpu_bytes > usable_gpu_bytes(ctx.hw, ctx.asm), Reason.GPU_MEMORY)
    for code, strat in S.coded():
        if code in uses and (ndim(r := strat.reasons(ctx, red, red.host_capacity)) or r):
            bits = bits | np.where(ctx.mine(code, 0), r, 0)  # (no bit set: bits as they are)
    return Devices(  # built again: dataclasses.replace costs more on a batch of one
        **acc, host_capacity=host.host_capacity, reasons=bits, uses=uses)


# ---- optimizer step on the device that owns the state ----------------------------------------

def optimizer_inputs(ctx: Ctx, mem: MemoryRecord, comm: CommRecord) -> OptimizerInputs:
    """What every strategy's optimizer step starts from: the rank's ZeRO partition of each
    stage's parameters (over memory.zero_shard_degree), the optimizer's constants and the
    exposed data-parallel time (the SmartNIC's window includes it)."""
    return optimizer_inputs_of(ctx.hw, ctx.tr, mem.P / np.where(ctx.z >= 1, mem.n_sh, 1),
                               comm.T_dpx)


def optimizer_inputs_of(hw: Hardware, tr: Training, shard, dp_tail_s=0.0) -> OptimizerInputs:
    """:func:`optimizer_inputs` for a given partition ``shard`` (`breakeven`'s closed forms
    start from the evaluator's partition at the binding stage)."""
    link = hw.gpu_host_link
    return OptimizerInputs(
        shard=shard, phi=flops_per_param(tr.optimizer),
        bpp=bytes_per_param(tr.optimizer, Impl.FUSED, tr.gradient_bytes),
        link_Bps=link.bandwidth_Bps * link.efficiency,
        link_kw=dict(link_GBps=link.bandwidth_GBps, link_eff=link.efficiency),
        dp_tail_s=dp_tail_s)


def optimizer_stage(ctx: Ctx, mem: MemoryRecord, comp: ComputeRecord, dev: Devices,
                    comm: CommRecord) -> OptimizerRecord:
    """Each layout's optimizer step under its strategy: step, transfers, exposed part, the
    window it overlaps with, and the exposed parameter-offload stream."""
    opt = optimizer_inputs(ctx, mem, comm)
    base = broadcast_small(ctx.off.shape, np.shape(opt.shard))
    names = ("step_s", "transfer_s", "exposed_s", "window_s")
    pairs: dict[str, list] = {k: [] for k in names}
    param_exposed = 0.0  # T_po: each strategy's is 0 outside its layouts
    for code, strat in S.coded():
        if code not in dev.uses:
            continue
        set_scope(strat.key)
        use = strat.optimizer(ctx, mem, comp, opt, dev.uses[code])
        if use is None:  # the node cannot run it: the layout is infeasible, its step 0
            continue
        for k, v in pairs.items():
            x = getattr(use, k)
            if ndim(x) or x != 0:  # a 0 is what by_strategy leaves outside the layouts given
                v.append((ctx.mine(code), x))
        param_exposed = param_exposed + use.param_exposed_s
    set_scope("")
    return OptimizerRecord(**{k: by_strategy(pairs[k], base) for k in names},
                           param_exposed_s=param_exposed)


def fixed_time_s(ctx: Ctx):  # step.fixed_time per stage: compose's T_fix, the bound's
    return eq.step__fixed_time(
        L_stage=ctx.st.layers, L_moe=ctx.st.moe_layers, T_s0=ctx.asm.step_fixed_s, m=ctx.m,
        t_l0=ctx.asm.layer_fixed_s, r_h=experts_rerun(ctx),
        t_mf=ctx.asm.moe_layer_fixed_s,
        t_mh=np.where(ctx.ep >= ctx.asm.moe_host_sync_min_ep, ctx.asm.moe_layer_host_s, 0.0))


def compute_bound_s(comp: ComputeRecord, ctx: Ctx) -> np.ndarray:
    """A lower bound on step.time: the most loaded stage's T_b + T_bubble (+ T_ep for an MoE
    model) + T_f + T_fix, which step.time sums in this order with only non-negative terms
    between and after them (the properties tests check each >= 0); rounded addition is
    monotone, so the bound never exceeds the step from the same records. A dense model's T_ep
    is +0, which would change no sum, so it is not computed. The planner skips the steps it
    rules out (test_pruning); with T_ep an MoE plan evaluates far fewer of them."""
    T = comp.T_b + comp.bubble
    if ctx.model.is_moe:
        T = T + ep_comm_time(ctx, nic_Bps(ctx.hw))
    return stage_max(T + comp.T_f + fixed_time_s(ctx))


# ---- compose ---------------------------------------------------------------------------------

def compose(ctx: Ctx, mem: MemoryRecord, comp: ComputeRecord, comm: CommRecord,
            opt: OptimizerRecord, common: dict) -> Evaluation:
    """The step time of each stage as a sum of named terms (step.time); the slowest binds."""
    model, T_po = ctx.model, opt.param_exposed_s
    terms = dict(T_f=comp.T_f, T_b=comp.T_b, T_bubble=comp.bubble, T_tp=comm.T_tp,
                 T_cp=comm.T_cp, T_ep=comm.T_ep, T_pp=comm.T_pp, T_dp=comm.T_dpx,
                 T_opt=opt.exposed_s, T_po=T_po,
                 T_fix=fixed_time_s(ctx))
    step_stage = eq.step__time(**terms)
    worst_t = stage_argmax(step_stage)
    step = stage_max(step_stage)
    model_flops = eq.compute__step_flops(F_h=comp.f_h, F_l=comp.f_l, F_r=0, L=model.layers,
                                         tokens=comp.tokens)[..., 0]
    tokens = comp.tokens[..., 0]
    if recording_active():  # for `explain` only: the reports compute their own from the figures
        eq.step__mfu(F_model=model_flops, N_gpus=ctx.hw.gpus, T_step=step, peak=comp.peak)
        eq.step__tokens_per_s(T_step=step, tokens=tokens)
    shape = np.shape(opt.exposed_s)
    per_stage = {
        "forward_s": comp.T_f, "backward_s": comp.T_b, "compute_s": comp.T_cf + comp.T_cb,
        "elementwise_s": comp.T_ef + comp.T_eb, "bubble_s": comp.bubble,
        "tp_comm_s": comm.T_tp, "cp_comm_s": comm.T_cp, "ep_comm_s": comm.T_ep,
        "pp_comm_s": comm.T_pp, "dp_comm_s": comm.T_dp, "dp_comm_exposed_s": comm.T_dpx,
        "optimizer_s": opt.step_s, "optimizer_exposed_s": opt.exposed_s,
        "offload_transfer_s": shaped(opt.transfer_s, shape),
        "optimizer_window_s": shaped(opt.window_s, shape),
        "param_offload_exposed_s": T_po if np.ndim(T_po) else np.zeros((1,)),
        "fixed_s": shaped(terms["T_fix"], np.shape(step_stage)),
        "hardware_flops": eq.compute__step_flops(F_h=comp.f_h, F_l=comp.f_l, F_r=comp.f_r,
                                                 L=model.layers, tokens=tokens[..., None])}
    # float: 6 x 405e9 x 4M tokens passes int64's 9.2e18 (issue 37 High 1)
    six_n = eq.compute__six_n_flops(N_act=active_params(model),
                                    tokens=np.asarray(tokens, dtype=float))
    causal = eq.compute__causal_model_flops(
        F_model=model_flops, L=model.layers, tokens=np.asarray(tokens, dtype=float),
        F_ac=eq.step__attention_core_flops_per_token(d_s=model.score_dim, d_v=model.value_dim,
                                                     s=attention_span(model, ctx.s)))
    return Evaluation(has_step=True, step_time_s=step, worst_time=worst_t, calls=(),
                      stage_terms=per_stage, step_figures=dict(
                          model_flops=model_flops, peak=comp.peak, tokens=tokens,
                          gpus=ctx.hw.gpus, model_flops_6n=six_n,
                          model_flops_causal=causal), **common)
