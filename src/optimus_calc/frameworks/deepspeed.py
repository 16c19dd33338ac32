"""DeepSpeed (``deepspeedai/DeepSpeed``): rules, launch path, exporter, physics profile.

Pinned at commit edaa7221267243c7be7fb49c5d5f5c4fb97b4641 (2026-08-22); every file and line
below refers to it. The ZeRO and offload rows are shared with Megatron-DeepSpeed, which runs on
DeepSpeed's engine.

Launch path: plain DeepSpeed with tensor parallelism is config-only AutoTP
(``tensor_parallel.autotp_size``, docs/_tutorials/autotp-training.md), built by
``deepspeed.initialize`` without an ``mpu``. Its tutorial documents ZeRO stages 0-2 (L20) even
though runtime/engine.py L664-667 comments that ZeRO-3 works: the planner keeps to the
documented path and leaves TP + ZeRO-3 to Megatron-DeepSpeed.
"""

from __future__ import annotations

from optimus_calc.frameworks.base import (OFF_CPU, OFF_NVME, OFF_SUPERCHIP, SMARTNIC, Exporter,
                                          FrameworkPlugin, PhysicsProfile, Rule, Setting,
                                          no_iteration_graph, not_dividing, runs_dispatchers,
                                          runs_offloads, runs_precisions)
from optimus_calc.specs.training import Offload, Precision

COMMIT = "edaa7221267243c7be7fb49c5d5f5c4fb97b4641"
_DS = "DeepSpeed"


def _row(name: str, what: str, source: str, when) -> Rule:
    return Rule(name, f"{_DS}: {what} ({source})", source, when)


# What the DeepSpeed engine runs (allowlists: a target or precision not named here is
# refused): offload_optimizer / offload_param devices none, cpu, nvme (OffloadDeviceEnum,
# runtime/zero/offload_config.py L14-18) and SuperOffload (super_offload, L102).
OFFLOAD_TARGETS: tuple[Offload, ...] = (Offload.NONE, Offload.CPU, Offload.NVME,
                                        Offload.SUPERCHIP)
# bf16 and fp16 sections (runtime/precision_config.py L30, L92), fp32 without either; no FP8.
PRECISIONS: tuple[str, ...] = ("bf16", "fp16", "fp32")


def fp32_grads(precision: str, grad_bytes: int) -> bool:
    """--grad-bytes 4 under a bf16/fp16 model: fp32 gradients, which DeepSpeed keeps only when
    asked (data_types.grad_accum_dtype, runtime/config.py L896; engine.py L1485-1496)."""
    return grad_bytes == 4 and precision in ("bf16", "fp16")


def _fp32_grads(when):
    """A rule's test that applies only to fp32 gradients under a bf16/fp16 model."""
    return lambda x: when(x) if fp32_grads(x.precision, x.grad_bytes) else None


def _other_grad_bytes(x):
    """Typed --grad-bytes neither the model's bytes nor fp32 under a bf16/fp16 model."""
    gb = x.grad_bytes
    if not gb or gb == Precision(x.precision).weight_bytes or fp32_grads(x.precision, gb):
        return None
    return x.everywhere()


