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
TT_MOE = (f"torchtitan torchtitan/components/quantization/mxfp8.md @ b5bcd76c6, MoE models ({_FP} "
          "7.4)")
_SCOUT = ("model not in the catalog (Llama4 Scout: 16 routed experts and a shared one, chunked "
          "local attention on three of four layers); the table says 512 GPUs on 64 nodes where "
          "its configuration says 64 nodes of 4, 256; tokens/s per GPU, local batch 10 at "
          "8,192, no AC, compile")
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
        # the same page's "MoE models" table @ b5bcd76c6 (L172-198): Llama4 Scout on GB200
        *(r(TT_MOE, f"GB200 Llama4 Scout FSDP 256 EP 16, {p}, 256 GPUs (torchtitan)",
            "llama-4-scout", "gb200-nvl72", 4, tps, seq=8192, mbs=10, zero=3, ep=16,
            framework="torchtitan", why_not=_SCOUT)
          for p, tps in (("bf16", 6169.0), ("mxfp8", 7401.0))),
    ]


# torchtitan's NVFP4 page (torchtitan/components/quantization/nvfp4.md @ b5bcd76c6): eager +
# torch.compile runs of 200M tokens, FSDP 4, sequence 2,048, tokens/s per GPU and torchtitan's
# peak reserved memory (components/metrics.py L44-47, L58-59, L68-70: max reserved over
# torch's total_memory). The GPU is not named ("Blackwell SM100 or later"): 174.49 GiB at
# 94.7% and 78.63 GiB at 42.67% both put the device at 184.3 GiB, which is GB200's (the total
# nvidia-smi prints for it in public GPU listings, 189,471 MiB = 185.0 GiB, less the driver's
# reserve; for B200 183,359 MiB = 179.1 GiB, GB300 284,208 MiB: observed totals, not datasheet
# figures, which give none of them) and the usage line launches 4 GPUs, one GB200 compute tray:
# GB200, assumed.
TT_NVFP4 = f"torchtitan torchtitan/components/quantization/nvfp4.md @ b5bcd76c6 ({_FP} 7.4)"
_NV_GPU = ("GB200 from the memory columns (174.49 GiB = 94.7% of 184.3 GiB, GB200's capacity as "
           "nvidia-smi reports it in public listings; B200 179.1 GiB, GB300 277.5 GiB) and the "
           "4-GPU launch (one compute tray), assumed")
_NV_ASM = ("llama3_8b (models/llama3/config_registry.py L194-226 @ b5bcd76c6): per-op selective "
           "AC (L221), compile; local batch 32 x 2,048 tokens (the page's command, "
           "num_tokens_per_microbatch_per_dp_rank 65536), global batch 128; FlexAttention with "
           "the model's mask (attn_backend flex, models/llama3/__init__.py L371) timed as the "
           "catalog's kernel (about 4% of the FLOPs at 2,048 tokens); the chunked loss "
           "(ChunkedLossWrapper, L196) timed as the tool's native loss; op SAC's saved outputs "
           "counted on the profile's v0.2.2 block (wq, wv: memory.op_sac_layer_bytes), where "
           "this commit fuses QKV (models/llama3/__init__.py L257, fuse_qkv) and saves wqkv, "
           "+0.5 h bytes a token and layer (4.3 GB here), not modelled; " + _NV_GPU)
# ChunkedLossWrapper (components/loss.py L501-548 @ b5bcd76c6): the LM head and the loss run on
# one of 8 token chunks at a time, each chunk's backward before the next, so the loss holds an
# eighth of the logits the unchunked path does: the profile's 10 bytes per logit / 8
_CHUNKED = (("logits_bytes", 10 / 8),)
# scored, not fitted: the GB200 group is fitted on FP8 rows (validate_loso.py), and one BF16
# row would fit its curve on one case
_NV_UNFIT = ("the first dense BF16 GB200 rows: scored as a check of the FP8-fitted GB200 curve, "
             "not training rows of it (one source would fit it on one case)")
_NV_TAIL = ("torchao's NVFP4 prototype on the first 85% of the layers, the last 15% and the LM "
            "head in BF16 (nvfp4_bf16_tail_fqns): the tool's nvfp4 is Transformer Engine's on "
            "every layer")
# the Qwen3 8B runs start from sft_qwen3_8b_math (models/qwen3/config_registry.py L462-518 @
# b5bcd76c6: per-op SAC, the chunked loss, varlen attention) with C4 and a random start
_NV_Q3 = ("sft_qwen3_8b_math (models/qwen3/config_registry.py L462-518 @ b5bcd76c6): per-op "
          "selective AC, the chunked loss (ChunkedLossWrapper) timed as the tool's native loss; "
          "varlen attention over the packed C4 documents timed as causal over the 2,048 tokens "
          "(an upper bound; about 4% of the FLOPs); local batch 16 x 2,048, global 64; fused "
          "QKV (models/qwen3/__init__.py L385) not modelled, as for Llama; " + _NV_GPU)


def tt_nvfp4_rows() -> list[PublicRow]:
    """The NVFP4 page's two tables (L81-85, L103-107): Llama 3 8B and Qwen3 8B in BF16 run (with
    their peak memory); their MXFP8 (torchao's) and NVFP4 (bf16 tail) runs are listed."""
    llama = dict(model="llama-3-8b", mbs=32, gbs=128, assumed=_NV_ASM)
    qwen = dict(model="qwen3-8b", mbs=16, gbs=64, assumed=_NV_Q3)
    common = dict(node="dgx-b200", gpu="gb200", nodes=1, gpus_per_node=4, zero=3, seq=2048,
                  framework="torchtitan", recompute="selective", assume=_CHUNKED)
    recipes = (("BF16", dict(unfitted=_NV_UNFIT)), ("MXFP8", dict(why_not=_MX)),
               ("NVFP4 (bf16 tail)", dict(why_not=_NV_TAIL)))
    # (tokens/s per GPU, peak reserved GiB) per recipe, as the tables give them
    runs = (("Llama 3 8B", llama, ((21919.0, 174.49), (28084.0, 179.94), (30040.0, 110.95))),
            ("Qwen3 8B", qwen, ((20913.0, 112.88), (27587.0, 112.63), (26732.0, 78.63))))
    return [PublicRow(TT_NVFP4, f"GB200 {name} FSDP 4, {recipe}, 4 GPUs (torchtitan nvfp4.md)",
                      published=tps, mem_gib=mem, **how, **shape, **common)
            for name, shape, figures in runs
            for (recipe, how), (tps, mem) in zip(recipes, figures)]


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
