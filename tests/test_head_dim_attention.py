"""The fused attention kernel's efficiency at the model's head dim
(efficiency.head_dim_attention_efficiency): the catalog's ratios from the FlashAttention-3
paper's figures, the equation by hand, and where it applies."""

from __future__ import annotations

import pytest

from optimus_calc.equations import compiled as eq
from optimus_calc.evaluate.efficiency import attention_seconds, kernel_efficiency


def _fwd_bwd(fwd: float, bwd: float) -> float:
    """TFLOP/s of forward + backward, the backward at 2.5x the forward's FLOPs."""
    return 3.5 / (1 / fwd + 2.5 / bwd)


# Shah et al. 2024 (FlashAttention-3) on H100 SXM5 at 8k: Fig. 5 causal forward, Fig. 6 backward,
# (forward, backward) TFLOP/s at head dim 64 and 128
FA3_FIGS = {"cudnn": ((379, 432), (529, 518)), "fa3": ((460, 472), (602, 559)),
            "fa2": ((295, 287), (333, 318))}


@pytest.mark.parametrize("gpu", ["h100-sxm", "h100-sxm-500w", "h200", "gh200-144gb", "b200",
                                 "gb200", "gb300", "b300"])
def test_the_catalog_ratios_are_the_papers(cat, gpu):
    # cuDNN 415.4 / 521.1 = 0.797, FA3 468.5 / 570.6 = 0.821, FA2 289.2 / 322.1 = 0.898
    g = cat.get(gpu, "gpu")
    for k, r in g.attention_head_dim64.items():
        at64, at128 = FA3_FIGS[k]
        assert r == pytest.approx(_fwd_bwd(*at64) / _fwd_bwd(*at128), abs=5e-4)
    assert "cudnn" in g.attention_head_dim64
    # no public A100 value: its kernels keep one efficiency at every head dim
    assert not cat.get("a100-80gb", "gpu").attention_head_dim64


def test_the_equation_by_hand():
    # 0.26 x 0.797 = 0.20722 at 64 and below; halfway at 96: 0.26 x (0.797 + 0.203 / 2) =
    # 0.233610; 0.26 at 128 and above
    def f(d):
        return float(eq.efficiency__head_dim_attention_efficiency(eta_k=0.26, r_64=0.797, d_h=d))
    assert f(64) == pytest.approx(0.20722, rel=1e-12)
    assert f(32) == pytest.approx(0.20722, rel=1e-12)
    assert f(96) == pytest.approx(0.23361, rel=1e-12)
    assert f(128) == pytest.approx(0.26, rel=1e-12) and f(256) == pytest.approx(0.26, rel=1e-12)


def test_the_evaluator_reads_it(cat):
    h100, a100 = cat.get("h100-sxm", "gpu"), cat.get("a100-80gb", "gpu")
    assert kernel_efficiency(h100, None, None, 64) == pytest.approx(0.26 * 0.797)
    assert kernel_efficiency(h100, "fa3", None, 64) == pytest.approx(0.285 * 0.821)
    assert kernel_efficiency(h100, None, None, 128) == pytest.approx(0.26)
    assert kernel_efficiency(a100, None, None, 64) == pytest.approx(0.43)
    # 1e15 executed FLOPs at 989 TFLOP/s x 0.20722: 4.8794 s
    assert float(attention_seconds(1e15, 989e12, h100, True, None, None, d_head=64)) == (
        pytest.approx(1e15 / (989e12 * 0.20722), rel=1e-9))


def test_step_names_it_and_assume_replaces_it(run):
    oss = ("step", "gpt-oss-120b", "--node", "dgx-h100", "--nodes", "8", "--ep", "8",
           "--global-batch", "512", "--seq-len", "4096", "--framework", "megatron")
    out = run(*oss).out
    assert "cudnn at 0.20722 (0.26 at head dim 128, efficiency.head_dim_attention_efficiency)" in (
        " ".join(out.split()))
    # --assume attention_efficiency is the user's end-to-end value: no head-dim factor on it
    assumed = " ".join(run(*oss, "--assume", "attention_efficiency=0.2345").out.split())
    assert ("cudnn at 0.2345 (--assume attention_efficiency, at every head dim) on the causally"
            in assumed)
    # without FlashAttention the step runs the unfused core, and says so
    unfused = " ".join(run(*oss, "--no-flash-attn").out.split())
    assert "attention unfused (FlashAttention off) at 0.21" in unfused and "cudnn at" not in (
        unfused)
    llama = " ".join(run("step", "llama-3-8b", "--node", "dgx-h100", "--nodes", "1").out.split())
    assert "cudnn at 0.26 on the causally" in llama
