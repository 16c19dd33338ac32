"""Compute: training FLOPs, compute roofline, pipeline bubble, the optimizer step on the device
that owns the state, and how much of it is exposed under each offload strategy."""

from __future__ import annotations

import sympy as sp

from optimus_calc.equations.registry import equation, sym

h = sym("h", "hidden size", positive=True)
s = sym("s", "sequence length, tokens", positive=True)
P_att = sym("P_att", "attention weight parameters of one layer (projections, biases)")
d_s = sym("d_s", "score width: heads x query/key head dim (MLA: nope + rope dims)")
d_v = sym("d_v", "value width: heads x value head dim")
f_a = sym("f_a", "MLP width a token passes through: the MLP size, or top-k x expert size + "
          "shared experts' sizes for MoE")
mm = sym("m_m", "matrices per MLP: 2 (GELU/ReLU) or 3 (SwiGLU)")
E = sym("E", "routed experts (router width); 0 for dense")
V = sym("V", "vocabulary size", positive=True)
L = sym("L", "transformer layers", positive=True)
tok = sym("tokens", "tokens per step (global batch x sequence)")
F_l = sym("F_l", "forward FLOPs per token of one layer")
F_r = sym("F_r", "extra forward FLOPs per token per layer recomputed (0, scores, or F_l)")
F_h = sym("F_h", "forward FLOPs per token of the logits")
Fl = sym("FLOPs", "FLOPs to execute")
peak = sym("peak", "dense peak FLOP/s of the device for the data type", positive=True)
eff = sym("eta_g", "GEMM efficiency: achieved / peak (assumed, calibrated)", positive=True)
p = sym("p", "pipeline stages", positive=True)
mb = sym("m", "micro-batches per step per pipeline", positive=True)
v = sym("v", "model chunks per GPU (interleaving)", positive=True)
T_c = sym("T_c", "compute time of the step, s")
Pn = sym("P_n", "parameters whose optimizer state the device updates")
bpp = sym("beta_p", "bytes the optimizer moves per parameter")
fpp = sym("phi_p", "FLOPs the optimizer does per parameter")
BW = sym("B_mem", "peak memory bandwidth of the device, bytes/s", positive=True)
eta_m = sym("eta_m", "achievable fraction of memory bandwidth (STREAM)", positive=True)
nthr = sym("n_t", "threads/cores used", positive=True)
B_core = sym("B_core", "memory bandwidth one core can draw, bytes/s", positive=True)
F_core = sym("F_core", "FP32 FLOP/s of one core", positive=True)
F_dev = sym("F_dev", "FP32 FLOP/s of the device when it has no cores (FPGA fabric, GPU)")
cores = sym("c_n", "1 if the device is limited per core (CPU, Arm SoC), 0 otherwise")
T_opt = sym("T_opt", "optimizer-step time, s")
T_x = sym("T_x", "transfer time the strategy adds (gradients out, parameters back), s")
W_ov = sym("W", "time window the strategy overlaps with (backward, or forward+backward), s")

flops_per_token_layer = equation(
    "compute.flops_per_token_layer",
    2 * P_att + 2 * s * (d_s + d_v) + 2 * mm * h * f_a + 2 * h * E,
    "FLOP/token",
    "Narayanan et al. SC'21 (arXiv 2104.04473) section 5.1: 24h^2 + 4sh per token for GPT "
    "(2 FLOPs per multiply-add and weight); generalised here: the attention projections as "
    "their parameter count (GQA, MLA, biases), scores and values over their own widths, gated "
    "MLPs (m_m = 3), MoE (the experts a token visits, router 2hE)",
    "Forward FLOPs per token of one layer: attention projections, scores QK^T and values "
    "(2 s d_s + 2 s d_v, not halved for causal masking, as in Narayanan et al.), MLP, router.")

step_flops = equation(
    "compute.step_flops", tok * (3 * (L * F_l + F_h) + L * F_r), "FLOP",
    "Narayanan et al. SC'21 section 5.1: backward = 2 x forward; recomputation adds a forward "
    "pass of the layers (96 B s l h^2 (1 + s/(6h) + V/(16 l h)) with full recomputation)",
    "Hardware FLOPs of one training step; model FLOPs (for MFU) are the same with F_r = 0.")

