"""The seven families issue 20 found rejected: llama4 (text model of Scout / Maverick), olmo2,
granite, cohere, nemotron, glm4_moe, starcoder2. Each fixture is a public config.json (where each
value comes from: tests/data/README.md); each count is worked by hand from the module shapes of
transformers' modeling_<family>.py in the comments and checked against the publisher's figure
within 1.5% (issue 20)."""

import json
from pathlib import Path

import pytest

from optimus_calc.errors import InputError
from optimus_calc.hf_import import load_hf_config

DATA = Path(__file__).parent / "data" / "hf"


def _load(name):
    return load_hf_config(DATA / name / "config.json")


def _near(x, published, tol=0.015):
    return abs(x / published - 1) < tol


def test_llama4_scout_text_model_107_8b_total_17_2b_active():
    m = _load("llama4")
    assert m.name.endswith("-text") and "text model only" in m.source
    assert (m.layers, m.moe_layers, m.experts, m.top_k, m.shared_experts) == (48, 48, 16, 1, 1)
    # attention: q 5120*40*128 + k, v 2*5120*8*128 + o 5120*5120 = 62,914,560 (the Q/K norm is
    # an L2 norm without weights); expert 3*5120*8192 = 125,829,120
    assert m.attention_params == 62_914_560 and m.expert_params == 125_829_120
    # MoE layer: attention + 16 routed + 1 shared expert + router 5120*16 + 2 RMSNorms 2*5120
    assert m.moe_layer_params == 62_914_560 + 17 * 125_829_120 + 81_920 + 10_240
    # x 48 + embedding and untied head 2*202048*5120 + final norm 5120
    assert m.total_params == 48 * 2_202_101_760 + 2 * 1_034_485_760 + 5120 == 107_769_861_120
    # issue 20: Scout text model 107.8B total, 17.2B active (model card: 109B / 17B with the
    # vision encoder)
    assert _near(m.total_params, 107.8e9, 0.001)
    # active: attention + top-1 routed + shared expert + router + norms per layer
    assert m.active_params == 48 * 314_664_960 + 2 * 1_034_485_760 + 5120
    assert _near(m.active_params, 17.2e9, 0.005)


def test_llama4_maverick_interleaved_moe_layers():
    m = _load("llama4_maverick")
    # interleave_moe_layer_step 2: layers 1, 3, ..., 47 are MoE (Llama4TextConfig.moe_layers)
    assert (m.moe_layers, m.dense_layers) == (24, 24)
    assert [m.is_moe_layer(i) for i in range(4)] == [False, True, False, True]
    # dense layers use intermediate_size_mlp: 3*5120*16384 = 251,658,240
    assert m.dense_mlp_params == 251_658_240
    # 24 x (62,914,560 + 129 x 125,829,120 + 5120*128 + 10,240) + 24 x (62,914,560
    # + 251,658,240 + 10,240) + 2*202048*5120 + 5120
    assert m.total_params == 400_711_848_960
    # model card: 400B total, 17B active
    assert _near(m.total_params, 400e9) and _near(m.active_params, 17e9)


def test_llama4_explicit_moe_layers_off_the_rule_refused(tmp_path):
    cfg = json.loads((DATA / "llama4" / "config.json").read_text())
    cfg["text_config"]["moe_layers"] = [0, 5]
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    with pytest.raises(InputError, match="text_config.moe_layers"):
        load_hf_config(p)


