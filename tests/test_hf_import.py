import json
from pathlib import Path

import pytest

from optimus_calc.errors import InputError
from optimus_calc.hf_import import MAPPERS, load_hf_config

DATA = Path(__file__).parent / "data" / "hf"

# model_type -> catalog entry whose shape the fixture config.json reproduces
EXPECTED = {
    "llama": "llama-3-70b", "mistral": "mistral-7b", "mixtral": "mixtral-8x7b",
    "qwen2": "qwen2-7b", "qwen3": "qwen3-14b", "qwen3_moe": "qwen3-30b-a3b",
    "phi3": "phi-4", "gpt_oss": "gpt-oss-120b", "gpt2": "gpt2-xl", "gpt_neox": "pythia-6.9b",
    "bloom": "bloom-7b1", "opt": "opt-6.7b",
}


# legacy spellings that share a mapper with a type that has a fixture
ALIASES = {"RefinedWeb", "gemma3_text", "llama4_text"}


def test_every_supported_type_has_a_fixture():
    seen = {json.loads((d / "config.json").read_text())["model_type"]
            for d in DATA.iterdir() if (d / "config.json").exists()}
    assert set(MAPPERS) - ALIASES <= seen
    assert set(EXPECTED) <= set(MAPPERS)


@pytest.mark.parametrize("mtype", sorted(EXPECTED))
def test_import_reproduces_catalog_count(cat, mtype):
    m = load_hf_config(DATA / mtype / "config.json")
    ref = cat.get(EXPECTED[mtype], "model")
    assert m.total_params == ref.total_params
    assert m.active_params == ref.active_params


def test_import_via_cli(run):
    r = run("catalog", "show", "--kind", "model", "llama-3-70b", "--format", "json")
    assert r.code == 0 and r.json()["derived"]["total_params"] == 70_553_706_496


def _cfg(tmp_path, text):
    p = tmp_path / "config.json"
    p.write_text(text)
    return p


def test_not_json(tmp_path):
    with pytest.raises(InputError, match=r"not valid JSON \(line 1"):
        load_hf_config(_cfg(tmp_path, "{nope"))


def test_missing_field_is_named(tmp_path):
    with pytest.raises(InputError, match="missing field 'num_hidden_layers'"):
        load_hf_config(_cfg(tmp_path, json.dumps({"model_type": "llama", "hidden_size": 8})))


def test_unsupported_model_type(tmp_path):
    with pytest.raises(InputError, match="unsupported model_type 't5'"):
        load_hf_config(_cfg(tmp_path, json.dumps({"model_type": "t5"})))


# ---- families without a catalog entry: counts against the published ones -----------------
# Each fixture is the public config.json (see tests/data/README.md for where every value comes
# from); the expected counts are worked by hand in the comments and checked against the
# publisher's figure.

def _load(name):
    return load_hf_config(DATA / name / "config.json")


def test_deepseek_v3_671b_total_37b_active_mtp_apart():
    m = _load("deepseek_v3")
    assert m.is_mla and m.family == "deepseek_v3"
    assert (m.dense_layers, m.moe_layers, m.mtp_layers) == (3, 58, 1)
    # MLA per layer: q_a 7168*1536 + q_b 1536*128*192 + kv_a 7168*(512+64)
    #   + kv_b 512*128*(128+128) + o 128*128*7168
    #   = 11,010,048 + 37,748,736 + 4,128,768 + 16,777,216 + 117,440,512 = 187,105,280
    assert m.attention_matrix_params == 187_105_280
    assert m.attention_norm_params == 1536 + 512       # q_a_layernorm, kv_a_layernorm
    assert m.score_dim == 128 * 192 and m.value_dim == 128 * 128
    # expert 3*7168*2048 = 44,040,192; MoE layer: 256 routed + 1 shared + router 256*7168
    # + e_score_correction_bias 256
    assert m.expert_params == 44_040_192
    assert m.router_params == 256 * 7168 + 256
    # DeepSeek-V3 technical report (arXiv 2412.19437) abstract and README_WEIGHTS.md:
    # 671B total, the 14B MTP module excluded (HF checkpoint 685B = 671B + MTP)
    assert m.total_params == 671_026_419_200
    assert abs(m.total_params / 671e9 - 1) < 0.001
    # README_WEIGHTS.md: MTP 11.5B unique parameters (embedding and head shared)
    assert abs(m.mtp_params / 11.5e9 - 1) < 0.01
    assert m.total_params + m.mtp_params == 682_636_487_424  # 685B on the hub minus the
    # MTP layer's stored copies of embedding and head (2 x 926,679,040)
    # README_WEIGHTS.md: 36.6B activated, including the 0.9B output head and not the input
    # embedding lookup; the report rounds it to 37B
    active_no_embed = m.active_params - m.vocab * m.hidden
    assert abs(active_no_embed / 36.6e9 - 1) < 0.005
    assert round(active_no_embed / 1e9) == 37  # 36.63B: 1.01% under the rounded 37B


