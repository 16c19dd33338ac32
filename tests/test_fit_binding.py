"""`fit --solve layers` says what binds at the answer, and a change whose own search stopped at
its cap says "at least" (rev13c). Before: the binding described the catalog model (llama-2-7b's
32 layers: "optimizer state (80.9 GB) ... of the 133.0 GB ... exceeds"), not the 17 layers
answered, and "with ZeRO-3 (--zero 3): layers 100000" read as exact."""

from __future__ import annotations

import pytest


def test_layers_binding_is_at_the_answer(run):
    d = run("fit", "llama-2-7b", "--solve", "layers", "--format", "json").json()
    n = d["max_layers"]
    assert 1 <= n < 32   # the 32-layer model does not fit on one DGX A100 at ZeRO-0
    # n layers of llama-2-7b by hand: 4 h^2 + 3 h f = 4 x 4096^2 + 3 x 4096 x 11008 weights a
    # layer plus 2 x 4096 norms, the untied 32000 x 4096 embedding and head and the final norm
    params = n * (4 * 4096**2 + 3 * 4096 * 11008 + 2 * 4096) + 2 * 32000 * 4096 + 4096
    assert d["max_params"] == pytest.approx(params, rel=1e-9)
    # the binding describes the answer: Adam's 12 bytes each, replicated on DP 8 at ZeRO-0
    assert d["binding_part"] == "optimizer state"
    assert f"optimizer state ({12 * params / 1e9:.1f} GB)" in d["binding"]
    assert "fits with" in d["binding"]


def test_a_capped_change_says_at_least(run, tmp_path):
    # a 1-layer, 64-wide model: with ZeRO-3 over 8 GPUs a layer's 16 B x ~50k parameters / 8
    # is ~0.1 MB, so ~7e5 layers would fit; the search stops at its cap of 100,000
    (tmp_path / "m.toml").write_text(
        '[[model]]\nname = "tiny"\nfamily = "gpt"\nlayers = 1\nhidden = 64\nheads = 1\n'
        'ffn_hidden = 256\nffn_type = "gelu"\nvocab = 10\ntied_embeddings = true\n'
        'position_embedding = "learned"\nmax_position = 2048\nnorm = "layernorm"\n'
        'seq_len = 8\nsource = "test"\n')
    r = run("--catalog-dir", tmp_path, "fit", "tiny", "--solve", "layers")
    assert r.code == 0, r.err
    out = " ".join(r.out.split())
    assert "with ZeRO-3 (--zero 3): layers at least 100000 (the search's cap)" in out
