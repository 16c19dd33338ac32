"""The loss over the logits (compute.loss_bytes): HBM bytes per logit by implementation, the
Megatron-LM profile following --cross-entropy-fusion, the export writing what the profile timed,
and the public rows running their source's loss (public_row.loss_of)."""

from __future__ import annotations

import pytest

from optimus_calc.equations import compiled as eq
from optimus_calc.public_row import FUSED_XENTROPY, PublicRow, loss_of
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Training

# llama-3-8b on one DGX H100, DP 8, global batch 8: one micro-batch of 8,192 tokens per GPU,
# vocabulary 128,256 on TP 1; h100-sxm HBM 3,350 GB/s at hbm_efficiency 0.9
LLAMA = ("step", "llama-3-8b", "--node", "dgx-h100", "--nodes", "1", "--tp", "1", "--pp", "1",
         "--zero", "1", "--seq-len", "8192", "--global-batch", "8", "--format", "json")
LOGITS = 8192 * 128256
HBM = 3350e9 * 0.9


def test_loss_bytes_by_hand():
    # 38 B x 4,096 tokens x 32,000 / 8 logits = 622,592,000 B (Megatron's unfused forward)
    assert float(eq.compute__loss_bytes(beta_loss=38, tau_mb=4096, V=32000, t=8)) == 622_592_000


def test_the_megatron_profile_follows_the_flag(cat):
    from optimus_calc.frameworks import plugin
    prof = plugin("megatron").profile

    def applied(**flags):
        _, asm, _, _ = prof.apply(Training(seq_len=4096, **flags), Assumptions())
        return asm.loss_forward_bytes_per_logit, asm.loss_backward_bytes_per_logit
    # native (the default, what the export writes) 22 / 10; Transformer Engine's 8 / 14;
    # none leaves the assumptions' unfused count, 38 / 14 (compute.loss_bytes' source)
    assert applied() == (22, 10)
    assert applied(cross_entropy_fusion="te") == (8, 14)
    assert applied(cross_entropy_fusion="none") == (38, 14)
    # the user's --assume wins over the profile
    _, asm, _, _ = prof.apply(Training(seq_len=4096),
                              Assumptions(loss_forward_bytes_per_logit=5))
    assert asm.loss_forward_bytes_per_logit == 5


def test_step_times_each_loss_by_hand(run):
    # forward: (38 - 22) B and (38 - 8) B x 8,192 x 128,256 / (3,350 GB/s x 0.9) = 5.574 and
    # 10.451 ms less than unfused; backward: (14 - 10) B = 1.393 ms less natively, TE's 14 B as
    # unfused
    got = {k: run(*LLAMA, "--framework", "megatron", "--cross-entropy-fusion", k).json()
           for k in ("none", "native", "te")}
    none = got["none"]
    for k, (df, db) in {"native": (16, 4), "te": (30, 0)}.items():
        assert none["forward_s"] - got[k]["forward_s"] == pytest.approx(df * LOGITS / HBM,
                                                                        rel=1e-9)
        assert none["backward_s"] - got[k]["backward_s"] == pytest.approx(
            db * LOGITS / HBM, rel=1e-9, abs=1e-12)
    assert got["te"]["training"]["cross_entropy_fusion"] == "te"
    assert "cross_entropy_fusion" not in got["native"]["training"]  # the default is not named
    # framework-neutral physics reads no launch flag: the assumptions' 38 / 14
    neutral = run(*LLAMA).json()
    te = run(*LLAMA, "--cross-entropy-fusion", "te").json()
    assert neutral["elementwise_s"] == te["elementwise_s"]


def test_the_export_writes_the_loss_the_profile_timed(run):
    args = ("plan", "llama-3-8b", "--node", "dgx-h100", "--tp", "1", "--pp", "1",
            "--framework", "megatron", "--export", "megatron")
    assert "--cross-entropy-loss-fusion" in run(*args).out
    assert "--cross-entropy-loss-fusion" not in run(*args, "--cross-entropy-fusion", "none").out
    # Megatron-LM @ d98e8a6 refuses Transformer Engine's (training/arguments.py L1697-1702)
    r = run(*args, "--cross-entropy-fusion", "te")
    assert r.code == 2 and "Megatron-LM refuses Transformer Engine's cross entropy" in r.err
    assert r.err.count("\n") == 1


def test_public_rows_run_their_sources_loss():
    def row(source, **kw):
        return PublicRow(source, "x", "llama-3-8b", "dgx-h100", 1, 1.0, **kw)
    assert loss_of(row("Megatron-Bridge docs/performance-summary.md, release 26.02")) == ("te", {})
    assert loss_of(row("Megatron-LM README, Training Speed")) == ("none", {})
    assert loss_of(row("NeMo Framework performance summary")) == ("native", {})
    assert loss_of(row("llm-foundry scripts/train/benchmarking/README.md")) == ("native",
                                                                               FUSED_XENTROPY)
    assert loss_of(row("NeMo x", cross_entropy="none")) == ("none", {})
    # a row's own setting wins over its source's default
    assert loss_of(row("llm-foundry x", cross_entropy="te")) == ("te", {})


def test_a_typed_loss_wins_over_the_rows(cat):
    # `validate --assume loss_forward_bytes_per_logit=X` moves every row, the flash-attn ones too
    # (setup wrote the rows' 4 / 4 over the typed value: a cold review, round 16)
    from optimus_calc.public_cases import public_rows
    from optimus_calc.validate_public import setup
    mpt = next(r for r in public_rows() if r.source.startswith("llm-foundry") and not r.why_not)
    assert setup(cat, mpt).asm.loss_forward_bytes_per_logit == 4
    typed = setup(cat, mpt, Assumptions(loss_forward_bytes_per_logit=100)).asm
    assert (typed.loss_forward_bytes_per_logit, typed.loss_backward_bytes_per_logit) == (100, 4)
