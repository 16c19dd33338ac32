"""`fit --solve layers` says what binds at the answer, and a change whose own search stopped at
its cap says "at least" (rev13c). Before: the binding described the catalog model (llama-2-7b's
32 layers: "optimizer state (80.9 GB) ... of the 133.0 GB ... exceeds"), not the 17 layers
answered, and "with ZeRO-3 (--zero 3): layers 100000" read as exact."""

from __future__ import annotations

import pytest


def test_layers_binding_is_at_the_answer(run):
    d = run("fit", "llama-2-7b", "--solve", "layers", "--format", "json").json()
    assert d["max_layers"] == 17
    # 17 layers of llama-2-7b: 3.703e9 parameters (fit's max_params), Adam's 12 bytes each
    # replicated on DP 8 with ZeRO-0: 12 x 3.703e9 = 44.4 GB, the largest part, and it fits
    assert d["max_params"] == pytest.approx(3.703e9, rel=1e-3)
    assert d["binding_part"] == "optimizer state"
    assert "optimizer state (44.4 GB)" in d["binding"] and "fits with" in d["binding"]


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
