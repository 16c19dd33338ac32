"""Step time: how the per-stage terms compose into one training step.

Every term the step-time report shows is one of these (or of compute.py/comm.py), evaluated by
:mod:`optimus_calc.evaluate.engine`; `optimus-calc explain step.time MODEL [layout]` shows them.

Windows and counts follow the frameworks (seeds-independent, read from their source):
- forward = one pass of the stage's layers (plus the logits on the last stage); backward = two
  forward passes plus the recomputed forward (Narayanan et al. SC'21 section 5.1);
- data-parallel collectives per micro-batch or per step, as each ZeRO stage runs them
  (DeepSpeed deepspeed/runtime/zero/stage_1_and_2.py, stage3.py; Megatron-LM
  megatron/core/distributed/distributed_data_parallel.py; calibration.md section 10).
"""

from __future__ import annotations

import sympy as sp

from optimus_calc.equations.registry import equation, sym

tok_g = sym("tau_g", "token-layers of work per GPU per step: tokens / (dp x cp x tp)")
L_s = sym("L_stage", "transformer layers on the pipeline stage")
lam = sym("lambda_h", "1 on the last pipeline stage (runs the logits), else 0")
F_l = sym("F_l", "forward FLOPs per token of one layer")
F_r = sym("F_r", "extra forward FLOPs per token per layer recomputed (0, scores, or F_l)")
F_h = sym("F_h", "forward FLOPs per token of the logits")
n_pass = sym("n_pass", "HBM passes over the stored activation bytes")
M_l = sym("M_l", "activation bytes one layer stores for one micro-batch (no recompute)")
m = sym("m", "micro-batches per step per pipeline", positive=True)
B_hbm = sym("B_hbm", "peak HBM bandwidth, bytes/s", positive=True)
eta_hbm = sym("eta_hbm", "achievable fraction of HBM bandwidth", positive=True)
T_cf = sym("T_cf", "GEMM time of the stage's forward passes in the step, s")
T_cb = sym("T_cb", "GEMM time of the stage's backward passes (and recompute) in the step, s")
T_ef = sym("T_ef", "element-wise (HBM-bound) time of the forward passes, s")
T_eb = sym("T_eb", "element-wise (HBM-bound) time of the backward passes, s")
sig = sym("sigma_sp", "1 with sequence parallelism, else 0")
T_ag, T_rs = sym("T_ag", "one all-gather, s"), sym("T_rs", "one reduce-scatter, s")
T_ar, T_a2a = sym("T_ar", "one all-reduce, s"), sym("T_a2a", "one all-to-all, s")
r_f = sym("r_full", "1 with full recomputation, else 0")
r_z = sym("r_z", "1 when full recomputation gathers each ZeRO-3 module again (r_full x "
          "Assumptions.zero3_recompute_regathers), else 0")
o_tp = sym("o_tp", "fraction of TP communication hidden behind compute (assumed)")
o_cp = sym("o_cp", "1 if the CP ring's K/V traffic hides behind the attention, else 0")
o_pp = sym("o_pp", "fraction of PP point-to-point time hidden, plain 1F1B (assumed)")
o_pi = sym("o_pi", "fraction hidden interleaved, v > 1 (profile; at least o_pp)")
o_tb = sym("o_tb", "fraction of the backward's TP collectives hidden behind the weight-gradient "
           "GEMM (framework profile: Megatron-LM async dgrad 1, else 0)")
o_dr = sym("o_dr", "1 if bucketed gradient reductions overlap the backward, 0 if the whole "
           "reduction runs after it (Megatron-LM without --overlap-grad-reduce)")
o_pg = sym("o_pg", "1 if the ZeRO-1/2 parameter all-gather overlaps the next forward, 0 if "
           "it runs whole before it (Megatron-LM without --overlap-param-gather)")
o_ep = sym("o_ep", "fraction of the EP all-to-alls hidden behind compute (framework profile)")
v = sym("v", "model chunks per GPU (interleaving)", positive=True)
p_pp = sym("p", "pipeline-parallel degree", positive=True)
Z, L_moe = sym("Z", "ZeRO stage 0..3"), sym("L_moe", "MoE layers on the pipeline stage")
T_red = sym("T_red", "gradient reduction of the stage's gradients once (all buckets), s")
T_bkt = sym("T_bkt", "gradient reduction of one bucket, s")
T_gat = sym("T_gat", "parameter all-gather of the stage's weights once (all pieces), s")
A_g = sym("A_g", "per-module fixed cost of one ZeRO-3 gather pass over the stage's modules "
          "(n_mod x Assumptions.zero3_gather_latency_us), s")
