"""Long-context rows: NeMo's "Long Sequence Performance" page (context parallelism from 4K to 1M
tokens) and the Llama 3 paper's scaling table (8K and 128K tokens on 8,192-16,384 H100). Data
only: validate_public.py runs them (public_cases.public_rows)."""

from __future__ import annotations

from optimus_calc.public_row import DS as _DS
from optimus_calc.public_row import MEG as _MEG
from optimus_calc.public_row import PublicRow

# NVIDIA/NeMo docs/source/performance/performance_long_sequence.md @ 8cfedd7 (H100 table added
# by 5b47a94c11 / b39e679ba9, Oct 2024, container NeMo 24.03.01; B200 table by 14d427f575 /
# 19fadb67b0, container 25.04.rc2). TFLOP/s per GPU: the Oct 2024 numbers predate NeMo's FLOP
# callback (nemo/utils/flops_formulas.py, first commit f0bf77bcf7, 2025-01-22) and the causal
# halving in both NeMo (6251117f4c, 2025-08) and Megatron-LM's training.py (8873b55d6a,
# 2025-03): attention un-halved
NEMO_LONG = ("NeMo docs/source/performance/performance_long_sequence.md @ 8cfedd7, "
             "{t} (container {c})")
_H100 = NEMO_LONG.format(t="LLAMA2-7B (FP8) - H100", c="NeMo 24.03.01")
_B200 = NEMO_LONG.format(t="LLAMA3-8B (FP8) - B200", c="NeMo 25.04.rc2")
_ASM = ("FP8 delayed scaling (te-delayed: Transformer Engine had no other recipe in 2024); "
        "micro-batch 1; recompute none; distributed optimizer with the recipe's overlaps "
        "(NeMo defaults; the page publishes none of these)")
_NO_CP = ("the layout of the run without CP is not published ('the most performant model- and "
          "data-parallel configurations without CP')")
# The B200 table's GPU column: its first version (14d427f575, 2025-04-28, "update the perf number
# for B200 (#13112)") lists 2, 4, 8, ..., 256 GPUs, the product of its TP, CP and DP on every row;
# 19fadb67b0 (2025-05-08, #13468) rewrote the table with 8, 16, ..., 1024 GPUs (the H100 table's
# "# of GPUs = SeqLen (K)") and the same TP, CP, DP and TFLOP/s, so its layouts fill a quarter of
# the GPUs it names (at 4x the GPUs DP would be 16, which the 512K and 1M rows' batches of 8 and
# 4 do not divide). The rows run the layout as published (TP x CP x DP GPUs, the later version's
# PP 1), as the first version counts them; TFLOP/s per GPU reads no GPU count
_B200_GPUS = ("the layout as published (TP x CP x DP GPUs, the GPU column of the table's first "
              "version, 14d427f575; 19fadb67b0 lists 4x as many GPUs for the same layout and "
              "TFLOP/s); PP 1 (the later version's column; the first has none); ")
_B200_ASM = ("FP8 delayed scaling (te-delayed: the default of NeMo's scripts/performance "
             "argument_parser.py L80-91 @ 7ba2253, --fp8_recipe ds); micro-batch 1; recompute "
             "none; distributed optimizer with the recipe's overlaps (NeMo defaults; the page "
             "publishes none of these)")


