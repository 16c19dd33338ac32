"""Sliding-window attention (compute.attention_span): gpt-oss and Gemma 2 alternate 128- or
4096-token windowed layers with full ones, Gemma 3 has five windowed layers to a full one,
Mistral-7B-v0.1 and StarCoder2 window every layer. The attention core's FLOPs see the span."""

import json
from pathlib import Path

import pytest

from optimus_calc.equations import compiled as eq
from optimus_calc.errors import InputError
from optimus_calc.hf_import import load_hf_config
from optimus_calc.specs.model import Model

HF = Path(__file__).parent / "data" / "hf"


def test_span_by_hand():
    # a causal query i attends to min(i + 1, W) keys: W - W^2 / (2 s) on average for s > W, so
    # a windowed layer's un-halved span is 2 W - W^2 / s. gpt-oss-120b at s 4096: 18 of 36
    # layers at (256 - 16384 / 4096) / 4096 = 0.0615234375 of s: 4096 x (18 + 18 x
    # 0.0615234375) / 36 = 2174.0 tokens
    assert float(eq.compute__attention_span(L=36, L_sw=18, W_sw=128, s=4096)) == \
        pytest.approx(2174.0, abs=1e-9)
    # a sequence inside the window, and no window: the whole sequence
    assert float(eq.compute__attention_span(L=36, L_sw=18, W_sw=128, s=100)) == 100
    assert float(eq.compute__attention_span(L=32, L_sw=0, W_sw=0, s=8192)) == 8192


@pytest.mark.parametrize("name,window,layers", [
    ("gpt_oss", 128, 18),      # GptOssConfig: 128, every other of 36 (the config omits both)
    ("gemma2", 4096, 21),      # 42 layers alternating (configuration_gemma2.py L95-98)
    ("gemma3", 1024, 52),      # 62 layers, every 6th full (sliding_window_pattern 6): 62 - 10
    ("starcoder2", 4096, 30),  # its window on every layer
    ("mistral", 4096, 32),     # Mistral-7B-v0.1's 4096 on every layer (null from v0.2)
    ("llama", 0, 0)])
def test_hf_configs_give_their_windows(name, window, layers):
    m = load_hf_config(HF / name / "config.json")
    assert (m.sliding_window, m.sliding_window_layers) == (window, layers)


def test_layer_types_are_counted_and_checked(tmp_path):
    cfg = json.loads((HF / "gpt_oss" / "config.json").read_text())
    cfg["layer_types"] = ["sliding_attention"] * 30 + ["full_attention"] * 6
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    assert load_hf_config(tmp_path / "config.json").sliding_window_layers == 30
    cfg["layer_types"] = ["sliding_attention"] * 35
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(InputError, match="field 'layer_types': expected a list of 36"):
        load_hf_config(tmp_path / "config.json")


def test_a_window_needs_its_layers_and_the_other_way_round():
    base = dict(name="m", layers=4, hidden=64, heads=4, ffn_hidden=256, ffn_type="swiglu",
                vocab=100, tied_embeddings=True, position_embedding="rope", norm="rmsnorm",
                source="test")
    with pytest.raises(ValueError, match="sliding_window_layers"):
        Model(**base, sliding_window=0, sliding_window_layers=2)
    with pytest.raises(ValueError, match="sliding_window_layers"):
        Model(**base, sliding_window=128, sliding_window_layers=5)


def test_step_counts_the_windowed_layers_span(run, tmp_path):
    """gpt-oss-120b's model FLOPs at 4,096 tokens, with its window and without (the config's
    sliding_window 0): the attention core's forward is 2 s (d_s + d_v) per token and layer,
    d_s = d_v = 64 heads x 64 = 4096, three passes; the span 2174.0 against 4096 over 36 layers
    and 8 x 4096 tokens: 3 x 36 x 32768 x 2 x (4096 - 2174) x 8192 = 1.1144e14 FLOPs fewer."""
    cfg = json.loads((HF / "gpt_oss" / "config.json").read_text())
    cfg["sliding_window"] = 0
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    args = ("--node", "dgx-h100", "--nodes", 1, "--ep", 8, "--zero", 1, "--seq-len", 4096,
            "--global-batch", 8, "--format", "json")
    win = run("step", str(HF / "gpt_oss"), *args).json()
    full = run("step", str(tmp_path), *args).json()
    assert full["model_flops"] - win["model_flops"] == pytest.approx(
        3 * 36 * 32768 * 2 * (4096 - 2174.0) * 8192, rel=1e-9)
    assert win["step_time_s"] < full["step_time_s"]