W_f = sym("W_f", "forward time of one micro-batch (overlap window), s")
W_b = sym("W_b", "backward time of one micro-batch (overlap window), s")
T_f = sym("T_f", "forward time of the stage in the step (GEMM + element-wise), s")
T_b = sym("T_b", "backward time of the stage in the step (GEMM + element-wise), s")
T_p2p, T_bub = sym("T_p2p", "one point-to-point send, s"), sym("T_bubble", "pipeline bubble, s")
T_tp, T_cp = (sym("T_tp", "exposed tensor-parallel communication, s"),
              sym("T_cp", "exposed context-parallel communication, s"))
T_ep, T_pp = (sym("T_ep", "exposed expert-parallel all-to-all, s"),
              sym("T_pp", "exposed pipeline point-to-point, s"))
T_dpx = sym("T_dp", "exposed data-parallel communication, s")
T_ox = sym("T_opt", "exposed optimizer step and offload transfers, s")
T_po = sym("T_po", "exposed parameter streaming from host or NVMe (ZeRO-Infinity), s")
G_x = sym("G_x", "ZeRO-3 gathers (overlapped: reduce-scatters) a micro-batch waits for, s "
          "(offload.zero3_exposed_gather_time)")
T_fix = sym("T_fix", "fixed costs of the step not hidden by GPU work (step.fixed_time), s")
T_s0 = sym("T_s0", "fixed time per optimizer step (Assumptions.step_fixed_s), s")
t_l0 = sym("t_l0", "fixed time per layer per micro-batch, fwd + bwd (Assumptions.layer_fixed_s), s")
t_mh = sym("t_mh", "host time per MoE layer per micro-batch the GPU waits for after the "
           "dispatcher's host sync (moe_layer_host_s from EP >= moe_host_sync_min_ep, else 0), s")
t_mf = sym("t_mf", "launch-bound host time per MoE layer per micro-batch (moe_layer_fixed_s), s")
T_step = sym("T_step", "step time, s", positive=True)
F_mod = sym("F_model", "model FLOPs of the step (no recompute)")
N_g = sym("N_gpus", "GPUs in the cluster", positive=True)
pk = sym("peak", "dense peak FLOP/s of the device for the data type", positive=True)
tok = sym("tokens", "tokens per step (global batch x sequence)")

NARAYANAN = "Narayanan et al. SC'21 (arXiv 2104.04473) section 5.1"


def _ex(x, w):  # the part of x that a window w does not hide
    return sp.Max(0, x - w)


forward_flops = equation(
    "step.forward_flops", tok_g * (L_s * F_l + lam * F_h), "FLOP",
    NARAYANAN + ": forward = one pass over the layers; the logits on the last stage",
    "Forward FLOPs one GPU of the stage executes in a step (all micro-batches).")

backward_flops = equation(
    "step.backward_flops", tok_g * (2 * (L_s * F_l + lam * F_h) + L_s * F_r), "FLOP",
    NARAYANAN + ": backward = 2 x forward; activation recomputation re-runs (part of) the "
    "forward inside the backward pass",
    "Backward FLOPs one GPU of the stage executes in a step, with the recomputed forward.")

elementwise_time = equation(
    "step.elementwise_time", n_pass * M_l * L_s * m / (B_hbm * eta_hbm), "s",
    "HBM roofline of the non-GEMM work (norms, activations, dropout, residuals): the stored "
    "activation bytes are written in the forward (1 pass) and read, their gradient written and "
    "read in the backward (3 passes); a recomputed forward writes them again (derived; "
    "Assumptions.elementwise_factor)",
    "Element-wise time of the stage's layers over all micro-batches for n_pass passes.")

forward_time = equation("step.forward_time", T_cf + T_ef, "s", "sum of the forward's GEMM and "
                        "element-wise time", "Forward time of the stage in one step.")
