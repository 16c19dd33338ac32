"""The Blackwell Ultra MoE settings of the Megatron-Bridge 26.02-26.08 rows (public_cases_mb26.py;
docs/reference/framework-physics.md 7.3): per release and model, what its GB300 or B300 config
(the tag in public_cases_mb26._TAG) runs, as (why not, assumed, PublicRow flags), as
public_cases_mb26_moe.py does for H100, B200 and GB200. GB300 rows run on the gb300-nvl72 rack
(public_cases._on_nvl72), B300 rows on dgx-b300 nodes. Data only.

The files: scripts/performance/configs/<family>/<family>_workload_base_configs.py at v0.3.0 to
v0.5.0 (deepseek, gpt_oss, qwen/qwen3; the V2 configs of DeepSeek-V3, GPT-OSS and Qwen3-235B,
V1 of Qwen3-30B, as public_cases_mb26 reads them), from 381d0b825 src/megatron/bridge/
perf_recipes/<family>/gb300/. Where the table and the config disagree, the table's layout runs
and the text says so.
"""

from __future__ import annotations

from optimus_calc.public_cases_mb26_moe import _A2A, _CG, _FULLT, _MTP, _RC, _SWA, HEP

_EARLY = ("26.02", "26.02.01", "26.04", "26.04.01")
_FLAGS = dict(ep_comm_overlap=True, cuda_graph=True)
_PPS = "the recipe's embedding and loss pipeline slots not modelled"
_LAYOUT = "pipeline layout Et*4|(t*4|)*14tmL not modelled"
_NOG = "no CUDA graphs (cuda_graph_scope [], no cuda_graph_impl)"

# Kimi-K2, which Megatron-Bridge builds from moonshotai/Kimi-K2-Instruct's config.json
# (recipes/kimi/kimi_k2.py L63-66 @ v0.4.0, AutoBridge): DeepSeek-V3's architecture with 384
# routed experts, 64 heads, one dense layer first and no MTP module. The values as Megatron-
# Bridge's own test of the Kimi text config gives them (tests/unit_tests/models/kimi_vl/
# test_kimi_k25_vl_bridge.py L64-82 @ v0.4.0: 61 layers, hidden 7168, intermediate 18432, 64
# heads, MLA q_lora_rank 1536 / kv_lora_rank 512 / qk_nope 128 / qk_rope 64 / v 128, 384
# routed experts, one shared, top-8, moe_intermediate_size 2048, first_k_dense_replace 1,
# routed_scaling_factor 2.827, vocabulary 163,840); untied and without MTP as Kimi-K2's
# config.json (tie_word_embeddings false, num_nextn_predict_layers 0), assumed from it
SHAPES = {"kimi-k2": dict(
    family="kimi_k2", layers=61, hidden=7168, heads=64, kv_heads=64, ffn_hidden=18432,
    ffn_type="swiglu", vocab=163840, tied_embeddings=False, position_embedding="rope",
    norm="rmsnorm", experts=384, top_k=8, shared_experts=1, moe_ffn_hidden=2048,
    router_bias=True, router_topk_scaling=2.827, first_dense_layers=1, q_lora_rank=1536,
    kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128, seq_len=4096,
    dropout=0.0, dropout_source="Kimi-K2 config.json attention_dropout 0.0")}
