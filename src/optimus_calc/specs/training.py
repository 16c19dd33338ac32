"""Training settings, parallel layout and named assumptions. Closed sets are Enums."""

from enum import Enum, IntEnum
from typing import Literal

from optimus_calc.specs.frozen import Field, model_validator

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

    @classmethod
    def _missing_(cls, value):
        """A target added by an offload strategy plug-in (evaluate/strategies.register)."""
        return _EXTRA_OFFLOADS.get(value)


_EXTRA_OFFLOADS: dict[str, Offload] = {}


def register_offload(value: str) -> Offload:
    """Make ``value`` a valid Offload (a pseudo-member for targets beyond the built-ins)."""
    try:
        return Offload(value)
    except ValueError:
        member = str.__new__(Offload, value)
        member._name_, member._value_ = value.upper().replace("-", "_"), value
        _EXTRA_OFFLOADS[value] = member
        return member


class Recompute(str, Enum):
    NONE = "none"
    SELECTIVE = "selective"
    FULL = "full"

    @property
    def code(self) -> int:
        """The integer code of the mode inside arrays: its position in declaration order (as
        evaluate.batch.RECOMPUTE_CODES)."""
        return list(Recompute).index(self)


# Megatron-LM's output-discarding selective recomputation modules modelled here
# (--recompute-modules; core/transformer/transformer_config.py L560-582 @ d98e8a6): layernorm,
# the separate norms' outputs (an MoE layer's pre_mlp_layernorm); moe_act, the routed experts'
# activation output (the fc2 input). Strings, not an Enum: no class on the cold path.
RECOMPUTE_MODULES = ("layernorm", "moe_act")


def recompute_modules_of(kw: dict, searched: bool = False) -> tuple:
    """--recompute-modules LIST (``kw``: the command's options) as Training.recompute_modules:
    with --recompute selective only (``searched``: a search's --recompute LIST, every mode by
    default, must hold selective; the list applies to its selective layouts), and with a fused
    attention kernel (the list replaces core_attn, whose s x s scores unfused attention would
    then store: not modelled); an InputError naming the flag otherwise."""
    from optimus_calc.errors import InputError
    text = kw.get("recompute_modules")
    if text is None:
        return ()
    mods = tuple(dict.fromkeys(x.strip() for x in text.split(",")))
    if bad := [m for m in mods if m not in RECOMPUTE_MODULES]:
        raise InputError(f"--recompute-modules: {bad[0]!r} is not one of "
                         + ", ".join(RECOMPUTE_MODULES))
    if searched:
        modes = kw.get("recomputes")
        if modes is not None and "selective" not in [m.strip() for m in modes.split(",")]:
            raise InputError(f"--recompute-modules needs selective among the --recompute modes "
                             f"searched (got --recompute {modes})")
    elif (mode := getattr(kw.get("recompute"), "value", kw.get("recompute"))) != "selective":
        raise InputError(f"--recompute-modules needs --recompute selective (got --recompute "
                         f"{mode})")
    if not kw.get("flash_attn", True):
        raise InputError("--recompute-modules with --no-flash-attn: not modelled (the list "
                         "replaces Megatron-LM's core_attn, so the unfused scores stay stored)")
    return mods


class AttentionKernel(str, Enum):
    """Fused attention kernels with a per-GPU efficiency (catalog attention_kernel_eta)."""
    FA2 = "fa2"      # FlashAttention-2 (Dao 2023): Ampere, Ada, Hopper
    FA3 = "fa3"      # FlashAttention-3 (Shah et al. 2024): Hopper only
    CUDNN = "cudnn"  # cuDNN fused attention (Transformer Engine FusedAttention, PyTorch SDPA)
    FA1 = "fa1"      # FlashAttention-1 (Dao et al. 2022) and its Triton port (MPT's triton)


# Integer codes of the closed sets inside arrays (position in the Enum's declaration order);
# evaluate.batch, search.space and frameworks re-export or read them from here.
OFFLOAD_CODES: tuple[Offload, ...] = tuple(Offload)
RECOMPUTE_CODES: tuple[Recompute, ...] = tuple(Recompute)


def offload_code(offload: Offload | str) -> int:
    """The integer code of an offload target inside the evaluator's arrays: the built-ins in the
    Offload enum's order, then targets added by strategy plug-ins in registration order."""
    o = Offload(offload)
    if o in OFFLOAD_CODES:
        return OFFLOAD_CODES.index(o)
    return len(OFFLOAD_CODES) + list(_EXTRA_OFFLOADS).index(o.value)


