"""DeepSpeed JSON config for a layout, for one named launch path (written in the file's
``_launch`` block, which DeepSpeed ignores: it reads only the keys it knows):

- ``deepspeed``: plain DeepSpeed, ``deepspeed.initialize`` without an mpu. With TP > 1 this is
  config-only AutoTP (``tensor_parallel.autotp_size``): without an mpu DeepSpeed's batch
  arithmetic counts every GPU as data-parallel (runtime/config.py L720-724, checked at L937),
  while each TP group reads the same samples (runtime/engine.py L659-700 checks it), so
  ``train_batch_size`` = micro x accumulation x GPUs, which is TP times the distinct sequences.
- ``megatron-deepspeed``: when only Megatron-DeepSpeed runs the layout (TP with PP, or TP with
  ZeRO-3): its mpu makes DeepSpeed count the data-parallel ranks only.

Keys are DeepSpeed's at commit edaa7221267243c7be7fb49c5d5f5c4fb97b4641:
runtime/constants.py (batch keys), runtime/precision_config.py (bf16/fp16),
runtime/zero/config.py (zero_optimization and its stage3_* aliases),
runtime/zero/offload_config.py (offload_optimizer / offload_param, super_offload, ratio),
runtime/swap_tensor/constants.py (aio), runtime/tensor_parallel/config.py (AutoTP),
module_inject/auto_ep_config.py (AutoEP's expert_parallel, read by runtime/config.py). Tests
check every emitted key and its type against the extracted schema.
"""

from __future__ import annotations

import json
from math import ceil
from typing import assert_never

from optimus_calc.evaluate.shapes import split_layers
from optimus_calc.frameworks.deepspeed import fp32_grads
from optimus_calc.frameworks.exporting import grad_accumulation, node_split, require
from optimus_calc.frameworks.megatron_deepspeed_export import launch_args
from optimus_calc.frameworks import Framework
from optimus_calc.frameworks.registry import named_kernel
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Offload, Optimizer, Precision, Recompute

# DeepSpeed's NVMe offload needs a directory on the node's NVMe drives; this is the example
# path DeepSpeed's documentation uses, to be replaced by the user's mount point.
NVME_PATH_PLACEHOLDER = "/local_nvme"

# aio block: DeepSpeed's defaults (runtime/swap_tensor/constants.py L19-30).
AIO_DEFAULTS = {"block_size": 1048576, "queue_depth": 8, "intra_op_parallelism": 1,
                "single_submit": False, "overlap_events": True}

# stage3_param_persistence_threshold: DeepSpeed's default 1e5 elements
# (runtime/zero/config.py L221); parameters this small stay gathered (negligible memory).
PARAM_PERSISTENCE_THRESHOLD = 100_000

_OPTIMIZER_TYPE = {Optimizer.ADAM: "Adam", Optimizer.ADAMW: "AdamW", Optimizer.SGD: "SGD"}


_KERNELS = {"fa1": "FlashAttention-1", "fa2": "FlashAttention-2", "fa3": "FlashAttention-3",
            "cudnn": "cuDNN's fused attention"}


def _batch(layout, training, fw) -> tuple[dict, int, list[str]]:
    """The batch keys, the data-parallel world DeepSpeed counts, and notes."""
    gas = grad_accumulation(layout, training)
    autotp = fw is Framework.DEEPSPEED and layout.tp > 1
    world = layout.gpus if autotp else layout.dp
    notes = []
    if autotp:
        notes.append(f"AutoTP without an mpu: DeepSpeed counts all {layout.gpus} GPUs as "
                     f"data-parallel (runtime/config.py L720-724, L937), so train_batch_size "
                     f"is {training.micro_batch * gas * world}; the {layout.tp} ranks of each "
                     f"TP group must read the same samples (runtime/engine.py L659-700 checks "
                     f"it), which makes {training.global_batch} distinct sequences per step")
    return ({"train_batch_size": training.micro_batch * gas * world,
             "train_micro_batch_size_per_gpu": training.micro_batch,
             "gradient_accumulation_steps": gas}, world, notes)


