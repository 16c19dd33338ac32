"""Parameter counts derived from the architecture against published counts."""

import pytest

from optimus_calc.specs.model import Model


def test_llama2_70b_by_hand(cat):
    m = cat.get("llama-2-70b", "model")
    # attention: q 8192*8192 + k,v 2*8192*1024 + o 8192*8192 = 150,994,944
    assert m.attention_params == 150_994_944
    # SwiGLU MLP: 3 * 8192 * 28672 = 704,643,072; two RMSNorms 2*8192
    assert m.dense_layer_params == 150_994_944 + 704_643_072 + 16_384
    # 80 layers + embeddings 32000*8192 + untied head 32000*8192 + final norm 8192
    assert m.total_params == 80 * 855_654_400 + 2 * 262_144_000 + 8192 == 68_976_648_192


def _published_ok(m: Model, value: float, published: float) -> bool:
    if m.published_params_digits:
        # the paper prints N decimals of billions: the derived count must round to it
        return round(value / 1e9, m.published_params_digits) == round(
            published / 1e9, m.published_params_digits)
    return abs(value / published - 1) <= 0.01


def test_every_model_matches_its_published_count(cat):
    for m in cat.all("model"):
        assert m.published_params, f"{m.name} has no published count to check"
        assert _published_ok(m, m.total_params, m.published_params), (
            f"{m.name}: derived {m.total_params / 1e9:.3f}B vs {m.published_params / 1e9}B")


@pytest.mark.parametrize("name,total,active", [
    ("llama-2-70b", 68.98e9, None),       # issue 2
    ("llama-3-70b", 70.55e9, None),
    ("llama-3-405b", 405.9e9, None),
    ("gpt3-175b", 175e9, None),            # Brown et al. Table 2.1
    ("mixtral-8x7b", 46.7e9, 12.9e9),      # Mistral AI
    ("qwen3-30b-a3b", 30.5e9, 3.3e9),      # model card
])
def test_issue_counts_within_one_percent(cat, name, total, active):
    m = cat.get(name, "model")
    assert abs(m.total_params / total - 1) < 0.01
    if active:
        assert abs(m.active_params / active - 1) < 0.02


@pytest.mark.parametrize("name,active", [("gpt-oss-20b", 3.61e9), ("gpt-oss-120b", 5.13e9)])
def test_gpt_oss_active_uses_openais_convention(cat, name, active):
    # OpenAI's model card counts active parameters without the input embedding table.
    m = cat.get(name, "model")
    assert abs((m.active_params - m.vocab * m.hidden) / active - 1) < 0.005


def test_model_validation_rejects_inconsistent_shapes():
    base = dict(name="x", source="test case", layers=2, hidden=64, heads=8, ffn_hidden=256,
                ffn_type="gelu", vocab=100, tied_embeddings=True, position_embedding="rope",
                norm="layernorm")
    Model(**base)
    with pytest.raises(ValueError, match="kv_heads"):
        Model(**{**base, "kv_heads": 3})
    with pytest.raises(ValueError, match="top_k"):
        Model(**{**base, "experts": 4, "top_k": 5})


def test_every_catalog_model_has_a_sourced_dropout(cat):
    for m in cat.all("model"):
        assert m.dropout_source, f"{m.name}: dropout without a source"


@pytest.mark.parametrize("name,has", [
    ("llama-3-70b", False), ("mistral-7b", False), ("qwen3-14b", False), ("mixtral-8x7b", False),
    ("gpt3-175b", True), ("gpt2-xl", True), ("gpt-1.7b", True), ("bert-large", True),
])
def test_dropout_from_the_models_config(cat, name, has):
    # issue 11: Llama/Mistral/Qwen configs have attention_dropout 0.0, GPT-2/3 style 0.1
    m = cat.get(name, "model")
    assert m.has_dropout is has and m.dropout == (0.1 if has else 0.0)


def test_dropout_is_strictly_a_number():
    base = dict(name="x", source="test case", layers=2, hidden=64, heads=8, ffn_hidden=256,
                ffn_type="gelu", vocab=100, tied_embeddings=True, position_embedding="rope",
                norm="layernorm")
    assert Model(**base, dropout=0).dropout == 0.0
    for bad in (True, "0.1", 1.5, -0.1):
        with pytest.raises(ValueError):
            Model(**base, dropout=bad)