def test_deepseek_v2_236b_total_21b_active():
    m = _load("deepseek_v2")
    # DeepSeek-V2 (arXiv 2405.04434) abstract: 236B total, 21B activated per token
    assert (m.dense_layers, m.moe_layers) == (1, 59)
    assert m.shared_experts == 2 and m.router_params == 160 * 5120   # no correction bias
    assert abs(m.total_params / 236e9 - 1) < 0.01
    assert abs((m.active_params - m.vocab * m.hidden) / 21e9 - 1) < 0.01


@pytest.mark.parametrize("name,embedding,non_embedding", [
    ("gemma2", 917_504_000, 8_324_201_984),          # Gemma 2 report (arXiv 2408.00118) Table 2
    ("gemma2_27b", 1_179_648_000, 26_047_480_320),   # same table, 27B row
])
def test_gemma2_matches_report_exactly(name, embedding, non_embedding):
    m = _load(name)
    assert m.tied_embeddings and m.layer_norms == 4 and m.ffn_type.value == "geglu"
    assert m.d_head != m.hidden // m.heads or name == "gemma2_27b"  # 9B: 256 vs 3584/16=224
    assert m.embedding_params == embedding
    assert m.total_params - m.embedding_params == non_embedding


def test_gemma3_27b_text_config_nesting():
    m = _load("gemma3")
    # text_config read; vocab 262,208 from Gemma3TextConfig's default (the hub file omits it)
    assert (m.family, m.vocab, m.layers, m.hidden, m.d_head) == ("gemma3", 262_208, 62, 5376, 128)
    assert m.qk_norm and m.attention_norm_params == 2 * 128
    # per layer: q 5376*4096 + k,v 2*5376*2048 + o 4096*5376 = 66,060,288 (+256 QK norms);
    # GeGLU 3*5376*21504 = 346,816,512; 4 norms 21,504 -> 412,898,560 x 62 + final 5376
    assert m.total_params - m.embedding_params == 25_599_716_096
    # Gemma 3 report (arXiv 2503.19786) Table 1: 27B non-embedding 25,600M (vision 417M apart)
    assert abs((m.total_params - m.embedding_params) / 25_600e6 - 1) < 0.001
    assert abs(m.total_params / 27e9 - 1) < 0.01


def test_falcon_7b_multi_query_parallel_block():
    m = _load("falcon")
    assert (m.family, m.n_kv, m.d_head, m.layer_norms) == ("falcon", 1, 64, 1)
    # fused QKV 4544*(4544 + 2*64) + dense 4544^2 + MLP 2*4544*18176 + one LayerNorm 2*4544
    # = 21,229,568 + 20,647,936 + 165,183,488 + 9,088 = 207,070,080 per layer;
    # x 32 + tied embedding 65024*4544 + ln_f 2*4544
    assert m.total_params == 32 * 207_070_080 + 295_469_056 + 9_088 == 6_921_720_704
    assert abs(m.total_params / 7e9 - 1) < 0.015       # "Falcon-7B"


def test_falcon_40b_new_decoder_architecture():
    m = _load("falcon_40b")
    assert (m.n_kv, m.layer_norms, m.position_embedding) == (8, 2, "rope")
    # QKV 8192*(8192 + 2*8*64) + dense 8192^2 + MLP 2*8192*32768 + ln_attn, ln_mlp 2*2*8192
    # = 75,497,472 + 67,108,864 + 536,870,912 + 32,768 = 679,510,016; x 60 + 65024*8192 + 16384
    assert m.total_params == 60 * 679_510_016 + 532_676_608 + 16_384 == 41_303_293_952


