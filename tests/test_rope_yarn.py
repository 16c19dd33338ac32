"""YaRN RoPE (compute.rope_bytes): the model fields and their import, the Megatron-LM profile's
unfused fallback timed by hand, and the export building the same position embedding."""

from __future__ import annotations

from pathlib import Path

import pytest

from optimus_calc.equations import compiled as eq
from optimus_calc.hf_import import load_hf_config
from optimus_calc.specs.model import Model

# gpt-oss-120b: 36 layers, 64 query and 8 KV heads of 64: (64 + 8) x 64 = 4,608 rotated
# elements per token; one DGX H100 node per EP group of 8, DP 64, global batch 64: one
# micro-batch of 4,096 tokens per GPU; h100-sxm HBM 3,350 GB/s at hbm_efficiency 0.9
OSS = ("step", "gpt-oss-120b", "--node", "dgx-h100", "--nodes", "8", "--tp", "1", "--pp", "1",
       "--ep", "8", "--zero", "1", "--seq-len", "4096", "--micro-batch", "1",
       "--global-batch", "64", "--format", "json")
ROT = 4096 * 4608
HBM = 3350e9 * 0.9
OFF = ("--assume", "rope_unfused_forward_bytes_per_element=0",
       "--assume", "rope_unfused_backward_bytes_per_element=0")


def test_rope_bytes_by_hand():
    # 20 B x 4,096 tokens x 4,608 elements / TP 1 = 377,487,360 B (Megatron's eager forward)
    assert float(eq.compute__rope_bytes(beta_rope=20, tau_mb=4096, n_rot=4608, t=1,
                                        u_yarn=1)) == 377_487_360
    # TP 2 halves the heads of each GPU; without YaRN (u 0) nothing
    assert float(eq.compute__rope_bytes(beta_rope=24, tau_mb=4096, n_rot=4608, t=2,
                                        u_yarn=1)) == 24 * ROT / 2
    assert float(eq.compute__rope_bytes(beta_rope=24, tau_mb=4096, n_rot=4608, t=1,
                                        u_yarn=0)) == 0


def test_megatron_times_the_eager_rope_by_hand(run):
    # forward 36 layers x 20 B x 18,874,368 / (3,350 GB/s x 0.9) = 4.507 ms; backward 24 B:
    # 5.409 ms; full recomputation re-runs the forward's 4.507 ms in the backward
    meg = run(*OSS, "--framework", "megatron").json()
    fused = run(*OSS, "--framework", "megatron", *OFF).json()
    assert meg["forward_s"] - fused["forward_s"] == pytest.approx(36 * 20 * ROT / HBM, rel=1e-9)
    assert meg["backward_s"] - fused["backward_s"] == pytest.approx(36 * 24 * ROT / HBM,
                                                                    rel=1e-9)
    rf = ("--recompute", "full")
    full = run(*OSS, "--framework", "megatron", *rf).json()
    full0 = run(*OSS, "--framework", "megatron", *rf, *OFF).json()
    assert full["backward_s"] - full0["backward_s"] == pytest.approx(36 * 44 * ROT / HBM,
                                                                     rel=1e-9)


def test_only_yarn_models_and_the_profile_pay_it(run):
    # framework-neutral physics keeps the fused kernel's count (the assumptions' 0 bytes)
    assert run(*OSS).json()["forward_s"] == run(*OSS, *OFF).json()["forward_s"]
    # a model without YaRN (plain RoPE) pays nothing under Megatron-LM either
    llama = ("step", "llama-3-8b", "--node", "dgx-h100", "--nodes", "1", "--zero", "1",
             "--seq-len", "4096", "--global-batch", "8", "--framework", "megatron",
             "--format", "json")
    assert run(*llama).json()["forward_s"] == run(*llama, *OFF).json()["forward_s"]


def test_the_catalog_and_the_import_carry_yarn(cat):
    m = cat.get("gpt-oss-120b", "model")
    assert (m.rope_yarn_factor, m.rope_yarn_original_max_position) == (32.0, 4096)
    got = load_hf_config(Path(__file__).parent / "data" / "hf" / "gpt_oss" / "config.json")
    assert (got.rope_yarn_factor, got.rope_yarn_original_max_position) == (32.0, 4096)
    # Llama 3.1's rope_scaling is rope_type llama3, not YaRN
    assert cat.get("llama-3-8b", "model").rope_yarn_factor == 1