compute_time = equation(
    "compute.compute_time", Fl / (peak * eff), "s",
    "roofline; the GEMM efficiency is a named assumption calibrated on Narayanan et al. Table 1",
    "Time to execute FLOPs at the device's dense peak times the GEMM efficiency.")

pipeline_bubble = equation(
    "compute.pipeline_bubble", (p - 1) / (mb * v) * T_c, "s",
    "Narayanan et al. SC'21 section 2.2: 1F1B bubble fraction (p-1)/m, interleaved (p-1)/(m v)",
    "Idle time of a pipeline step relative to its compute time.")

optimizer_step_time = equation(
    "compute.optimizer_step_time",
    sp.Max(Pn * bpp / sp.Piecewise((sp.Min(BW * eta_m, nthr * B_core), sp.Eq(cores, 1)),
                                  (BW * eta_m, True)),
           Pn * fpp / sp.Piecewise((nthr * F_core, sp.Eq(cores, 1)), (F_dev, True))),
    "s",
    "roofline (Williams et al. 2009); element-wise Adam is memory-bound (seeds/optimusnic.md "
    "section 4.2); on CPUs and Arm SoCs bandwidth grows with threads until it saturates "
    "(optimusnic.md Fig. 2)",
    "Optimizer step of P_n parameters: bytes moved over the achievable memory bandwidth, or "
    "FLOPs over the compute peak, whichever is slower.")

exposed_time = equation(
    "compute.exposed_time", sp.Max(0, T_opt + T_x - W_ov), "s",
    "seeds/optimusnic.md section 5 (ZeRO-Offload: W = 0, the step is exposed; OptimusNIC: W = "
    "backward + next forward, layer by layer); seeds/superoffload.md (W = backward, STV)",
    "Part of the optimizer step and its transfers that the overlap window does not hide.")


logits_flops_per_token = equation(
    "compute.logits_flops_per_token", 2 * h * V, "FLOP",
    "Narayanan et al. SC'21 (arXiv 2104.04473) eq. 3: the logit layer's 2 h V per token",
    "Forward FLOPs per token of the output (logits) projection, F_h.")


# ---- causal attention, MFU conventions, MoE routing (issue 19) -------------------------------
F_af = sym("F_af", "forward FLOPs of the attention core on the stage, FLOP")
kappa = sym("kappa_c", "1 when the attention kernel skips the blocks a causal mask hides "
            "(FlashAttention-2/3, cuDNN fused attention), 0 when it computes the full s x s "
            "scores (unfused baddbmm + softmax + bmm)")
N_p = sym("N_act", "parameters a token passes through (active parameters for MoE)")
tok_mb = sym("tau_mb", "tokens of one micro-batch on one GPU (s b / cp), before any TP split")
k_top = sym("k", "experts each token is routed to (top-k)")
b_a = sym("b_a", "bytes per activation element (bf16: 2)")
b_r = sym("b_r", "bytes per router logit (fp32 softmax: 4)")
rho_r = sym("rho_r", "1 where the router runs on the TP-replicated tokens, 0 on the "
            "sequence-parallel shard (Assumptions.moe_router_tp_replicated)")

causal_attention_flops = equation(
    "compute.causal_attention_flops", F_af * (1 - kappa / 2), "FLOP",
    "FlashAttention benchmarks/benchmark_flash_attention.py (flops(): 4 b s^2 n_h d_h halved when "
    "causal); Dao 2023 (FlashAttention-2, arXiv 2307.08691), its causal-masking paragraph: "
    "blocks above the diagonal are skipped, so "
    "the kernel does half of Q K^T and P V (plus the diagonal blocks, which the published "
    "efficiencies already absorb); the unfused path computes the whole s x s matrix",
    "Attention-core FLOPs the kernel executes under a causal mask: half of the un-halved count "
    "with a block-skipping kernel (kappa_c = 1), all of it unfused (kappa_c = 0). Times use this "
    "count; MFU keeps the un-halved count, as published (PaLM appendix B, Narayanan et al.).")

