"""FP8 training (``--precision fp8``): the weight GEMMs at the FP8 peak, the FP8 copies in memory.

FP8 training as Transformer Engine (TE) and torchao run it keeps the model in bf16 and the
optimizer in fp32 (so the bytes per parameter are bf16 training's) and quantizes the inputs of
each weight GEMM to FP8 just before the GEMM. The attention core (FlashAttention) and the
logits stay bf16. What changes:

* time: the weight GEMMs run at the FP8 dense peak with their own efficiency;
* memory (TE only): an FP8 copy of each GEMM weight beside the bf16 weight, and the GEMM inputs
  saved for the backward in FP8 (1 byte) instead of bf16 (2 bytes). torchao's Float8Linear saves
  the high-precision input and weight and casts again in the backward: no change.

TE source of both memory terms: TransformerEngine docs/features/low_precision_training/
performance_considerations/performance_considerations.rst L247 @ d0067d0 (a 1024 x 1024 layer:
"2 MB (weight) + 1 MB (weight in FP8) + 1 MB (input in FP8 saved for backward)"); torchao:
torchtitan benchmarks/llama3_h100_202412_torchtitan.md Table 1 @ v0.2.2 (77.0 GiB without,
76.8 GiB with Float8).
"""

from __future__ import annotations

import sympy as sp

from optimus_calc.equations.registry import equation, sym

eta_d = sym("eta_d", "efficiency of the weight GEMMs", positive=True)
r_8 = sym("r_8", "FP8 GEMM efficiency as a fraction of the BF16 one of the same shape "
          "(assumption fp8_gemm_efficiency)", positive=True)
eta_8 = sym("eta_8", "efficiency of the FP8 weight GEMMs against the FP8 peak", positive=True)
P_8 = sym("P_8", "dense peak of the quantized GEMMs, FLOP/s: FP8's, FP4's under NVFP4",
          positive=True)
P_16 = sym("P_16", "dense BF16 peak of the GPU, FLOP/s", positive=True)
b_8 = sym("b_8", "bytes per weight of the quantized weight copy (FP8: assumption "
          "fp8_weight_copy_bytes; NVFP4: 0.5, its E2M1 element; "
          "0 for torchao)")
P_g = sym("P_g", "GEMM weights on the GPU (the transformer layers' matrices, after TP/PP/EP)")
Z = sym("Z", "ZeRO stage 0..3")
k_te = sym("k_te", "bytes a saved GEMM input element takes less than bf16's 2: 1 with a "
           "Transformer Engine FP8 recipe, 1.4375 with NVFP4 (0.5 and an E4M3 scale per 16 "
           "values), 0 for torchao")
M_layer = sym("M_layer", "activation bytes per layer per micro-batch (memory.activation_layer_bytes)")
s = sym("s", "sequence length, tokens", positive=True)
b = sym("b", "micro-batch size, sequences", positive=True)
c = sym("c", "context-parallel degree (divides s)", positive=True)
h = sym("h", "hidden size", positive=True)
t = sym("t", "tensor-parallel degree", positive=True)
sigma = sym("sigma", "1 with sequence parallelism, else 0")
r = sym("r", "recompute mode: 0 none, 1 selective, 2 full")
d_v = sym("d_v", "attention output width: heads x value head dim (output-projection input)")
f_a = sym("f_a", "MLP down-projection input width per token, summed over the experts it visits")

fp8_gemm_efficiency = equation(
    "fp8.gemm_efficiency", r_8 * eta_d, "1",
    "assumed proportional to the BF16 curve of the same GEMM shape (equations/efficiency.py); "
    "r_8 calibrated on torchtitan benchmarks/llama3_h100_202412_torchtitan.md Table 1 @ v0.2.2",
    "Achieved / FP8 peak FLOP/s of a weight GEMM run in FP8, casts and scaling included.")

bf16_equivalent_efficiency = equation(
    "fp8.bf16_equivalent_efficiency", eta_8 * P_8 / P_16, "1",
    "definition: F / (P_16 x this) = F / (P_8 x eta_8), the weight GEMMs' time at the FP8 dense "
    "peak (catalog peak_TFLOPS.fp8, datasheets); the FP8 GEMMs and the bf16 attention core then "
    "add their times in efficiency.layer_efficiency against one (BF16) peak",
    "The FP8 weight GEMMs' achieved FLOP/s as a fraction of the BF16 peak (may exceed 1).")