def test_qwen15_moe_a27b_shared_expert_and_gate():
    m = _load("qwen2_moe")
    assert (m.shared_experts, m.shared_ffn, m.shared_expert_gate) == (1, 5632, True)
    # per layer: attention 4*2048^2 + QKV biases 3*2048 = 16,783,360; 60 experts
    # 3*2048*1408 = 8,650,752 each; shared 3*2048*5632 = 34,603,008 + gate 2048;
    # router 2048*60; norms 4096 -> 570,560,512; x 24 + 2 x 151936*2048 + 2048
    assert m.total_params == 24 * 570_560_512 + 2 * 311_164_928 + 2048 == 14_315_784_192
    # model card: 14.3B total, 2.7B activated
    assert abs(m.total_params / 14.3e9 - 1) < 0.005
    assert abs(m.active_params / 2.7e9 - 1) < 0.01


def test_qwen2_57b_a14b():
    m = _load("qwen2_moe_57b")
    # Qwen2 technical report (arXiv 2407.10671) Table 1 / model card: 57B total, 14B activated
    # (whole billions); derived 57.41B and 14.25B
    assert round(m.total_params / 1e9) == 57 and round(m.active_params / 1e9) == 14
    assert m.total_params == 57_408_658_944


def test_first_dense_layers_go_to_the_first_stage():
    from optimus_calc.evaluate.shapes import stage_shapes
    m = _load("deepseek_v3")
    st = stage_shapes(m, 4)          # 61 layers: 15, 15, 15, 16
    assert [s.layers for s in st] == [15, 15, 15, 16]
    assert [s.moe_layers for s in st] == [12, 15, 15, 16]
    assert sum(s.A + s.X + s.R for s in st) == m.total_params + 0.0  # untied head: no copy


def test_mla_activation_coefficient():
    from optimus_calc.evaluate.shapes import activation_coefficients
    m = _load("deepseek_v3")
    q_c, _ = activation_coefficients(m)
    # 2*(Q 128*192 + K 128*192 + V 128*128 + O-in 128*128)/7168 + 2*(1536+512)/7168
    assert q_c == pytest.approx(2 * (24576 * 2 + 16384 * 2 + 2048) / 7168)
    llama = load_hf_config(DATA / "llama" / "config.json")
    q_l, _ = activation_coefficients(llama)
    # GQA unchanged: (4*8192 + 4*1024)/8192 = 4.5
    assert q_l == pytest.approx(4.5)


def test_dropout_read_from_config():
    assert _load("deepseek_v3").dropout == 0.0 and not _load("deepseek_v3").has_dropout
    assert load_hf_config(DATA / "gpt2" / "config.json").has_dropout   # GPT2Config 0.1


# ---- strictness (issue 15) --------------------------------------------------------------

def _llama(**over):
    base = json.loads((DATA / "llama" / "config.json").read_text())
    base.update(over)
    return base


@pytest.mark.parametrize("field,value,msg", [
    ("max_position_embeddings", "abc", "expected an integer"),
    ("hidden_size", [8192], "expected an integer"),
    ("hidden_size", 1e999, "expected an integer"),
    ("num_hidden_layers", 80.5, "expected an integer"),
    ("num_hidden_layers", True, "expected an integer"),
    ("tie_word_embeddings", "false", "JSON boolean"),
    ("tie_word_embeddings", 0, "JSON boolean"),
    ("attention_dropout", 2.0, "probability"),
    ("model_type", ["llama"], "expected a string"),
])
def test_wrong_types_are_input_errors(tmp_path, field, value, msg):
    text = json.dumps(_llama(**{field: value})).replace("Infinity", "1e999")  # overflows to inf
    with pytest.raises(InputError, match=rf"config.json: field '{field}': .*{msg}"):
        load_hf_config(_cfg(tmp_path, text))


