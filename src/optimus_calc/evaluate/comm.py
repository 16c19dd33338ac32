"""Collective times on a node/cluster topology, through the compiled comm equations.

`collective_time` times one collective with one algorithm; `evaluate_comm` is everything the
`comm` command reports (sizes, topology, the SqueezeNIC comparison, which algorithm is reported),
as a frozen result. Pure: no printing, no click; the CLI parses and emits.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from enum import Enum
from typing import assert_never

from optimus_calc.equations.recording import eq
from optimus_calc.errors import InputError
from optimus_calc.evaluate.context import Hardware, resolve_hardware
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.evaluate.squeezenic import Approach, CompressSite, Squeeze, squeezenic
from optimus_calc.evaluate import nccl
from optimus_calc.evaluate.topology import nic_Bps, ring
from optimus_calc.units import GB
from optimus_calc.record import record


class Collective(str, Enum):
    ALL_REDUCE = "all-reduce"
    REDUCE_SCATTER = "reduce-scatter"
    ALL_GATHER = "all-gather"
    BROADCAST = "broadcast"
    REDUCE = "reduce"
    ALL_TO_ALL = "all-to-all"

    @property
    def bus_factor_text(self) -> str:
        match self:
            case Collective.ALL_REDUCE:
                return "2(n-1)/n"
            case Collective.BROADCAST | Collective.REDUCE:
                return "1"
            case Collective.REDUCE_SCATTER | Collective.ALL_GATHER | Collective.ALL_TO_ALL:
                return "(n-1)/n"
            case _:
                assert_never(self)

    def bus_factor(self, n: int) -> float:
        """nccl-tests doc/PERFORMANCE.md bus-bandwidth factors."""
        match self:
            case Collective.ALL_REDUCE:
                return 2 * (n - 1) / n
            case Collective.BROADCAST | Collective.REDUCE:
                return 1.0
            case Collective.REDUCE_SCATTER | Collective.ALL_GATHER | Collective.ALL_TO_ALL:
                return (n - 1) / n
            case _:
                assert_never(self)


class Algo(str, Enum):
    RING = "ring"
    TREE = "tree"
    HIERARCHICAL = "hierarchical"
    MULTICAST = "multicast"
    NVLS = "nvls"


ALLOWED = {
    Algo.RING: set(Collective),
    Algo.TREE: {Collective.ALL_REDUCE},
    Algo.HIERARCHICAL: {Collective.ALL_REDUCE},
    Algo.MULTICAST: {Collective.ALL_GATHER},
    Algo.NVLS: {Collective.ALL_REDUCE},
}

RingTime = Callable[..., float]

# Explicit Enum member -> compiled equation (a test checks every member is mapped).
RING_TIME: dict[Collective, RingTime] = {
    # called through the recording stand-in, so `explain --all` sees each call
    Collective.ALL_REDUCE: lambda **kw: eq.comm__ring_all_reduce_time(**kw),
    Collective.REDUCE_SCATTER: lambda **kw: eq.comm__ring_reduce_scatter_time(**kw),
    Collective.ALL_GATHER: lambda **kw: eq.comm__ring_all_gather_time(**kw),
    Collective.BROADCAST: lambda **kw: eq.comm__ring_broadcast_time(**kw),
    Collective.REDUCE: lambda **kw: eq.comm__ring_reduce_time(**kw),
}  # all-to-all is not a ring: pairwise send/recv, _all_to_all

from optimus_calc.evaluate.topology import Topology  # noqa: E402

DEFAULT_CHUNK_BYTES: float = Assumptions.model_fields["hier_chunk_bytes"].default
DEFAULT_NET_OVERHEAD_US: float = Assumptions.model_fields["nccl_net_overhead_us"].default




def topology(hw: Hardware, ranks: int, alpha_us: float | None = None,
             intra_efficiency: float | None = None, nic_efficiency: float | None = None,
             link_catalog=None) -> Topology:
    """The group of ``ranks`` GPUs. ``link_catalog`` is accepted for old callers and unused: the
    NIC's host link comes resolved with the hardware (no stand-in bandwidth)."""
    del link_catalog
    gpn = hw.gpus_per_node
    if ranks <= gpn:
        nodes, per = 1, ranks
    else:
        if ranks % gpn:
            raise InputError(f"--ranks {ranks} spans nodes but is not a multiple of the "
                             f"{gpn} GPUs per {hw.node.name}")
        nodes, per = ranks // gpn, gpn
    il = hw.intra_link
    ie = intra_efficiency if intra_efficiency is not None else il.efficiency
    ne = nic_efficiency if nic_efficiency is not None else hw.nic.efficiency
    nic = nic_Bps(hw, ne)  # the NIC's host PCIe path caps it, as in the step evaluator
    a_i = il.alpha_s if alpha_us is None else alpha_us * 1e-6
    a_e = hw.nic.alpha_us * 1e-6 if alpha_us is None else alpha_us * 1e-6
    nvls = (il.nvls_busbw_GBps * GB if il.nvls_busbw_GBps and nodes == 1 and per == gpn
            else None)  # the catalog's NVLS figure is for a full node
    return Topology(ranks, nodes, per, a_i, a_e, il.bandwidth_Bps * ie, nic,
                    max(hw.node.nics, 1), il.name, f"{hw.node.nics} x {hw.nic.name}",
                    nccl.intra_class(il.link_kind), nvls)