k_o = sym("k_o", "quantized orientations of each weight Transformer Engine keeps: 2 (rowwise "
          "and the transpose) on Hopper, for MXFP8 and NVFP4, 1 for per-tensor FP8 on "
          "Blackwell; 0 torchao")
q_s = sym("q_s", "scale bytes per weight: MXFP8's E8M0 scale per 32 elements per orientation, "
          "2/32; NVFP4's E4M3 scale per 16 elements per orientation, 2/16; 0 for per-tensor "
          "recipes")
weight_copy_bytes = equation(
    "fp8.weight_copy_bytes", (b_8 * k_o + q_s) * P_g * sp.Piecewise((0, Z >= 3), (1, True)),
    "bytes",
    "TransformerEngine performance_considerations.rst L247 @ d0067d0 (1 byte per weight: the "
    "FP8 weight beside the bf16 one); in training the weight quantizer asks for the columnwise "
    "copy too (pytorch/module/linear.py L467-475), a separate transpose where FP8 GEMMs are "
    "TN-only (Hopper: csrc/quantizer.cpp L363, L375; common/transformer_engine.cpp L1191-1201: "
    "not on compute capability 10.x), and MXFP8 keeps rowwise and columnwise data each with a "
    "scale per 32 elements (quantizer.cpp L1517-1545); with ZeRO-3 / Megatron-FSDP the FP8 "
    "copy lives only "
    "while a layer is gathered and the transpose cache is dropped unless "
    "--keep-fp8-transpose-cache (Megatron-LM megatron/training/arguments.py L3212-3213 @ "
    "d98e8a6): counted in the gathered-layer overhead, not here; NVFP4 keeps rowwise and "
    "columnwise 4-bit data, each cast from the bf16 tensor (common/recipe/__init__.py "
    "NVFP4BlockScaling L499-518), each with an E4M3 scale stored per 16 values, its 16 x 16 "
    "weight-block scales included (pytorch/tensor/nvfp4_tensor.py get_scale_shape L273-307)",
    "FP8 or NVFP4 copies of the GPU's GEMM weights kept by Transformer Engine beside the bf16 "
    "weights.")

k_pw = sym("k_pw", "1 where the GEMM weights are the FP8 parameters themselves (Megatron-LM "
           "--fp8-param-gather: Assumptions.fp8_primary_weights), else 0")
b_w = sym("b_w", "bytes per weight (2 for bf16/fp16)")
N_d = sym("N_d", "ranks ZeRO partitions over: dp x cp, experts dp x cp / ep")
o_x = sym("o_x", "1 where the weights or the optimizer state are offloaded from the GPU, else 0 "
          "(Megatron-LM refuses --fp8-param-gather with --optimizer-cpu-offload but for the "
          "delayed recipe, arguments.py L1889-1890 @ d98e8a6: kept off there for every recipe)")
_FP8_PARAMS = ("Megatron-LM megatron/training/arguments.py L2016-2018 @ d98e8a6 (--fp8-param-"
               "gather: 'keep the compute param in fp8 ... and perform the param all-gather in "
               "fp8'; TransformerConfig.fp8_param, L2357), L1095-1097 (only with the "
               "distributed optimizer or an FSDP: the fp32 main copy lives in the optimizer "
               "state, ZeRO >= 1 here); on in NVIDIA's FP8 recipes: Megatron-Bridge src/megatron/"
               "bridge/training/mixed_precision.py L218, L251, L289 @ v0.3.0 (delayed, MXFP8, "
               "current scaling), NeMo nemo/collections/llm/recipes/precision/"
               "mixed_precision.py L70-200 @ 8cfedd7")
primary_weight_saving_bytes = equation(
    "fp8.primary_weight_saving_bytes",
    k_pw * (1 - o_x) * sp.Piecewise((0, Z < 1), ((b_w - b_8) * P_g / N_d, Z >= 3),
                                    (b_w * P_g, True)), "bytes",
    _FP8_PARAMS + ": the GEMM weights are held as Transformer Engine FP8 tensors only, so the "
    "16-bit copy beside TE's FP8 data (fp8.weight_copy_bytes, which stays) is not kept; with "
    "ZeRO-3 / Megatron-FSDP the sharded weights are FP8 (b_8 bytes) instead of 16-bit",
    "GPU memory FP8 parameters save on the GEMM weights (subtracted from the weights' bytes).")

