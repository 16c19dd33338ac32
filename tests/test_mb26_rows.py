"""Megatron-Bridge's 26.02-26.08 pre-training tables as public rows (public_cases_mb26.py):
the rows equal the published tables, every listed row says why, the cases carry the scripts'
settings."""

import pytest

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
    # 405B in 26.02-26.06: 5 + 5); then the 48 Blackwell Ultra MoE rows (public_cases_mb26_bw):
    # GB300's 29 (DeepSeek-V3 in all 7 releases, two rows in 26.06: 8; GPT-OSS 120B,
    # Qwen3-30B-A3B and Qwen3-235B-A22B in all 7: 7 each) and B300's 19 on dgx-b300 (DeepSeek-V3,
    # GPT-OSS and Qwen3-30B in 26.02-26.06: 5 each; Qwen3-235B in 26.02-26.04.01: 4)
    # then 26.06.01's two GPT-OSS 120B rows, listed again: the table's footnote marks them as
    # a known regression; then 17 of the 18 dense NVFP4 rows (--precision nvfp4: Llama 3 70B on
    # GB200 and GB300 in 26.02-26.04.01, 4 + 4; Llama 3.1 405B in 26.02-26.06, 5 + 5), all but
    # 26.02.01's GB300 70B cell, whose TP 1 PP 1 cannot hold the model (_IMPOSSIBLE); then
    # GB300's four Kimi-K2 MXFP8 rows (26.02.01-26.06) as a public shape (round 25)
    assert len(listed) == 162 - 19 - 18 - 29 - 19 + 2 - 17 - 4
    assert all(r.why_not.strip() for r in listed)
    # "26.06.01", Nemotron_3_Super on GB300, NVFP4: the model is the first reason
    # | DGX-GB300 | 64 | NVFP4 | 512 | 1 | 8192 | 1 | 1 | 1 | n/a | 64 | 9984 | 845 |
    (r,) = [r for r in listed if r.published == 9984]
    assert r.why_not == ("model not in the catalog (Nemotron 3 Super): a hybrid of Mamba-2, "
                         "attention and MoE layers (NemotronH); the tool has no Mamba layer")
    # the GB300 and B300 rows still listed are so for their model, the regression or a layout
    # that cannot run
    assert {r.why_not.split(" (")[0].split(":")[0] for r in listed
            if r.label.startswith(("GB300", "B300"))} == {
        "model not in the catalog", "the table marks it as a known performance regression",
        "the table's layout cannot run"}
    # "26.02", LLAMA3_70B on GB200 in NVFP4: a case, run with --precision nvfp4
    # | DGX-GB200 | 64 | NVFP4 | 256 | 1 | 8192 | 0 | 2 | 4 | 1 | 5 | n/a | 4458 | 2004 |
    (r,) = [r for r in rows if r.published == 4458]
    assert not r.why_not and r.precision == "nvfp4" and (r.tp, r.pp, r.vp) == (2, 4, 5)


def test_cases_name_their_settings_and_run_on_the_rack():
    cases = [r for r in mb26_rows() if not r.why_not]
    assert all(r.assumed.startswith("Megatron-Bridge @ ") for r in cases)
    # no 26.02 row already a case is repeated (GB200 70B MXFP8 3,613 / FSDP 4,040, H100 1,621)
    assert not {3613, 4040, 1621} & {r.published for r in cases if r.label.endswith("(26.02)")}
    # the GB200 rows go onto the NVL72 rack: 64 GPUs in one rack, 256 on four
    on_rack = [r for r in public_rows() if "(26.0" in r.label and r.node == "gb200-nvl72"]
    assert {(r.nodes, r.gpus_per_node) for r in on_rack} == {(1, 8), (1, 64), (4, 64)}
    # and the GB300 rows onto theirs: Llama 3 70B and GPT-OSS 120B on one rack of 64, Llama
    # 3.1 405B, DeepSeek-V3 and Qwen3-235B on four, Qwen3-30B on 8 GPUs of one; 18 dense + 29 MoE
    # less 26.06.01's GPT-OSS row (listed: a known regression)
    gb300 = [r for r in public_rows() if r.label.startswith("GB300") and not r.why_not]
    assert {(r.node, r.nodes, r.gpus_per_node) for r in gb300} == {
        ("gb300-nvl72", 1, 8), ("gb300-nvl72", 1, 64), ("gb300-nvl72", 4, 64)}
    # and 8 dense NVFP4 rows (3 Llama 3 70B, 5 405B), and Kimi-K2's 4 on four racks
    assert len(gb300) == 18 + 29 - 1 + 8 + 4
    # the B300 rows on DGX B300 nodes of 8: 8, 64 and 256 GPUs are 1, 8 and 32 nodes
    b300 = [r for r in public_rows() if r.label.startswith("B300") and not r.why_not]
    assert {(r.node, r.nodes) for r in b300} == {("dgx-b300", 1), ("dgx-b300", 8),
                                                 ("dgx-b300", 32)} and len(b300) == 19


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


