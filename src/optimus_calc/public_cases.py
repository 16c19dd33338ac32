"""Every published end-to-end training measurement the project cites (docs/reference/
framework-physics.md section 7, docs/reference/calibration.md, the seeds), one row each, with
its source and the layout as published (the MoE rows of section 7.3 in public_cases_moe.py).
Data only: validate_public.py runs them.

A row is a step `optimus-calc step` can express; ``why_not`` says why a row cannot be expressed
(the row is still listed, `validate` prints the reason). ``assumed`` names every setting the
source does not publish and the row takes from the framework's recipe or default.

Published value: ``tps`` tokens/s per GPU (the unambiguous figure), or ``tflops`` with its FLOP
convention: "unhalved" = (6 N + 12 L h s) per token (FA2 Table 1, NeMo <= 25.07, torchtitan),
"halved" = (6 N + 6 L h s) (Megatron-Bridge >= 25.09), compared through the same formula on the
catalog model.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

from optimus_calc.public_cases_2509 import rows_2509
from optimus_calc.public_cases_automodel import automodel_rows
from optimus_calc.public_cases_dfa import SHAPES as _DFA_SHAPES, dfa_rows
from optimus_calc.public_cases_fms import blog_rows, fms_rows
from optimus_calc.public_cases_small import SHAPES as _SMALL_SHAPES, small_rows
from optimus_calc.public_cases_long import long_rows
from optimus_calc.public_cases_mb26 import SHAPES as _MB26_SHAPES, mb26_rows
from optimus_calc.public_cases_mlm import mlm_llama_rows
from optimus_calc.public_cases_moe import MIXTRAL_22B, moe_rows
from optimus_calc.public_cases_mpt import mpt_rows, shapes as _mpt_shapes
from optimus_calc.public_cases_mds import mds_rows, shapes as _mds_shapes
from optimus_calc.public_cases_tt import (TT_A100, tt_405b_rows, tt_a100_llama2_rows,
                                         tt_b200_rows, tt_nvfp4_rows)
from optimus_calc.public_cases_nemo2407 import SHAPES as _NEMO2407_SHAPES, nemo2407_rows
from optimus_calc.public_row import CS as _CS, DS as _DS, FP as _FP, MEG as _MEG, bf16_reduce
from optimus_calc.public_row import MXR as _MXR, with_async_tp
from optimus_calc.public_row import DAO_DROPOUT, MEGATRON_DROPOUT, NEMO_175B, PublicRow

# Shapes of models the catalog does not hold (from the row's own source)
SHAPES = {
    # FlashAttention-2 paper section 4.2: GPT3-1.3B / 2.7B (GPT-3 paper Table 2.1 shapes;
    # learned positions sized for the 8k runs, assumed)
    "gpt3-1.3b": dict(layers=24, hidden=2048, heads=16, ffn_hidden=8192, vocab=50257,
                      max_position=8192, seq_len=2048, **DAO_DROPOUT),
    # Shoeybi et al. 2019 (Megatron-LM, arXiv 1909.08053) Table 1, the 1.2B GPT-2 of the
    # single-GPU baseline: hidden 1536, 16 heads, 40 layers; sequence 1024, vocabulary 51,200
    "megatron-gpt2-1.2b": dict(layers=40, hidden=1536, heads=16, ffn_hidden=6144, vocab=51200,
                               max_position=1024, seq_len=1024, **MEGATRON_DROPOUT),
    "gpt3-2.7b": dict(layers=32, hidden=2560, heads=32, ffn_hidden=10240, vocab=50257,
                      max_position=8192, seq_len=2048, **DAO_DROPOUT),
    # MosaicML's MPT models and Megatron-DeepSpeed's GPT 30B, one shape per sequence; NeMo's
    # GPT-3 5B, 20B, Nemotron 8B, 22B; TinyLlama; Kimi-K2; DistFlashAttn's LLaMA-7B with GQA
    # (public_cases_mpt, _mds, _nemo2407, _small, _mb26_bw, _dfa)
    **_mpt_shapes(), **_mds_shapes(), **_NEMO2407_SHAPES, **_SMALL_SHAPES, **_MB26_SHAPES,
    **_DFA_SHAPES,
}

# NeMo 24.12's rows of the same figure as the 24.07 table's publish no batch; the 24.07 table
# (public_cases_nemo2407.ROWS) gives GBS 128, MBS 1 for Llama2-70B, Llama3-70B and Llama3-8B
_NEMO2407_BATCH = ("; global batch 128, micro-batch 1 as NeMo's 24.07 table of the same figure "
                   "publishes (public_cases_nemo2407.py)")

MB25 = f"Megatron-Bridge docs/performance-summary.md, release 25.11 ({_FP} 7.2, @ 00b7660)"
MB26 = (f"Megatron-Bridge docs/performance-summary.md, release 26.02 ({_FP} 7.2)")
NEMO = "NeMo Framework performance summary, container {c} ({_FP} 7.2)".replace("{_FP}", _FP)
NEMO2412 = f"NeMo 24.12 docs performance_summary.html ({_FP} 7.2)"
TT = f"torchtitan benchmarks/llama3_h100_202412_torchtitan.md @ 73a0e69 Table {{t}} ({_FP} 7.4)"
TT_ASYNC = (f"torchtitan benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md ({_FP} 7.4)")
TT_H200 = f"torchtitan benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md ({_FP} 7.4)"
FA2 = f"Dao 2023, FlashAttention-2 (arXiv 2307.08691) section 4.2 Table 1 ({_FP} 7.1)"
SO = "seeds/superoffload.md (DeepSpeed blog deepspeed-superoffload)"
NANO = f"karpathy/nanoGPT README.md efficiency notes ({_FP} 7.5)"
MEGV1 = ("NVIDIA ADLR blog 'MegatronLM's Supercharged V1.0' (nv-adlr.github.io/MegatronLMV1), "
         "Table 1")
MEG19 = "Shoeybi et al. 2019, Megatron-LM (arXiv 1909.08053), abstract"

_MEG_ASM = "recompute none and the distributed optimizer (Megatron-Bridge recipe defaults)"
_TTN = dict(framework="torchtitan", zero=3, recompute="selective")
# The attention kernel of torchtitan's published Hopper runs (2024-12 to 2025-07): PyTorch's
# SDPA flash backend (FlashAttention-2). torchtitan called F.scaled_dot_product_attention with
# PyTorch's backend order until 2025-05-14, then put FLASH_ATTENTION first below compute
# capability 10.0 (torchtitan 3b85aa31f, torchtitan/models/attention.py) until 2025-10-09
# (6a3a9da95: cuDNN first everywhere, as at the plug-in's pinned commit 73a0e69, attention.py
# L168-178); PyTorch made its cuDNN backend opt-in from 2.5.1 (pytorch/pytorch#138522)
_TT_FA2 = ("attention on FlashAttention-2 (torchtitan before 6a3a9da95 ran PyTorch's SDPA "
           "flash backend on Hopper: pytorch/pytorch#138522, torchtitan 3b85aa31f)")


def _on_fa2(row: PublicRow) -> PublicRow:
    """A torchtitan Hopper row on the FlashAttention-2 it ran (_TT_FA2)."""
    if row.node == "dgx-a100" or row.kernel:
        return row
    return replace(row, kernel="fa2", assumed="; ".join(x for x in (row.assumed, _TT_FA2) if x))
_GB = "64 GPUs per GB200 NVL72 rack (gb200-nvl72; one rack for 64 GPUs or fewer), assumed"
_CAT = "model not in the catalog"
_SAME_2407 = ("the same figure as NeMo's 24.07 table's row, which publishes its batch "
              "(public_cases_nemo2407.py): counted once")
# NeMo's Mixtral 8x7B perf recipe (nemo/collections/llm/recipes/mixtral_8x7b.py L214-235,
# v2.2.0 = v2.3.0): token drop at capacity 1.0 padded to capacity (callbacks/moe_token_drop.py
# L38-39: every expert takes its balanced share), GC every 100 steps; the model sets neither
# moe_grouped_gemm nor moe_permute_fusion (MCore default False, transformer_config.py
# L333/L382 @ core_v0.11.0): one local expert a GPU at EP 8, so nothing to group
_MIXTRAL = ("token drop at capacity factor 1.0, padded (= balanced; "
            "--moe-pad-expert-input-to-capacity); alltoall dispatcher; "
            "recompute none; distributed optimizer with overlapped grad reduce and param gather")
_COMPILE = "torch.compile not modelled (no flag changes the element-wise fusion)"


def _fa2_rows() -> list[PublicRow]:
    """FA2 Table 1: 8 x A100 80GB SXM, GPT3 1.3B/2.7B at 2k and 8k, no FlashAttention / FA1 /
    FA2, TFLOP/s per GPU with attention un-halved."""
    vals = {("gpt3-1.3b", 2048): (142, 189, 196), ("gpt3-1.3b", 8192): (72, 170, 220),
            ("gpt3-2.7b", 2048): (149, 189, 205), ("gpt3-2.7b", 8192): (80, 175, 225)}
    # Dao-AILab/flash-attention training/configs/experiment/pile/gpt3xl-flash.yaml @ 0b037c2
    # (global 512, per-GPU batch 8 on 80 GB, DDPStrategyZero1), gpt3-2.7B-flash.yaml @ edc7698
    # (batch 4 on 80 GB), gpt3xl-flash-8k.yaml / gpt3-2.7B-flash-8k.yaml @ 0bf5e50 (global 128,
    # batch 4 on 80 GB)
    batch = {("gpt3-1.3b", 2048): (8, 512), ("gpt3-1.3b", 8192): (4, 128),
             ("gpt3-2.7b", 2048): (4, 512), ("gpt3-2.7b", 8192): (4, 128)}
    out = []
    for (m, s), (none, fa1, fa2) in vals.items():
        mbs, gbs = batch[(m, s)]
        base = dict(model=f"shape:{m}", node="dgx-a100", nodes=1, seq=s, zero=1, mbs=mbs,
                    gbs=gbs, unit="tflops:unhalved", source=FA2,
                    assumed="the flash-attention repo's training configs for the batch; the "
                            "same batch for the runs without FlashAttention; recompute none")
        out.append(PublicRow(label=f"{m} seq {s // 1024}k, no FlashAttention", published=none,
                             flash=False, **base))
        out.append(PublicRow(label=f"{m} seq {s // 1024}k, FlashAttention-1", published=fa1,
                             kernel="fa1", **base))
        out.append(PublicRow(label=f"{m} seq {s // 1024}k, FlashAttention-2", published=fa2,
                             kernel="fa2", **base))
    return out


def _megatron_dense() -> list[PublicRow]:
    r = PublicRow
    return [
        r(MB25, "GB200 Llama3 8B FP8-CS, 8 GPUs", "llama-3-8b", "dgx-b200", 1, 31508, gpu="gb200",
          gbs=128, mbs=2, assumed=_MEG_ASM + "; " + _GB, **_CS, **_MEG),
        r(MB25, "GB200 Llama3 8B MXFP8, 8 GPUs", "llama-3-8b", "dgx-b200", 1, 29789, gpu="gb200",
          gbs=128, mbs=2, assumed=_MEG_ASM + "; " + _GB, **_MXR, **_MEG),
        r(MB25, "B200 Llama3 8B FP8-CS, 8 GPUs", "llama-3-8b", "dgx-b200", 1, 30624, gbs=128,
          mbs=2, assumed=_MEG_ASM, **_CS, **_MEG),
        r(MB25, "B200 Llama3 8B MXFP8, 8 GPUs", "llama-3-8b", "dgx-b200", 1, 29521, gbs=128,
          mbs=2, assumed=_MEG_ASM, **_MXR, **_MEG),
        r(MB25, "H100 Llama3 8B FP8-CS FSDP, 8 GPUs", "llama-3-8b", "dgx-h100", 1, 14451,
          gbs=128, mbs=1, assumed="recompute none", framework="megatron", zero=3, **_CS),
        r(MB25, "GB200 Llama3 70B FP8-CS FSDP, 64 GPUs", "llama-3-70b", "dgx-b200", 8, 4312,
          gpu="gb200", gbs=256, mbs=2, framework="megatron", zero=3, assumed=_GB, **_CS),
        r(MB25, "H100 Llama3 70B FP8-CS TP4 PP8 VP5, 64 GPUs", "llama-3-70b", "dgx-h100", 8,
          1602, tp=4, pp=8, vp=5, gbs=128, assumed=_MEG_ASM, **_CS, **_MEG),
        r(MB25, "GB200 Llama3.1 405B FP8-CS TP4 PP16 VP4, 256 GPUs", "llama-3-405b", "dgx-b200",
          32, 813, gpu="gb200", tp=4, pp=16, vp=4, gbs=1536, assumed=_MEG_ASM + "; " + _GB,
          **_CS, **_MEG),
        r(MB25, "B200 Llama3.1 405B FP8-CS TP4 PP8 CP2 VP8, 128 GPUs", "llama-3-405b",
          "dgx-b200", 16, 661, tp=4, pp=8, cp=2, vp=8, gbs=64, assumed=_MEG_ASM, **_CS, **_MEG),
        r(MB25, "B200 Llama3.1 405B MXFP8, 128 GPUs", "llama-3-405b", "dgx-b200", 16, 624,
          tp=4, pp=8, cp=2, vp=8, gbs=64, assumed=_MEG_ASM, **_MXR, **_MEG),
        r(MB25, "H100 Llama3.1 405B FP8-CS TP8 PP8 CP2 VP8, 1024 GPUs", "llama-3-405b",
          "dgx-h100", 128, 292, tp=8, pp=8, cp=2, vp=8, gbs=512, assumed=_MEG_ASM, **_CS,
          **_MEG),
        r(MB26, "GB200 Llama3 70B MXFP8 TP2 PP4 VP5, 64 GPUs", "llama-3-70b", "dgx-b200", 8,
          3613, gpu="gb200", tp=2, pp=4, vp=5, gbs=256, assumed=_MEG_ASM + "; " + _GB, **_MXR,
          **_MEG),
        r(MB26, "GB200 Llama3 70B FP8 FSDP 64, 64 GPUs", "llama-3-70b", "dgx-b200", 8, 4040,
          gpu="gb200", gbs=256, mbs=2, framework="megatron", zero=3,
          assumed="FP8 recipe te-current (not stated); " + _GB, **_CS),
        r(MB26, "H100 Llama3 70B FP8 TP4 PP8 VP5, 64 GPUs", "llama-3-70b", "dgx-h100", 8, 1621,
          tp=4, pp=8, vp=5, gbs=256, assumed="FP8 recipe te-current (not stated); " + _MEG_ASM,
          **_CS, **_MEG),
    ]


def _nemo_dense() -> list[PublicRow]:
    r, c = PublicRow, NEMO.format
    asm = "FP8 per-tensor current scaling (te-current); " + _MEG_ASM
    asm_ds = "FP8 delayed scaling (te-delayed, NeMo 2.1's only recipe); " + _MEG_ASM
    # container 25.02 is NeMo 2.2, whose only FP8 recipe is delayed scaling
    # (nemo/collections/llm/recipes/precision/mixed_precision.py L46-54 @ v2.2.0)
    asm_22 = "FP8 delayed scaling (te-delayed, NeMo 2.2's only recipe); " + _MEG_ASM
    return [
        r(c(c="25.02"), "B200 Llama3 8B FP8, 8 GPUs", "llama-3-8b", "dgx-b200", 1, 26006,
          gbs=128, mbs=2, assumed=asm_22, **_DS, **_MEG),
        r(c(c="25.02"), "B200 Llama3 70B FP8 TP2 PP4 CP2 VP5, 64 GPUs", "llama-3-70b",
          "dgx-b200", 8, 3062, tp=2, pp=4, cp=2, vp=5, gbs=128, assumed=asm_22, **_DS, **_MEG),
        r(c(c="25.02"), "B200 Llama3 405B FP8 TP4 PP8 CP2 VP8, 128 GPUs", "llama-3-405b",
          "dgx-b200", 16, 625, tp=4, pp=8, cp=2, vp=8, gbs=64, assumed=asm_22, **_DS, **_MEG),
        r(c(c="25.02"), "B200 GPT3-175B FP8 TP4 PP4 VP6, 512 GPUs", "gpt3-175b", "dgx-b200", 64,
          1600, tp=4, pp=4, vp=6, gbs=2048, mbs=2, seq=2048, assumed=asm_22, **NEMO_175B, **_DS, **_MEG),
        r(c(c="25.02"), "B200 Mixtral-8x7B FP8 EP8, 64 GPUs", "mixtral-8x7b", "dgx-b200", 8,
          15457, ep=8, gbs=256, mbs=2, seq=4096, assumed="FP8 delayed scaling, NeMo 2.2's only "
          "recipe (pretrain_mixtral_8x7b.py L66-68, mixed_precision.py L46-54 @ NeMo v2.2.0); "
          "CUDA graphs on for B200 (L70-72) not modelled; " + _MIXTRAL, drop_pad=True, **_DS,
          **_MEG),
        r(c(c="25.02"), "B200 Mixtral-8x22B FP8 TP2 PP4 CP8 VP14 EP8, 256 GPUs, seq 64k",
          "mixtral-8x22b", "dgx-b200", 32, 2232, **MIXTRAL_22B),
        r(c(c="25.02"), "H100 GPT3-175B FP8 TP4 PP8 VP6, 512 GPUs", "gpt3-175b", "dgx-h100", 64,
          866, tp=4, pp=8, vp=6, gbs=2048, mbs=2, seq=2048, assumed=asm_22, **NEMO_175B, **_DS, **_MEG),
        r(c(c="25.04"), "GB200 Llama3 8B FP8, 8 GPUs", "llama-3-8b", "dgx-b200", 1, 33099,
          gpu="gb200", gbs=128, mbs=2, assumed=asm + "; " + _GB, **_CS, **_MEG),
        r(c(c="25.04"), "GB200 Llama3 70B FP8 FSDP, 64 GPUs", "llama-3-70b", "dgx-b200", 8,
          4035, gpu="gb200", gbs=128, framework="megatron", zero=3, assumed=asm + "; " + _GB,
          **_CS),
        r(c(c="25.04"), "GB200 Llama3 405B FP8 TP4 PP8 CP2 VP8, 128 GPUs", "llama-3-405b",
          "dgx-b200", 16, 665, gpu="gb200", tp=4, pp=8, cp=2, vp=8, gbs=64,
          assumed=asm + "; " + _GB, **_CS, **_MEG),
        r(c(c="25.04"), "GB200 GPT3-175B FP8 TP4 PP4 VP12, 128 GPUs", "gpt3-175b", "dgx-b200",
          16, 1804, gpu="gb200", tp=4, pp=4, vp=12, gbs=256, mbs=2, seq=2048,
          assumed=asm + "; " + _GB, **NEMO_175B, **_CS, **_MEG),
        r(c(c="25.04"), "GB200 Mixtral-8x7B FP8 EP8, 64 GPUs", "mixtral-8x7b", "dgx-b200", 8,
          19275, gpu="gb200", ep=8, gbs=256, mbs=2, seq=4096, assumed="FP8 per-tensor current "
          "scaling (the 25.04 page; the script's default is delayed, argument_parser.py L80-91 "
          "@ NeMo v2.3.0); CUDA graphs on (model_configs_gb200.csv L17) not modelled; "
          + _MIXTRAL + "; " + _GB, drop_pad=True, **_CS, **_MEG),
        r(c(c="25.07"), "GB200 Llama3 8B FP8-CS, 8 GPUs", "llama-3-8b", "dgx-b200", 1, 31737,
          gpu="gb200", gbs=128, mbs=2, assumed=asm + "; " + _GB, **_CS, **_MEG),
        r(c(c="25.07"), "GB200 Llama3 8B MXFP8, 8 GPUs", "llama-3-8b", "dgx-b200", 1, 30341,
          gpu="gb200", gbs=128, mbs=2, assumed=_MEG_ASM + "; " + _GB, **_MXR, **_MEG),
        r(NEMO2412, "H100 GPT3-175B FP8 TP4 PP8 VP6, 512 GPUs", "gpt3-175b", "dgx-h100", 64,
          825, tp=4, pp=8, vp=6, gbs=2048, mbs=2, seq=2048,
          assumed=asm_ds + "; micro-batch 2 as NeMo's 24.07 table of the same figure "
                  "publishes (public_cases_nemo2407.py)", **NEMO_175B, **_DS, **_MEG),
        r(NEMO2412, "H100 Llama2-70B FP8 TP4 PP4 VP20, 64 GPUs", "llama-2-70b", "dgx-h100", 8,
          1728, tp=4, pp=4, vp=20, seq=4096, gbs=128,
          assumed=asm_ds + _NEMO2407_BATCH, **_DS, **_MEG),
        r(NEMO2412, "H100 Llama3-70B FP8 TP4 PP4 CP2 VP5, 64 GPUs", "llama-3-70b", "dgx-h100", 8,
          1524, tp=4, pp=4, cp=2, vp=5, gbs=128,
          assumed=asm_ds + _NEMO2407_BATCH, **_DS, **_MEG),
        r(NEMO2412, "H100 Llama3-8B FP8 CP2, 8 GPUs", "llama-3-8b", "dgx-h100", 1, 12273, cp=2,
          gbs=128, assumed=asm_ds + _NEMO2407_BATCH, **_DS,
          **_MEG),
        r(NEMO2412, "H100 Nemotron-340B FP8 TP8 PP8 VP12, 128 GPUs", "nemotron-4-340b",
          "dgx-h100", 16, 326, why_not=_SAME_2407),
    ]


def _torchtitan() -> list[PublicRow]:
    r = PublicRow
    t1, t2, t3, t4, t5, t6 = (TT.format(t=i) for i in range(1, 7))
    base8 = dict(model="llama-3-8b", node="grand-teton-h100", mbs=2, seq=8192,
                 assumed="seq 8192 from torchtitan's llama3_8b.toml (not in the benchmark "
                         "file)", **_TTN)
    out = [
        r(t1, "Llama 3.1 8B FSDP 8, 8 GPUs", nodes=1, published=5762, mem_gib=82.4, **base8),
        r(t1, "Llama 3.1 8B FSDP 8 + compile, 8 GPUs", nodes=1, published=6667,
          why_not=_COMPILE, **base8),
        r(t1, "Llama 3.1 8B FSDP 8 + compile + Float8, 8 GPUs", nodes=1, published=8532,
          precision="fp8", fp8_recipe="torchao", mem_gib=76.8, **base8),
        r(t3, "Llama 3.1 8B FSDP 128, 128 GPUs", nodes=16, published=5605, mem_gib=67.0,
          **base8),
        r(t3, "Llama 3.1 8B FSDP 128 + compile, 128 GPUs", nodes=16, published=6514,
          why_not=_COMPILE, **base8),
        r(t3, "Llama 3.1 8B FSDP 128 + compile + Float8, 128 GPUs", nodes=16, published=8380,
          precision="fp8", fp8_recipe="torchao", mem_gib=61.8, **base8),
    ]
    long_asm = "compile folded into the torchao Float8 ratio"
    for seq, cp, tps, gib in ((32768, 1, 3890, 83.9), (65536, 2, 2540, 84.2),
                              (131072, 4, 1071, 84.0), (262144, 8, 548, 84.5)):
        out.append(r(t2, f"Llama 3.1 8B seq {seq // 1024}k, FSDP {8 // cp} CP {cp}, "
                         "compile + Float8, 8 GPUs", "llama-3-8b", "grand-teton-h100", 1, tps,
                     cp=cp, seq=seq, mbs=1, precision="fp8", fp8_recipe="torchao", mem_gib=gib,
                     framework="torchtitan", zero=3, recompute="full", assumed=long_asm))
    for name, tps, gib in (("2D", 829, 71.9), ("2D + AsyncTP", 876, 67.6)):
        out.append(r(t4, f"Llama 3.1 70B FSDP 32 TP 8 {name}, compile + Float8, 256 GPUs",
                     "llama-3-70b", "grand-teton-h100", 32, tps, tp=8, seq=8192, mbs=16,
                     precision="fp8", fp8_recipe="torchao", framework="torchtitan", zero=3,
                     recompute="full", assumed=long_asm, mem_gib=gib, async_tp=name != "2D"))
    # torchtitan splits a PP rank's local batch into pipeline_parallel_degree micro-batches
    # unless told otherwise (torchtitan/parallelisms/pipelining_utils.py L79-81 @ 9dec370)
    mb_pp = ("micro-batch = local batch / 8, torchtitan's default of PP-degree micro-batches "
             "(parallelisms/pipelining_utils.py L79-81 @ 9dec370); FSDP under PP keeps "
             "parameters and gradients unsharded through the step (parallelize_llama.py "
             "L326-329 @ 9dec370, torch pipelining): ZeRO-1; AsyncTP as the table's title "
             "says; " + long_asm)
    for name, tps, v, gib in (("1F1B", 100, 1, 82.5), ("interleaved 1F1B", 128, 2, 72.7)):
        out.append(r(t5, f"Llama 3.1 405B FSDP 8 TP 8 PP 8 {name}, 512 GPUs", "llama-3-405b",
                     "grand-teton-h100", 64, tps, tp=8, pp=8, vp=v, seq=8192, mbs=4, gbs=256,
                     precision="fp8", fp8_recipe="torchao", framework="torchtitan", zero=1,
                     recompute="full", mem_gib=gib, async_tp=True,
                     assumed=mb_pp + ("; two stages a rank" if v > 1 else "")))
    for seq, cp, tps, gib in ((32768, 1, 76, 75.3), (65536, 2, 47, 75.9), (131072, 4, 31, 77.1),
                              (262144, 8, 16, 84.9)):
        out.append(r(t6, f"Llama 3.1 405B TP 8 PP 8 FSDP {8 // cp} CP {cp}, seq {seq // 1024}k, "
                         "512 GPUs", "llama-3-405b", "grand-teton-h100", 64, tps, tp=8, pp=8, cp=cp,
                     seq=seq, mbs=1, gbs=8 * 8 // cp, precision="fp8", fp8_recipe="torchao",
                     framework="torchtitan", zero=1, recompute="full", mem_gib=gib, async_tp=True,
                     assumed="Float8 as the table's title says; " + mb_pp))
    return [_on_fa2(r) for r in out + _torchtitan_other()]


def _torchtitan_other() -> list[PublicRow]:
    """torchtitan's async-TP benchmark (same Grand Teton hosts), its H200 and A100 rows."""
    r, out = PublicRow, []
    a70 = dict(model="llama-3-70b", node="grand-teton-h100", nodes=32, tp=8, mbs=16, seq=8192,
               framework="torchtitan", zero=3, recompute="full",
               assumed="seq 8192; compile folded in")
    a8 = dict(model="llama-3-8b", node="grand-teton-h100", nodes=8, tp=8, mbs=12, seq=8192,
              framework="torchtitan", zero=3, recompute="selective",
              assumed="seq 8192; compile folded in")
    for base, name in ((a70, "70B FSDP 32 TP 8, 256 GPUs"), (a8, "8B FSDP 8 TP 8, 64 GPUs")):
        vals = ((597.3, 652.4, 809.8, 942.4, 599.6, 624.8) if base is a70
                else (4378, 4809.4, 5078.1, 5570.1, 3708.5, 3914.9))
        for i, (prec, extra) in enumerate((("bf16", {}), ("float8 tensorwise",
                                            dict(precision="fp8", fp8_recipe="torchao")),
                                           ("float8 rowwise", None))):
            for j, mode in enumerate(("TP", "async TP")):
                why = "float8 rowwise scaling is not a recipe of the tool" if extra is None else ""
                out.append(r(TT_ASYNC, f"Llama3 {name}, {prec}, {mode}", published=vals[2 * i + j],
                             why_not=why, async_tp=bool(j), **(extra or {}), **base))
    h200 = dict(model="llama-3-8b", node="dgx-h200", mbs=2, seq=8192, precision="fp8",
                fp8_recipe="torchao", framework="torchtitan", zero=3, recompute="selective",
                assumed="seq 8192; selective AC as the 8B recipe; compile folded into torchao")
    out += [r(TT_H200, "Llama 3.1 8B H200 FSDP 32, float8, 32 GPUs", nodes=4, published=10938,
              mem_gib=47.96, **h200),
            r(TT_H200, "Llama 3.1 8B H200 FSDP 64, float8, 64 GPUs", nodes=8, published=10753,
              mem_gib=46.97, **h200)]
    a100 = dict(model="llama-3-8b", node="dgx-a100", nodes=8, mbs=1, seq=8192,
                framework="torchtitan", zero=3, kernel="fa2")
    out += [r(TT_A100, "Llama 3 8B 64 A100 FSDP, selective layer AC", published=2904,
              recompute="full", assumed="layer AC every other layer taken as full recompute "
                                        "(the tool has layer-wise AC only as full)", **a100),
            r(TT_A100, "Llama 3 8B 64 A100 FSDP, selective op AC", published=2973,
              recompute="selective", **a100),
            r(TT_A100, "Llama 3 70B 64 A100 FSDP, full AC", "llama-3-70b", "dgx-a100", 8, 331,
              mbs=1, seq=8192, framework="torchtitan", zero=3, recompute="full", kernel="fa2",
              assumed="local batch 1, seq 8192 (as the 8B rows)")]
    return out


