"""The Megatron-Bridge MoE rows of public_cases (docs/reference/framework-physics.md 7.3), with
the settings their performance scripts set. Data only.

Sources of the settings (docs/moe.md has the full table): Megatron-Bridge @ v0.2.1 (1c43b39, the
25.11 release branch r0.2.0, whose docs/performance-summary.md carries the 25.11 table), files
scripts/performance/configs/<model>/workload_base_configs.py and <model>_llm_pretrain.py,
scripts/performance/utils/helpers.py; the 25.09 row from the r0.1.0 branch (684a686). Where the
published table and the script disagree, ``assumed`` says which was used and why.
"""

from __future__ import annotations

from optimus_calc.public_cases_mb26_moe import _SWA as SWA
from optimus_calc.public_row import CS as _CS
from optimus_calc.public_row import DS as _DS
from optimus_calc.public_row import MEG as _MEG
from optimus_calc.public_row import MOE, RC_OSS, RC_OSS_TEXT, PublicRow
from optimus_calc.public_row import MXR as _MXR

_MB = "Megatron-Bridge @ v0.2.1 scripts/performance/configs/"
# every MoE perf script: dropless with forced balanced routing (the table's footnote), router
# fusion, bf16 gradient reduction, the distributed optimizer with grad-reduce and param-gather
# overlap (e.g. gpt_oss/gpt_oss_llm_pretrain.py L33-37, recipes/gpt_oss/gpt_oss.py L284-292)
_COMMON = ("force-balanced dropless routing; distributed optimizer with overlapped grad reduce "
           "and param gather, bf16 gradient reduction (the recipe)")
# recompute_modules=[...] (utils/helpers.py L163-180): element-wise / projection recompute the
# tool has no flag for; the rows run recompute none (the time is nearly that; memory is less)
_RC = "recompute_modules {m} (selective, helpers.py L178-180) has no flag: recompute none"
# moe_a2a_overlap=True -> overlap_moe_expert_parallel_comm + delay_wgrad_compute (helpers.py
# L183-187): the row's ep_comm_overlap (--overlap-moe-expert-parallel-comm)
_A2A = ("overlap_moe_expert_parallel_comm on (moe_a2a_overlap, helpers.py L183-187): "
        "--overlap-moe-expert-parallel-comm, the profile's fitted share of the all-to-all hidden")
_CG = "Transformer Engine CUDA graphs ({s}) not modelled"
# MTP is counted apart (Model.mtp_layers) and not timed: one MoE layer, a 2h x h projection
# and a second pass of the 129,280 x 7,168 output head, about 4% of the FLOPs per token
_MTP = "with MTP: the MTP module is not timed (about 4% of the FLOPs per token)"


# the GB200 rows run HybridEP (moe_flex_dispatcher_backend hybridep) with their EP group inside
# the rack's NVLink domain (64 GPUs a rack, public_cases._on_nvl72: EP 64 is one rack, EP 32
# one PP stage of 32 GPUs), which --moe-dispatcher hybridep prices as NVLink traffic
_HEP = ("HybridEP dispatcher (moe_flex_dispatcher_backend hybridep): --moe-dispatcher hybridep "
        "(EP {ep} in the rack's NVLink domain)")
_GB = "64 GPUs per GB200 NVL72 rack (gb200-nvl72), assumed"


