"""Memory equations: model states per GPU (ZeRO 0-3), offload targets, activations, overheads.

Bytes per parameter: b_w weights, b_g gradients, b_o optimizer state (mixed-precision Adam:
fp32 master + momentum + variance = 12; Rajbhandari et al., ZeRO, SC'20, section 3.1).
Offload flags o_w, o_g, o_o are 1 when weights, gradients or optimizer state leave the GPU.
"""

from __future__ import annotations

import sympy as sp

from optimus_calc.equations.registry import equation, sym

# ---- symbols ---------------------------------------------------------------------------------
P = sym("P", "parameters held by one GPU before ZeRO partitioning (after TP/PP/EP)")
A = sym("A", "TP-sharded non-expert parameters of the pipeline stage (matrices, vocab embedding)")
X = sym("X", "expert parameters of the pipeline stage (all experts)")
R = sym("R", "replicated parameters of the stage (norms, routers)")
t = sym("t", "tensor-parallel degree", positive=True)
e = sym("e", "expert-parallel degree", positive=True)
t_x = sym("t_x", "expert tensor-parallel degree (--etp; TP unless parallel folding sets it)",
          positive=True)
N_d = sym("N_d", "ranks ZeRO partitions over: dp x cp, experts dp x cp / ep "
          "(memory.zero_shard_degree)", positive=True)
Z = sym("Z", "ZeRO stage 0..3")
b_w = sym("b_w", "bytes per weight (2 for bf16/fp16)")
b_g = sym("b_g", "bytes per gradient on the GPU (2; 4 = DeepSpeed/Megatron's 18 B/param)")
b_o = sym("b_o", "bytes of optimizer state per parameter (Adam 12, SGD+momentum 8)")
b_h = sym("b_h", "bytes per gradient held on the host by ZeRO-Offload (fp32: 4)")
o_w = sym("o_w", "1 if weights are offloaded (ZeRO-3 --offload-params), else 0")
o_g = sym("o_g", "1 if gradients are offloaded to the host (ZeRO-Offload), else 0")
k_g = sym("k_g", "1 if the gradient buffer stays on the GPU under optimizer offload "
          "(Megatron-LM HybridDeviceOptimizer), 0 if ZeRO-2/3 move it to the host (DeepSpeed)")
o_o = sym("o_o", "1 if optimizer state is offloaded, else 0")
f_k = sym("f_k", "fraction of optimizer state kept on the GPU (SuperOffload tail buckets)")
G_n = sym("G_n", "GPUs per node", positive=True)
K_n = sym("K_n", "offload devices per node sharing the node's optimizer state", positive=True)
C = sym("C", "capacity of one offload device, bytes")
s = sym("s", "sequence length, tokens", positive=True)
b = sym("b", "micro-batch size, sequences", positive=True)
h = sym("h", "hidden size", positive=True)
a = sym("a", "attention heads", positive=True)
c = sym("c", "context-parallel degree (divides s)", positive=True)
V = sym("V", "vocabulary size", positive=True)
sigma = sym("sigma", "1 with sequence parallelism, else 0")
phi = sym("phi", "1 with FlashAttention (no s^2 score matrices stored), else 0")
d = sym("d", "1 if dropout is used (1-byte masks stored), else 0")
r = sym("r", "recompute mode: 0 none, 1 selective, 2 full")
q_c = sym("q_c", "attention activation coefficient (4 q_dim + 4 kv_dim)/h; 8 for MHA")
m_c = sym("m_c", "MLP activation coefficient x active experts; 16 for a 4h GELU MLP")
x_c = sym("x_c", "the routed experts' part of m_c (6 k f_x / h gated, 4 k f_x / h otherwise, "
          "averaged over the layers; 0 for a dense model)")
iota = sym("iota", "tokens the most-loaded expert-parallel rank receives / the balanced share "
           "(>= 1; Assumptions.moe_imbalance capped by efficiency.moe_imbalance_cap)",
           positive=True)
