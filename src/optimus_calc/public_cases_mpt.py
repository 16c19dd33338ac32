"""MosaicML's MPT training benchmarks: every row of llm-foundry's benchmark tables, H100 and A100,
125M to 70B parameters, sequence 512 to 65,536, 8 to 512 GPUs. Data only: validate_public.py runs
them (public_cases.public_rows).

Source: mosaicml/llm-foundry scripts/train/benchmarking/README.md @ 8c8dd48 (tables as of
5e85bd6, 2024-01-06; the A100 and H100 tables from b2a43a1, 2023-10-19). Published: Throughput
(T/s/GPU), tokens per second per GPU. The runs (submit_benchmarks.py @ b2a43a1 and @ 5e85bd6):
Composer with PyTorch FSDP (FULL_SHARD = ZeRO-3, SHARD_GRAD_OP = ZeRO-2), activation
checkpointing of whole blocks when the table says True, decoupled AdamW, attention
``attn_impl: triton`` (the script's default, L144, which sweep.sh never overrides): the Triton
port of FlashAttention-1 that llm-foundry carried (flash_attn_triton.py), hence kernel "fa1".

Model shapes: scripts/train/yamls/pretrain/mpt-<size>.yaml @ b2a43a1 (d_model, n_heads,
n_layers, expansion_ratio 4, vocab 50,368); MPT's defaults: learned positions sized to the run's
max_seq_len (the tables' NumParams grow with it), biases on (no_bias false), LayerNorm with
bias, tied embeddings. The shapes reproduce the NumParams column exactly (tests/test_mpt_rows.py).
"""

from __future__ import annotations

from optimus_calc.public_row import PublicRow

MPT = ("llm-foundry scripts/train/benchmarking/README.md @ 8c8dd48 (MosaicML MPT benchmarks, "
       "{t})")
# size -> (layers, d_model, heads), mpt-<size>.yaml @ b2a43a1
DIMS = {"125m": (12, 768, 12), "350m": (24, 1024, 16), "760m": (24, 1536, 12),
        "1b": (24, 2048, 16), "3b": (32, 2560, 20), "7b": (32, 4096, 32),
        "13b": (40, 5120, 40), "30b": (48, 7168, 56), "70b": (80, 8192, 64)}
_VOCAB = 50368
# section -> (table title, node, gpu, precision)
_SECTIONS = {
    "H100L": ("H100 80GB BF16, large scale", "dgx-h100", None, "bf16"),
    "H100": ("H100 80GB BF16", "dgx-h100", None, "bf16"),
    "H100F": ("H100 80GB FP8", "dgx-h100", None, "fp8"),
    "A80": ("A100 80GB, 1600 Gbps RoCE", "dgx-a100", "a100-80gb", "bf16"),
    "A40": ("A100 40GB, 1600 Gbps RoCE", "dgx-a100", "a100-40gb", "bf16")}
H100L, H100, H100F, A80, A40 = _SECTIONS
Z2, Z3 = 2, 3
_ASM = ("attention on the Triton FlashAttention-1 port (attn_impl triton, submit_benchmarks.py "
        "default); FSDP gathers and reduce-scatters as the framework-neutral ZeRO model times "
        "them (Composer's mixed_precision DEFAULT / PURE: bf16 or fp32 gathers by release, "
        "not modelled); a DGX-class node (8 GPUs, one 200 Gb/s (A100) or 400 Gb/s (H100) NIC "
        "per GPU; the A100 tables state 1600 Gbps RoCE per node)")
# The FP8 runs (submit_benchmarks.py @ b2a43a1): fc_type "te" on H100 FP8 (L469-470), so
# MPT's four block GEMMs (Wqkv, out_proj, up_proj, down_proj) are Transformer Engine te.Linear
# (llmfoundry/models/layers/attention.py L484, L511 and ffn.py L35, L41 @ v0.3.0, the branch
# the runs installed, L401), under Composer's amp_fp8 autocast, with TE v0.10 and flash-attn
# 1.0.7 installed for them (L412-417); attention (attn_impl triton) and the tied LM head stay
# BF16. The tool expresses that (--precision fp8 --fp8-recipe te-delayed), so the rows are
# cases: their FP8 GEMM ratio is the one fitted on Transformer Engine 1.x+ Megatron/NeMo rows
# (specs/assumptions.py FIT_TE_*), not TE v0.10's, and they come out fast (validate says how much)
_FP8_ASM = ("; FP8 on the four block GEMMs through Transformer Engine v0.10 te.Linear with "
            "delayed scaling (submit_benchmarks.py L412-417, L469-470 @ b2a43a1: fc_type te; "
            "te-delayed), attention and the tied head in BF16; the tool's te-delayed ratio is "
            "fitted on Transformer Engine 1.x+ rows")


