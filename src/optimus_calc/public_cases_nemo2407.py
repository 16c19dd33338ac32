"""NeMo's own performance table of release 24.07 (DGX-H100, FP8), from the NeMo repository's
history: the rows the NeMo 24.12 documentation page does not repeat. Data only:
validate_public.py runs them (public_cases.public_rows)."""

from __future__ import annotations

from optimus_calc.public_row import DS as _DS
from optimus_calc.public_row import MEG as _MEG
from optimus_calc.public_row import PublicRow

# NVIDIA/NeMo docs/source/performance/performance_summary.md @ 8e3d65dcfe (2024-09-09, "24.07
# perf numbers"; removed by d31653f792 for the documentation site), Pretraining: container
# NeMo 24.07, DGX-H100, FP8; model, GPUs, GBS, MBS, sequence, TP, PP, CP, VP, tokens/s/GPU,
# model TFLOP/s/GPU. Five of its twelve rows (GPT3-175B on 512 GPUs, Llama2-70B, Llama3-8B and
# 70B, Nemotron-340B) carry the same figures as the NeMo 24.12 page's (public_cases._nemo_dense);
# the 24.12 page's row is the case, but for Nemotron-340B, whose batch only this table publishes
NEMO2407 = ("NeMo docs/source/performance/performance_summary.md @ 8e3d65dcfe, NeMo 24.07, "
            "DGX-H100 FP8")
_ASM = ("FP8 delayed scaling (te-delayed: Transformer Engine's only recipe in 2024); recompute "
        "none and the distributed optimizer with the recipe's overlaps (NeMo defaults; the "
        "table publishes none of these)")
_SAME = "the same figure as the NeMo 24.12 page's row (public_cases._nemo_dense): counted once"
# NeMo's GPT-3 5B and 20B (nemo/collections/llm/gpt/model/base.py @ 8e3d65dcfe GPTConfig5B
# L195-200, GPTConfig20B L213-218): GPT-2 vocabulary, learned positions, sequence 2048
# GPTConfig5B/20B set no dropout: Megatron-core's 0.1 (transformer_config.py L188-191 @ d98e8a6);
# GPTConfig175B sets 0.0 (base.py L550-551 @ 8cfedd7), so its row runs without
_DROPOUT = dict(dropout=0.1, dropout_source="Megatron-core TransformerConfig default 0.1")
# NeMo's Nemotron configs (nemo/collections/llm/gpt/model/nemotron.py @ 8e3d65dcfe, NemotronConfig
# L36-50: LayerNorm, squared ReLU, RoPE, no linear biases, untied, no dropout; Nemotron3Config8B
# L76-84, Nemotron4Config22B L100-108, both multi-head); vocabulary 256,000 (perf_metrics_utils.py
# L12); the layouts match NeMo v2.2.0's model_configs_h100.csv L22, L24
_NEMOTRON = dict(family="nemotron", ffn_type="relu2", tied_embeddings=False,
                 position_embedding="rope", norm="layernorm", vocab=256000, seq_len=4096,
                 rotary_percent=0.5, norm_zero_centered_gamma=True,
                 dropout=0.0, dropout_source="NemotronConfig hidden_dropout and "
                 "attention_dropout 0.0 (nemotron.py L44-45 @ 8e3d65dcfe)")
SHAPES = {
    "nemotron-3-8b": dict(layers=32, hidden=4096, heads=32, ffn_hidden=16384, **_NEMOTRON),
    "nemotron-22b": dict(layers=40, hidden=6144, heads=48, ffn_hidden=24576, **_NEMOTRON),
    "nemo-gpt3-5b": dict(layers=24, hidden=4096, heads=32, ffn_hidden=16384, vocab=50257,
                         max_position=2048, seq_len=2048, **_DROPOUT),
    "nemo-gpt3-20b": dict(layers=44, hidden=6144, heads=48, ffn_hidden=24576, vocab=50257,
                          max_position=2048, seq_len=2048, **_DROPOUT),
}
# (label, model, GPUs, GBS, MBS, seq, TP, PP, CP, VP, tokens/s/GPU, why not a case)
ROWS = [
    ("GPT3-5B", "shape:nemo-gpt3-5b", 64, 2048, 4, 2048, 1, 1, 1, 1, 23406, ""),
    ("GPT3-20B", "shape:nemo-gpt3-20b", 64, 256, 2, 2048, 2, 1, 1, 1, 5851, ""),
    ("GPT3-175B", "gpt3-175b", 128, 256, 1, 2048, 4, 8, 1, 6, 716, ""),
    ("GPT3-175B", "gpt3-175b", 512, 2048, 2, 2048, 4, 8, 1, 6, 825, _SAME),
    ("Llama2-7B", "llama-2-7b", 8, 128, 1, 4096, 1, 1, 1, 1, 16934, ""),
    ("Llama2-13B", "llama-2-13b", 16, 128, 1, 4096, 1, 4, 1, 10, 8715, ""),
    ("Llama2-70B", "llama-2-70b", 64, 128, 1, 4096, 4, 4, 1, 20, 1728, _SAME),
    ("Nemotron-8B", "shape:nemotron-3-8b", 64, 256, 4, 4096, 2, 1, 1, 1, 12507, ""),
    ("Nemotron-22B", "shape:nemotron-22b", 64, 256, 2, 4096, 2, 4, 1, 10, 4312, ""),
    ("Nemotron-340B", "nemotron-4-340b", 128, 32, 1, 4096, 8, 8, 1, 12, 326, ""),
    ("Llama3-8B", "llama-3-8b", 8, 128, 1, 8192, 1, 1, 2, 1, 12273, _SAME),
    ("Llama3-70B", "llama-3-70b", 64, 128, 1, 8192, 4, 4, 2, 5, 1524, _SAME),
]


def nemo2407_rows() -> list[PublicRow]:
    """The table's twelve rows as published: eight cases, four listed (the reason per row)."""
    out = []
    for name, model, gpus, gbs, mbs, seq, tp, pp, cp, vp, tps, why in ROWS:
        par = f"TP{tp} PP{pp}" + (f" CP{cp}" if cp > 1 else "") + (f" VP{vp}" if vp > 1 else "")
        extra = {} if why else dict(assumed=_ASM, **_DS, **_MEG)
        if model == "gpt3-175b":
            extra["dropout"] = False
        out.append(PublicRow(NEMO2407, f"H100 {name} FP8 {par}, {gpus} GPUs (NeMo 24.07)",
                             model, "dgx-h100", gpus // 8, tps, tp=tp, pp=pp, cp=cp, vp=vp,
                             seq=seq, gbs=gbs, mbs=mbs, why_not=why, **extra))
    return out
