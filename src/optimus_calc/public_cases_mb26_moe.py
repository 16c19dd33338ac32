"""The MoE settings of the Megatron-Bridge 26.02-26.08 rows (public_cases_mb26.py; docs/
reference/framework-physics.md 7.3): per release, GPU and model, what its config (the tag in
public_cases_mb26._TAG) runs, as (why not, assumed, PublicRow flags). Data only."""

from __future__ import annotations

from optimus_calc.public_row import RC_OSS, RC_OSS_TEXT

HEP = ("HybridEP dispatcher (moe_flex_dispatcher_backend hybridep): --moe-dispatcher "
       "hybridep, a token crosses to each other node once")
DEEP = ("DeepEP dispatcher (moe_flex_dispatcher_backend deepep): --moe-dispatcher deepep, a "
        "token crosses to each other node once")
_A2A = ("overlap_moe_expert_parallel_comm on (moe_a2a_overlap): "
        "--overlap-moe-expert-parallel-comm, the profile's fitted share of the all-to-all hidden")
_CG = "Transformer Engine CUDA graphs ({s}) not modelled"
# v0.5.0 (26.06) on, GB200 MXFP8: cuda_graph_impl full_iteration, moe_a2a_overlap and
# cutedsl_fused_grouped_mlp in the workload config; from 381d0b825
# _enable_hybridep_full_iteration_mxfp8 (perf_recipes/qwen/common.py L36-60 @ v0.6.0): the
# whole step in one CUDA graph, EP overlap, FP8 dot-product attention, cuteDSL grouped MLP
_FULLT = ("full-iteration CUDA graph ({w}): --cuda-graph-impl full_iteration, no host launches "
          "or syncs per MoE layer; its {x} not modelled; " + _A2A)
_FULL = _FULLT.format(w="qwen/common.py L36-60 @ v0.6.0", x="FP8 dot-product attention and "
                      "cuteDSL fused grouped MLP")
_MTP = "with MTP: the MTP module is not timed (about 4% of the FLOPs per token)"
# Megatron-Bridge docs/releases/known-issues.md @ v0.4.0, "26.02": DeepEP is not supported in the
# NeMo 26.02 container (the DeepSeek-V3 H100 config moved to hybridep); the Qwen3-30B H100 config
# still names deepep, and Megatron-LM refuses deepep without the package (token_dispatcher.py
# L1284 @ d98e8a6), so what the row ran is not known; the alltoall dispatcher times it 4% slower
_NO_DEEPEP = ("the 26.02 container did not support DeepEP (Megatron-Bridge docs/releases/"
              "known-issues.md @ v0.4.0), so the dispatcher the row ran is uncertain; "
              "alltoall times it 4% slower")
_RC = "recompute_modules {m} has no flag: recompute none"


def moe_settings(rel: str, gpu: str, model: str, ep: int, pp: int) -> tuple[str, str, dict]:
    """(why not, assumed, flags) of a MoE row from its release's config (mb26._TAG)."""
    early = rel in ("26.02", "26.02.01", "26.04", "26.04.01")
    if gpu == "GB200" and model != "q30" and (model != "oss" or rel not in ("26.02", "26.04.01")):
        return _gb200(rel, model, ep)
    if model == "dsv3":   # B200: PP16 EP8 hybridep to 26.04; PP8 VP2 EP32 deepep in 26.04.01
        if rel == "26.04.01":
            return "", (DEEP + "; " + _A2A + "; " + _CG.format(s="attn, moe_router, "
                        "moe_preprocess") + "; " + _RC.format(m="mla_up_proj, mlp")
                        + "; pipeline layout Et*4|(t*4|)*14tmL not modelled; " + _MTP), \
                dict(ep_comm_overlap=True)
        asm = ("" if rel != "26.04" else "the table's PP 16 EP 8 (the config at 26.04-alpha."
               "rc2 runs PP 8 VP 2 EP 32); ") + HEP + "; " + _RC.format(m="mla_up_proj")
        return "", asm + "; no CUDA graphs; " + _MTP, {}
    if model == "oss":
        rc = RC_OSS_TEXT + "; " + _SWA
        if gpu == "GB200" or (gpu == "B200" and rel in ("26.02", "26.04.01")):
            ov = gpu == "GB200" and rel == "26.04.01"
            return "", ("alltoall dispatcher (no flex backend in the config: models/gpt_oss/"
                        "gpt_oss_provider.py L72 @ v0.3.0, recipes/gpt_oss/gpt_oss.py L76 @ "
                        "v0.4.2)"
                        + ("; " + _A2A if ov else "") + "; " + rc), dict(ep_comm_overlap=ov,
                                                                         **RC_OSS)
        if gpu == "B200":
            return "", HEP + " (EP 8 inside the node); " + rc, dict(RC_OSS)
        return "", "alltoall dispatcher, micro-batch 1; " + rc, dict(RC_OSS)
    if model == "q30":
        if gpu == "GB200":
            if not early:
                return "", HEP + " (EP 8); " + _FULL, dict(ep_comm_overlap=True,
                                                            cuda_graph=True)
            return "", HEP + " (EP 8); " + _CG.format(s="moe_router, moe_preprocess"), {}
        if gpu == "B200":
            if rel == "26.02":
                return "", ("alltoall dispatcher, micro-batch 1; "
                            + _CG.format(s="moe_router, moe_preprocess")), {}
            return "", HEP + "; " + _CG.format(s="attn, moe_router, moe_preprocess"), {}
        if rel == "26.02":    # H100
            return "", DEEP + "; " + _A2A + "; no CUDA graphs; " + _NO_DEEPEP, \
                dict(ep_comm_overlap=True)
        lay = ("the table's PP 2 VP 12 EP 8 (the config runs EP 16); " if pp > 1 else "")
        return "", lay + HEP + " (EP 16 over two nodes' InfiniBand); no CUDA graphs", {}
    if gpu == "B200":     # q235
        return "", "alltoall dispatcher (no flex backend in the config); no CUDA graphs", {}
    # H100 Qwen3-235B: qwen3_235b_a22b_pretrain_config_h100 sets CommOverlapConfig(
    # tp_comm_overlap=False) in every release (qwen3_llm_pretrain.py L184 @ v0.3.0, L167 @
    # v0.4.0 and v0.4.2, L193 @ 26.04-alpha.rc2), as the 25.11 row's config (L153 @ v0.2.0)
    return "", ("alltoall dispatcher; " + _A2A + "; TP overlap off (qwen3_llm_pretrain.py "
                "CommOverlapConfig(tp_comm_overlap=False) for H100); the recipe's embedding "
                "and loss pipeline slots not modelled"), dict(ep_comm_overlap=True,
                                                            tp_comm_overlap=False)


