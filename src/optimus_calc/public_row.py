"""The record of one published end-to-end training row (public_cases.py, public_cases_moe.py)
and the settings several row modules share. Data only."""

from __future__ import annotations

from optimus_calc.record import record

FP = "docs/reference/framework-physics.md"
# the Megatron-Bridge MoE table (framework-physics.md 7.3), by release
MOE = f"Megatron-Bridge docs/performance-summary.md, release {{r}} ({FP} 7.3)"

MEG = dict(framework="megatron", zero=1)
CS = dict(precision="fp8", fp8_recipe="te-current")
# Transformer Engine MXFP8 (--fp8-recipe mxfp8), the recipe the row's label names
MXR = dict(precision="fp8", fp8_recipe="mxfp8")
# Transformer Engine NVFP4 (--precision nvfp4; Megatron-Bridge's bf16_with_nvfp4_mixed), whose
# performance configs turn the TP overlap off (cfg.comm_overlap.tp_comm_overlap = False if
# precision == "nvfp4": llama/llama31_llm_pretrain.py L74 and llama3_llm_pretrain.py L79 @
# v0.3.0, the same statement through v0.5.0, e.g. L87 and L80 there)
NV4 = dict(precision="nvfp4", tp_comm_overlap=False)
# NeMo 2.1 (the NeMo 24.12 container) had delayed scaling only: nemo/collections/llm/recipes/
# precision/mixed_precision.py L46-54 @ v2.1.0 (benchmarks/fit_fp8_recipes.py NEMO_2412); so had
# NeMo 2.2 (container 25.02), the same lines @ v2.2.0
DS = dict(precision="fp8", fp8_recipe="te-delayed")

# Dropout of the shapes' runs (the activation masks count in memory and in the memory-bound
# time): FlashAttention-2's GPT-3 runs build the `gpt2` model config (GPT2Config: resid, embd
# and attn pdrop 0.1) with fused_dropout_add_ln (Dao-AILab/flash-attention training/configs/
# experiment/pile/gpt3s-flash.yaml @ 0b037c2); Megatron-LM's own runs keep its defaults
# (TransformerConfig hidden_dropout and attention_dropout 0.1, megatron/core/transformer/
# transformer_config.py L188-191 @ d98e8a6). MPT's default to 0 (public_cases_mpt.shape).
DAO_DROPOUT = dict(dropout=0.1, dropout_source="GPT2Config pdrop 0.1 (flash-attention "
                   "training/configs/experiment/pile/gpt3s-flash.yaml @ 0b037c2)")
MEGATRON_DROPOUT = dict(dropout=0.1, dropout_source="Megatron-LM defaults (transformer_config"
                        ".py L188-191 @ d98e8a6)")

# Megatron-Bridge's GPT-OSS recipes: recompute_modules ["layernorm", "moe_act"] (selective,
# output-discarding; Training.recompute_modules)
RC_OSS = dict(recompute="selective", recompute_modules=("layernorm", "moe_act"))
RC_OSS_TEXT = ("recompute_modules layernorm, moe_act: --recompute selective --recompute-modules "
               "layernorm,moe_act")

# torchtitan's async TP (parallelism.enable_async_tensor_parallel: PyTorch's micro-pipelined
# all-gather / reduce-scatter matmuls) has no switch: a fitted share of the TP collectives hidden
# raised the held-out error on its three public sources (benchmarks/fit_async_tp.py), so a row
# that ran it (PublicRow.async_tp) is priced with the collectives exposed, as the vanilla TP rows
# beside it, and scored, not fitted (PublicRow.unfitted, as the power-capped B200s): what async
# TP hides (1.05-1.16x published) would enter the H100 curve and the 500 W H100's fitted scale
# and move the rows without it (fitted, torchtitan's BF16 Table 1 went 1.0% -> 10.0% held out
# while its Float8 long-context rows improved). with_async_tp applies both.
ASYNC_TP = ("async TP has no switch (a fitted hidden share raised the held-out error: "
            "benchmarks/fit_async_tp.py): TP collectives priced exposed")
ASYNC_UNFITTED = "async TP hides part of the TP collectives priced exposed"

# NeMo 2's GPT-3 175B runs without dropout (GPTConfig175B sets hidden_dropout and
# attention_dropout 0.0: nemo/collections/llm/gpt/model/base.py L550-551 @ 8cfedd7), unlike the
# catalog's gpt3-175b (Brown et al.'s, dropout assumed 0.1)
NEMO_175B = dict(dropout=False)


