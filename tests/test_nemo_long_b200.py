"""NeMo's B200 long-sequence table as public cases (public_cases_long.py; round 28, issue 32):
the rows run the layout as published, and B200's cuDNN efficiency is the one the table's
attention-bound row implies."""

import pytest

from optimus_calc.public_cases import public_rows

# NVIDIA/NeMo docs/source/performance/performance_long_sequence.md, LLAMA3-8B (FP8) - B200, as
# first published (14d427f575): (SeqLen K, # of GPUs, batch, TP, CP, DP, TFLOPS / GPU). The
# later version (19fadb67b0, cited @ 8cfedd7) prints 8, 16, ..., 1024 GPUs for the same rows
TABLE = [(8, 2, 512, 1, 1, 2, 1671), (16, 4, 256, 1, 1, 4, 1717), (32, 8, 128, 1, 2, 4, 1624),
         (64, 16, 64, 1, 4, 4, 1600), (128, 32, 32, 2, 4, 4, 1588), (256, 64, 16, 4, 4, 4, 1590),
         (512, 128, 8, 4, 8, 4, 1619), (1024, 256, 4, 4, 16, 4, 1608)]


def _rows():
    return [r for r in public_rows() if r.label.startswith("B200 Llama3-8B FP8 seq")]


def test_the_rows_run_the_layout_as_first_published():
    rows = _rows()
    assert len(rows) == 8 and not any(r.why_not for r in rows)
    for r, (k, gpus, gbs, tp, cp, dp, tflops) in zip(rows, TABLE):
        # the first version's GPU column is TP x CP x DP on every row (PP 1)
        assert gpus == tp * cp * dp
        on = r.nodes * (r.gpus_per_node or 8)
        assert (on, r.seq, r.gbs, r.tp, r.pp, r.cp, r.published) == (
            gpus, k * 1024, gbs, tp, 1, cp, tflops)
        assert (r.unit, r.precision, r.fp8_recipe, r.framework) == (
            "tflops:unhalved", "fp8", "te-delayed", "megatron")


def test_b200_cudnn_is_near_what_the_attention_bound_row_implies(cat):
    # at 1M tokens Llama 3 8B's attention is 12 L d s = 12 x 32 x 4096 x 1,048,576 = 1.65e12
    # FLOPs a token (un-halved) against 6 N = 4.8e10: 97% of the count. Of 1,608 un-halved
    # TFLOP/s per GPU, attention executes 1,608 x 0.97 / 2 = 782 (causal half); the GEMMs' 3%
    # in FP8 at about half of 4,500 take about 2% of the step, so attention runs at
    # 782 / 0.98 / 2,250 (B200 dense BF16) = 0.355 of the peak
    share = 12 * 32 * 4096 * 1024 ** 2 / (12 * 32 * 4096 * 1024 ** 2 + 6 * 8.03e9)
    assert share == pytest.approx(0.97, abs=0.005)
    implied = 1608 * share / 2 / 0.98 / 2250
    assert implied == pytest.approx(0.355, abs=0.002)
    # shipped: 0.34, validate's in-sample fit over every row with the GEMM curve held (0.33
    # and 0.34 tie, 8.383% / 8.384%; 8.501% at H100's 0.26, which B200 carried before round
    # 28); B300 shares B200's value
    for gpu in ("b200", "b300"):
        eta = cat.get(gpu, "gpu").flash_attention_eta
        assert eta == pytest.approx(0.34) and abs(eta - implied) <= 0.02