def test_glm45_air_106b_total_12b_active_mtp_apart():
    m = _load("glm4_moe")
    assert (m.dense_layers, m.moe_layers, m.mtp_layers) == (1, 45, 1)
    # attention: q 4096*96*128 + k, v 2*4096*8*128 + o 12288*4096 + Q, K, V biases
    # 12288 + 2*1024 (o_proj has none) = 109,066,240
    assert m.attention_params == 109_066_240
    # MoE layer: 128 routed + 1 shared expert of 3*4096*1408 = 17,301,504, router 4096*128
    # + e_score_correction_bias 128, 2 RMSNorms
    assert m.moe_layer_params == 109_066_240 + 129 * 17_301_504 + 524_416 + 8192
    # dense layer: attention + 3*4096*10944 + norms = 243,554,304
    assert m.dense_layer_params == 243_554_304
    assert m.total_params == 106_852_251_264 == (45 * 2_341_492_864 + 243_554_304
                                                 + 2 * 151552 * 4096 + 4096)
    # model card / transformers docs glm4_moe.md: 106B total, 12B active; the MTP layer
    # (num_nextn_predict_layers 1) is apart, as for DeepSeek-V3
    assert _near(m.total_params, 106e9)
    assert m.mtp_params > 2e9 and m.total_params + m.mtp_params > 109e9
    # active without the input embedding and the output head (as the 12B is quoted): 12.18B,
    # which rounds to the published whole 12B
    core = m.active_params - 2 * m.vocab * m.hidden
    assert round(core / 1e9) == 12 and abs(core / 12e9 - 1) < 0.016


def test_glm45_355b_qk_norm_three_dense_layers():
    m = _load("glm4_moe_355b")
    assert (m.dense_layers, m.moe_layers, m.qk_norm) == (3, 89, True)
    assert m.attention_norm_params == 2 * 128                   # per-head q_norm, k_norm
    # GLM-4.5 model card: 355B total, 32B active (active without embedding and head: 32.08B)
    assert _near(m.total_params, 355e9)
    assert _near(m.active_params - 2 * m.vocab * m.hidden, 32e9)


def test_cohere_command_r_35b_parallel_block_norm_without_bias():
    m = _load("cohere")
    assert (m.parallel_attention, m.layer_norms, m.norm_bias, m.tied_embeddings) == (
        True, 1, False, True)
    # attention 4*8192^2 = 268,435,456; SwiGLU 3*8192*22528 = 553,648,128; one LayerNorm with
    # a weight only, 8192 -> 822,091,776 per layer; x 40 + tied 256000*8192 + final norm 8192
    assert m.layer_norm_params == 8192 and m.head_params == 8192
    assert m.total_params == 40 * 822_091_776 + 2_097_152_000 + 8192 == 34_980_831_232
    assert _near(m.total_params, 35e9)                          # model card: 35B


def test_cohere_command_r_plus_104b_qk_norm_over_heads():
    m = _load("cohere_plus")
    # use_qk_norm: LayerNorm weights of (96, 128) and (8, 128), no bias = 13,312 per layer
    assert m.attention_norm_params == (96 + 8) * 128
    assert m.total_params == 64 * 1_572_889_600 + 3_145_728_000 + 12288
    assert _near(m.total_params, 104e9)                         # model card: 104B


def test_granite_3_8b_multipliers_change_nothing(tmp_path):
    m = _load("granite")
    # attention 2*4096^2 + 2*4096*1024 = 41,943,040; SwiGLU 3*4096*12800 = 157,286,400;
    # norms 8192 -> 199,237,632; x 40 + tied 49155*4096 + final norm 4096
    assert m.total_params == 40 * 199_237_632 + 201_338_880 + 4096 == 8_170_848_256
    assert _near(m.total_params, 8.1e9)           # granite-3.0-8b-base model card: 8.1B
    plain = json.loads((DATA / "granite" / "config.json").read_text())
    for k in ("embedding_multiplier", "attention_multiplier", "residual_multiplier",
              "logits_scaling"):
        plain.pop(k)
    (tmp_path / "config.json").write_text(json.dumps(plain))
    assert load_hf_config(tmp_path / "config.json").total_params == m.total_params


def test_olmo2_7b_full_width_qk_norms_post_norms():
    m = _load("olmo2")
    # q_norm over 32*128 and k_norm over 32*128 (RMSNorm weights): 8192, not 2*128
    assert m.qk_norm_full and m.attention_norm_params == 8192
    # attention 4*4096^2 + 8192; SwiGLU 3*4096*11008; post-attention and post-feedforward
    # norms 2*4096 -> 202,391,552; x 32 + untied 2*100352*4096 + final norm 4096
    assert m.total_params == 32 * 202_391_552 + 2 * 411_041_792 + 4096 == 7_298_617_344
    assert _near(m.total_params, 7.3e9)          # OLMo-2-1124-7B on the hub: 7.3B ("7B")


