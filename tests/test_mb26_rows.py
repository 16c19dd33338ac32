"""Megatron-Bridge's 26.02-26.08 pre-training tables as public rows (public_cases_mb26.py):
the rows equal the published tables, every listed row says why, the cases carry the scripts'
settings."""

from optimus_calc.public_cases import public_rows
from optimus_calc.public_cases_mb26 import mb26_rows


def _one(label: str):
    (row,) = [r for r in mb26_rows() if r.label == label]
    return row


def test_rows_equal_the_tables():
    # Megatron-Bridge docs/performance-summary-archive.md @ 067f987df, "26.04.01 NeMo
    # Container", LLAMA3_70B:
    # | DGX-GB200 | 64 | MXFP8 | 256 | 1 | 8192 | 0 | 2 | 4 | 1 | 5 | n/a | 3712 | 1664 |
    r = _one("GB200 llama-3-70b MXFP8 TP2 PP4 VP5, 64 GPUs (26.04.01)")
    assert (r.published, r.gbs, r.mbs, r.seq, r.tp, r.pp, r.cp, r.vp, r.ep) == \
        (3712, 256, 1, 8192, 2, 4, 1, 5, 1)
    assert (r.precision, r.fp8_recipe, r.gpu, r.nodes) == ("fp8", "mxfp8", "gb200", 8)
    # "26.02 NeMo Container", Qwen3_235B_a22B:
    # | DGX-H100 | 256 | FP8 | 8192 | 1 | 4096 | 0 | 2 | 8 | 1 | 4 | 32 | 1633 | 242 |
    r = _one("H100 qwen3-235b-a22b FP8 TP2 PP8 VP4 EP32, 256 GPUs (26.02)")
    assert (r.published, r.gbs, r.seq, r.tp, r.pp, r.vp, r.ep, r.nodes) == \
        (1633, 8192, 4096, 2, 8, 4, 32, 32)
    # FP8 on H100 is per-tensor current scaling; the config overlaps the EP all-to-all
    assert (r.fp8_recipe, r.ep_comm_overlap, r.drop_pad) == ("te-current", True, False)
    # "26.06 NeMo Container", LLAMA3.1_405B (no FSDP column):
    # | DGX-H100 | 1024 | FP8 | 1536 | 1 | 8192 | 8 | 8 | 2 | 8 | n/a | 326 | 822 |
    r = _one("H100 llama-3-405b FP8 TP8 PP8 CP2 VP8, 1024 GPUs (26.06)")
    assert (r.published, r.gbs, r.tp, r.pp, r.cp, r.vp, r.nodes) == (326, 1536, 8, 8, 2, 8, 128)
    # docs/performance-summary.md @ 067f987df, "26.08 NeMo Container", Qwen3_30B_a3B:
    # | DGX-GB200 | 8 | MXFP8 | 512 | 4 | 4096 | 1 | 1 | 1 | n/a | 8 | 39936 | 923 |
    r = _one("GB200 qwen3-30b-a3b MXFP8 TP1 PP1 EP8, 8 GPUs (26.08)")
    assert (r.published, r.gbs, r.mbs, r.ep, r.nodes) == (39936, 512, 4, 8, 1)
    assert "full-iteration CUDA graph" in r.assumed and "HybridEP" in r.assumed
    # "26.04 NeMo Container", LLAMA3_70B, the FSDP column 64: Megatron FSDP (ZeRO-3)
    # | DGX-GB200 | 64 | FP8 | 256 | 2 | 8192 | 64 | 1 | 1 | 1 | n/a | n/a | 4143 | 1861 |
    r = _one("GB200 llama-3-70b FP8 FSDP, 64 GPUs (26.04)")
    assert (r.published, r.mbs, r.zero, r.framework) == (4143, 2, 3, "megatron")


def test_listed_rows_say_why():
    rows = mb26_rows()
    # 33 + 36 + 44 + 47 + 31 + 14 + 18 = 223 table rows less the three 26.02 rows already in
    # public_cases._megatron_dense
    assert len(rows) == 220
    listed = [r for r in rows if r.why_not]
    # 162 listed before the GB200 HybridEP rows became cases; 19 of them are (DeepSeek-V3 and
    # Qwen3-235B-A22B in all 7 releases, GPT-OSS 120B in 26.02.01, 26.04, 26.06-26.08); then
    # GB300's 18 dense FP8 and MXFP8 rows (Llama 3 70B in 26.02-26.04.01: 4 + 4, Llama 3.1
    # 405B in 26.02-26.06: 5 + 5)
    assert len(listed) == 162 - 19 - 18 and all(r.why_not.strip() for r in listed)
    # "26.06.01", Nemotron_3_Super on GB300, NVFP4: the model is the first reason
    # | DGX-GB300 | 64 | NVFP4 | 512 | 1 | 8192 | 1 | 1 | 1 | n/a | 64 | 9984 | 845 |
    (r,) = [r for r in listed if r.published == 9984]
    assert r.why_not == "model not in the catalog (Nemotron 3 Super)"
    # a GB300 MoE row and every B300 row stay listed, each saying why
    assert all(r.why_not.startswith("the GB300 MoE configs") for r in listed
               if r.label.startswith("GB300") and "EP" in r.label and r.model in (
                   "deepseek-v3", "qwen3-30b-a3b", "qwen3-235b-a22b", "gpt-oss-120b"))
    assert all(r.why_not for r in rows if r.label.startswith("B300"))
    # "26.02", LLAMA3_70B on GB200 in NVFP4: no recipe
    # | DGX-GB200 | 64 | NVFP4 | 256 | 1 | 8192 | 0 | 2 | 4 | 1 | 5 | n/a | 4458 | 2004 |
    (r,) = [r for r in listed if r.published == 4458]
    assert r.why_not == "NVFP4 has no recipe in the tool"


