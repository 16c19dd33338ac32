"""NCCL's latency model and protocol choice for ring, tree and NVLS collectives.

The tables are NCCL's tuning constants (src/graph/tuning.cc @ 5067397c2676d5aed50042fc39e5c8ee96eb0027,
``ncclTunerConstantsDefaults``), in microseconds. A collective's time with one protocol is
comm.nccl_collective_time: its latency (comm.nccl_ring_latency / comm.nccl_tree_latency) plus
the Simple protocol's bus-bandwidth time over the protocol's bandwidth share; NCCL runs the
protocol its own model predicts fastest (tuning.cc L630-653, ``ncclTopoGetAlgoTime``), and so do
we, except that the Simple ring overlaps its steps' latency with the transfer
(comm.nccl_pipelined_time). Applied by default (``--assume nccl_latency_model=0`` switches to the
per-step alpha model); the per-step latencies are the tables' own
(the catalog's ``alpha_us`` serves the per-step alpha model). ``alpha_i``/``alpha_e`` given
scale a table's row by alpha / its Ring/Simple value (NVLink 3.4, PCI 5.7, network 14.0 us).

Left out of NCCL's model (documented in docs/communication.md): the per-channel bandwidth caps
(llMaxBws, perChMax*Bws), the tree's size-dependent correction factor, the 1.4x "plateau"
factor on multi-node ring/Simple all-reduce latency, and the graph's ``latencyInter`` (0 for
InfiniBand: src/transport/net_ib/init.cc L558).
"""

from __future__ import annotations

import numpy as np

from optimus_calc.equations.recording import active as recording_active
from optimus_calc.equations.recording import eq

PROTOCOLS = ("LL", "LL128", "Simple")

# tuning.cc L149-155: baseLatencies [algorithm][LL, LL128, Simple]
BASE_US = {"tree": (6.8, 14.0, 8.4), "ring": (6.6, 14.0, 8.4)}

# tuning.cc L156-176: hwLatencies [NVLINK | PCI | NET][algorithm][LL, LL128, Simple]
HW_US = {
    "nvlink": {"tree": (0.6, 1.25, 4.0), "ring": (0.6, 1.9, 3.4)},   # L159
    "pci": {"tree": (1.0, 1.9, 4.0), "ring": (1.0, 2.5, 5.7)},       # L165
    "net": {"tree": (5.0, 8.5, 14.0), "ring": (2.7, 4.0, 14.0)},     # L171
}
SIMPLE = 2

# tuning.cc L327-329 (ring LL: half the bandwidth; LL128: 0.92) and L332-335 (tree LL: 1/3.8;
# LL128: 7/9 on one node, 120/128 across nodes). The caps beside them are left out.
RING_SHARE = (0.5, 0.92, 1.0)


# NVLS (NVLink SHARP) all-reduce: base 0 (L153), latency = the NVLINK NVLS Simple entry, 25 us
# (L161, L424-426); Simple protocol only (L301).
NVLS_US = 25.0


def nvls_time(n, z, nvls_busbw_Bps):
    """NVLS all-reduce of ``z`` bytes over ``n`` ranks of one node: NCCL's NVLS latency plus the
    buffer at the switch's measured all-reduce bus bandwidth (catalog ``nvls_busbw_GBps``)."""
    n = np.asarray(n)
    t = eq.comm__nccl_collective_time(F=bus_factor("all-reduce", n), L=NVLS_US * 1e-6,
                                      beta=1.0 / nvls_busbw_Bps, f_p=1.0, z=z)
    return np.where(n > 1, t, 0.0)


def tree_share(nodes):
    n = np.asarray(nodes)
    return (1 / 3.8, np.where(n > 1, 120 / 128, 7 / 9), 1.0)


def intra_class(link_kind: str) -> str:
    """NCCL's intraHw (tuning.cc L283-285): NVLink when the graph's intra-node links are NVLink,
    else PCI. Other scale-up fabrics (AMD Infinity Fabric) take the NVLink row."""
    return "pci" if link_kind == "pcie" else "nvlink"


