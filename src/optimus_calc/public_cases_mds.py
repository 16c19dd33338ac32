"""Megatron-DeepSpeed's long-sequence table: ``examples_deepspeed/deepspeed4science/
megatron_long_seq_support/README.md`` (GPT 30B, TP 32 with sequence parallelism over 4 DGX
A100-40GB, 2K-256K tokens), BLOOM-176B's training run on BigScience's fork of it, and MT-NLG
530B's scaling rows (listed). Data only: validate_public.py runs them (public_cases.public_rows)."""

from __future__ import annotations

from optimus_calc.public_row import PublicRow

# deepspeedai/Megatron-DeepSpeed examples_deepspeed/deepspeed4science/megatron_long_seq_support/
# README.md @ cc3a94c6 (2023-09-18), "Performance Comparison between Old Megatron-DeepSpeed and
# New Megatron-DeepSpeed": 4 DGX A100-40GB nodes, 8 HDR InfiniBand (200 Gb/s) each, TP 32;
# TFLOPS per GPU by sequence length. The run is the folder's pretrain_gpt_30B_seq_parallel.sh
# @ cc3a94c6: 64 layers, hidden 6144, 64 heads, learned positions of the sequence's length
# (--max-position-embeddings seq_len), GPT-2 vocabulary (50,257) padded to a multiple of
# 128 x TP = 4,096 (megatron/tokenizer/tokenizer.py _vocab_size_with_padding): 53,248; TP 32
# with --sequence-parallel, PP 1, ZeRO 0, micro-batch 1, global batch 2, fp16,
# --checkpoint-activations (full recomputation), --use-flash-attn-triton (the Triton
# FlashAttention port: --attention-kernel fa1). The TFLOPS are megatron/utils.py
# throughput_calculator's @ cc3a94c6: 24 x 4 x B s L h^2 (1 + s / 6h + V / 16 L h) with
# activation checkpointing, i.e. attention un-halved and the recomputed forward counted (4/3).
# The README names only the sequence and says the new code's gain comes partly from "larger
# batch sizes", so the script's global batch 2 is not what every row ran: the rows are listed
MDS_LONG = ("Megatron-DeepSpeed examples_deepspeed/deepspeed4science/megatron_long_seq_support/"
            "README.md @ cc3a94c6, GPT 30B on 4 x DGX A100-40GB")
_VOCAB = 53248
_WHY = ("batch size not published: the README names only the sequence and credits part of "
        "the gain to 'larger batch sizes' than the folder's script (global batch 2), and at TP "
        "32 the batch sets the GEMM sizes")
_OLD = ("the pre-rebase Megatron-DeepSpeed (no FlashAttention, no sequence parallelism), "
        "whose settings the README does not give")


def shape(seq: int) -> dict:
    """The 30B GPT of the script at ``seq`` tokens (learned positions = seq)."""
    return dict(layers=64, hidden=6144, heads=64, ffn_hidden=4 * 6144, vocab=_VOCAB,
                max_position=seq, seq_len=seq, attention_bias=True, attention_out_bias=True,
                mlp_bias=True)


# (sequence in K tokens, old TFLOPS or 0 where the README says OoM, new TFLOPS)
ROWS = [(2, 25, 68), (4, 28, 80), (8, 0, 86), (16, 0, 92), (32, 0, 100), (64, 0, 106),
        (128, 0, 119), (256, 0, 94)]


def shapes() -> dict[str, dict]:
    return {**{f"mds-gpt-30b-s{k * 1024}": shape(k * 1024) for k, _, _ in ROWS},
            "mt-nlg-530b": MTNLG_SHAPE}


# Megatron-Turing NLG 530B (Smith et al. 2022, arXiv 2201.11990), trained with Megatron-DeepSpeed.
# Its section 2.4 times the iteration at global batch 1,920 on 280, 350 and 420 DGX A100: 60.1,
# 50.2 and 44.4 s (126, 121, 113 TFLOP/s per GPU), as quoted in cli99/llm-analysis
# examples/megatron-turing-nlg/README.md @ b60b392 with the shape (105 layers, hidden 20480, 128
# heads, sequence 2,048) and TP 8 x PP 35 (the paper's own text was not read here). Assumed: the
# A100's 80 GB (the Microsoft/NVIDIA announcement's Selene; llm-analysis says 40 GB, which moves
# no time here), bf16, ZeRO-1 (the paper's "ZeRO data parallelism"), 1F1B, GPT-2's 50,257-token
# vocabulary unpadded, dropout 0. The micro-batch is not published, and over 35 stages it sets
# the bubble: at 420 nodes micro-batch 1 gives 160 micro-batches a pipeline, 2 gives 80 (the
# tool: -16% to -20% at micro-batch 1, -10% to -11% at 2). Listed, not scored.
MTNLG = "Smith et al. 2022, MT-NLG 530B (arXiv 2201.11990) section 2.4"
MTNLG_SHAPE = dict(layers=105, hidden=20480, heads=128, ffn_hidden=4 * 20480, vocab=50257,
                   max_position=2048, seq_len=2048, attention_bias=True, attention_out_bias=True,
                   mlp_bias=True)
_MTNLG_WHY = ("micro-batch size not published: over 35 pipeline stages it sets the bubble "
              "(the tool gives -16% to -20% at micro-batch 1, -10% to -11% at 2)")