def _precision_and_optimizer(cfg: dict, layout, training) -> None:
    prec = training.precision
    match prec:
        case Precision.BF16:
            cfg["bf16"] = {"enabled": True}
        case Precision.FP16:
            cfg["fp16"] = {"enabled": True, "loss_scale": 0}  # 0 = dynamic loss scaling
        case Precision.FP32:
            pass  # DeepSpeed trains in fp32 unless bf16/fp16 is enabled
        case Precision.FP8 | Precision.NVFP4:  # refused before this (frameworks/deepspeed.py)
            raise AssertionError("the DeepSpeed config has no FP8 or FP4 switch")
        case _:
            assert_never(prec)
    cfg["optimizer"] = {"type": _OPTIMIZER_TYPE[training.optimizer]}
    if training.optimizer is Optimizer.SGD and int(layout.zero) >= 1:
        # torch.optim.SGD is not in ZERO_SUPPORTED_OPTIMIZERS (runtime/zero/utils.py L45-46):
        # ZeRO asserts without this key (runtime/engine.py L1987-1990)
        cfg["zero_allow_untested_optimizer"] = True
        if layout.offload is not Offload.NONE:
            # an optimizer other than DeepSpeedCPUAdam/Lion with offload raises
            # ZeRORuntimeException unless this is false (runtime/engine.py L2040-2044)
            cfg["zero_force_ds_cpu_optimizer"] = False


def _gradients(cfg: dict, layout, training) -> list[str]:
    """fp32 gradients under a bf16/fp16 model (--grad-bytes 4; the DeepSpeed profile's default
    is the model's 2 bytes): data_types.grad_accum_dtype (runtime/config.py L896) and
    communication_data_type (runtime/config.py L209-223), the 4 bytes per gradient the plan
    holds and reduces (evaluate/work.py ``_data_parallel``). The DS_GRAD_* rules
    (frameworks/deepspeed.py) leave ZeRO-1 with bf16 and ZeRO-3, both without offload."""
    if not fp32_grads(training.precision.value, training.gradient_bytes):
        return []
    cfg["data_types"] = {"grad_accum_dtype": "fp32"}
    cfg["communication_data_type"] = "fp32"
    if int(layout.zero) == 3:
        return ["--grad-bytes 4: DeepSpeed runs its ZeRO-3 optimizer (runtime/engine.py "
                "L1997), whose gradient partitions data_types.grad_accum_dtype keeps in fp32 "
                "(runtime/zero/stage3.py L742-744); communication_data_type fp32 reduce-scatters "
                "them in fp32 (stage3.py L1798-1799, L1825-1826)"]
    return ["--grad-bytes 4: with bf16, ZeRO-1, no offload and data_types.grad_accum_dtype fp32 "
            "DeepSpeed picks its BF16_Optimizer (runtime/engine.py L1994-1996), which "
            "accumulates every gradient in fp32 buffers (runtime/bf16_optimizer.py L176) and "
            "all-reduces them (engine.py L3784-3790) in communication_data_type fp32 "
            "(engine.py L3663-3664): an all-reduce, as the plan times it (the DeepSpeed "
            "profile's zero1_grad_all_reduce)"]


def _zero(layout, training, model, asm: Assumptions) -> dict:
    """zero_optimization. ZeRO-3 knobs follow the memory model: it reserves 4 bytes x the
    largest layer / TP for gathered parameters (equations/memory.py ``memory.overhead_bytes``),
    that is 4 / weight_bytes layers' worth of elements live at once, and prefetches one layer;
    reduce_bucket_size is the modelled bucket (``zero_bucket_params``)."""
    lay, tr = layout, training
    zero: dict = {"stage": int(lay.zero)}
    if int(lay.zero) >= 1:
        zero["contiguous_gradients"] = True
        # the pipeline engine turns overlap off (runtime/engine.py L2390-2393)
        zero["overlap_comm"] = lay.pp == 1
        zero["reduce_bucket_size"] = int(asm.zero_bucket_params)
    if int(lay.zero) == 3:
        largest = model.largest_layer_params / lay.tp
        zero["stage3_max_live_parameters"] = int(ceil(4 * largest / tr.weight_bytes))
        zero["stage3_prefetch_bucket_size"] = int(ceil(largest))
        zero["stage3_param_persistence_threshold"] = PARAM_PERSISTENCE_THRESHOLD
    nvme = lay.offload is Offload.NVME
    if lay.offload in (Offload.CPU, Offload.NVME, Offload.SUPERCHIP):
        off: dict = {"device": "nvme" if nvme else "cpu", "pin_memory": True}
        if nvme:
            off["nvme_path"] = NVME_PATH_PLACEHOLDER
            off["buffer_count"] = int(asm.nvme_buffer_count)
        if lay.offload is Offload.SUPERCHIP:
            off["super_offload"] = True
            off["ratio"] = round(1.0 - lay.superchip_gpu_fraction, 6)
        zero["offload_optimizer"] = off
    if lay.offload_params:
        zero["offload_param"] = {"device": "nvme" if nvme else "cpu", "pin_memory": True}
        if nvme:
            zero["offload_param"]["nvme_path"] = NVME_PATH_PLACEHOLDER
            zero["offload_param"]["buffer_size"] = int(asm.nvme_buffer_params)
    return zero