# NeMo 25.02's B200 Mixtral-8x22B FP8 row (public_cases._nemo_dense): the layout of NVIDIA/NeMo
# scripts/llm/performance/recommended_model_configs/model_configs_b200.csv L19 @ v2.2.0 (TP 2
# PP 4 CP 8 DP 4 EP 8 ETP 1 VP 14, MBS 1, GBS 64, seq 65,536), FP8 through bf16_with_fp8_mixed
# (pretrain_mixtral_8x22b.py L65-67: delayed scaling, NeMo 2.2's only recipe), the recipe's
# MegatronTokenDropCallback (recipes/mixtral_8x22b.py L233), DP overlap flags (L120-121) and
# MegatronCommOverlapCallback without tp_comm_overlap (L226-230), which leaves it off
# (lightning/pytorch/callbacks/megatron_comm_overlap.py L135, L142)
MIXTRAL_22B = dict(
    tp=2, pp=4, cp=8, vp=14, ep=8, etp=1, gbs=64, mbs=1, seq=65536, drop_pad=True,
    tp_comm_overlap=False,
    assumed="NeMo v2.2.0 scripts/llm/performance/recommended_model_configs/model_configs_b200"
            ".csv L19 (TP 2 PP 4 CP 8 VP 14 EP 8 ETP 1, MBS 1, GBS 64, seq 65,536); FP8 delayed "
            "scaling (bf16_with_fp8_mixed, NeMo 2.2's only recipe: pretrain_mixtral_8x22b.py "
            "L65-67); token drop at capacity factor 1.0, padded (= balanced; MegatronTokenDrop"
            "Callback, recipes/mixtral_8x22b.py L233); alltoall dispatcher; recompute none; "
            "distributed optimizer with overlapped grad reduce and param gather (the overlap "
            "flags: L120-121); "
            "no TP communication overlap (the recipe's MegatronCommOverlapCallback, L226-230, "
            "sets no tp_comm_overlap: off, lightning/pytorch/callbacks/megatron_comm_overlap"
            ".py L135)",
    **_DS, **_MEG)

def _gpt_oss() -> list[PublicRow]:
    r, m25 = PublicRow, MOE.format(r="25.11")
    rc = RC_OSS_TEXT
    return [
        r(m25, "GB200 GPT-OSS 120B BF16 EP64, 64 GPUs", "gpt-oss-120b", "dgx-b200", 8, 15876,
          gpu="gb200", ep=64, etp=1, gbs=1280, mbs=1, seq=8192, dispatcher="hybridep",
          assumed="Megatron-Bridge branch gaod/r0.2.0_test @ 4a82e16 scripts/performance/"
                  "configs/gpt_oss/workload_base_configs.py L22-28, L42-47 (EP 64, MBS 1, GBS "
                  "1280) and gpt_oss_llm_pretrain.py L33-34 (seq 8192): "
                  + _HEP.format(ep=64) + ", no EP overlap, no CUDA graphs; " + rc
                  + "; " + SWA + "; " + _COMMON + "; " + _GB,
          **_MEG, **RC_OSS),
        r(m25, "B200 GPT-OSS 120B BF16 EP64, 64 GPUs", "gpt-oss-120b", "dgx-b200", 8, 8213,
          ep=64, etp=1, gbs=512, mbs=4, seq=4096,
          assumed=f"EP 64 as {_MB}gpt_oss/workload_base_configs.py L50-55 sets (the table's "
                  "EP column says 8; its GA 2 = 512 / (4 x 64) fits either); " + rc + "; "
                  "alltoall dispatcher (models/gpt_oss/gpt_oss_provider.py L72); " + SWA + "; "
                  + _COMMON, **_MEG, **RC_OSS),
        r(m25, "H100 GPT-OSS 120B BF16 PP4 EP8, 64 GPUs", "gpt-oss-120b", "dgx-h100", 8, 5630,
          pp=4, ep=8, etp=1, gbs=512, mbs=1, seq=4096,
          assumed=f"micro-batch 1 as {_MB}gpt_oss/workload_base_configs.py L22-28, L58-62 "
                  "sets (the table's MBS 4 with GA 2 is inconsistent: 512 / (4 x DP 16) = 8); "
                  + rc + "; alltoall dispatcher; " + SWA + "; "
                  + _COMMON, **_MEG, **RC_OSS),
    ]