L_s = sym("L_s", "layers on the pipeline stage")
n_f = sym("n_f", "micro-batches in flight on the stage (1F1B: min(p - i, micro-batches))")
p = sym("p", "pipeline-parallel degree", positive=True)
v = sym("v", "interleaved schedule: model chunks per GPU (1 = plain 1F1B)", positive=True)
lam = sym("lambda_l", "1 on the last pipeline stage (holds the logits), else 0")
beta_l = sym("beta_l", "bytes per logit element held for the loss (bf16 logits + fp32 copy: 6)")
M_ctx = sym("M_ctx", "CUDA context and library workspaces, bytes (assumed)")
M_bkt = sym("M_bkt", "gradient communication buckets, bytes")
P_big = sym("P_big", "parameters of the largest layer")
f_frag = sym("f_frag", "allocator fragmentation, fraction of allocated bytes (assumed)")
W = sym("W", "weights on the GPU, bytes")
G = sym("G", "gradients on the GPU, bytes")
O = sym("O", "optimizer state on the GPU, bytes")
M_act = sym("M_act", "activations on the GPU, bytes")
M_over = sym("M_over", "overheads on the GPU, bytes")
M_layer = sym("M_layer", "activation bytes of one layer for one micro-batch")
B_gpu = sym("B_gpu", "offloaded bytes of one GPU")
B_dev = sym("B_dev", "bytes assigned to one offload device")


def _div(stage: int) -> sp.Expr:
    """ZeRO partitions a state over N_d from this stage on (ZeRO paper section 5)."""
    return sp.Piecewise((N_d, Z >= stage), (1, True))


# ---- model states ------------------------------------------------------------------------------
params_per_gpu = equation(
    "memory.params_per_gpu", A / t + X / (e * t_x) + R, "parameters",
    "Shoeybi et al. 2019 (Megatron-LM) section 3: TP splits every matrix and the vocab "
    "embedding; Lepikhin et al. 2020 (GShard): EP splits the experts; expert tensor "
    "parallelism splits each expert (Megatron-LM --expert-tensor-parallel-size, TP by default: "
    "megatron/core/model_parallel_config.py L506-507 @ d98e8a6; MoE Parallel Folding, arXiv "
    "2504.14960)",
    "Parameters one GPU holds for its pipeline stage, before ZeRO partitioning.")

D_p = sym("D_p", "data-parallel degree: model replicas, dp", positive=True)
P_x = sym("P_x", "expert parameters one GPU holds (X / (e t_x)), part of P")

zero_shard_degree = equation(
    "memory.zero_shard_degree", D_p * c * P / (P + (e * t_x / t - 1) * P_x), "ranks",
    "Megatron-LM megatron/core/distributed/distributed_data_parallel.py L148-151, L283-295 @ "
    "d98e8a6 (dense buffers and the distributed optimizer on the data-parallel group with "
    "context parallel; expert buffers on the expert-data-parallel group, parallel_state.py "
    "L870-883: world / (expert_tp x ep x pp) = dp x cp x t / (e x t_x)); torchtitan "
    "v0.2.2 parallel_dims.py L97-98, L136-138 (fsdp = dp_shard x cp); DeepSpeed engine.py "
    "L2351-2551 (seq_data_parallel_group) and stage_1_and_2.py L768-790 (expert_dp_process_group)",
    "Ranks ZeRO/FSDP effectively partition one GPU's states over: dense parameters over dp x cp, "
    "expert parameters over the expert-data-parallel group dp x cp x t / (e t_x); the "
    "harmonic blend makes b P / N_d = b (P - P_x) / (dp c) + b P_x e t_x / (dp c t) in every "
    "state equation.")

W_res = sym("W_res", "parameter bytes ZeRO-Infinity keeps on the GPU with offload_param "
            "(memory.zero3_offload_param_resident_bytes)")

weights_bytes = equation(
    "memory.weights_bytes", b_w * P / _div(3) * (1 - o_w) + o_w * W_res, "bytes",
    "Rajbhandari et al. 2020 (ZeRO) section 5.3, P_os+g+p; seeds/optimusnic.md section 2.2; "
    "with parameters offloaded, what DeepSpeed keeps resident (memory."
    "zero3_offload_param_resident_bytes)",
    "16-bit weights on the GPU; ZeRO-3 partitions them over the data-parallel group; with "
    "--offload-params only the resident modules and persistent tensors stay.")