W_sw = sym("W_sw", "sliding window of the windowed layers, tokens (0: none)")
L_sw = sym("L_sw", "layers with the sliding window (the rest attend to the whole sequence)")
attention_span = equation(
    "compute.attention_span",
    s * (L - L_sw + L_sw * sp.Piecewise((1, s <= W_sw), ((2 * W_sw - W_sw**2 / s) / s, True)))
    / L, "tokens",
    "sliding-window attention (Jiang et al. 2023, Mistral 7B, section 2; gpt-oss and Gemma 2 "
    "alternate windowed and full layers, transformers configuration_gpt_oss.py L102-105, "
    "configuration_gemma2.py L95-98): a causal query i attends to min(i + 1, W) keys, on "
    "average W - W^2 / (2 s) over a sequence s > W against s / 2 for a full causal layer, so a "
    "windowed layer's un-halved span is 2 W - W^2 / s (derived); kernels with a window "
    "(FlashAttention window_size, cuDNN / Transformer Engine) skip the blocks outside it; the "
    "unfused path computes the whole score matrix (compute.executed_attention_span)",
    "The sequence length the attention core's FLOPs see, averaged over the layers: s without "
    "a sliding window (2 s (d_s + d_v) FLOPs per token and layer stay as Narayanan et al.).")

S_w = sym("S_w", "the model's attention span over the layers (compute.attention_span), tokens")
executed_attention_span = equation(
    "compute.executed_attention_span", kappa * S_w + (1 - kappa) * s, "tokens",
    "a block-skipping kernel skips the blocks outside a window as it skips those above the "
    "diagonal (FlashAttention window_size, kappa_c = 1); the unfused path computes the whole "
    "s x s score matrix and masks it (kappa_c = 0), as compute.causal_attention_flops counts it",
    "The span the attention kernel executes: the windowed span (compute.attention_span) with a "
    "block-skipping kernel, the whole sequence unfused. Model FLOPs (MFU) keep the windowed "
    "span.")

F_ac = sym("F_ac", "forward FLOPs of the attention core per token and layer, un-halved "
           "(2 s d_s + 2 s d_v)")
F_un = sym("F_model", "model FLOPs of the step (no recompute), attention core un-halved")

causal_model_flops = equation(
    "compute.causal_model_flops", F_un - 3 * L * tok * F_ac / 2, "FLOP",
    "Megatron-LM megatron/training/training.py num_floating_point_operations @ d98e8a6 L1160-"
    "1170 (MHA/GQA: the core-attention term '/ 2  # causal mask (only half of the mask is "
    "non-zero)') and L1126-1137 (MLA, the same halving)",
    "Model FLOPs with the causal attention core halved, as Megatron-LM counts its logged "
    "TFLOP/s today (forward and backward: 3 x the forward's half); PaLM, Narayanan et al. and "
    "torchtitan (models/utils.py, 'do not account for sparsity in causal attention') keep it "
    "un-halved, the convention of 'mfu'.")

six_n_flops = equation(
    "compute.six_n_flops", 6 * N_p * tok, "FLOP",
    "Kaplan et al. 2020 (arXiv 2001.08361) section 2.1, C = 6 N D; Hoffmann et al. 2022 "
    "(Chinchilla) section 3: the convention planners use (2 N forward, 4 N backward per token, "
    "attention scores left out)",
    "Training FLOPs of a step by the 6 N tokens convention (N active parameters with "
    "embeddings): the basis of 'MFU (6N)'; lower than model FLOPs by the attention core.")

c_pub = sym("c_pub", "attention FLOPs per token per layer over h x s in a publication's "
            "formula: 12 (un-halved) or 6 (causal halved)")
N_pub = sym("N_pub", "parameters a publication's formula counts: the layers' and the logits' "
            "V x h once (no input embedding)")

published_flops_per_token = equation(
    "compute.published_flops_per_token", 6 * N_pub + c_pub * L * h * s, "FLOP/token",
    "the formulas behind published TFLOP/s per GPU (docs/reference/framework-physics.md 7.2): "
    "6 N + 12 L h s un-halved, as Narayanan et al. SC'21 section 5.1 (24 h^2 + 4 s h forward "
    "per layer, x 3), Dao 2023 (FlashAttention-2) section 4.2, NeMo <= 25.07 "
    "(nemo/utils/flops_formulas.py before 6251117f4c) and Megatron-LM training.py before "
    "8873b55d6a; 6 N + 6 L h s halved, Megatron-Bridge >= 25.09",
    "Training FLOPs per token as a publication counts them: `validate` "
    "turns a prediction into the published TFLOP/s with the publication's own formula.")



