"""Training settings, parallel layout and named assumptions. Closed sets are Enums."""

from __future__ import annotations

from enum import Enum, IntEnum

from pydantic import Field, model_validator

from optimus_calc.specs.base import Frozen


class ZeroStage(IntEnum):
    NONE = 0
    OS = 1
    OS_G = 2
    OS_G_P = 3


class Offload(str, Enum):
    NONE = "none"
    CPU = "cpu"              # ZeRO-Offload
    NVME = "nvme"            # ZeRO-Infinity
    SMARTNIC = "smartnic"    # OptimusNIC
    SUPERCHIP = "superchip"  # SuperOffload


class Recompute(str, Enum):
    NONE = "none"
    SELECTIVE = "selective"
    FULL = "full"

    @property
    def code(self) -> int:
        return {"none": 0, "selective": 1, "full": 2}[self.value]


class Precision(str, Enum):
    BF16 = "bf16"
    FP16 = "fp16"
    FP32 = "fp32"

    @property
    def weight_bytes(self) -> int:
        return 4 if self is Precision.FP32 else 2


class Optimizer(str, Enum):
    ADAM = "adam"
    ADAMW = "adamw"
    SGD = "sgd"  # with momentum

    def state_bytes(self, precision: Precision) -> int:
        """Optimizer bytes per parameter. Mixed precision keeps an fp32 master copy (4) plus
        Adam's two fp32 moments (8) = 12, or SGD's momentum (4) = 8 (ZeRO paper section 3.1);
        pure fp32 training needs no master copy."""
        moments = 8 if self in (Optimizer.ADAM, Optimizer.ADAMW) else 4
        master = 0 if precision is Precision.FP32 else 4
        return moments + master


class Training(Frozen):
    """What is trained and how: batch, sequence, precision, memory-saving switches."""

    seq_len: int = Field(gt=0, le=10_000_000, description="sequence length, tokens")
    micro_batch: int = Field(default=1, gt=0, le=1_000_000, description="micro-batch size")
    global_batch: int = Field(gt=0, le=100_000_000, description="global batch, sequences")
    precision: Precision = Precision.BF16
    optimizer: Optimizer = Optimizer.ADAM
    grad_bytes: int = Field(default=0, ge=0, le=8,
                            description="bytes per gradient on the GPU (0 = weight bytes)")
    recompute: Recompute = Recompute.NONE
    sequence_parallel: bool = True
    flash_attention: bool = True
    dropout: bool = True
    model_states_only: bool = False
    multicast: bool = Field(
        default=False, description="parameter all-gathers use hardware multicast "
                                   "(seeds/multicast-allgather-abstract.md)")

    @property
    def weight_bytes(self) -> int:
        return self.precision.weight_bytes

    @property
    def gradient_bytes(self) -> int:
        return self.grad_bytes or self.precision.weight_bytes

    @property
    def optimizer_bytes(self) -> int:
        return self.optimizer.state_bytes(self.precision)


class Layout(Frozen):
    """How the model is laid out over the cluster."""

    tp: int = Field(default=1, gt=0, le=1_000_000, description="tensor-parallel degree")
    pp: int = Field(default=1, gt=0, le=1_000_000, description="pipeline-parallel degree")
    dp: int = Field(default=1, gt=0, le=1_000_000, description="data-parallel degree")
    cp: int = Field(default=1, gt=0, le=1_000_000, description="context-parallel degree")
    ep: int = Field(default=1, gt=0, le=1_000_000, description="expert-parallel degree")
    zero: ZeroStage = ZeroStage.NONE
    offload: Offload = Offload.NONE
    interleave: int = Field(default=1, gt=0, le=1000, description="model chunks per GPU")
    offload_params: bool = False
    smartnic: str | None = None
    smartnics_per_node: int = Field(default=0, ge=0, le=1024,
                                    description="SmartNICs per node (0 = one per GPU)")
    superchip_gpu_fraction: float = Field(default=0.0, ge=0, le=1,
                                          description="optimizer fraction kept on the GPU")
    allow_spill: bool = Field(default=True, description="SmartNIC state may spill to host RAM")

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp * self.cp

    @model_validator(mode="after")
    def _ep_divides(self) -> "Layout":
        if self.dp * self.cp % self.ep and self.ep > 1:
            raise ValueError(f"--ep {self.ep} must divide dp x cp = {self.dp * self.cp}")
        return self


