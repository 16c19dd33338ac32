"""One topology function: the (alpha, beta) of a ring over a group of GPUs.

The evaluator's TP/CP/EP/DP rings and pipeline p2p, and the `comm` command, all place their
group with :func:`group`: inside a node over the scale-up link, across nodes bounded by the
group's share of the node's NICs (rail-optimised: each GPU drives its own NIC), the NIC's
bandwidth capped by its host PCIe link (comm.nic_bandwidth) and its own latency alpha.
"""

from __future__ import annotations


import numpy as np

from optimus_calc.equations.recording import active as recording_active
from optimus_calc.equations.recording import eq
from optimus_calc.evaluate.context import Hardware
from optimus_calc.record import record


def nic_Bps(hw: Hardware, nic_efficiency: float | None = None) -> float:
    """One NIC's effective bandwidth: its line rate or its host PCIe path, the lower."""
    eff = hw.nic.efficiency if nic_efficiency is None else nic_efficiency
    return float(eq.comm__nic_bandwidth(
        B_line=hw.nic.line_rate_Bps, B_pcie=hw.nic_host_link.bandwidth_Bps, eta_n=eff,
        eta_p=hw.nic_host_link.efficiency))


def placement(hw: Hardware, size, stride):
    """(ranks per node, nodes) of ``size`` ranks ``stride`` apart."""
    gpn = hw.gpus_per_node
    size, stride = np.asarray(size), np.asarray(stride)
    per_node = np.where(stride < gpn, np.maximum(1, np.minimum(size, gpn // np.maximum(stride, 1))),
                        1)
    return per_node, np.maximum(1, size // per_node)


# Small batches' groups by what they read (arrays of at most _GROUPS_SMALL values): a report
# or a fit evaluates one layout at a time on the same node, the same TP/CP/DP groups each time.
# A speed tactic: the same values (read-only arrays), not kept while `explain` records.
_GROUPS: dict[tuple, tuple] = {}
_GROUPS_SMALL = 64


def group(hw: Hardware, size, stride, *, nic: float | None = None):
    """(alpha, beta) of a ring over ``size`` ranks ``stride`` apart on ``hw`` (arrays welcome);
    ``nic`` is one NIC's effective bandwidth (default :func:`nic_Bps`)."""
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
            return out
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
    return out


def gpu_nic_Bps(hw: Hardware, nic: float) -> float:
    """Inter-node bandwidth of one GPU: its share of the node's NICs (one NIC per GPU on a
    rail-optimised node), ``nic`` being one NIC's effective bandwidth."""
    return nic * max(hw.node.nics, 1) / hw.gpus_per_node


def all_to_all(hw: Hardware, size, stride, *, nic: float | None = None) -> dict:
    """Arguments of comm.all_to_all_time for ``size`` ranks ``stride`` apart: the ring's
    per-hop latency, the scale-up link, and one GPU's NIC share (arrays welcome)."""
    il = hw.intra_link
    per_node, _ = placement(hw, size, stride)
    alpha, _ = group(hw, size, stride, nic=nic)
    nic = nic_Bps(hw) if nic is None else nic
    return dict(alpha=alpha, beta_i=1.0 / (il.bandwidth_Bps * il.efficiency),
                B_g=gpu_nic_Bps(hw, nic), m=per_node, n=size)


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