def _scale(alpha_s, table: str) -> float:
    """An overriding alpha over the table's Ring/Simple value (1 without one)."""
    if alpha_s is None:
        return 1.0
    return np.asarray(alpha_s) * 1e6 / HW_US[table]["ring"][SIMPLE]


def steps(coll: str, n, nodes):
    """(S, S_e) of comm.nccl_ring_latency (tuning.cc L288-290, L410)."""
    n, nodes = np.asarray(n), np.asarray(nodes)
    if coll == "all-reduce":
        return 2 * (n - 1), np.where(nodes > 1, 2 * (nodes - 1), 0)
    if coll in ("reduce-scatter", "all-gather"):
        return n - 1, np.where(nodes > 1, nodes - 1, 0)
    # broadcast / reduce: n steps (tuning.cc L290), charged per step as when the channels differ
    # (L399-401); the inter-node share as for the others
    return n, np.where(nodes > 1, nodes - 1, 0)


def bus_factor(coll: str, n):
    n = np.asarray(n, dtype=float)
    if coll == "all-reduce":
        return 2 * (n - 1) / np.maximum(n, 1)
    if coll in ("reduce-scatter", "all-gather", "all-to-all"):
        return (n - 1) / np.maximum(n, 1)
    return np.minimum(1.0, n - 1)


def ring_times(coll: str, n, nodes, z, beta, *, link_class: str, net_overhead_s: float,
               alpha_i=None, alpha_e=None) -> list:
    """comm.nccl_collective_time of a ring ``coll`` over ``n`` ranks on ``nodes`` nodes for each
    protocol (LL, LL128, Simple); arrays welcome."""
    n, nodes = np.asarray(n), np.maximum(np.asarray(nodes), 1)
    S, S_e = steps(coll, n, nodes)
    multi = nodes > 1
    ppn_one = n <= nodes          # one rank per node: the tree's network latency (L386-388)
    s_i, s_e = _scale(alpha_i, link_class), _scale(alpha_e, "net")
    F = bus_factor(coll, n)
    if max(map(np.size, (z, beta, S, multi, s_i, s_e))) <= AT_ONCE \
            and not recording_active():
        return _ring_times_at_once(S, S_e, F, multi, ppn_one, s_i, s_e, z, beta,
                                   link_class=link_class, net_overhead_s=net_overhead_s)
    out = []
    for p, name in enumerate(PROTOCOLS):
        lat_i = HW_US[link_class]["ring"][p] * 1e-6 * s_i
        over = net_overhead_s * (3 if name == "Simple" else 1)   # L404-408
        lat_i = np.where(multi, np.maximum(lat_i, over), lat_i)
        lat_e = np.where(ppn_one, HW_US["net"]["tree"][p], HW_US["net"]["ring"][p]) * 1e-6 * s_e
        a_0 = BASE_US["ring"][p] * 1e-6
        L = eq.comm__nccl_ring_latency(S=S, S_e=S_e, a_0=a_0, l_e=lat_e, l_i=lat_i)
        if name == "Simple":  # pipelined: latency overlaps the transfer (comm.nccl_pipelined_time)
            out.append(eq.comm__nccl_pipelined_time(F=F, L_s=L - a_0, a_0=a_0, beta=beta,
                                                    f_p=RING_SHARE[p], z=z))
        else:
            out.append(eq.comm__nccl_collective_time(F=F, L=L, beta=beta, f_p=RING_SHARE[p],
                                                     z=z))
    return out


# below this many values per input the three protocols go along one axis (a third of the numpy
# calls); above it one at a time, so a large batch's temporaries are not tripled (a speed
# tactic: the same numbers either way)
AT_ONCE = 4096