def _t_moe():
    """The attention TP as the MoE layers see it, declared again where used ("t" names other
    splits in this module too, and a symbol's meaning is the last one declared)."""
    return sym("t", "tensor-parallel degree of the attention: each GPU's MoE layer takes the "
               "sequence-parallel shard of tau_mb / t tokens (Megatron-core moe/moe_layer.py "
               "L636-640 @ d98e8a6 refuses TP without SP in training; token_dispatcher.py L57: "
               "S/TP x B local tokens)", positive=True)


t_m = _t_moe()
t_xm = sym("t_x", "expert tensor-parallel degree (--etp; TP unless parallel folding sets it): "
           "the expert-TP all-gather after the dispatch gives each GPU its t_x ranks' rows "
           "(token_dispatcher.py L86, expt_tp; L741-750)", positive=True)
_SHARD = ("; per GPU the rows of its sequence-parallel shard, tau_mb / t, times the t_x expert-TP "
          "ranks whose rows it gathers (Megatron-core moe_layer.py L636-640, token_dispatcher.py "
          "L57, L86, L741-750 @ d98e8a6; 1 without TP)")
g_p = sym("g_p", "row passes of a GPU's permutation, in tau_mb k / t rows: Megatron-core's "
          "alltoall dispatcher permutes its own tau_mb / t tokens before the all-to-all and "
          "unpermutes them after (token_dispatcher.py L665-675, L889-895 @ d98e8a6: 1) and, "
          "with more than one local expert, sorts the t_x expert-TP ranks' received rows by "
          "expert and back (L757-789, L803-822: + t_x; DeepSpeed reads them in place, "
          "Assumptions.moe_sort_by_local_expert 0); DeepEP, HybridEP and torchtitan permute "
          "the rows they receive (a token sent to every expert-TP rank, L1836-1841: t_x; "
          "Assumptions.moe_permute_received_rows)", positive=True)

moe_permute_bytes = equation(
    "compute.moe_permute_bytes", 2 * 2 * tok_mb * k_top * h * b_a * g_p / t_m, "bytes",
    "Megatron-core MoE (transformer/moe/moe_utils.py permute/unpermute, token_dispatcher.py): "
    "each token is gathered into k expert-ordered rows before the experts and scattered back "
    "and summed after; each is a read and a write of tau_mb x k x h activations "
    "(MegaBlocks, Gale et al. 2023, arXiv 2211.15841, section 5: gather/scatter are "
    "memory-bound); per GPU the rows of its sequence-parallel shard, tau_mb / t (moe_layer.py "
    "L636-640, token_dispatcher.py L57), times the row passes g_p (the sort by local expert "
    "included)",
    "HBM bytes of one MoE layer's token permutation and unpermutation for one micro-batch, "
    "forward (the backward moves as many again).")

n_b = sym("n_b", "HBM passes of the eager expert bias add over a forward and a backward "
          "(Assumptions.moe_expert_bias_passes)")

moe_expert_bias_bytes = equation(
    "compute.moe_expert_bias_bytes", n_b / 2 * tok_mb * k_top * h * b_a * t_xm / t_m, "bytes",
    "Megatron-core TEGroupedMLP._apply_bias (transformer/moe/experts.py @ core_v0.16.0 "
    "L609-626, @ d98e8a6 L345-380): with expert biases (GPT-OSS, add_bias_linear) fc2 returns "
    "its bias (skip_bias_add=True) and every expert's rows get out + b p in eager torch, then "
    "torch.cat; fc1's bias runs in the GEMM. Passes of the tau_mb x k x h bf16 rows (probs in "
    "the router's bf16: TE fused_topk_with_score_function): forward b p written (1), the add "
    "(3), the cat (2); backward the split's cat (2), the mul's grad x p and grad x b each "
    "written and summed (3 + 3): n_b = 6 + 8 = 14, moved as 7 in each pass as the routing "
    "bytes" + _SHARD,
    "HBM bytes of one MoE layer's eager expert output-bias add for one micro-batch, forward "
    "(the backward moves as many again); 0 without expert biases.")