def _offload_and_small() -> list[PublicRow]:
    r = PublicRow
    return [
        r(SO, "Qwen3-14B, 1 x GH200, seq 4k, batch 4, SuperOffload", "qwen3-14b", "gh200", 1,
          600, unit="tflops:unhalved", seq=4096, mbs=4, zero=3, framework="deepspeed",
          why_not="the FLOP formula behind '600 TFLOPS' is not found (framework-physics.md 8) "
                  "and SuperOffload's speculation is not a schedule of the tool"),
        r(SO, "GPT-OSS-20B, 1 x GH200, seq 4k, batch 4, SuperOffload", "gpt-oss-20b", "gh200",
          1, 600, unit="tflops:unhalved", seq=4096, mbs=4, zero=3, framework="deepspeed",
          why_not="as the Qwen3-14B row"),
        r(NANO, "GPT-2 124M, 1 x A100, bench.py, no compile", "gpt2-124m", "dgx-a100", 1, 0.25,
          unit="s", why_not=_CAT + " (GPT-2 124M); batch and precision of the README figure "
                                   "not stated"),
        r("seeds/deepspeed-bandwidth-characterization-methods.md", "GPT-2-like 1.4B, ZeRO-1/2 "
          "+ CPU offload, XE8545", "gpt-1.4b", "xe8545", 1, 1.38, unit="s",
          why_not="the seed in shared/seeds holds no per-step time (issue 32 quotes 1.38 / "
                  "1.22 s; not found in the stored text)"),
    ]


