"""One topology function: the (alpha, beta) of a ring over a group of GPUs.

The evaluator's TP/CP/EP/DP rings and pipeline p2p, and the `comm` command, all place their
group with :func:`group`: inside a node over the scale-up link, across nodes bounded by the
group's share of the node's NICs (rail-optimised: each GPU drives its own NIC), the NIC's
bandwidth capped by its host PCIe link (comm.nic_bandwidth) and its own latency alpha.

The evaluator's ring collectives (TP, CP, DP) are here too (:func:`_ring`, :func:`_rings`,
:func:`reduce_and_gather`): the per-step alpha model, or NCCL's latency model and fastest
protocol (evaluate/nccl.py), with the small-batch speed tactics that give the same numbers
(docs/ARCHITECTURE.md, "Speed tactics"; tests/test_small_batch.py), and the EP all-to-alls'
time per stage (:func:`ep_comm_time`), which the planner's bound adds (engine.compute_bound_s).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from optimus_calc.equations.recording import active as recording_active
from optimus_calc.equations.recording import eq, set_scope
from optimus_calc.evaluate import nccl
from optimus_calc.evaluate.batch import R_FULL, R_SELECTIVE
from optimus_calc.evaluate.context import Hardware
from optimus_calc.evaluate.stages import broadcast_small
from optimus_calc.record import record
from optimus_calc.units import GB

if TYPE_CHECKING:
    from optimus_calc.evaluate.records import Ctx


def nic_Bps(hw: Hardware, nic_efficiency: float | None = None) -> float:
    """One NIC's effective bandwidth: its line rate or its host PCIe path, the lower."""
    eff = hw.nic.efficiency if nic_efficiency is None else nic_efficiency
    return float(eq.comm__nic_bandwidth(
        B_line=hw.nic.line_rate_Bps, B_pcie=hw.nic_host_link.bandwidth_Bps, eta_n=eff,
        eta_p=hw.nic_host_link.efficiency))


def placement(hw: Hardware, size, stride):
    """(ranks per node, nodes) of the slowest group of ``size`` ranks ``stride`` apart. The
    groups tile the ranks in blocks of size x stride (Megatron-core's rank order); where a
    block does not tile the nodes (a node's GPUs not a multiple of it, e.g. 16 of a 72-GPU
    NVL72 rack, or 3 of 8), some group straddles two nodes: its ranks per node are the fewer
    side's (its ring and all-to-all cross on that side's NICs), its nodes the most any group
    spans (:func:`_straddle`)."""
    gpn = hw.gpus_per_node
    size, stride = np.asarray(size), np.asarray(stride)
    key = None
    if size.size <= _PLACED_SMALL and stride.size <= _PLACED_SMALL:  # a speed tactic, as _GROUPS
        key = (gpn, size.dtype.str, size.shape, size.tobytes(), stride.dtype.str, stride.shape,
               stride.tobytes())
        got = _PLACED.get(key)
        if got is not None:
            return got
    out = _placement(gpn, size, stride)
    if key is not None:
        if len(_PLACED) >= 1024:
            _PLACED.clear()
        for x in out:
            if isinstance(x, np.ndarray):
                x.flags.writeable = False
        _PLACED[key] = out
    return out


# placements of small batches by their inputs (read-only arrays): the same values, kept
_PLACED: dict[tuple, tuple] = {}
_PLACED_SMALL = 256