# --grad-bytes 4 under a bf16/fp16 model: where DeepSpeed keeps fp32 gradients. It does at
# ZeRO-1 with bf16 and no offload (the BF16 optimizer: fp32 gradient buffers, engine.py
# L1994-1996, bf16_optimizer.py L176) and at ZeRO-3 without offload (fp32 gradient
# partitions, zero/stage3.py L742-744, L1825-1826); these rows refuse the rest.
GRAD_RULES: tuple[Rule, ...] = (
    Rule("DS_GRAD_BYTES", f"{_DS}: --grad-bytes is the model's bytes or, under a bf16/fp16 "
         "model, 4 (fp32 gradients, data_types.grad_accum_dtype; runtime/engine.py "
         "L1485-1496): no other gradient width is written for it",
         "runtime/engine.py L1485-1496", _other_grad_bytes, on_run=True),
    _row("DS_GRAD_FP32_ZERO0", "--grad-bytes 4 (fp32 gradients) under a bf16/fp16 model needs "
         "ZeRO: without it the engine raises NotImplementedError('unsupported mix of "
         "model_dtype and grad_accum_dtype')", "runtime/engine.py L2011-2021",
         _fp32_grads(lambda x: x.zero == 0)),
    _row("DS_GRAD_FP32_ZERO2", "--grad-bytes 4 (fp32 gradients): ZeRO-2 keeps its gradient "
         "partition in the model dtype whatever data_types.grad_accum_dtype says",
         "runtime/zero/stage_1_and_2.py L361-364, L1678-1680",
         _fp32_grads(lambda x: x.zero == 2)),
    _row("DS_GRAD_FP32_OFFLOAD", "--grad-bytes 4 (fp32 gradients) with optimizer offload: the "
         "GPU gradients stay in the model dtype (ZeRO-1 then runs the ZeRO optimizer, which "
         "reduces its fp32 accumulation cast back; ZeRO-3 accumulates fp32 in its host buffer)",
         "runtime/engine.py L1994-1996, runtime/zero/stage_1_and_2.py L1136-1140; "
         "runtime/zero/stage3.py L328, L742-744", _fp32_grads(lambda x: x.offloading)),
    _row("DS_GRAD_FP32_FP16_ZERO1", "--grad-bytes 4 (fp32 gradients) under fp16 at ZeRO-1: "
         "the BF16 optimizer (fp32 gradient buffers) is chosen for bf16 only; the ZeRO "
         "optimizer reduces its fp32 accumulation cast back to fp16",
         "runtime/engine.py L1994-1996; runtime/zero/stage_1_and_2.py L1136-1140",
         _fp32_grads(lambda x: (x.zero == 1) if x.precision == "fp16" else None)),
)

# Rows every DeepSpeed-engine framework obeys (plain DeepSpeed and Megatron-DeepSpeed).
ENGINE_RULES: tuple[Rule, ...] = (
    SMARTNIC,
    runs_offloads("DS_OFFLOAD_TARGET", _DS, OFFLOAD_TARGETS,
                  "runtime/zero/offload_config.py L14-18, L102",
                  "zero_optimization.offload_optimizer.device, super_offload"),
    _row("DS_ZERO23_PP", "ZeRO-2/3 are incompatible with pipeline parallelism",
         "deepspeed/runtime/pipe/engine.py L76-77", lambda x: (x.zero >= 2) & (x.pp > 1)),
    # bf16 in the pipeline engine without ZeRO (bf16 gradients: fp32 ones are DS_GRAD_FP32_ZERO0)
    # is no ZeRO-0: the engine picks its BF16_Optimizer
    _row("DS_PIPE_BF16_ZERO0", "bf16 with pipeline parallelism and no ZeRO runs the BF16 "
         "optimizer, which partitions the fp32 weights and optimizer state over DP as ZeRO-1 "
         "does, keeps a gradient buffer beside .grad and all-gathers in step(): not ZeRO-0's "
         "memory or time (--zero 1 is the nearest layout)", "runtime/engine.py L2014-2018; "
         "runtime/bf16_optimizer.py L161-176",
         lambda x: (x.zero == 0) & (x.pp > 1)
         if x.precision == "bf16" and not fp32_grads(x.precision, x.grad_bytes) else None),
    _row("DS_OFFLOAD_ZERO0", "offload needs ZeRO >= 1; at stage 0 no ZeRO optimizer is built "
         "and offload_optimizer is ignored", "runtime/config.py L817, runtime/engine.py L2057",
         lambda x: (x.zero == 0) & (x.offloading | x.oparams)),
    _row("DS_NVME_ZERO3", "NVMe optimizer offload needs ZeRO-3; stages 1-2 treat any offload "
         "device as CPU", "runtime/zero/stage_1_and_2.py L186-187; NVMe swapping only in "
         "runtime/zero/stage3.py L777", lambda x: (x.off == OFF_NVME) & (x.zero < 3)),
    _row("DS_PARAMS_ZERO3", "offload_param is valid only with ZeRO-3",
         "runtime/zero/config.py L157-162", lambda x: x.oparams & (x.zero < 3)),
    _row("DS_SUPERCHIP_ZERO3", "SuperOffload (offload_optimizer.super_offload) is valid only "
         "with ZeRO-3", "runtime/zero/offload_config.py L102-103, runtime/engine.py L2478",
         lambda x: (x.off == OFF_SUPERCHIP) & (x.zero < 3)),
    Rule("DS_CP", f"{_DS}: no ring context parallelism; its sequence parallelism (Ulysses, "
         "sequence_parallel_size) is an all-to-all scheme this layout does not model", "",
         lambda x: x.cp > 1),
    _row("DS_INTERLEAVE", "the pipeline engine has only the 1F1B TrainSchedule, no interleaved "
         "stages", "runtime/pipe/schedule.py L189", lambda x: x.v > 1),
    _row("DS_EXPERT_TP", "the experts' tensor parallelism is the TP size (expert_tensor_"
         "parallel_world_size = tensor_parallel_size_): no separate --etp, no parallel folding",
         "deepspeed/utils/groups.py L559-560", lambda x: x.etp_not_tp),
    _row("DS_EXPERTS_EP", "experts must be a multiple of the expert-parallel size",
         "deepspeed/moe/layer.py L59", lambda x: x.experts_bad),
    runs_dispatchers("DS_DISPATCHER", f"{_DS}: the MoE layer dispatches with NCCL's "
                     "all-to-all (_AllToAll, deepspeed/moe/sharded_moe.py L97-104), no DeepEP "
                     "or HybridEP: --moe-dispatcher alltoall", "deepspeed/moe/sharded_moe.py "
                     "L97-104", ("alltoall",)),
    no_iteration_graph("DS_CUDA_GRAPH", f"{_DS}: no switch captures the training iteration as "
                       "one CUDA graph (graph_harvesting captures short kernel sequences, the "
                       "BF16 optimizer's norms: runtime/constants.py L264-273, "
                       "bf16_optimizer.py L311-327; hybrid_engine.enable_cuda_graph the RLHF "
                       "generation, runtime/config.py L522): --cuda-graph-impl full_iteration "
                       "is Megatron-LM's", "runtime/constants.py L264-273"),
    runs_precisions("DS_FP8", f"{_DS}: the config has no FP8 or NVFP4 training switch: its "
                    "precision sections are bf16 and fp16 only (runtime/precision_config.py L30, L92; no "
                    "fp8 key in runtime/config.py)",
                    "runtime/precision_config.py L30, L92; no fp8 key in runtime/config.py",
                    PRECISIONS),
    *GRAD_RULES,
)