a_bf = sym("a_bf", "1 if ZeRO-1 runs DeepSpeed's BF16_Optimizer, which keeps each model-dtype "
           ".grad next to its fp32 gradient buffer (Assumptions.zero1_grad_all_reduce), else 0")

gradients_bytes = equation(
    "memory.gradients_bytes",
    b_g * P / _div(2) * (1 - o_g * (1 - k_g) * sp.Piecewise((1, Z >= 2), (0, True)))
    + a_bf * b_w * P * sp.Piecewise((1, sp.Eq(Z, 1)), (0, True)), "bytes",
    "Rajbhandari et al. 2020 (ZeRO) section 5.2, P_os+g; with offload, DeepSpeed v0.15.0 "
    "deepspeed/runtime/zero/stage_1_and_2.py L1422-1424 (ZeRO-1 reduces only at the "
    "accumulation boundary, so the full 16-bit gradients stay in param.grad on the GPU) and "
    "L1412-1414 (then copies its partition to the host, copy_grads_in_partition L1328-1340); "
    "ZeRO-2/3 move each reduced partition out during backward; Megatron-LM "
    "--optimizer-cpu-offload keeps its gradient buffer on the GPU and copies at step time "
    "(megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py L100-115, L150-179 @ d98e8a6): "
    "k_g = 1; DeepSpeed @ edaa722 deepspeed/runtime/bf16_optimizer.py L175-177 (the fp32 "
    "buffer of every gradient, b_g) and L356-377 (update_hp_grads adds each .grad into it and "
    "keeps it, clear_lp_grads False: the model-dtype copy, b_w)",
    "Gradients on the GPU; ZeRO-2 and -3 partition them; with ZeRO-Offload, ZeRO-2/3 move them "
    "to the host while ZeRO-1 keeps all of them until the step; DeepSpeed's BF16_Optimizer "
    "holds the model-dtype gradients too.")

optimizer_bytes = equation(
    "memory.optimizer_bytes", b_o * P / _div(1) * (1 - o_o * (1 - f_k)), "bytes",
    "Rajbhandari et al. 2020 (ZeRO) section 5.1, P_os; seeds/optimusnic.md section 3.1 (12D/N_p)",
    "Optimizer state (fp32 master, momentum, variance) on the GPU; offloading removes it "
    "except the fraction f_k that SuperOffload keeps for the last buckets.")

optimizer_offloaded_bytes = equation(
    "memory.optimizer_offloaded_bytes", b_o * P / _div(1) * o_o * (1 - f_k), "bytes",
    "seeds/optimusnic.md section 3.1 and 4.1: the 12D/N_p optimizer shard of each GPU",
    "Optimizer state that one GPU moves to its offload target.")

host_gradients_bytes = equation(
    "memory.host_gradients_bytes", b_h * P / _div(1) * o_g, "bytes",
    "Ren et al. 2021 (ZeRO-Offload) section 4.1: fp32 gradients and optimizer state on the CPU; "
    "each rank keeps the fp32 gradients of its own partition (DeepSpeed stage_1_and_2.py "
    "copy_grads_in_partition, also at ZeRO-1)",
    "Gradients one GPU keeps in host memory under ZeRO-Offload (fp32, for the CPU step).")

host_weights_bytes = equation(
    "memory.host_weights_bytes", b_w * P / _div(3) * o_w, "bytes",
    "Rajbhandari et al. 2021 (ZeRO-Infinity) section 5: parameter offload with ZeRO-3",
    "16-bit weights one GPU keeps in host memory (or NVMe) when parameters are offloaded.")

bytes_per_offload_device = equation(
    "memory.bytes_per_offload_device", B_gpu * G_n / K_n,
    "bytes", "seeds/optimusnic.md section 4.1: a SmartNIC paired with each GPU (K_n = G_n)",
    "Offloaded bytes per device when K_n devices in a node share the state of its G_n GPUs.")

