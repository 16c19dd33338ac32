"""IBM's fms-fsdp training throughput table (foundation-model-stack/fms-fsdp README.md
"Training throughput benchmarks", L9-30 @ 5a296af, numbers of ed74fd5 "update numbers with
compile"): Llama 2 7B to 70B under PyTorch FSDP on 128 A100-80GB with 400 Gb/s per node and on
96 H100 with 800 Gb/s, the same scripts, torch.compile, batch 2 per GPU, the config's sequence
of 4,096 (fms_fsdp/config/training.py L21). FSDP at 128 ranks (issue 32). Data only:
validate_public.py runs them (public_cases.public_rows).

"Selective AC" there checkpoints a fraction p of the blocks (fms_fsdp/policies/ac_handler.py
L17-29; p = 1 is full recomputation); the table does not give p, but its HFU / MFU ratio does
where it is 4/3 (every block re-run: 70B on A100, 0.74 / 0.55 = 1.35). The other fractions
(13B 0.69 / 0.61, the H100 rows 1.07-1.29) are not a layout of the tool.
"""

from __future__ import annotations

from optimus_calc.public_row import FP as _FP
from optimus_calc.public_row import PublicRow

FMS = (f"foundation-model-stack/fms-fsdp README.md @ 5a296af, Training throughput benchmarks "
       f"({_FP} 7.4)")
_ASM = ("FSDP full shard over all 128 GPUs, every block checkpointed (HFU / MFU {r} = "
        "4/3); seq 4,096 (the config's default), bf16, {c}")
# the same clusters two months earlier, without torch.compile: pytorch.org/blog/maximizing-training
# (IBM and Meta, 2024-03-13), Table 1 (A100 80GB 400 Gb/s and H100 800 Gb/s tokens/s/GPU, MFU, HFU)
BLOG = (f"pytorch.org/blog/maximizing-training (IBM and Meta, 2024-03-13), Table 1 "
        f"({_FP} 7.4)")
_HSDP = "HSDP (sharded within a node, replicated across nodes) is not a layout of the tool"
_FRAC = ("a fraction of the blocks checkpointed (fms-fsdp selective_checkpointing, HFU / MFU "
         "{r}) is not a layout of the tool")
_34B = "model not in the catalog (Llama 2 34B)"
_H100 = "the 96-H100 cluster with 800 Gb/s is not a catalog node ({why})"


def fms_rows() -> list[PublicRow]:
    """The table's eight tokens/s/GPU cells (its MFU / HFU table is the same runs): A100 70B
    runs, the others are listed."""
    r, out = PublicRow, []
    a100 = dict(node="a100-400g", nodes=16, mbs=2, seq=4096, zero=3, recompute="full")
    for size, tps, why in (("7B", 4550, _HSDP), ("13B", 2150, _FRAC.format(r="0.69 / 0.61")),
                           ("34B", 820, _34B), ("70B", 410, "")):
        out.append(r(FMS, f"Llama 2 {size} FSDP, 128 A100-80GB 400 Gb/s (fms-fsdp)",
                     f"llama-2-{size.lower()}", published=tps, why_not=why,
                     assumed=_ASM.format(r="0.74 / 0.55", c="compile folded in"), **a100))
    for size, tps, ratio in (("7B", 9600, ""), ("13B", 4850, "0.46 / 0.43"),
                             ("34B", 1830, ""), ("70B", 890, "0.47 / 0.38")):
        why = _HSDP if size == "7B" else _34B if size == "34B" else _FRAC.format(r=ratio)
        out.append(r(FMS, f"Llama 2 {size} FSDP, 96 H100 800 Gb/s (fms-fsdp)",
                     f"llama-2-{size.lower()}", "dgx-h100", 12, tps, mbs=2, seq=4096, zero=3,
                     why_not=_H100.format(why=why)))
    return out


def blog_rows() -> list[PublicRow]:
    """The blog's Table 1, the same sizes on the same clusters before compile: 7B (the config's
    HSDP, no AC), 13B (a fraction of the blocks checkpointed: HFU / MFU 0.59 / 0.51), 34B and
    the H100 cells listed; 70B ("Yes", HFU / MFU 0.67 / 0.50 = 4/3: every block) runs."""
    r, out = PublicRow, []
    a100 = dict(node="a100-400g", nodes=16, mbs=2, seq=4096, zero=3, recompute="full",
                assumed=_ASM.format(r="0.67 / 0.50", c="no compile"))
    for size, tps, why in (("7B", 3700, _HSDP), ("13B", 1800, _FRAC.format(r="0.59 / 0.51")),
                           ("34B", 700, _34B), ("70B", 370, "")):
        out.append(r(BLOG, f"Llama 2 {size} FSDP, 128 A100-80GB 400 Gb/s (blog, no compile)",
                     f"llama-2-{size.lower()}", published=tps, why_not=why, **a100))
    for size, tps, ratio in (("7B", 7500, ""), ("13B", 3800, "0.40 / 0.35"),
                             ("34B", 1550, ""), ("70B", 800, "0.45 / 0.34")):
        why = _HSDP if size == "7B" else _34B if size == "34B" else _FRAC.format(r=ratio)
        out.append(r(BLOG, f"Llama 2 {size} FSDP, 96 H100 800 Gb/s (blog, no compile)",
                     f"llama-2-{size.lower()}", "dgx-h100", 12, tps, mbs=2, seq=4096, zero=3,
                     why_not=_H100.format(why=why)))
    return out