def mtnlg_rows() -> list[PublicRow]:
    return [PublicRow(MTNLG, f"MT-NLG 530B TP8 PP35 DP{dp}, {nodes * 8} A100-80GB (Selene)",
                      "shape:mt-nlg-530b", "dgx-a100", nodes, t, unit="s", tp=8, pp=35, zero=1,
                      seq=2048, gbs=1920, mbs=1, precision="bf16", recompute="full",
                      flash=False, sp=False, framework="megatron-deepspeed",
                      assumed="A100 80 GB, bf16, ZeRO-1, 1F1B, vocabulary 50,257, dropout 0 "
                              "(public_cases_mds.py)", why_not=_MTNLG_WHY)
            for nodes, dp, t in ((280, 8, 60.1), (350, 10, 50.2), (420, 12, 44.4))]


# BLOOM-176B (bigscience-workshop/bigscience @ 9e64ede, train/tr11-176B-ml): 384 A100-80GB on 48
# Jean Zay nodes (README.md L40-46: 4 Omni-Path links per node), TP 4, PP 12 (DP 8), micro-batch 2,
# global batch 2,048 x 2,048 tokens, bf16 with DeepSpeed's BF16 optimizer (ZeRO stage 0 in the
# config, 'its own zero stage 1 equivalent': sharded optimizer state), --checkpoint-activations,
# ALiBi, no FlashAttention (2022), Megatron-LM's dropout 0.1 (tr11-176B-ml.slurm L66-75, L104-125,
# L141-163; README.md L308-312). Two published log lines: at the first epoch's end, iteration
# 85,376 at global batch 2,048, 'elapsed time per iteration (s): 104.70' (README.md L661-663), and
# a set-up test at global batch 16 (one micro-batch per pipeline: the ramp-up's first stage,
# iteration 3,707 of its 4,805 steps at 16; MBS 2 per L272), 15.23 s (L237-245). 'TFLOPs' in
# both lines is Megatron-DeepSpeed's hardware-FLOP count.
# The run is DeepSpeed's pipeline engine with Megatron's TP: the Megatron-DeepSpeed profile (its
# rules refuse ALiBi only because upstream's flags lack it; the BigScience fork has it, and no
# sequence-parallel flag: sequence parallelism off)
# one source (one leave-one-source-out fold: validate_loso.fold_of drops the parenthesis)
BLOOM = ("bigscience-workshop/bigscience train/tr11-176B-ml/README.md @ 9e64ede (BLOOM-176B "
         "training log, {})")
_BLOOM_ASSUMED = ("ZeRO-1 for DeepSpeed's BF16 optimizer (sharded optimizer state, as the "
                  "config's comment says); the 'AMD' host CPU as EPYC 7742 (jean-zay-a100); no "
                  "sequence parallelism (the fork has no flag); the 70 layers split 5, 6 x 10, 5 "
                  "as the run's --pp-partition-method 'type:transformer|embedding' (slurm L104) "
                  "put them: 6 items on each stage, the first and the last 5 layers and an "
                  "embedding (shapes.embedding_and_loss_split: pipeline_extra_layers_first 0 "
                  "against the profile's 'type:transformer' split)")


def bloom_rows() -> list[PublicRow]:
    common = dict(model="bloom-176b", node="jean-zay-a100", nodes=48, unit="s", tp=4, pp=12,
                  zero=1, seq=2048, mbs=2, precision="bf16", recompute="full", flash=False,
                  sp=False, dropout=True, framework="megatron-deepspeed",
                  assumed=_BLOOM_ASSUMED, assume=(("pipeline_extra_layers_first", 0.0),))
    return [PublicRow(BLOOM.format("L661-663: the first epoch's end"),
                      "BLOOM-176B TP4 PP12 DP8, 384 A100-80GB (Jean Zay, Omni-Path)",
                      published=104.70, gbs=2048, **common),
            PublicRow(BLOOM.format("L237-245, L272: global batch 16 at MBS 2"),
                      "BLOOM-176B TP4 PP12 DP8, 384 A100-80GB, global batch 16 (set-up test)",
                      published=15.23, gbs=16, **common)]


def mds_rows() -> list[PublicRow]:
    """The new code's eight rows and the old code's two measured ones, listed (_WHY, _OLD),
    and BLOOM-176B's run (:func:`bloom_rows`)."""
    out = bloom_rows() + mtnlg_rows()
    for k, old, new in ROWS:
        seq = k * 1024
        common = dict(model=f"shape:mds-gpt-30b-s{seq}", node="dgx-a100", nodes=4,
                      gpu="a100-40gb", unit="tflops:unhalved", tp=32, seq=seq, gbs=2, mbs=1,
                      zero=0, precision="fp16", recompute="full", kernel="fa1",
                      framework="deepspeed")
        out.append(PublicRow(MDS_LONG, f"GPT 30B TP32 SP seq {k}K, 32 A100-40GB", published=new,
                             why_not=_WHY, **common))
        if old:
            out.append(PublicRow(MDS_LONG, f"GPT 30B TP32 seq {k}K, 32 A100-40GB, old code",
                                 published=old, why_not=_OLD, **common))
    return out
