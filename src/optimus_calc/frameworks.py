"""Which training framework can run a layout: DeepSpeed, Megatron-LM, Megatron-DeepSpeed and
torchtitan (PyTorch FSDP2), with every rule read from the framework's own source.

Pure and vectorised: :func:`framework_support` takes numpy arrays of layout fields (millions of
layouts at once) and returns, per framework, a boolean "can run" array and the code of the first
rule that rejects each layout (``Reason.OK`` = 0 where it runs). Only numpy boolean operations.

Sources, pinned (file and line below refer to these commits):

- DeepSpeed ``deepspeedai/DeepSpeed`` @ edaa7221267243c7be7fb49c5d5f5c4fb97b4641 (2026-08-22)
- Megatron-LM ``NVIDIA/Megatron-LM`` @ d98e8a64ddf34856e74b24714e3bedb2f5a39553 (2026-08-22)
- Megatron-DeepSpeed ``deepspeedai/Megatron-DeepSpeed`` @ 4efb479d5317ce9b86096b9d8e3e8030b0b5263b
  (2025-07-16); it runs on DeepSpeed, so DeepSpeed's ZeRO and offload rules apply as well
- torchtitan ``pytorch/torchtitan`` @ v0.2.2 = 73a0e6979dd10b6b1904098eb3c8f62c18ab87ce
  (2026-02-20, the last release with the TOML job config the exporter writes)

Offload codes are the index into ``specs.training.OFFLOAD_CODES``, the order of
``specs.training.Offload``: 0 none, 1 cpu, 2 nvme, 3 smartnic, 4 superchip. SmartNIC offload
(OptimusNIC) is a research prototype that no framework runs: it stays a what-if.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, IntEnum

import numpy as np

COMMITS = {
    "deepspeed": "edaa7221267243c7be7fb49c5d5f5c4fb97b4641",
    "megatron": "d98e8a64ddf34856e74b24714e3bedb2f5a39553",
    "megatron-deepspeed": "4efb479d5317ce9b86096b9d8e3e8030b0b5263b",
    "torchtitan": "73a0e6979dd10b6b1904098eb3c8f62c18ab87ce",
}

OFF_NONE, OFF_CPU, OFF_NVME, OFF_SMARTNIC, OFF_SUPERCHIP = 0, 1, 2, 3, 4


class Framework(str, Enum):
    DEEPSPEED = "deepspeed"
    MEGATRON = "megatron"
    MEGATRON_DEEPSPEED = "megatron-deepspeed"
    TORCHTITAN = "torchtitan"

    @property
    def label(self) -> str:
        return {"deepspeed": "DeepSpeed", "megatron": "Megatron-LM",
                "megatron-deepspeed": "Megatron-DeepSpeed",
                "torchtitan": "torchtitan (FSDP2)"}[self.value]


class Reason(IntEnum):
    """Why a framework cannot run a layout. ``.text`` cites the framework source."""

    OK = 0
    SMARTNIC = 1
    # DeepSpeed (also applies to Megatron-DeepSpeed)
    DS_ZERO23_PP = 10
    DS_OFFLOAD_ZERO0 = 11
    DS_NVME_ZERO3 = 12
    DS_PARAMS_ZERO3 = 13
    DS_SUPERCHIP_ZERO3 = 14
    DS_TP_PP = 15
    DS_TP_HEADS = 16
    DS_CP = 17
    DS_INTERLEAVE = 18
    DS_EXPERTS_EP = 19
    # Megatron-LM
    MG_HEADS_TP = 30
    MG_GROUPS_TP = 31
    MG_EXPERTS_EP = 32
    MG_FSDP_PP = 33
    MG_OFFLOAD_ZERO0 = 34
    MG_OFFLOAD_TARGET = 35
    MG_OFFLOAD_PARAMS = 36
    MG_INTERLEAVE_PP = 37
    MG_INTERLEAVE_LAYERS = 38
    MG_INTERLEAVE_MICRO = 39
    # Megatron-DeepSpeed
    MD_KV_TP = 50
    # torchtitan
    TT_ZERO1 = 70
    TT_DDP_ND = 71
    TT_OFFLOAD_TARGET = 72
    TT_OFFLOAD_FSDP = 73
    TT_HEADS_TP = 74
    TT_EXPERTS_EP = 75
    TT_FP16 = 76

    @property
    def text(self) -> str:
        return REASON_TEXT[self]


_DS = "DeepSpeed"
REASON_TEXT: dict[Reason, str] = {
    Reason.OK: "runs",
    Reason.SMARTNIC: "SmartNIC (OptimusNIC) offload is a research prototype that no framework "
                     "runs; it is a what-if",
    Reason.DS_ZERO23_PP: f"{_DS}: ZeRO-2/3 are incompatible with pipeline parallelism "
                         "(deepspeed/runtime/pipe/engine.py L76-77)",
    Reason.DS_OFFLOAD_ZERO0: f"{_DS}: offload needs ZeRO >= 1; at stage 0 no ZeRO optimizer is "
                             "built and offload_optimizer is ignored (runtime/config.py L817, "
                             "runtime/engine.py L2057)",
    Reason.DS_NVME_ZERO3: f"{_DS}: NVMe optimizer offload needs ZeRO-3; stages 1-2 treat any "
                          "offload device as CPU (runtime/zero/stage_1_and_2.py L186-187; NVMe "
                          "swapping only in runtime/zero/stage3.py L777)",
    Reason.DS_PARAMS_ZERO3: f"{_DS}: offload_param is valid only with ZeRO-3 "
                            "(runtime/zero/config.py L157-162)",
    Reason.DS_SUPERCHIP_ZERO3: f"{_DS}: SuperOffload (offload_optimizer.super_offload) is valid "
                               "only with ZeRO-3 (runtime/zero/offload_config.py L102-103, "
                               "runtime/engine.py L2478)",
    Reason.DS_TP_PP: f"{_DS}: tensor parallelism (AutoTP, runtime/engine.py L332) does not "
                     "compose with its pipeline engine; TP with PP needs Megatron-DeepSpeed",
    Reason.DS_TP_HEADS: f"{_DS}: AutoTP shards attention by KV heads; heads and KV heads must "
                        "divide evenly by TP (module_inject/tp_shard.py L80-82)",
    Reason.DS_CP: f"{_DS}: no ring context parallelism; its sequence parallelism (Ulysses, "
                  "sequence_parallel_size) is an all-to-all scheme this layout does not model",
    Reason.DS_INTERLEAVE: f"{_DS}: the pipeline engine has only the 1F1B TrainSchedule, no "
                          "interleaved stages (runtime/pipe/schedule.py L189)",
    Reason.DS_EXPERTS_EP: f"{_DS}: experts must be a multiple of the expert-parallel size "
                          "(deepspeed/moe/layer.py L59)",
    Reason.MG_HEADS_TP: "Megatron-LM: num_attention_heads must be a multiple of TP "
                        "(megatron/core/transformer/transformer_config.py L1446)",
    Reason.MG_GROUPS_TP: "Megatron-LM: num_query_groups must be a multiple or a divisor of TP "
                         "(megatron/core/transformer/transformer_config.py L1460-1463)",
    Reason.MG_EXPERTS_EP: "Megatron-LM: experts must be a multiple of the expert-parallel size "
                          "(megatron/training/arguments.py L1655-1658)",
    Reason.MG_FSDP_PP: "Megatron-LM: ZeRO-2/3 is Megatron-FSDP, documented to compose with TP, "
                       "CP and EP but not PP (docs/user-guide/features/megatron_fsdp.md L318; "
                       "Megatron-FSDP v2 rejects PP, core/distributed/fsdp/mcore_fsdp_adapter.py "
                       "L627-638)",
    Reason.MG_OFFLOAD_ZERO0: "Megatron-LM: --optimizer-cpu-offload needs "
                             "--use-precision-aware-optimizer (training/arguments.py L1884-1887), "
                             "which needs the distributed optimizer, ZeRO >= 1 "
                             "(core/optimizer/__init__.py L1057-1060)",
    Reason.MG_OFFLOAD_TARGET: "Megatron-LM: optimizer offload goes to CPU only "
                              "(--optimizer-cpu-offload, training/arguments.py L2918); no NVMe, "
                              "SmartNIC or SuperOffload",
    Reason.MG_OFFLOAD_PARAMS: "Megatron-LM: no parameter offload (only the optimizer, "
                              "--optimizer-cpu-offload)",
    Reason.MG_INTERLEAVE_PP: "Megatron-LM: the interleaved schedule needs PP > 1 "
                             "(training/arguments.py L1000-1003)",
    Reason.MG_INTERLEAVE_LAYERS: "Megatron-LM: interleaving needs layers divisible by PP and by "
                                 "the layers per virtual stage (training/arguments.py L966-975)",
    Reason.MG_INTERLEAVE_MICRO: "Megatron-LM: the interleaved schedule needs at least PP "
                                "micro-batches (core/pipeline_parallel/schedules.py L1160-1168)",
    Reason.MD_KV_TP: "Megatron-DeepSpeed: attention and KV heads must divide by TP "
                     "(megatron/model/transformer.py L562-567)",
    Reason.TT_ZERO1: "torchtitan: FSDP2 shards parameters, gradients and optimizer together "
                     "(ZeRO-3, or ZeRO-2 with fsdp_reshard_after_forward = never); there is no "
                     "optimizer-only ZeRO-1 (torchtitan/config/job_config.py L336-349)",
    Reason.TT_DDP_ND: "torchtitan: plain DDP (ZeRO-0) only without TP/PP/CP "
                      "(torchtitan/models/llama3/infra/parallelize.py L148-151)",
    Reason.TT_OFFLOAD_TARGET: "torchtitan: offload only to CPU (training.enable_cpu_offload, "
                              "torchtitan/config/job_config.py L270); no NVMe, SmartNIC or "
                              "SuperOffload",
    Reason.TT_OFFLOAD_FSDP: "torchtitan: CPU offload is FSDP2's CPUOffloadPolicy, which moves "
                            "parameters, gradients and optimizer states together: it needs "
                            "ZeRO-3 with parameter offload (models/llama3/infra/parallelize.py "
                            "L315-317)",
    Reason.TT_HEADS_TP: "torchtitan: TP shards wq/wk/wv column-wise; heads and KV heads must "
                        "divide by TP (models/llama3/model/model.py L206-207, L253)",
    Reason.TT_EXPERTS_EP: "torchtitan: experts must be a multiple of the expert-parallel size "
                          "(local experts = experts // ep, "
                          "torchtitan/distributed/expert_parallel.py L107-108)",
    Reason.TT_FP16: "torchtitan: mixed precision is bfloat16 or float32, no fp16 "
                    "(torchtitan/config/job_config.py L282)",
}


@dataclass(frozen=True)
class FrameworkSupport:
    """Per framework: ``ok[f]`` (bool array) and ``reason[f]`` (int16 array of Reason codes,
    the first rule that fails; 0 where the framework runs the layout)."""

    ok: dict[Framework, np.ndarray]
    reason: dict[Framework, np.ndarray]

    def any(self, frameworks=None) -> np.ndarray:
        """Runnable by at least one of ``frameworks`` (default: all)."""
        fs = list(frameworks) if frameworks else list(Framework)
        out = np.zeros_like(self.ok[fs[0]])
        for f in fs:
            out |= self.ok[f]
        return out


def rejected_counts(support: FrameworkSupport, frameworks=None) -> dict[str, int]:
    """For the layouts none of ``frameworks`` (default: all) runs, how many each framework's
    first failing rule rejects, keyed by the reason text (the texts name the framework). A
    layout rejected by three frameworks counts once under each of their reasons."""
    fs = list(frameworks) if frameworks else list(Framework)
    dropped = ~support.any(fs)
    out: dict[str, int] = {}
    for f in fs:
        codes, counts = np.unique(support.reason[f][dropped], return_counts=True)
        for c, n in zip(codes, counts):
            text = Reason(int(c)).text
            out[text] = out.get(text, 0) + int(n)
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def _first(reason: np.ndarray, fail: np.ndarray, code: Reason) -> None:
    """Record ``code`` where ``fail`` holds and no earlier rule has failed."""
    reason[fail & (reason == 0)] = code


def _not_dividing(n: int, d: np.ndarray) -> np.ndarray:
    """``n % d != 0`` through a lookup table over the (small) degrees: faster than ``%`` on
    millions of int64 values."""
    top = int(d.max(initial=1))
    table = (n % np.arange(1, top + 1)) != 0
    return table[np.maximum(d, 1) - 1]


def _dividing_into(d: np.ndarray, n: int) -> np.ndarray:
    """``d % n == 0`` elementwise for a scalar n (lookup table as above)."""
    top = int(d.max(initial=1))
    return (np.arange(1, top + 1) % max(n, 1) == 0)[np.maximum(d, 1) - 1]


def framework_support(tp, pp, dp, cp, ep, zero, offload, offload_params, interleave,
                      micro_batch, sequence_parallel, recompute, *, heads: int, n_kv: int,
                      experts: int, layers: int, global_batch=None,
                      precision: str = "bf16") -> FrameworkSupport:
    """Which framework runs each layout. Arrays broadcast together; ``offload`` holds
    OFFLOAD_CODES indices, ``zero`` 0-3, ``offload_params`` bool. ``global_batch`` (scalar or
    array) gives the micro-batch count for Megatron's interleaving rule; without it that rule
    is skipped. ``precision`` is the Training precision value (bf16, fp16, fp32).
    ``sequence_parallel`` and ``recompute`` are accepted for a stable signature: every framework
    here supports each of their values."""
    tp, pp, dp, cp, ep, zero, off, v, mb = np.broadcast_arrays(
        *(np.asarray(a, dtype=np.int64) for a in (tp, pp, dp, cp, ep, zero, offload,
                                                    interleave, micro_batch)))
    oparams = np.broadcast_to(np.asarray(offload_params, dtype=bool), tp.shape)
    del sequence_parallel, recompute
    smartnic = off == OFF_SMARTNIC
    offloading = off != OFF_NONE

    def fresh() -> np.ndarray:
        return np.zeros(tp.shape, dtype=np.int16)

    reason: dict[Framework, np.ndarray] = {}
    heads_bad = _not_dividing(heads, tp) | _not_dividing(n_kv, tp)
    experts_bad = _not_dividing(experts, ep) if experts else None

    # ---- DeepSpeed (rules shared with Megatron-DeepSpeed) ------------------------------
    def deepspeed_rules(r: np.ndarray) -> None:
        _first(r, smartnic, Reason.SMARTNIC)
        _first(r, (zero >= 2) & (pp > 1), Reason.DS_ZERO23_PP)
        _first(r, (zero == 0) & (offloading | oparams), Reason.DS_OFFLOAD_ZERO0)
        _first(r, (off == OFF_NVME) & (zero < 3), Reason.DS_NVME_ZERO3)
        _first(r, oparams & (zero < 3), Reason.DS_PARAMS_ZERO3)
        _first(r, (off == OFF_SUPERCHIP) & (zero < 3), Reason.DS_SUPERCHIP_ZERO3)
        _first(r, cp > 1, Reason.DS_CP)
        _first(r, v > 1, Reason.DS_INTERLEAVE)
        if experts:
            _first(r, experts_bad, Reason.DS_EXPERTS_EP)

    r = fresh()
    deepspeed_rules(r)
    _first(r, (tp > 1) & (pp > 1), Reason.DS_TP_PP)
    _first(r, (tp > 1) & heads_bad, Reason.DS_TP_HEADS)
    reason[Framework.DEEPSPEED] = r

    r = fresh()
    deepspeed_rules(r)
    _first(r, heads_bad, Reason.MD_KV_TP)
    reason[Framework.MEGATRON_DEEPSPEED] = r

    # ---- Megatron-LM ---------------------------------------------------------------------
    r = fresh()
    _first(r, smartnic, Reason.SMARTNIC)
    _first(r, _not_dividing(heads, tp), Reason.MG_HEADS_TP)
    _first(r, _not_dividing(n_kv, tp) & ~_dividing_into(tp, n_kv), Reason.MG_GROUPS_TP)
    if experts:
        _first(r, experts_bad, Reason.MG_EXPERTS_EP)
    _first(r, (zero >= 2) & (pp > 1), Reason.MG_FSDP_PP)
    _first(r, (off == OFF_NVME) | (off == OFF_SUPERCHIP), Reason.MG_OFFLOAD_TARGET)
    _first(r, oparams, Reason.MG_OFFLOAD_PARAMS)
    _first(r, (off == OFF_CPU) & (zero == 0), Reason.MG_OFFLOAD_ZERO0)
    inter = v > 1
    _first(r, inter & (pp < 2), Reason.MG_INTERLEAVE_PP)
    _first(r, inter & _not_dividing(layers, pp * v), Reason.MG_INTERLEAVE_LAYERS)
    if global_batch is not None:
        gb = np.asarray(global_batch, dtype=np.int64)
        # micro-batches per step = global / (dp x micro) < pp, without a division
        _first(r, inter & (gb < pp * dp * mb), Reason.MG_INTERLEAVE_MICRO)
    reason[Framework.MEGATRON] = r

    # ---- torchtitan (FSDP2) -------------------------------------------------------------
    r = fresh()
    _first(r, smartnic, Reason.SMARTNIC)
    if precision == "fp16":
        _first(r, np.ones(tp.shape, dtype=bool), Reason.TT_FP16)
    _first(r, (off == OFF_NVME) | (off == OFF_SUPERCHIP), Reason.TT_OFFLOAD_TARGET)
    _first(r, (off == OFF_CPU) & ~((zero == 3) & oparams), Reason.TT_OFFLOAD_FSDP)
    _first(r, (zero == 1) & (dp > 1), Reason.TT_ZERO1)
    _first(r, (zero == 0) & (dp > 1) & ((tp > 1) | (pp > 1) | (cp > 1)), Reason.TT_DDP_ND)
    _first(r, heads_bad, Reason.TT_HEADS_TP)
    if experts:
        _first(r, experts_bad, Reason.TT_EXPERTS_EP)
    reason[Framework.TORCHTITAN] = r

    return FrameworkSupport(ok={f: reason[f] == 0 for f in Framework}, reason=reason)


def layout_support(layout, training, model) -> dict[Framework, Reason]:
    """Scalar convenience for one (Layout, Training, Model): the Reason per framework."""
    from optimus_calc.evaluate.batch import offload_code

    s = framework_support(
        layout.tp, layout.pp, layout.dp, layout.cp, layout.ep, int(layout.zero),
        offload_code(layout.offload), layout.offload_params, layout.interleave,
        training.micro_batch, training.sequence_parallel, training.recompute.code,
        heads=model.heads, n_kv=model.n_kv, experts=model.experts, layers=model.layers,
        global_batch=training.global_batch, precision=training.precision.value)
    return {f: Reason(int(s.reason[f].reshape(-1)[0])) for f in Framework}
