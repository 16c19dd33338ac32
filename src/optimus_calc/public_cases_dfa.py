"""DistFlashAttn's long-context timings on A100 (Li et al., "DISTFLASHATTN: Distributed
Memory-efficient Attention for Long-context LLMs Training", arXiv 2310.03294, COLM 2024): the only
public A100 training steps past 8K tokens with FlashAttention-2 the project has found (issue 32:
A100 + FlashAttention had no public case past 8K). Data only: validate_public.py runs them
(public_cases.public_rows).

Table 1, "Per iteration wall-clock time of DISTFLASHATTN and Megatron-LM ... (Unit: seconds)":
LLaMA-7B (hidden 4,096, 32 heads, 32 layers, FFN 11,008) and two variants (8 KV heads; 33
heads) at 8K, 16K and 32K tokens per GPU, on one DGX A100 box (8 x 80 GB over NVLink: 64K, 128K,
256K tokens) and on two (128K, 256K, 512K), Adam, averaged over 10 iterations after 10 of
warm-up, every method on the same attention backend (their FlashAttention-2 Triton kernel).
The Megatron-LM baseline runs tensor parallelism over every GPU (33 heads are padded "to support
a parallelism degree of 16"; the authors' GitHub issue RulinShao/LightSeq#3: "the global sequence
length in the same group of TP") with sequence parallelism (its appendix D counts the all-gathers
and reduce-scatters of Korthikanti et al.) and gradient checkpointing that repeats the forward's
communication (full recomputation). Table 4 times DeepSpeed-Ulysses on two boxes.
"""

from __future__ import annotations

from optimus_calc.public_row import PublicRow

DFA = "Li et al. 2023, DistFlashAttn (arXiv 2310.03294) Table {t}"
_ASM = ("TP 8 with sequence parallelism and full recomputation (the paper's appendix D and "
        "head padding; degree and checkpointing not stated outright); no TP communication "
        "overlap (Megatron-LM's default; the paper counts its all-gathers and reduce-scatters as "
        "cost); one sequence per iteration (Table 5's batch 1, whose times repeat Table 1's); "
        "bf16 (not stated); Megatron-LM's version not stated, patched not to materialise the "
        "causal mask; the paper's Triton FlashAttention-2 kernel at the catalog's "
        "FlashAttention-2 efficiency, assumed")
_TIMES = {  # (method, boxes) -> {model: seconds at the three lengths}
    ("Megatron-LM", 1): {"LLaMA-7B": (6.81, 20.93, 72.75), "LLaMA-GQA": (6.60, 20.53, 71.93),
                         "LLaMA-33H": (8.37, 25.75, 90.21)},
    ("DistFlashAttn", 1): {"LLaMA-7B": (5.98, 17.26, 58.46), "LLaMA-GQA": (5.61, 16.86, 57.01),
                           "LLaMA-33H": (6.08, 17.77, 59.96)},
    ("Megatron-LM", 2): {"LLaMA-7B": (14.26, 43.44, 147.06), "LLaMA-GQA": (14.21, 43.20, 146.38),
                         "LLaMA-33H": (20.63, 62.78, 216.70)},
    ("DistFlashAttn", 2): {"LLaMA-7B": (12.75, 30.21, 106.37),
                           "LLaMA-GQA": (9.74, 28.49, 102.34),
                           "LLaMA-33H": (13.12, 31.33, 107.76)},
}
_ULYSSES = {"LLaMA-7B": (37.53, 134.09), "LLaMA-33H": (56.63, 202.89)}  # Table 4, 256K, 512K
_VARIANT = "model not in the catalog (LLaMA-7B with {v})"
# the paper's GQA variant: LLaMA-7B's shape with 8 KV heads (its section 5.1 and Table 1)
SHAPES = {"llama-7b-gqa8": dict(family="llama", layers=32, hidden=4096, heads=32, kv_heads=8,
                                ffn_hidden=11008, ffn_type="swiglu", vocab=32000,
                                tied_embeddings=False, position_embedding="rope",
                                norm="rmsnorm", seq_len=4096)}
_SHAPE = {"LLaMA-7B": "llama-2-7b", "LLaMA-GQA": "shape:llama-7b-gqa8", "LLaMA-33H": "llama-2-7b"}
_OWN = ("DistFlashAttn's own schedule (sequence-parallel ring with token-level balancing, "
        "checkpoints at the attention outputs, FSDP for the weights) is not a layout of the tool")
_TWO = ("the two boxes' interconnect ('a stable 100 Gbps Infiniband') is not a catalog node "
        "(dgx-a100 has eight 200 Gb/s HDR NICs), and TP 16 spans it")
_ULY = "DeepSpeed-Ulysses' all-to-all sequence parallelism is not modelled"


def _why(method: str, boxes: int, model: str) -> str:
    if model == "LLaMA-33H":  # 33 heads, padded by Megatron-LM to a multiple of the TP degree
        return _VARIANT.format(v="33 heads")
    if method != "Megatron-LM":
        return _OWN
    return _TWO if boxes == 2 else ""


def dfa_rows() -> list[PublicRow]:
    """Table 1's 36 times (the Megatron-LM LLaMA-7B and GQA rows on one box run; the others
    listed)
    and Table 4's four DeepSpeed-Ulysses times (listed)."""
    r, out = PublicRow, []
    for (method, boxes), models in _TIMES.items():
        seqs = (65536, 131072, 262144) if boxes == 1 else (131072, 262144, 524288)
        for model, times in models.items():
            for seq, t in zip(seqs, times):
                out.append(r(DFA.format(t=1), f"{method} {model} seq {seq // 1024}K, "
                             f"{boxes}x8 A100 80GB", _SHAPE[model], "dgx-a100", boxes, t,
                             unit="s", tp=8 * boxes, seq=seq, gbs=1, mbs=1, recompute="full",
                             framework="megatron", kernel="fa2", tp_comm_overlap=False,
                             assumed=_ASM,
                             why_not=_why(method, boxes, model)))
    for model, times in _ULYSSES.items():
        for seq, t in zip((262144, 524288), times):
            out.append(r(DFA.format(t=4), f"DeepSpeed-Ulysses {model} seq {seq // 1024}K, 2x8 "
                         "A100 80GB", "llama-2-7b", "dgx-a100", 2, t, unit="s", seq=seq,
                         gbs=1, mbs=1, why_not=_ULY))
    return out