def test_fit_keeps_the_windowed_share_of_the_layers(cat):
    # gpt-oss-120b, 18 windowed of 36: a 5-layer copy keeps round(18 x 5 / 36) = 2 (2.5 rounds
    # to even), never more windowed layers than layers (the span's L - L_sw >= 0)
    from optimus_calc.analyses.fit import with_layers
    m = cat.get("gpt-oss-120b", "model")
    assert (with_layers(m, 5).layers, with_layers(m, 5).sliding_window_layers) == (5, 2)
    assert with_layers(m, 1).sliding_window_layers == 1
    assert with_layers(m, 72).sliding_window_layers == 36
    assert with_layers(cat.get("llama-3-8b", "model"), 5).sliding_window_layers == 0


@pytest.mark.parametrize("family,absent,null", [
    ("mistral", (4096, 32), (0, 0)),   # MistralConfig sliding_window: int | None = 4096
    ("gpt_oss", (128, 18), (0, 0)),    # GptOssConfig 128 on every other of 36 layers
    ("starcoder2", (0, 0), (0, 0)),    # Starcoder2Config sliding_window: int | None = None
])
def test_absent_window_is_the_class_default_and_null_is_none(tmp_path, family, absent, null):
    """transformers fills an absent field with the config class default and keeps an explicit
    null as None (no window). The mistral mapper read an absent field as no window (where
    MistralConfig gives 4096) and the shared reader read null as the default (gpt-oss: 128),
    against its own docstring ("null or 0: none")."""
    cfg = json.loads((HF / family / "config.json").read_text())
    cfg.pop("sliding_window", None)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    m = load_hf_config(tmp_path / "config.json")
    assert (m.sliding_window, m.sliding_window_layers) == absent
    cfg["sliding_window"] = None
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    m = load_hf_config(tmp_path / "config.json")
    assert (m.sliding_window, m.sliding_window_layers) == null


def test_mixtral_reads_its_window(tmp_path):
    """MixtralAttention is Mistral's, windowed on every layer when the config sets one
    (MixtralConfig's default None); the mixtral mapper ignored the field."""
    cfg = json.loads((HF / "mixtral" / "config.json").read_text())
    cfg["sliding_window"] = 4096
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    m = load_hf_config(tmp_path / "config.json")
    assert (m.sliding_window, m.sliding_window_layers) == (4096, cfg["num_hidden_layers"])


def test_step_says_the_span_it_timed(run):
    """`step` on a windowed model said nothing of the window. mistral-7b at 8,192 tokens: every
    layer's span 2 x 4096 - 4096^2 / 8192 = 6,144 tokens; gpt-oss-20b at 4,096: 12 of 24
    layers at 2 x 128 - 128^2 / 4096 = 252, the rest 4,096: (12 x 4096 + 12 x 252) / 24 =
    2,174; a model without a window gets no such line."""
    out = " ".join(run("step", "mistral-7b", "--seq-len", 8192).out.split())
    assert ("sliding window 4,096 tokens on 32 of 32 layers: the attention core's FLOPs see a "
            "6,144-token span of the 8,192") in out
    out = " ".join(run("step", "gpt-oss-20b", "--seq-len", 4096, "--no-flash-attn").out.split())
    assert "on 12 of 24 layers: the attention core's FLOPs see a 2,174-token span" in out
    assert "unfused, the kernel computes all of it" in out
    assert "sliding window" not in run("step", "llama-2-7b").out