def long_rows() -> list[PublicRow]:
    """The H100 table's runs with CP, as published (sequence in K tokens, GPUs, global batch,
    TP, PP, DP, CP, TFLOP/s per GPU) and the B200 table's; the H100 runs without CP are listed
    with the reason the tool cannot run them."""
    h100 = [(4, 4, 1024, 1, 1, 4, 1, 768, 768), (8, 8, 512, 1, 2, 4, 1, 730, 730),
            (16, 16, 256, 2, 1, 8, 1, 660, 660), (32, 32, 128, 2, 1, 8, 2, 610, 595),
            (64, 64, 64, 4, 1, 8, 2, 574, 534), (128, 128, 32, 4, 1, 8, 4, 555, 424),
            (256, 256, 16, 4, 1, 8, 8, 549, 392), (512, 512, 8, 8, 1, 4, 16, 549, 104),
            (1024, 1024, 4, 8, 1, 4, 32, 536, 26.5)]
    out = []
    for k, gpus, gbs, tp, pp, dp, cp, with_cp, without in h100:
        assert tp * pp * dp * cp == gpus
        node = dict(nodes=max(1, gpus // 8), gpus_per_node=gpus if gpus < 8 else None)
        out.append(PublicRow(_H100, f"H100 Llama2-7B FP8 seq {k}K TP{tp} PP{pp} CP{cp}, "
                             f"{gpus} GPUs", "llama-2-7b", "dgx-h100", published=with_cp,
                             unit="tflops:unhalved", tp=tp, pp=pp, cp=cp, seq=k * 1024,
                             gbs=gbs, assumed=_ASM, **node, **_DS, **_MEG))
        if cp > 1:
            out.append(PublicRow(_H100, f"H100 Llama2-7B FP8 seq {k}K without CP, {gpus} GPUs",
                                 "llama-2-7b", "dgx-h100", published=without,
                                 unit="tflops:unhalved", seq=k * 1024, why_not=_NO_CP, **node))
    # (sequence in K, global batch, TP, CP, DP, TFLOP/s per GPU), the table's columns
    b200 = [(8, 512, 1, 1, 2, 1671), (16, 256, 1, 1, 4, 1717), (32, 128, 1, 2, 4, 1624),
            (64, 64, 1, 4, 4, 1600), (128, 32, 2, 4, 4, 1588), (256, 16, 4, 4, 4, 1590),
            (512, 8, 4, 8, 4, 1619), (1024, 4, 4, 16, 4, 1608)]
    for k, gbs, tp, cp, dp, v in b200:
        gpus = tp * cp * dp
        node = dict(nodes=max(1, gpus // 8), gpus_per_node=gpus if gpus < 8 else None)
        out.append(PublicRow(_B200, f"B200 Llama3-8B FP8 seq {k}K TP{tp} CP{cp} DP{dp}, "
                             f"{gpus} GPUs", "llama-3-8b", "dgx-b200", published=v,
                             unit="tflops:unhalved", tp=tp, cp=cp, seq=k * 1024, gbs=gbs,
                             assumed=_B200_GPUS + _B200_ASM, **node, **_DS, **_MEG))
    return out + llama3_rows()


# Dubey et al. 2024, "The Llama 3 Herd of Models" (arXiv 2407.21783v3) section 3.3.2 Table 4:
# Llama 3 405B pre-training on H100 80GB HBM3 at 700 W (section 3.3.1), 400 Gb/s RoCE per GPU,
# 16M tokens per batch, BF16; TFLOP/s per GPU as published with its "BF16 MFU" (43/41/38%)
LLAMA3 = "Dubey et al. 2024 (Llama 3, arXiv 2407.21783) Table 4, Llama 3 405B pre-training"
_L3_ASM = ("not published, assumed: micro-batch 1; the interleaved schedule at 4 stages a rank "
           "(126 = 16 x 8 - 2 layers, one fewer on the first and last stage, fits 4 or 8; 4 was "
           "chosen when the tool could not run 8, and is kept: the paper names neither); "
           "DP as ZeRO-1 (optimizer states and gradients sharded, weights not resharded, DP "
           "synchronised once a step); no recomputation; attention on FlashAttention-2, "
           "PyTorch SDPA's Hopper backend in 2024 (its cuDNN backend opt-in from 2.5.1, "
           "pytorch/pytorch#138522, as for torchtitan's rows); TFLOP/s un-halved as Meta's torchtitan counts; the all-gather-based CP timed as "
           "Megatron's ring (both hidden under the attention at 128K); Grand Teton hosts with "
           "400 Gb/s per GPU timed on DGX-H100 nodes (same GPU, NIC rate)")


def llama3_rows() -> list[PublicRow]:
    """Table 4's three rows (GPUs, CP, DP, sequence, TFLOP/s per GPU), TP 8 and PP 16 on all."""
    out = []
    for gpus, cp, dp, seq, tflops in ((8192, 1, 64, 8192, 430), (16384, 1, 128, 8192, 400),
                                      (16384, 16, 8, 131072, 380)):
        assert 8 * 16 * cp * dp == gpus
        out.append(PublicRow(LLAMA3, f"Llama 3 405B TP8 CP{cp} PP16 DP{dp}, seq {seq // 1024}K, "
                             f"{gpus:,} H100", "llama-3-405b", "dgx-h100", gpus // 8, tflops,
                             unit="tflops:unhalved", tp=8, pp=16, cp=cp, vp=4, zero=1, seq=seq,
                             gbs=16 * 1024 * 1024 // seq, kernel="fa2", assumed=_L3_ASM))
    return out
