"""The Megatron-Bridge pre-training rows of releases 26.02 to 26.08 (docs/reference/
framework-physics.md 7.2/7.3), every row of the tables, with the settings of the scripts that
ran them. Data only: validate_public.py runs them (public_cases.public_rows).

The tables: Megatron-Bridge docs/performance-summary-archive.md @ 067f987df, sections "26.02",
"26.02.01", "26.04", "26.04.01", "26.06", "26.06.01" NeMo Container, and docs/performance-
summary.md @ 067f987df, "26.08" (Pre-Training Performance only: the 26.06 SFT table is fine-
tuning on packed sequences and its LoRA table adapters, neither a pre-training step; not
listed). Three 26.02 rows are cases already (public_cases._megatron_dense, MB26: GB200 Llama3
70B MXFP8 3,613 and FP8 FSDP 4,040, H100 70B 1,621) and are not repeated here.

Precision per cell: FP8 is per-tensor current scaling (the scripts' FP8_CS configs; ``CS``),
MXFP8 Transformer Engine's MXFP8 recipe (``MXR``), NVFP4 its NVFP4 recipe (``NV4``:
Megatron-Bridge's bf16_with_nvfp4_mixed, FP4 parameters gathered from 26.04), BF16 plain.
Kimi-K2 runs as a public shape (public_cases_mb26_bw.SHAPES); Nemotron 3 (Nano, Super,
Ultra), Nemotron 3.5 Lightning and DeepSeek-V4 Flash are not in the catalog (listed). GB200 and GB300 rows run on their racks (gpu="gb200" or
"gb300"; public_cases._on_nvl72), B300 rows on dgx-b300 nodes; the MoE rows run their
release's config (dispatcher, CUDA graphs, overlap): public_cases_mb26_moe.py reads the H100,
B200 and GB200 ones, public_cases_mb26_bw.py the GB300 and B300 ones.

The settings: the scripts at the first tag whose docs/performance-summary.md carries the
release as its newest (_TAG; assumed to be the container's Megatron-Bridge), files
scripts/performance/configs/<family>/<family>_workload_base_configs.py (the V2 config for
Llama3.1 405B, DeepSeek-V3, GPT-OSS and Qwen3-235B, whose global batches the tables give; V1
for Qwen3-30B), from 26.06.01 src/megatron/bridge/perf_recipes/<family>/<gpu>/. Where the
table and the script disagree, the table's layout is run and ``assumed`` says so. Every MoE
table runs force-balanced dropless routing (the tables' footnote): no ``drop_pad``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from optimus_calc.public_cases_mb26_bw import SHAPES, bw_settings
from optimus_calc.public_cases_mb26_moe import DEEP, HEP, moe_settings
from optimus_calc.public_row import CS, FP, MEG, MXR, NV4, PublicRow

# one publication per release (validate_loso.fold_of: the text before the parenthesis), the
# 26.02 rows with public_cases.MB26's: each release was docs/performance-summary.md's newest
_SRC = ("Megatron-Bridge docs/performance-summary.md, release {r} (docs/performance-summary{a}"
        f".md @ 067f987df; {FP} 7.2, 7.3)")
# release -> the tag (commit) whose scripts ran it, assumed (the newest release of its docs)
_TAG = {"26.02": "v0.3.0 (21b02e0cf)", "26.02.01": "v0.4.0 (0fbfe7d3e)",
        "26.04": "26.04-alpha.rc2 (fd5c4737f)", "26.04.01": "v0.4.2 (c81012934)",
        "26.06": "v0.5.0 (fcbb60311)", "26.06.01": "381d0b825", "26.08": "v0.6.0 (51885cf13)"}
_MODEL = {"l70": "llama-3-70b", "l405": "llama-3-405b", "dsv3": "deepseek-v3",
          "oss": "gpt-oss-120b", "q30": "qwen3-30b-a3b", "q235": "qwen3-235b-a22b",
          "Kimi-K2": "shape:kimi-k2"}
_GB = "64 GPUs per {g} NVL72 rack ({n}-nvl72), assumed"
_DENSE = "recompute none and the distributed optimizer (the recipes' defaults)"
_ROUTING = "force-balanced dropless routing (the tables' footnote)"
_DDP = "distributed optimizer with overlapped grad reduce and param gather (the recipe)"
_OWN_DDP = {"Kimi-K2"}  # Muon's DDP, said in its settings (public_cases_mb26_bw._KIMI)
_CAT = "model not in the catalog ({m})"
# what the tool lacks for the models it cannot express: NemotronH's Mamba-2 layers (the configs
# put "mamba" in cuda_graph_scope: nemotronh/nemotron_3_workload_base_configs.py L39 @ v0.4.0;
# models/nemotronh/nemotron_h_bridge.py L241 maps hybrid_override_pattern) and DeepSeek-V4's
# compressed sparse attention and hyper-connections (models/deepseek/deepseek_v4_bridge.py
# L31, L58-59, L94-98 @ v0.6.0)
MAMBA = ("model not in the catalog ({m}): a hybrid of Mamba-2, attention and MoE layers "
          "(NemotronH); the tool has no Mamba layer")
_ARCH = {"Nemotron 3 Nano": MAMBA, "Nemotron 3 Super": MAMBA, "Nemotron 3 Ultra": MAMBA,
         "DeepSeek-V4 Flash": "model not in the catalog ({m}): its compressed sparse attention "
                              "and hyper-connections are not modelled"}


# dense GB300 rows whose table and config disagree (the table's layout runs):
# llama3_workload_base_configs.py and llama31_workload_base_configs.py @ v0.4.0 (26.02.01)
_GB300_TABLE = {("26.02.01", "l70", "MXFP8"): "the table's VP 1 and micro-batch 2 (the config "
                "LLAMA3_70B_PRETRAIN_CONFIG_GB300_FP8_MX_V2 runs PP 4 VP 5, micro-batch 1); ",
                ("26.02.01", "l405", "FP8"): "the table's TP 2 CP 2 (the config LLAMA31_405B_"
                "PRETRAIN_CONFIG_GB300_FP8_CS_V2 runs TP 4 PP 8 VP 4); "}


def _recipe(prec: str) -> dict:
    """The table's precision column as the tool's flags (FP8 is current scaling)."""
    return {"BF16": {}, "MXFP8": MXR, "NVFP4": NV4}.get(prec, CS)
def _dense(rel: str, gpu: str, model: str, prec: str, fsdp: int) -> tuple[str, dict]:
    if gpu == "GB300" and (rel, model, prec) in _GB300_TABLE:
        asm, kw = _dense(rel, "GB200", model, prec, fsdp)
        return _GB300_TABLE[rel, model, prec] + asm, kw
    if fsdp:
        n = 20 if gpu == "GB300" else 40  # llama3_workload_base_configs.py @ v0.3.0 FP8_CS_V2
        return (f"Megatron FSDP (use_megatron_fsdp), micro-batch 2; activation offload of {n} "
                f"layers (cpu_offloading_num_layers {n}) not modelled: assumed hidden behind "
                "compute", dict(framework="megatron", zero=3, **CS))
    return _DENSE, dict(**_recipe(prec), **MEG)



# Rows the table itself marks as a known performance regression: 26.06.01's GPT-OSS 120B
# figures carry the footnote [^gpt-oss-note] (docs/performance-summary-archive.md L57-58, L90
# @ 067f987df), NVIDIA/cudnn-frontend issue #256: the cuteDSL grouped GEMM dGLU kernel
# (grouped_gemm_dglu_wrapper_sm100) became 10x slower from cudnn-frontend 1.24.0, which the
# footnote says the next container fixes. They measure a defect, not the stack the tool
# times (26.06 and 26.08 on the same configs publish 1.6x more).
REGRESSION = ("the table marks it as a known performance regression (footnote gpt-oss-note: "
              "NVIDIA/cudnn-frontend issue #256, the grouped GEMM dGLU kernel 10x slower from "
              "cudnn-frontend 1.24.0), not the software the tool times")
_REGRESSED = {("26.06.01", "oss")}
# bf16_with_nvfp4_mixed gathers no FP4 parameters before 26.04 (fp8_param_gather False and no
# fp4_param_gather: training/mixed_precision.py L402 @ v0.3.0, L407 @ v0.4.0; fp4_param_gather
# True from L422 @ 26.04-alpha.rc2): the 16-bit weights are gathered (--no-fp8-param-gather)
_NO_FP4_GATHER = ("no FP4 parameter gather (bf16_with_nvfp4_mixed sets fp8_param_gather False "
                  "and fp4_param_gather only from 26.04: training/mixed_precision.py L402 @ "
                  "v0.3.0, L422 @ 26.04-alpha.rc2)")
# a table layout that cannot have run: 26.02.01's GB300 Llama 3 70B NVFP4 cell says TP 1 PP 1
# without FSDP (micro-batch 2), 684 GB per GPU (`optimus-calc memory llama-3-70b --node
# gb300-nvl72 --gpus-per-node 64 --tp 1 --pp 1 --zero 1 --micro-batch 2 --seq-len 8192
# --global-batch 256 --precision nvfp4 --framework megatron`) on a 279 GB GPU; the release's
# config runs PP 4 VP 5, micro-batch 1 (LLAMA3_70B_PRETRAIN_CONFIG_GB300_NVFP4_V2,
# scripts/performance/configs/llama/llama3_workload_base_configs.py L225-231 @ v0.4.0)
_IMPOSSIBLE = {("26.02.01", "GB300", "l70", "NVFP4"): (
    "the table's layout cannot run: TP 1 PP 1 without FSDP needs 684 GB per GPU on a 279 GB "
    "GB300 (optimus-calc memory); the release's config runs PP 4 VP 5, micro-batch 1 "
    "(LLAMA3_70B_PRETRAIN_CONFIG_GB300_NVFP4_V2 @ v0.4.0)")}


def _why_not(rel: str, model: str, prec: str, gpu: str = "") -> str:
    if model not in _MODEL:
        return _ARCH.get(model, _CAT).format(m=model)
    if (rel, gpu, model, prec) in _IMPOSSIBLE:
        return _IMPOSSIBLE[rel, gpu, model, prec]
    if (rel, model) in _REGRESSED:
        return REGRESSION
    return ""


def _row(rel, gpu, model, prec, gpus, gbs, mbs, seq, fsdp, tp, pp, cp, vp, ep,
         tps) -> PublicRow:
    src = _SRC.format(a="" if rel == "26.08" else "-archive", r=rel)
    lay = ("FSDP" if fsdp else f"TP{tp} PP{pp}" + (f" CP{cp}" if cp > 1 else "")
           + (f" VP{vp}" if vp > 1 else "")) + (f" EP{ep}" if ep > 1 else "")
    label = f"{gpu} {_MODEL.get(model, model).removeprefix('shape:')} {prec} {lay}, " \
            f"{gpus} GPUs ({rel})"
    node = {"H100": "dgx-h100", "B300": "dgx-b300"}.get(gpu, "dgx-b200")
    where = dict(node=node, nodes=max(1, gpus // 8),
                 tp=tp, pp=pp, cp=cp, vp=vp, ep=ep, seq=seq, gbs=gbs, mbs=mbs)
    why = _why_not(rel, model, prec, gpu)
    if not why and ep > 1:
        why, asm, kw = (bw_settings(rel, gpu, model, ep) if gpu in ("GB300", "B300") else
                        moe_settings(rel, gpu, model, ep, pp))
        disp = "hybridep" if HEP in asm else "deepep" if DEEP in asm else "alltoall"
        kw = dict(etp=1, dispatcher=disp, **kw,
                  **_recipe(prec),
                  **MEG)
        asm = "; ".join([asm, _ROUTING] + ([] if model in _OWN_DDP else [_DDP]))
    elif not why:
        asm, kw = _dense(rel, gpu, model, prec, fsdp)
        if prec == "NVFP4" and rel in ("26.02", "26.02.01"):
            asm, kw = asm + "; " + _NO_FP4_GATHER, dict(kw, fp8_param_gather=False)
    if why:
        return PublicRow(src, label, model, published=tps, why_not=why, **where)
    if gpu in ("GB200", "GB300"):
        where["gpu"], asm = gpu.lower(), asm + "; " + _GB.format(g=gpu, n=gpu.lower())
    asm = f"Megatron-Bridge @ {_TAG[rel]} performance configs: " + asm
    return PublicRow(src, label, _MODEL[model], published=tps, assumed=asm, **where, **kw)


def mb26_rows() -> list[PublicRow]:
    """Every pre-training row of the seven tables in release order (ROWS); a label two rows
    share (26.06's GB300 DeepSeek-V3 at GBS 4096 and 15360) names the global batch."""
    rows = [_row(*r) for r in ROWS]
    n = Counter(r.label for r in rows)
    return [replace(r, label=r.label.replace(" GPUs (", f" GPUs, GBS {r.gbs} ("))
            if n[r.label] > 1 else r for r in rows]


# (release, system, model, precision, GPUs, GBS, MBS, sequence, FSDP, TP, PP, CP, VP, EP,
# tokens/s/GPU) as published; VP and EP "n/a" are 1. The three 26.02 rows already cases
# (public_cases.MB26) are left out.
ROWS = [
    ("26.02", "GB300", "l70", "NVFP4", 64, 256, 1, 8192, 0, 1, 4, 1, 5, 1, 6798),
    ("26.02", "GB200", "l70", "NVFP4", 64, 256, 1, 8192, 0, 2, 4, 1, 5, 1, 4458),
    ("26.02", "GB300", "l70", "MXFP8", 64, 256, 1, 8192, 0, 1, 4, 1, 5, 1, 4596),
    ("26.02", "GB300", "l70", "FP8", 64, 256, 2, 8192, 64, 1, 1, 1, 1, 1, 5003),
    ("26.02", "GB300", "l405", "NVFP4", 256, 1536, 1, 8192, 0, 4, 8, 1, 4, 1, 1333),
    ("26.02", "GB200", "l405", "NVFP4", 256, 1536, 1, 8192, 0, 4, 16, 1, 8, 1, 1076),
    ("26.02", "GB300", "l405", "MXFP8", 256, 1536, 1, 8192, 0, 2, 8, 2, 4, 1, 931),
    ("26.02", "GB200", "l405", "MXFP8", 256, 1536, 1, 8192, 0, 4, 16, 1, 8, 1, 786),
    ("26.02", "GB300", "l405", "FP8", 256, 1536, 1, 8192, 0, 4, 8, 1, 4, 1, 988),
    ("26.02", "GB200", "l405", "FP8", 256, 1536, 1, 8192, 0, 4, 16, 1, 4, 1, 793),
    ("26.02", "H100", "l405", "FP8", 1024, 1536, 1, 8192, 0, 8, 8, 2, 8, 1, 311),
    ("26.02", "GB300", "dsv3", "MXFP8", 256, 4096, 2, 4096, 0, 1, 2, 1, 8, 32, 4612),
    ("26.02", "GB200", "dsv3", "MXFP8", 256, 4096, 1, 4096, 0, 1, 4, 1, 4, 64, 3955),
    ("26.02", "B300", "dsv3", "MXFP8", 256, 4096, 1, 4096, 0, 1, 16, 1, 1, 8, 2983),
    ("26.02", "B200", "dsv3", "MXFP8", 256, 4096, 1, 4096, 0, 1, 16, 1, 1, 8, 2689),
    ("26.02", "GB300", "oss", "BF16", 64, 1280, 4, 4096, 0, 1, 1, 1, 1, 64, 19412),
    ("26.02", "GB200", "oss", "BF16", 64, 1280, 4, 4096, 0, 1, 1, 1, 1, 64, 15784),
    ("26.02", "B300", "oss", "BF16", 64, 1280, 4, 4096, 0, 1, 1, 1, 1, 64, 8359),
    ("26.02", "B200", "oss", "BF16", 64, 1280, 4, 4096, 0, 1, 1, 1, 1, 64, 8047),
    ("26.02", "H100", "oss", "BF16", 64, 1280, 1, 4096, 0, 1, 4, 1, 1, 8, 5993),
    ("26.02", "GB300", "q30", "MXFP8", 8, 512, 8, 4096, 0, 1, 1, 1, 1, 8, 30376),
    ("26.02", "GB200", "q30", "MXFP8", 8, 512, 4, 4096, 0, 1, 1, 1, 1, 8, 26084),
    ("26.02", "B300", "q30", "MXFP8", 8, 512, 8, 4096, 0, 1, 1, 1, 1, 8, 29521),
    ("26.02", "B200", "q30", "MXFP8", 8, 512, 1, 4096, 0, 1, 1, 1, 1, 8, 9691),
    ("26.02", "H100", "q30", "FP8", 16, 1024, 1, 4096, 0, 1, 2, 1, 12, 8, 5113),
    ("26.02", "GB300", "q235", "MXFP8", 256, 8192, 2, 4096, 0, 1, 4, 1, 1, 32, 6583),
    ("26.02", "GB200", "q235", "MXFP8", 256, 8192, 1, 4096, 0, 1, 8, 1, 1, 32, 5448),
    ("26.02", "B300", "q235", "MXFP8", 256, 8192, 1, 4096, 0, 1, 8, 1, 4, 8, 2691),
    ("26.02", "B200", "q235", "MXFP8", 256, 8192, 1, 4096, 0, 1, 8, 1, 1, 8, 3805),
    ("26.02", "H100", "q235", "FP8", 256, 8192, 1, 4096, 0, 2, 8, 1, 4, 32, 1633),
    ("26.02.01", "GB300", "l70", "NVFP4", 64, 256, 2, 8192, 0, 1, 1, 1, 1, 1, 7002),
    ("26.02.01", "GB200", "l70", "NVFP4", 64, 256, 1, 8192, 0, 2, 4, 1, 5, 1, 4557),
    ("26.02.01", "GB300", "l70", "MXFP8", 64, 256, 2, 8192, 0, 1, 4, 1, 1, 1, 4798),
    ("26.02.01", "GB200", "l70", "MXFP8", 64, 256, 1, 8192, 0, 2, 4, 1, 5, 1, 3837),
    ("26.02.01", "GB300", "l70", "FP8", 64, 256, 2, 8192, 64, 1, 1, 1, 1, 1, 5243),
    ("26.02.01", "GB200", "l70", "FP8", 64, 256, 2, 8192, 64, 1, 1, 1, 1, 1, 4357),
    ("26.02.01", "H100", "l70", "FP8", 64, 256, 1, 8192, 0, 4, 8, 1, 5, 1, 1639),
    ("26.02.01", "GB300", "l405", "NVFP4", 256, 1536, 1, 8192, 0, 4, 8, 1, 4, 1, 1358),
    ("26.02.01", "GB200", "l405", "NVFP4", 256, 1536, 1, 8192, 0, 4, 16, 1, 4, 1, 1083),
    ("26.02.01", "GB300", "l405", "MXFP8", 256, 1536, 1, 8192, 0, 2, 8, 2, 4, 1, 949),
    ("26.02.01", "GB200", "l405", "MXFP8", 256, 1536, 1, 8192, 0, 4, 16, 1, 8, 1, 775),
    ("26.02.01", "GB300", "l405", "FP8", 256, 1536, 1, 8192, 0, 2, 8, 2, 4, 1, 1024),
    ("26.02.01", "GB200", "l405", "FP8", 256, 1536, 1, 8192, 0, 4, 16, 1, 4, 1, 818),
    ("26.02.01", "GB300", "dsv3", "MXFP8", 256, 4096, 2, 4096, 0, 1, 2, 1, 8, 32, 4691),
    ("26.02.01", "GB200", "dsv3", "MXFP8", 256, 4096, 1, 4096, 0, 1, 4, 1, 4, 64, 4021),
    ("26.02.01", "B300", "dsv3", "MXFP8", 256, 4096, 1, 4096, 0, 1, 16, 1, 1, 8, 3099),
    ("26.02.01", "B200", "dsv3", "MXFP8", 256, 4096, 1, 4096, 0, 1, 16, 1, 1, 8, 2790),
    ("26.02.01", "GB300", "oss", "BF16", 64, 1280, 4, 4096, 0, 1, 1, 1, 1, 64, 19366),
    ("26.02.01", "GB200", "oss", "BF16", 64, 1280, 4, 4096, 0, 1, 1, 1, 1, 64, 15754),
    ("26.02.01", "B300", "oss", "BF16", 64, 1280, 4, 4096, 0, 1, 1, 1, 1, 8, 15031),
    ("26.02.01", "B200", "oss", "BF16", 64, 1280, 4, 4096, 0, 1, 1, 1, 1, 8, 13722),
    ("26.02.01", "H100", "oss", "BF16", 64, 1280, 1, 4096, 0, 1, 4, 1, 1, 8, 5984),
    ("26.02.01", "GB300", "q30", "MXFP8", 8, 512, 8, 4096, 0, 1, 1, 1, 1, 8, 30411),
    ("26.02.01", "GB200", "q30", "MXFP8", 8, 512, 4, 4096, 0, 1, 1, 1, 1, 8, 26373),
    ("26.02.01", "B300", "q30", "MXFP8", 8, 512, 8, 4096, 0, 1, 1, 1, 1, 8, 29454),
    ("26.02.01", "B200", "q30", "MXFP8", 8, 512, 4, 4096, 0, 1, 1, 1, 1, 8, 26695),
    ("26.02.01", "H100", "q30", "FP8", 16, 1024, 1, 4096, 0, 1, 2, 1, 12, 8, 9058),
    ("26.02.01", "GB300", "q235", "MXFP8", 256, 8192, 2, 4096, 0, 1, 4, 1, 1, 32, 6583),
    ("26.02.01", "GB200", "q235", "MXFP8", 256, 8192, 1, 4096, 0, 1, 8, 1, 1, 32, 5530),
    ("26.02.01", "B300", "q235", "MXFP8", 256, 8192, 1, 4096, 0, 1, 8, 1, 4, 8, 2644),
    ("26.02.01", "H100", "q235", "FP8", 256, 8192, 1, 4096, 0, 2, 8, 1, 4, 32, 1611),
    ("26.02.01", "GB300", "Nemotron 3 Nano", "MXFP8", 8, 512, 4, 8192, 0, 1, 1, 1, 1, 8, 37664),
    ("26.02.01", "GB200", "Nemotron 3 Nano", "MXFP8", 8, 512, 2, 8192, 0, 1, 1, 1, 1, 8, 33934),
    ("26.02.01", "B300", "Nemotron 3 Nano", "MXFP8", 8, 512, 4, 8192, 0, 1, 1, 1, 1, 8, 35861),
    ("26.02.01", "H100", "Nemotron 3 Nano", "FP8", 16, 1024, 1, 8192, 0, 1, 1, 1, 1, 8, 14890),
    ("26.02.01", "GB300", "Kimi-K2", "MXFP8", 256, 4096, 2, 4096, 0, 1, 4, 1, 4, 64, 5072),
    ("26.04", "GB300", "l70", "NVFP4", 64, 256, 1, 8192, 0, 1, 4, 1, 5, 1, 7397),
    ("26.04", "GB200", "l70", "NVFP4", 64, 256, 1, 8192, 0, 2, 4, 1, 5, 1, 4898),
    ("26.04", "GB300", "l70", "MXFP8", 64, 256, 1, 8192, 0, 1, 4, 1, 5, 1, 4742),
    ("26.04", "GB200", "l70", "MXFP8", 64, 256, 1, 8192, 0, 2, 4, 1, 5, 1, 3828),
    ("26.04", "GB300", "l70", "FP8", 64, 256, 2, 8192, 64, 1, 1, 1, 1, 1, 5243),
    ("26.04", "GB200", "l70", "FP8", 64, 256, 2, 8192, 64, 1, 1, 1, 1, 1, 4143),
    ("26.04", "H100", "l70", "FP8", 64, 256, 1, 8192, 0, 4, 8, 1, 5, 1, 1633),
    ("26.04", "GB300", "l405", "NVFP4", 256, 1536, 1, 8192, 0, 4, 8, 1, 4, 1, 1424),
    ("26.04", "GB200", "l405", "NVFP4", 256, 1536, 1, 8192, 0, 4, 16, 1, 8, 1, 1136),
    ("26.04", "GB300", "l405", "MXFP8", 256, 1536, 1, 8192, 0, 2, 8, 2, 4, 1, 968),
    ("26.04", "GB200", "l405", "MXFP8", 256, 1536, 1, 8192, 0, 4, 16, 1, 8, 1, 793),
    ("26.04", "GB300", "l405", "FP8", 256, 1536, 1, 8192, 0, 4, 8, 1, 4, 1, 1036),
    ("26.04", "GB200", "l405", "FP8", 256, 1536, 1, 8192, 0, 4, 16, 1, 4, 1, 842),
    ("26.04", "GB300", "dsv3", "MXFP8", 256, 4096, 2, 4096, 0, 1, 2, 1, 8, 32, 4965),
    ("26.04", "GB200", "dsv3", "MXFP8", 256, 4096, 1, 4096, 0, 1, 4, 1, 4, 64, 4193),
    ("26.04", "B300", "dsv3", "MXFP8", 256, 4096, 1, 4096, 0, 1, 16, 1, 1, 8, 3131),
    ("26.04", "B200", "dsv3", "MXFP8", 256, 4096, 1, 4096, 0, 1, 16, 1, 1, 8, 2815),
    ("26.04", "GB300", "oss", "BF16", 64, 1280, 4, 4096, 0, 1, 1, 1, 1, 64, 19275),
    ("26.04", "GB200", "oss", "BF16", 64, 1280, 4, 4096, 0, 1, 1, 1, 1, 64, 15938),
    ("26.04", "B300", "oss", "BF16", 64, 1280, 4, 4096, 0, 1, 1, 1, 1, 8, 15114),
    ("26.04", "B200", "oss", "BF16", 64, 1280, 4, 4096, 0, 1, 1, 1, 1, 8, 13045),
    ("26.04", "H100", "oss", "BF16", 64, 1280, 1, 4096, 0, 1, 4, 1, 1, 8, 5810),
    ("26.04", "GB300", "q30", "MXFP8", 8, 512, 8, 4096, 0, 1, 1, 1, 1, 8, 31470),
    ("26.04", "GB200", "q30", "MXFP8", 8, 512, 4, 4096, 0, 1, 1, 1, 1, 8, 26032),
    ("26.04", "B300", "q30", "MXFP8", 8, 512, 8, 4096, 0, 1, 1, 1, 1, 8, 30553),
    ("26.04", "B200", "q30", "MXFP8", 8, 512, 4, 4096, 0, 1, 1, 1, 1, 8, 26859),
    ("26.04", "H100", "q30", "FP8", 16, 1024, 1, 4096, 0, 1, 1, 1, 1, 16, 8901),
    ("26.04", "GB300", "q235", "MXFP8", 256, 8192, 2, 4096, 0, 1, 4, 1, 12, 32, 6994),
    ("26.04", "GB200", "q235", "MXFP8", 256, 8192, 1, 4096, 0, 1, 8, 1, 3, 32, 5672),
    ("26.04", "B300", "q235", "MXFP8", 256, 8192, 2, 4096, 0, 1, 8, 1, 1, 8, 4865),
    ("26.04", "H100", "q235", "FP8", 256, 8192, 1, 4096, 0, 2, 8, 1, 4, 32, 1686),
    ("26.04", "GB300", "Nemotron 3 Nano", "MXFP8", 8, 512, 4, 8192, 0, 1, 1, 1, 1, 8, 38102),
    ("26.04", "GB200", "Nemotron 3 Nano", "MXFP8", 8, 512, 2, 8192, 0, 1, 1, 1, 1, 8, 32727),
    ("26.04", "B300", "Nemotron 3 Nano", "MXFP8", 8, 512, 4, 8192, 0, 1, 1, 1, 1, 8, 35282),
    ("26.04", "H100", "Nemotron 3 Nano", "FP8", 16, 1024, 1, 8192, 0, 1, 1, 1, 1, 8, 14507),
    ("26.04", "GB300", "Nemotron 3 Super", "NVFP4", 64, 512, 1, 8192, 0, 1, 1, 1, 1, 64, 9623),
    ("26.04", "GB200", "Nemotron 3 Super", "NVFP4", 64, 512, 1, 8192, 0, 2, 1, 1, 1, 64, 6777),
    ("26.04", "B300", "Nemotron 3 Super", "NVFP4", 64, 512, 1, 8192, 0, 1, 1, 1, 1, 8, 7047),
    ("26.04", "B200", "Nemotron 3 Super", "NVFP4", 64, 512, 1, 8192, 0, 2, 1, 1, 1, 64, 5606),
    ("26.04", "GB300", "Nemotron 3 Super", "MXFP8", 64, 512, 1, 8192, 0, 1, 1, 1, 1, 64, 9243),
    ("26.04", "GB200", "Nemotron 3 Super", "MXFP8", 64, 512, 1, 8192, 0, 2, 1, 1, 1, 64, 6674),
    ("26.04", "B300", "Nemotron 3 Super", "MXFP8", 64, 512, 1, 8192, 0, 1, 1, 1, 1, 8, 7009),
    ("26.04", "B200", "Nemotron 3 Super", "MXFP8", 64, 512, 1, 8192, 0, 1, 1, 1, 1, 64, 6302),
    ("26.04", "GB300", "Kimi-K2", "MXFP8", 256, 4096, 2, 4096, 0, 1, 4, 1, 4, 64, 5332),
    ("26.04.01", "GB300", "l70", "FP8", 64, 256, 2, 8192, 64, 1, 1, 1, 1, 1, 5248),
    ("26.04.01", "GB300", "l70", "MXFP8", 64, 256, 1, 8192, 0, 1, 4, 1, 5, 1, 4864),
    ("26.04.01", "GB300", "l70", "NVFP4", 64, 256, 1, 8192, 0, 1, 4, 1, 5, 1, 7296),
    ("26.04.01", "GB200", "l70", "FP8", 64, 256, 2, 8192, 64, 1, 1, 1, 1, 1, 4224),
    ("26.04.01", "GB200", "l70", "MXFP8", 64, 256, 1, 8192, 0, 2, 4, 1, 5, 1, 3712),
    ("26.04.01", "GB200", "l70", "NVFP4", 64, 256, 1, 8192, 0, 2, 4, 1, 5, 1, 4864),
    ("26.04.01", "H100", "l70", "FP8", 64, 256, 1, 8192, 0, 4, 8, 1, 5, 1, 1664),
    ("26.04.01", "GB300", "l405", "FP8", 256, 1536, 1, 8192, 0, 4, 8, 1, 4, 1, 1024),
    ("26.04.01", "GB300", "l405", "MXFP8", 256, 1536, 1, 8192, 0, 2, 8, 2, 4, 1, 960),
    ("26.04.01", "GB300", "l405", "NVFP4", 256, 1536, 1, 8192, 0, 4, 8, 1, 4, 1, 1440),
    ("26.04.01", "GB200", "l405", "FP8", 256, 1536, 1, 8192, 0, 4, 16, 1, 4, 1, 864),
    ("26.04.01", "GB200", "l405", "MXFP8", 256, 1536, 1, 8192, 0, 4, 16, 1, 8, 1, 800),
    ("26.04.01", "GB200", "l405", "NVFP4", 256, 1536, 1, 8192, 0, 4, 16, 1, 8, 1, 1184),
    ("26.04.01", "H100", "l405", "FP8", 1024, 1536, 1, 8192, 0, 8, 8, 2, 8, 1, 328),
    ("26.04.01", "GB300", "dsv3", "MXFP8", 256, 4096, 2, 4096, 0, 1, 2, 1, 8, 32, 4992),
    ("26.04.01", "GB200", "dsv3", "MXFP8", 256, 4096, 1, 4096, 0, 1, 4, 1, 4, 64, 4256),
    ("26.04.01", "B300", "dsv3", "MXFP8", 256, 4096, 2, 4096, 0, 1, 8, 1, 1, 8, 3456),
    ("26.04.01", "B200", "dsv3", "MXFP8", 256, 4096, 1, 4096, 0, 1, 8, 1, 2, 32, 3328),
    ("26.04.01", "GB300", "oss", "BF16", 64, 1280, 4, 4096, 0, 1, 1, 1, 1, 64, 19200),
    ("26.04.01", "GB200", "oss", "BF16", 64, 1280, 4, 4096, 0, 1, 1, 1, 1, 64, 16640),
    ("26.04.01", "B300", "oss", "BF16", 64, 1280, 4, 4096, 0, 1, 1, 1, 1, 8, 15232),
    ("26.04.01", "B200", "oss", "BF16", 64, 1280, 4, 4096, 0, 1, 1, 1, 1, 8, 13568),
    ("26.04.01", "H100", "oss", "BF16", 64, 1280, 1, 4096, 0, 1, 4, 1, 1, 8, 5824),
    ("26.04.01", "GB300", "q30", "MXFP8", 8, 512, 8, 4096, 0, 1, 1, 1, 1, 8, 31744),
    ("26.04.01", "GB200", "q30", "MXFP8", 8, 512, 4, 4096, 0, 1, 1, 1, 1, 8, 26112),
    ("26.04.01", "B300", "q30", "MXFP8", 8, 512, 8, 4096, 0, 1, 1, 1, 1, 8, 30720),
    ("26.04.01", "B200", "q30", "MXFP8", 8, 512, 4, 4096, 0, 1, 1, 1, 1, 8, 27136),
    ("26.04.01", "H100", "q30", "FP8", 16, 1024, 1, 4096, 0, 1, 1, 1, 1, 16, 8960),
    ("26.04.01", "GB300", "q235", "MXFP8", 256, 8192, 2, 4096, 0, 1, 4, 1, 12, 32, 6944),
    ("26.04.01", "GB200", "q235", "MXFP8", 256, 8192, 1, 4096, 0, 1, 8, 1, 3, 32, 5680),
    ("26.04.01", "B300", "q235", "MXFP8", 256, 8192, 2, 4096, 0, 1, 8, 1, 1, 8, 5936),
    ("26.04.01", "B200", "q235", "MXFP8", 256, 8192, 1, 4096, 0, 1, 8, 1, 1, 8, 3776),
    ("26.04.01", "H100", "q235", "FP8", 256, 8192, 1, 4096, 0, 2, 8, 1, 4, 32, 1712),
    ("26.04.01", "GB300", "Kimi-K2", "MXFP8", 256, 4096, 2, 4096, 0, 1, 4, 1, 4, 64, 5328),
    ("26.04.01", "GB300", "Nemotron 3 Nano", "MXFP8", 8, 512, 4, 8192, 0, 1, 1, 1, 1, 8, 37888),
    ("26.04.01", "GB200", "Nemotron 3 Nano", "MXFP8", 8, 512, 2, 8192, 0, 1, 1, 1, 1, 8, 32768),
    ("26.04.01", "B300", "Nemotron 3 Nano", "MXFP8", 8, 512, 4, 8192, 0, 1, 1, 1, 1, 8, 35840),
    ("26.04.01", "B200", "Nemotron 3 Nano", "MXFP8", 8, 512, 2, 8192, 0, 1, 1, 1, 1, 8, 32768),
    ("26.04.01", "H100", "Nemotron 3 Nano", "FP8", 16, 1024, 1, 8192, 0, 1, 1, 1, 1, 8, 14336),
    ("26.04.01", "GB300", "Nemotron 3 Super", "MXFP8", 64, 512, 1, 8192, 0, 1, 1, 1, 1, 64, 9344),
    ("26.04.01", "GB300", "Nemotron 3 Super", "NVFP4", 64, 512, 1, 8192, 0, 1, 1, 1, 1, 64, 9600),
    ("26.04.01", "GB200", "Nemotron 3 Super", "MXFP8", 64, 512, 1, 8192, 0, 2, 1, 1, 1, 64, 6656),
    ("26.04.01", "GB200", "Nemotron 3 Super", "NVFP4", 64, 512, 1, 8192, 0, 2, 1, 1, 1, 64, 6784),
    ("26.04.01", "B300", "Nemotron 3 Super", "MXFP8", 64, 512, 1, 8192, 0, 1, 1, 1, 1, 8, 7296),
    ("26.04.01", "B300", "Nemotron 3 Super", "NVFP4", 64, 512, 1, 8192, 0, 1, 1, 1, 1, 8, 7424),
    ("26.04.01", "B200", "Nemotron 3 Super", "MXFP8", 64, 512, 1, 8192, 0, 1, 1, 1, 1, 64, 6400),
    ("26.04.01", "B200", "Nemotron 3 Super", "NVFP4", 64, 512, 1, 8192, 0, 2, 1, 1, 1, 64, 5632),
    ("26.06", "GB300", "l405", "FP8", 256, 1536, 1, 8192, 0, 4, 8, 1, 4, 1, 1048),
    ("26.06", "GB300", "l405", "MXFP8", 256, 1536, 1, 8192, 0, 2, 8, 2, 4, 1, 952),
    ("26.06", "GB300", "l405", "NVFP4", 256, 1536, 1, 8192, 0, 4, 8, 1, 4, 1, 1413),
    ("26.06", "GB200", "l405", "FP8", 256, 1536, 1, 8192, 0, 4, 16, 1, 4, 1, 843),
    ("26.06", "GB200", "l405", "MXFP8", 256, 1536, 1, 8192, 0, 4, 16, 1, 8, 1, 783),
    ("26.06", "GB200", "l405", "NVFP4", 256, 1536, 1, 8192, 0, 4, 16, 1, 8, 1, 1166),
    ("26.06", "H100", "l405", "FP8", 1024, 1536, 1, 8192, 0, 8, 8, 2, 8, 1, 326),
    ("26.06", "GB300", "dsv3", "MXFP8", 256, 4096, 1, 4096, 0, 1, 2, 1, 8, 32, 6338),
    ("26.06", "GB300", "dsv3", "MXFP8", 256, 15360, 1, 4096, 0, 1, 2, 1, 8, 32, 6422),
    ("26.06", "GB200", "dsv3", "MXFP8", 256, 4096, 1, 4096, 0, 1, 4, 1, 4, 64, 4969),
    ("26.06", "B300", "dsv3", "MXFP8", 256, 4096, 2, 4096, 0, 1, 8, 1, 1, 8, 3541),
    ("26.06", "GB300", "oss", "MXFP8", 64, 1280, 4, 4096, 0, 1, 1, 1, 1, 16, 33166),
    ("26.06", "GB200", "oss", "MXFP8", 64, 1280, 4, 4096, 0, 1, 1, 1, 1, 64, 28947),
    ("26.06", "B300", "oss", "MXFP8", 64, 1280, 4, 4096, 0, 1, 1, 1, 1, 8, 18534),
    ("26.06", "GB300", "q30", "MXFP8", 8, 512, 8, 4096, 0, 1, 1, 1, 1, 8, 45275),
    ("26.06", "GB200", "q30", "MXFP8", 8, 512, 4, 4096, 0, 1, 1, 1, 1, 8, 40706),
    ("26.06", "B300", "q30", "MXFP8", 8, 512, 8, 4096, 0, 1, 1, 1, 1, 8, 40769),
    ("26.06", "H100", "q30", "FP8", 16, 1024, 1, 4096, 0, 1, 1, 1, 1, 16, 8826),
    ("26.06", "GB300", "q235", "MXFP8", 256, 8192, 2, 4096, 0, 1, 4, 1, 12, 32, 9015),
    ("26.06", "GB200", "q235", "MXFP8", 256, 8192, 1, 4096, 0, 1, 8, 1, 3, 32, 7376),
    ("26.06", "GB300", "Kimi-K2", "MXFP8", 256, 4096, 2, 4096, 0, 1, 4, 1, 4, 64, 5372),
    ("26.06", "GB300", "Nemotron 3 Nano", "MXFP8", 8, 512, 4, 8192, 0, 1, 1, 1, 1, 8, 39749),
    ("26.06", "GB200", "Nemotron 3 Nano", "MXFP8", 8, 512, 2, 8192, 0, 1, 1, 1, 1, 8, 33522),
    ("26.06", "B300", "Nemotron 3 Nano", "MXFP8", 8, 512, 4, 8192, 0, 1, 1, 1, 1, 8, 37316),
    ("26.06", "H100", "Nemotron 3 Nano", "FP8", 16, 1024, 1, 8192, 0, 1, 1, 1, 1, 8, 14719),
    ("26.06", "GB300", "Nemotron 3 Super", "MXFP8", 64, 512, 1, 8192, 0, 1, 1, 1, 1, 64, 9652),
    ("26.06", "GB300", "Nemotron 3 Super", "NVFP4", 64, 512, 1, 8192, 0, 1, 1, 1, 1, 64, 9900),
    ("26.06", "GB200", "Nemotron 3 Super", "MXFP8", 64, 512, 1, 8192, 0, 2, 1, 1, 1, 64, 6742),
    ("26.06", "GB200", "Nemotron 3 Super", "NVFP4", 64, 512, 1, 8192, 0, 2, 1, 1, 1, 64, 6928),
    ("26.06", "B300", "Nemotron 3 Super", "MXFP8", 64, 512, 1, 8192, 0, 1, 1, 1, 1, 8, 7867),
    ("26.06", "B300", "Nemotron 3 Super", "NVFP4", 64, 512, 1, 8192, 0, 1, 1, 1, 1, 8, 8131),
    ("26.06.01", "GB300", "dsv3", "MXFP8", 256, 4096, 1, 4096, 0, 1, 2, 1, 8, 32, 6304),
    ("26.06.01", "GB200", "dsv3", "MXFP8", 256, 4096, 1, 4096, 0, 1, 4, 1, 4, 64, 4928),
    ("26.06.01", "GB300", "oss", "MXFP8", 64, 1280, 4, 4096, 0, 1, 1, 1, 1, 16, 20288),
    ("26.06.01", "GB200", "oss", "MXFP8", 64, 1280, 4, 4096, 0, 1, 1, 1, 1, 64, 18304),
    ("26.06.01", "GB300", "q30", "MXFP8", 8, 512, 8, 4096, 0, 1, 1, 1, 1, 8, 44544),
    ("26.06.01", "GB200", "q30", "MXFP8", 8, 512, 4, 4096, 0, 1, 1, 1, 1, 8, 40960),
    ("26.06.01", "GB300", "q235", "MXFP8", 256, 8192, 2, 4096, 0, 1, 4, 1, 12, 32, 9008),
    ("26.06.01", "GB200", "q235", "MXFP8", 256, 8192, 1, 4096, 0, 1, 8, 1, 3, 32, 7360),
    ("26.06.01", "GB300", "Nemotron 3 Nano", "MXFP8", 8, 512, 4, 8192, 0, 1, 1, 1, 1, 8, 40960),
    ("26.06.01", "GB200", "Nemotron 3 Nano", "MXFP8", 8, 512, 2, 8192, 0, 1, 1, 1, 1, 8, 34816),
    ("26.06.01", "GB300", "Nemotron 3 Super", "MXFP8", 64, 512, 1, 8192, 0, 1, 1, 1, 1, 64, 9728),
    ("26.06.01", "GB300", "Nemotron 3 Super", "NVFP4", 64, 512, 1, 8192, 0, 1, 1, 1, 1, 64, 9984),
    ("26.06.01", "GB200", "Nemotron 3 Super", "MXFP8", 64, 512, 1, 8192, 0, 2, 1, 1, 1, 64, 7040),
    ("26.06.01", "GB200", "Nemotron 3 Super", "NVFP4", 64, 512, 1, 8192, 0, 2, 1, 1, 1, 64, 7040),
    ("26.08", "GB300", "dsv3", "MXFP8", 256, 4096, 1, 4096, 0, 1, 2, 1, 8, 32, 6288),
    ("26.08", "GB200", "dsv3", "MXFP8", 256, 4096, 1, 4096, 0, 1, 4, 1, 4, 64, 4912),
    ("26.08", "GB300", "DeepSeek-V4 Flash", "MXFP8", 128, 2048, 1, 4096, 0, 1, 1, 1, 1, 64, 8224),
    ("26.08", "GB200", "DeepSeek-V4 Flash", "MXFP8", 128, 2048, 1, 4096, 0, 1, 1, 1, 1, 64, 7776),
    ("26.08", "GB300", "oss", "MXFP8", 64, 1280, 4, 4096, 0, 1, 1, 1, 1, 16, 33024),
    ("26.08", "GB200", "oss", "MXFP8", 64, 1280, 4, 4096, 0, 1, 1, 1, 1, 64, 28672),
    ("26.08", "GB300", "q30", "MXFP8", 8, 512, 8, 4096, 0, 1, 1, 1, 1, 8, 44544),
    ("26.08", "GB200", "q30", "MXFP8", 8, 512, 4, 4096, 0, 1, 1, 1, 1, 8, 39936),
    ("26.08", "GB300", "q235", "MXFP8", 256, 8192, 2, 4096, 0, 1, 4, 1, 12, 32, 8816),
    ("26.08", "GB200", "q235", "MXFP8", 256, 8192, 1, 4096, 0, 1, 8, 1, 3, 32, 7280),
    ("26.08", "GB300", "Nemotron 3 Nano", "MXFP8", 8, 512, 4, 8192, 0, 1, 1, 1, 1, 8, 39936),
    ("26.08", "GB200", "Nemotron 3.5 Lightning", "MXFP8", 8, 512, 2, 8192, 0, 1, 1, 1, 1, 8, 28672),
    ("26.08", "GB300", "Nemotron 3 Super", "MXFP8", 64, 512, 1, 8192, 0, 1, 1, 1, 1, 64, 9856),
    ("26.08", "GB300", "Nemotron 3 Super", "NVFP4", 64, 512, 1, 8192, 0, 1, 1, 1, 1, 64, 10240),
    ("26.08", "GB200", "Nemotron 3 Super", "MXFP8", 64, 512, 1, 8192, 0, 2, 1, 1, 1, 64, 7040),
    ("26.08", "GB200", "Nemotron 3 Super", "NVFP4", 64, 512, 1, 8192, 0, 2, 1, 1, 1, 64, 7168),
    ("26.08", "GB300", "Nemotron 3 Ultra", "MXFP8", 256, 256, 1, 8192, 0, 1, 1, 1, 1, 64, 3552),
    ("26.08", "GB200", "Nemotron 3 Ultra", "MXFP8", 256, 256, 1, 8192, 0, 2, 1, 1, 1, 64, 2528),
]