@record
class Phase:
    name: str
    link: str
    bytes: float
    time_s: float


@record
class CommResult:
    collective: Collective
    algo: Algo
    size_bytes: float
    ranks: int
    nodes: int
    time_s: float
    algbw_GBps: float
    busbw_GBps: float
    phases: tuple[Phase, ...] = ()
    injected_bytes_per_rank: float | None = None
    pipeline_chunks: int | None = None     # hierarchical: chunks the phases overlap over
    chunk_bytes: float | None = None
    protocol: str | None = None            # ring: the NCCL protocol its model picks


def _ring_params(topo: Topology) -> tuple[float, float, str]:
    """(alpha, beta, links) of a ring over the group: topology.ring, as the evaluator's."""
    a, b = ring(topo.nodes, topo.ranks, topo.nics, alpha_intra=topo.alpha_intra_s,
                alpha_inter=topo.alpha_inter_s, intra_Bps=topo.intra_Bps, nic=topo.nic_Bps)
    link = topo.intra_link if topo.nodes == 1 else f"{topo.intra_link} + {topo.inter_link}"
    return float(a), float(b), link


def _all_to_all(size: float, topo: Topology) -> tuple[float, tuple[Phase, ...]]:
    """Pairwise all-to-all (comm.all_to_all_time): the node's peers over the scale-up link, the
    other nodes' through one GPU's share of the NICs, a latency per peer as the ring's."""
    n, m = topo.ranks, topo.per_node
    a, _, _ = _ring_params(topo)
    b_i = 1.0 / topo.intra_Bps
    b_g = topo.node_network_Bps / m
    t = float(eq.comm__all_to_all_time(alpha=a, beta_i=b_i, B_g=b_g, m=m, n=n, z=size,
                                       x=eq.comm__pairwise_cross_share(m=m, n=n)))
    intra = (m - 1) / n * size
    phases = [Phase("sends to peers on the node", topo.intra_link, intra,
                    (m - 1) * a + intra * b_i)]
    if n > m:
        inter = (n - m) / n * size
        phases.append(Phase("sends to other nodes (one NIC per GPU)", topo.inter_link, inter,
                            (n - m) * a + inter / b_g))
    return t, tuple(phases)


def pipeline_chunks(size: float, chunk_bytes: float) -> int:
    """ceil(size / chunk), at least 1, exact on integers for integral sizes."""
    if not chunk_bytes > 0:
        raise InputError(f"--assume hier_chunk_bytes={chunk_bytes} must be > 0")
    return max(1, math.ceil(size / chunk_bytes))


def _hierarchical(size: float, topo: Topology, chunk_bytes: float
                  ) -> tuple[float, tuple[Phase, ...], int]:
    m, N = topo.per_node, topo.nodes
    be, bi = 1.0 / topo.node_network_Bps, 1.0 / topo.intra_Bps
    chunks = pipeline_chunks(size, chunk_bytes)
    t = float(eq.comm__hierarchical_all_reduce_pipelined_time(
        c_b=chunk_bytes, N=N, alpha_e=topo.alpha_inter_s, alpha_i=topo.alpha_intra_s,
        beta_e=be, beta_i=bi, m=m, z=size))
    # Each phase alone (what it would take unpipelined); the total overlaps them.
    rs = float(eq.comm__ring_reduce_scatter_time(alpha=topo.alpha_intra_s, beta=bi, n=m, z=size))
    inter = float(eq.comm__ring_all_reduce_time(alpha=topo.alpha_inter_s, beta=be, n=N, z=size))
    phases = (Phase("intra-node reduce-scatter", topo.intra_link, size * (m - 1) / m, rs),
              Phase("inter-node all-reduce of shards", topo.inter_link,
                    2 * size * (N - 1) / N, inter),
              Phase("intra-node all-gather", topo.intra_link, size * (m - 1) / m, rs))
    return t, phases, chunks


