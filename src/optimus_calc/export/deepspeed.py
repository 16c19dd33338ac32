"""DeepSpeed JSON config for a layout (plain DeepSpeed, or Megatron-DeepSpeed when TP and PP
both exceed 1: TP and PP then come from Megatron-DeepSpeed's own arguments).

Keys are DeepSpeed's at commit edaa7221267243c7be7fb49c5d5f5c4fb97b4641:
runtime/constants.py (batch keys), runtime/precision_config.py (bf16/fp16),
runtime/zero/config.py (zero_optimization and its stage3_* aliases),
runtime/zero/offload_config.py (offload_optimizer / offload_param, super_offload, ratio),
runtime/swap_tensor/constants.py (aio), runtime/tensor_parallel/config.py (AutoTP). Tests
check every emitted key and its type against the extracted schema.
"""

from __future__ import annotations

import json
from math import ceil
from typing import assert_never

from optimus_calc.export import grad_accumulation, require
from optimus_calc.frameworks import Framework
from optimus_calc.specs.training import Assumptions, Offload, Optimizer, Precision, Recompute

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


def deepspeed_config_dict(layout, training, model, asm: Assumptions | None = None) -> dict:
    """The config as a dict. ZeRO-3 knobs follow the memory model: it reserves 4 bytes x the
    largest layer / TP for gathered parameters (equations/memory.py ``memory.overhead_bytes``),
    that is 4 / weight_bytes layers' worth of elements live at once, and prefetches one layer;
    reduce_bucket_size is the modelled bucket (``zero_bucket_params``)."""
    fw = require(layout, training, model, Framework.DEEPSPEED, Framework.MEGATRON_DEEPSPEED)
    asm = asm or Assumptions()
    lay, tr = layout, training
    gas = grad_accumulation(lay, tr)
    cfg: dict = {"train_batch_size": tr.global_batch,
                 "train_micro_batch_size_per_gpu": tr.micro_batch,
                 "gradient_accumulation_steps": gas}
    prec = tr.precision
    match prec:
        case Precision.BF16:
            cfg["bf16"] = {"enabled": True}
        case Precision.FP16:
            cfg["fp16"] = {"enabled": True, "loss_scale": 0}  # 0 = dynamic loss scaling
        case Precision.FP32:
            pass  # DeepSpeed trains in fp32 unless bf16/fp16 is enabled
        case _:
            assert_never(prec)
    cfg["optimizer"] = {"type": _OPTIMIZER_TYPE[tr.optimizer]}
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
    cfg["zero_optimization"] = zero
    if nvme:
        cfg["aio"] = dict(AIO_DEFAULTS)
    if fw is Framework.DEEPSPEED and lay.tp > 1:
        cfg["tensor_parallel"] = {"autotp_size": lay.tp}
    if tr.recompute is not Recompute.NONE and fw is Framework.MEGATRON_DEEPSPEED:
        # Megatron-DeepSpeed's checkpointing reads this block; activations partitioned over TP
        cfg["activation_checkpointing"] = {"partition_activations": lay.tp > 1,
                                           "contiguous_memory_optimization": False}
    return cfg


def deepspeed_config(layout, training, model, asm: Assumptions | None = None) -> str:
    return json.dumps(deepspeed_config_dict(layout, training, model, asm), indent=2) + "\n"