def test_nemotron_minitron_8b_squared_relu_layernorm1p():
    m = _load("nemotron")
    assert (m.ffn_type.value, m.ffn_type.matrices, m.norm, m.d_head) == (
        "relu2", 2, "layernorm", 128)
    # q 4096*48*128 + k, v 2*4096*8*128 + o 6144*4096 = 58,720,256; MLP 2*4096*16384;
    # 2 LayerNorm1P with bias 2*2*4096 -> 192,954,368; x 32 + 2*256000*4096 + final 2*4096
    assert m.total_params == 32 * 192_954_368 + 2 * 1_048_576_000 + 8192 == 8_271_699_968
    assert round(m.total_params / 1e9) == 8                     # model card: "8B"
    # config.json partial_rotary_factor 0.5; LayerNorm1P's weight stored as an offset from 1
    assert (m.rotary_percent, m.norm_zero_centered_gamma) == (0.5, True)


def test_nemotron_4_15b_report_counts():
    m = _load("nemotron_15b")
    # Nemotron-4 15B report (arXiv 2402.16819) section 2: 3.2B embedding and 12.5B
    # non-embedding parameters; derived 2*256000*6144 = 3.15B and 32 x 390,094,848 + 12,288
    non_embedding = m.total_params - 2 * m.vocab * m.hidden
    assert non_embedding == 32 * 390_094_848 + 12288
    assert _near(non_embedding, 12.5e9) and _near(m.total_params, 15.7e9)


def test_starcoder2_3b_biases_gelu_tied():
    m = _load("starcoder2")
    assert (m.ffn_type.value, m.norm, m.n_kv, m.tied_embeddings) == ("gelu", "layernorm", 2, True)
    assert m.attention_bias and m.attention_out_bias and m.mlp_bias
    # attention 2*3072^2 + 2*3072*256 + biases 3072 + 2*256 + 3072 = 20,453,888; MLP
    # 2*3072*12288 + 12288 + 3072 = 75,512,832; 2 LayerNorms 4*3072 -> 95,979,008;
    # x 30 + tied 49152*3072 + final LayerNorm 2*3072
    assert m.total_params == 30 * 95_979_008 + 150_994_944 + 6144 == 3_030_371_328
    assert _near(m.total_params, 3.03e9, 0.002)           # starcoder2-3b model card: 3.03B
    assert m.dropout == 0.1                               # residual/embedding/attention 0.1


@pytest.mark.parametrize("name", ["llama4", "glm4_moe", "cohere", "nemotron", "starcoder2"])
def test_catalog_show_new_families(run, name):
    r = run("catalog", "show", str(DATA / name / "config.json"), "--format", "json")
    assert r.code == 0, r.err
    d = r.json()
    m = _load(name)
    assert d["derived"]["total_params"] == m.total_params
    parts = [p for p in d["derivation"] if p["part"] != "total" and not p["part"].startswith("MTP")]
    assert sum(p["total"] for p in parts) == m.total_params


def test_text_only_said_in_output(run):
    r = run("catalog", "show", str(DATA / "llama4"))
    assert r.code == 0 and "text model only" in r.out and "-text" in r.out


def test_stage_split_follows_the_moe_layer_rule():
    from optimus_calc.evaluate.shapes import stage_shapes
    m = _load("llama4_maverick")        # MoE on odd layers: 6 of every 12-layer stage
    st = stage_shapes(m, 4)
    assert [(s.layers, s.moe_layers) for s in st] == [(12, 6)] * 4
    assert sum(s.A + s.X + s.R for s in st) == m.total_params
    g = _load("glm4_moe")               # 46 layers, the one dense layer in the first stage;
    st = stage_shapes(g, 4)             # 46 + 2 = 48 = 4 x 12: 11 on the first and last stage
    assert [(s.layers, s.moe_layers) for s in st] == [(11, 10), (12, 12), (12, 12), (11, 11)]
    assert sum(s.A + s.X + s.R for s in st) == g.total_params