def test_mla_and_standard_attention_properties():
    base = dict(name="x", source="test case", layers=2, hidden=64, heads=8, ffn_hidden=256,
                ffn_type="swiglu", vocab=100, tied_embeddings=True, position_embedding="rope",
                norm="rmsnorm", kv_heads=2)
    m = Model(**base)
    # q 64*64 + k,v 2*64*16 + o 64*64 = 10,240; score/value dims 8 heads x 8
    assert m.attention_matrix_params == 10_240 == m.attention_params
    assert (m.score_dim, m.value_dim) == (64, 64)
    mla = Model(**{**base, "kv_heads": 0, "q_lora_rank": 16, "kv_lora_rank": 8,
                   "qk_nope_head_dim": 4, "qk_rope_head_dim": 2, "v_head_dim": 3})
    # q 64*16 + 16*8*6 = 1,792; kv 64*(8+2) + 8*8*(4+3) = 1,088; o 8*3*64 = 1,536
    assert mla.attention_matrix_params == 1_792 + 1_088 + 1_536
    assert mla.attention_norm_params == 16 + 8
    assert (mla.score_dim, mla.value_dim, mla.d_head) == (48, 24, 6)
    with pytest.raises(ValueError, match="MLA"):
        Model(**{**base, "kv_lora_rank": 8})


def test_first_dense_layers_and_moe_layer_rule():
    base = dict(name="x", source="test case", layers=10, hidden=64, heads=8, ffn_hidden=256,
                ffn_type="swiglu", vocab=100, tied_embeddings=True, position_embedding="rope",
                norm="rmsnorm", experts=4, top_k=2)
    m = Model(**base, first_dense_layers=3)
    assert [i for i in range(10) if m.is_moe_layer(i)] == [3, 4, 5, 6, 7, 8, 9]
    assert (m.dense_layers, m.moe_layers) == (3, 7)
    m2 = Model(**base, moe_layer_freq=2)       # Qwen decoder_sparse_step: (i+1) % 2 == 0
    assert [i for i in range(10) if m2.is_moe_layer(i)] == [1, 3, 5, 7, 9]
    assert m2.moe_layers == 5


def test_moe_layer_count_in_closed_form_equals_the_layer_rule(cat):
    # the closed-form count of evaluate/shapes.py against the per-layer rule, for every MoE
    # model of the catalog and a DeepSeek-like variant (3 dense layers, MoE every 2nd layer)
    from optimus_calc.evaluate.shapes import _moe_layers_in
    for m in cat.all("model"):
        if not m.is_moe:
            assert _moe_layers_in(m, 0, m.layers) == 0
            continue
        for mm in (m, m.model_copy(update={"first_dense_layers": 3, "moe_layer_freq": 2})):
            for start in range(mm.layers + 1):
                for stop in range(start, mm.layers + 1):
                    assert _moe_layers_in(mm, start, stop) == sum(
                        mm.is_moe_layer(j) for j in range(start, stop)), (mm.name, start, stop)
    # by hand: layers 0..9, dense 0-2, then MoE at 4, 6, 8 (j - 3 + 1 even): 3 of them
    mix = cat.get("mixtral-8x7b", "model").model_copy(
        update={"layers": 10, "first_dense_layers": 3, "moe_layer_freq": 2})
    assert _moe_layers_in(mix, 0, 10) == 3 and _moe_layers_in(mix, 5, 7) == 1


def test_a_learned_position_table_grows_to_the_sequence(run, cat):
    # gpt2-xl has a 1,024-row learned position table (hidden 1,600); trained at 4,096 tokens the
    # run builds 4,096 rows, as the exports write --max-position-embeddings max(table, seq):
    # 3,072 x 1,600 = 4,915,200 parameters more; rotary models do not change
    def params(model, seq):
        d = run("memory", model, "--node", "dgx-a100", "--seq-len", seq, "--format", "json")
        return d.json()["model"]["total_params"]
    assert params("gpt2-xl", 4096) - params("gpt2-xl", 1024) == 3072 * 1600
    assert params("gpt2-xl", 512) == params("gpt2-xl", 1024)  # a shorter run keeps the table
    assert params("llama-3-8b", 16384) == params("llama-3-8b", 8192)
    # the planner plans the same model: its pick's GPU memory is `memory`'s on that layout
    args = ("gpt2-xl", "--node", "dgx-a100", "--seq-len", 4096)
    r = run("plan", *args, "--format", "json").json()["recommended"]
    m = run("memory", *args, "--tp", r["tp"], "--pp", r["pp"], "--dp", r["dp"], "--zero",
            r["zero"], "--micro-batch", r["micro_batch"], "--global-batch", r["global_batch"],
            "--recompute", r["recompute"], "--offload", r["offload"], "--framework",
            r["framework"], "--no-sp", "--format", "json").json()
    assert m["per_gpu"]["total_bytes"] == pytest.approx(r["gpu_memory_bytes"], rel=1e-9)
    # and a sweep's point at that sequence plans it too (its first row: the point's pick)
    rows = run("sweep", "--models", "gpt2-xl", "--node", "dgx-a100", "--seq-len", "1024,4096",
               "--format", "json").json()["rows"]
    pt = next(x for x in rows if x["seq_len"] == 4096)
    assert pt["gpu_memory_bytes"] == pytest.approx(r["gpu_memory_bytes"], rel=1e-9)
