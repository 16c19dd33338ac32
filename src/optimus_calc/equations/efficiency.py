"""Efficiency that follows the work: the achieved fraction of dense peak FLOP/s as a function of
the shape of the matrices each GPU multiplies.

Two kinds of work in a transformer layer run at different efficiencies:

* the weight GEMMs (Q/K/V, output projection, MLP, logits): their size per GPU is set by the
  tokens of a micro-batch (s b), the hidden size h and the tensor-parallel shard h/t. Their
  efficiency rises with the FLOPs of one GEMM and saturates: eta_d = eta_max W / (W + W_half).
  This is the same as charging every GEMM a fixed time W_half / (eta_max peak) on top of
  W / (eta_max peak) (launch, ramp-up, the last partial wave of tiles, the un-overlapped
  prologue/epilogue), which is why small GEMMs run further from peak.
* the attention core (scores Q K^T and values A V, 4 s q_d FLOPs per token): batched GEMMs whose
  inner dimension is the head width, run either unfused (baddbmm + softmax + bmm, bounded by
  the memory traffic of the s x s scores) or as one FlashAttention kernel. Each has its own
  efficiency eta_a, a named parameter of the GPU family.

The layer's effective efficiency is the FLOP-weighted harmonic mean, i.e. the time of the two
kinds of work added. Parameters per GPU family live in the hardware catalog with their source;
the A100 values are fitted on Narayanan et al. SC'21 Table 1 (benchmarks/calibrate_gemm.py).
"""

from __future__ import annotations

import sympy as sp

from optimus_calc.equations.registry import equation, sym

W = sym("W_g", "FLOPs of one weight GEMM on one GPU: 2 (s b) h (h / t)", positive=True)
W_half = sym("W_half", "GEMM FLOPs at which efficiency is half its maximum (per GPU family)",
             positive=True)
eta_max = sym("eta_max", "GEMM efficiency of very large GEMMs (per GPU family)", positive=True)
s = sym("s", "sequence length, tokens",
        positive=True)
b = sym("b", "micro-batch size, sequences", positive=True)
h = sym("h", "hidden size", positive=True)
t = sym("t", "tensor-parallel size", positive=True)
F_d = sym("F_d", "FLOPs of the weight GEMMs (projections, MLP, logits)")
F_a = sym("F_a", "FLOPs of the attention core (scores and values)")
eta_d = sym("eta_d", "efficiency of the weight GEMMs", positive=True)
eta_a = sym("eta_a", "efficiency of the attention core (unfused or FlashAttention)",
            positive=True)

gemm_flops = equation(
    "efficiency.gemm_flops", 2 * s * b * h * h / t, "FLOP",
    "Narayanan et al. SC'21 (arXiv 2104.04473) section 3.2/5.1: a layer's weight GEMMs are "
    "(s b) x h x (k h / t) with k = 1, 3 or 4; the unit GEMM (k = 1) measures their size",
    "FLOPs of one unit weight GEMM on one GPU: tokens of a micro-batch x hidden x hidden / TP.")

gemm_efficiency = equation(
    "efficiency.gemm_efficiency", eta_max * W / (W + W_half), "1",
    "saturating curve fitted on Narayanan et al. SC'21 Table 1 (A100) with the micro-batch and "
    "interleaving of Megatron-LM examples/academic_paper_scripts/sc21/run_table_1.sh; "
    "equivalent to a fixed time W_half / (eta_max peak) per GEMM",
    "Achieved / peak FLOP/s of a weight GEMM of W_g FLOPs: rises with the GEMM's size and "
    "saturates at eta_max.")

layer_efficiency = equation(
    "efficiency.layer_efficiency", (F_d + F_a) / (F_d / eta_d + F_a / eta_a), "1",
    "times add: FLOP-weighted harmonic mean of the weight GEMMs' and the attention core's "
    "efficiencies (Narayanan et al. section 5.1 split of 24 h^2 + 4 s h FLOPs per token)",
    "Effective efficiency of the compute of a layer whose FLOPs are F_d in weight GEMMs and "
    "F_a in the attention core.")