backward_time = equation("step.backward_time", T_cb + T_eb, "s", "sum of the backward's GEMM "
                         "and element-wise time", "Backward time of the stage in one step.")

r_g = sym("r_g", "1 if the recompute re-sends the forward's TP all-gathers (all-reduces without "
          "SP): full recomputation; torchtitan's op SAC, whose save list holds reduce-scatter, "
          "no all-gather (models/llama3/infra/parallelize.py L36-52 @ 73a0e69)")
_tp_n = 2 * (1 - o_tb)  # the backward's collectives of each kind, exposed
tp_comm_time = equation(
    "step.tp_comm_time",
    (1 - o_tp) * (sig * (T_ag * (2 * (1 + r_g) + _tp_n) + T_rs * (2 * (1 + r_f) + _tp_n))
                  + (1 - sig) * T_ar * (2 * (1 + r_g) + _tp_n)) * L_s * m, "s",
    "Korthikanti et al. 2022 (arXiv 2205.05198) section 4.2.2: per layer and micro-batch 4 "
    "all-reduces (2 forward, 2 backward), or with sequence parallelism 4 all-gathers + 4 "
    "reduce-scatters; full recomputation repeats the forward's half. Megatron-LM "
    "megatron/core/tensor_parallel/layers.py L694-711, L790, L807 @ d98e8a6: the backward's "
    "collectives are issued async before the weight-gradient GEMM and waited after it (o_tb)",
    "Exposed tensor-parallel communication of the stage in one step.")

T_att = sym("T_att", "attention-core time of the stage in the step, forward and backward, s")
cp_comm_time = equation(
    "step.cp_comm_time", sp.Max(0, (T_ag * (1 + r_f) + T_rs) * L_s * m - o_cp * T_att), "s",
    "Megatron-LM context parallelism (transformer/dot_product_attention, TransformerEngine's "
    "ring): K/V all-gathered in the forward, their gradients reduce-scattered in the backward, "
    "full recomputation gathers again; a ring that sends the next block while the current one "
    "computes (o_cp 1) hides the traffic behind the attention (TransformerEngine "
    "context_parallel.py L1698-1715 @ d0067d0)",
    "Exposed context-parallel K/V traffic of the stage in one step.")

r_a2a = sym("r_a2a", "share of the forward's EP all-to-alls the backward's recompute sends "
            "again: 1 with full recomputation, and with op SAC not saving them "
            "(Assumptions.sac_saves_ep_all_to_all 0), else 0")
ep_comm_time = equation(
    "step.ep_comm_time", (1 - o_ep) * (4 + 2 * r_a2a) * T_a2a * L_moe * m, "s",
    "Lepikhin et al. 2020 (GShard), Megatron-LM MoE token dispatcher (alltoall): dispatch and "
    "combine in the forward and again in the backward, 4 all-to-alls per MoE layer, and a "
    "recompute re-runs the forward's two: full recomputation (the checkpointed unit is the whole "
    "transformer layer, its MoE dispatcher included: Megatron-LM transformer_block.py "
    "_checkpointed_forward, torchtitan's full AC wraps each block) and torchtitan's op SAC "
    "where the family's save list lacks _c10d_functional.all_to_all_single (qwen3/infra/"
    "parallelize.py L39-54 @ v0.2.2; deepseek_v3 L41, llama4 L59, gpt_oss L50 save it); o_ep is "
    "the framework profile's share hidden behind another micro-batch's compute (Megatron-LM "
    "--overlap-moe-expert-parallel-comm, off by default: megatron/core/model_parallel_config.py "
    "L343 @ d98e8a6)",
    "Exposed expert-parallel all-to-all time of the stage in one step.")

_o_p = sp.Piecewise((sp.Max(o_pi, o_pp), v > 1), (o_pp, True))  # interleaving hides no less
pp_comm_time = equation(
    "step.pp_comm_time", 2 * T_p2p * ((1 - _o_p) * m * v + _o_p * sp.Min(p_pp * v - 1, m * v)),
    "s",
    "Narayanan et al. SC'21 section 2.2: one activation send forward and one gradient send "
    "backward per micro-batch per model chunk; interleaved, Megatron-LM overlaps them with the "
    "chunks' compute (overlap_p2p_comm on by default, off without VP: megatron/training/"
    "arguments.py L3118-3120, L1010-1012 @ d98e8a6), except the p v - 1 hops of the fill and "
    "of the drain, which the first micro-batch waits for (derived)",
    "Exposed pipeline point-to-point time of the stage in one step.")

