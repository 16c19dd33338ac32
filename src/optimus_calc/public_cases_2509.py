"""The Megatron-Bridge 25.09 pre-training rows (docs/reference/framework-physics.md 7.2/7.3),
every row of the table with the settings of the scripts that ran them. Data only.

The table: Megatron-Bridge docs/performance-summary.md, section "25.09 NeMo Container" (added in
fa0315ae2, L44-81 there; L100-137 @ v0.2.1). It names no precision: the first figure of a cell
is FP8 per-tensor current scaling (the recipe of the 25.11 table's same rows; the GB200
Llama3 8B 31,357 sits beside 25.11's FP8-CS 31,508), the parenthesised one "a different
quantization granularity" (its footnote: 32x32 on GB200 and B200, Transformer Engine's MXFP8
recipe here; 128x128 blockwise on H100, which the tool has no recipe for). Where a cell gives
a second layout in parentheses, it is the MXFP8 run's.

The settings: the release branch r0.1.0 at 684a686 (v0.1.0rc5, the container's Megatron-Bridge:
its pyproject.toml L88 pins megatron-core 0.14), scripts/performance/run_script.py and
configs/<model>/<model>_llm_pretrain.yaml (``perf_matrix``: micro-batch, layout, CUDA graphs
per GPU and recipe). Where the table and the script disagree, the table's layout is run (it is
what was measured and published) and ``assumed`` says so.

Every MoE row but H100 DeepSeek-V3 (public_cases_moe.py) runs token drop with padding:
``apply_moe_token_drop`` (src/megatron/bridge/training/utils/moe_token_drop.py L18-57 @
684a686: capacity factor 1.0, ``moe_pad_expert_input_to_capacity`` True, and it asserts the
alltoall dispatcher, L39-42): ``drop_pad`` on the row (docs/moe.md).
"""

from __future__ import annotations

from optimus_calc.public_row import CS, FP, MEG, MOE, MXR, PublicRow

MB2509 = f"Megatron-Bridge docs/performance-summary.md, release 25.09 ({FP} 7.2, @ fa0315ae2)"
M09 = MOE.format(r="25.09")
_C = "Megatron-Bridge @ 684a686 scripts/performance/configs/"
_RUN = "Megatron-Bridge @ 684a686 scripts/performance/run_script.py"
_GB = "64 GPUs per GB200 NVL72 rack (gb200-nvl72), assumed"
_DENSE = "recompute none and the distributed optimizer (the recipes' defaults)"
_CG = "Transformer Engine CUDA graphs on (cuda_graphs true, {y}) not modelled"
# utils/helpers.py L131-135 @ 684a686: cpu_offloading on, weights off: the activations of N
# layers go to host memory (the tool has no activation offload; C2C hides it, assumed)
_ACT = ("activation offload of {n} layers (cpu_offloading_num_layers, {y}; utils/helpers.py "
        "L131-135) not modelled: assumed hidden behind compute")
# apply_moe_token_drop: alltoall dispatcher, capacity 1.0, padded; the Qwen3 recipes run no
# EP overlap (comm_overlap.py L438 @ 684a686: overlap_moe_expert_parallel_comm False) and
# TP overlap on (run_script.py L107, L114)
_TD = ("token drop with padding, capacity factor 1.0 (run_script.py {l}, training/utils/"
       "moe_token_drop.py L18-57): --moe-pad-expert-input-to-capacity, alltoall dispatcher; "
       "no EP overlap (training/comm_overlap.py L438)")
_MTP = "with MTP: the MTP module is not timed (about 4% of the FLOPs per token)"


def _pair(src: str, label: str, cs: float, mx: float | None, mx_kw: dict | None = None,
          **kw) -> list[PublicRow]:
    """The FP8-CS row of a Blackwell cell and, where the cell has one, its MXFP8 row (with
    the cell's parenthesised layout, ``mx_kw``)."""
    out = [PublicRow(src, label.format(p="FP8-CS"), published=cs, **kw, **CS, **MEG)]
    if mx is not None:
        mk = {**kw, **(mx_kw or {})}
        out.append(PublicRow(src, mk.pop("label", label).format(p="MXFP8"), published=mx, **mk,
                             **MXR, **MEG))
    return out