RULES: tuple[Rule, ...] = ENGINE_RULES + (
    Rule("DS_TP_PP", f"{_DS}: tensor parallelism (AutoTP, runtime/engine.py L332) does not "
         "compose with its pipeline engine; TP with PP needs Megatron-DeepSpeed",
         "runtime/engine.py L332", lambda x: (x.tp > 1) & (x.pp > 1)),
    _row("DS_TP_HEADS", "AutoTP shards attention by KV heads; heads and KV heads must divide "
         "evenly by TP", "module_inject/tp_shard.py L80-82", lambda x: (x.tp > 1) & x.heads_bad),
    # Expert parallelism on this path is AutoEP (the config's expert_parallel block, DeepSpeed
    # 0.19.8 runtime/engine.py L816-877, the PyPI release make test-frameworks runs): with
    # AutoTP it folds EP over the TP ranks (folding_spec, engine.py L870-876), autoep_size
    # = EP x TP, so each GPU holds experts / (EP x TP) whole experts, the share the plan
    # evaluates (experts sharded over EP x TP, evaluate/shapes.py)
    _row("DS_AUTOEP_TP_OFFLOAD", "AutoEP folded over AutoTP (expert parallelism with TP > 1) "
         "refuses ZeRO optimizer and parameter offload",
         "module_inject/auto_ep_folding.py L248-250 @ 0.19.8",
         lambda x: (x.tp > 1) & (x.ep > 1) & (x.offloading | x.oparams)),
    _row("DS_AUTOEP_TP_EXPERTS", "AutoEP folded over AutoTP spreads the experts over EP x TP "
         "ranks (autoep_size); experts must be a multiple of EP x TP",
         "module_inject/auto_ep_config.py L369-383 @ 0.19.8",
         lambda x: ((x.tp > 1) & (x.ep > 1) & not_dividing(x.experts, x.ep * x.tp))
         if x.experts else None),
    _row("DS_AUTOTP_ZERO3", "AutoTP training (config-only tensor_parallel.autotp_size) is "
         "documented with ZeRO stages 0-2; TP with ZeRO-3 runs on Megatron-DeepSpeed",
         "docs/_tutorials/autotp-training.md L20", lambda x: (x.tp > 1) & (x.zero == 3)),
    # AutoTP's row-parallel layers (LinearAllreduce) all-reduce their full-sequence output in
    # the forward (RowParallel), its column-parallel ones all-reduce the input gradient in the
    # backward (ColumnParallel): every TP rank holds the whole sequence between them, and the
    # training config (TPTrainingConfig) has no sequence-parallel switch. Last, so the other
    # rules keep their counts and only this one reads the SP axis
    _row("DS_AUTOTP_SP", "AutoTP has no sequence parallelism: its row-parallel layers "
         "all-reduce the full sequence (LinearAllreduce, RowParallel) and the training config "
         "has no switch to shard it: TP > 1 runs only with --no-sp (Megatron-DeepSpeed has "
         "Megatron's sequence parallelism)",
         "module_inject/layers.py L159-188, L220-247, L752-776; "
         "runtime/tensor_parallel/config.py L38-58", lambda x: (x.tp > 1) & x.sp),
)

