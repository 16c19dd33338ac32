"""FP8 and NVFP4 training in the evaluator (equations/fp8.py): the refusal on GPUs without
the tensor cores, the GEMM rate at the recipe's peak, and the quantized weight copies and
activations of Transformer Engine recipes. Everything here is a no-op unless ``--precision
fp8`` or ``nvfp4`` (NVFP4 runs as the recipe Fp8Recipe.NVFP4: Training.gemm_recipe)."""

from __future__ import annotations

import numpy as np

from optimus_calc.equations.recording import eq
from optimus_calc.errors import InputError
from optimus_calc.specs.hardware import GPU
from optimus_calc.specs.model import Model
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Fp8Recipe, Precision, Training


def is_fp8(tr: Training) -> bool:
    """Whether the weight GEMMs run quantized: ``--precision fp8`` or ``nvfp4``."""
    return tr.precision in (Precision.FP8, Precision.NVFP4)


# NVFP4's element: E2M1, 4 bits (TransformerEngine transformer_engine/common/recipe/__init__.py
# NVFP4BlockScaling @ d0067d0, L489-532), with an E4M3 (1-byte) scale per 16 consecutive values;
# the weights' 16 x 16 block scales (2D quantization, on by default) are stored in that same
# shape, one per 16 values of a row (pytorch/tensor/nvfp4_tensor.py get_scale_shape L273-307
# has no 2D branch; csrc/quantizer.cpp L2767-2790)
NVFP4_BYTES = 0.5
NVFP4_SCALE_BYTES = 1.0 / 16


def check_fp8_gpu(gpu: GPU, tr: Training) -> None:
    """--precision fp8 needs FP8 tensor cores: a catalog entry with an FP8 peak (Hopper, Ada,
    Blackwell, MI300); refused otherwise (A100, V100, MI250X); --precision nvfp4 an FP4 peak
    (Blackwell). A recipe other than the default without --precision fp8 would be ignored:
    refused too."""
    if tr.precision is not Precision.FP8 and tr.fp8_recipe is not Fp8Recipe.TE_DELAYED:
        raise InputError(f"--fp8-recipe {tr.fp8_recipe.value} needs --precision fp8 (got "
                         f"--precision {tr.precision.value})")
    if tr.precision is Precision.FP8 and tr.fp8_recipe is Fp8Recipe.NVFP4:
        raise InputError("--fp8-recipe nvfp4: NVFP4 is --precision nvfp4")
    check_quantized_peak(gpu, tr.precision)
    if is_fp8(tr) and tr.fp8_recipe is Fp8Recipe.MXFP8 and not gpu.mxfp8:
        raise InputError(f"--fp8-recipe mxfp8: {gpu.name} has no MXFP8 tensor cores (Blackwell "
                         "only, Transformer Engine quantization.py L162-168); use te-current "
                         "or te-delayed")


def check_quantized_peak(gpu: GPU, precision: Precision) -> None:
    """FP8 and NVFP4 need their GEMMs' peak in the GPU's catalog entry; refused otherwise."""
    if precision not in (Precision.FP8, Precision.NVFP4):
        return
    dtype = precision.gemm_dtype
    if gpu.peak_TFLOPS.flops_per_s(dtype) <= 0:
        what = "FP8" if precision is Precision.FP8 else "FP4 (NVFP4)"
        raise InputError(f"--precision {precision.value}: {gpu.name} has no {what} tensor "
                         f"cores (no {dtype.upper()} peak in the catalog); use --precision bf16")


# The assumption holding each recipe's FP8 GEMM ratio (specs/assumptions.py: sources, fits)
RATIO_FIELD = {Fp8Recipe.TE_DELAYED: "fp8_te_delayed_gemm_efficiency",
               Fp8Recipe.TE_CURRENT: "fp8_te_current_gemm_efficiency",
               Fp8Recipe.TORCHAO: "fp8_gemm_efficiency",
               Fp8Recipe.MXFP8: "fp8_mxfp8_gemm_efficiency",
               Fp8Recipe.NVFP4: "nvfp4_gemm_efficiency"}


def fp8_gemm_ratio(tr: Training, asm: Assumptions) -> float | None:
    """The quantized GEMM efficiency ratio of the recipe (RATIO_FIELD) with --precision fp8 or
    nvfp4, else None (the GEMMs run at the training precision's peak)."""
    return getattr(asm, RATIO_FIELD[tr.gemm_recipe]) if is_fp8(tr) else None


def reads_amax(ctx) -> bool:
    """Whether the recipe reads the GEMM inputs before the cast (:func:`amax_time` not 0)."""
    tr = ctx.tr
    return bool(is_fp8(tr) and tr.gemm_recipe.amax_passes and isinstance(ctx.model, Model))