def _case(prefix: str, release: str):
    (r,) = [r for r in public_rows() if r.label.startswith(prefix) and r.label.endswith(release)]
    return r


def test_blackwell_ultra_moe_rows_run_their_configs(cat):
    # "26.04", DeepSeekV3 on GB300 (docs/performance-summary-archive.md @ 067f987df):
    # | DGX-GB300 | 256 | MXFP8 | 4096 | 2 | 4096 | 0 | 1 | 2 | 1 | 8 | 32 | 4965 | 1290 |
    # deepseek_workload_base_configs.py @ 26.04-alpha.rc2 L41-54, L169-178: PP 2 VP 8 EP 32,
    # micro-batch 2, hybridep, moe_a2a_overlap False, cuda_graph_scope [], mla_up_proj
    r = _case("GB300 deepseek-v3", "(26.04)")
    assert (r.published, r.mbs, r.pp, r.vp, r.ep, r.dispatcher) == (4965, 2, 2, 8, 32, "hybridep")
    assert (r.ep_comm_overlap, r.cuda_graph) == (False, False) and "mla_up_proj" in r.assumed
    # 256 GPUs on 4 GB300 racks of 64: a PP stage (128 GPUs, two racks) holds 4 EP groups of
    # 32, each inside one rack's NVLink domain
    assert (r.node, r.nodes, r.gpus_per_node) == ("gb300-nvl72", 4, 64)
    # "26.08", Qwen3_235B_a22B on GB300 (docs/performance-summary.md @ 067f987df):
    # | DGX-GB300 | 256 | MXFP8 | 8192 | 2 | 4096 | 1 | 4 | 1 | 12 | 32 | 8816 | 1306 |
    # perf_recipes/qwen/gb300/qwen3_moe.py @ v0.6.0 L461-487: PP 4 VP 12 EP 32, hybridep,
    # _enable_hybridep_full_iteration_mxfp8 (full_iteration, EP overlap: common.py L36-60)
    r = _case("GB300 qwen3-235b", "(26.08)")
    assert (r.published, r.pp, r.vp, r.ep, r.dispatcher) == (8816, 4, 12, 32, "hybridep")
    assert (r.ep_comm_overlap, r.cuda_graph) == (True, True)
    # "26.04.01", DeepSeekV3 on B300:
    # | DGX-B300 | 256 | MXFP8 | 4096 | 2 | 4096 | 0 | 1 | 8 | 1 | n/a | 8 | 3456 | 898 |
    # deepseek_workload_base_configs.py @ v0.4.2 L180-189: micro-batch 2, PP 8, EP 8, hybridep,
    # no EP overlap, Transformer Engine graphs of attn/moe_router/moe_preprocess (not modelled)
    r = _case("B300 deepseek-v3", "(26.04.01)")
    assert (r.published, r.mbs, r.pp, r.vp, r.ep, r.dispatcher) == (3456, 2, 8, 1, 8, "hybridep")
    assert (r.ep_comm_overlap, r.cuda_graph) == (False, False)
    assert "attn, moe_router, moe_preprocess" in r.assumed
    # 256 GPUs = 32 DGX B300 nodes of 8: the EP group of 8 inside one node's NVLink
    assert (r.node, r.nodes, r.precision, r.fp8_recipe) == ("dgx-b300", 32, "fp8", "mxfp8")
    # "26.02.01", Qwen3_235B_a22B on B300: the table's micro-batch 1 and VP 4 run, where
    # qwen3_workload_base_configs.py @ v0.4.0 L237-245 has micro-batch 2 and no VP; no flex
    # backend (alltoall), moe_a2a_overlap False
    # | DGX-B300 | 256 | MXFP8 | 8192 | 1 | 4096 | 0 | 1 | 8 | 1 | 4 | 8 | 2644 | 391 |
    r = _case("B300 qwen3-235b", "(26.02.01)")
    assert (r.published, r.mbs, r.vp, r.dispatcher, r.ep_comm_overlap) == (
        2644, 1, 4, "alltoall", False) and r.assumed.startswith(
        "Megatron-Bridge @ v0.4.0 (0fbfe7d3e) performance configs: the table's micro-batch 1")
    # the node: 8 x b300, 2 x Xeon 6 6776P (8 channels of DDR5-6400: 8 x 6,400 MT/s x 8 B =
    # 409.6 GB/s each), 8 x ConnectX-8 (800 Gb/s), NVLink 5 inside
    node = cat.get("dgx-b300", "node")
    assert (node.gpu, node.gpus, node.cpu, node.cpus, node.nic, node.nics, node.intra_link) == (
        "b300", 8, "xeon-6776p", 2, "connectx-8", 8, "nvlink5")
    cpu = cat.get("xeon-6776p", "cpu")
    assert (cpu.cores, cpu.memory_bandwidth_GBps) == (64, pytest.approx(8 * 6400 * 8 / 1000))