def test_yarn_needs_rope(cat):
    base = cat.get("gpt2-xl", "model").model_dump()
    with pytest.raises(ValueError, match="rope_yarn_factor scales RoPE"):
        Model.model_validate({**base, "rope_yarn_factor": 4.0})


def test_the_megatron_export_builds_yarn(run, tmp_path):
    r = run("plan", "gpt-oss-120b", "--nodes", "8", "--node", "dgx-h100", "--framework",
            "megatron", "--seq-len", "4096", "--global-batch", "512", "--export", "megatron")
    assert r.code == 0
    assert "--position-embedding-type yarn" in r.out
    assert "--rotary-scaling-factor 32.0" in r.out
    assert "--yarn-original-max-position-embeddings 4096" in r.out
    r = run("plan", "llama-3-8b", "--nodes", "1", "--framework", "megatron", "--export",
            "megatron")
    assert "--position-embedding-type rope" in r.out and "yarn" not in r.out


def test_tp_past_the_kv_heads_keeps_one_kv_head_per_rank(run):
    # TP 16 over 8 KV heads: each rank rotates 64 / 16 = 4 query heads and one whole KV head
    # (Megatron-core attention.py L353-360), (64 + 16) x 64 / 16 = 320 elements per token, not
    # (64 + 8) x 64 / 16 = 288: forward 36 x 20 B x 4,096 x 320 / (3,350 GB/s x 0.9)
    tp16 = ("step", "gpt-oss-120b", "--node", "dgx-h100", "--nodes", "16", "--tp", "16",
            "--pp", "1", "--ep", "8", "--etp", "1", "--zero", "1", "--seq-len", "4096",
            "--micro-batch", "1", "--global-batch", "8", "--framework", "megatron",
            "--format", "json")
    on, off = run(*tp16).json(), run(*tp16, *OFF).json()
    assert on["forward_s"] - off["forward_s"] == pytest.approx(36 * 20 * 4096 * 320 / HBM,
                                                               rel=1e-9)


@pytest.mark.parametrize("scaling, field", [
    ('[1, 2]', "rope_scaling"), ('"yarn"', "rope_scaling"),
    ('{"rope_type": "yarn"}', "rope_scaling.factor"),
    ('{"rope_type": "yarn", "factor": "32"}', "rope_scaling.factor"),
    ('{"rope_type": "yarn", "factor": 32, "truncate": 0}', "rope_scaling.truncate")])
def test_a_bad_rope_scaling_is_named(tmp_path, scaling, field):
    import json
    from optimus_calc.errors import InputError
    cfg = json.loads((Path(__file__).parent / "data" / "hf" / "gpt_oss" / "config.json")
                     .read_text())
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg).replace(json.dumps(cfg["rope_scaling"]), scaling))
    with pytest.raises(InputError, match=f"'{field}'"):
        load_hf_config(p)


def test_truncate_false_is_exported(cat):
    # gpt-oss's YaRN keeps its correction range unrounded (HF truncate false; Megatron-Bridge
    # yarn_correction_range_round_to_int False): the export says so, Megatron rounds by default
    from optimus_calc.frameworks.megatron_export import megatron_args
    from optimus_calc.specs.training import Layout, Training
    m = cat.get("gpt-oss-20b", "model")
    got = load_hf_config(Path(__file__).parent / "data" / "hf" / "gpt_oss" / "config.json")
    assert m.rope_yarn_truncate is False and got.rope_yarn_truncate is False
    text = megatron_args(Layout(tp=1, pp=1, dp=8, ep=8, zero=1),
                         Training(seq_len=4096, global_batch=64), m, 8)
    assert "--no-yarn-correction-range-round-to-int" in text
    rounded = m.model_copy(update={"rope_yarn_truncate": True})
    assert "round-to-int" not in megatron_args(Layout(tp=1, pp=1, dp=8, ep=8, zero=1),
                                               Training(seq_len=4096, global_batch=64),
                                               rounded, 8)