def test_check_across_fields_names_no_empty_field(tmp_path):
    # DeepSeek-V3 (61 layers) with first_k_dense_replace 61: Model's own check (no MoE layer
    # left) has no field location; before: "config.json: field '': Value error, ..."
    cfg = json.loads((DATA / "deepseek_v3" / "config.json").read_text())
    cfg["first_k_dense_replace"] = cfg["num_hidden_layers"]
    with pytest.raises(InputError) as e:
        load_hf_config(_cfg(tmp_path, json.dumps(cfg)))
    assert str(e.value).endswith("config.json: first_dense_layers 61 leaves no MoE layer of 61")
    assert "field ''" not in str(e.value) and "Value error" not in str(e.value)


def test_nan_literal_rejected(tmp_path):
    text = json.dumps(_llama()).replace('"vocab_size": 128256', '"vocab_size": NaN')
    with pytest.raises(InputError, match="non-finite number NaN"):
        load_hf_config(_cfg(tmp_path, text))


def test_nested_text_config_field_named(tmp_path):
    cfg = json.loads((DATA / "gemma3" / "config.json").read_text())
    cfg["text_config"]["hidden_size"] = "5376"
    with pytest.raises(InputError, match=r"field 'text_config.hidden_size'"):
        load_hf_config(_cfg(tmp_path, json.dumps(cfg)))


def test_deep_nesting_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="nested too deeply"):
        load_hf_config(_cfg(tmp_path, "[" * 100_000 + "]" * 100_000))


def test_bom_accepted(tmp_path):
    p = tmp_path / "config.json"
    p.write_bytes(b"\xef\xbb\xbf" + (DATA / "llama" / "config.json").read_bytes())
    assert load_hf_config(p).total_params == 70_553_706_496


def test_string_false_no_longer_ties(tmp_path, run):
    p = _cfg(tmp_path, json.dumps(_llama(tie_word_embeddings="false")))
    r = run("memory", str(p), "--nodes", "2")
    assert r.code == 2 and "tie_word_embeddings" in r.out + r.err


# ---- catalog show PATH/config.json ------------------------------------------------------

@pytest.mark.parametrize("name", ["deepseek_v3", "qwen2_moe", "gemma3", "falcon", "gpt2"])
def test_catalog_show_config_json_derivation_sums(run, name):
    path = DATA / name / "config.json"
    r = run("catalog", "show", str(path), "--format", "json")
    assert r.code == 0, r.err
    d = r.json()
    m = load_hf_config(path)
    assert d["file"] == str(path) and d["derived"]["total_params"] == m.total_params
    parts = [p for p in d["derivation"] if p["part"] != "total" and not p["part"].startswith("MTP")]
    assert sum(p["total"] for p in parts) == m.total_params
    assert sum(p["active"] for p in parts) == m.active_params


def test_catalog_show_directory_and_table(run):
    r = run("catalog", "show", str(DATA / "deepseek_v3"))
    assert r.code == 0 and "parameter derivation" in r.out and "MTP modules" in r.out
    assert "671,026,419,200" in r.out


def test_catalog_show_config_refusals(run, tmp_path):
    r = run("catalog", "show", str(DATA / "llama" / "config.json"), "--kind", "gpu")
    assert r.code == 2 and "--kind gpu" in r.err
    r = run("catalog", "show", str(tmp_path / "missing.json"))
    assert r.code == 2 and "no such file" in r.err
    bad = _cfg(tmp_path, json.dumps(_llama(hidden_size="8192")))
    r = run("catalog", "show", str(bad))
    assert r.code == 2 and "hidden_size" in r.err


def test_a_bare_directory_name_holding_a_config_json_is_the_model(run, tmp_path, monkeypatch):
    # docs/guide/catalog.md: MODEL may be "the directory holding it"; `step hf` said "unknown
    # model 'hf'" where `step ./hf` worked (round 30's cold review)
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text((DATA / "llama" / "config.json").read_text())
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path)
    bare, dotted = (run("memory", m, "--format", "json") for m in ("hf", "./hf"))
    assert bare.code == 0 and bare.json()["per_gpu"] == dotted.json()["per_gpu"]
    assert run("memory", "empty").code == 2  # a directory without one stays an unknown name