t_v = sym("t", "tensor-parallel degree (the vocabulary is split over it)", positive=True)
b_lo = sym("beta_loss", "HBM bytes the loss moves per logit in one pass direction "
           "(Assumptions.loss_forward_bytes_per_logit / loss_backward_bytes_per_logit)")

loss_bytes = equation(
    "compute.loss_bytes", b_lo * tok_mb * V / t_v, "bytes",
    "The cross-entropy over the tau_mb x V / t logits each GPU of the last stage holds "
    "(vocab-parallel: Megatron-LM tensor_parallel/cross_entropy.py @ d98e8a6), HBM-bound. "
    "Counted per logit, forward / backward: unfused (L25 the fp32 copy 2 + 4, L27 max 4, L42 "
    "the shift 4 + 4, L62 exp 4 + 4, L63 sum 4, L77 the softmax 4 + 4; L114 the grad mul "
    "4 + 4, the bf16 cast back 4 + 2) 38 / 14; --cross-entropy-loss-fusion native "
    "(core/fusions/fused_cross_entropy.py: each jit-fused function one kernel, its in-place "
    "results written) 22 / 10; Transformer Engine's (--cross-entropy-fusion-impl te: "
    "transformer_engine/common/triton/cross_entropy.py @ d0067d0, two reads of the bf16 "
    "logits and the fp32 gradient written in the forward, L70-82, L180-194; the grad mul "
    "4 + 4, L263-266, and autograd's cast to bf16 4 + 2) 8 / 14",
    "HBM bytes of the loss over one micro-batch's logits on one GPU of the last stage, in one "
    "pass direction (0 elsewhere: step.elementwise_time with L_stage the last-stage flag).")

lam_h = sym("lambda_h", "1 on the last pipeline stage (runs the logits), else 0")
M_lo = sym("M_loss", "HBM bytes of the loss over one micro-batch's logits on one GPU in one pass "
           "direction (compute.loss_bytes)")
B_hbm = sym("B_hbm", "peak HBM bandwidth, bytes/s", positive=True)
eta_hbm = sym("eta_hbm", "achievable fraction of HBM bandwidth", positive=True)

loss_time = equation(
    "compute.loss_time", lam_h * M_lo * mb / (B_hbm * eta_hbm), "s",
    "HBM roofline of the cross-entropy over the logits (compute.loss_bytes), run by the last "
    "pipeline stage once per micro-batch in each pass direction; not re-run by recomputation "
    "(the loss is outside the checkpointed layers)",
    "Time of the loss over the logits on the stage in one step, in one pass direction; part of "
    "step's element-wise row.")

b_ro = sym("beta_rope", "HBM bytes per rotated Q/K element the unfused RoPE adds to the fused "
           "kernel's in one pass direction (Assumptions.rope_unfused_forward_bytes_per_element "
           "/ rope_unfused_backward_bytes_per_element)")
u_y = sym("u_yarn", "1 when the model's RoPE has a YaRN scaling (Model.rope_yarn_factor > 1), "
          "else 0")
n_rot = sym("n_rot", "rotated elements of one token in one layer: (query heads + KV heads, at "
            "least t) x head dim")
t_h = sym("t", "tensor-parallel degree (the heads are split over it)", positive=True)

rope_bytes = equation(
    "compute.rope_bytes", u_y * b_ro * tok_mb * n_rot / t_h, "bytes",
    "Megatron-core models/common/embeddings/rope_utils.py @ d98e8a6: apply_rotary_pos_emb "
    "(L340-356) leaves Transformer Engine's fused RoPE for _apply_rotary_pos_emb_bshd (L92-156) "
    "when mscale != 1, and YaRN's concentration factor is 0.1 ln(f) + 1 (yarn_rotary_pos_"
    "embedding.py L275-293; attention.py L326 passes it, L1508-1532); the Megatron-LM command "
    "line turns the fusion off for any embedding but rope (training/arguments.py L1628-1629), "
    "Megatron-Bridge for YaRN (utils/fusions.py L84-95 @ v0.6.0). Counted per bf16 element "
    "of Q and K, over the fused kernel's read and write: forward t cos (2), the negated half "
    "(1), rotate_half's cat (2), x sin (2), the add (3), the final cat (2): 12 passes, 10 more, "
    "20 bytes; backward (autograd, traced op by op) the grads x sin (2) and x cos (2), the "
    "negation (1), the chunks' cat (2), the two grads summed (3), the empty t_pass slice's "
    "zero gradient (1) and its sum into the input's (3): 14, 12 more, 24 bytes (the cos/sin "
    "tables, s x d, left out)",
    "HBM bytes one layer's unfused RoPE adds for one micro-batch on one GPU in one pass "
    "direction (0 without YaRN or with a fused RoPE).")

