"""Small models (issue 32: "small models and micro-batch 1 are 25-50% too fast"): TinyLlama's
published training throughput (jzhang38/TinyLlama README.md "Blazingly Fast" L92-102 @
bf12224). Data only: validate_public.py runs them (public_cases.public_rows).

TinyLlama 1.1B (lit_gpt/config.py L250-265 @ bf12224: 22 layers, hidden 2,048, 32 heads in 4
query groups, SwiGLU 5,632, vocabulary 32,000, block 2,048) pre-trained with Lightning's FSDP
(pretrain/tinyllama.py L94-100: every Block wrapped, no activation checkpointing), micro-batch 8
and global batch 512 sequences on 8 devices (L31-34), FlashAttention-2 and fused norm, SwiGLU,
RoPE and cross-entropy: "24k tokens per second per A100-40G GPU ... 56% model flops utilization
without activation checkpointing" (L102).
"""

from __future__ import annotations

from optimus_calc.public_row import FP as _FP
from optimus_calc.public_row import PublicRow

TINY = f"jzhang38/TinyLlama README.md @ bf12224, Blazingly Fast ({_FP} 7.5)"
SHAPES = {"tinyllama-1.1b": dict(layers=22, hidden=2048, heads=32, kv_heads=4, ffn_hidden=5632,
                                 family="llama", ffn_type="swiglu", vocab=32000,
                                 tied_embeddings=False, position_embedding="rope",
                                 norm="rmsnorm", seq_len=2048, dropout=0.0,
                                 dropout_source="lit_gpt's LLaMA blocks have no dropout")}
_ASM = ("8 A100-40GB (pretrain/tinyllama.py's num_of_devices; the README's hardware table says "
        "16) on one DGX A100 node; FSDP full shard (Lightning's default), global batch 512 "
        "(grad accumulation 8); the README's '24k' taken as 24,000")


def small_rows() -> list[PublicRow]:
    return [PublicRow(TINY, "TinyLlama 1.1B FSDP, 8 A100-40GB, micro-batch 8 (TinyLlama)",
                      "shape:tinyllama-1.1b", "dgx-a100", 1, 24000, gpu="a100-40gb", seq=2048,
                      mbs=8, gbs=512, zero=3, kernel="fa2", assumed=_ASM)]