# ---- MoE: routed experts are small grouped GEMMs (issue 19) ---------------------------------
tok_mb = sym("tau_mb", "tokens of one micro-batch on one GPU (s b / cp), before any TP split")
k_top = sym("k", "experts each token is routed to (top-k)")
E = sym("E", "routed experts (router width); 0 for dense")
e_p = sym("e_p", "expert-parallel degree")
t_x = sym("t_x", "expert tensor-parallel degree (--etp; TP unless parallel folding sets it)",
          positive=True)
f_x = sym("f_x", "intermediate size of one routed expert")
M_x = sym("M_x", "tokens per local expert: the M dimension of its GEMMs")
F_x = sym("F_x", "FLOPs of the routed experts' GEMMs")
eta_x = sym("eta_x", "efficiency of the routed experts' grouped GEMMs", positive=True)
W_x = sym("W_x", "FLOPs of one unit expert GEMM on one GPU (balanced routing)", positive=True)

tokens_per_expert = equation(
    "efficiency.tokens_per_expert", tok_mb * k_top * e_p * t_x / (E * t), "tokens",
    "Megatron-core MoE docs (transformer/moe/README.md, grouped GEMM over the local experts; "
    "alltoall dispatcher): every EP rank sends its tau_mb x k routed tokens to the E / e_p "
    "experts of each rank; with balanced routing an expert receives tau_mb k e_p / E. Under "
    "parallel folding (expert TP t_x below TP t, arXiv 2504.14960) an EP rank holds only its "
    "t_x / t share of the micro-batch's tokens (the sequence-parallel shard)",
    "Tokens one routed expert processes per micro-batch (balanced routing): the M dimension of "
    "its grouped GEMM.")

expert_gemm_flops = equation(
    "efficiency.expert_gemm_flops", 2 * M_x * h * f_x / t_x, "FLOP",
    "MegaBlocks (Gale et al. 2023, arXiv 2211.15841) section 3: expert computation is a batch "
    "of (tokens per expert) x h x f GEMMs; expert tensor parallelism divides f",
    "FLOPs of one unit expert GEMM on one GPU: tokens per expert x hidden x expert width / "
    "expert TP. "
    "Its efficiency follows the same curve as the weight GEMMs (efficiency.gemm_efficiency).")

n_g = sym("n_g", "expert GEMMs that share one fixed cost: min(E / e_p local experts, the "
          "concurrent GEMM streams, Assumptions.moe_expert_gemm_streams)")
iota = sym("iota", "tokens the most-loaded expert-parallel rank processes / the balanced "
           "share (>= 1; Assumptions.moe_imbalance, --moe-imbalance)", positive=True)
W_l = sym("W_l", "FLOPs of one expert GEMM launch on the most-loaded rank", positive=True)
eta_l = sym("eta_l", "GEMM-curve efficiency of one expert GEMM launch", positive=True)

expert_launch_flops = equation(
    "efficiency.expert_launch_flops", n_g * iota * W_x, "FLOP",
    "Megatron-LM --moe-grouped-gemm builds TEGroupedLinear with num_gemms = num_local_experts "
    "(megatron/core/transformer/moe/experts.py L183, L217-218 @ d98e8a6), which Transformer "
    "Engine runs as one cuBLAS GEMM per expert over 4 concurrent streams "
    "(transformer_engine/common/gemm/cublaslt_gemm.cu L1064-1077, util/multi_stream.cpp L53 @ "
    "d0067d0): n_g = 4 GEMMs share a fixed cost; torchtitan launches one torch._grouped_mm per "
    "projection over all local experts (models/moe/moe.py L113-128 @ v0.2.2); SequentialMLP "
    "loops over them (experts.py L1507): n_g = 1. The most-loaded rank's GEMMs are iota times "
    "the balanced size",
    "FLOPs of one expert GEMM launch: the size the GEMM curve (efficiency.gemm_efficiency, "
    "W_half charged once per launch) is read at for the routed experts.")

