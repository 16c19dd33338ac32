"""SqueezeNIC (seeds/squeezenic.md section 3, equations 1-3): in-NIC compression of the
gradient all-reduce, on the `comm` command's topology."""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, assert_never

from optimus_calc.equations.recording import eq
from optimus_calc.errors import InputError
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.units import GB
from optimus_calc.record import record

if TYPE_CHECKING:
    from optimus_calc.evaluate.topology import Topology


class CompressSite(str, Enum):
    """Where SqueezeNIC's hardware (de)compression terms run (section 4.4's two variants)."""
    GPU = "gpu"
    SMARTNIC = "smartnic"


class Approach(str, Enum):
    """SqueezeNIC section 2.2: Approach 1 (LR+INC), Approach 2 (CTLR+INC)."""
    ONE = "1"
    TWO = "2"


@record
class Squeeze:
    """SqueezeNIC equations 1-3 on the same per-GPU buffer as the ring, for one size."""
    ratio: float
    site: CompressSite
    approach: Approach
    compressor_GBps: float       # one compressor (a SmartNIC, or a GPU kernel)
    node_compressor_GBps: float  # the node's compressors together (theta_c, theta_d)
    gpu_compressor_GBps: float   # one GPU (theta_gc, theta_gd)
    baseline_s: float
    approach1_s: float
    approach2_s: float

    @property
    def approach_s(self) -> float:
        match self.approach:
            case Approach.ONE:
                return self.approach1_s
            case Approach.TWO:
                return self.approach2_s
            case _:
                assert_never(self.approach)


def compressor_GBps(site: CompressSite, asm: Assumptions) -> float:
    match site:
        case CompressSite.GPU:
            return asm.gpu_compress_GBps
        case CompressSite.SMARTNIC:
            return asm.nic_compress_GBps
        case _:
            assert_never(site)


def compressors_per_node(site: CompressSite, topo: Topology) -> int:
    """One compressor per rail: each GPU (its own kernel) or each NIC of the node."""
    match site:
        case CompressSite.GPU:
            return topo.per_node
        case CompressSite.SMARTNIC:
            return topo.nics
        case _:
            assert_never(site)


def squeezenic(size: float, topo: Topology, ratio: float, site: CompressSite,
               approach: Approach, asm: Assumptions) -> Squeeze:
    """SqueezeNIC equations (1)-(3) for a per-GPU gradient buffer of ``size`` bytes."""
    if not 0 < ratio <= 1:
        raise InputError(f"--compression {ratio} must be in (0, 1]: compressed/original size")
    one = compressor_GBps(site, asm) * GB
    node = one * compressors_per_node(site, topo)
    gpu = asm.gpu_compress_GBps * GB
    common = dict(N=topo.nodes, alpha_e=topo.alpha_inter_s, alpha_i=topo.alpha_intra_s,
                  beta_e=1.0 / topo.node_network_Bps, beta_i=1.0 / topo.intra_Bps,
                  m=topo.per_node, z=size)
    base = float(eq.comm__squeezenic_baseline_time(**common))
    app1 = float(eq.comm__squeezenic_app1_time(**common, r=ratio, theta_c=node, theta_d=node))
    app2 = float(eq.comm__squeezenic_app2_time(**common, r=ratio, theta_c=node, theta_d=node,
                                               theta_gc=gpu, theta_gd=gpu))
    return Squeeze(ratio, site, approach, one / GB, node / GB, gpu / GB, base, app1, app2)