# kimi_workload_base_configs.py KIMI_K2_PRETRAIN_CONFIG_GB300 (= _FP8_MX) L27-42, the same at
# v0.4.0, 26.04-alpha.rc2, v0.4.2 and v0.5.0: PP 4 VP 4 EP 64, micro-batch 2, hybridep, no
# moe_a2a_overlap, cuda_graph_scope [], recompute_modules ["mla_up_proj"]; the pipeline layout
# of recipes/kimi/kimi_k2.py L28-40 ((4, 4): embedding + 4 layers, 14 chunks of 4, 1 + loss);
# kimi_llm_pretrain.py L35-44 turns fp8_param_gather off for Muon with MXFP8, L53 forces
# balanced routing; Muon's Newton-Schulz, about 1% of the step: 5 iterations of ~4 m^2 n +
# 2 m^3 FLOPs on each m x n matrix, for one GPU's 270 expert matrices (6 experts x 15 layers x
# 3, 2048 x 7168) ~1.9e14 FLOP, ~0.1 s at ~2 PFLOP/s against 12.9 s a step (65,536 tokens a GPU
# at the published 5,072 tokens/s), estimated, not timed; the table's note and
# argument_parser.py's --optimizer_type (default muon;
# L594-601 @ v0.4.0, L596-603 @ 26.04-alpha.rc2, L601-608 @ v0.4.2, L683-690 @ v0.5.0): Muon,
# whose DDP runs without the distributed optimizer and its param-gather overlap
# (recipes/kimi/kimi_k2.py L198-200 @ v0.4.0)
_KIMI = ("no EP overlap; " + _NOG + "; " + _RC.format(m="mla_up_proj") + "; pipeline layout "
         "E t*4|(t*4|)*14 t L (recipes/kimi/kimi_k2.py L37) not modelled; the Muon optimizer "
         "(the table's note; --optimizer_type's default, performance/argument_parser.py) is "
         "priced as Adam's distributed optimizer (Muon runs as dist_muon, Megatron-core's "
         "LayerWiseDistributedOptimizer, its state sharded over the data-parallel ranks by "
         "layer: kimi_llm_pretrain.py L35-37; its Newton-Schulz iterations, about 1% of this "
         "step, and its DDP without the distributed optimizer's buffers or the param-gather "
         "overlap, recipes/kimi/kimi_k2.py L198-200, are not modelled); parameters gathered "
         "in 16 bits (fp8_param_gather off for Muon with MXFP8: kimi_llm_pretrain.py L35-44)")

# the full-iteration MXFP8 configs of 26.06 (v0.5.0), 26.06.01 (381d0b825) and 26.08 (v0.6.0)
_FULL_AT = {
    # deepseek_workload_base_configs.py @ v0.5.0 L68-76 (GB300_FP8_MX_V1: micro-batch 1,
    # full_iteration, moe_a2a_overlap, cutedsl_fused_grouped_mlp, fp8_dot_product_attention,
    # recompute_modules []), L193-196 (V2), L323-326 (GBS15360); perf_recipes/deepseek/gb300/
    # deepseek_v3.py @ 381d0b825 L132-156 (common.py L38-63), @ v0.6.0 L133-157
    "dsv3": {"26.06": "deepseek_workload_base_configs.py GB300_FP8_MX_V1 @ v0.5.0 L68-76",
             "26.06.01": "deepseek/gb300/deepseek_v3.py L132-156, common.py L38-63 @ 381d0b825",
             "26.08": "deepseek/gb300/deepseek_v3.py L133-157 @ v0.6.0"},
    # gpt_oss_workload_base_configs.py @ v0.5.0 L201-210 (GB300_FP8_MX_V2: EP 16, hybridep,
    # full_iteration, moe_a2a_overlap); perf_recipes/gpt_oss/gb300/gpt_oss.py L216-231 and
    # common.py L23-49 @ 381d0b825 (the same at v0.6.0)
    "oss": {"26.06": "gpt_oss_workload_base_configs.py GB300_FP8_MX_V2 @ v0.5.0 L201-210",
            "26.06.01": "gpt_oss/gb300/gpt_oss.py L216-231, common.py L23-49 @ 381d0b825",
            "26.08": "gpt_oss/gb300/gpt_oss.py L216-231, common.py L23-49 @ v0.6.0"},
    # qwen3_workload_base_configs.py @ v0.5.0 L358-365 (GB300 30B FP8_MX_V1), L202-210 (235B
    # GB300_FP8_MX_V2: VP 12); perf_recipes/qwen/gb300/qwen3_moe.py @ 381d0b825 L299-325 and
    # L459-485, @ v0.6.0 L301-327 and L461-487; _enable_hybridep_full_iteration_mxfp8 in
    # qwen/common.py L36-60
    "q30": {"26.06": "qwen3_workload_base_configs.py GB300 FP8_MX_V1 @ v0.5.0 L358-365",
            "26.06.01": "qwen/gb300/qwen3_moe.py L299-325, common.py L36-60 @ 381d0b825",
            "26.08": "qwen/gb300/qwen3_moe.py L301-327, common.py L36-60 @ v0.6.0"},
    "q235": {"26.06": "qwen3_workload_base_configs.py GB300_FP8_MX_V2 @ v0.5.0 L202-210",
             "26.06.01": "qwen/gb300/qwen3_moe.py L459-485, common.py L36-60 @ 381d0b825",
             "26.08": "qwen/gb300/qwen3_moe.py L461-487, common.py L36-60 @ v0.6.0"},
}
_FULL_X = {"dsv3": "cuteDSL fused grouped MLP, FP8 dot-product attention and output projection",
           "oss": "FP8 dot-product attention and output projection, cuteDSL fused grouped MLP",
           "q30": "FP8 dot-product attention and cuteDSL fused grouped MLP",
           "q235": "FP8 dot-product attention and cuteDSL fused grouped MLP"}