# The Hugging Face model types AutoEP finds MoE layers in by itself: its presets
# (DeepSpeed 0.19.8 module_inject/auto_ep_presets/registry.py L20-29)
AUTOEP_PRESETS = ("mixtral", "qwen3_moe", "qwen3_5_moe", "deepseek_v2", "deepseek_v3",
                  "minimax_m3")


def autoep_size(layout) -> int:
    """AutoEP's autoep_size for a layout: EP, folded over the TP ranks when TP > 1 (each GPU
    then holds experts / (EP x TP) whole experts, the share the plan evaluates)."""
    return layout.ep * layout.tp


def autoep_note(layout, model) -> str:
    size = autoep_size(layout)
    fold = (f"folded over AutoTP's {layout.tp} ranks (runtime/engine.py L870-876), "
            if layout.tp > 1 else "")
    return (f"expert parallelism {layout.ep}: AutoEP (expert_parallel, DeepSpeed 0.19.8 "
            f"runtime/engine.py L816-877) replaces the model's MoE blocks, {fold}autoep_size "
            f"{size}: {model.experts // size} of {model.experts} experts per GPU; it finds them "
            f"in Hugging Face model types {', '.join(AUTOEP_PRESETS)} (module_inject/"
            "auto_ep_presets/registry.py L20-29), other models need moe_layer_pattern, "
            "router_pattern and expert_pattern in the block")


def _pipeline_note(layout, model, fw, extra_first: bool | None = None) -> str:
    """How the pipeline engine splits the layers (shapes.split_layers with extra_first, the
    DeepSpeed profile's pipeline_extra_layers_first), for a layout with PP > 1, and whether
    that is the split the plan evaluated (``extra_first``; None: the engine's own)."""
    split = split_layers(model.layers, layout.pp, extra_first=True)
    evaluated = split_layers(model.layers, layout.pp, extra_first is not False)
    how = ("the extra ones on the first stages" if len(set(split)) > 1 else "evenly")
    ds = fw is Framework.DEEPSPEED
    name = ("a PipelineModule with partition_method='type:<the class name of your transformer "
            "block>'" if ds else "GPTModelPipe's partition_method 'type:transformer' (megatron/"
            "model/gpt_model.py L459-463 @ 4efb479d; no flag changes it)")
    made = (f"{name} (deepspeed/runtime/pipe/module.py L412-417 @ edaa722) splits the "
            f"{model.layers} layers {split} over the {layout.pp} stages, {how}")
    if evaluated != split:
        return (f"pipeline split: the plan evaluated {evaluated} layers per stage (a physics "
                "profile with pipeline_extra_layers_first 0), which the pipeline engine does "
                f"not make: {made}; a plan with --framework deepspeed evaluates that split")
    return (f"pipeline split: {made}, as the plan assumed" + (
        "; pass it: the default 'parameters' weighs the embedding and the head by their "
        "parameters and splits otherwise" if ds else ""))