def _v100() -> list[PublicRow]:
    """V100 (DGX-2H) weak model-parallel scaling of Megatron-LM v1.0, batch 8, iteration time;
    the 1.2B baseline runs "62.4 teraFLOPs ... 48% of the theoretical peak" on one GPU."""
    r = PublicRow
    why = ("model shape not published (the blog's 2.0B/4.2B/8.7B configurations differ from the "
           "paper's 2.5B/4.2B/8.3B)")
    return [
        r(MEGV1, "GPT-2 1.2B on 1 V100 (DGX-2H), batch 8", "shape:megatron-gpt2-1.2b", "dgx-2",
          1, 1.288, unit="s", gpus_per_node=1, seq=1024, mbs=8, gbs=8, precision="fp16",
          recompute="full", flash=False, framework="megatron",
          assumed="activation checkpointing and fp16 as the paper's runs; the DGX-2H's 450 W "
                  "V100 (peak 130 TFLOP/s by the blog's 48%) runs on the catalog's 125"),
        r(MEGV1, "GPT-2 2.0B, TP 2 on 2 V100, batch 8", "megatron-gpt2-2.0b", "dgx-2", 1, 1.424,
          unit="s", why_not=why),
        r(MEGV1, "GPT-2 4.2B, TP 4 on 4 V100, batch 8", "megatron-gpt2-4.2b", "dgx-2", 1, 1.357,
          unit="s", why_not=why),
        r(MEGV1, "GPT-2 8.7B, TP 8 on 8 V100, batch 8", "megatron-gpt2-8.7b", "dgx-2", 1, 1.508,
          unit="s", why_not=why),
        r(MEG19, "GPT-2 1.2B on 1 V100, 39 TFLOP/s", "shape:megatron-gpt2-1.2b", "dgx-2", 1, 39,
          unit="tflops:unhalved", why_not="superseded on the same configuration by the same "
                                          "authors' v1.0 code (62.4 TFLOP/s, the row above): the "
                                          "tool models one software level"),
        r(MEG19, "GPT-2 8.3B, TP 8 x DP 64 on 512 V100, 15.1 PFLOP/s", "megatron-gpt2-8.3b",
          "dgx-2", 32, 15.1e3 / 512, unit="tflops:unhalved",
          why_not="superseded by the v1.0 code (as above); batch per GPU not in the abstract"),
    ]