_t_last = sp.Min(T_red, T_bkt)
# exposed reduction: overlapped buckets (o_dr = 1) or the whole reduction after the backward
# (Megatron-LM distributed_data_parallel.py L131-137 @ d98e8a6: one bucket without
# --overlap-grad-reduce, reduced in finish_grad_sync, finalize_model_grads.py L640)
_red_x = o_dr * (_ex(T_red, W_b) + _t_last) + (1 - o_dr) * T_red
# exposed ZeRO-1/2 gather: hidden by the next forward as far as it lasts (o_pg = 1) or whole
# (o_pg = 0, Megatron-LM without --overlap-param-gather: arguments.py L3148-3149 @ d98e8a6)
_gat_x = o_pg * _ex(T_gat, W_f) + (1 - o_pg) * T_gat
_dp_total = ((m * (T_red + (2 + r_z) * (T_gat + A_g)), Z >= 3), (m * T_red + T_gat, Z >= 2),
             (T_red + T_gat, True))
dp_comm_time = equation(
    "step.dp_comm_time",
    sp.Piecewise(*_dp_total), "s",
    "DeepSpeed deepspeed/runtime/zero/stage3.py (parameters gathered per module in the forward "
    "and again in the backward, gradients reduce-scattered, every micro-batch); with full "
    "recomputation the recomputed forward gathers each module once more "
    "(runtime/zero/parameter_offload.py pre_sub_module_forward_function fetches in every forward, "
    "the recompute inside the backward included: DeepSpeed issue #4784; FSDP2 does not: "
    "torchtitan fully_shards the checkpointed block, whose recompute runs inside the backward "
    "after the block's pre-backward unshard, r_z 0), the 2 + r_z passes "
    "step.dp_exposed_time charges, each with its per-module fixed cost; "
    "stage_1_and_2.py (ZeRO-2 reduces gradients every micro-batch as buckets fill; ZeRO-1 at "
    "the gradient-accumulation boundary); PyTorch DDP no_sync and Megatron-LM "
    "distributed_data_parallel.py (one reduction per step); calibration.md section 10",
    "Data-parallel communication of the stage in one step (before overlap): reductions x "
    "times reduced + gathers x times gathered.")

dp_exposed_time = equation(
    "step.dp_exposed_time",
    sp.Piecewise(
        (sp.Min(m * (G_x + o_dr * _t_last + (1 - o_dr) * T_red), _dp_total[0][0]), Z >= 3),
        (sp.Min(m * _red_x + _gat_x, _dp_total[1][0]), Z >= 2),
        (sp.Min(_red_x + _gat_x, _dp_total[2][0]), True)), "s",
    "as step.dp_comm_time; bucketed reductions overlap the backward of their micro-batch "
    "except the last bucket (o_dr = 1), or all of it follows the backward (o_dr = 0, Megatron-LM "
    "without --overlap-grad-reduce: distributed_data_parallel.py L131-137 @ d98e8a6); ZeRO-1/2 gathers overlap the next forward (o_pg = 1, Megatron "
    "--overlap-param-gather) or run whole before it (o_pg = 0); ZeRO-3 gathers wait per module as far as prefetching does not "
    "hide them (DeepSpeed partitioned_param_coordinator.py, offload.zero3_exposed_gather_time), "
    "and there the overlapped reduce-scatters but the last bucket's share the backward's link "
    "with the gathers (in G_x, offload.zero3_overlapped_reduce_time): the last bucket follows "
    "the backward, counted here once. Never more than the communication it exposes "
    "(step.dp_comm_time): a window shorter than a bucket counts no reduction twice (issue 32 9)",
    "Part of the data-parallel communication the compute windows do not hide.")

r_h = sym("r_h", "1 when the MoE forward re-runs in the backward (full or op-level AC), else 0")