spill_bytes = equation(
    "memory.spill_bytes",
    sp.Max(0, B_dev - C), "bytes",
    "seeds/optimusnic.md section 4.1: what does not fit on the card goes to host memory",
    "Bytes that exceed an offload device's capacity and spill to host memory.")

# ---- activations (Korthikanti et al. 2022, arXiv 2205.05198, Table 2, generalised) ----------
_s_loc = s / c
_rep = (8 + 2 * d) / (1 + sigma * (t - 1))  # replicated part: 10 with dropout, shards with SP
_scores = sp.Piecewise((0, r >= 1), ((1 - phi) * (2 + 3 * d) * a * _s_loc * s * b / t, True))
activation_layer_bytes = equation(
    "memory.activation_layer_bytes",
    sp.Piecewise(
        (2 * _s_loc * b * h / (1 + sigma * (t - 1)), sp.Eq(r, 2)),
        (_s_loc * b * h * (_rep + (q_c + m_c + (iota - 1) * x_c) / t) + _scores, True)),
    "bytes",
    "Korthikanti et al. 2022 (arXiv 2205.05198) Table 2; coefficients generalised here: "
    "attention (4 q_dim + 4 kv_dim)/h for GQA, MLP 4f/h (2-matrix) or 6f/h (SwiGLU, fused "
    "kernel keeps gate and up), x (top-k + shared) experts for MoE, the routed experts' part "
    "iota times on the most-loaded expert-parallel rank (its rows are iota times the balanced "
    "share: efficiency.moe_imbalance_cap); dropout masks only with dropout; FlashAttention "
    "drops the score matrices; context parallelism divides s",
    "Activation bytes one transformer layer stores for one micro-batch. With d=1, MHA and a 4h "
    "GELU MLP this is s*b*h*(10 + 24/t + 5*a*s/(h*t)) (Korthikanti's TP row); SP shards the 10; "
    "selective recompute drops the score term; full recompute keeps only the layer input 2sbh.")

l_r = sym("l_r", "norm outputs selective recompute discards (--recompute-modules layernorm), "
          "units of s b h bytes averaged over the layers: 2 n_n per MoE layer (compute."
          "norm_recompute_bytes), sequence-sharded as the replicated term")
x_r = sym("x_r", "expert activation outputs selective recompute discards (--recompute-modules "
          "moe_act), units of s b h bytes averaged over the layers: 2 k f_x / h per MoE layer, "
          "of the 6 f / h (gated) or 4 f / h of its routed experts in m_c, TP-sharded as m_c")
kappa_k = sym("kappa_k", "share of a saved GEMM input's bf16 bytes it keeps: 1, or under an FP8 "
              "recipe 1 - k_te / 2 (fp8.activation_layer_bytes saved the norm and activation "
              "outputs quantized)")
discarded_activation_bytes = equation(
    "memory.discarded_activation_bytes",
    _s_loc * b * h * kappa_k * (l_r / (1 + sigma * (t - 1)) + x_r / t), "bytes",
    "Megatron-LM's output-discarding --recompute-modules (core/transformer/transformer_config.py "
    "L560-582 @ d98e8a6) in Korthikanti et al. 2022 Table 2's composition: layernorm drops the "
    "separate norm's output, for an MoE layer under the Transformer Engine spec the MoE layer's "
    "input (the MLP input 2sbh of the replicated 10, sequence-sharded with SP: transformer_layer"
    ".py L475-527, gpt_layer_specs.py L336); moe_act drops the routed experts' activation "
    "output, the down-projection input 2 k f_x of their 6f/h (gated) or 4f/h in m_c, TP-sharded "
    "(moe/experts.py L1019-1030; with a clamped GLU its second copy too, memory.glu_clamp_copy_"
    "bytes); each is re-computed in the backward",
    "Activation bytes one layer no longer keeps for one micro-batch under selective recompute "
    "with --recompute-modules (subtracted from the layer's activations, FP8's included).")

c_k = sym("c_k", "a clamped GLU's second copy of the fc1 output, units of s b h bytes averaged "
          "over the layers: 4 k f_x / h per MoE layer; 0 without a clamp")