def _dense() -> list[PublicRow]:
    l8, l70, l405 = (f"{_C}llama3/llama3_8b_llm_pretrain.yaml",
                     f"{_C}llama3/llama3_70b_llm_pretrain.yaml",
                     f"{_C}llama31/llama31_405b_llm_pretrain.yaml")
    gb = dict(gpu="gb200", node="dgx-b200")
    fsdp70 = (f"FSDP, micro-batch 2 ({l70} L140-146); " + _ACT.format(n=40, y="L146")
              + "; " + _GB)
    fsdp405 = (f"FSDP with TP 2 ({l405} L117-123); " + _ACT.format(n=95, y="L123") + "; "
               + _GB)
    return [
        *_pair(MB2509, "GB200 Llama3 8B {p}, 8 GPUs (25.09)", 31357, 29925, model="llama-3-8b",
               nodes=1, gbs=128, mbs=2, **gb,
               assumed=f"{l8} L97-118 (CUDA graphs on for MXFP8 only, not modelled); "
                       + _DENSE + "; " + _GB),
        PublicRow(MB2509, "GB200 Llama3 70B FP8-CS FSDP, 64 GPUs (25.09)", "llama-3-70b",
                  "dgx-b200", 8, 3986, gpu="gb200", gbs=128, mbs=2, framework="megatron",
                  zero=3, assumed=fsdp70, **CS),
        PublicRow(MB2509, "GB200 Llama3 70B MXFP8 TP2 PP4 VP5, 64 GPUs (25.09)", "llama-3-70b",
                  "dgx-b200", 8, 3546, gpu="gb200", tp=2, pp=4, vp=5, gbs=128, mbs=1,
                  assumed=f"the cell's parenthesised layout; micro-batch 1 as {l70} L147-152 "
                          "sets (the table's GA 16 = 128 / (1 x DP 8); its MBS column says 2); "
                          + _DENSE + "; " + _GB, **MXR, **MEG),
        PublicRow(MB2509, "GB200 Llama3.1 405B FP8-CS TP2 FSDP, 128 GPUs (25.09)",
                  "llama-3-405b", "dgx-b200", 16, 729, gpu="gb200", tp=2, gbs=64, mbs=1,
                  framework="megatron", zero=3, assumed=fsdp405, **CS),
        PublicRow(MB2509, "GB200 Llama3.1 405B MXFP8 TP4 PP8 CP2 VP8, 128 GPUs (25.09)",
                  "llama-3-405b", "dgx-b200", 16, 578, gpu="gb200", tp=4, pp=8, cp=2, vp=8,
                  gbs=64, mbs=1, assumed=f"the cell's parenthesised layout ({l405} L124-129); "
                  + _DENSE + "; " + _GB, **MXR, **MEG),
        *_pair(MB2509, "B200 Llama3 8B {p}, 8 GPUs (25.09)", 29994, 29388, model="llama-3-8b",
               node="dgx-b200", nodes=1, gbs=128, mbs=2,
               assumed=_CG.format(y=f"{l8} L78-85") + "; " + _DENSE),
        *_pair(MB2509, "B200 Llama3.1 405B {p} TP4 PP8 CP2 VP8, 128 GPUs (25.09)", 664, 622,
               model="llama-3-405b", node="dgx-b200", nodes=16, tp=4, pp=8, cp=2, vp=8,
               gbs=64, mbs=1, assumed=f"{l405} L75-89; " + _DENSE),
        PublicRow(MB2509, "H100 Llama3 8B FP8-CS FSDP, 8 GPUs (25.09)", "llama-3-8b",
                  "dgx-h100", 1, 14079, gbs=128, mbs=1, framework="megatron", zero=3,
                  assumed=f"{l8} L52-77 (FSDP, NCCL userbuffers); recompute none", **CS),
        PublicRow(MB2509, "H100 Llama3 70B FP8-CS TP4 PP8 VP5, 64 GPUs (25.09)", "llama-3-70b",
                  "dgx-h100", 8, 1619, tp=4, pp=8, vp=5, gbs=128, mbs=1,
                  assumed=f"{l70} L56-77; " + _DENSE, **CS, **MEG),
        PublicRow(MB2509, "H100 Llama3.1 405B FP8-CS TP8 PP8 CP2 VP8, 1024 GPUs (25.09)",
                  "llama-3-405b", "dgx-h100", 128, 302, tp=8, pp=8, cp=2, vp=8, gbs=512,
                  mbs=1, assumed=f"{l405} L57-71; " + _DENSE, **CS, **MEG),
    ]