def test_a_row_its_table_marks_as_a_regression_is_listed_not_scored():
    # "26.06.01 NeMo Container", GPT OSS 120B (docs/performance-summary-archive.md L57-58, L90
    # @ 067f987df): both rows carry [^gpt-oss-note], "Performance regression in GPT-OSS 120B
    # pre-training is a known issue" (NVIDIA/cudnn-frontend issue #256)
    # | DGX-GB300 | 64 | MXFP8 | 1280 | 4 | 4096 | 1 | 1 | 1 | n/a | 16 | 20288 | 661 |
    # | DGX-GB200 | 64 | MXFP8 | 1280 | 4 | 4096 | 1 | 1 | 1 | n/a | 64 | 18304 | 597 |
    rows = [r for r in mb26_rows() if "gpt-oss" in r.label.lower() or "GPT" in r.label]
    regressed = {r.published: r for r in rows if r.label.endswith("(26.06.01)")}
    assert set(regressed) == {20288, 18304}
    assert all("cudnn-frontend issue #256" in r.why_not for r in regressed.values())
    # 26.06 and 26.08 on the same configs stay cases (28,947 and 28,672 on GB200)
    assert {r.published for r in rows if not r.why_not and r.label.startswith("GB200")
            and "MXFP8" in r.label} == {28947, 28672}


def test_kimi_k2_rows_run_their_gb300_config_on_the_public_shape():
    # "26.02.01", Kimi_K2 on GB300 (docs/performance-summary.md @ v0.4.0 L123):
    # | DGX-GB300 | 256 | MXFP8 | 4096 | 2 | 4096 | 0 | 1 | 4 | 1 | 4 | 64 | 5072 | 1037 |
    # kimi_workload_base_configs.py L27-42 @ v0.4.0: PP 4 VP 4 EP 64, hybridep, no overlap, no
    # graphs; kimi_llm_pretrain.py L35-44: Muon with MXFP8 gathers 16-bit parameters
    (r,) = [r for r in public_rows() if r.model == "shape:kimi-k2"
            and r.label.endswith("(26.02.01)")]
    assert (r.published, r.gbs, r.mbs, r.pp, r.vp, r.ep, r.etp, r.dispatcher) == (
        5072, 4096, 2, 4, 4, 64, 1, "hybridep")
    assert (r.node, r.nodes, r.gpus_per_node, r.fp8_param_gather) == ("gb300-nvl72", 4, 64,
                                                                      False)
    assert (r.ep_comm_overlap, r.cuda_graph) == (False, False) and "Muon" in r.assumed
    assert "distributed optimizer with overlapped" not in r.assumed  # Muon's DDP has neither
    assert sum(x.model == "shape:kimi-k2" and not x.why_not and x.source.startswith(
        "Megatron-Bridge") for x in public_rows()) == 4


def test_kimi_k2_shape_counts_its_published_trillion():
    from optimus_calc.validate_public import _model
    m = _model(None, "shape:kimi-k2")
    # routed experts 60 MoE layers x 384 x 3 x 7168 x 2048 = 1,014,686,023,680; the shared
    # expert 60 x 3 x 7168 x 2048 = 2,642,411,520; the dense layer's MLP 3 x 7168 x 18432 =
    # 396,361,728; routers 60 x 384 x 7168 + 60 x 384 biases = 165,173,760; MLA per layer
    # q_a 7168 x 1536 + q_b 1536 x 64 x 192 + kv_a 7168 x 576 + kv_b 512 x 64 x 256 + o 8192 x
    # 7168 + norms 1536 + 512 = 101,124,096, x 61 = 6,168,569,856; layer norms 2 x 7168 x 61 =
    # 874,496; embedding and head 2 x 163840 x 7168 = 2,348,810,240; final norm 7,168
    assert m.total_params == 1_026_408_232_448  # "1T total" (the Kimi-K2 model card)
    assert abs(m.active_params / 32e9 - 1) < 0.03  # "32B activated"