fixed_time = equation(
    "step.fixed_time", T_s0 + t_l0 * L_s * m + (t_mf + t_mh) * L_moe * m * (1 + r_h), "s",
    "assumed (T_s0, t_l0 default 0; no public source gives them in seconds): host work once per "
    "optimizer step (Megatron's NaN scan of the gradient buffers, DeepSpeed's per-tensor overflow "
    "syncs and .item() norms, torchtitan's periodic GC; docs/reference/framework-physics.md "
    "section 5) and per layer per micro-batch (kernel launches, module hooks); serialised with "
    "the GPU work, as on small models where the host binds. Fitted by `calibrate` from runs that "
    "differ in layers x micro-batches per step. Per MoE layer and micro-batch, t_mh: a dropless "
    "token dispatcher reads the token counts on the host (Megatron-LM core/transformer/moe/"
    "token_dispatcher.py L452-470, L590-616 @ d98e8a6: a CUDA sync point in every MoE layer; "
    "torchtitan distributed/expert_parallel.py L134-135 @ v0.2.2: .tolist()), so the GPU's "
    "queue drains there and the launches after it are exposed ('gaps between GPU kernels where "
    "CPU cannot launch kernels fast enough', moe/README.md L254-263); drop-and-pad has none "
    "(core_v0.14.0 token_dispatcher.py L444-467: static counts). t_mf, every MoE layer: its "
    "router, permutation and dispatch kernels launched one by one. Both fitted on public MoE "
    "rows (validate_moe.py). r_h = 1 when the MoE forward re-runs in the backward (full "
    "recomputation; torchtitan's op AC re-runs the block, the host read included)",
    "Framework fixed costs of the stage in one step: per step, per layer and micro-batch, "
    "and per MoE layer and micro-batch.")

step_time = equation(
    "step.time",
    T_f + T_b + T_bub + T_tp + T_cp + T_ep + T_pp + T_dpx + T_ox + T_po + T_fix, "s",
    "sum of the terms of the pipeline stage that takes longest (the one evaluator takes the "
    "maximum over stages); the bubble is that of the busiest stage",
    "Time of one training step.")

mfu = equation(
    "step.mfu", F_mod / (T_step * N_g * pk), "1",
    "Chowdhery et al. 2022 (PaLM) appendix B: model FLOPs utilisation, recomputation not counted",
    "Model FLOPs per second over the cluster's dense peak.")

tokens_per_s = equation(
    "step.tokens_per_s", tok / T_step, "tokens/s", "definition: tokens per step over step time",
    "Training throughput in tokens per second.")

# ---- the glue of the stages: attention work, element-wise passes, message sizes, buckets ------
d_s = sym("d_s", "score width: heads x query/key head dim (MLA: nope + rope dims)")
d_v = sym("d_v", "value width: heads x value head dim")
s_q = sym("s", "sequence length, tokens", positive=True)
h_a = sym("h", "hidden size", positive=True)
F_af = sym("F_af", "forward FLOPs of the attention core on the stage, FLOP")
r_a = sym("r_a", "1 when the attention core is recomputed (full or selective), else 0")
f_e = sym("f_e", "HBM passes of element-wise work per stored activation byte (assumed, "
          "Assumptions.elementwise_factor)")

attention_core_flops = equation(
    "step.attention_core_flops", tok_g * L_s * 2 * s_q * (d_s + d_v), "FLOP",
    NARAYANAN + ": the attention scores Q K^T and their product with V, 2 s (d_s + d_v) FLOPs "
    "per token per layer forward",
    "Forward FLOPs of the attention core on the stage (weighted by the attention kernel's "
    "efficiency, the rest by the GEMM curve).")

attention_core_flops_per_token = equation(
    "step.attention_core_flops_per_token", 2 * s_q * (d_s + d_v), "FLOP",
    NARAYANAN + ": the attention scores Q K^T and their product with V, 2 s (d_s + d_v) FLOPs "
    "per token per layer forward; Korthikanti et al. 2022 section 5: selective recomputation "
    "re-runs exactly this part",
    "Forward FLOPs of the attention core per token and layer (F_r of selective recomputation).")

attention_backward_flops = equation(
    "step.attention_backward_flops", F_af * (2 + r_a), "FLOP",
    NARAYANAN + ": backward = 2 x forward; recomputation re-runs the attention core's forward "
    "(Korthikanti et al. 2022 section 5: selective recomputes exactly this part)",
    "Attention-core FLOPs of the stage's backward pass, with its recomputed forward.")