def collective_time(coll: Collective, algo: Algo, size: float, topo: Topology,
                    chunk_bytes: float = DEFAULT_CHUNK_BYTES,
                    net_overhead_us: float = DEFAULT_NET_OVERHEAD_US,
                    nccl_model: bool = False) -> CommResult:
    if coll not in ALLOWED[algo]:
        raise InputError(f"--algo {algo.value} does not implement {coll.value}; "
                         f"it supports {', '.join(sorted(c.value for c in ALLOWED[algo]))}")
    n = topo.ranks
    phases: tuple[Phase, ...] = ()
    injected: float | None = None
    chunks: int | None = None
    proto: str | None = None
    if n == 1:
        t = 0.0
    else:
        a, b, link = _ring_params(topo)
        match algo:
            case Algo.HIERARCHICAL:
                t, phases, chunks = _hierarchical(size, topo, chunk_bytes)
            case Algo.TREE if nccl_model:  # NCCL's tree latency, the two trees' bandwidth
                t = float(nccl.tree_time(n, topo.nodes, size, b, link_class=topo.link_class))
            case Algo.TREE:
                depth = (n - 1).bit_length()  # ceil(log2 n), exact on integers
                t = float(eq.comm__tree_all_reduce_time(D=depth, alpha=a, beta=b, n=n, z=size))
            case Algo.NVLS:
                if topo.nvls_Bps is None:
                    raise InputError(f"--algo nvls: {topo.intra_link} has no NVLink SHARP figure "
                                     "in the catalog for this group (it needs one full node of "
                                     "an NVLS switch: dgx-h100, dgx-h200)")
                t = float(nccl.nvls_time(n, size, topo.nvls_Bps))
                link = f"{topo.intra_link} (NVLink SHARP)"
            case Algo.MULTICAST:
                t = float(eq.comm__multicast_all_gather_time(alpha=a, beta=b, n=n, z=size))
                injected = float(eq.comm__multicast_all_gather_injected_bytes(n=n, z=size))
            case Algo.RING if coll is Collective.ALL_TO_ALL:
                t, phases = _all_to_all(size, topo)
            case Algo.RING if nccl_model:  # NCCL's ring latency model and fastest protocol
                kw = dict(link_class=topo.link_class, net_overhead_s=net_overhead_us * 1e-6)
                t = float(nccl.ring_time(coll.value, n, topo.nodes, size, b, **kw))
                proto = nccl.protocol(coll.value, n, topo.nodes, size, b, **kw)
            case Algo.RING:
                t = float(RING_TIME[coll](alpha=a, beta=b, n=n, z=size))
                if coll is Collective.ALL_GATHER:
                    injected = float(eq.comm__ring_all_gather_injected_bytes(n=n, z=size))
            case _:
                assert_never(algo)
        if not phases:
            phases = (Phase(f"{algo.value} {coll.value}", link, size * coll.bus_factor(n), t),)
    # nccl-tests: algbw = S / t is the bus bandwidth with factor 1; busbw scales it by the factor
    algbw = float(eq.comm__bus_bandwidth(F=1, T=t, z=size)) / GB if t > 0 else 0.0
    return CommResult(coll, algo, size, n, topo.nodes, t, algbw, algbw * coll.bus_factor(n),
                      phases, injected, chunks, chunk_bytes if chunks else None, proto)


# --- the `comm` command's evaluation ------------------------------------------------------------

@record
class CommRequest:
    collective: Collective
    algo: Algo
    sizes: tuple[float, ...]
    node: str = "dgx-a100"
    ranks: int | None = None
    nodes: int | None = None
    compression: float | None = None
    site: CompressSite = CompressSite.SMARTNIC
    approach: Approach = Approach.ONE
    alpha_us: float | None = None
    intra_efficiency: float | None = None
    nic_efficiency: float | None = None
    assumptions: Assumptions = Assumptions()


