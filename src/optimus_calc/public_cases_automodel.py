"""NeMo AutoModel's pre-training table (NVIDIA-NeMo/Automodel docs/performance-summary.md): the
PyTorch-native stack (FSDP2, torch.distributed.pipelining, DTensor expert parallelism) with
Transformer Engine's kernels and DeepEP, on DGX-H100 in BF16, tokens/s per GPU. A framework the
project had not cited (round 27, issue 32: new public sources per regime). Data only:
validate_public.py runs them (public_cases.public_rows).

The MoE rows as the table first published them (@ 89e3a9fdd, 2025-10-06, "Add performance
summary document"), each with its config at that commit (examples/benchmark/configs/
<model>_te_deepep.yaml): ``activation_checkpointing: true`` (every block, full recompute),
``attn: te`` (Transformer Engine's DotProductAttention: cuDNN's fused attention on Hopper, the
H100 catalog's default kernel), ``fake_balanced_gate: true`` (balanced routing, the tool's
default), the table's DeepEP dispatcher. The experts and the other parameters are sharded as
torchtitan shards them (nemo_automodel/components/moe/parallelizer.py L124-133 @ 89e3a9fdd:
fully_shard with reshard_after_forward = not pp_enabled, fp32 reduce-scatter), so the rows run
the torchtitan (FSDP2) profile: under pipeline parallelism FSDP2 keeps the stage's parameters
and gradients unsharded until the last micro-batch, which the tool plans as ZeRO-1 (the
torchtitan profile's rule). The dense Llama 3 70B row was added by 2013a4dd6 (2026-04-10) with
its config examples/llm_pretrain/custom_llama3_1_70b_pretrain_benchmark_8nodes.yaml: FSDP2 x
CP 2, attention and MLP checkpointed, per-layer torch.compile, ``attn_implementation: sdpa``,
explicit FSDP2 prefetch; FSDP2's default reduce in bf16 (components/distributed/config.py
L116-123 @ 2013a4dd6). A cold review checked every figure and setting against the mirror.
"""

from __future__ import annotations

from optimus_calc.public_cases_mb26 import MAMBA
from optimus_calc.public_row import FP as _FP
from optimus_calc.public_row import PublicRow

AM = f"NVIDIA-NeMo/Automodel docs/performance-summary.md @ 89e3a9fdd, Pre-Training ({_FP} 7.4)"
AM_Q3 = (f"NVIDIA-NeMo/Automodel docs/performance-summary.md @ 8d9bfb90e, Pre-Training "
         f"({_FP} 7.4)")
AM_HEAD = (f"NVIDIA-NeMo/Automodel docs/performance-summary.mdx @ 36044ad3d, Pre-Training "
           f"({_FP} 7.4)")
_MOE = ("the torchtitan (FSDP2) profile: AutoModel's MoE parallelizer shards as torchtitan does "
        "(fully_shard, reshard_after_forward = not pp_enabled, fp32 reduce; moe/parallelizer.py "
        "L124-133 @ 89e3a9fdd); every block checkpointed and TE attention (cuDNN) as the "
        "config at that commit; balanced routing (fake_balanced_gate), each token to k "
        "consecutive experts on one node (FakeBalancedGate, moe/layers.py L509-548: moe_max_nodes "
        "1)")
_PP = ("; FSDP2 under pipeline parallelism planned as ZeRO-1 (the torchtitan profile's rule); "
       "one pipeline flush priced per step where AutoModel runs schedule.step once per "
       "gradient-accumulation step (recipes/llm/train_ft.py L935-938 @ 89e3a9fdd: the table's GA "
       "flushes, bubble under-priced); the weights stored in bf16 with Adam on them (the tool "
       "plans 2 + 4 + 12 bytes a parameter: memory only)")
# AutoModel's explicit FSDP2 prefetch chains (enable_fsdp2_prefetch: backward depth 2, forward
# 1; components/distributed/config.py L92-114 @ 2013a4dd6) gather the next units whatever their
# size: DeepSpeed's cap on live parameters, which the torchtitan profile keeps (1e9: a 70B block,
# 0.86e9, prefetches nothing), turned off as the Megatron-FSDP profile turns it off
# (frameworks/megatron.py, zero3_max_live_params 1e13)
_PREFETCH = (("zero3_max_live_params", 1e13),)
# fake_balanced_gate (FakeBalancedGate, nemo_automodel/components/moe/layers.py L509-548 @
# 89e3a9fdd) routes token t to experts tk ... tk + k - 1 (mod the expert count), and the experts
# lie in order over the EP ranks: on DeepSeek-V3 (256 experts, top 8) at EP 64 a node holds 32
# experts, on Kimi-K2 (384, top 8) at EP 32 96, both multiples of 8, so every token's experts
# sit on one node and DeepEP sends it across the network at most once
# (comm.node_limited_cross_share at M = 1; Qwen3-30B-A3B's EP 8 is one node)
_GATE = (("moe_max_nodes", 1.0),)
_FLEX = ("attention on PyTorch's FlexAttention (GPT-OSS's sinks): no training efficiency of it "
         "in the catalog; EP not published ('-')")