def offload_of_code(code: int) -> Offload:
    """The offload target of an integer code (the inverse of :func:`offload_code`)."""
    code = int(code)
    if code < len(OFFLOAD_CODES):
        return OFFLOAD_CODES[code]
    return _EXTRA_OFFLOADS[list(_EXTRA_OFFLOADS)[code - len(OFFLOAD_CODES)]]


class MoeDispatcher(str, Enum):
    """The MoE token dispatcher (Megatron-LM --moe-token-dispatcher-type, with flex its
    --moe-flex-dispatcher-backend; torchtitan parallelism.expert_parallel_comm_backend)."""

    ALLTOALL = "alltoall"  # NCCL's pairwise all-to-all (comm.pairwise_cross_share)
    DEEPEP = "deepep"      # DeepEP: across nodes once per node (comm.dedup_cross_share)
    HYBRIDEP = "hybridep"  # NVIDIA's HybridEP (DeepEP's hybrid-ep branch), as DeepEP (assumed)

    @property
    def dedups_nodes(self) -> bool:
        return self is not MoeDispatcher.ALLTOALL


class CrossEntropyFusion(str, Enum):
    """Megatron-LM's loss over the logits (--cross-entropy-loss-fusion,
    --cross-entropy-fusion-impl): unfused, its fused native one, or Transformer Engine's."""

    NONE = "none"
    NATIVE = "native"
    TE = "te"


class Precision(str, Enum):
    BF16 = "bf16"
    FP16 = "fp16"
    FP32 = "fp32"
    # FP8 GEMMs over bf16 weights: the model keeps bf16 weights and gradients and fp32 master
    # weights and moments (Transformer Engine and torchao quantize before each GEMM), so the
    # bytes per parameter are bf16's; the GEMMs run at the FP8 peak (evaluate/fp8.py)
    FP8 = "fp8"
    # NVFP4 GEMMs over bf16 weights, as FP8's (Transformer Engine's NVFP4BlockScaling recipe,
    # Megatron-LM --fp4-format e2m1 --fp4-recipe nvfp4): the GEMMs at the FP4 peak, 4-bit
    # copies with an E4M3 scale per 16-element block (evaluate/fp8.py, Fp8Recipe.NVFP4)
    NVFP4 = "nvfp4"

    @property
    def weight_bytes(self) -> int:
        return 4 if self is Precision.FP32 else 2

    @property
    def gemm_dtype(self) -> str:
        """The catalog peak its weight GEMMs run at (Flops field): NVFP4's is fp4."""
        return "fp4" if self is Precision.NVFP4 else self.value