def _ring_times_at_once(S, S_e, F, multi, ppn_one, s_i, s_e, z, beta, *, link_class: str,
                        net_overhead_s: float) -> list:
    """:func:`ring_times`' loop with the protocols along a new leading axis: the same
    operations on the same values elementwise (so the same numbers, tests/test_small_batch.py),
    in a third of the numpy calls. A speed tactic for small batches, used when no `explain`
    records the calls one protocol at a time."""
    nd = max(x.ndim if type(x) is np.ndarray else np.ndim(x)
             for x in (S, S_e, F, multi, ppn_one, s_i, s_e, z, beta))
    lat_i, over, tree, ring, a_0, share = _columns(link_class, net_overhead_s, s_i, s_e, nd)
    lat_i = np.where(multi, over, lat_i)
    lat_e = np.where(ppn_one, tree, ring)
    L = eq.comm__nccl_ring_latency(S=S, S_e=S_e, a_0=a_0, l_e=lat_e, l_i=lat_i)
    t = eq.comm__nccl_collective_time(F=F, L=L[:SIMPLE], beta=beta, f_p=share[:SIMPLE], z=z)
    simple = eq.comm__nccl_pipelined_time(F=F, L_s=L[SIMPLE] - a_0[SIMPLE], a_0=a_0[SIMPLE],
                                          beta=beta, f_p=share[SIMPLE], z=z)
    return [t[0], t[1], simple]


# the tables' columns per (link class, overhead, alpha scales, rank), kept when the scales are
# numbers (a speed tactic: the same operations on the same constants, made once)
_COLUMNS: dict[tuple, tuple] = {}


def _columns(link_class: str, net_overhead_s: float, s_i, s_e, nd: int) -> tuple:
    """(l_i, l_i with the network overhead's floor, l_e of one rank per node, l_e otherwise,
    a_0, the protocols' bandwidth shares) along a leading protocol axis of ``nd`` + 1 dims."""
    key = (link_class, net_overhead_s, s_i, s_e, nd) if (
        type(s_i) is float and type(s_e) is float) else None
    got = _COLUMNS.get(key) if key is not None else None
    if got is not None:
        return got
    lead = (3,) + (1,) * nd
    col = lambda xs: np.array(xs, dtype=np.float64).reshape(lead)  # noqa: E731
    lat_i = col(HW_US[link_class]["ring"]) * 1e-6 * s_i
    over = col([net_overhead_s, net_overhead_s, net_overhead_s * 3])   # L404-408
    # the ring's own l_e: where(one rank per node, tree, ring) x 1e-6 x s_e, each scaled first
    got = (lat_i, np.maximum(lat_i, over), col(HW_US["net"]["tree"]) * 1e-6 * s_e,
           col(HW_US["net"]["ring"]) * 1e-6 * s_e, col(BASE_US["ring"]) * 1e-6, col(RING_SHARE))
    if key is not None:
        for x in got:
            x.flags.writeable = False
        if len(_COLUMNS) >= 64:
            _COLUMNS.clear()
        _COLUMNS[key] = got
    return got


def ring_time(coll: str, n, nodes, z, beta, **kw):
    """Time of a ring collective with NCCL's fastest protocol (0 for one rank)."""
    t = ring_times(coll, n, nodes, z, beta, **kw)
    return np.where(np.asarray(n) > 1, np.minimum(np.minimum(t[0], t[1]), t[2]), 0.0)


_RING_STEPS = {"all-reduce": 2, "reduce-scatter": 1, "all-gather": 1}


_MULTIPLIERS: dict[tuple, tuple] = {}


def _multipliers(colls: tuple, nd: int) -> tuple:
    """The collectives' step multipliers (int and float) as a column along a leading axis over
    ``nd`` more dims: constants of the few collective tuples the evaluator asks for, made once
    (read-only)."""
    got = _MULTIPLIERS.get((colls, nd))
    if got is None:
        k = np.array([_RING_STEPS[c] for c in colls]).reshape((-1,) + (1,) * nd)
        got = (k, k.astype(float))
        for x in got:
            x.flags.writeable = False
        if len(_MULTIPLIERS) >= 64:
            _MULTIPLIERS.clear()
        _MULTIPLIERS[colls, nd] = got
    return got