def _launch(layout, training, model, fw, gpus_per_node: int | None,
            extra_first: bool | None = None) -> dict:
    """The ``_launch`` block: which launcher, the command, what the model code must do."""
    lay = layout
    gpn, nodes = node_split(lay.gpus, gpus_per_node)
    notes = []
    if fw is Framework.DEEPSPEED:
        model_arg = (f"a deepspeed.pipe.PipelineModule(..., num_stages={lay.pp}, "
                     "partition_method='type:<block class>'), whose "
                     "topology deepspeed.initialize takes as the mpu (deepspeed/__init__.py "
                     "L243)" if lay.pp > 1 else "the model, without an mpu")
        cmd = (f"deepspeed --num_nodes {nodes} --num_gpus {gpn} <train.py> "
               f"--deepspeed_config ds_config.json  (train.py: deepspeed.initialize(model=..., "
               f"config=...) with {model_arg})")
        launcher = ("DeepSpeed (AutoTP, config only)" if lay.tp > 1 else
                    "DeepSpeed (pipeline engine)" if lay.pp > 1 else "DeepSpeed")
        if model.is_moe and lay.ep > 1 and lay.pp == 1:
            notes.append(autoep_note(lay, model))
        elif model.is_moe and lay.ep > 1:
            notes.append(f"expert parallelism {lay.ep}: DeepSpeed-MoE takes it in the model code, "
                         f"deepspeed.moe.layer.MoE(..., num_experts={model.experts}, "
                         f"ep_size={lay.ep}, k={model.top_k}) (deepspeed/moe/layer.py L42); "
                         "AutoEP (expert_parallel) is not used with the pipeline engine")
        elif model.is_moe:
            notes.append("MoE layers: build them with deepspeed.moe.layer.MoE (ep_size=1)")
        if named_kernel(training):
            k = named_kernel(training)
            notes.append(f"attention: the config selects no kernel, the model code does: "
                         f"{_KERNELS[k]}, as the plan assumed (--attention-kernel {k})")
    else:
        args, notes = launch_args(layout, training, model)
        cmd = (f"deepspeed --num_nodes {nodes} --num_gpus {gpn} pretrain_gpt.py {args} "
               "<data arguments> --deepspeed --deepspeed_config ds_config.json")
        launcher = "Megatron-DeepSpeed (pretrain_gpt.py, its mpu)"
        notes.append("Megatron-DeepSpeed @ 4efb479d flags (megatron/arguments.py): the model "
                     "(L599-687) and --zero-stage (L1487), --no-pipeline-parallel (L954)")
    if lay.pp > 1:
        notes.append(_pipeline_note(lay, model, fw, extra_first))
    return {"launcher": launcher, "command": cmd, "notes": notes}


def deepspeed_config_dict(layout, training, model, asm: Assumptions | None = None,
                          gpus_per_node: int | None = None,
                          extra_first: bool | None = None) -> dict:
    """The config as a dict, for plain DeepSpeed when it runs the layout, else for
    Megatron-DeepSpeed (the ``_launch`` block says which)."""
    fw = require(layout, training, model, Framework.DEEPSPEED, Framework.MEGATRON_DEEPSPEED)
    asm = asm or Assumptions()
    cfg, _, batch_notes = _batch(layout, training, fw)
    _precision_and_optimizer(cfg, layout, training)
    grad_notes = _gradients(cfg, layout, training)
    cfg["zero_optimization"] = _zero(layout, training, model, asm)
    if layout.offload is Offload.NVME:
        cfg["aio"] = dict(AIO_DEFAULTS)
    if fw is Framework.DEEPSPEED and layout.tp > 1:
        cfg["tensor_parallel"] = {"autotp_size": layout.tp}
    if fw is Framework.DEEPSPEED and model.is_moe and layout.ep > 1 and layout.pp == 1:
        cfg["expert_parallel"] = {"enabled": True, "autoep_size": autoep_size(layout)}
    if fw is Framework.MEGATRON_DEEPSPEED and model.is_moe and layout.pp > 1 and layout.tp > 1:
        # the pipeline engine partitions only the first tensor a stage sends (pipe/engine.py
        # L755-760 @ edaa722) and defaults both switches on (runtime/config.py L435-436); MoE
        # stages also send the MoE loss, which requires grad (Megatron-DeepSpeed gpt_model.py
        # L376-384 @ 4efb479d)
        cfg["pipeline"] = {"pipe_partitioned": False, "grad_partitioned": False}
    if training.recompute is not Recompute.NONE and fw is Framework.MEGATRON_DEEPSPEED:
        # Megatron-DeepSpeed's checkpointing reads this block; activations partitioned over TP
        cfg["activation_checkpointing"] = {"partition_activations": layout.tp > 1,
                                           "contiguous_memory_optimization": False}
    launch = _launch(layout, training, model, fw, gpus_per_node, extra_first)
    launch["notes"] = batch_notes + grad_notes + launch["notes"]
    return {"_launch": launch, **cfg}


def deepspeed_config(layout, training, model, gpus_per_node: int | None = None,
                     asm: Assumptions | None = None, extra_first: bool | None = None) -> str:
    return json.dumps(deepspeed_config_dict(layout, training, model, asm, gpus_per_node,
                                            extra_first), indent=2) + "\n"