def _qwen3() -> list[PublicRow]:
    r, m25 = PublicRow, MOE.format(r="25.11")
    q = f"{_MB}qwen3/workload_base_configs.py"
    # qwen3_llm_pretrain.py L36-38 clears the recipe's recompute, L41-42 seq 4096
    base = "recompute none (qwen3_llm_pretrain.py L36-38); " + _COMMON
    return [
        r(m25, "GB200 Qwen3-30B-A3B MXFP8 EP8, 8 GPUs", "qwen3-30b-a3b", "dgx-b200", 1, 23766,
          gpu="gb200", ep=8, etp=1, gbs=512, mbs=4, seq=4096,
          dispatcher="hybridep",
          assumed=f"{q} L193-200: HybridEP dispatcher (--moe-dispatcher hybridep), "
                  + _CG.format(s="moe_router, moe_preprocess") + "; " + base + "; "
                  "8 GPUs of a GB200 NVL72 rack (gb200-nvl72), assumed", **_MXR, **_MEG),
        r(m25, "B200 Qwen3-30B-A3B MXFP8 EP8, 8 GPUs", "qwen3-30b-a3b", "dgx-b200", 1, 9299,
          ep=8, etp=1, gbs=512, mbs=1, seq=4096,
          assumed=f"{q} L211-219: alltoall dispatcher, micro-batch 1, "
                  + _CG.format(s="moe_router, moe_preprocess") + "; " + base, **_MXR, **_MEG),
        r(m25, "H100 Qwen3-30B-A3B FP8-CS PP2 VP24 EP8, 16 GPUs", "qwen3-30b-a3b", "dgx-h100",
          2, 5275, pp=2, vp=24, ep=8, etp=1, gbs=512, mbs=2, seq=4096,
          assumed=f"{q} L233-239 (VP 12 there and in the 25.09 config; the table's VP 24 kept): "
                  + _A2A + "; no CUDA graphs; " + base, ep_comm_overlap=True, **_CS, **_MEG),
        r(m25, "GB200 Qwen3-235B-A22B BF16 PP8 VP3 EP32, 256 GPUs", "qwen3-235b-a22b",
          "dgx-b200", 32, 4916, gpu="gb200", pp=8, vp=3, ep=32, etp=1, gbs=8192, seq=4096,
          dispatcher="hybridep",
          assumed="the table's PP 8 VP 3 EP 32 (no config at v0.2.1 has the 256-GPU layout; "
                  f"{q} L71-80 is 64 GPUs, PP 8 EP 8): " + _HEP.format(ep=32) + ", no EP "
                  "overlap; " + _CG.format(s="attn, moe_router, moe_preprocess") + "; the "
                  "recipe's embedding and loss pipeline slots (recipes/qwen/qwen3_moe.py "
                  "L160-161) not modelled; " + base + "; " + _GB, **_MEG),
        r(m25, "H100 Qwen3-235B-A22B FP8-CS TP2 PP8 VP4 EP32, 256 GPUs", "qwen3-235b-a22b",
          "dgx-h100", 32, 1575, tp=2, pp=8, vp=4, ep=32, etp=1, gbs=2048, seq=4096,
          assumed=f"{q} L135-144 (the table's layout; EP 32 x ETP 1 folds over TP 2 x DP 16), "
                  "tp_comm_overlap off (qwen3_llm_pretrain.py L156): "
                  "--no-tp-comm-overlap; " + _A2A + "; the recipe's embedding and loss "
                  "pipeline slots (recipes/qwen/qwen3_moe.py L160-161) not modelled; " + base,
          **_CS, **_MEG, tp_comm_overlap=False, ep_comm_overlap=True),
    ]