glu_clamp_copy_bytes = equation(
    "memory.glu_clamp_copy_bytes", _s_loc * b * h * c_k / t, "bytes",
    "Megatron-core weighted_bias_quick_geglu_impl (fusions/fused_bias_geglu.py L424-432 @ "
    "d98e8a6): the eager clamps save their unclamped input, the fc1 output, and "
    "WeightedBiasQuickGeGLUFunction saves the clamped torch.cat output (L326-327, L377-380): "
    "two bf16 copies of the 2 f_x values of a routed row where Korthikanti's MLP term counts "
    "one; TP-sharded as the MLP term. Not kept under full recompute, nor under selective "
    "recompute with --recompute-modules moe_act, whose checkpoint keeps the fc1 output only, "
    "nor under torchtitan's op SAC, which saves mm outputs and re-runs element-wise ops "
    "(activation_checkpoint.py L98-123 @ v0.2.2)",
    "Activation bytes a clamped gated expert MLP (GPT-OSS) keeps beyond memory."
    "activation_layer_bytes for one layer and micro-batch.")

i_c = sym("i_c", "op-SAC saved mm outputs TP does not shard, in units of h x 2 bytes, "
          "averaged over the layers: a row-parallel partial sum (Llama's w2: 2; an MoE layer's "
          "shared experts' w2, none without shared experts: 0; MLA's wo) and MLA's replicated "
          "down-projections (wq_a, wkv_a); none under selective_policy 2")
o_c = sym("o_c", "op-SAC kept TP-sharded widths in units of h x 2 bytes: the saved column-"
          "parallel mm outputs (Llama's wq, wv, w1; MLA's wkv_b or wq, and w3) and the SDPA's; "
          "the SDPA's alone under selective_policy 2")
op_sac_layer_bytes = equation(
    "memory.op_sac_layer_bytes",
    _s_loc * b * h * (2 / (1 + sigma * (t - 1)) + i_c
                      + sp.Piecewise((0, t <= 1), (4 * sigma / t, True)) + o_c / t), "bytes",
    "torchtitan selective op activation checkpointing (torchtitan/distributed/"
    "activation_checkpoint.py L98-123, save list models/llama3/infra/parallelize.py L36-52 @ "
    "v0.2.2): the block's input (the checkpoint's, 2 bytes x h, sequence-sharded under SP), "
    "the outputs of the odd aten.mm calls (wq, wv, w1, w2 in a Llama block) and of the SDPA "
    "kernel stay; norms, activations, residual sums and the even mms are recomputed. wq, wv, "
    "w1 and the SDPA are TP-sharded; w2 is row-parallel, so its saved mm output is the whole "
    "h-wide partial sum on every TP rank; under TP with SP the reduce-scatters that follow wo "
    "and the MLP (reduce_scatter_tensor is in the save list; parallelize.py L232, L239: "
    "RowwiseParallel to Shard(1)) keep their sequence-sharded outputs too, 2 x 2 h / t. Were "
    "no weight GEMM saved (selective_policy 2, which no profile sets: torchao's float8 linears "
    "are counted as aten.mm too) only the input, the SDPA and the reduce-scatter outputs "
    "would stay. An MLA block (models/deepseek_v3/model/model.py L275-323) saves wq_a, wkv_a, "
    "wo and the MLP's w3: wq_a and wkv_a are replicated (NoParallel, deepseek_v3/infra/"
    "parallelize.py L271, L292) and wo's output is the partial sum, so these count in i_c",
    "Activation bytes one layer stores for one micro-batch under torchtitan's selective (op) "
    "recomputation (Assumptions.selective_policy = 1).")

k_x = sym("k", "experts each token is routed to (top-k)", positive=True)
w_a = sym("w_a", "1 if op SAC saves the EP all-to-alls' outputs (Assumptions."
          "sac_saves_ep_all_to_all), else 0")
