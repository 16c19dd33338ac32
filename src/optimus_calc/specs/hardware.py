"""Hardware specs: GPU, CPU, SmartNIC/DPU/FPGA card, NIC, link, NVMe drive, node, cluster.

Field names carry their units: ``_GB`` (1e9 bytes), ``_GBps`` (1e9 bytes/s per direction unless
``_bidir``), ``_Gbps`` (1e9 bits/s, network line rates only), ``_TFLOPS`` (1e12 FLOP/s, dense),
``_us`` (microseconds), ``_GHz``. Conversions to SI base units are the ``*_bytes``/``*_Bps``
properties, so the rest of the code works in bytes, seconds and FLOP/s only.
"""

from enum import Enum
from typing import ClassVar, Literal, assert_never

from optimus_calc.specs.frozen import Field, field_validator, model_validator

from optimus_calc.specs.base import CatalogEntry, Frozen
from optimus_calc.units import GB, TFLOPS, gbps_to_bytes_per_s


# Floors that keep every divisor of the model away from zero, so a typo (1e-300 GB/s, an
# efficiency of 0) is an input error rather than an infinite or absurd time. None of them is
# physics: each is far below any real part. Efficiencies are fractions; measured ones sit between
# about 0.5 and 0.95 (nccl-tests bus bandwidth, STREAM triad), so 0.01 catches a percent typed as
# a fraction's hundredth. 1 MB/s is slower than any link, memory or drive in the catalog by five
# orders of magnitude; 10 MHz and 1 MFLOP/s likewise for clocks and compute.
MIN_EFFICIENCY = 0.01
MIN_GBPS = 1e-3
MIN_GBITPS = 1e-3  # network line rates, Gb/s
MIN_GHZ = 0.01
MIN_TFLOPS = 1e-6
MIN_GB = 1e-3  # memory capacities, GB (divisors when sizing SmartNIC counts)
MIN_GEMM_HALF_GFLOP = 1e-3  # assumed: a 1 MFLOP GEMM is below any a transformer layer launches


def _required(entry, fields: tuple[str, ...], floors: dict[str, float], why: str) -> None:
    """A cross-field rule: each of ``fields`` must be set (>= its floor) for this entry."""
    for name in fields:
        value = getattr(entry, name)
        if value < floors[name]:
            raise ValueError(f"field {name!r}: required for {why} (got {value:g}; must be "
                             f">= {floors[name]:g})")


class Dtype(str, Enum):
    FP64 = "fp64"
    FP32 = "fp32"
    TF32 = "tf32"
    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    FP4 = "fp4"


class Flops(Frozen):
    """Dense peak TFLOP/s per data type (datasheets print sparse FP16/FP8: halve those)."""

    fp64: float = Field(default=0.0, ge=0, le=1e6, description="dense FP64 TFLOP/s")
    fp32: float = Field(default=0.0, ge=0, le=1e6, description="dense FP32 TFLOP/s")
    tf32: float = Field(default=0.0, ge=0, le=1e6, description="dense TF32 TFLOP/s")
    bf16: float = Field(default=0.0, ge=0, le=1e6, description="dense BF16 TFLOP/s")
    fp16: float = Field(default=0.0, ge=0, le=1e6, description="dense FP16 TFLOP/s")
    fp8: float = Field(default=0.0, ge=0, le=1e6, description="dense FP8 TFLOP/s")
    fp4: float = Field(default=0.0, ge=0, le=1e6, description="dense FP4 (NVFP4) TFLOP/s")

    @field_validator("*")
    @classmethod
    def _zero_or_real(cls, v: float, info) -> float:
        if 0 < v < MIN_TFLOPS:
            raise ValueError(f"{info.field_name} must be 0 (absent) or >= {MIN_TFLOPS:g} TFLOP/s")
        return v

    def flops_per_s(self, dtype: Dtype | str) -> float:
        d = Dtype(dtype)
        match d:
            case Dtype.FP64:
                tflops = self.fp64
            case Dtype.FP32:
                tflops = self.fp32
            case Dtype.TF32:
                tflops = self.tf32
            case Dtype.BF16:
                tflops = self.bf16
            case Dtype.FP16:
                tflops = self.fp16
            case Dtype.FP8:
                tflops = self.fp8
            case Dtype.FP4:
                tflops = self.fp4
            case _:
                assert_never(d)
        return float(tflops) * TFLOPS


class LinkKind(str, Enum):
    NVLINK = "nvlink"
    NVSWITCH = "nvswitch"
    PCIE = "pcie"
    C2C = "nvlink-c2c"
    INFINITY_FABRIC = "infinity-fabric"
    NETWORK = "network"
    DDR = "ddr"