phi_g = sym("phi_g", "GEMM weights' share of the GPU's parameters (P_g / P)")
gather_bytes_per_param = equation(
    "fp8.gather_bytes_per_param",
    b_w - k_pw * (1 - o_x) * sp.Piecewise((0, Z < 1), (1, True)) * phi_g * (b_w - b_8),
    "bytes",
    _FP8_PARAMS + ": the distributed optimizer's (or FSDP's) parameter all-gather moves the "
    "GEMM weights in FP8, the rest (norms, embeddings) in 16 bits",
    "Bytes per parameter of the ZeRO weight all-gathers, averaged over the parameters.")

n_a = sym("n_a", "extra reads of each GEMM input before its cast: 1 for Transformer Engine "
          "current scaling and NVFP4, 0 for the others (specs.training.Fp8Recipe.amax_passes)")
b_16 = sym("b_16", "bytes per element of the high-precision GEMM input (bf16: 2)")

amax_layer_bytes = equation(
    "fp8.amax_layer_bytes",
    n_a * b_16 * s / c * b * (2 * h / (1 + sigma * (t - 1)) + (d_v + f_a) / t), "bytes",
    "TransformerEngine transformer_engine/pytorch/csrc/quantizer.cpp L1008-1012 @ d0067d0 "
    "(Float8CurrentScalingQuantizer: nvte_compute_amax reads the input, then the cast at L1027 "
    "reads it again); DelayedScaling casts with the previous amax and records the new one in "
    "the cast (L632-647), MXFP8 scales each 32-element block inside the cast: no extra read. "
    "Elements: the GEMM inputs of fp8.activation_layer_bytes (Korthikanti et al. 2022 Table 2); "
    "the backward's gradient inputs assumed the same count (exact for the two h-wide outputs)",
    "Bytes the amax passes of one layer's GEMM inputs read per micro-batch and pass direction.")

F_h = sym("F_h", "forward FLOPs per token of the logits (output head)")
lam = sym("lambda_h", "1 on the last pipeline stage (holds the logits), else 0")
tau = sym("tau_g", "tokens one GPU processes per step")
k_p = sym("k_p", "passes: 1 forward, 2 backward (input and weight gradients)")
head_flops = equation(
    "fp8.bf16_head_flops", k_p * lam * F_h * tau, "FLOP",
    "the logits term of step.forward_flops / step.backward_flops (Narayanan et al. 2021); kept "
    "bf16 with FP8: Megatron-LM builds the output layer as tensor_parallel.ColumnParallelLinear, "
    "not a Transformer Engine module, unless mxfp8 with --fp8-output-proj (core/models/gpt/"
    "gpt_model.py L272-276 @ d98e8a6), and torchtitan's "
    "configs filter it out of float8 (models/llama3/train_configs/llama3_8b.toml L64 @ v0.2.2)",
    "FLOPs of the output-head GEMM of a pass, which FP8 training leaves in bf16.")

_sp = 1 + sigma * (t - 1)
activation_layer_bytes = equation(
    "fp8.activation_layer_bytes",
    M_layer - sp.Piecewise((0, sp.Eq(r, 2)),
                           (k_te * s / c * b * (2 * h / _sp + (d_v + f_a) / t), True)),
    "bytes",
    "TransformerEngine performance_considerations.rst L247 @ d0067d0 (input in FP8 saved for "
    "backward: 1 MB where bf16 saves 2 MB; pytorch/module/linear.py L605-617 keeps one FP8 "
    "orientation of the saved input, the columnwise one, or the rowwise one where the "
    "backward all-gathers it); the GEMM inputs of Korthikanti et al. 2022 Table 2: "
    "the QKV and MLP inputs (layer-norm outputs, sequence-parallel shards), the output "
    "projection's input and the down projection's input (TP shards); full recompute keeps only "
    "the layer input; NVFP4 saves its 4-bit input with an E4M3 scale per 16 values "
    "(TransformerEngine common/recipe/__init__.py NVFP4BlockScaling L489-532 @ d0067d0)",
    "Activation bytes per layer with the GEMM inputs saved quantized: k_te bytes less per "
    "element of each saved GEMM input.")
