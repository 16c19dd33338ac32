"""NeMo AutoModel's H100 pre-training table as public cases (public_cases_automodel.py; round
27, issue 32: a source per regime the project had not cited)."""

import pytest

from optimus_calc.public_cases import public_rows

# docs/performance-summary.md @ 89e3a9fdd (Qwen3 @ 8d9bfb90e) / .mdx @ 36044ad3d: (#GPUs, GBS,
# MBS, LBS, GA, TP, PP, CP, EP, VP, tokens/s/GPU) as the table prints them
TABLE = {
    "H100 DeepSeek-V3 PP4 VP8 EP64 FSDP, 1024 GPUs (AutoModel)":
        (1024, 8192, 1, 8, 4, 1, 4, 1, 64, 8, 865),
    "H100 DeepSeek-V3 PP4 VP8 EP64 FSDP, 256 GPUs (AutoModel)":
        (256, 512, 1, 8, 1, 1, 4, 1, 64, 8, 1002),
    "H100 Kimi-K2 PP8 VP4 EP32 FSDP, 256 GPUs (AutoModel)":
        (256, 512, 1, 8, 2, 1, 8, 1, 32, 4, 924),
    "H100 Qwen3-30B-A3B EP8 FSDP8, 8 GPUs (AutoModel)": (8, 512, 4, 4, 16, 1, 1, 1, 8, 1, 12040),
    "H100 Llama 3.1 70B FSDP32 CP2, 64 GPUs (AutoModel)": (64, 128, 1, 1, 4, 1, 1, 2, 1, 1, 866.77),
}


def _rows():
    return {r.label: r for r in public_rows() if r.source.startswith("NVIDIA-NeMo/Automodel")}


@pytest.mark.parametrize("label", sorted(TABLE))
def test_the_rows_run_the_layout_as_published(label):
    gpus, gbs, mbs, lbs, ga, tp, pp, cp, ep, vp, tps = TABLE[label]
    r = _rows()[label]
    assert (r.nodes * 8, r.gbs, r.mbs, r.tp, r.pp, r.cp, r.ep, r.vp, r.published) == (
        gpus, gbs, mbs, tp, pp, cp, ep, vp, tps)
    # the table's own arithmetic: GBS = LBS x GA x DP with DP = GPUs / (TP x PP x CP), and a
    # pipeline's local batch is LBS / MBS micro-batches (DeepSeek-V3 1024: 8 x 4 x 256 = 8192)
    assert gbs == lbs * ga * gpus // (tp * pp * cp)
    assert r.framework == "torchtitan" and r.recompute == "full" and not r.why_not
    # FSDP2 under pipeline parallelism is planned as ZeRO-1 (the torchtitan profile's rule);
    # without it, ZeRO-3
    assert r.zero == (1 if pp > 1 else 3)


def test_moe_rows_run_te_attention_and_deepep_and_the_dense_row_sdpa():
    rows = _rows().values()
    moe = [r for r in rows if r.ep > 1]
    # Transformer Engine's DotProductAttention: the H100 catalog's default kernel, cuDNN
    assert len(moe) == 4 and all(r.kernel is None and r.dispatcher == "deepep" for r in moe)
    (dense,) = [r for r in rows if r.model == "llama-3-70b"]
    assert (dense.kernel, dense.grad_bytes, dense.seq) == ("fa2", 2, 8192)
    # its explicit FSDP2 prefetch gathers the next units whatever their size: DeepSpeed's cap
    # on live parameters (1e9, under two 0.86e9 blocks of the 70B) off, as Megatron-FSDP's
    assert dict(dense.assume) == {"zero3_max_live_params": 1e13} and not dense.unfitted


def test_the_rows_the_tool_cannot_express_say_why():
    listed = [r for r in _rows().values() if r.why_not]
    assert len(listed) == 5
    assert sum("FlexAttention" in r.why_not for r in listed) == 2
    assert sum("Mamba" in r.why_not for r in listed) == 3