moe_router_bytes = equation(
    "compute.moe_router_bytes", 3 * tok_mb * E * b_r * (rho_r + (1 - rho_r) / _t_moe()),
    "bytes",
    "Megatron-core MoE router (transformer/moe/router.py: logits, softmax, top-k): the "
    "tau_mb / t x E logits of the GPU's sequence-parallel shard (moe_layer.py L636-640, "
    "token_dispatcher.py L57 @ d98e8a6), or of all tau_mb tokens where the router runs on the "
    "TP-replicated input (rho_r = 1: torchtitan's NoParallel router.gate, models/gpt_oss/"
    "infra/parallelize.py L273-284 @ v0.2.2; DeepSpeed), written by the router GEMM, read and "
    "written by the softmax, read by the top-k (fused or not: three passes assumed)",
    "HBM bytes of one MoE layer's softmax and top-k over the router logits for one micro-batch "
    "(the router GEMM's FLOPs are in compute.flops_per_token_layer as 2 h E).")


# ---- MoE: the routed experts' FLOPs (issue 36: their own equation, not the attention core's) --
f_x = sym("f_x", "intermediate size of one routed expert")
tau_g = sym("tau_g", "tokens per GPU of the stage in one step (global tokens / (dp cp t))")
L_x = sym("L_moe", "MoE layers on the pipeline stage")
F_xf = sym("F_xf", "forward FLOPs of the routed experts on the stage, FLOP")
r_x = sym("r_x", "1 when recomputation re-runs the experts' forward (full, or torchtitan's "
          "op-level selective), else 0")

moe_expert_forward_flops = equation(
    "compute.moe_expert_forward_flops", tau_g * L_x * 2 * mm * h * f_x * k_top, "FLOP",
    "Narayanan et al. SC'21 section 5.1 (2 FLOPs per multiply-add and weight) applied to the "
    "k routed experts a token visits (MegaBlocks, Gale et al. 2023, arXiv 2211.15841 section "
    "3: each token runs through k expert MLPs of m_m matrices h x f_x); the same term as the "
    "2 m_m h f_a of compute.flops_per_token_layer with f_a = k f_x",
    "Forward FLOPs of the routed experts on the stage: the grouped GEMMs timed on the expert "
    "curve (efficiency.expert_gemm_flops); shared experts stay in the weight GEMMs.")

moe_expert_backward_flops = equation(
    "compute.moe_expert_backward_flops", F_xf * (2 + r_x), "FLOP",
    "Narayanan et al. SC'21 section 5.1: backward = 2 x forward (the input and the weight "
    "gradients); full recomputation (Korthikanti et al. 2022 section 5) re-runs the experts' "
    "forward, Korthikanti's selective recomputation does not touch them; torchtitan's op-level "
    "selective does (torch._grouped_mm is not in its save list, models/llama3/infra/"
    "parallelize.py L36-52 @ v0.2.2)",
    "Routed-expert FLOPs of the stage's backward pass, with the recomputed forward.")

n_c = sym("n_c", "HBM passes over the expert fc1 output of the eager GLU clamp, forward + "
          "backward (Assumptions.moe_act_clamp_passes)")