class Assumptions(Frozen):
    """Named, overridable assumptions (``--assume NAME=VALUE``). Each says where it comes from."""

    cuda_context_GB: float = Field(
        default=0.8, ge=0, le=1e3,
        description="assumed: CUDA context + cuBLAS/NCCL workspaces per GPU process")
    fragmentation: float = Field(
        default=0.05, ge=0, le=1,
        description="assumed: PyTorch caching-allocator fragmentation, fraction of allocations")
    ddp_bucket_MB: float = Field(
        default=25.0, ge=0, le=1e6,
        description="PyTorch DDP default bucket_cap_mb (ZeRO 0)")
    zero_bucket_params: float = Field(
        default=5e8, ge=0, le=1e12,
        description="DeepSpeed default reduce_bucket_size, elements (ZeRO 1-3)")
    host_grad_bytes: float = Field(
        default=4, ge=0, le=8, description="ZeRO-Offload keeps fp32 gradients on the host")
    nvme_buffer_count: float = Field(
        default=4, ge=0, le=1e3, description="DeepSpeed offload_optimizer nvme buffer_count")
    nvme_buffer_params: float = Field(
        default=1e8, ge=0, le=1e12, description="DeepSpeed aio buffer_size, elements")
    logits_bytes: float = Field(
        default=6, ge=0, le=16,
        description="bytes per logit held for the loss: bf16 logits + fp32 copy (Megatron)")
    host_reserved_fraction: float = Field(
        default=0.1, ge=0, le=1,
        description="assumed: host RAM kept for the OS, data loaders and pinned buffers")

    gpu_compress_GBps: float = Field(
        default=21.6, gt=0, le=1e5,
        description="GPU 1-bit compression throughput: BERT-Large's 335M fp32 gradients "
                    "(1.34 GB) in 0.062 s on a V100, SqueezeNIC Table 2")
    nic_compress_GBps: float = Field(
        default=800.0, gt=0, le=1e5,
        description="in-NIC (FPGA) compression throughput: 6400 Gb/s host side, SqueezeNIC "
                    "Table 6 (line rate)")

    gemm_efficiency: float = Field(
        default=0.60, gt=0, le=1,
        description="constant achieved / peak dense FLOP/s (0.60: one value fitted on Narayanan "
                    "et al. SC'21 Table 1, +7.5% to -10% per row). Given with --assume it "
                    "replaces the per-GPU efficiency curve (evaluate/efficiency.py, catalog "
                    "gemm_* fields), which follows the GEMM shapes instead")
    hbm_efficiency: float = Field(
        default=0.9, gt=0, le=1,
        description="achievable fraction of HBM bandwidth: calculon and llm-analysis use 0.9; "
                    "GH200 STREAM 85% (KTH)")
    elementwise_factor: float = Field(
        default=4.0, ge=0, le=100,
        description="HBM passes of element-wise work over the stored activation bytes: written "
                    "forward, read backward, gradient written and read (4); a recomputed "
                    "forward adds one (derived, not measured)")
    tp_overlap: float = Field(
        default=0.0, ge=0, le=1,
        description="assumed: fraction of TP communication hidden behind compute (0: exposed)")
    cp_overlap: float = Field(
        default=0.0, ge=0, le=1,
        description="assumed: fraction of context-parallel K/V traffic hidden behind attention")
    pp_overlap: float = Field(
        default=0.0, ge=0, le=1,
        description="assumed: fraction of PP point-to-point time hidden behind compute")

    def names(self) -> list[str]:
        return list(type(self).model_fields)
