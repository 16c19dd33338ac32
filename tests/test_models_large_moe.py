"""Catalog entries of the large MoE models behind the Megatron-Bridge MoE rows (Qwen3-235B-A22B,
DeepSeek-V3): parameter counts worked by hand against the published ones."""

from pathlib import Path

from optimus_calc.hf_import import load_hf_config

HF = Path(__file__).parent / "data" / "hf"


def test_qwen3_235b_a22b_by_hand(cat):
    m = cat.get("qwen3-235b-a22b", "model")
    # attention: q 4096*(64*128) + k,v 2*4096*(4*128) + o 8192*4096
    #   = 33,554,432 + 4,194,304 + 33,554,432 = 71,303,168; q/k norms 128 + 128
    assert m.attention_params == 71_303_168 + 256
    # expert 3*4096*1536 = 18,874,368; 128 experts = 2,415,919,104; router 128*4096 = 524,288
    assert m.expert_params == 18_874_368
    # layer: 71,303,168 + 256 + 2,415,919,104 + 524,288 + 2 norms 8,192 = 2,487,755,008
    # 94 layers = 233,848,970,752; + embedding and untied head 2*151936*4096 = 1,244,659,712
    # + final norm 4,096
    assert m.total_params == 235_093_634_560
    # model card: 235B total, 22B activated. Active layer: 71,303,168 + 256 + 8*18,874,368
    # + 524,288 + 8,192 = 222,830,848; x 94 + 1,244,663,808 = 22,190,763,520
    assert m.active_params == 22_190_763_520
    assert round(m.total_params / 1e9) == 235 and round(m.active_params / 1e9) == 22


def test_deepseek_v3_catalog_entry_is_the_hf_config(cat):
    m = cat.get("deepseek-v3", "model")
    hf = load_hf_config(HF / "deepseek_v3" / "config.json")
    # the same shape as the public config.json: 671,026,419,200 (worked by hand in
    # tests/test_hf_import.py: MLA 187,105,280 per layer, 3 dense + 58 MoE layers)
    assert m.total_params == hf.total_params == 671_026_419_200
    assert (m.dense_layers, m.moe_layers, m.mtp_layers) == (3, 58, 1)
    # arXiv 2412.19437 abstract: 37B activated (without the input embedding: 36.63B)
    assert round((m.active_params - m.vocab * m.hidden) / 1e9) == 37
    assert m.router_topk_scaling == 2.5 and m.router_bias