moe_act_clamp_bytes = equation(
    "compute.moe_act_clamp_bytes", n_c / 2 * tok_mb * k_top * 2 * f_x * b_a / _t_moe(),
    "bytes",
    "Megatron-core weighted_bias_quick_geglu_impl (fusions/fused_bias_geglu.py L424-432 @ "
    "d98e8a6), which TEGroupedMLP runs with a clamp value (moe/experts.py L973-981; GPT-OSS: "
    "activation_func_clamp_value 7.0, Megatron-Bridge gpt_oss_provider.py L84 @ v0.3.0): "
    "before the fused kernel, in eager torch, the fc1 output (2 f_x bf16 per routed row) is "
    "chunked, each half clamped (a read and a write of the whole) and concatenated (a read "
    "and a write): 4 passes; backward PyTorch's clamp_backward (FunctionsManual.cpp) runs "
    "where(self <= max, grad, 0) on the one-sided half (the compare: 2 + 1 bytes, the where: "
    "1 + 2 + 2) and where((self >= min).logical_and_(self <= max), grad, 0) on the other "
    "(3 + 3 + 3 + 5): 22 bytes per pair of elements, 5.5 passes of the bf16 whole, and the "
    "chunk's backward concatenates the two grads (2): n_c = 4 + 7.5 = 11.5, moved as half in "
    "each pass as the routing bytes; per GPU tau_mb k t_x / t rows of 2 f_x / t_x elements, "
    "so t_x cancels: the sequence-parallel shard's tokens, the expert-TP ranks' rows gathered "
    "and the width split over them (moe_layer.py L636-640, token_dispatcher.py L57, L741-750 "
    "@ d98e8a6)",
    "HBM bytes of one MoE layer's eager clamp of the gated expert MLP for one micro-batch, "
    "forward (the backward moves as many again); 0 without the clamp.")

# ---- Megatron-LM's output-discarding selective recomputation (--recompute-modules) ----------
n_cf = sym("n_cf", "forward HBM passes over the expert fc1 output (2 f_x wide) of the eager GLU "
           "clamp (Assumptions.moe_act_clamp_forward_passes; 0 without the clamp)")
moe_act_recompute_bytes = equation(
    "compute.moe_act_recompute_bytes", tok_mb * k_top * f_x * b_a / _t_moe() * (mm + 2 * n_cf),
    "bytes",
    "Megatron-core TEGroupedMLP with recompute_modules moe_act (transformer/moe/experts.py "
    "L269-272, L1019-1030 @ d98e8a6): bias_act_func runs under CheckpointWithoutOutput, its "
    "output (the fc2 input) is discarded once fc2 has run and re-computed before fc2's "
    "backward (transformer_config.py L560-582: output-discarding). The re-run forward reads the "
    "fc1 output and writes the activation: a gated MLP reads 2 f_x and writes f_x, a 2-matrix "
    "one reads and writes f_x: m_m passes of f_x; with a clamp (GPT-OSS) the eager chunk, clamp "
    "and cat before the fused kernel run again, n_cf passes of the 2 f_x row "
    "(compute.moe_act_clamp_bytes). Per GPU tau_mb k t_x / t rows of width / t_x, as there",
    "HBM bytes one MoE layer's backward adds for one micro-batch when moe_act is recomputed.")

n_n = sym("n_n", "separate norms per MoE layer whose output layernorm recompute discards: "
          "the pre_mlp_layernorm (Transformer Engine spec, gpt_layer_specs.py L336 @ d98e8a6; "
          "the input norm is fused into the QKV linear, L323, an IdentityOp, L278 of "
          "transformer_layer.py); an MLA layer's input_layernorm too (L296; a dense MLA layer's not "
          "counted)")
t_n = sym("t_n", "TP shards of the norm's tokens (t with sequence parallelism, else 1)",
          positive=True)
norm_recompute_bytes = equation(
    "compute.norm_recompute_bytes", n_n * 2 * h * b_a * tok_mb / t_n, "bytes",
    "Megatron-core TransformerLayer with recompute_modules layernorm (transformer/"
    "transformer_layer.py L475-527, L712-723 @ d98e8a6): a norm that is not an IdentityOp runs "
    "under CheckpointWithoutOutput and is re-run in the backward: one read of its input and one "
    "write of its output, h wide per token of the GPU's sequence-parallel shard (the weight "
    "and the fp32 statistics neglected)",
    "HBM bytes one MoE layer's backward adds for one micro-batch when layernorm is recomputed.")