iota_u = sym("iota_u", "the imbalance the user typed (Assumptions.moe_imbalance, "
             "--moe-imbalance; 1 balanced)", positive=True)
moe_imbalance_cap = equation(
    "efficiency.moe_imbalance_cap", sp.Min(iota_u, e_p * sp.Min(k_top, E / e_p) / k_top), "1",
    "derived: a token sends at most min(k, E / e_p) of its k expert assignments to one expert-"
    "parallel rank (the rank's E / e_p local experts), so the most-loaded of e_p ranks receives "
    "at most that many rows per token against the balanced k / e_p: e_p min(k, E / e_p) / k "
    "times its balanced share (Mixtral, E 8, k 2, at EP 8: 4; 1 at EP 1, where one rank holds "
    "every expert)",
    "The most-loaded expert-parallel rank's tokens over its balanced share at this layout: the "
    "typed imbalance, capped at what top-k routing over E experts on e_p ranks can reach (the "
    "iota every MoE term reads).")

expert_critical_efficiency = equation(
    "efficiency.expert_critical_efficiency", eta_l / iota, "1",
    "derived: the step waits for the most-loaded expert-parallel rank, which runs iota times "
    "the balanced expert FLOPs at the launch efficiency eta_l; Megatron-LM "
    "--moe-expert-capacity-factor caps an expert at capacity_factor x its balanced tokens "
    "(moe_utils.get_capacity, megatron/core/transformer/moe/moe_utils.py L248-265 @ d98e8a6; "
    "dropped past it, padded up to it with --moe-pad-expert-input-to-capacity)",
    "Efficiency of the routed experts' balanced FLOPs on the step's critical path: F_x / "
    "eta_x is the most-loaded rank's expert time.")

moe_layer_efficiency = equation(
    "efficiency.moe_layer_efficiency",
    (F_d + F_a + F_x) / (F_d / eta_d + F_a / eta_a + F_x / eta_x), "1",
    "times add, as efficiency.layer_efficiency, with the routed experts' grouped GEMMs as a "
    "third kind of work (MegaBlocks section 5: small per-expert GEMMs run below the dense "
    "GEMMs' efficiency)",
    "Effective efficiency of compute whose FLOPs are F_d in weight GEMMs, F_a in the attention "
    "core and F_x in the routed experts' GEMMs.")

eta_k = sym("eta_k", "the fused attention kernel's end-to-end efficiency at head dim 128 (the "
            "catalog's flash_attention_eta / attention_kernel_eta, fitted on training runs)",
            positive=True)
r_64 = sym("r_64", "the kernel's forward + backward speed at head dim 64 over its speed at 128 "
           "(the catalog's attention_head_dim64; 1 where none is published)", positive=True)
d_h = sym("d_h", "attention head dim (query/key)", positive=True)

head_dim_attention_efficiency = equation(
    "efficiency.head_dim_attention_efficiency",
    eta_k * (r_64 + (1 - r_64) * sp.Min(1, sp.Max(0, (d_h - 64) / 64))), "1",
    "Shah et al. 2024 (FlashAttention-3, arXiv 2407.08608) on H100 SXM5 at 8k tokens: Fig. 5's "
    "causal forward and Fig. 6's backward at head dims 64 and 128, the backward at 2.5x the "
    "forward's FLOPs (flash-attention benchmarks/benchmark_flash_attention.py): the speed at 64 "
    "over that at 128 is r_64 (per kernel in the catalog); linear between 64 and 128 (assumed), "
    "r_64 below 64 and 1 above 128 (assumed: no backward value published past 128). Half the "
    "head dim halves a score's matmul FLOPs but not its exponential (the paper's section 3.2)",
    "End-to-end efficiency of the fused attention kernel on the causally halved FLOPs it "
    "executes, at the model's head dim.")