def shape(size: str, seq: int) -> dict:
    """The model shape of MPT-<size> for a run at ``seq`` tokens (learned positions = seq)."""
    layers, d, heads = DIMS[size]
    return dict(layers=layers, hidden=d, heads=heads, ffn_hidden=4 * d, vocab=_VOCAB,
                max_position=seq, seq_len=seq, attention_bias=True, attention_out_bias=True,
                mlp_bias=True, dropout=0.0, dropout_source="MPTConfig defaults: resid_pdrop, "
                "emb_pdrop and attn_pdrop 0.0 (llmfoundry/models/mpt/configuration_mpt.py "
                "L37-38 @ 8c8dd48), which the benchmark configs keep")


def shape_key(size: str, seq: int) -> str:
    return f"mpt-{size}-s{seq}"


# (section, size, seq, GPUs, micro-batch, grad accumulation, global batch, tokens/s/GPU,
#  sharding, activation checkpointing, NumParams): the README's rows in its order
ROWS = [
    # H100 80GB BF16 (Large Scale, >= 128 GPUs)
    (H100L, "70b", 2048, 512, 8, 1, 4096, 1007, Z3, True, 64862437376),
    (H100L, "70b", 2048, 256, 8, 1, 2048, 1035, Z3, True, 64862437376),
    (H100L, "70b", 2048, 128, 8, 1, 1024, 1058, Z3, True, 64862437376),
    (H100L, "30b", 2048, 512, 8, 1, 4096, 2115, Z3, True, 29975214080),
    (H100L, "30b", 2048, 256, 8, 1, 2048, 2148, Z3, True, 29975214080),
    (H100L, "30b", 2048, 128, 8, 1, 1024, 2199, Z3, True, 29975214080),
    (H100L, "13b", 2048, 512, 16, 1, 8192, 4952, Z3, True, 12853954560),
    (H100L, "13b", 2048, 256, 16, 1, 4096, 4989, Z3, True, 12853954560),
    (H100L, "13b", 2048, 128, 16, 1, 2048, 5080, Z3, True, 12853954560),
    (H100L, "7b", 2048, 512, 6, 1, 3072, 9670, Z3, False, 6658859008),
    (H100L, "7b", 2048, 256, 6, 1, 1536, 10119, Z3, False, 6658859008),
    (H100L, "7b", 2048, 128, 6, 1, 768, 10475, Z3, False, 6658859008),
    (H100L, "3b", 2048, 512, 8, 1, 4096, 21664, Z2, False, 2651837440),
    (H100L, "3b", 2048, 256, 8, 1, 2048, 22772, Z2, False, 2651837440),
    (H100L, "3b", 2048, 128, 8, 1, 1024, 23422, Z2, False, 2651837440),
    (H100L, "1b", 2048, 512, 12, 1, 6144, 39837, Z2, False, 1315950592),
    (H100L, "1b", 2048, 256, 12, 1, 3072, 42555, Z2, False, 1315950592),
    (H100L, "1b", 2048, 128, 12, 1, 1536, 44123, Z2, False, 1315950592),
    # H100 80GB BF16
    (H100, "70b", 2048, 64, 8, 4, 2048, 1039, Z3, True, 64862437376),
    (H100, "70b", 2048, 32, 2, 16, 1024, 882, Z3, True, 64862437376),
    (H100, "30b", 8192, 8, 1, 21, 168, 1384, Z3, True, 30019254272),
    (H100, "30b", 4096, 8, 1, 21, 168, 1802, Z3, True, 29989894144),
    (H100, "30b", 2048, 32, 14, 3, 1344, 2308, Z3, True, 29975214080),
    (H100, "30b", 2048, 16, 10, 3, 480, 2263, Z3, True, 29975214080),
    (H100, "30b", 2048, 8, 3, 21, 504, 2002, Z3, True, 29975214080),
    (H100, "30b", 1024, 8, 6, 21, 1008, 2084, Z3, True, 29967874048),
    (H100, "13b", 32768, 8, 1, 3, 24, 1976, Z3, True, 13011240960),
    (H100, "13b", 16384, 8, 3, 3, 72, 2985, Z3, True, 12927354880),
    (H100, "13b", 4096, 8, 10, 3, 240, 4717, Z3, True, 12864440320),
    (H100, "13b", 2048, 64, 2, 1, 128, 4800, Z3, False, 12853954560),
    (H100, "13b", 2048, 32, 2, 1, 64, 4811, Z3, False, 12853954560),
    (H100, "13b", 2048, 16, 2, 1, 32, 4767, Z3, False, 12853954560),
    (H100, "13b", 2048, 8, 2, 1, 16, 4792, Z3, False, 12853954560),
    (H100, "13b", 1024, 8, 40, 3, 960, 5502, Z3, True, 12848711680),
    (H100, "7b", 65536, 8, 1, 2, 16, 1956, Z3, True, 6918905856),
    (H100, "7b", 32768, 8, 2, 2, 32, 3318, Z3, True, 6784688128),
    (H100, "7b", 8192, 8, 8, 2, 128, 6935, Z3, True, 6684024832),
    (H100, "7b", 4096, 8, 16, 2, 256, 8611, Z3, True, 6667247616),
    (H100, "7b", 2048, 8, 6, 1, 48, 10643, Z3, False, 6658859008),
    (H100, "7b", 1024, 8, 64, 2, 1024, 10203, Z3, True, 6654664704),
    (H100, "3b", 65536, 8, 1, 2, 16, 3262, Z3, True, 2814366720),
    (H100, "3b", 32768, 8, 3, 6, 144, 5873, Z3, True, 2730480640),
    (H100, "3b", 16384, 8, 1, 6, 48, 11152, Z3, False, 2688537600),
    (H100, "3b", 8192, 8, 3, 6, 144, 16578, Z3, False, 2667566080),
    (H100, "3b", 4096, 8, 5, 6, 240, 20964, Z3, False, 2657080320),
    (H100, "3b", 2048, 64, 6, 3, 1152, 22525, Z3, False, 2651837440),
    (H100, "3b", 2048, 32, 6, 3, 576, 23021, Z3, False, 2651837440),
    (H100, "3b", 2048, 16, 10, 3, 480, 24142, Z3, False, 2651837440),
    (H100, "3b", 1024, 8, 20, 6, 960, 27046, Z3, False, 2649216000),
    (H100, "3b", 512, 8, 40, 6, 1920, 27965, Z3, False, 2647905280),
    (H100, "1b", 65536, 8, 1, 2, 16, 5506, Z3, True, 1445974016),
    (H100, "1b", 32768, 8, 1, 4, 32, 12025, Z3, False, 1378865152),
    (H100, "1b", 16384, 8, 2, 4, 64, 19649, Z3, False, 1345310720),
    (H100, "1b", 8192, 8, 3, 4, 96, 29157, Z3, False, 1328533504),
    (H100, "1b", 4096, 8, 7, 4, 224, 38535, Z3, False, 1320144896),
    (H100, "1b", 2048, 64, 20, 1, 1280, 44402, Z3, False, 1315950592),
    (H100, "1b", 2048, 32, 20, 1, 640, 45130, Z3, False, 1315950592),
    (H100, "1b", 2048, 16, 20, 1, 320, 46037, Z3, False, 1315950592),
    (H100, "1b", 2048, 8, 14, 1, 112, 45455, Z3, False, 1315950592),
    (H100, "1b", 1024, 8, 18, 4, 576, 48910, Z3, False, 1313853440),
    (H100, "1b", 512, 8, 56, 4, 1792, 52275, Z3, False, 1312804864),
    (H100, "760m", 32768, 8, 1, 2, 16, 16291, Z3, False, 807656448),
    (H100, "760m", 16384, 8, 3, 2, 48, 27815, Z3, False, 782490624),
    (H100, "760m", 8192, 8, 6, 2, 96, 41825, Z3, False, 769907712),
    (H100, "760m", 4096, 8, 12, 2, 192, 55459, Z3, False, 763616256),
    (H100, "760m", 2048, 32, 24, 1, 768, 67971, Z3, False, 760470528),
    (H100, "760m", 2048, 16, 24, 1, 384, 68551, Z3, False, 760470528),
    (H100, "760m", 2048, 8, 24, 2, 384, 63147, Z3, False, 760470528),
    (H100, "760m", 1024, 8, 48, 2, 768, 78581, Z3, False, 758897664),
    (H100, "760m", 512, 8, 96, 2, 1536, 83749, Z3, False, 758111232),
    # H100 80GB FP8
    (H100F, "3b", 32768, 8, 3, 6, 144, 5856, Z3, True, 2730480640),
    (H100F, "3b", 8192, 8, 3, 6, 144, 19146, Z3, False, 2667566080),
    (H100F, "3b", 2048, 8, 10, 6, 480, 30586, Z3, False, 2651837440),
    (H100F, "3b", 512, 8, 40, 6, 1920, 36527, Z3, False, 2647905280),
    (H100F, "1b", 32768, 8, 1, 4, 32, 12580, Z3, False, 1378865152),
    (H100F, "1b", 8192, 8, 2, 4, 64, 32010, Z3, False, 1328533504),
    (H100F, "1b", 512, 8, 56, 4, 1792, 70315, Z3, False, 1312804864),
    # A100 80GB with 1600 Gbps node-node interconnect (RoCE)
    (A80, "70b", 2048, 64, 8, 4, 2048, 410, Z3, True, 64862437376),
    (A80, "70b", 2048, 32, 2, 16, 1024, 373, Z3, True, 64862437376),
    (A80, "30b", 8192, 8, 1, 21, 168, 574, Z3, True, 30019254272),
    (A80, "30b", 4096, 8, 1, 21, 168, 814, Z3, True, 29989894144),
    (A80, "30b", 2048, 8, 3, 21, 504, 916, Z3, True, 29975214080),
    (A80, "30b", 1024, 8, 6, 21, 1008, 946, Z3, True, 29967874048),
    (A80, "30b", 512, 8, 12, 21, 2016, 967, Z3, True, 29964204032),
    (A80, "13b", 32768, 8, 1, 3, 24, 1016, Z3, True, 13011240960),
    (A80, "13b", 16384, 8, 3, 3, 72, 1431, Z3, True, 12927354880),
    (A80, "13b", 8192, 8, 5, 3, 120, 1795, Z3, True, 12885411840),
    (A80, "13b", 4096, 8, 10, 3, 240, 2060, Z3, True, 12864440320),
    (A80, "13b", 2048, 8, 2, 3, 48, 2262, Z3, False, 12853954560),
    (A80, "13b", 1024, 8, 40, 3, 960, 2330, Z3, True, 12848711680),
    (A80, "7b", 65536, 8, 1, 2, 16, 1013, Z3, True, 6918905856),
    (A80, "7b", 32768, 8, 2, 2, 32, 1672, Z3, True, 6784688128),
    (A80, "7b", 16384, 8, 4, 2, 64, 2453, Z3, True, 6717579264),
    (A80, "7b", 8192, 8, 8, 2, 128, 3206, Z3, True, 6684024832),
    (A80, "7b", 4096, 8, 16, 2, 256, 3684, Z3, True, 6667247616),
    (A80, "7b", 2048, 8, 6, 2, 96, 4641, Z3, False, 6658859008),
    (A80, "7b", 1024, 8, 64, 2, 1024, 4357, Z3, True, 6654664704),
    (A80, "3b", 65536, 8, 1, 2, 16, 1767, Z3, True, 2814366720),
    (A80, "3b", 32768, 8, 3, 6, 144, 3029, Z3, True, 2730480640),
    (A80, "3b", 16384, 8, 1, 6, 48, 5529, Z3, False, 2688537600),
    (A80, "3b", 8192, 8, 3, 6, 144, 7695, Z3, False, 2667566080),
    (A80, "3b", 4096, 8, 5, 6, 240, 9457, Z3, False, 2657080320),
    (A80, "3b", 2048, 8, 10, 2, 160, 10811, Z3, False, 2651837440),
    (A80, "3b", 1024, 8, 20, 6, 960, 11580, Z3, False, 2649216000),
    (A80, "3b", 512, 8, 40, 6, 1920, 12127, Z3, False, 2647905280),
    (A80, "1b", 65536, 8, 1, 2, 16, 3044, Z3, True, 1445974016),
    (A80, "1b", 32768, 8, 1, 4, 32, 6275, Z3, False, 1378865152),
    (A80, "1b", 16384, 8, 2, 4, 64, 9956, Z3, False, 1345310720),
    (A80, "1b", 8192, 8, 3, 4, 96, 13814, Z3, False, 1328533504),
    (A80, "1b", 4096, 8, 7, 4, 224, 17807, Z3, False, 1320144896),
    (A80, "1b", 2048, 8, 14, 4, 448, 20513, Z3, False, 1315950592),
    (A80, "1b", 1024, 8, 18, 4, 576, 22112, Z3, False, 1313853440),
    (A80, "1b", 512, 8, 56, 4, 1792, 23148, Z3, False, 1312804864),
    (A80, "760m", 65536, 8, 1, 2, 16, 4143, Z3, True, 857988096),
    (A80, "760m", 32768, 8, 1, 2, 16, 8802, Z3, False, 807656448),
    (A80, "760m", 16384, 8, 3, 2, 48, 14274, Z3, False, 782490624),
    (A80, "760m", 8192, 8, 6, 2, 96, 20933, Z3, False, 769907712),
    (A80, "760m", 4096, 8, 12, 2, 192, 27351, Z3, False, 763616256),
    (A80, "760m", 2048, 8, 24, 2, 384, 32434, Z3, False, 760470528),
    (A80, "760m", 1024, 8, 48, 2, 768, 29765, Z3, False, 758897664),
    (A80, "760m", 512, 8, 96, 2, 1536, 29446, Z3, False, 758111232),
    (A80, "350m", 65536, 8, 1, 2, 16, 7524, Z3, False, 420997120),
    (A80, "350m", 32768, 8, 2, 2, 32, 13652, Z3, False, 387442688),
    (A80, "350m", 16384, 8, 4, 2, 64, 23559, Z3, False, 370665472),
    (A80, "350m", 8192, 8, 8, 2, 128, 36569, Z3, False, 362276864),
    (A80, "350m", 4096, 8, 16, 2, 256, 49555, Z3, False, 358082560),
    (A80, "350m", 2048, 8, 32, 2, 512, 58782, Z3, False, 355985408),
    (A80, "350m", 1024, 8, 64, 2, 1024, 64813, Z3, False, 354936832),
    (A80, "350m", 512, 8, 128, 2, 2048, 69330, Z3, False, 354412544),
    (A80, "125m", 65536, 8, 1, 2, 16, 20368, Z3, False, 174070272),
    (A80, "125m", 32768, 8, 2, 2, 32, 36407, Z3, False, 148904448),
    (A80, "125m", 16384, 8, 4, 2, 64, 60040, Z3, False, 136321536),
    (A80, "125m", 8192, 8, 8, 2, 128, 90392, Z3, False, 130030080),
    (A80, "125m", 4096, 8, 16, 2, 256, 118396, Z3, False, 126884352),
    (A80, "125m", 2048, 8, 40, 2, 640, 142830, Z3, False, 125311488),
    (A80, "125m", 2048, 8, 32, 2, 512, 141737, Z3, False, 125311488),
    (A80, "125m", 1024, 8, 64, 2, 1024, 156468, Z3, False, 124525056),
    (A80, "125m", 512, 8, 128, 2, 2048, 165681, Z3, False, 124131840),
    # A100 40GB with 1600 Gbps node-node interconnect (RoCE)
    (A40, "70b", 2048, 128, 4, 1, 512, 376, Z3, True, 64862437376),
    (A40, "70b", 2048, 64, 2, 1, 128, 276, Z3, True, 64862437376),
    (A40, "30b", 2048, 128, 6, 1, 768, 865, Z3, True, 29975214080),
    (A40, "30b", 2048, 32, 4, 1, 128, 857, Z3, True, 29975214080),
    (A40, "13b", 8192, 8, 1, 16, 128, 1407, Z3, True, 12885411840),
    (A40, "13b", 4096, 8, 2, 16, 256, 1603, Z3, True, 12864440320),
    (A40, "13b", 2048, 128, 16, 1, 2048, 1972, Z3, True, 12853954560),
    (A40, "13b", 2048, 64, 16, 1, 1024, 1976, Z3, True, 12853954560),
    (A40, "13b", 2048, 32, 14, 1, 448, 1998, Z3, True, 12853954560),
    (A40, "13b", 2048, 16, 10, 1, 160, 1993, Z3, True, 12853954560),
    (A40, "13b", 2048, 8, 4, 16, 512, 1668, Z3, True, 12853954560),
    (A40, "13b", 1024, 8, 8, 16, 1024, 1727, Z3, True, 12848711680),
    (A40, "13b", 512, 8, 16, 16, 2048, 1763, Z3, True, 12846090240),
    (A40, "7b", 16384, 8, 1, 4, 32, 2249, Z3, True, 6717579264),
    (A40, "7b", 8192, 8, 3, 4, 96, 2887, Z3, True, 6684024832),
    (A40, "7b", 4096, 8, 6, 4, 192, 3366, Z3, True, 6667247616),
    (A40, "7b", 2048, 128, 18, 1, 2304, 3623, Z3, True, 6658859008),
    (A40, "7b", 2048, 64, 18, 1, 1152, 3665, Z3, True, 6658859008),
    (A40, "7b", 2048, 32, 18, 1, 576, 3725, Z3, True, 6658859008),
    (A40, "7b", 2048, 16, 16, 1, 256, 3645, Z3, True, 6658859008),
    (A40, "7b", 2048, 8, 12, 4, 384, 3679, Z3, True, 6658859008),
    (A40, "7b", 1024, 8, 24, 4, 768, 3854, Z3, True, 6654664704),
    (A40, "7b", 512, 8, 48, 4, 1536, 3895, Z3, True, 6652567552),
    (A40, "3b", 32768, 8, 1, 4, 32, 2955, Z3, True, 2730480640),
    (A40, "3b", 16384, 8, 2, 8, 128, 4465, Z3, True, 2688537600),
    (A40, "3b", 8192, 8, 1, 8, 64, 7149, Z3, False, 2667566080),
    (A40, "3b", 4096, 8, 2, 8, 128, 8777, Z3, False, 2657080320),
    (A40, "3b", 2048, 128, 6, 1, 768, 9538, Z3, False, 2651837440),
    (A40, "3b", 2048, 64, 6, 1, 384, 9736, Z3, False, 2651837440),
    (A40, "3b", 2048, 32, 6, 1, 192, 9914, Z3, False, 2651837440),
    (A40, "3b", 2048, 16, 5, 1, 80, 9750, Z3, False, 2651837440),
    (A40, "3b", 2048, 8, 5, 8, 320, 10065, Z3, False, 2651837440),
    (A40, "3b", 1024, 8, 10, 8, 640, 10731, Z3, False, 2649216000),
    (A40, "3b", 512, 8, 20, 8, 1280, 11324, Z3, False, 2647905280),
    (A40, "1b", 32768, 8, 1, 4, 32, 5095, Z3, True, 1378865152),
    (A40, "1b", 16384, 8, 1, 8, 64, 9715, Z3, False, 1345310720),
    (A40, "1b", 8192, 8, 2, 8, 128, 13474, Z3, False, 1328533504),
    (A40, "1b", 4096, 8, 4, 8, 256, 16856, Z3, False, 1320144896),
    (A40, "1b", 2048, 128, 10, 1, 1280, 18647, Z3, False, 1315950592),
    (A40, "1b", 2048, 64, 10, 1, 640, 19001, Z3, False, 1315950592),
    (A40, "1b", 2048, 32, 10, 1, 320, 15555, Z3, False, 1315950592),
    (A40, "1b", 2048, 16, 8, 1, 128, 19085, Z3, False, 1315950592),
    (A40, "1b", 2048, 8, 8, 8, 512, 19271, Z3, False, 1315950592),
    (A40, "1b", 1024, 8, 16, 8, 1024, 20959, Z3, False, 1313853440),
    (A40, "1b", 512, 8, 32, 8, 2048, 21782, Z3, False, 1312804864),
    (A40, "760m", 32768, 8, 1, 4, 32, 7183, Z3, True, 807656448),
    (A40, "760m", 16384, 8, 1, 4, 32, 13914, Z3, False, 782490624),
    (A40, "760m", 8192, 8, 3, 4, 96, 20106, Z3, False, 769907712),
    (A40, "760m", 4096, 8, 6, 4, 192, 25863, Z3, False, 763616256),
    (A40, "760m", 2048, 128, 12, 1, 1536, 28940, Z3, False, 760470528),
    (A40, "760m", 2048, 64, 12, 1, 768, 29344, Z3, False, 760470528),
    (A40, "760m", 2048, 32, 12, 1, 384, 29648, Z3, False, 760470528),
    (A40, "760m", 2048, 16, 12, 1, 192, 29607, Z3, False, 760470528),
    (A40, "760m", 2048, 8, 12, 4, 384, 30173, Z3, False, 760470528),
    (A40, "760m", 1024, 8, 24, 4, 768, 33422, Z3, False, 758897664),
    (A40, "760m", 512, 8, 48, 4, 1536, 34938, Z3, False, 758111232),
    (A40, "350m", 32768, 8, 1, 4, 32, 13416, Z3, False, 387442688),
    (A40, "350m", 16384, 8, 2, 4, 64, 22896, Z3, False, 370665472),
    (A40, "350m", 8192, 8, 4, 4, 128, 34933, Z3, False, 362276864),
    (A40, "350m", 4096, 8, 8, 4, 256, 46833, Z3, False, 358082560),
    (A40, "350m", 2048, 128, 18, 1, 2304, 51934, Z3, False, 355985408),
    (A40, "350m", 2048, 64, 18, 1, 1152, 52689, Z3, False, 355985408),
    (A40, "350m", 2048, 32, 18, 1, 576, 53811, Z3, False, 355985408),
    (A40, "350m", 2048, 16, 18, 1, 288, 55413, Z3, False, 355985408),
    (A40, "350m", 2048, 8, 16, 4, 512, 55995, Z3, False, 355985408),
    (A40, "350m", 1024, 8, 32, 4, 1024, 62523, Z3, False, 354936832),
    (A40, "350m", 512, 8, 64, 4, 2048, 66284, Z3, False, 354412544),
    (A40, "125m", 32768, 8, 1, 4, 32, 32651, Z3, False, 148904448),
    (A40, "125m", 16384, 8, 2, 3, 48, 55484, Z3, False, 136321536),
    (A40, "125m", 8192, 8, 5, 3, 120, 86858, Z3, False, 130030080),
    (A40, "125m", 4096, 8, 13, 3, 312, 115162, Z3, False, 126884352),
    (A40, "125m", 2048, 128, 26, 1, 3328, 123936, Z3, False, 125311488),
    (A40, "125m", 2048, 64, 26, 1, 1664, 125234, Z3, False, 125311488),
    (A40, "125m", 2048, 32, 26, 1, 832, 127122, Z3, False, 125311488),
    (A40, "125m", 2048, 16, 26, 1, 416, 130535, Z3, False, 125311488),
    (A40, "125m", 2048, 8, 26, 3, 624, 136334, Z3, False, 125311488),
    (A40, "125m", 1024, 8, 52, 3, 1248, 148289, Z3, False, 124525056),
    (A40, "125m", 512, 8, 104, 3, 2496, 156735, Z3, False, 124131840),
]


def shapes() -> dict[str, dict]:
    """Every (size, sequence) shape the rows run, for public_cases.SHAPES."""
    return {shape_key(r[1], r[2]): shape(r[1], r[2]) for r in ROWS}


def mpt_rows() -> list[PublicRow]:
    out = []
    for sec, size, seq, gpus, mbs, acc, gbs, tps, zero, ac, _ in ROWS:
        title, node, gpu, prec = _SECTIONS[sec]
        assert gbs == mbs * acc * gpus
        out.append(PublicRow(
            MPT.format(t=title),
            f"MPT-{size.upper()} seq {seq}, {gpus} x {title.split(',')[0]}, micro-batch {mbs} "
            f"x {acc}, ZeRO-{zero}{', full AC' if ac else ''}",
            f"shape:{shape_key(size, seq)}", node, max(1, gpus // 8), tps, gpu=gpu,
            gpus_per_node=gpus if gpus < 8 else None, zero=zero, seq=seq, gbs=gbs, mbs=mbs,
            recompute="full" if ac else "none", kernel="fa1",
            assumed=_ASM + (_FP8_ASM if prec == "fp8" else ""),
            **(dict(precision="fp8", fp8_recipe="te-delayed") if prec == "fp8" else {})))
    return out