class Link(CatalogEntry):
    """A point-to-point or switched link, alpha-beta model: T(z) = alpha + z / (B * efficiency)."""

    kind: ClassVar[str] = "link"
    link_kind: LinkKind = Field(description="family of the link")
    bandwidth_GBps: float = Field(ge=MIN_GBPS, le=1e5, description="peak bandwidth per direction, GB/s")
    alpha_us: float = Field(ge=0, le=1e4, description="per-message latency alpha, microseconds")
    efficiency: float = Field(ge=MIN_EFFICIENCY, le=1,
                              description="achievable fraction of peak bandwidth")
    nvls_busbw_GBps: float | None = Field(
        default=None, ge=MIN_GBPS, le=1e5,
        description="NVLink SHARP (NVLS) all-reduce bus bandwidth over a full node, GB/s, as "
                    "nccl-tests reports it; absent: the switch has no NVLS")

    @property
    def bandwidth_Bps(self) -> float:
        return self.bandwidth_GBps * GB

    @property
    def alpha_s(self) -> float:
        return self.alpha_us * 1e-6


class GPU(CatalogEntry):
    kind: ClassVar[str] = "gpu"
    vendor: Literal["nvidia", "amd", "intel"] = Field(description="vendor")
    memory_GB: float = Field(ge=MIN_GB, le=1e4, description="usable device memory, GB")
    hbm_bandwidth_GBps: float = Field(ge=MIN_GBPS, le=1e5, description="peak HBM bandwidth, GB/s")
    peak_TFLOPS: Flops = Field(description="dense peak TFLOP/s by data type")
    scale_up_link: str = Field(description="catalog link name of the GPU's scale-up fabric")
    scale_up_GBps: float = Field(ge=MIN_GBPS, le=1e5, description="scale-up bandwidth per direction, GB/s")
    host_link: str = Field(description="catalog link name of the GPU-to-host link")
    tdp_W: float = Field(default=0, ge=0, le=1e4, description="board power, W")
    sm_count: int = Field(default=0, ge=0, le=100_000,
                          description="streaming multiprocessors / compute units (datasheet)")
    mxfp8: bool = Field(
        default=False,
        description="MXFP8 (FP8 with a shared E8M0 scale per 32 elements) tensor cores: "
                    "Blackwell data-center GPUs, compute capability 10.x (Transformer Engine "
                    "runs MXFP8 only there: transformer_engine/pytorch/quantization.py L162-168 "
                    "@ d0067d0)")
    # GEMM efficiency curve (equations/efficiency.py): eta_d = gemm_eta_max W / (W + W_half).
    # Defaults are the A100 fit; an entry without its own values is labelled "assumed".
    gemm_eta_max: float = Field(
        default=0.75, ge=MIN_EFFICIENCY, le=1,
        description="efficiency of very large weight GEMMs (achieved / dense peak)")
    gemm_half_GFLOP: float = Field(
        default=23.1, ge=MIN_GEMM_HALF_GFLOP, le=1e6,
        description="FLOPs of one GEMM (GFLOP) at which it runs at half of gemm_eta_max")
    attention_eta: float = Field(
        default=0.19, ge=MIN_EFFICIENCY, le=1,
        description="efficiency of the unfused attention core (baddbmm + softmax + bmm)")
    flash_attention_eta: float = Field(
        default=0.43, ge=MIN_EFFICIENCY, le=1,
        description="end-to-end (training) efficiency of the GPU's default fused attention "
                    "kernel (attention_kernel), forward + backward, on causally halved FLOPs "
                    "(FlashAttention's convention); capped at gemm_eta_max")
    attention_kernel: Literal["fa2", "fa3", "cudnn", "fa1"] = Field(
        default="fa2", description="fused attention kernel the GPU's usual training stack runs "
                                   "(--attention-kernel's default)")
    attention_kernel_eta: dict[Literal["fa2", "fa3", "cudnn", "fa1"], float] = Field(
        default_factory=dict,
        description="efficiency of the other fused attention kernels that run on this GPU "
                    "(causally halved FLOPs); a kernel absent here and not the default does not "
                    "run on it")
    attention_head_dim64: dict[Literal["fa2", "fa3", "cudnn", "fa1"], float] = Field(
        default_factory=dict,
        description="a fused kernel's forward + backward speed at head dim 64 over its speed at "
                    "128 (efficiency.head_dim_attention_efficiency); a kernel absent here: 1")
    efficiency_label: Literal["calibrated", "derived", "assumed", "unvalidated"] = Field(
        default="assumed", description="how the efficiency parameters were obtained "
                                       "(unvalidated: no public training data for this GPU)")
    efficiency_source: str = Field(
        default="A100 values (Narayanan et al. SC'21 Table 1 fit) assumed for this GPU",
        description="where the efficiency parameters come from")

    @field_validator("attention_kernel_eta", "attention_head_dim64")
    @classmethod
    def _kernel_etas(cls, v: dict) -> dict:
        for k, eta in v.items():
            if not 0 < eta <= 1:
                raise ValueError(f"{k} = {eta}: an efficiency (or a ratio of two) in (0, 1]")
        return v

    @model_validator(mode="after")
    def _fp32_peak(self) -> "GPU":
        # The optimizer step on a GPU is an fp32 roofline (evaluate/optimizer.py device_from).
        if self.peak_TFLOPS.fp32 <= 0:
            raise ValueError("field 'peak_TFLOPS.fp32': required (the optimizer step runs in "
                             "fp32); give the dense FP32 TFLOP/s from the datasheet")
        return self

    @property
    def memory_bytes(self) -> float:
        return self.memory_GB * GB

    @property
    def hbm_Bps(self) -> float:
        return self.hbm_bandwidth_GBps * GB


