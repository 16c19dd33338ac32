"""IBM's fms-fsdp training throughput table (foundation-model-stack/fms-fsdp README.md
"Training throughput benchmarks", L9-30 @ 5a296af, numbers of ed74fd5 "update numbers with
compile"): Llama 2 7B to 70B under PyTorch FSDP on 128 A100-80GB with 400 Gb/s per node and on
96 H100 with 800 Gb/s, the same scripts, torch.compile, batch 2 per GPU, the config's sequence
of 4,096 (fms_fsdp/config/training.py L21). FSDP at 128 ranks (issue 32). Data only:
validate_public.py runs them (public_cases.public_rows).

"Selective AC" there checkpoints a fraction p of the blocks (fms_fsdp/policies/ac_handler.py
L17-29; p = 1 is full recomputation); the table does not give p, but its HFU / MFU ratio does
where it is 4/3 (every block re-run: 34B and 70B on A100, both 0.74 / 0.55 = 1.35; the 34B is
the catalog's llama-2-34b, fms-fsdp's llama2_34b config). The other fractions (13B 0.69 / 0.61,
the H100 rows 1.07-1.29) are not a layout of the tool.
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
_NO_RATIO = ("the fraction of blocks checkpointed is not known: the blog's HFU / MFU for this "
             "cell was not transcribed with its throughput (blog_rows), and no copy of the "
             "table is stored")
_H100 = "the 96-H100 cluster with 800 Gb/s is not a catalog node ({why})"


def _hfu_over_mfu(ratio: str) -> float:
    """'0.74 / 0.55' -> 1.345: 4/3 when every block's forward runs twice."""
    hfu, mfu = (float(x) for x in ratio.split("/"))
    return hfu / mfu


def _table(src: str, tag: str, asm: str, a100: dict, h100: dict) -> list[PublicRow]:
    """One table's eight cells: ``a100`` / ``h100`` map each size to (tokens/s/GPU, HFU / MFU);
    the A100 cells whose HFU / MFU is 4/3 (every block checkpointed) run, the others are
    listed."""
    out = []
    for size, (tps, ratio) in a100.items():
        why = _HSDP if size == "7B" else _FRAC.format(r=ratio) if ratio else _NO_RATIO
        if ratio and abs(_hfu_over_mfu(ratio) - 4 / 3) < 0.02:
            why = ""  # every block re-run: full recomputation
        out.append(PublicRow(src, f"Llama 2 {size} FSDP, 128 A100-80GB 400 Gb/s ({tag})",
                             f"llama-2-{size.lower()}", "a100-400g", 16, tps, mbs=2, seq=4096,
                             zero=3, recompute="full", assumed=asm.format(r=ratio),
                             why_not=why))
    for size, (tps, ratio) in h100.items():
        why = {"7B": _HSDP}.get(size, _FRAC.format(r=ratio) if ratio else _NO_RATIO)
        out.append(PublicRow(src, f"Llama 2 {size} FSDP, 96 H100 800 Gb/s ({tag})",
                             f"llama-2-{size.lower()}", "dgx-h100", 12, tps, mbs=2, seq=4096,
                             zero=3, why_not=_H100.format(why=why)))
    return out


def fms_rows() -> list[PublicRow]:
    """The README's table (its MFU / HFU table is the same runs)."""
    return _table(FMS, "fms-fsdp", _ASM.replace("{c}", "compile folded in"),
                  {"7B": (4550, ""), "13B": (2150, "0.69 / 0.61"), "34B": (820, "0.74 / 0.55"),
                   "70B": (410, "0.74 / 0.55")},
                  {"7B": (9600, ""), "13B": (4850, "0.46 / 0.43"), "34B": (1830, "0.49 / 0.38"),
                   "70B": (890, "0.47 / 0.38")})


def blog_rows() -> list[PublicRow]:
    """The blog's Table 1: the same sizes on the same clusters before compile."""
    return _table(BLOG, "blog, no compile", _ASM.replace("{c}", "no compile"),
                  {"7B": (3700, ""), "13B": (1800, "0.59 / 0.51"), "34B": (700, ""),
                   "70B": (370, "0.67 / 0.50")},
                  {"7B": (7500, ""), "13B": (3800, "0.40 / 0.35"), "34B": (1550, ""),
                   "70B": (800, "0.45 / 0.34")})
