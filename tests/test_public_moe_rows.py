"""The Megatron-Bridge MoE rows of validate (public_cases_moe.py) carry the settings of the
performance scripts that produced them (Megatron-Bridge @ v0.2.1 scripts/performance/configs/)."""

from dataclasses import replace

from optimus_calc.public_cases import _on_nvl72 as on_nvl72
from optimus_calc.public_cases_moe import moe_rows
from optimus_calc.validate_public import memory_gib, setup


def _row(label_start):
    (row,) = [r for r in moe_rows() if r.label.startswith(label_start)]
    return row


def test_b200_gpt_oss_runs_the_scripts_ep64_which_fits_where_ep8_does_not(cat):
    # gpt_oss/workload_base_configs.py L50-55: EP 64, micro-batch 4, global 512 on 64 B200
    row = _row("B200 GPT-OSS")
    assert (row.ep, row.mbs, row.gbs, row.seq, row.recompute) == (64, 4, 512, 4096, "selective")
    assert row.recompute_modules == ("layernorm", "moe_act")  # the recipe's, nothing else
    capacity_gib = 180e9 / 2**30  # B200 180 GB (catalog gpus/nvidia.toml)
    assert memory_gib(setup(cat, row)) < capacity_gib
    # the table's EP 8 holds 16 of the 128 experts a GPU: 8x the expert weights, gradients and
    # their optimizer shard, over capacity with the script's recompute (no full recompute, only
    # recompute_modules layernorm and moe_act)
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


def test_gb200_ep_rows_run_hybridep_inside_the_rack(cat):
    # GPT-OSS EP 64, Qwen3-235B EP 32, DeepSeek-V3 EP 64 and EP 32: their scripts set HybridEP
    # (gpt_oss/workload_base_configs.py L42-47 @ 4a82e16, qwen3/workload_base_configs.py
    # L71-80, deepseek/workload_base_configs.py L45-57)
    gb200 = [r for r in moe_rows() if r.gpu == "gb200" and r.ep > 8]
    assert len(gb200) == 4
    assert all(not r.why_not and r.dispatcher == "hybridep" for r in gb200)
    # on gb200-nvl72 (64 GPUs a rack): DeepSeek-V3 BF16 PP 4 on 256 GPUs, 64 GPUs a stage, so
    # EP 64 x DP 1 is the stage: one rack's NVLink domain
    (r,) = [r for r in gb200 if r.label.startswith("GB200 DeepSeek-V3 BF16")]
    s = setup(cat, on_nvl72(r))
    assert (s.hw.nodes, s.hw.gpus_per_node) == (4, 64)
    assert (s.layout.pp, s.layout.dp, s.layout.ep) == (4, 64, 64)


def test_every_expressible_moe_row_names_its_script():
    rows = [r for r in moe_rows() if not r.why_not]
    # 8, and the 4 GB200 rows with EP over 8 (HybridEP in the rack)
    assert len(rows) == 8 + 4
    assert all("workload_base_configs.py" in r.assumed or ".yaml" in r.assumed for r in rows)