def _placement(gpn: int, size: np.ndarray, stride: np.ndarray):
    per_node = np.where(stride < gpn, np.maximum(1, np.minimum(size, gpn // np.maximum(stride, 1))),
                        1)
    nodes = np.maximum(1, size // per_node)
    tiled = tiles(gpn, size, stride)
    if tiled.all():
        return per_node, nodes
    pairs, inverse = np.unique(np.stack(np.broadcast_arrays(size, stride)).reshape(2, -1),
                               axis=1, return_inverse=True)
    worst = np.array([_straddle(gpn, int(n), int(s)) for n, s in pairs.T]).T.reshape(2, -1)
    shape = np.broadcast_shapes(size.shape, stride.shape)
    m_w, n_w = (w[inverse.reshape(-1)].reshape(shape) for w in worst)
    return np.where(tiled, per_node, m_w), np.where(tiled, nodes, n_w)


def tiles(gpn: int, size, stride):
    """Whether blocks of size x stride ranks divide a node's GPUs or are a multiple of them."""
    span = np.asarray(size) * np.asarray(stride)
    return (span % gpn) * (gpn % np.maximum(span, 1)) == 0


def nests(gpn: int, size, stride):
    """T_n of comm.routing_node_limit: the blocks tile the nodes and so does the stride (3 on
    8-GPU nodes tiles 72-rank blocks but puts 3, 3 and 2 of a group on them)."""
    stride = np.asarray(stride)
    return tiles(gpn, size, stride) & ((stride % gpn) * (gpn % np.maximum(stride, 1)) == 0)


_STRADDLE: dict[tuple[int, int, int], tuple[int, int]] = {}


def _straddle(gpn: int, size: int, stride: int) -> tuple[int, int]:
    """(fewest ranks on a node of any group, most nodes of any group) over one period of the
    tiling, lcm(gpn, size x stride) ranks: group q of block j holds ranks j size stride + q +
    i stride, i < size."""
    key = (gpn, size, stride)
    if key not in _STRADDLE:
        span = size * stride
        period = span * gpn // np.gcd(span, gpn)
        m, n = size, 1
        for start in range(0, period, span):
            for q in range(min(stride, gpn)):
                counts = np.bincount((start + q + np.arange(size) * stride) // gpn)
                counts = counts[counts > 0]
                m, n = min(m, int(counts.min())), max(n, len(counts))
        _STRADDLE[key] = (m, n)
    return _STRADDLE[key]


# Small batches' groups by what they read (arrays of at most _GROUPS_SMALL values): a report
# or a fit evaluates one layout at a time on the same node, the same TP/CP/DP groups each time.
# A speed tactic: the same values (read-only arrays), not kept while `explain` records.
_GROUPS: dict[tuple, tuple] = {}
_GROUPS_SMALL = 128


def group(hw: Hardware, size, stride, *, nic: float | None = None):
    """(alpha, beta) of a ring over ``size`` ranks ``stride`` apart on ``hw`` (arrays welcome);
    ``nic`` is one NIC's effective bandwidth (default :func:`nic_Bps`)."""
    return group_placed(hw, size, stride, nic=nic)[:2]


def group_placed(hw: Hardware, size, stride, *, nic: float | None = None):
    """(alpha, beta, nodes) of :func:`group`: ``nodes`` the group's nodes (placement's) when
    it was computed, for :func:`_rings` (not again), else None (a small batch's kept group)."""
    il = hw.intra_link
    nic = nic_Bps(hw) if nic is None else nic
    size, stride = np.asarray(size), np.asarray(stride)
    key = None
    if (size.size <= _GROUPS_SMALL and stride.size <= _GROUPS_SMALL
            and isinstance(nic, (float, int)) and not recording_active()):
        key = (hw.gpus_per_node, hw.node.nics, il.alpha_us, il.bandwidth_GBps, il.efficiency,
               hw.nic.alpha_us, nic, size.dtype.str, size.shape, size.tobytes(),
               stride.dtype.str, stride.shape, stride.tobytes())
        out = _GROUPS.get(key)
        if out is not None:
            return out + (None,)
    per_node, nodes = placement(hw, size, stride)
    share = per_node / hw.gpus_per_node * max(hw.node.nics, 1)
    out = ring(nodes, size, share, alpha_intra=il.alpha_s, alpha_inter=hw.nic.alpha_us * 1e-6,
               intra_Bps=il.bandwidth_Bps * il.efficiency, nic=nic)
    if key is not None:
        if len(_GROUPS) >= 1024:
            _GROUPS.clear()
        out = tuple(np.asarray(x) for x in out)
        for x in out:
            x.flags.writeable = False
        _GROUPS[key] = out
    return out + (nodes,)


def gpu_nic_Bps(hw: Hardware, nic: float) -> float:
    """Inter-node bandwidth of one GPU: its share of the node's NICs (one NIC per GPU on a
    rail-optimised node), ``nic`` being one NIC's effective bandwidth."""
    return nic * max(hw.node.nics, 1) / hw.gpus_per_node


def all_to_all(hw: Hardware, size, stride, *, nic: float | None = None) -> dict:
    """Arguments of comm.all_to_all_time for ``size`` ranks ``stride`` apart: the ring's
    per-hop latency, the scale-up link, and one GPU's NIC share (arrays welcome); ``N``, the
    nodes the group spans (:func:`placement`), is comm.dedup_cross_share's, not the time's."""
    il = hw.intra_link
    per_node, nodes = placement(hw, size, stride)
    alpha, _ = group(hw, size, stride, nic=nic)
    nic = nic_Bps(hw) if nic is None else nic
    return dict(alpha=alpha, beta_i=1.0 / (il.bandwidth_Bps * il.efficiency),
                B_g=gpu_nic_Bps(hw, nic), m=per_node, n=size, N=nodes)


def ring(nodes, size, nics, *, alpha_intra, alpha_inter, intra_Bps, nic):
    """(alpha, beta) of a ring over ``size`` ranks on ``nodes`` nodes, ``nics`` NICs of the node
    serving the group there: inside a node the scale-up link, across nodes the slower of it and
    the group's NICs (comm.ring_bandwidth), with each hop's latency (comm.ring_alpha). The
    `comm` command calls it with its own overrides (--alpha-us, efficiencies)."""
    multi = np.asarray(nodes) > 1
    bw = np.where(multi, eq.comm__ring_bandwidth(B_intra=intra_Bps, B_nic=nic, K=nics),
                  intra_Bps)
    al = np.where(multi, eq.comm__ring_alpha(N=nodes, alpha_e=alpha_inter, alpha_i=alpha_intra,
                                             n=size), alpha_intra)
    return al, 1.0 / bw


def neighbour(hw: Hardware, inter, nic: float):
    """(alpha, beta) of a point-to-point hop: across nodes over a NIC (``inter``), else the
    scale-up link."""
    il = hw.intra_link
    return (np.where(inter, hw.nic.alpha_us * 1e-6, il.alpha_s),
            1.0 / np.where(inter, nic, il.bandwidth_Bps * il.efficiency))


@record
class Topology:
    """Effective link parameters of one collective group."""

    ranks: int
    nodes: int
    per_node: int
    alpha_intra_s: float
    alpha_inter_s: float
    intra_Bps: float      # effective, per GPU per direction
    nic_Bps: float        # effective, one NIC
    nics: int             # per node
    intra_link: str
    inter_link: str
    link_class: str = "nvlink"   # NCCL's intra-node latency table (evaluate/nccl.intra_class)
    nvls_Bps: float | None = None  # NVLS all-reduce bus bandwidth of a full NVSwitch node

    @property
    def node_network_Bps(self) -> float:
        return float(eq.comm__node_network_bandwidth(B_nic=self.nic_Bps, K=self.nics))


# ---- the evaluator's rings ----------------------------------------------------------------

# called through the recording stand-in at call time, so `explain` sees each call
RING_EQ = {"all-reduce": lambda **kw: eq.comm__ring_all_reduce_time(**kw),
           "reduce-scatter": lambda **kw: eq.comm__ring_reduce_scatter_time(**kw),
           "all-gather": lambda **kw: eq.comm__ring_all_gather_time(**kw)}


# Small batches' NCCL ring times by their inputs (arrays of at most _RINGS_SMALL values):
# `compare` evaluates one layout under every offload strategy, the same collectives each time.
# A speed tactic: the same values (read-only arrays); the key holds everything _nccl_ring reads.
_RINGS: dict[tuple, np.ndarray] = {}
_RINGS_SMALL = 128


def _ring(ctx: Ctx, coll: str, n, stride, z, beta, alpha):
    """A ring collective over ``n`` ranks ``stride`` apart on the group's ``beta``: the
    per-step ``alpha`` model, or with ``nccl_latency_model`` NCCL's latency model and fastest
    protocol (evaluate/nccl.py)."""
    if not ctx.asm.nccl_latency_model:
        return RING_EQ[coll](alpha=alpha, beta=beta, n=n, z=z)
    if recording_active():  # `explain`: every call as made
        return _nccl_ring(ctx, coll, n, stride, z, beta)
    args = n, stride, z, beta = (np.asarray(n), np.asarray(stride), np.asarray(z),
                                 np.asarray(beta))
    if not (n > 1).any():
        # one rank everywhere (CP 1, DP 1): the ring takes 0 s (nccl.ring_time's value)
        return np.zeros(broadcast_small(n.shape, stride.shape, z.shape, beta.shape))
    if max(n.size, stride.size, z.size, beta.size) > _RINGS_SMALL:
        return _nccl_ring(ctx, coll, *args)
    hw = ctx.hw
    key = (coll, hw.gpus_per_node, hw.intra_link.link_kind, hw.intra_link.nvls_busbw_GBps,
           ctx.asm.nccl_net_overhead_us, n.dtype.str, n.shape, n.tobytes(), stride.dtype.str,
           stride.shape, stride.tobytes(), z.dtype.str, z.shape, z.tobytes(), beta.dtype.str,
           beta.shape, beta.tobytes())
    t = _RINGS.get(key)
    if t is None:
        if len(_RINGS) >= 1024:
            _RINGS.clear()
        t = _RINGS[key] = np.asarray(_nccl_ring(ctx, coll, *args))
        t.flags.writeable = False
    return t


def _rings(ctx: Ctx, colls: tuple, n, stride, z, beta, alpha, nodes=None) -> list:
    """``[_ring(ctx, c, ...) for c in colls]`` (``z`` one array, or a tuple of one per
    collective, of one shape): a batch above the small cache's size (and below nccl.AT_ONCE
    values) computes the collectives of one ring together (nccl.ring_time_many: the same
    numbers in fewer numpy calls). ``nodes``: placement's for ``n`` and ``stride`` if known."""
    zs = tuple(np.asarray(x) for x in z) if isinstance(z, tuple) else (np.asarray(z),) * len(colls)
    a = n, stride, beta = [np.asarray(x) for x in (n, stride, beta)]
    size = max(max(x.size for x in a), zs[0].size)
    if (not ctx.asm.nccl_latency_model or recording_active() or size <= _RINGS_SMALL
            or size > nccl.AT_ONCE // len(colls) or not (n > 1).any()):
        return [_ring(ctx, c, n, stride, zc, beta, alpha) for c, zc in zip(colls, zs)]
    hw = ctx.hw
    if nodes is None:
        _, nodes = placement(hw, n, stride)
    ts = nccl.ring_time_many(colls, n, nodes, zs if isinstance(z, tuple) else zs[0], beta,
                             link_class=nccl.intra_class(hw.intra_link.link_kind),
                             net_overhead_s=ctx.asm.nccl_net_overhead_us * 1e-6)
    return [_nvls(ctx, c, n, nodes, zc, t) for c, zc, t in zip(colls, zs, ts)]


def reduce_and_gather(ctx: Ctx, cond, ring: dict, z_gather, nodes=None):
    """(``_either(ctx, cond, "all-reduce", "reduce-scatter", ring)``, the all-gather of
    ``z_gather`` bytes on the same ring) computed together (:func:`_rings`); None while `explain`
    records (each call in its order), without NCCL's model or when the sizes' shapes differ."""
    cond, z, z_g = np.asarray(cond), np.asarray(ring["z"]), np.asarray(z_gather)
    if recording_active() or not ctx.asm.nccl_latency_model or z.shape != z_g.shape:
        return None
    colls, zs = ("all-reduce", "reduce-scatter", "all-gather"), (z, z, z_g)
    if cond.all() or not cond.any():  # one ZeRO stage kind: only the reduction it uses
        colls, zs = (colls[0] if cond.all() else colls[1], colls[2]), (z, z_g)
    ts = _rings(ctx, colls, ring["n"], ring["stride"], zs, ring["beta"], ring["alpha"], nodes)
    red = np.where(cond, ts[0], ts[1]) if len(ts) == 3 else _where(cond, ts[0])
    return red, ts[-1]


def _nccl_ring(ctx: Ctx, coll: str, n, stride, z, beta):
    hw = ctx.hw
    _, nodes = placement(hw, n, stride)
    t = nccl.ring_time(coll, n, nodes, z, beta,
                       link_class=nccl.intra_class(hw.intra_link.link_kind),
                       net_overhead_s=ctx.asm.nccl_net_overhead_us * 1e-6)
    return _nvls(ctx, coll, n, nodes, z, t)


def _nvls(ctx: Ctx, coll: str, n, nodes, z, t):
    nvls = ctx.hw.intra_link.nvls_busbw_GBps
    if coll == "all-reduce" and nvls:  # NVLS over a full NVSwitch node, when NCCL's model wins
        full = (np.asarray(nodes) == 1) & (np.asarray(n) == ctx.hw.gpus_per_node)
        t = np.where(full, np.minimum(t, nccl.nvls_time(n, z, nvls * GB)), t)
    return t


def _either(ctx: Ctx, cond, yes: str, no: str, ring: dict):
    """``np.where(cond, ring yes, ring no)``; when ``cond`` is the same for every layout (and no
    `explain` records both), only the ring it picks is computed (a speed tactic)."""
    cond = np.asarray(cond)
    if not recording_active():
        if cond.all():
            return _where(cond, _ring(ctx, yes, **ring))
        if not cond.any():
            return _where(cond, _ring(ctx, no, **ring))
    return np.where(cond, _ring(ctx, yes, **ring), _ring(ctx, no, **ring))


def _where(cond, t):
    """``t`` as ``np.where(cond, t, other)`` shapes it when ``cond`` picks ``t`` everywhere."""
    t = np.asarray(t)
    shape = np.broadcast_shapes(cond.shape, t.shape) if cond.shape != t.shape else t.shape
    return np.array(t if shape == t.shape else np.broadcast_to(t, shape),
                    dtype=np.result_type(t, np.float64))


# ---- the EP all-to-alls (step.ep_comm_time): comm_stage's and the planner's bound's ---------

def ep_all_to_all_rerun(rc, policy: float, saves: float):
    """r_a2a of step.ep_comm_time: full recomputation re-sends the forward's EP all-to-alls,
    and so does torchtitan's op AC (policy 1, 2) where its save list lacks them
    (Assumptions.sac_saves_ep_all_to_all 0); Korthikanti's selective keeps the MoE layer."""
    rc = np.asarray(rc)
    return ((rc == R_FULL) | ((rc == R_SELECTIVE) & (policy > 0) & (saves == 0))).astype(float)


def _dedup_share(model, N, asm, m_n: dict, tiled):
    """The share of a deduplicating dispatcher's buffer that crosses nodes: comm.dedup_cross_share,
    or where routing limits a token to fewer than N nodes (comm.routing_node_limit: the run's
    limit, the model's groups; ``tiled`` its T_n) comm.node_limited_cross_share."""
    limit = eq.comm__routing_node_limit(G_r=model.router_groups, M_a=asm.moe_max_nodes, N=N,
                                        T_n=np.where(tiled, 1.0, 0.0), g_r=model.router_group_topk)
    if np.all(limit >= np.asarray(N)):  # no limit binds: the unlimited equation itself
        return eq.comm__dedup_cross_share(k=model.top_k, N=N, **m_n)
    return eq.comm__node_limited_cross_share(M_r=limit, k=model.top_k, N=N, **m_n)


def ep_reach(hw: Hardware, model, ep: int, etp: int) -> tuple[int, int]:
    """(most nodes the model's groups let a token reach, the EP group's nodes), without the
    run's --assume moe_max_nodes: the step's MoE note, by :func:`_dedup_share`'s equation."""
    _, N = placement(hw, ep, etp)
    limit = eq.comm__routing_node_limit(G_r=model.router_groups, M_a=1e6, N=N,
                                        T_n=float(nests(hw.gpus_per_node, ep, etp)),
                                        g_r=model.router_group_topk)
    return int(min(limit, N)), int(N)


def ep_comm_time(ctx: Ctx, nic: float):
    """T_ep per stage (step.ep_comm_time over the EP group's all-to-alls): comm_stage's, and
    the planner's bound's (engine.compute_bound_s)."""
    model, asm, m = ctx.model, ctx.asm, ctx.m
    set_scope("ep")
    a2a = 0.0
    if model.is_moe:
        # the EP group: ranks ETP apart (Megatron's expert grid, ETP innermost:
        # parallel_state.py L887-896 @ d98e8a6); ETP = TP unless parallel folding sets it
        z_ep = eq.step__ep_message_bytes(b=ctx.mb, b_w=ctx.tr.weight_bytes, c=ctx.cp,
                                         h=model.hidden, k=model.top_k, s=ctx.s,
                                         iota=ctx.iota, t=ctx.t, t_x=ctx.t_x)
        ep_group = all_to_all(ctx.hw, ctx.ep, ctx.t_x, nic=nic)
        m_n, N = dict(m=ep_group["m"], n=ep_group["n"]), ep_group.pop("N")
        # DeepEP / HybridEP: a token crosses to a node once
        x = (_dedup_share(model, N, asm, m_n, nests(ctx.gpn, ctx.ep, ctx.t_x))
             if ctx.tr.moe_dispatcher.dedups_nodes else eq.comm__pairwise_cross_share(**m_n))
        a2a = eq.comm__all_to_all_time(z=z_ep, x=x, **ep_group)
    if not model.is_moe and not recording_active():
        # no all-to-all: L_moe x 0 x m x (1 - o_ep) x (2 r + 4), every factor finite and >= 0
        # (o_ep <= 1), is +0 on the shape its inputs give (`explain` sees the call)
        return np.zeros(broadcast_small(ctx.st.moe_layers.shape, np.shape(m), ctx.pp.shape,
                                        ctx.v.shape, ctx.rc.shape))
    # the overlap a framework refuses at PP > 1 without interleaving hides nothing there
    o_ep = np.where((ctx.pp > 1) & (ctx.v <= 1) & (asm.ep_overlap_needs_interleave > 0),
                    0.0, asm.ep_overlap)
    r_a2a = ep_all_to_all_rerun(ctx.rc, asm.selective_policy, asm.sac_saves_ep_all_to_all)
    return eq.step__ep_comm_time(L_moe=ctx.st.moe_layers, T_a2a=a2a, m=m, o_ep=o_ep, r_a2a=r_a2a)