class CPU(CatalogEntry):
    kind: ClassVar[str] = "cpu"
    vendor: Literal["amd", "intel", "nvidia", "arm"] = Field(description="vendor")
    cores: int = Field(gt=0, le=4096, description="physical cores per socket")
    base_GHz: float = Field(ge=MIN_GHZ, le=10, description="base clock, GHz")
    fp32_flops_per_cycle: int = Field(gt=0, le=1024, description="FP32 FLOPs per cycle per core")
    memory_channels: int = Field(gt=0, le=64, description="memory channels per socket")
    memory_bandwidth_GBps: float = Field(ge=MIN_GBPS, le=1e5, description="peak memory bandwidth, GB/s")
    stream_efficiency: float = Field(
        ge=MIN_EFFICIENCY, le=1, description="achievable fraction of peak memory bandwidth (STREAM triad)")
    core_bandwidth_GBps: float = Field(
        ge=MIN_GBPS, le=1e4, description="memory bandwidth one thread can draw, GB/s (thread scaling)")

    @property
    def fp32_flops_per_s(self) -> float:
        return self.cores * self.base_GHz * 1e9 * self.fp32_flops_per_cycle

    @property
    def memory_Bps(self) -> float:
        return self.memory_bandwidth_GBps * GB


class SmartNIC(CatalogEntry):
    """A SmartNIC, DPU or FPGA card that can hold optimizer state and run the update."""

    kind: ClassVar[str] = "smartnic"
    device_type: Literal["dpu", "fpga", "ipu"] = Field(description="SoC DPU, FPGA card or IPU")
    cores: int = Field(default=0, ge=0, le=4096, description="general-purpose cores (0 for FPGA)")
    core_GHz: float = Field(default=0, ge=0, le=10, description="core clock, GHz")
    fp32_flops_per_cycle: int = Field(
        default=0, ge=0, le=1024, description="FP32 FLOPs per cycle per core")
    fabric_fp32_TFLOPS: float = Field(
        default=0, ge=0, le=1e4, description="FPGA fabric FP32 throughput for the optimizer, TFLOP/s")
    memory_GB: float = Field(ge=MIN_GB, le=1e4, description="on-board memory usable for state, GB")
    memory_bandwidth_GBps: float = Field(ge=MIN_GBPS, le=1e5,
                                         description="peak on-board memory BW, GB/s")
    memory_efficiency: float = Field(
        ge=MIN_EFFICIENCY, le=1, description="achievable fraction of on-board memory bandwidth")
    core_bandwidth_GBps: float = Field(
        default=0, ge=0, le=1e4,
        description="memory bandwidth one core can draw, GB/s (0 for FPGA fabric)")
    expansion_memory_GB: float = Field(
        default=0, ge=0, le=1e4, description="second memory tier (e.g. DDR4 DIMM on V80), GB")
    expansion_bandwidth_GBps: float = Field(
        default=0, ge=0, le=1e5, description="bandwidth of the second tier, GB/s")
    line_rate_Gbps: float = Field(ge=MIN_GBITPS, le=1e5, description="network line rate, Gb/s (bits)")
    host_link: str = Field(description="catalog link name of the card's host interface")

    @model_validator(mode="after")
    def _per_type(self) -> "SmartNIC":
        """What each device type needs to run the optimizer (evaluate/optimizer.py device_from):
        a DPU/IPU runs it on its cores (count, clock, FLOPs per cycle, per-core bandwidth), an
        FPGA in its fabric (fabric FP32 TFLOP/s); a second memory tier needs its bandwidth."""
        if self.device_type == "fpga":
            _required(self, ("fabric_fp32_TFLOPS",), {"fabric_fp32_TFLOPS": MIN_TFLOPS},
                      "device_type 'fpga' (the optimizer runs in the fabric)")
        else:
            _required(self, ("cores", "core_GHz", "fp32_flops_per_cycle", "core_bandwidth_GBps"),
                      {"cores": 1, "core_GHz": MIN_GHZ, "fp32_flops_per_cycle": 1,
                       "core_bandwidth_GBps": MIN_GBPS},
                      f"device_type {self.device_type!r} (the optimizer runs on its cores)")
        if self.expansion_memory_GB > 0:
            _required(self, ("expansion_bandwidth_GBps",),
                      {"expansion_bandwidth_GBps": MIN_GBPS},
                      "a second memory tier (expansion_memory_GB > 0)")
        return self

    @property
    def memory_bytes(self) -> float:
        """Capacity for offloaded state: both memory tiers."""
        return (self.memory_GB + self.expansion_memory_GB) * GB

    @property
    def memory_Bps(self) -> float:
        return self.memory_bandwidth_GBps * GB

    @property
    def fp32_flops_per_s(self) -> float:
        fabric = self.fabric_fp32_TFLOPS
        # a column of values (breakeven's stacked cases) is a fabric in every row
        if fabric is not None and (not isinstance(fabric, (int, float)) or fabric):
            return fabric * TFLOPS
        return self.cores * self.core_GHz * 1e9 * self.fp32_flops_per_cycle

    @property
    def network_Bps(self) -> float:
        return gbps_to_bytes_per_s(self.line_rate_Gbps)


