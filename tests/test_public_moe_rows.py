"""The Megatron-Bridge MoE rows of validate (public_cases_moe.py) carry the settings of the
performance scripts that produced them (Megatron-Bridge @ v0.2.1 scripts/performance/configs/)."""

from dataclasses import replace

from optimus_calc.public_cases_moe import moe_rows
from optimus_calc.validate_public import memory_gib, setup


def _row(label_start):
    (row,) = [r for r in moe_rows() if r.label.startswith(label_start)]
    return row


def test_b200_gpt_oss_runs_the_scripts_ep64_which_fits_where_ep8_does_not(cat):
    # gpt_oss/workload_base_configs.py L50-55: EP 64, micro-batch 4, global 512 on 64 B200
    row = _row("B200 GPT-OSS")
    assert (row.ep, row.mbs, row.gbs, row.seq, row.recompute) == (64, 4, 512, 4096, "none")
    capacity_gib = 180e9 / 2**30  # B200 180 GB (catalog gpus/nvidia.toml)
    assert memory_gib(setup(cat, row)) < capacity_gib
    # the table's EP 8 holds 16 of the 128 experts a GPU: 8x the expert weights, gradients and
    # their optimizer shard, over capacity with recompute none (the script sets no full
    # recompute, only recompute_modules layernorm and moe_act)
    assert memory_gib(setup(cat, replace(row, ep=8))) > capacity_gib


def test_qwen3_mxfp8_rows_are_cases_with_the_mxfp8_recipe():
    for label in ("GB200 Qwen3-30B-A3B MXFP8", "B200 Qwen3-30B-A3B MXFP8"):
        row = _row(label)
        assert not row.why_not and (row.precision, row.fp8_recipe) == ("fp8", "mxfp8")
    # qwen3/workload_base_configs.py L193-200 (GB200: micro-batch 4), L211-219 (B200: 1)
    assert (_row("GB200 Qwen3-30B").mbs, _row("B200 Qwen3-30B").mbs) == (4, 1)


def test_qwen3_235b_h100_folds_ep32_over_tp2_dp16_without_tp_overlap(cat):
    # qwen3/workload_base_configs.py L135-144: TP 2 PP 8 VP 4 EP 32 ETP 1 on 256 H100;
    # qwen3_llm_pretrain.py L156: tp_comm_overlap False
    s = setup(cat, _row("H100 Qwen3-235B"))
    assert (s.layout.tp, s.layout.pp, s.layout.dp, s.layout.ep, s.layout.etp) == (2, 8, 16, 32, 1)
    assert s.training.tp_comm_overlap is False


def test_multi_node_ep_on_gb200_is_listed_with_the_nvl72_reason():
    gb200 = [r for r in moe_rows() if r.gpu == "gb200" and r.ep > 8]
    # GPT-OSS EP 64, Qwen3-235B EP 32, DeepSeek-V3 EP 64 and EP 32
    assert len(gb200) == 4
    # on gb200-nvl72 (64 GPUs a rack) the EP group is inside one NVLink domain: what the tool
    # lacks is HybridEP, the dispatcher their scripts set
    assert all("NVL72" in r.why_not and f"EP {r.ep} across" in r.why_not
               and "HybridEP" in r.why_not for r in gb200)


def test_every_expressible_moe_row_names_its_script():
    rows = [r for r in moe_rows() if not r.why_not]
    assert len(rows) == 8
    assert all("workload_base_configs.py" in r.assumed or ".yaml" in r.assumed for r in rows)