# The DeepSpeed engine's physics (shared with Megatron-DeepSpeed, which runs on the engine).
ENGINE_PROFILE = PhysicsProfile((
    # the MoE gate runs on every TP rank's replicated tokens (AutoEP; the engine's MOELayer
    # gates first and drops the TP duplicates after)
    Setting("moe_router_tp_replicated", 1, "DeepSpeed @ edaa722 deepspeed/module_inject/"
            "auto_ep_layer.py L588-592; deepspeed/moe/sharded_moe.py L679-682"),
    # ... and its experts read the received rows in place: a reshape to (EP, local experts)
    # and one chunk view per expert, no sort by local expert
    Setting("moe_sort_by_local_expert", 0, "DeepSpeed @ edaa722 deepspeed/moe/sharded_moe.py "
            "L735-736; deepspeed/moe/experts.py L28-33"),
    # gradients accumulate in the model dtype unless data_types.grad_accum_dtype is set, and
    # reduce in bf16/fp16 unless communication_data_type is set: 2 bytes per gradient
    Setting("grad_bytes", 2, "DeepSpeed @ edaa722 deepspeed/runtime/engine.py L1404-1417, "
            "L1485-1496",
            ("bf16", "fp16")),
    # bf16 with fp32 gradient accumulation (--grad-bytes 4) at ZeRO-1 runs the BF16_Optimizer,
    # which all-reduces the fp32 gradients (buffered_allreduce_fallback) where ZeRO-1 reduce-
    # scatters, in _backward_epilogue after the whole backward (no hook overlaps it); the rules
    # refuse the other --grad-bytes 4 layouts but ZeRO-3's
    Setting("zero1_grad_all_reduce", 1, "DeepSpeed @ edaa722 deepspeed/runtime/engine.py "
            "L1994-1996, L2970-2982, L3784-3794", ("bf16",), when=lambda tr: tr.grad_bytes == 4),
    # the pipeline engine reduces after the whole schedule (TrainSchedule: ReduceTiedGrads,
    # ReduceGrads, OptimizerStep at its last step) with overlap_comm turned off
    Setting("dp_reduce_after_pipeline", 1, "DeepSpeed @ edaa722 deepspeed/runtime/pipe/"
            "schedule.py L237-241; runtime/engine.py L2390-2393"),
    # the pipeline engine's PipelineModule cuts the layers with partition_method 'type:<layer
    # class>' (Megatron-DeepSpeed's GPTModelPipe: 'type:transformer'; the DeepSpeed export asks
    # a script's PipelineModule for it): the transformer layers evenly, the extra ones on the
    # first stages, the embedding and the loss weighing nothing (shapes.split_layers)
    Setting("pipeline_extra_layers_first", 1, "DeepSpeed @ edaa722 deepspeed/runtime/pipe/"
            "module.py L412-417, runtime/utils.py L627-665; Megatron-DeepSpeed @ 4efb479 "
            "megatron/model/gpt_model.py L459-463"),
    # at ZeRO-0 the engine all-reduces in _backward_epilogue, after the whole backward
    # (allreduce_gradients -> buffered_allreduce_fallback): no hook overlaps it
    Setting("dp_reduce_after_backward", 1, "DeepSpeed @ edaa722 deepspeed/runtime/engine.py "
            "L2891-2914, L2970-2982"),
    # ZeRO-1/2 (and the BF16 optimizer) all-gather the updated 16-bit partitions inside step():
    # a blocking all_gather_into_tensor on the current stream, issued before the next forward,
    # which therefore hides none of it (the neutral default, Megatron's --overlap-param-gather,
    # hides it behind that forward)
    Setting("dp_gather_overlap", 0, "DeepSpeed @ edaa722 deepspeed/runtime/zero/"
            "stage_1_and_2.py L2393-2401; runtime/bf16_optimizer.py L344, L454-464; "
            "runtime/utils.py L1005-1019"),
    # ZeRO-Offload casts each reduced partition on the GPU and copies it into the fp32 CPU .grad
    Setting("grads_stay_on_gpu", 0, "DeepSpeed @ edaa722 deepspeed/runtime/zero/"
            "stage_1_and_2.py L1590-1605; "
            "stage3.py L1405-1407"),
    # ZeRO-3 fetches every parameterised submodule on its own (module_granularity_threshold 0)
    Setting("zero3_modules_per_layer", 0, "DeepSpeed @ edaa722 deepspeed/runtime/zero/"
            "config.py L258-264; "
            "parameter_offload.py L293-302"),
    # ZeRO-1/2 + CPU offload: at the boundary, per parameter tensor of the partition, a host
    # sync in the overflow check (`if self._has_inf_or_nan(grad.data)`) and one in the norm
    # (`param_norm.item()`); each costs host_sync_us (assumed)
    Setting("offload_host_syncs_per_tensor", 2, "DeepSpeed @ edaa722 deepspeed/runtime/zero/"
            "stage_1_and_2.py L1498-1500, L1622"),
    # DeepSpeed-MoE drops tokens by default (TopKGate drop_tokens=True): the capacity comes
    # from the token count on the host (_capacity on CPU tensors) and the expert counts stay
    # on the GPU, so the all-to-alls keep fixed shapes and no MoE layer waits on the host
    # (Megatron-DeepSpeed builds the same layer: --disable-moe-token-dropping turns it off)
    Setting("moe_layer_host_s", 0, "DeepSpeed @ edaa722 deepspeed/moe/sharded_moe.py "
            "L162-171, L264, L554; Megatron-DeepSpeed @ 4efb479 megatron/arguments.py L910"),
    # the attention is the model's, not Transformer Engine's: Megatron-DeepSpeed's flash_attn
    # (--use-flash-attn-v2, which its export writes), so FlashAttention-2 where the GPU's
    # default fused kernel is cuDNN's (Hopper, Blackwell); a DeepSpeed script's model likewise
    # (PyTorch SDPA's flash backend, assumed)
    Setting("flash_attention_2_over_cudnn", 1, "Megatron-DeepSpeed @ 4efb479 megatron/"
            "arguments.py L927-935, megatron/model/transformer.py L396-410; DeepSpeed: the "
            "model's attention, FlashAttention-2 assumed"),
))

LAUNCH = ("deepspeed --num_nodes N --num_gpus G train.py --deepspeed_config ds_config.json "
          "(the script calls deepspeed.initialize(model=..., config=...) without an mpu; with "
          "TP > 1 that is AutoTP's config-only path)")

PLUGIN = FrameworkPlugin(
    key="deepspeed", label="DeepSpeed", repo="deepspeedai/DeepSpeed", commit=COMMIT,
    rules=RULES, launch=LAUNCH, profile=ENGINE_PROFILE,
    exporter=Exporter("deepspeed", "a DeepSpeed JSON config (plain DeepSpeed with AutoTP, or "
                      "Megatron-DeepSpeed when only it runs the layout)",
                      "optimus_calc.frameworks.deepspeed_export", "deepspeed_config"))

__all__ = ["PLUGIN", "RULES", "ENGINE_RULES", "ENGINE_PROFILE", "COMMIT", "OFF_CPU",
           "OFFLOAD_TARGETS", "PRECISIONS", "GRAD_RULES", "fp32_grads"]