L_moe = sym("L_moe", "MoE layers on the pipeline stage")
op_sac_ep_saved_bytes = equation(
    "memory.op_sac_ep_saved_bytes",
    w_a * sp.Piecewise((0, e <= 1), ((1 + iota) * (s / c) * b * h * b_w * k_x * t_x / t, True))
    * L_moe / L_s, "bytes",
    "torchtitan op SAC save lists with torch.ops._c10d_functional.all_to_all_single (models/"
    "deepseek_v3/infra/parallelize.py L41, llama4 L59, gpt_oss L50 @ v0.2.2; not qwen3): the "
    "MoE dispatch's and combine's outputs (distributed/expert_parallel.py L138-143, L175-180) "
    "stay. The dispatch delivers iota x the balanced top-k copies of the micro-batch's tokens "
    "(step.ep_message_bytes), the combine returns the rank's own k copies of each token",
    "Activation bytes the EP all-to-alls keep under torchtitan's selective (op) recomputation, "
    "per layer of the stage for one micro-batch (L_moe / L_s of the layers are MoE layers).")

stage_activation_bytes = equation(
    "memory.stage_activation_bytes",
    n_f * sp.Piecewise((1, v <= 1), (1 + (p - 1) / (p * v), True)) * L_s
    * M_layer
    + lam * _s_loc * b * V * beta_l / t,
    "bytes",
    "Korthikanti et al. 2022 section 4.2.3: 1F1B keeps p micro-batches on the first stage, the "
    "interleaved schedule multiplies by 1 + (p-1)/(p*v); logits and loss held in fp32 on the "
    "last stage (vocab-parallel cross entropy)",
    "Activation bytes of one pipeline stage: in-flight micro-batches x layers x per-layer bytes, "
    "plus the logits on the last stage.")

B_cap = sym("B_cap", "gradient bucket capacity, bytes (DDP bucket_cap_mb, DeepSpeed reduce_bucket_size)")

M_ddp = sym("M_ddp", "PyTorch DDP bucket_cap_mb, MB (1e6 bytes)")
Z_bk = sym("Z_bk", "DeepSpeed ZeRO reduce_bucket_size, elements")
bucket_capacity_bytes = equation(
    "memory.bucket_capacity_bytes",
    sp.Piecewise((M_ddp * 10**6, sp.Eq(Z, 0)), (Z_bk * b_g, True)), "bytes",
    "PyTorch DDP bucket_cap_mb (torch/nn/parallel/distributed.py, 25 MB) without ZeRO; "
    "DeepSpeed reduce_bucket_size in elements of the gradient dtype (runtime/zero/config.py)",
    "Capacity of one gradient bucket: DDP's in megabytes at ZeRO-0, ZeRO's in elements.")

bucket_bytes = equation(
    "memory.bucket_bytes", sp.Min(B_cap, b_g * P), "bytes",
    "PyTorch DDP (torch/nn/parallel/distributed.py, bucket_cap_mb) and DeepSpeed ZeRO "
    "(reduce_bucket_size) fill buckets with gradients: a bucket never holds more than the "
    "gradients there are",
    "Bytes of the gradient communication bucket: its capacity, at most the gradients it holds.")

overhead_bytes = equation(
    "memory.overhead_bytes",
    M_ctx + M_bkt + sp.Piecewise((4 * P_big / t, Z >= 3), (0, True))
    + f_frag * (W + G + O + M_act),
    "bytes",
    "CUDA context and fragmentation: assumed (named, overridable); buckets: DeepSpeed "
    "reduce_bucket_size default 5e8 elements, PyTorch DDP bucket_cap_mb 25; ZeRO-3 gathered "
    "parameters: DeepSpeed estimate_zero3_model_states_mem_needs, 4 x largest layer",
    "Memory the GPU needs beyond model states and activations.")

gpu_total_bytes = equation(
    "memory.gpu_total_bytes",
    W + G + O + M_act + M_over, "bytes",
    "sum of the parts above",
    "Total bytes one GPU must hold.")

# ---- offload-aware GPU residency (issue 11; the evaluator switches to these) -------------------
P_pers = sym("P_pers", "parameters in tensors below stage3_param_persistence_threshold")
p_mod = sym("p_mod", "parameters of the largest module ZeRO-3 gathers, elements")
B_pf = sym("B_pf", "stage3_prefetch_bucket_size, elements")
M_live = sym("M_live", "stage3_max_live_parameters, elements")