@record
class CommRow:
    """One size: the reported collective (compressed only when that is faster)."""
    label: str                   # the algorithm the time is for, e.g. "ring all-reduce"
    size_bytes: float
    time_s: float
    algbw_GBps: float
    busbw_GBps: float
    uncompressed: CommResult     # the --algo collective, always computed
    squeeze: Squeeze | None = None
    compressed: bool = False     # True when the reported time is SqueezeNIC's approach

    @property
    def candidates(self) -> tuple[tuple[str, float], ...]:
        """Every all-reduce evaluated for this size, all on the same per-GPU buffer."""
        out = [(f"{self.uncompressed.algo.value} (uncompressed)", self.uncompressed.time_s)]
        if self.squeeze:
            s = self.squeeze
            out += [("SqueezeNIC baseline, eq. 1 (uncompressed, phases summed)", s.baseline_s),
                     (f"SqueezeNIC approach 1, eq. 2 (r = {s.ratio:g})", s.approach1_s),
                     (f"SqueezeNIC approach 2, eq. 3 (r = {s.ratio:g})", s.approach2_s)]
        return tuple(out)

    @property
    def fastest(self) -> str:
        return min(self.candidates, key=lambda c: c[1])[0]


@record
class CommReport:
    collective: Collective
    algo: Algo
    rows: tuple[CommRow, ...]
    topology: Topology
    node: str
    gpu: str
    intra_link: str
    intra_efficiency: float
    intra_efficiency_overridden: bool
    nic: str
    nic_efficiency: float
    alpha_overridden: bool
    chunk_bytes: float


def doubling_sizes(lo: float, hi: float, limit: int = 64) -> tuple[float, ...]:
    """nccl-tests style sweep: lo, 2 lo, 4 lo, ... up to hi (at most ``limit`` sizes)."""
    if lo > hi:
        raise InputError(f"--sizes: FROM ({lo:g} bytes) is larger than TO ({hi:g} bytes)")
    out, x = [], lo
    while x <= hi * (1 + 1e-12):
        if len(out) == limit:
            raise InputError(f"--sizes: more than {limit} doubling sizes from {lo:g} to "
                             f"{hi:g} bytes; narrow the range")
        out.append(x)
        x *= 2
    return tuple(out)


def _row(req: CommRequest, z: float, topo: Topology) -> CommRow:
    asm = req.assumptions
    # --alpha-us asks for the per-step alpha model; NCCL's tables otherwise (the default)
    r = collective_time(req.collective, req.algo, z, topo, asm.hier_chunk_bytes,
                        asm.nccl_net_overhead_us,
                        bool(asm.nccl_latency_model) and req.alpha_us is None)
    label = ("pairwise all-to-all" if req.collective is Collective.ALL_TO_ALL
             else f"{req.algo.value} {req.collective.value}")
    if req.compression is None:
        return CommRow(label, z, r.time_s, r.algbw_GBps, r.busbw_GBps, r)
    sq = squeezenic(z, topo, req.compression, req.site, req.approach, asm)
    if not sq.approach_s < r.time_s:  # compression only when it is faster
        return CommRow(label, z, r.time_s, r.algbw_GBps, r.busbw_GBps, r, sq)
    t = sq.approach_s
    algbw = z / t / GB
    return CommRow(f"SqueezeNIC approach {req.approach.value} {req.collective.value} "
                   f"(compressed {req.compression:g} on {req.site.value})", z, t, algbw,
                   algbw * req.collective.bus_factor(topo.ranks), r, sq, True)


def evaluate_comm(catalog, req: CommRequest) -> CommReport:
    """Everything `optimus-calc comm` reports, for each size in ``req.sizes``."""
    if req.ranks is not None and req.nodes is not None:
        raise InputError("give --ranks or --nodes, not both")
    if not req.sizes:
        raise InputError("give exactly one of --size SIZE or --sizes FROM..TO")
    if (req.alpha_us is not None and req.assumptions.nccl_latency_model
            and "nccl_latency_model" in req.assumptions.model_fields_set):
        raise InputError("--alpha-us sets the per-step alpha model; with --assume "
                         "nccl_latency_model=1 the latencies are NCCL's own tables")
    hw = resolve_hardware(catalog, req.node, req.nodes or 1)
    n = req.ranks if req.ranks is not None else hw.gpus
    topo = topology(hw, n, req.alpha_us, req.intra_efficiency, req.nic_efficiency)
    if req.compression is not None and (req.collective is not Collective.ALL_REDUCE
                                        or topo.nodes < 2):
        raise InputError("--compression applies to all-reduce across 2 or more nodes")
    rows = tuple(_row(req, z, topo) for z in req.sizes)
    return CommReport(
        req.collective, req.algo, rows, topo, hw.node.name, hw.gpu.name, hw.intra_link.name,
        req.intra_efficiency if req.intra_efficiency is not None else hw.intra_link.efficiency,
        req.intra_efficiency is not None, hw.nic.name,
        req.nic_efficiency if req.nic_efficiency is not None else hw.nic.efficiency,
        req.alpha_us is not None, req.assumptions.hier_chunk_bytes)