def bw_settings(rel: str, gpu: str, model: str, ep: int) -> tuple[str, str, dict]:
    """(why not, assumed, flags) of a GB300 or B300 MoE row from its release's config."""
    return _gb300(rel, model, ep) if gpu == "GB300" else _b300(rel, model, ep)


def _gb300(rel: str, model: str, ep: int) -> tuple[str, str, dict]:
    """A GB300 row: HybridEP inside the rack's NVLink domain, except GPT-OSS to 26.04.01."""
    hep = HEP + f" (EP {ep} in the rack's NVLink domain)"
    if model == "Kimi-K2":  # the same configuration in every release that lists it
        return "", hep + "; " + _KIMI, dict(fp8_param_gather=False)
    if rel not in _EARLY:
        g = _FULLT.format(w=_FULL_AT[model][rel], x=_FULL_X[model])
        tail = {"dsv3": "recompute none (recompute_modules []); " + _LAYOUT + "; " + _MTP,
                "oss": "recompute none (no recompute_modules); " + _SWA,
                "q30": "recompute none (qwen3_llm_pretrain.py)",
                "q235": "recompute none (qwen3_llm_pretrain.py); " + _PPS}[model]
        return "", hep + "; " + g + "; " + tail, _FLAGS
    if model == "dsv3":
        # deepseek_workload_base_configs.py GB300_V1 (L41-54 at every tag to v0.4.2) and V2
        # (v0.3.0 L142-151, v0.4.0 and v0.4.2 L148-157, 26.04-alpha.rc2 L169-178): PP 2 VP 8
        # EP 32, micro-batch 2, layout Et*4|(t*4|)*14tmL, hybridep, moe_a2a_overlap False,
        # cuda_graph_scope [], recompute_modules ["mla_up_proj"]
        return "", (hep + "; no EP overlap; " + _NOG + "; " + _RC.format(m="mla_up_proj")
                    + "; " + _LAYOUT + "; " + _MTP), {}
    if model == "oss":
        # gpt_oss_workload_base_configs.py GB300_BF16_V1/V2 (v0.3.0 L45-51, L90-93; v0.4.0,
        # 26.04-alpha.rc2 and v0.4.2 L45-51, L96-99): EP 64, micro-batch 4, TE graphs attn/
        # moe_router/moe_preprocess, no flex backend (alltoall), no moe_a2a_overlap, no
        # recompute_modules (the recipe sets none: recipes/gpt_oss/gpt_oss.py)
        return "", ("alltoall dispatcher (no flex backend in GB300's config), EP 64 in the "
                    "rack's NVLink domain; no EP overlap; " + _CG.format(
                        s="attn, moe_router, moe_preprocess") + "; recompute none (no "
                    "recompute_modules); " + _SWA), {}
    if model == "q30":
        # qwen3_workload_base_configs.py GB300 FP8_CS_V1 = FP8_MX_V1 (v0.3.0 L323-333, v0.4.0
        # L328-338, 26.04-alpha.rc2 L333-343, v0.4.2 L330-340): EP 8, micro-batch 8, hybridep,
        # TE graphs moe_router/moe_preprocess
        return "", hep + "; " + _CG.format(s="moe_router, moe_preprocess"), {}
    # qwen3_workload_base_configs.py GB300_FP8_CS_V2 @ v0.3.0 L197-207 (PP 4 EP 32,
    # micro-batch 2, hybridep, TE graphs attn/moe_router/moe_preprocess); FP8_MX_V2 adds VP 12
    # from v0.4.0 (L200-203; 26.04-alpha.rc2 L200-203; v0.4.2 L202-205)
    lay = "the table's VP 1 (the config at v0.4.0 runs VP 12); " if rel == "26.02.01" else ""
    return "", (lay + hep + "; " + _CG.format(s="attn, moe_router, moe_preprocess")
                + "; recompute none (qwen3_llm_pretrain.py); " + _PPS), {}


