"""The evaluator's ring collectives (TP, CP, DP): the per-step alpha model, or NCCL's latency
model and fastest protocol (evaluate/nccl.py), with the small-batch speed tactics that give the
same numbers (docs/ARCHITECTURE.md, "Speed tactics"; tests/test_small_batch.py)."""

from __future__ import annotations

import numpy as np

from optimus_calc.equations.recording import active as recording_active
from optimus_calc.equations.recording import eq
from optimus_calc.evaluate import nccl
from optimus_calc.evaluate.records import Ctx
from optimus_calc.evaluate.stages import broadcast_small
from optimus_calc.evaluate.topology import placement
from optimus_calc.units import GB


# called through the recording stand-in at call time, so `explain` sees each call
RING_EQ = {"all-reduce": lambda **kw: eq.comm__ring_all_reduce_time(**kw),
           "reduce-scatter": lambda **kw: eq.comm__ring_reduce_scatter_time(**kw),
           "all-gather": lambda **kw: eq.comm__ring_all_gather_time(**kw)}


# Small batches' NCCL ring times by their inputs (arrays of at most _RINGS_SMALL values):
# `compare` evaluates one layout under every offload strategy, the same collectives each time.
# A speed tactic: the same values (read-only arrays); the key holds everything _nccl_ring reads.
_RINGS: dict[tuple, np.ndarray] = {}
_RINGS_SMALL = 64


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


def _rings(ctx: Ctx, colls: tuple, n, stride, z, beta, alpha) -> list:
    """``[_ring(ctx, c, ...) for c in colls]`` (``z`` one array, or a tuple of one per
    collective, of one shape): a batch above the small cache's size (and below nccl.AT_ONCE
    values) computes the collectives of one ring together (nccl.ring_time_many: the same
    numbers in fewer numpy calls)."""
    zs = tuple(np.asarray(x) for x in z) if isinstance(z, tuple) else (np.asarray(z),) * len(colls)
    a = n, stride, beta = [np.asarray(x) for x in (n, stride, beta)]
    size = max(max(x.size for x in a), zs[0].size)
    if (not ctx.asm.nccl_latency_model or recording_active() or size <= _RINGS_SMALL
            or size > nccl.AT_ONCE // len(colls) or not (n > 1).any()):
        return [_ring(ctx, c, n, stride, zc, beta, alpha) for c, zc in zip(colls, zs)]
    hw = ctx.hw
    _, nodes = placement(hw, n, stride)
    ts = nccl.ring_time_many(colls, n, nodes, zs if isinstance(z, tuple) else zs[0], beta,
                             link_class=nccl.intra_class(hw.intra_link.link_kind),
                             net_overhead_s=ctx.asm.nccl_net_overhead_us * 1e-6)
    return [_nvls(ctx, c, n, nodes, zc, t) for c, zc, t in zip(colls, zs, ts)]


def reduce_and_gather(ctx: Ctx, cond, ring: dict, z_gather):
    """(``_either(ctx, cond, "all-reduce", "reduce-scatter", ring)``, the all-gather of
    ``z_gather`` bytes on the same ring) computed together (:func:`_rings`); None while `explain`
    records (each call in its order), without NCCL's model or when the sizes' shapes differ."""
    cond, z, z_g = np.asarray(cond), np.asarray(ring["z"]), np.asarray(z_gather)
    if recording_active() or not ctx.asm.nccl_latency_model or z.shape != z_g.shape:
        return None
    colls, zs = ("all-reduce", "reduce-scatter", "all-gather"), (z, z, z_g)
    if cond.all() or not cond.any():  # one ZeRO stage kind: only the reduction it uses
        colls, zs = (colls[0] if cond.all() else colls[1], colls[2]), (z, z_g)
    ts = _rings(ctx, colls, ring["n"], ring["stride"], zs, ring["beta"], ring["alpha"])
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
