"""Collective times on a node/cluster topology, through the compiled comm equations."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from optimus_calc.equations import compiled as eq
from optimus_calc.errors import InputError
from optimus_calc.evaluate.context import Hardware
from optimus_calc.specs.training import Assumptions
from optimus_calc.units import GB


class Collective(str, Enum):
    ALL_REDUCE = "all-reduce"
    REDUCE_SCATTER = "reduce-scatter"
    ALL_GATHER = "all-gather"
    BROADCAST = "broadcast"
    REDUCE = "reduce"
    ALL_TO_ALL = "all-to-all"

    @property
    def bus_factor_text(self) -> str:
        return {"all-reduce": "2(n-1)/n", "broadcast": "1", "reduce": "1"}.get(
            self.value, "(n-1)/n")

    def bus_factor(self, n: int) -> float:
        """nccl-tests doc/PERFORMANCE.md bus-bandwidth factors."""
        if self is Collective.ALL_REDUCE:
            return 2 * (n - 1) / n
        if self in (Collective.BROADCAST, Collective.REDUCE):
            return 1.0
        return (n - 1) / n


class Algo(str, Enum):
    RING = "ring"
    TREE = "tree"
    HIERARCHICAL = "hierarchical"
    MULTICAST = "multicast"


ALLOWED = {
    Algo.RING: set(Collective),
    Algo.TREE: {Collective.ALL_REDUCE},
    Algo.HIERARCHICAL: {Collective.ALL_REDUCE},
    Algo.MULTICAST: {Collective.ALL_GATHER},
}

RING_EQ = {
    Collective.ALL_REDUCE: "comm.ring_all_reduce_time",
    Collective.REDUCE_SCATTER: "comm.ring_reduce_scatter_time",
    Collective.ALL_GATHER: "comm.ring_all_gather_time",
    Collective.BROADCAST: "comm.ring_broadcast_time",
    Collective.REDUCE: "comm.ring_reduce_time",
    Collective.ALL_TO_ALL: "comm.all_to_all_time",
}


@dataclass(frozen=True)
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

    @property
    def node_network_Bps(self) -> float:
        return float(eq.comm__node_network_bandwidth(B_nic=self.nic_Bps, K=self.nics))


def topology(hw: Hardware, ranks: int, alpha_us: float | None = None,
             intra_efficiency: float | None = None, nic_efficiency: float | None = None,
             link_catalog=None) -> Topology:
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
    pcie = link_catalog(hw.nic.host_link) if link_catalog else None
    nic = float(eq.comm__nic_bandwidth(
        B_line=hw.nic.line_rate_Bps, B_pcie=pcie.bandwidth_Bps if pcie else 1e30,
        eta_n=ne, eta_p=pcie.efficiency if pcie else 1.0))
    a_i = il.alpha_s if alpha_us is None else alpha_us * 1e-6
    a_e = hw.nic.alpha_us * 1e-6 if alpha_us is None else alpha_us * 1e-6
    return Topology(ranks, nodes, per, a_i, a_e, il.bandwidth_Bps * ie, nic,
                    max(hw.node.nics, 1), il.name, f"{hw.node.nics} x {hw.nic.name}")


@dataclass
class Phase:
    name: str
    link: str
    bytes: float
    time_s: float


@dataclass
class CommResult:
    collective: Collective
    algo: Algo
    size_bytes: float
    ranks: int
    nodes: int
    time_s: float
    algbw_GBps: float
    busbw_GBps: float
    phases: list[Phase] = field(default_factory=list)
    injected_bytes_per_rank: float | None = None
    compression: dict | None = None


def _ring_params(topo: Topology) -> tuple[float, float, str]:
    if topo.nodes == 1:
        return topo.alpha_intra_s, 1.0 / topo.intra_Bps, topo.intra_link
    bw = float(eq.comm__ring_bandwidth(B_intra=topo.intra_Bps, B_nic=topo.nic_Bps, K=topo.nics))
    a = float(eq.comm__ring_alpha(N=topo.nodes, alpha_e=topo.alpha_inter_s,
                                  alpha_i=topo.alpha_intra_s, n=topo.ranks))
    return a, 1.0 / bw, f"{topo.intra_link} + {topo.inter_link}"


def collective_time(coll: Collective, algo: Algo, size: float, topo: Topology) -> CommResult:
    if coll not in ALLOWED[algo]:
        raise InputError(f"--algo {algo.value} does not implement {coll.value}; "
                         f"it supports {', '.join(sorted(c.value for c in ALLOWED[algo]))}")
    n = topo.ranks
    phases: list[Phase] = []
    injected = None
    if n == 1:
        t = 0.0
    elif algo is Algo.HIERARCHICAL:
        m, N = topo.per_node, topo.nodes
        be = 1.0 / topo.node_network_Bps
        t = float(eq.comm__hierarchical_all_reduce_time(
            N=N, alpha_e=topo.alpha_inter_s, alpha_i=topo.alpha_intra_s,
            beta_e=be, beta_i=1.0 / topo.intra_Bps, m=m, z=size))
        rs = float(eq.comm__ring_reduce_scatter_time(alpha=topo.alpha_intra_s,
                                                     beta=1 / topo.intra_Bps, n=m, z=size))
        inter = float(eq.comm__ring_all_reduce_time(alpha=topo.alpha_inter_s, beta=be, n=N,
                                                    z=size))
        phases = [Phase("intra-node reduce-scatter", topo.intra_link, size * (m - 1) / m, rs),
                  Phase("inter-node all-reduce of shards", topo.inter_link,
                        2 * size * (N - 1) / N, inter),
                  Phase("intra-node all-gather", topo.intra_link, size * (m - 1) / m, rs)]
    else:
        a, b, link = _ring_params(topo)
        if algo is Algo.TREE:
            depth = (n - 1).bit_length()  # ceil(log2 n), exact on integers
            t = float(eq.comm__tree_all_reduce_time(D=depth, alpha=a, beta=b, n=n, z=size))
        elif algo is Algo.MULTICAST:
            t = float(eq.comm__multicast_all_gather_time(alpha=a, beta=b, n=n, z=size))
            injected = float(eq.comm__multicast_all_gather_injected_bytes(n=n, z=size))
        else:
            t = float(getattr(eq, RING_EQ[coll].replace(".", "__"))(alpha=a, beta=b, n=n, z=size))
            if coll is Collective.ALL_GATHER:
                injected = float(eq.comm__ring_all_gather_injected_bytes(n=n, z=size))
        phases = [Phase(f"{algo.value} {coll.value}", link, size * coll.bus_factor(n), t)]
    algbw = size / t / GB if t > 0 else 0.0
    return CommResult(coll, algo, size, n, topo.nodes, t, algbw, algbw * coll.bus_factor(n),
                      phases, injected)


def squeezenic(size: float, topo: Topology, ratio: float, compress_on: str, approach: int,
               asm: Assumptions) -> dict:
    """SqueezeNIC equations (1)-(3) for a gradient partition of ``size`` bytes."""
    if not 0 < ratio <= 1:
        raise InputError(f"--compression {ratio} must be in (0, 1]: compressed/original size")
    gpu = asm.gpu_compress_GBps * GB
    hw_c = gpu if compress_on == "gpu" else asm.nic_compress_GBps * GB
    common = dict(N=topo.nodes, alpha_e=topo.alpha_inter_s, alpha_i=topo.alpha_intra_s,
                  beta_e=1.0 / topo.node_network_Bps, beta_i=1.0 / topo.intra_Bps,
                  g=size, m=topo.per_node)
    base = float(eq.comm__squeezenic_baseline_time(**common))
    app1 = float(eq.comm__squeezenic_app1_time(**common, r=ratio, theta_c=hw_c, theta_d=hw_c))
    app2 = float(eq.comm__squeezenic_app2_time(**common, r=ratio, theta_c=hw_c, theta_d=hw_c,
                                               theta_gc=gpu, theta_gd=gpu))
    times = {"baseline": base, "approach1": app1, "approach2": app2}
    return {"ratio": ratio, "compress_on": compress_on, "approach": approach,
            "compressor_GBps": hw_c / GB, "gpu_compressor_GBps": gpu / GB,
            "baseline_s": base, "approach1_s": app1, "approach2_s": app2,
            "best": min(times, key=times.get),
            "time_s": app1 if approach == 1 else app2}