def _moe() -> list[PublicRow]:
    q30, q235, ds = (f"{_C}qwen3/qwen3_30b_a3b_llm_pretrain.yaml",
                     f"{_C}qwen3/qwen3_235b_a22b_llm_pretrain.yaml",
                     f"{_C}deepseek/deepseek_v3_llm_pretrain.yaml")
    td30, td235 = _TD.format(l="L109"), _TD.format(l="L116")
    tdds = ("token drop with padding, capacity factor 1.0 on B200 and GB200 (run_script.py "
            "L57-60, L79-80; moe_token_drop.py L18-57): --moe-pad-expert-input-to-capacity, "
            "alltoall dispatcher; no EP overlap (L86-89), shared-expert overlap on (L89) not "
            "modelled; recompute_modules mla_up_proj (L92-98) has no flag: recompute none; "
            + _MTP)
    qk = dict(ep=8, etp=1, seq=4096, drop_pad=True)
    return [
        *_pair(M09, "GB200 Qwen3-30B-A3B {p} EP8, 8 GPUs (25.09)", 22775, 23723,
               model="qwen3-30b-a3b", node="dgx-b200", nodes=1, gpu="gb200", gbs=512, mbs=4,
               assumed=f"{q30} L74-88 (micro-batch 4); " + _CG.format(y="L81") + "; " + td30
               + "; " + _GB, **qk),
        PublicRow(M09, "B200 Qwen3-30B-A3B FP8-CS EP8, 8 GPUs (25.09)", "qwen3-30b-a3b",
                  "dgx-b200", 1, 18066, gbs=512, mbs=1,
                  assumed=f"FP8-CS assumed (the cell has one figure); {q30} L92-106 "
                          "(micro-batch 1); " + _CG.format(y="L99") + "; " + td30,
                  **qk, **CS, **MEG),
        PublicRow(M09, "H100 Qwen3-30B-A3B FP8-CS PP2 VP24 EP8, 16 GPUs (25.09)",
                  "qwen3-30b-a3b", "dgx-h100", 2, 10494, pp=2, vp=24, gbs=512, mbs=2,
                  assumed=f"the table's VP 24 ({q30} L56-73 @ 684a686 says 12, @ fa0315ae2 "
                          "24); micro-batch 2 (L72-73); no CUDA graphs; " + td30,
                  **qk, **CS, **MEG),
        *_pair(M09, "GB200 Qwen3-235B-A22B {p} TP2 EP64, 64 GPUs (25.09)", 4452, 4416,
               model="qwen3-235b-a22b", node="dgx-b200", nodes=8, gpu="gb200", tp=2,
               gbs=1024, mbs=1,
               assumed=f"the table's TP 2 EP 64 ETP 1, as {q235} @ fa0315ae2 L73-90 (@ "
                       "684a686: TP 1 PP 8 EP 8); EP 64 inside the rack's NVLink domain; "
                       + _CG.format(y="L80") + "; " + td235 + "; " + _GB,
               **{**qk, "ep": 64}),
        *_pair(M09, "B200 Qwen3-235B-A22B {p} PP8 VP2 EP8, 64 GPUs (25.09)", 4104, 4275,
               model="qwen3-235b-a22b", node="dgx-b200", nodes=8, pp=8, vp=2, gbs=1024,
               mbs=1, assumed=f"{q235} L91-108 (PP 8 VP 2, no CUDA graphs); the recipe's "
               "embedding and loss pipeline slots (recipes/qwen/qwen3_235b_a22b.py L70-71) "
               "not modelled; " + td235, **qk),
        PublicRow(M09, "H100 Qwen3-235B-A22B FP8-CS TP2 PP8 VP4 EP32, 256 GPUs (25.09)",
                  "qwen3-235b-a22b", "dgx-h100", 32, 1204, tp=2, pp=8, vp=4, gbs=2048,
                  mbs=1, assumed=f"{q235} L56-72; the recipe's embedding and loss pipeline "
                  "slots not modelled; " + td235,
                  **{**qk, "ep": 32}, **CS, **MEG),
        PublicRow(M09, "GB200 DeepSeek-V3 FP8-CS PP4 VP4 EP64, 256 GPUs (25.09)", "deepseek-v3",
                  "dgx-b200", 32, 3454, gpu="gb200", pp=4, vp=4, gbs=2048, mbs=1,
                  assumed=f"{ds} L95-112 and {_RUN} L64 (PP 4 VP 4); EP 64 inside the rack's "
                          "NVLink domain; " + tdds + "; " + _GB, **{**qk, "ep": 64}, **CS, **MEG),
        PublicRow(M09, "GB200 DeepSeek-V3 MXFP8 PP8 VP2 EP64, 256 GPUs (25.09)", "deepseek-v3",
                  "dgx-b200", 32, 2835, gpu="gb200", pp=8, vp=2, ep=64, gbs=2048, seq=4096,
                  why_not="the layout is not pinned: the cell's parenthesised PP 8 leaves 32 "
                          "GPUs a stage for EP 64, and the script runs PP 4 VP 4 for every "
                          f"recipe ({ds} L95-112, {_RUN} L64)"),
        *_pair(M09, "B200 DeepSeek-V3 {p} PP16 EP8, 256 GPUs (25.09)", 2265, 2159,
               model="deepseek-v3", node="dgx-b200", nodes=32, pp=16, gbs=2048, mbs=1,
               assumed=f"{ds} L77-94 (no CUDA graphs); " + tdds, **qk),
    ]


def rows_2509() -> list[PublicRow]:
    """Every row of the 25.09 table but H100 DeepSeek-V3 (public_cases_moe.py)."""
    return _dense() + _moe()