def _deepseek() -> list[PublicRow]:
    r, m25, m09 = PublicRow, MOE.format(r="25.11"), MOE.format(r="25.09")
    d = f"{_MB}deepseek/workload_base_configs.py"
    # the 25.11 table's GB200 rows are "w/o MTP"
    gb200_ds = (_HEP.format(ep=64) + ", no EP overlap; " + _CG.format(s="moe_router, "
                "moe_preprocess") + "; " + _RC.format(m="mla_up_proj") + "; without MTP (the "
                "table); " + _COMMON + "; " + _GB)
    return [
        r(m25, "GB200 DeepSeek-V3 BF16 PP4 VP4 EP64, 256 GPUs", "deepseek-v3", "dgx-b200", 32,
          3139, gpu="gb200", pp=4, vp=4, ep=64, etp=1, gbs=4096, seq=4096,
          dispatcher="hybridep", assumed=f"{d} L45-57 (PP 4 VP 4 EP 64; its GBS 2048, the "
          "table's 4096 run): " + gb200_ds + "; the recipe's pipeline layout (4 layers a virtual "
          "stage, recipes/deepseek/deepseek_v3.py L242) not modelled", **_MEG),
        r(m25, "GB200 DeepSeek-V3 MXFP8 PP8 VP4 EP32, 256 GPUs", "deepseek-v3", "dgx-b200", 32,
          4018, gpu="gb200", pp=8, vp=4, ep=32, etp=1, gbs=4096, seq=4096,
          dispatcher="hybridep", assumed=f"the table's PP 8 VP 4 EP 32 ({d} L45-57 runs PP 4 VP "
          "4 EP 64 for every precision, GBS 2048): " + gb200_ds.replace("EP 64", "EP 32")
          + "; overlap_param_gather off (deepseek_llm_pretrain.py L112-115) not modelled",
          **_MXR, **_MEG),
        r(m25, "B200 DeepSeek-V3 MXFP8 PP16 EP8, 256 GPUs", "deepseek-v3", "dgx-b200", 32,
          2139, pp=16, ep=8, etp=1, gbs=2048, seq=4096,
          assumed=f"{d} L63-71: alltoall dispatcher, no EP overlap, no CUDA graphs; "
                  + _MTP + "; " + _RC.format(m="mla_up_proj") + "; the recipe's pipeline "
                  "layout (4 layers a stage, the last 1 + MTP + loss, recipes/deepseek/"
                  "deepseek_v3.py L240) not modelled; " + _COMMON, **_MXR, **_MEG),
        r(m09, "H100 DeepSeek-V3 FP8 TP2 PP8 VP4 EP64, 1024 GPUs", "deepseek-v3", "dgx-h100",
          128, 1297, tp=2, pp=8, vp=4, ep=64, etp=1, gbs=8192, seq=4096,
          overlap_grad_reduce=False, ep_comm_overlap=True, dispatcher="deepep",
          assumed="node-limited routing, 4 of the EP group's 8 nodes, as the model's "
                  "group-limited routing gives it (comm.routing_node_limit; DeepSeekV3Provider "
                  "moe_router_num_groups 8, moe_router_group_topk 4, src/megatron/bridge/models/"
                  "deepseek/deepseek_provider.py L178-179 @ v0.1.0rc4; run_script.py L77-78 "
                  "forces balanced routing with DeepEP, random logits through the same "
                  "group-limited top-k, Megatron-LM moe/router.py L861-863, L779-785 @ d98e8a6; "
                  "8 groups of 32 experts over EP 64 are its 8 nodes, moe_utils.py L694-696); "
                  "Megatron-Bridge @ r0.1.0 scripts/performance/configs/deepseek/"
                  "deepseek_v3_llm_pretrain.yaml L58-73 (TP2 PP8 VP4 EP64 ETP1, no CUDA "
                  "graphs) and run_script.py L55-102: overlap_grad_reduce off (L101-102: "
                  "--no-overlap-grad-reduce), DeepEP dispatcher (L56): --moe-dispatcher "
                  "deepep, "
                  "overlap_moe_expert_parallel_comm on (L62, L82-85): "
                  "--overlap-moe-expert-parallel-comm, the profile's fitted share of the "
                  "all-to-all hidden; "
                  + _RC.format(m="mla_up_proj, mlp (L90-91)") + ", pipeline layout "
                  "Et|(tt|)*30mL (L66) not modelled; FP8 current scaling assumed (the 25.09 "
                  "table names no precision; its parenthesised figure is the 128x128 blockwise "
                  "run); " + _MTP + " (recipe default mtp_num_layers 1, recipes/deepseek/"
                  "deepseek_v3.py L51 @ r0.1.0); " + _COMMON, **_CS, **_MEG),
    ]


def moe_rows() -> list[PublicRow]:
    """The MoE rows of framework-physics.md 7.3 in its order."""
    ds, oss, qw = _deepseek(), _gpt_oss(), _qwen3()
    return ds + oss + qw
