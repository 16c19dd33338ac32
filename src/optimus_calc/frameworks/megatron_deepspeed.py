"""Megatron-DeepSpeed (``deepspeedai/Megatron-DeepSpeed``): Megatron's model and tensor /
pipeline parallelism (its own ``mpu``) on DeepSpeed's engine, so DeepSpeed's ZeRO and offload
rows apply as well.

Pinned at commit 4efb479d5317ce9b86096b9d8e3e8030b0b5263b (2025-07-16). Its launch path is
``pretrain_gpt.py --deepspeed --deepspeed_config ds_config.json`` with the Megatron arguments
for TP and PP; the DeepSpeed JSON is written by the DeepSpeed exporter (``--export deepspeed``),
which says so in the file when a layout only runs here.
"""

from __future__ import annotations

from optimus_calc.frameworks.base import FrameworkPlugin, Rule
from optimus_calc.frameworks.deepspeed import ENGINE_PROFILE, ENGINE_RULES

COMMIT = "4efb479d5317ce9b86096b9d8e3e8030b0b5263b"

RULES: tuple[Rule, ...] = ENGINE_RULES + (
    Rule("MD_KV_TP", "Megatron-DeepSpeed: attention and KV heads must divide by TP "
         "(megatron/model/transformer.py L562-567)", "megatron/model/transformer.py L562-567",
         lambda x: x.heads_bad),
)

LAUNCH = ("deepspeed --num_nodes N --num_gpus G pretrain_gpt.py --tensor-model-parallel-size T "
          "--pipeline-model-parallel-size P ... --deepspeed --deepspeed_config ds_config.json")

PLUGIN = FrameworkPlugin(
    key="megatron-deepspeed", label="Megatron-DeepSpeed", repo="deepspeedai/Megatron-DeepSpeed",
    commit=COMMIT, rules=RULES, launch=LAUNCH, exported_by="deepspeed",
    profile=ENGINE_PROFILE)  # the engine's gradient dtype, offload and ZeRO-3 fetches