class Fp8Recipe(str, Enum):
    """How low-precision GEMM training scales and keeps its quantized tensors: the FP8 recipes
    (``--precision fp8 --fp8-recipe``) and NVFP4, which ``--precision nvfp4`` implies
    (:attr:`Training.gemm_recipe`; not an ``--fp8-recipe`` choice)."""

    TE_DELAYED = "te-delayed"    # Transformer Engine DelayedScaling (Megatron --fp8-recipe delayed)
    TE_CURRENT = "te-current"    # TE Float8CurrentScaling (Megatron --fp8-recipe tensorwise)
    TORCHAO = "torchao"          # torchao Float8Linear, tensorwise (torchtitan quantize.linear.float8)
    MXFP8 = "mxfp8"              # TE MXFP8BlockScaling (Megatron --fp8-recipe mxfp8), Blackwell only
    NVFP4 = "nvfp4"              # TE NVFP4BlockScaling (Megatron --fp4-recipe nvfp4), Blackwell only

    @property
    def transformer_engine(self) -> bool:
        """TE keeps an FP8 copy of each GEMM weight and saves GEMM inputs in FP8 (evaluate/fp8.py);
        torchao saves the high-precision tensors and casts again in the backward."""
        return self is not Fp8Recipe.TORCHAO

    @property
    def amax_passes(self) -> int:
        """Extra reads of each GEMM input before its cast (equations/fp8.py amax_layer_bytes).
        te-current: Float8CurrentScalingQuantizer runs nvte_compute_amax over the input, then
        the cast (TransformerEngine transformer_engine/pytorch/csrc/quantizer.cpp L1008-1012,
        L1027 @ d0067d0): 1. te-delayed: Float8Quantizer casts with the scale from the amax
        history and records the new amax in the same kernel (quantizer.cpp L632-647): 0; its
        amax-history update is one small kernel over history x tensors per step. mxfp8: the
        scale of each 32-element block comes from that block inside the cast kernel: 0.
        torchao: its tensorwise amax runs under torch.compile, which the fitted rows use, fused
        with the kernel producing the input; inside its fitted ratio: 0. nvfp4: the per-tensor
        FP32 scale (the recipe's second level) comes from the tensor's amax, computed before
        the cast (nvte_compute_amax_with_config, or nvte_hadamard_transform_amax with the
        random Hadamard transform: NVFP4Quantizer::quantize_impl, quantizer.cpp L2630-2660): 1."""
        return 1 if self in (Fp8Recipe.TE_CURRENT, Fp8Recipe.NVFP4) else 0

    @property
    def peak(self) -> str:
        """The catalog peak its GEMMs run at (peak_TFLOPS.fp8 or .fp4)."""
        return (Precision.NVFP4 if self is Fp8Recipe.NVFP4 else Precision.FP8).gemm_dtype

    @property
    def label(self) -> str:
        """The quantized format as reports name it: NVFP4, else FP8."""
        return "NVFP4" if self is Fp8Recipe.NVFP4 else "FP8"

    @property
    def params_max_zero(self) -> int:
        """The highest ZeRO stage whose sharding keeps the GEMM weights in this format
        (Megatron-LM --fp8-param-gather / --fp4-param-gather): 3 for FP8, the distributed
        optimizer and Megatron-FSDP (arguments.py L1095-1097 @ d98e8a6); 1 for NVFP4, whose
        shard quantization only the distributed optimizer has (core/optimizer/
        distrib_optimizer.py, quantize_nvfp4_param_shard; nothing under core/distributed/fsdp
        reads fp4_param_gather, and Megatron-FSDP v2 refuses FP4, mcore_fsdp_adapter.py
        L676-677)."""
        return 1 if self is Fp8Recipe.NVFP4 else 3


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
    global_batch: int | None = Field(
        default=None, gt=0, le=100_000_000,
        description="global batch, sequences; None: the batch rule's for each layout "
                    "(evaluate.batch.resolve_global_batch)")
    precision: Precision = Precision.BF16
    fp8_recipe: Fp8Recipe = Field(default=Fp8Recipe.TE_DELAYED,
                                  description="FP8 recipe (used with precision fp8 only)")
    optimizer: Optimizer = Optimizer.ADAM
    grad_bytes: int = Field(default=0, ge=0, le=8,
                            description="bytes per gradient on the GPU (0 = weight bytes)")
    recompute: Recompute = Recompute.NONE
    recompute_modules: tuple[Literal[RECOMPUTE_MODULES], ...] = Field(
        default=(), description="Megatron-LM --recompute-modules under --recompute selective "
        "(its list replaces the default core_attn: the attention core is not re-run): layernorm "
        "and moe_act discard their outputs and re-run them in the backward (transformer_config"
        ".py L560-582 @ d98e8a6; compute.norm_recompute_bytes, compute.moe_act_recompute_bytes)")
    sequence_parallel: bool = True
    flash_attention: bool = True
    attention_kernel: AttentionKernel | None = Field(
        default=None, description="fused attention kernel (None: the GPU's default, catalog "
                                  "attention_kernel); needs flash_attention")
    dropout: bool = True
    model_states_only: bool = False
    multicast: bool = Field(
        default=False, description="parameter all-gathers use hardware multicast "
                                   "(seeds/multicast-allgather-abstract.md)")
    # Megatron-LM launch flags (megatron/training/arguments.py L3121, L3148 and
    # ModelParallelConfig.tp_comm_overlap, core/model_parallel_config.py L265 @ d98e8a6), on as
    # every Megatron-Bridge recipe sets them (recipes/common.py L83-84, training/comm_overlap.py
    # L575-578 @ 067f987). The Megatron-LM profile (frameworks/megatron.py) reads them and
    # --export megatron writes them; framework-neutral physics does not read them.
    overlap_grad_reduce: bool = Field(
        default=True, description="Megatron-LM --overlap-grad-reduce: bucketed gradient "
                                  "reductions overlap the backward")
    overlap_param_gather: bool = Field(
        default=True, description="Megatron-LM --overlap-param-gather: the distributed "
                                  "optimizer's parameter all-gather overlaps the next forward "
                                  "(needs --overlap-grad-reduce)")
    tp_comm_overlap: bool = Field(
        default=True, description="Megatron-LM --tp-comm-overlap: Transformer Engine "
                                  "userbuffers overlap the TP collectives with the GEMMs "
                                  "(needs sequence parallelism)")
    overlap_p2p_comm: bool = Field(
        default=True, description="Megatron-LM --overlap-p2p-communication (on unless "
                                  "--no-overlap-p2p-communication, arguments.py L3118-3120): "
                                  "the interleaved schedule's sends overlap the chunks' compute")
    overlap_moe_expert_parallel_comm: bool = Field(
        default=False, description="Megatron-LM --overlap-moe-expert-parallel-comm (default "
                                   "off, core/model_parallel_config.py L343): one "
                                   "micro-batch's MoE all-to-alls overlap another's compute")
    moe_dispatcher: MoeDispatcher = Field(
        default=MoeDispatcher.ALLTOALL, description="MoE token dispatcher: alltoall (NCCL), "
        "deepep or hybridep (Megatron-LM --moe-token-dispatcher-type flex "
        "--moe-flex-dispatcher-backend; torchtitan expert_parallel_comm_backend deepep): a "
        "token crosses to each other node once (comm.dedup_cross_share)")
    cuda_graph_full_iteration: bool = Field(
        default=False, description="Megatron-LM --cuda-graph-impl full_iteration: the training "
        "iteration replayed as one CUDA graph, no kernel launched by the host, no host sync "
        "(docs/user-guide/features/cuda_graph.md @ d98e8a6)")
    cross_entropy_fusion: CrossEntropyFusion = Field(
        default=CrossEntropyFusion.NATIVE, description="Megatron-LM --cross-entropy-loss-fusion "
        "(native; none without it) or with --cross-entropy-fusion-impl te (Megatron-Bridge's "
        "recipes): the loss's HBM bytes per logit (compute.loss_bytes, the Megatron profile)")
    moe_pad_expert_input_to_capacity: bool = Field(
        default=False, description="Megatron-LM --moe-pad-expert-input-to-capacity with "
                                   "--moe-expert-capacity-factor: token drop, every expert's "
                                   "input padded to its capacity (static shapes, no host sync)")
    fp8_param_gather: bool = Field(
        default=True, description="Megatron-LM --fp8-param-gather: with a Transformer Engine "
        "FP8 recipe and the distributed optimizer (ZeRO >= 1), the GEMM weights are kept and "
        "all-gathered in FP8 only, as NVIDIA's FP8 recipes set (fp8.primary_weight_saving_bytes); "
        "with --precision nvfp4 Megatron-LM's --fp4-param-gather under the distributed optimizer "
        "(ZeRO 1: Fp8Recipe.params_max_zero), as Megatron-Bridge's NVFP4 recipe sets "
        "(bf16_with_nvfp4_mixed)")

    modules_of = staticmethod(recompute_modules_of)  # --recompute-modules as the field

    @property
    def weight_bytes(self) -> int:
        return self.precision.weight_bytes

    @property
    def gemm_recipe(self) -> Fp8Recipe:
        """The quantization recipe in effect: NVFP4 with ``--precision nvfp4``, else the FP8
        recipe (meaningful with ``--precision fp8`` only)."""
        return Fp8Recipe.NVFP4 if self.precision is Precision.NVFP4 else self.fp8_recipe

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
    etp: int | None = Field(
        default=None, gt=0, le=1_000_000,
        description="expert tensor-parallel degree (Megatron-LM --expert-tensor-parallel-size; "
                    "None: as TP, Megatron's default, megatron/core/model_parallel_config.py "
                    "L506-507 @ d98e8a6). Set, the experts fold over TP x CP x DP (MoE "
                    "Parallel Folding, arXiv 2504.14960): EP x ETP must divide tp x cp x dp")
    zero: ZeroStage = ZeroStage.NONE
    offload: Offload = Offload.NONE
    interleave: int = Field(default=1, gt=0, le=1000, description="model chunks per GPU")
    offload_params: bool = False
    smartnic: str | None = None
    smartnics_per_node: int = Field(default=0, ge=0, le=1024,
                                    description="SmartNICs per node (0 = one per GPU)")
    superchip_gpu_fraction: float = Field(
        default=0.1, ge=0, le=1,
        description="SuperOffload: optimizer fraction kept on the GPU (0.1 = offload_optimizer "
                    "ratio 0.90 of DeepSpeedExamples training/DeepSpeed-SuperOffload @ 51495dc)")
    allow_spill: bool = Field(default=True, description="SmartNIC state may spill to host RAM")

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp * self.cp

    @property
    def expert_tp(self) -> int:
        """The experts' tensor-parallel degree: --etp, else TP (Megatron's default)."""
        return self.tp if self.etp is None else self.etp

    @model_validator(mode="after")
    def _ep_divides(self) -> "Layout":
        if self.etp is not None:  # parallel folding: the expert grid ETP x EP x EDP x PP
            dense = self.tp * self.cp * self.dp
            if dense % (self.ep * self.etp):
                raise ValueError(f"--ep {self.ep} x --etp {self.etp} must divide tp x cp x dp "
                                 f"= {dense} (parallel folding: the experts' ranks are the "
                                 "attention layers' ranks, megatron/core/parallel_state.py L874-884)")
        elif self.dp * self.cp % self.ep and self.ep > 1:
            raise ValueError(f"--ep {self.ep} must divide dp x cp = {self.dp * self.cp} (or "
                             "give --etp: Megatron-LM's parallel folding)")
        return self