def _b300(rel: str, model: str, ep: int) -> tuple[str, str, dict]:
    """A B300 row on dgx-b300 nodes (8 GPUs, ConnectX-8 between nodes)."""
    hep = HEP + " (EP 8 inside the node)"
    if model == "dsv3":
        # deepseek_workload_base_configs.py B300_V1/V2 (v0.3.0 L90-99, L164-175; v0.4.0 L94-103,
        # L180-191; 26.04-alpha.rc2 L115-124, L201-212): PP 16 EP 8, hybridep, no
        # moe_a2a_overlap, recompute mla_up_proj, no graphs; B300_V2 @ v0.4.2 L180-193 and
        # v0.5.0 L222-235: micro-batch 2, PP 8, TE graphs attn/moe_router/moe_preprocess
        g = ("no CUDA graphs" if rel in ("26.02", "26.02.01", "26.04") else
             _CG.format(s="attn, moe_router, moe_preprocess"))
        return "", (hep + "; no EP overlap; " + g + "; " + _RC.format(m="mla_up_proj") + "; "
                    + _MTP), {}
    if model == "oss":
        # gpt_oss_workload_base_configs.py B300_BF16_V1/V2 @ v0.3.0 L62-68, L102-105: EP 64,
        # micro-batch 4, TE graphs, no flex backend; from v0.4.0 (L110-115; v0.4.2 L109-114;
        # v0.5.0 L181-186, FP8_MX_V2 = BF16_V2 L222) EP 8 and hybridep
        g = _CG.format(s="attn, moe_router, moe_preprocess")
        if rel == "26.02":
            return "", ("alltoall dispatcher (no flex backend in the config), EP 64 over eight "
                        "nodes; " + g + "; recompute none (no recompute_modules); " + _SWA), {}
        return "", hep + "; " + g + "; recompute none (no recompute_modules); " + _SWA, {}
    if model == "q30":
        # qwen3_workload_base_configs.py B300 FP8_CS_V1 = FP8_MX_V1 (v0.3.0 L376-386; v0.4.0
        # L381-391; 26.04-alpha.rc2 L390-400; v0.4.2 L383-393): EP 8, micro-batch 8, hybridep,
        # TE graphs moe_router/moe_preprocess; v0.5.0 L432-439 FP8_MX_V1: full_iteration,
        # moe_a2a_overlap, cutedsl_fused_grouped_mlp, fp8_dot_product_attention
        if rel == "26.06":
            return "", (hep + "; " + _FULLT.format(
                w="qwen3_workload_base_configs.py B300 FP8_MX_V1 @ v0.5.0 L432-439",
                x=_FULL_X["q30"])), _FLAGS
        return "", hep + "; " + _CG.format(s="moe_router, moe_preprocess"), {}
    # qwen3_workload_base_configs.py B300_FP8_CS_V1/V2 @ v0.3.0 L121-132, L235-242: PP 8 VP 4
    # EP 8, no flex backend, moe_a2a_overlap True; @ v0.4.0 L122-132, L237-245 and
    # 26.04-alpha.rc2 L122-133, L242-250: PP 8 EP 8, micro-batch 2, no VP, no overlap; v0.4.2
    # L123-134, L239-247 adds hybridep; no CUDA graphs at any tag
    if rel == "26.02":
        return "", ("alltoall dispatcher (no flex backend in the config); " + _A2A + "; no CUDA "
                    "graphs; " + _PPS), dict(ep_comm_overlap=True)
    disp = hep if rel == "26.04.01" else "alltoall dispatcher (no flex backend in the config)"
    lay = ("the table's micro-batch 1 and VP 4 (the config at v0.4.0 runs micro-batch 2 without "
           "VP); " if rel == "26.02.01" else "")
    return "", lay + disp + "; no EP overlap; no CUDA graphs; " + _PPS, {}
