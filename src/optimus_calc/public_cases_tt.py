"""torchtitan's dense B200 table: ``torchtitan/components/quantization/mxfp8.md`` "Performance",
"Dense Models" (copied from torchao's MX formats benchmarks), the one published dense BF16
training row on Blackwell the project has found (issue 32 item 8). Data only:
validate_public.py runs them (public_cases.public_rows).

The table (L157-168 @ 5b5f578a4): Llama 3 8B on one node of 8 "power limited" B200, FSDP2,
local batch 1, sequence 8,192, 100 steps, torch.compile, per-op selective AC, torchtitan
6fc499f6f: median tokens/s (torchtitan's per-device ``tps``) and peak memory per scaling method.
At that commit torchtitan puts cuDNN first among SDPA's backends from compute capability 10.0
(torchtitan/models/attention.py L200-211 @ 6fc499f6f): the B200 catalog's default kernel.
"""

from __future__ import annotations

from optimus_calc.public_row import FP as _FP
from optimus_calc.public_row import PublicRow

TT_B200 = (f"torchtitan torchtitan/components/quantization/mxfp8.md @ 5b5f578a4, Dense Models "
           f"({_FP} 7.4)")
_ASM = ("the power limit is not published: the catalog's B200 (1,000 W), assumed; per-op SAC as "
        "selective recompute (llama3_8b.toml L56-57 @ 6fc499f6f); compile folded in; peak "
        "memory in GiB as torchtitan's memory monitor logs it (the table says GB)")
# torchtitan's own A100 table (docs/performance.md, "Llama 3 performance numbers" and "Llama 2
# performance numbers", @ 157a12c; read in a fork's copy before round 23): FSDP2 over 64 A100
# 80GB, WPS (tokens/s) per GPU; Llama 3 at seq 8,192 (public_cases._torchtitan_other), Llama 2
# at 4,096 (below), "local batch size 2 (global batch size 128)" but the 70B's first row
TT_A100 = f"torchtitan docs/performance.md @ 157a12c ({_FP} 7.4)"
# the same file @ 4d88a8a44: Llama 3.1 405B on 128 H100 "HBM2e based lower TDP SXM H100(95GB)"
# (its footnote 1), FSDP 16 x TP 8, local batch 2 (global 32), full AC
TT_405 = f"torchtitan docs/performance.md @ 4d88a8a44 ({_FP} 7.4)"
TT_AO = ("pytorch/ao torchao/prototype/mx_formats/README.md @ 4446ad91b, Training e2e benchmarks "
         f"on NVIDIA B200 (the table torchtitan's copies; {_FP} 7.4)")
# scored, but no training row of the B200 group's fit: an unknown power cap would pull the curve
# that every other B200 / B300 source is predicted from (a cold review's finding, round 23)
_CAP = ("the power limit is not published: not a training row of the B200 curve's fit (the "
        "cap would pull it for every other source)")
_MX = ("torchao's MXFP8 (cuBLAS block-scaled GEMMs, casts by torch.compile): the tool's mxfp8 "
       "recipe is Transformer Engine's, whose casts and ratio are not torchao's")


def tt_b200_rows() -> list[PublicRow]:
    """The table's four rows as published: BF16 and float8 tensorwise (torchao's recipe, its
    FP8 all-gather) run; the two MXFP8 rows are listed, as is torchao's float8 rowwise row."""
    r = PublicRow
    base = dict(model="llama-3-8b", node="dgx-b200", nodes=1, mbs=1, seq=8192,
                framework="torchtitan", zero=3, recompute="selective", assumed=_ASM,
                unfitted=_CAP)
    return [
        r(TT_B200, "B200 Llama 3 8B FSDP 8, bf16, 8 GPUs (torchtitan)", published=8307.5,
          mem_gib=33.71, **base),
        r(TT_B200, "B200 Llama 3 8B FSDP 8, float8 tensorwise, 8 GPUs (torchtitan)",
          published=10417.0, mem_gib=33.38, precision="fp8", fp8_recipe="torchao", **base),
        r(TT_B200, "B200 Llama 3 8B FSDP 8, mxfp8_cublas, 8 GPUs (torchtitan)",
          published=9969.0, mem_gib=33.88, why_not=_MX, **base),
        r(TT_B200, "B200 Llama 3 8B FSDP 8, mxfp8_cublas_rceil, 8 GPUs (torchtitan)",
          published=9642.0, mem_gib=33.88, why_not=_MX, **base),
        # the row torchtitan's copy leaves out
        r(TT_AO, "B200 Llama 3 8B FSDP 8, float8 rowwise, 8 GPUs (torchao)", published=8640.5,
          mem_gib=33.72, why_not="float8 rowwise scaling is not a recipe of the tool", **base),
    ]


def tt_a100_llama2_rows() -> list[PublicRow]:
    """The Llama 2 table's five rows: 13B with no, selective-layer and selective-op AC, 70B
    with selective-op AC (local batch 1) and full AC (local batch 2)."""
    r = PublicRow
    base = dict(node="dgx-a100", nodes=8, seq=4096, framework="torchtitan", zero=3, kernel="fa2")
    layer = ("layer AC every other layer taken as full recompute (the tool has layer-wise AC "
             "only as full), as the Llama 3 8B row")
    return [
        r(TT_A100, "Llama 2 13B 64 A100 FSDP, local batch 2, no AC", "llama-2-13b",
          published=2162, mbs=2, **base),
        r(TT_A100, "Llama 2 13B 64 A100 FSDP, local batch 2, selective layer AC", "llama-2-13b",
          published=1914, mbs=2, recompute="full", assumed=layer, **base),
        r(TT_A100, "Llama 2 13B 64 A100 FSDP, local batch 2, selective op AC", "llama-2-13b",
          published=1904, mbs=2, recompute="selective", **base),
        r(TT_A100, "Llama 2 70B 64 A100 FSDP, local batch 1, selective op AC", "llama-2-70b",
          published=355, mbs=1, recompute="selective", **base),
        r(TT_A100, "Llama 2 70B 64 A100 FSDP, local batch 2, full AC", "llama-2-70b",
          published=353, mbs=2, recompute="full", **base),
    ]


def tt_405b_rows() -> list[PublicRow]:
    """The 405B table's three rows: bf16 and Float8 (torchao, tensorwise with the FP8
    all-gather of train_configs/llama3_405b.toml L57-60 @ 4d88a8a44), and Float8 with async TP."""
    r = PublicRow
    base = dict(model="llama-3-405b", node="grand-teton-h100", nodes=16, tp=8, zero=3, mbs=2,
                seq=8192, recompute="full", framework="torchtitan",
                assumed="seq 8192 (the 405B config); compile folded into Float8")
    return [
        r(TT_405, "Llama 3.1 405B FSDP 16 TP 8, 128 H100 (docs/performance.md)", published=109,
          **base),
        r(TT_405, "Llama 3.1 405B FSDP 16 TP 8, Float8, 128 H100 (docs/performance.md)",
          published=177, precision="fp8", fp8_recipe="torchao", **base),
        r(TT_405, "Llama 3.1 405B FSDP 16 TP 8, Float8 + async TP, 128 H100 "
          "(docs/performance.md)", published=185, precision="fp8", fp8_recipe="torchao",
          async_tp=True, **base),
    ]