def automodel_rows() -> list[PublicRow]:
    """The table's rows as published: the MoE rows of 89e3a9fdd and the dense Llama 3 70B row
    added later run; GPT-OSS (FlexAttention) and the Nemotron V3 rows are listed."""
    r = PublicRow
    moe = dict(node="dgx-h100", seq=4096, framework="torchtitan", recompute="full",
               dispatcher="deepep", assume=_GATE)
    return [
        r(AM, "H100 DeepSeek-V3 PP4 VP8 EP64 FSDP, 1024 GPUs (AutoModel)", "deepseek-v3",
          nodes=128, published=865, pp=4, vp=8, ep=64, zero=1, mbs=1, gbs=8192,
          assumed=_MOE + _PP, **moe),
        r(AM, "H100 DeepSeek-V3 PP4 VP8 EP64 FSDP, 256 GPUs (AutoModel)", "deepseek-v3",
          nodes=32, published=1002, pp=4, vp=8, ep=64, zero=1, mbs=1, gbs=512,
          assumed=_MOE + _PP, **moe),
        r(AM, "H100 Kimi-K2 PP8 VP4 EP32 FSDP, 256 GPUs (AutoModel)", "shape:kimi-k2",
          nodes=32, published=924, pp=8, vp=4, ep=32, zero=1, mbs=1, gbs=512,
          assumed=_MOE + _PP, **moe),
        r(AM_Q3, "H100 Qwen3-30B-A3B EP8 FSDP8, 8 GPUs (AutoModel)", "qwen3-30b-a3b",
          nodes=1, published=12040, ep=8, zero=3, mbs=4, gbs=512,
          assumed=_MOE + "; the table's global batch 512 (the config at 89e3a9fdd says 256); "
                         "12,040 as re-measured at 8d9bfb90e (first published 11,842); the "
                         "gradient reduce-scatter priced per micro-batch where AutoModel "
                         "defers it to the last (train_ft.py L947-948); DeepEP as AutoModel "
                         "runs it (torchtitan's own qwen3 reads no dispatcher)", **moe),
        r(AM, "H100 GPT-OSS 20B FSDP8, 8 GPUs (AutoModel)", "gpt-oss-20b", nodes=1,
          published=13058, zero=3, mbs=2, gbs=256, why_not=_FLEX, **moe),
        r(AM, "H100 GPT-OSS 120B FSDP64, 64 GPUs (AutoModel)", "gpt-oss-120b", nodes=8,
          published=7626, zero=3, mbs=2, gbs=512, why_not=_FLEX, **moe),
        r(AM_HEAD, "H100 Llama 3.1 70B FSDP32 CP2, 64 GPUs (AutoModel)", "llama-3-70b",
          "dgx-h100", 8, 866.77, cp=2, zero=3, mbs=1, gbs=128, seq=8192, recompute="full",
          framework="torchtitan", grad_bytes=2, kernel="fa2", assume=_PREFETCH,
          assumed="the torchtitan (FSDP2) profile with FSDP2's default bf16 reduce "
                  "(components/distributed/config.py L116-123 @ 2013a4dd6) and the explicit "
                  "prefetch chains it runs (enable_fsdp2_prefetch: no cap on live "
                  "parameters); attention and MLP checkpointed (full recompute's FLOPs), "
                  "per-layer compile folded in; SDPA limited to its flash and efficient "
                  "backends under CP (components/distributed/cp_utils.py L54-59): "
                  "FlashAttention-2"),
        *[r(AM_HEAD, f"H100 Nemotron V3 {m}, {g} GPUs (AutoModel)", f"Nemotron V3 {m}",
            "dgx-h100", g // 8, v, why_not=MAMBA.format(m=f"Nemotron V3 {m}"))
          for m, g, v in (("Super 120B (26.02)", 64, 4497), ("Nano 30B (26.02)", 8, 16789),
                          ("Ultra 550B (26.04)", 128, 815))],
    ]