class NIC(CatalogEntry):
    kind: ClassVar[str] = "nic"
    line_rate_Gbps: float = Field(ge=MIN_GBITPS, le=1e5, description="line rate, Gb/s (bits)")
    host_link: str = Field(description="catalog link name of the NIC's host interface")
    alpha_us: float = Field(ge=0, le=1e4, description="network per-message latency, microseconds")
    efficiency: float = Field(ge=MIN_EFFICIENCY, le=1,
                              description="achievable fraction of line rate")

    @property
    def line_rate_Bps(self) -> float:
        return gbps_to_bytes_per_s(self.line_rate_Gbps)


class NVMe(CatalogEntry):
    kind: ClassVar[str] = "nvme"
    capacity_GB: float = Field(ge=MIN_GB, le=1e6, description="capacity, GB")
    read_GBps: float = Field(ge=MIN_GBPS, le=1e3, description="sequential read, GB/s")
    write_GBps: float = Field(ge=MIN_GBPS, le=1e3, description="sequential write, GB/s")


class Node(CatalogEntry):
    kind: ClassVar[str] = "node"
    gpu: str = Field(description="catalog GPU name")
    gpus: int = Field(gt=0, le=1024, description="GPUs per node")
    cpu: str = Field(description="catalog CPU name")
    cpus: int = Field(gt=0, le=64, description="CPU sockets per node")
    host_memory_GB: float = Field(ge=MIN_GB, le=1e6, description="host DRAM per node, GB")
    nic: str = Field(description="catalog NIC name of the compute fabric")
    nics: int = Field(ge=0, le=1024, description="compute NICs per node")
    smartnic: str | None = Field(default=None, description="catalog SmartNIC name, if fitted")
    smartnics: int = Field(default=0, ge=0, le=1024, description="SmartNICs per node")
    smartnic_gpu_affinity: Literal["per-gpu", "shared"] = Field(
        default="per-gpu", description="SmartNIC pairing: one per GPU, or shared by the node")
    nvme: str | None = Field(default=None, description="catalog NVMe drive name")
    nvme_drives: int = Field(default=0, ge=0, le=1024, description="NVMe drives for offload")
    intra_link: str = Field(description="catalog link name of the intra-node GPU fabric")
    gpu_host_link: str = Field(description="catalog link name GPU-to-host (PCIe or NVLink-C2C)")
    superchip: bool = Field(default=False, description="GPU and CPU share a coherent C2C link")
    gpus_per_host: int | None = Field(
        default=None, gt=0, le=1024,
        description="GPUs one host (one OS, one launcher) drives where the node, an NVLink "
                    "domain, spans several hosts (a rack's compute trays): the node of the "
                    "exported launch lines; default: the node's gpus")

    @model_validator(mode="after")
    def _consistent(self) -> "Node":
        if self.gpus_per_host and self.gpus % self.gpus_per_host:
            raise ValueError(f"field 'gpus_per_host': {self.gpus_per_host} does not divide the "
                             f"node's gpus {self.gpus}")
        if self.smartnics and not self.smartnic:
            raise ValueError("smartnics > 0 needs a smartnic name")
        if self.nvme_drives and not self.nvme:
            raise ValueError("nvme_drives > 0 needs an nvme name")
        return self

    @property
    def host_memory_bytes(self) -> float:
        return self.host_memory_GB * GB


class Cluster(Frozen):
    """A node type times a count, plus the inter-node fabric built from the node's NICs."""

    node: Node
    count: int = Field(gt=0, le=1_000_000, description="number of nodes")

    @property
    def gpus(self) -> int:
        return self.node.gpus * self.count