TT_SAC = ("torchtitan selective op activation checkpointing (`selective_ac_option = \"op\"`, the "
          "llama3 recipes' default): torchtitan/distributed/activation_checkpoint.py L98-123 and "
          "the save list torchtitan/models/llama3/infra/parallelize.py L36-52 @ v0.2.2 "
          "(torchtitan/parallelisms/parallelize_llama.py L214-262 @ 9dec370, the 2024-12 "
          "benchmarks, the same rule)")
W_r = sym("W_r", "weight elements (input x output width) of the GEMMs op-SAC re-runs per "
          "layer, averaged over the layers: every second aten.mm of the block; an MoE layer's "
          "routed experts k m_m h f_x (torch._grouped_mm is not in the save list) and its "
          "router gate h E (forced to re-run)")
op_sac_recompute_flops_per_token = equation(
    "step.op_sac_recompute_flops_per_token", 2 * W_r, "FLOP",
    TT_SAC + ": the block saves the outputs of the ops in the save list (aten.mm, the SDPA "
    "kernels, reduce-scatter, max) except every second aten.mm, and each re-run GEMM costs "
    "2 x its weight elements per token. A Llama block runs its mms as wq, wk, wv, wo, w1, w3, "
    "w2 (models/llama3/model/model.py L251, L304, L343): wk, wo and w3 re-run, W_r = h (kv + "
    "d_v + f). An MLA block (models/deepseek_v3/model/model.py L272-323) runs wq_a, wq_b, "
    "wkv_a, wkv_b, wo, then the MLP's w1, w3, w2 (models/moe/moe.py L67-68): wq_b (r_q x "
    "d_s), wkv_b (r_kv x heads (nope + v)), w1 and w2 re-run (without q_lora_rank: wq, wkv_a, "
    "wkv_b, wo, so wkv_a and wo re-run and w3). The SDPA output is saved, so the attention "
    "core is not re-run",
    "Forward FLOPs per token and layer that torchtitan's selective (op) recomputation re-runs "
    "(F_r of selective recomputation under Assumptions.selective_policy = 1).")

elementwise_forward_passes = equation(
    "step.elementwise_forward_passes", sp.Min(1, f_e), "passes", "derived (step.elementwise_"
    "time): the forward writes each stored activation byte once", "HBM passes in the forward.")

elementwise_backward_passes = equation(
    "step.elementwise_backward_passes", f_e - sp.Min(1, f_e) + r_f, "passes",
    "derived (step.elementwise_time): the rest of the passes run in the backward; a full "
    "recomputation writes the activations once more", "HBM passes in the backward.")

# message sizes (bytes per collective per micro-batch and layer)
b_m = sym("b", "micro-batch size, sequences", positive=True)
h_m = sym("h", "hidden size", positive=True)
b_w = sym("b_w", "bytes per weight (16-bit: 2)")
c_p = sym("c", "context-parallel degree", positive=True)
t_p = sym("t", "tensor-parallel degree", positive=True)
k_e = sym("k", "experts each token is routed to (top-k)", positive=True)
n_kv = sym("n_kv", "key/value heads", positive=True)
d_h = sym("d_head", "head dimension", positive=True)
t_s = sym("t_sp", "TP shards of an activation sent between stages (t with sequence "
          "parallelism, else 1)", positive=True)
MEGATRON_COMM = ("Megatron-LM (Korthikanti et al. 2022 section 4.2.2): TP and sequence "
                 "parallelism move the layer's activation s/c x b x h once per collective")

tp_message_bytes = equation(
    "step.tp_message_bytes", (s_q / c_p) * b_m * h_m * b_w, "bytes", MEGATRON_COMM,
    "Bytes of one TP all-reduce (or all-gather/reduce-scatter pair) per layer and micro-batch.")

cp_message_bytes = equation(
    "step.cp_message_bytes", 2 * s_q * b_m * n_kv * d_h * b_w / t_p, "bytes",
    "Megatron-LM context parallelism (ring attention, transformer/attention.py via "
    "TransformerEngine): the K and V of the sequence, 2 s b n_kv d_head, over the TP shards",
    "Bytes of K/V one CP rank gathers per layer and micro-batch.")