@record
class PublicRow:
    source: str            # the table or text and its file/commit, never empty
    label: str             # what the row is (model, GPUs, setting)
    model: str             # catalog model name, or "shape:<name>" for public_cases.SHAPES
    node: str
    nodes: int
    published: float
    unit: str = "tps"      # "tps" tokens/s per GPU, "tflops:unhalved", "tflops:halved", "s"
    gpu: str | None = None
    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    etp: int | None = None  # expert tensor parallel (Megatron --expert-tensor-parallel-size)
    vp: int = 1
    zero: int = 1          # 3 = FSDP / ZeRO-3
    seq: int = 8192
    gbs: int = 0           # 0: micro-batch x dp (one micro-batch per step)
    mbs: int = 1
    precision: str = "bf16"
    fp8_recipe: str | None = None
    recompute: str = "none"
    recompute_modules: tuple = ()  # Megatron --recompute-modules (with recompute "selective")
    flash: bool = True
    kernel: str | None = None
    framework: str | None = None
    tp_comm_overlap: bool = True  # Megatron --tp-comm-overlap (recipes: on; needs TP > 1)
    overlap_grad_reduce: bool = True  # Megatron --overlap-grad-reduce (recipes: on)
    ep_comm_overlap: bool = False  # Megatron --overlap-moe-expert-parallel-comm (default off)
    drop_pad: bool = False  # Megatron --moe-pad-expert-input-to-capacity (token drop, padded)
    dispatcher: str = "alltoall"  # --moe-dispatcher: alltoall, deepep, hybridep
    cuda_graph: bool = False  # Megatron --cuda-graph-impl full_iteration
    dropout: bool | None = None  # None: the model's config (as `step` reads it); else the run's
    sp: bool | None = None  # sequence parallelism: None the tool's default; else the run's
    gpus_per_node: int | None = None
    mem_gib: float = 0.0   # the published GPU memory (GiB, torchtitan) when there is one
    assumed: str = ""      # settings not in the source, from the recipe or default
    cross_entropy: str | None = None  # the loss the run ran; None: by its source (loss_of)
    fp8_param_gather: bool = True  # Megatron --fp8-param-gather / --fp4-param-gather
    grad_bytes: int = 0    # 0: the framework profile's (Megatron-LM bf16: 4, fp32 reduce);
    #                        2: bf16 gradients reduced in bf16 (grad_reduce_in_fp32 False)
    assume: tuple = ()     # ((assumption, value), ...) the run set against its framework's
    #                        profile, as `--assume` would (a typed `validate --assume` wins)
    why_not: str = ""      # non-empty: the tool cannot express the row (listed, not run)
    unfitted: str = ""     # non-empty: scored, never a training row of the curves' fit (why:
    #                        hardware not as catalogued, e.g. an unpublished power cap, or a
    #                        mechanism the tool does not price, e.g. async TP)
    async_tp: bool = False  # ran torchtitan's async TP (with_async_tp: priced exposed, unfitted)


def with_async_tp(row: PublicRow) -> PublicRow:
    """A row that ran async TP as validate scores it: ASYNC_TP said in its ``assumed`` and not
    a training row of the fit (ASYNC_UNFITTED); any other row as it is."""
    if not row.async_tp:
        return row
    from dataclasses import replace
    return replace(row, unfitted=row.unfitted or ASYNC_UNFITTED,
                   assumed="; ".join(x for x in (row.assumed, ASYNC_TP) if x))


# The loss over the logits each source's runs ran (compute.loss_bytes). Megatron-Bridge: TE's
# (its providers' cross_entropy_fusion_impl "te", llama_provider.py L186 @ 684a686, and
# scripts/performance/utils/overrides.py L83-84); Megatron-LM's own runs: unfused (the flag is
# off by default, core/model_parallel_config.py L320 @ d98e8a6); NeMo 2: the native fused one
# (the Megatron profile's default). llm-foundry's MPT (loss_fn fused_crossentropy, its default)
# and FlashAttention-2's GPT runs load flash_attn.losses.cross_entropy, a fused kernel: two
# reads of the bf16 logits forward, one read and an in-place write backward (assumed)
FUSED_XENTROPY = {"loss_forward_bytes_per_logit": 4.0, "loss_backward_bytes_per_logit": 4.0}


def loss_of(row: PublicRow) -> tuple[str, dict]:
    """(the Megatron --cross-entropy-fusion, the assumptions to set) of ``row``'s runs."""
    if row.cross_entropy:  # the row's own setting first
        return row.cross_entropy, {}
    if row.source.startswith(("llm-foundry", "Dao 2023")):
        return "native", FUSED_XENTROPY
    return ("te" if row.source.startswith("Megatron-Bridge") else "none"
            if row.source.startswith(("Megatron-LM", "NVIDIA ADLR")) else "native"), {}


# The NVIDIA performance scripts reduce gradients in bf16 (grad_reduce_in_fp32 False, Megatron-LM's
# --grad-reduce-in-bf16: a 2-byte gradient buffer and a bf16 reduce-scatter, where Megatron-LM's
# own bf16 default is fp32, 4 bytes): every Megatron-Bridge release's configs (scripts/
# performance/configs/llama3/llama3_llm_pretrain.py L46-47 @ v0.2.0, the set_*_common_configs of
# each family through v0.5.0, e.g. qwen/qwen3_llm_pretrain.py L41-42 @ v0.4.0; perf_recipes/
# _common.py L70-72 @ v0.6.0), and NeMo's from container 25.02: the FP8 branch of scripts/llm/
# performance/pretrain_*.py @ v2.2.0 (pretrain_llama3_8b.py L66), scripts/performance/utils.py
# L351 @ v2.3.0, scripts/performance/helpers.py L224 @ v2.4.0 (25.07, every precision). NeMo 24.12
# (v2.1.0) keeps bf16_mixed's fp32 reduce (recipes/precision/mixed_precision.py L30).
_MB = "Megatron-Bridge docs/performance-summary"
_NEMO = "NeMo Framework performance summary, container "


def bf16_reduce(row: PublicRow) -> PublicRow:
    """``row`` with grad_bytes 2 where its source's scripts reduce gradients in bf16."""
    from dataclasses import replace
    src = row.source
    nemo = src.startswith(_NEMO) and src[len(_NEMO):len(_NEMO) + 5] in ("25.02", "25.04", "25.07")
    nemo = nemo and (row.precision != "bf16" or src[len(_NEMO):].startswith("25.07"))
    if row.grad_bytes or not (src.startswith(_MB) or nemo):
        return row
    return replace(row, grad_bytes=2, assumed=row.assumed + "; gradients reduced in bf16 "
                   "(the scripts' grad_reduce_in_fp32 False: --grad-bytes 2)")