def amax_time(ctx, layer_args: dict, hbm: dict, passes):
    """HBM time of the recipe's amax passes over the GEMM inputs of the stage's layers
    (fp8.amax_layer_bytes) for ``passes`` pass directions (forward 1; backward the gradients
    and, with full recompute, the recomputed forward's inputs again); 0 unless a recipe reads
    its inputs before the cast (Fp8Recipe.amax_passes)."""
    tr, model = ctx.tr, ctx.model
    if not reads_amax(ctx):
        return 0.0
    a = layer_args
    m_l = eq.fp8__amax_layer_bytes(
        b=a["b"], b_16=2.0, c=a["c"], d_v=model.value_dim, f_a=down_input_width(model),
        h=a["h"], n_a=float(tr.gemm_recipe.amax_passes), s=a["s"], sigma=a["sigma"], t=a["t"])
    return eq.step__elementwise_time(n_pass=passes, L_stage=ctx.st.layers, M_l=m_l, **hbm)


def weight_orientations(gpu: GPU, recipe: Fp8Recipe) -> tuple[float, float]:
    """(k_o, q_s) of fp8.weight_copy_bytes: the FP8 copies Transformer Engine keeps of each
    weight and their scale bytes. Training asks for rowwise and columnwise usage
    (pytorch/module/linear.py L467-475 @ d0067d0); per-tensor FP8 stores the columnwise one as
    a transpose only where FP8 GEMMs are TN-only (csrc/quantizer.cpp L363, L375), i.e. not on
    compute capability 10.x (common/transformer_engine.cpp L1191-1201; catalog mxfp8 marks
    those GPUs); MXFP8 keeps both, each with an E8M0 scale per 32 elements (quantizer.cpp
    L1517-1545); NVFP4 keeps both too ("both versions are computed from the high precision
    input", recipe/__init__.py L499-505), each with an E4M3 scale stored per 16 values."""
    if not recipe.transformer_engine:
        return 0.0, 0.0
    if recipe is Fp8Recipe.NVFP4:
        return 2.0, 2.0 * NVFP4_SCALE_BYTES
    if recipe is Fp8Recipe.MXFP8:
        return 2.0, 2.0 / 32
    return (1.0 if gpu.mxfp8 else 2.0), 0.0


def quantized_bytes(tr: Training, asm: Assumptions) -> float:
    """b_8 of equations/fp8.py: bytes per element of a quantized weight (NVFP4's 4 bits, else
    the assumption fp8_weight_copy_bytes)."""
    return NVFP4_BYTES if tr.gemm_recipe is Fp8Recipe.NVFP4 else asm.fp8_weight_copy_bytes


def bf16_equivalent(gpu: GPU, eta_d, ratio: float, peak: str = "fp8"):
    """The quantized weight GEMMs' efficiency expressed against the BF16 peak
    (fp8.gemm_efficiency, fp8.bf16_equivalent_efficiency): time F / (P_16 x this) = F / (P_8 x
    r_8 x eta_d), P_8 the recipe's peak (``peak``: fp8, or fp4 for NVFP4)."""
    eta_8 = eq.fp8__gemm_efficiency(eta_d=eta_d, r_8=ratio)
    return eq.fp8__bf16_equivalent_efficiency(eta_8=eta_8, P_8=gpu.peak_TFLOPS.flops_per_s(peak),
                                              P_16=gpu.peak_TFLOPS.flops_per_s("bf16"))


def bf16_head_flops(tr: Training, f_h, layers_last, tau, backward: bool):
    """FLOPs of the output head in a pass, kept bf16 with FP8 (fp8.bf16_head_flops); 0 else."""
    if not is_fp8(tr):
        return 0.0
    return eq.fp8__bf16_head_flops(F_h=f_h, k_p=2.0 if backward else 1.0, lambda_h=layers_last,
                                   tau_g=tau)


def gemm_weight_params(model: Model, layers, moe_layers, t, ep, t_x=None):
    """GEMM weights of a stage on one GPU: the transformer layers' attention projections and
    MLP matrices (TP-sharded), shared experts, routed experts (EP x expert-TP-sharded, ``t_x``
    defaults to TP); not the
    embedding nor the output head, which Megatron-LM builds outside Transformer Engine
    (tensor_parallel.VocabParallelEmbedding, ColumnParallelLinear)."""
    layers, moe_layers = np.asarray(layers, float), np.asarray(moe_layers, float)
    dense = layers * model.attention_matrix_params + (layers - moe_layers) * model.dense_mlp_params
    if model.is_moe:
        dense = dense + moe_layers * model.shared_experts * model.shared_expert_params
        t_x = t if t_x is None else t_x
        return dense / t + moe_layers * model.experts * model.expert_params / (ep * t_x)
    return dense / t