# GB200 DeepSeek-V3, Qwen3-235B and (26.02.01, 26.04, 26.06 on) GPT-OSS: HybridEP in every
# release's config, the EP group (EP 64 or 32: one or half a PP stage of 64 GPUs) inside a
# rack's NVLink domain (public_cases._on_nvl72); the MXFP8 configs from v0.5.0 (26.06) run
# full-iteration CUDA graphs with EP overlap
_TE3 = _CG.format(s="attn, moe_router, moe_preprocess")
_SWA = ("the 128-token window on every other layer timed (gpt_oss_provider.py L77, L83 @ "
        "v0.3.0)")


def _gb200(rel: str, model: str, ep: int) -> tuple[str, str, dict]:
    """(why not, assumed, flags) of a GB200 HybridEP row (the configs above; _TAG)."""
    hep = HEP + f" (EP {ep} in the rack's NVLink domain)"
    full = rel in ("26.06", "26.06.01", "26.08")
    graph = dict(ep_comm_overlap=True, cuda_graph=True) if full else {}
    if model == "dsv3":
        # deepseek_workload_base_configs.py GB200_V1/_V2: PP 4 VP 4 EP 64, hybridep, no EP
        # overlap, TE graphs attn/moe_router/moe_preprocess, recompute mla_up_proj (v0.3.0) or
        # mlp (v0.4.0-v0.4.2, the FP8 configs); FP8_MX_V1 @ v0.5.0 L98-105: full_iteration,
        # moe_a2a_overlap, recompute mla_up_proj; perf_recipes/deepseek/gb200/deepseek_v3.py
        # @ 381d0b825 the same (common.py L38-63)
        g = _FULLT.format(w="deepseek/common.py L38-63 @ 381d0b825",
                          x="cuteDSL fused grouped MLP and FP8 output projection")
        rc = _RC.format(m="mla_up_proj" if full or rel == "26.02" else "mlp")
        return "", (hep + "; " + (g if full else _TE3) + "; " + rc + "; pipeline layout "
                    "Et*4|(t*4|)*14tmL not modelled; " + _MTP), graph
    if model == "oss":
        # gpt_oss_workload_base_configs.py GB200_BF16_V2 @ v0.4.0 L102-107: EP 64, hybridep,
        # moe_a2a_overlap, recompute layernorm/moe_act, no graphs; GB200_FP8_MX_V2 @ v0.5.0
        # L211-221 and perf_recipes/gpt_oss/common.py L23-49 @ 381d0b825: full_iteration,
        # recompute_modules []
        if full:
            g = _FULLT.format(w="gpt_oss/common.py L23-49 @ 381d0b825",
                              x="FP8 dot-product attention and output projection, cuteDSL "
                                "fused grouped MLP")
            return "", hep + "; " + g + "; recompute none (recompute_modules []); " + _SWA, graph
        return "", (hep + "; " + _A2A + "; no CUDA graphs; " + RC_OSS_TEXT + "; " + _SWA), \
            dict(ep_comm_overlap=True, **RC_OSS)
    # qwen3_workload_base_configs.py GB200_FP8_CS_V2/FP8_MX_V2: PP 8 EP 32 hybridep, TE graphs
    # attn/moe_router/moe_preprocess, VP 3 from v0.4.0; FP8_MX_V2 @ v0.5.0 L229-237 and
    # perf_recipes/qwen/gb200/qwen3_moe.py 256gpu fp8mx @ 381d0b825: full_iteration
    lay = "the table's VP 1 (the config at v0.4.0 runs VP 3); " if rel == "26.02.01" else ""
    return "", (lay + hep + "; " + (_FULL if full else _TE3) + "; recompute none "
                "(qwen3_llm_pretrain.py); the recipe's embedding and loss pipeline slots not "
                "modelled"), graph