zero3_offload_param_resident_bytes = equation(
    "memory.zero3_offload_param_resident_bytes",
    b_w * (P_pers + sp.Min(M_live, p_mod + sp.Min(B_pf, p_mod))) + b_g * P_pers, "bytes",
    "DeepSpeed v0.15.0 deepspeed/runtime/zero/config.py L205, L211, L228 "
    "(stage3_prefetch_bucket_size 5e7, stage3_param_persistence_threshold 1e5, "
    "stage3_max_live_parameters 1e9) and partitioned_param_coordinator.py L354-359: persistent "
    "small tensors stay whole (with their gradients), the module being computed is gathered and "
    "the next one prefetched up to the bucket, all under the live-parameter cap",
    "Parameter bytes a GPU keeps with ZeRO-Infinity parameter offload (offload_param).")

# ---- ZeRO-Infinity host buffers --------------------------------------------------------------
B_hg = sym("B_hg", "fp32 gradients one GPU keeps in host RAM, bytes")
N_buf = sym("N_buf", "swap buffers per rank (DeepSpeed offload_optimizer nvme buffer_count)")
P_buf = sym("P_buf", "elements per swap buffer (DeepSpeed aio buffer_size)")
b_buf = sym("b_buf", "bytes per swap-buffer element (fp32: 4)")
nvme_host_bytes = equation(
    "memory.nvme_host_bytes", G_n * (B_hg + N_buf * P_buf * b_buf), "bytes",
    "DeepSpeed ZeRO-Infinity optimizer swapping (runtime/swap_tensor/"
    "partitioned_optimizer_swapper.py): buffer_count pinned fp32 buffers of aio buffer_size "
    "elements per rank, beside the rank's fp32 gradients in host RAM",
    "Host RAM per node that NVMe offload needs: each GPU's fp32 gradients and swap buffers.")

# ---- usable capacity -----------------------------------------------------------------------
C_gpu = sym("C_gpu", "GPU memory capacity, bytes")
f_hr = sym("f_h", "GPU memory kept free as a safety margin (assumed, gpu_headroom)")
C_node = sym("C_node", "host RAM of a node, bytes")
f_rsv = sym("f_r", "host RAM reserved for the OS and the framework (assumed, "
            "host_reserved_fraction)")
usable_gpu_bytes = equation(
    "memory.usable_gpu_bytes", C_gpu * (1 - f_hr), "bytes",
    "assumed safety margin (--headroom): allocator fragmentation and framework workspaces "
    "vary by run (PyTorch CUDA caching allocator notes)",
    "GPU memory a layout may fill: the capacity less the headroom.")
usable_host_bytes = equation(
    "memory.usable_host_bytes", C_node * (1 - f_rsv), "bytes",
    "assumed reserve (host_reserved_fraction): the OS, page cache and the framework's pinned "
    "buffers",
    "Host RAM per node offload may fill.")
C_usable = sym("C_u", "usable host RAM of a node, bytes (memory.usable_host_bytes)")
S_cpu = sym("S_n", "CPU sockets per node (superchip: Grace CPUs)", positive=True)
host_bytes_per_socket = equation(
    "memory.host_bytes_per_socket", C_usable / S_cpu, "bytes",
    "seeds/superoffload.md: each GH200 superchip's GPU offloads to its own Grace CPU's LPDDR5X "
    "(NVLink-C2C), so the node's usable host RAM splits evenly over its sockets",
    "Usable host RAM of one CPU socket: the capacity of one superchip offload device.")


M_l0 = sym("M_l0", "activation bytes one layer stores without recomputation for one micro-batch "
           "(memory.activation_layer_bytes at r = 0)")
r_f = sym("r_f", "1 with full recomputation, else 0")

recompute_working_bytes = equation(
    "memory.recompute_working_bytes", r_f * M_l0, "bytes",
    "Korthikanti et al. 2022 (arXiv 2205.05198) section 4.1 and calibration.md section 11 "
    "(recompute semantics): the backward of a checkpointed layer re-runs its forward and holds "
    "all its activations until that layer's backward is done; one layer at a time",
    "Working set that full recomputation adds on top of the stored layer inputs: one layer's "
    "full activations for one micro-batch (0 without full recomputation).")