def weight_copy_bytes(ctx) -> np.ndarray | float:
    """fp8.weight_copy_bytes of each stage: 0 unless FP8 with a Transformer Engine recipe."""
    tr, model = ctx.tr, ctx.model
    if not (is_fp8(tr) and isinstance(model, Model)):
        return 0.0
    k_o, q_s = weight_orientations(ctx.hw.gpu, tr.gemm_recipe)
    p_g = gemm_weight_params(model, ctx.st.layers, ctx.st.moe_layers, ctx.t, ctx.ep,
                             ctx.t_x)
    return eq.fp8__weight_copy_bytes(P_g=p_g, Z=ctx.z, b_8=quantized_bytes(tr, ctx.asm),
                                     k_o=k_o, q_s=q_s)


def _primary(ctx):
    """k_pw: Assumptions.fp8_primary_weights under a Transformer Engine recipe, else 0; per
    layout where the recipe keeps its parameters up to a lower ZeRO stage than 3 (NVFP4:
    Fp8Recipe.params_max_zero)."""
    tr = ctx.tr
    te = is_fp8(tr) and tr.gemm_recipe.transformer_engine and isinstance(ctx.model, Model)
    k = float(ctx.asm.fp8_primary_weights) if te else 0.0
    top = tr.gemm_recipe.params_max_zero
    return k * (np.asarray(ctx.z) <= top) if k and top < 3 else k


def _gemm_params(ctx):
    return gemm_weight_params(ctx.model, ctx.st.layers, ctx.st.moe_layers, ctx.t, ctx.ep,
                              ctx.t_x)


def primary_weight_saving_bytes(ctx, n_sh, flags) -> np.ndarray | float:
    """fp8.primary_weight_saving_bytes of each stage (0 without FP8 parameters); ``flags``:
    the stage's offload flags (o_w, o_g, o_o, f_k of strategies.offload_flags)."""
    if not np.any(k := _primary(ctx)):
        return 0.0
    return eq.fp8__primary_weight_saving_bytes(
        N_d=n_sh, P_g=_gemm_params(ctx), Z=ctx.z, b_8=quantized_bytes(ctx.tr, ctx.asm),
        b_w=ctx.tr.weight_bytes, k_pw=k, o_x=np.maximum(flags[0], flags[2]))


def gather_bytes_per_param(ctx, P, flags):
    """fp8.gather_bytes_per_param: the ZeRO all-gathers' bytes per parameter (the 16-bit
    weight bytes without FP8 parameters)."""
    if not np.any(k := _primary(ctx)):
        return ctx.tr.weight_bytes
    share = _gemm_params(ctx) / np.maximum(np.asarray(P, dtype=float), 1.0)
    return eq.fp8__gather_bytes_per_param(Z=ctx.z, b_8=quantized_bytes(ctx.tr, ctx.asm),
                                          b_w=ctx.tr.weight_bytes, k_pw=k,
                                          o_x=np.maximum(flags[0], flags[2]),
                                          phi_g=np.minimum(share, 1.0))


def down_input_width(model: Model) -> float:
    """f_a of fp8.activation_layer_bytes: the MLP down projection's input width per token,
    averaged over the layers (routed top-k and shared experts in MoE layers)."""
    if not model.is_moe:
        return float(model.ffn_hidden)
    moe = model.top_k * model.expert_ffn + model.shared_experts * model.shared_ffn
    return (model.dense_layers * model.ffn_hidden + model.moe_layers * moe) / model.layers


def saved_input_bytes_less(tr: Training) -> float:
    """k_te of fp8.activation_layer_bytes: bytes a saved GEMM input element takes less than
    bf16's 2: 1 under a Transformer Engine FP8 recipe, 2 - (0.5 + 1/16) = 1.4375 under NVFP4
    (4 bits and a 1-byte scale per 16 values), 0 under torchao."""
    recipe = tr.gemm_recipe
    if recipe is Fp8Recipe.NVFP4:
        return 2.0 - NVFP4_BYTES - NVFP4_SCALE_BYTES
    return float(recipe.transformer_engine)


def activation_layer_bytes(ctx, act_layer, layer_args: dict):
    """Per-layer activations with the GEMM inputs saved in FP8 (Transformer Engine recipes)."""
    tr, model = ctx.tr, ctx.model
    if not is_fp8(tr):
        return act_layer
    a = layer_args
    return eq.fp8__activation_layer_bytes(
        M_layer=act_layer, b=a["b"], c=a["c"], d_v=model.value_dim, f_a=down_input_width(model),
        h=a["h"], k_te=saved_input_bytes_less(tr), r=ctx.rc, s=a["s"],
        sigma=a["sigma"], t=a["t"])