i_ep = sym("iota", "tokens the most-loaded expert-parallel rank receives / the balanced share "
           "(>= 1; Assumptions.moe_imbalance)", positive=True)

t_xe = sym("t_x", "expert tensor-parallel degree (--etp; TP unless parallel folding sets it)",
           positive=True)

ep_message_bytes = equation(
    "step.ep_message_bytes", i_ep * (s_q / c_p) * b_m * h_m * b_w * k_e * t_xe / t_p, "bytes",
    "Megatron-LM MoE token dispatcher (core/transformer/moe/token_dispatcher.py): each token's "
    "hidden state goes to its top-k experts; the all-to-all ends when the most-loaded rank "
    "has received its iota x share (capacity factor: moe_utils.py L248-265 @ d98e8a6); under "
    "parallel folding (expert TP t_x below TP t) an EP rank dispatches its t_x / t share of "
    "the micro-batch's tokens, arXiv 2504.14960",
    "Bytes of one expert-parallel all-to-all per MoE layer and micro-batch, as the most-loaded "
    "rank receives them.")

p2p_message_bytes = equation(
    "step.p2p_message_bytes", (s_q / c_p) * b_m * h_m * b_w / t_s, "bytes",
    NARAYANAN + " section 4.1 (scatter/gather: with sequence parallelism each TP rank sends "
    "its shard)",
    "Bytes one GPU sends to the next pipeline stage per micro-batch.")

P_s = sym("P", "parameters held by one GPU before ZeRO partitioning (after TP/PP/EP)")
b_g = sym("b_g", "bytes per gradient element")
B_cap = sym("B_cap", "bucket capacity, bytes (DDP bucket_cap_mb; ZeRO bucket size x b_g)")
Z_b = sym("Z_b", "ZeRO bucket size, elements (allgather_bucket_size)")
n_mod = sym("n_mod", "parameterised modules of the stage ZeRO-3 gathers one by one")
k_w = sym("k_w", "weight gathers per pass (step.weight_gathers)")
t_g = sym("t_g", "one gather of a piece of the stage's weights, s")

gradient_buckets = equation(
    "step.gradient_buckets", sp.Max(1, sp.ceiling(P_s * b_g / B_cap)), "buckets",
    "PyTorch DDP bucket_cap_mb (torch/nn/parallel/distributed.py, 25 MB); DeepSpeed ZeRO "
    "reduce_bucket_size (runtime/zero/config.py)",
    "Gradient buckets the stage's gradients are reduced in.")

weight_gathers = equation(
    "step.weight_gathers",
    sp.Piecewise((n_mod, sp.Eq(Z, 3)), (sp.Max(1, sp.ceiling(P_s * b_w / (Z_b * b_w))), True)),
    "gathers",
    "DeepSpeed ZeRO-3 fetches module by module (runtime/zero/partitioned_param_coordinator.py); "
    "ZeRO-1/2 all-gather the updated weights in allgather_bucket_size pieces "
    "(runtime/zero/stage_1_and_2.py)",
    "All-gathers the stage's weights take per pass.")

n_bk = sym("n_bk", "gradient buckets the parameters are reduced in (step.gradient_buckets)")

dp_bucket_bytes = equation(
    "step.dp_bucket_bytes", P_s * b_g / n_bk, "bytes",
    "PyTorch DDP (torch/nn/parallel/distributed.py) and DeepSpeed ZeRO (runtime/zero/"
    "stage_1_and_2.py reduce_bucket_size): the gradients reduce bucket by bucket",
    "Bytes of one gradient bucket's reduction (the parameters' gradients over the buckets).")

dp_gather_piece_bytes = equation(
    "step.dp_gather_piece_bytes", P_s * b_w / k_w, "bytes",
    "DeepSpeed ZeRO (runtime/zero/partitioned_param_coordinator.py, stage_1_and_2.py "
    "allgather_bucket_size): the weights are all-gathered piece by piece",
    "Bytes of one weight all-gather piece (the stage's weights over the gathers).")

dp_gather_time = equation(
    "step.dp_gather_time", sp.Piecewise((0, sp.Eq(Z, 0)), (k_w * t_g, True)), "s",
    "DeepSpeed ZeRO (runtime/zero/stage_1_and_2.py, stage3.py): no gather without ZeRO",
    "All-gather of the stage's weights once (all pieces).")
