"""torchtitan (``pytorch/torchtitan``, PyTorch FSDP2): rules, launch path, exporter, profile.

Pinned at v0.2.2 = 73a0e6979dd10b6b1904098eb3c8f62c18ab87ce (2026-02-20), the last release with
the TOML job config the exporter writes; every file and line below refers to it.
"""

from __future__ import annotations

from optimus_calc.frameworks.base import (OFF_CPU, OFF_NVME, OFF_SUPERCHIP, SMARTNIC, Exporter,
                                          FrameworkPlugin, Rule)

COMMIT = "73a0e6979dd10b6b1904098eb3c8f62c18ab87ce"
_TT = "torchtitan"


def _row(name: str, what: str, source: str, when) -> Rule:
    return Rule(name, f"{_TT}: {what} ({source})", source, when)


RULES: tuple[Rule, ...] = (
    SMARTNIC,
    _row("TT_FP16", "mixed precision is bfloat16 or float32, no fp16",
         "torchtitan/config/job_config.py L282",
         lambda x: x.everywhere() if x.precision == "fp16" else None),
    Rule("TT_OFFLOAD_TARGET", f"{_TT}: offload only to CPU (training.enable_cpu_offload, "
         "torchtitan/config/job_config.py L270); no NVMe, SmartNIC or SuperOffload",
         "torchtitan/config/job_config.py L270",
         lambda x: (x.off == OFF_NVME) | (x.off == OFF_SUPERCHIP)),
    _row("TT_OFFLOAD_FSDP", "CPU offload is FSDP2's CPUOffloadPolicy, which moves parameters, "
         "gradients and optimizer states together: it needs ZeRO-3 with parameter offload",
         "models/llama3/infra/parallelize.py L315-317",
         lambda x: (x.off == OFF_CPU) & ~((x.zero == 3) & x.oparams)),
    _row("TT_ZERO1", "FSDP2 shards parameters, gradients and optimizer together (ZeRO-3, or "
         "ZeRO-2 with fsdp_reshard_after_forward = never); there is no optimizer-only ZeRO-1",
         "torchtitan/config/job_config.py L336-349", lambda x: (x.zero == 1) & (x.dp > 1)),
    _row("TT_DDP_ND", "plain DDP (ZeRO-0) only without TP/PP/CP",
         "torchtitan/models/llama3/infra/parallelize.py L148-151",
         lambda x: (x.zero == 0) & (x.dp > 1) & ((x.tp > 1) | (x.pp > 1) | (x.cp > 1))),
    _row("TT_HEADS_TP", "TP shards wq/wk/wv column-wise; heads and KV heads must divide by TP",
         "models/llama3/model/model.py L206-207, L253", lambda x: x.heads_bad),
    Rule("TT_EXPERTS_EP", f"{_TT}: experts must be a multiple of the expert-parallel size "
         "(local experts = experts // ep, torchtitan/distributed/expert_parallel.py L107-108)",
         "torchtitan/distributed/expert_parallel.py L107-108", lambda x: x.experts_bad),
)

LAUNCH = ("NGPU=<GPUs per node> CONFIG_FILE=job.toml ./run_train.sh on each node (torchrun; "
          "torchtitan/train.py reads the TOML through ConfigManager)")

PLUGIN = FrameworkPlugin(
    key="torchtitan", label="torchtitan (FSDP2)", repo="pytorch/torchtitan", commit=COMMIT,
    rules=RULES, launch=LAUNCH,
    exporter=Exporter("torchtitan", "a torchtitan TOML job config",
                      "optimus_calc.frameworks.torchtitan_export", "torchtitan_toml"))