def test_cases_name_their_settings_and_run_on_the_rack():
    cases = [r for r in mb26_rows() if not r.why_not]
    assert all(r.assumed.startswith("Megatron-Bridge @ ") for r in cases)
    # no 26.02 row already a case is repeated (GB200 70B MXFP8 3,613 / FSDP 4,040, H100 1,621)
    assert not {3613, 4040, 1621} & {r.published for r in cases if r.label.endswith("(26.02)")}
    # the GB200 rows go onto the NVL72 rack: 64 GPUs in one rack, 256 on four
    on_rack = [r for r in public_rows() if "(26.0" in r.label and r.node == "gb200-nvl72"]
    assert {(r.nodes, r.gpus_per_node) for r in on_rack} == {(1, 8), (1, 64), (4, 64)}
    # and the GB300 rows onto theirs: Llama 3 70B on one rack of 64, Llama 3.1 405B on four
    gb300 = [r for r in public_rows() if r.label.startswith("GB300") and not r.why_not]
    assert {(r.node, r.nodes, r.gpus_per_node) for r in gb300} == {
        ("gb300-nvl72", 1, 64), ("gb300-nvl72", 4, 64)} and len(gb300) == 18


def test_gb200_hybridep_rows_run_their_configs_inside_the_rack():
    # "26.04", DeepSeekV3 on GB200:
    # | DGX-GB200 | 256 | MXFP8 | 4096 | 1 | 4096 | 0 | 1 | 4 | 1 | 4 | 64 | 4193 | 1090 |
    # deepseek_workload_base_configs.py @ 26.04-alpha.rc2 L72-84, L182-191: PP 4 VP 4 EP 64,
    # hybridep, moe_a2a_overlap False, recompute_modules ["mlp"], TE graphs, no full iteration
    (r,) = [r for r in public_rows() if r.label.startswith("GB200 deepseek-v3")
            and r.label.endswith("(26.04)")]
    assert (r.published, r.pp, r.vp, r.ep, r.etp, r.dispatcher) == (4193, 4, 4, 64, 1,
                                                                   "hybridep")
    assert (r.ep_comm_overlap, r.cuda_graph) == (False, False) and "mlp has no flag" in r.assumed
    # 256 GPUs on 4 racks of 64: a PP stage (64 GPUs) holds the EP group, one NVLink domain
    assert (r.node, r.nodes, r.gpus_per_node) == ("gb200-nvl72", 4, 64)
    # "26.08", Qwen3_235B_a22B on GB200 (docs/performance-summary.md @ 067f987df):
    # | DGX-GB200 | 256 | MXFP8 | 8192 | 1 | 4096 | 0 | 1 | 8 | 1 | 3 | 32 | 7280 | 1085 |
    # perf_recipes/qwen/gb200/qwen3_moe.py @ v0.6.0 L462-487: PP 8 VP 3 EP 32, hybridep,
    # _enable_hybridep_full_iteration_mxfp8 (full_iteration, EP overlap)
    (r,) = [r for r in public_rows() if r.label.startswith("GB200 qwen3-235b")
            and r.label.endswith("(26.08)")]
    assert (r.published, r.pp, r.vp, r.ep, r.dispatcher) == (7280, 8, 3, 32, "hybridep")
    assert (r.ep_comm_overlap, r.cuda_graph) == (True, True)
    # "26.04", GPT_OSS_120B on GB200 BF16: gpt_oss_workload_base_configs.py @ 26.04-alpha.rc2
    # L102-107 (V2: hybridep, moe_a2a_overlap True), no CUDA graphs
    (r,) = [r for r in public_rows() if r.label.startswith("GB200 gpt-oss-120b")
            and r.label.endswith("(26.04)")]
    assert (r.published, r.ep, r.mbs, r.dispatcher) == (15938, 64, 4, "hybridep")
    assert (r.ep_comm_overlap, r.cuda_graph, r.nodes, r.gpus_per_node) == (True, False, 1, 64)