def ring_time_many(colls: tuple, n, nodes, z, beta, *, link_class: str,
                   net_overhead_s: float) -> list:
    """``[ring_time(c, n, nodes, z, beta, ...) for c in colls]`` (no ``alpha_i``/``alpha_e``)
    with the collectives along a leading axis as well as the protocols: the same operations on
    the same values elementwise (so the same numbers, tests/test_small_batch.py), in a third of
    the numpy calls for three collectives. A speed tactic for small batches (at most AT_ONCE
    values), used when no `explain` records the calls one at a time. ``z`` may be a tuple of one
    array per collective (of one shape)."""
    if isinstance(z, tuple):
        z = np.stack(z)
    n, nodes = np.asarray(n), np.maximum(np.asarray(nodes), 1)
    if all(c in _RING_STEPS for c in colls):
        # steps and bus factor are (n - 1) and the nodes' (N - 1) times 1 (reduce-scatter,
        # all-gather) or 2 (all-reduce): the products with a column of the multipliers, the
        # same operations as steps() and bus_factor() per collective
        k, k_f = _multipliers(colls, n.ndim)
        nf = np.asarray(n, dtype=float)
        S = k * (n - 1)
        # integer nodes >= 1 (the maximum above): where(N > 1, N - 1, 0) is N - 1
        S_e = _multipliers(colls, nodes.ndim)[0] * (
            nodes - 1 if nodes.dtype.kind in "iu" else np.where(nodes > 1, nodes - 1, 0))
        F = k_f * (nf - 1) / np.maximum(nf, 1)
    else:
        per = [steps(c, n, nodes) + (bus_factor(c, n),) for c in colls]
        S, S_e, F = (np.stack([p[k] for p in per]) for k in range(3))
    t = _ring_times_at_once(S, S_e, F, nodes > 1, n <= nodes, 1.0, 1.0, z, beta,
                            link_class=link_class, net_overhead_s=net_overhead_s)
    best = np.where(n > 1, np.minimum(np.minimum(t[0], t[1]), t[2]), 0.0)
    return list(best)


def protocol(coll: str, n: int, nodes: int, z: float, beta: float, **kw) -> str:
    """The protocol :func:`ring_time` picks for one case (reports and tests)."""
    return PROTOCOLS[int(np.argmin([float(t) for t in ring_times(coll, n, nodes, z, beta,
                                                                 **kw)]))]


def tree_time(n, nodes, z, beta, *, link_class: str, alpha_i=None, alpha_e=None):
    """Tree all-reduce over ``n`` ranks on ``nodes`` nodes, NCCL's latency (comm.nccl_tree_latency)
    and fastest protocol; the bandwidth term is the double binary tree's 2(n-1)/n beta z."""
    n, nodes = np.asarray(n), np.maximum(np.asarray(nodes), 1)
    per = n // nodes
    depth = np.floor(np.log2(nodes))
    s_i, s_e = _scale(alpha_i, link_class), _scale(alpha_e, "net")
    shares = tree_share(nodes)
    best = None
    for p in range(len(PROTOCOLS)):
        L = eq.comm__nccl_tree_latency(D_N=depth, a_0=BASE_US["tree"][p] * 1e-6,
                                       l_e=HW_US["net"]["tree"][p] * 1e-6 * s_e,
                                       l_i=HW_US[link_class]["tree"][p] * 1e-6 * s_i, m=per)
        t = eq.comm__nccl_collective_time(F=bus_factor("all-reduce", n), L=L, beta=beta,
                                          f_p=shares[p], z=z)
        best = t if best is None else np.minimum(best, t)
    return np.where(n > 1, best, 0.0)