def _on_nvl72(row: PublicRow) -> PublicRow:
    """A GB200 (GB300) row on the catalog's NVL72 rack (gb200-nvl72, gb300-nvl72): the rows
    give their GPUs as 8-GPU nodes (``nodes``); up to 64 GPUs run in one rack's NVLink domain,
    more on racks of 64
    (assumed, _GB: the pages give the GPU count only). The HybridEP MoE rows' EP groups (32 or
    64 GPUs, one PP stage) then sit inside one rack's NVLink domain (--moe-dispatcher hybridep)."""
    if row.gpu not in ("gb200", "gb300") or row.why_not:
        return row
    gpus = row.nodes * (row.gpus_per_node or 8)
    racks = max(1, -(-gpus // 64))
    return replace(row, node=f"{row.gpu}-nvl72", gpu=None, nodes=racks, gpus_per_node=gpus // racks)


@cache
def public_rows() -> tuple[PublicRow, ...]:
    """Every row, expressible or not, in source order (built once: frozen, from constants)."""
    rows = (_fa2_rows() + _megatron_dense() + mlm_llama_rows() + _nemo_dense() + nemo2407_rows()
            + moe_rows() + rows_2509() + _torchtitan() + long_rows() + _offload_and_small()
            + _v100() + mpt_rows() + mds_rows() + mb26_rows() + tt_b200_rows() + tt_nvfp4_rows()
            + dfa_rows() + fms_rows() + blog_rows() + small_rows() + tt_a100_llama2_rows()
            + [_on_fa2(r) for r in tt_405b_rows()] + automodel_rows())  # _on_fa2: _TT_FA2
    return tuple(_on_nvl72(bf16_reduce(with_async_tp(r))) for r in rows)
