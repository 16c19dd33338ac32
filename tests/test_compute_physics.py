"""Compute physics of issue 19: causal attention on the FLOPs the fused kernel executes, the
attention kernel's efficiency per GPU, the MFU conventions, the routed experts' grouped GEMMs,
MoE routing traffic and the full-recompute working set. Every value is worked by hand below.

Catalog values used: A100 bf16 peak 312 TFLOP/s; H100 SXM 989 TFLOP/s, HBM 3,350 GB/s, GEMM
curve eta_max 0.567, W_half 12.2 GFLOP; attention kernels (causally halved FLOPs) A100 fa2
0.55, H100 cudnn 0.52 (default), fa3 0.55, fa2 0.30. Llama-2-7B: h 4096, 32 heads of 128, 32
layers, 6,738,415,616 parameters. Mixtral-8x7B: h 4096, 32 layers, 8 experts of 14,336, top-2.
"""

import pytest

from optimus_calc.equations import compiled as eq
from optimus_calc.evaluate.efficiency import expert_efficiency, kernel_efficiency, kernel_of

P7 = 6_738_415_616
ATT_7B = 4 * 4096 * 4096   # un-halved attention core per token per layer at s 4096: 67,108,864


def step_json(run, *args):
    r = run("step", *args, "--format", "json")
    assert r.code == 0, r.err
    return r.json()


def test_causal_attention_flops_are_half_for_a_fused_kernel():
    # Llama-2-7B at s 4096: 4 s q_d = 67,108,864 FLOPs per token per layer un-halved;
    # a block-skipping kernel executes 33,554,432, the unfused path all of them
    assert eq.compute__causal_attention_flops(F_af=ATT_7B, kappa_c=1) == 33_554_432
    assert eq.compute__causal_attention_flops(F_af=ATT_7B, kappa_c=0) == ATT_7B


def test_step_times_the_halved_attention_and_keeps_mfu_unhalved(run):
    # constant GEMM efficiency 0.6 (--assume): the fused kernel saves the executed half of the
    # attention core, forward + backward (x3): 3 x 4096 tokens x 32 layers x 33,554,432
    # / (312e12 x 0.6) = 0.070509 s on one A100 (DP 8, global batch 8: 4096 tokens per GPU)
    common = ("llama-2-7b", "--seq-len", 4096, "--global-batch", 8,
              "--assume", "gemm_efficiency=0.6")
    fused = step_json(run, *common)
    unfused = step_json(run, *common, "--no-flash-attn")
    assert unfused["compute_s"] - fused["compute_s"] == pytest.approx(
        3 * 4096 * 32 * 33_554_432 / (312e12 * 0.6), rel=1e-9)
    # model FLOPs (MFU) keep the un-halved attention in both
    assert fused["model_flops"] == unfused["model_flops"]


def test_six_n_convention(run):
    # 6 N tokens: 6 x 6,738,415,616 x (8 x 4096) = 1.32485e15 FLOPs; MFU (6N) / MFU = the ratio
    # of the two FLOP counts (same step time and peak)
    d = step_json(run, "llama-2-7b", "--seq-len", 4096, "--global-batch", 8)
    assert d["model_flops_6n"] == pytest.approx(6 * P7 * 8 * 4096, rel=1e-12)
    assert d["mfu_6n"] / d["mfu"] == pytest.approx(d["model_flops_6n"] / d["model_flops"])
    assert d["mfu_6n"] < d["mfu"]  # 6N leaves out the attention core
    assert d["mfu_convention"].startswith("model FLOPs")


def test_causal_mfu_halves_the_attention_core_as_megatron_logs(run):
    # llama-2-7b: 32 layers, 32 heads x 128 = 4096 score and value width. At s = 4096 the
    # attention core is 2 s (d_s + d_v) = 2 x 4096 x 8192 = 67,108,864 FLOPs per token and
    # layer forward; Megatron-LM (training.py L1160-1170 @ d98e8a6) halves it for the causal
    # mask: 3 x 32 layers x 8 x 4096 tokens x 67,108,864 / 2 = 1.0555e14 FLOPs fewer.
    d = step_json(run, "llama-2-7b", "--seq-len", 4096, "--global-batch", 8)
    assert d["model_flops"] - d["model_flops_causal"] == pytest.approx(
        3 * 32 * 8 * 4096 * 67_108_864 / 2, rel=1e-12)
    assert d["mfu_causal"] / d["mfu"] == pytest.approx(
        d["model_flops_causal"] / d["model_flops"], rel=1e-12)
    assert "halved" in d["mfu_causal_convention"]


def test_six_n_days_at_the_published_mfu(run):
    d = step_json(run, "llama-2-7b", "--seq-len", 4096, "--global-batch", 8, "--tokens", "1T")
    # a planner's 6 N D / (peak x GPUs x MFU) equals train_days x 6N / model FLOPs
    assert d["train_days_6n_at_mfu"] == pytest.approx(
        d["train_days"] * d["model_flops_6n"] / d["model_flops"], rel=1e-12)


def test_kernel_defaults_and_efficiencies(cat):
    a100, h100, b200 = (cat.get(n, "gpu") for n in ("a100-80gb", "h100-sxm", "b200"))
    # end-to-end (training) fits of the catalog (validate_loso.py): A100 fa2 0.43, H100 cudnn
    # 0.26 (the Megatron / NeMo rows) and fa2 0.22 (the torchtitan rows, which ran PyTorch's
    # SDPA flash backend), fa3 at the cudnn fit x its forward + backward ratio in the FA3 paper
    # (8k, head dim 128; backward 2.5x the forward's FLOPs): FA3 3.5 / (1/602 + 2.5/559) =
    # 570.6, cuDNN 3.5 / (1/529 + 2.5/518) = 521.1; 0.26 x 570.6 / 521.1 = 0.2847 -> 0.285
    assert kernel_of(a100) == "fa2" and kernel_efficiency(a100) == 0.43
    assert kernel_of(h100) == "cudnn" and kernel_efficiency(h100) == 0.26
    assert kernel_efficiency(h100, "fa3") == 0.285 and kernel_efficiency(h100, "fa2") == 0.22
    assert kernel_of(b200) == "cudnn"


def test_kernel_efficiency_never_above_the_gemm_ceiling(cat):
    # issue 32 item 1: an attention kernel's executed-FLOP rate stays at or under the GEMM
    # curve's ceiling; a catalog value of 0.9 on a GPU whose gemm_eta_max is 0.59 gives 0.59
    h100 = cat.get("h100-sxm", "gpu")
    fast = h100.model_copy(update={"flash_attention_eta": 0.9})
    assert kernel_efficiency(fast) == 0.59 == fast.gemm_eta_max


@pytest.mark.parametrize("node", ["dgx-a100", "dgx-b200"])
def test_fa3_refused_off_hopper(run, node):
    r = run("step", "llama-2-7b", "--node", node, "--attention-kernel", "fa3")
    assert r.code == 2 and "Hopper only" in r.err


def test_kernel_without_flash_refused(run):
    r = run("step", "llama-2-7b", "--attention-kernel", "fa2", "--no-flash-attn")
    assert r.code == 2 and "--no-flash-attn" in r.err


def test_attention_kernel_changes_the_attention_time(run):
    # H100, same layout: the attention core's executed FLOPs at 0.22 (fa2) vs 0.285 (fa3);
    # llama-2-7b s 4096, 8 GPUs DP 8, global batch 8: attention share of the compute time
    # grows as the kernel slows, so fa2 > cudnn (0.26) > fa3
    args = ("llama-2-7b", "--node", "dgx-h100", "--seq-len", 4096, "--global-batch", 8)
    t = {k: step_json(run, *args, "--attention-kernel", k)["compute_s"]
         for k in ("fa2", "cudnn", "fa3")}
    assert t["fa2"] > t["cudnn"] > t["fa3"]
    # the difference fa2 - fa3 is the executed attention FLOPs at each kernel's efficiency:
    # 3 x 4096 x 32 x 33,554,432 = 1.31941e13 FLOPs; / 989e12 x (1/0.22 - 1/0.285)
    # = 0.013830 s
    assert t["fa2"] - t["fa3"] == pytest.approx(
        3 * 4096 * 32 * 33_554_432 / 989e12 * (1 / 0.22 - 1 / 0.285), rel=1e-6)


def test_tokens_per_expert_and_expert_gemm(cat):
    # Mixtral, s 4096, micro-batch 1, EP 8, 8 experts, top-2: 4096 x 2 x 8 / 8 = 8,192 tokens per
    # expert; its GEMM at TP 2: 2 x 8192 x 4096 x 14336 / 2 = 481,036,337,152 FLOPs; on the
    # H100 curve 0.59 x 481.04 / (481.04 + 11.5) = 0.57622
    m = eq.efficiency__tokens_per_expert(E=8, e_p=8, k=2, t=2, t_x=2, tau_mb=4096)
    assert m == 8192
    w = eq.efficiency__expert_gemm_flops(M_x=m, f_x=14336, h=4096, t_x=2)
    assert w == 481_036_337_152
    h100 = cat.get("h100-sxm", "gpu")
    assert float(expert_efficiency(h100, 4096, 2, 4096, 2, 8, 8, 14336,
                                   streams=1)) == pytest.approx(
        0.59 * 481.036337152 / (481.036337152 + 11.5), rel=1e-9)
    # without EP each expert sees 4096 x 2 / 8 = 1,024 tokens: a GEMM 8x smaller, less efficient
    # when each expert is its own GEMM (streams=1; concurrent GEMMs: tests/test_moe_physics.py)
    assert float(expert_efficiency(h100, 4096, 2, 4096, 2, 8, 1, 14336,
                                   streams=1)) == pytest.approx(
        0.59 * 60.129542144 / (60.129542144 + 11.5), rel=1e-9)


def test_routing_bytes_by_hand():
    # permute + unpermute, each a read and a write of 4096 tokens x 2 copies x 4096 x 2 bytes:
    # 4 x 4096 x 2 x 4096 x 2 = 268,435,456 bytes; router: 3 x 4096 x 8 logits x 4 bytes = 393,216
    assert eq.compute__moe_permute_bytes(b_a=2, h=4096, k=2, tau_mb=4096, t=1,
                                         g_p=1) == 268_435_456
    assert eq.compute__moe_router_bytes(E=8, b_r=4, tau_mb=4096, t=1, rho_r=0) == 393_216


def test_routing_bytes_count_the_sequence_parallel_shard():
    # TP 2: each GPU's MoE layer takes its sequence-parallel shard, 4096 / 2 = 2048 tokens
    # (Megatron-core moe_layer.py L636-640, token_dispatcher.py L57 @ d98e8a6). Megatron's
    # alltoall dispatcher permutes that shard's rows before the all-to-all and unpermutes them
    # after (L665-675, L889-895; g_p = 1 with one local expert): 268,435,456 / 2 =
    # 134,217,728. A dispatcher that permutes the rows it receives (DeepEP, HybridEP,
    # torchtitan) at expert TP 2 has the other shard's rows too (g_p = 2): 268,435,456; the
    # alltoall dispatcher with several local experts also sorts those (g_p = 1 + 2 = 3):
    # 402,653,184.
    assert eq.compute__moe_permute_bytes(b_a=2, h=4096, k=2, tau_mb=4096, t=2,
                                         g_p=1) == 134_217_728
    assert eq.compute__moe_permute_bytes(b_a=2, h=4096, k=2, tau_mb=4096, t=2,
                                         g_p=2) == 268_435_456
    assert eq.compute__moe_permute_bytes(b_a=2, h=4096, k=2, tau_mb=4096, t=2,
                                         g_p=3) == 402_653_184
    # the router reads the shard's logits, 393,216 / 2 = 196,608, or, run on the TP-replicated
    # tokens (torchtitan, DeepSpeed: rho_r = 1), all 393,216
    assert eq.compute__moe_router_bytes(E=8, b_r=4, tau_mb=4096, t=2, rho_r=0) == 196_608
    assert eq.compute__moe_router_bytes(E=8, b_r=4, tau_mb=4096, t=2, rho_r=1) == 393_216
    # GPT-OSS's eager bias at TP 2, expert TP 1: the expert MLP's rows after the expert-TP
    # gather (L741-750), 660,602,880 / 2 = 330,301,440; its clamp at TP 2, expert TP 2: the
    # rows of both shards, each 2 f_x / 2 wide: 5.75 x 4096 x 4 x (2 x 2880) x 2 / 2 =
    # 542,638,080 (half of 1,085,276,160)
    assert eq.compute__moe_expert_bias_bytes(b_a=2, h=2880, k=4, n_b=14, tau_mb=4096, t=2,
                                             t_x=1) == 330_301_440
    assert eq.compute__moe_act_clamp_bytes(b_a=2, f_x=2880, k=4, n_c=11.5, tau_mb=4096,
                                           t=2) == 542_638_080


# qwen3-30b-a3b (48 MoE layers, h 2048, top-8 of 128 experts) on 2 x DGX H100, TP 2, EP 8,
# DP 8, one 4096-token micro-batch per GPU (global batch 8)
_Q30_TP2 = ("qwen3-30b-a3b", "--node", "dgx-h100", "--nodes", 2, "--tp", 2, "--ep", 8,
            "--seq-len", 4096, "--micro-batch", 1, "--global-batch", 8)


def test_permuting_the_received_rows_reaches_the_step(run):
    # expert TP = TP = 2, 128 / 8 = 16 local experts: the alltoall dispatcher permutes its own
    # shard (1 row pass) and sorts the received rows of both expert-TP ranks by local expert
    # (token_dispatcher.py L757-789, L803-822: 2 more), g_p = 3; a dispatcher that permutes the
    # received rows instead moves them once, g_p = 2: 4 x 4096 x 8 x 2048 x 2 / 2 =
    # 268,435,456 bytes less per MoE layer and pass; x 48 layers x 2 passes / (3350e9 x 0.9)
    # = 8.5474e-3 s of element-wise time
    own = step_json(run, *_Q30_TP2)
    rec = step_json(run, *_Q30_TP2, "--assume", "moe_permute_received_rows=1")
    assert own["elementwise_s"] - rec["elementwise_s"] == pytest.approx(
        2 * 48 * 268_435_456 / (3350e9 * 0.9), rel=1e-6)
    # DeepEP permutes what it receives whatever the switch says: the same bytes
    deepep = step_json(run, *_Q30_TP2, "--moe-dispatcher", "deepep")
    assert deepep["elementwise_s"] == pytest.approx(rec["elementwise_s"], rel=1e-9)
    # one local expert (Mixtral, 8 experts on EP 8): no sort, the alltoall dispatcher's own
    # shard only, g_p = 1; the received rows at expert TP 2, g_p = 2: 4 x 4096 x 2 x 4096 x 2
    # / 2 = 134,217,728 bytes more per MoE layer and pass, 32 layers x 2 / (3350e9 x 0.9) =
    # 2.8494e-3 s
    mix = ("mixtral-8x7b", "--node", "dgx-h100", "--nodes", 2, "--tp", 2, "--ep", 8,
           "--seq-len", 4096, "--micro-batch", 1, "--global-batch", 8)
    own = step_json(run, *mix)
    rec = step_json(run, *mix, "--assume", "moe_permute_received_rows=1")
    assert rec["elementwise_s"] - own["elementwise_s"] == pytest.approx(
        2 * 32 * 134_217_728 / (3350e9 * 0.9), rel=1e-6)


def test_a_router_on_the_replicated_tokens_reaches_the_step(run):
    # the router on all 4096 tokens (rho_r = 1) instead of the 2048 of the shard: 3 x 4096 x
    # 128 x 4 / 2 = 3,145,728 bytes more per MoE layer and pass; x 48 x 2 / (3350e9 x 0.9) =
    # 1.00162e-4 s. torchtitan's profile sets both switches (its router on the replicated
    # input, its reorderer on the received rows): the same sum as the two typed
    base = step_json(run, *_Q30_TP2)
    rep = step_json(run, *_Q30_TP2, "--assume", "moe_router_tp_replicated=1")
    assert rep["elementwise_s"] - base["elementwise_s"] == pytest.approx(
        2 * 48 * 3_145_728 / (3350e9 * 0.9), rel=1e-6)
    tt = run("step", *_Q30_TP2, "--framework", "torchtitan", "--format", "json").json()
    applied = tt["physics_profile"]["applied"]
    assert (applied["moe_router_tp_replicated"], applied["moe_permute_received_rows"]) == (1, 1)


def test_megatron_refuses_moe_with_tp_and_no_sequence_parallelism(run):
    # Megatron-core raises in training for an MoE layer with TP > 1 and SP off (moe_layer.py
    # L636-640 @ d98e8a6); the routing bytes count the SP shard on that ground
    r = run("step", *_Q30_TP2, "--no-sp", "--framework", "megatron")
    assert r.code == 2 and "MoE model with TP > 1 trains only with sequence parallelism" in r.err
    assert run("step", *_Q30_TP2, "--framework", "megatron").code == 0


def test_router_bytes_reach_the_step(run):
    # Mixtral on 4 x DGX H100, TP 2, EP 8, DP 16, global batch 16: one micro-batch per step;
    # each GPU's router reads its sequence-parallel shard, 4096 / 2 = 2048 tokens: fp64 router
    # logits (8 bytes) instead of fp32 (4) add 3 x 2048 x 8 x 4 = 196,608 bytes per MoE layer
    # and pass; 32 MoE layers, one forward and one backward pass:
    # 2 x 32 x 196,608 / (3350e9 x 0.9) = 4.1734e-6 s of element-wise time
    args = ("mixtral-8x7b", "--node", "dgx-h100", "--nodes", 4, "--tp", 2, "--ep", 8,
            "--seq-len", 4096, "--global-batch", 16)
    d4 = step_json(run, *args)
    d8 = step_json(run, *args, "--assume", "moe_router_logit_bytes=8")
    assert d8["elementwise_s"] - d4["elementwise_s"] == pytest.approx(
        2 * 32 * 196_608 / (3350e9 * 0.9), rel=1e-6)


def test_full_recompute_working_set(run):
    # full recompute adds one layer's full activations for one micro-batch
    # (memory.recompute_working_bytes): the difference from the stored checkpoints alone is
    # memory.activation_layer_bytes at r = 0
    args = ("llama-2-7b", "--seq-len", 4096, "--micro-batch", 2, "--recompute", "full",
            "--format", "json")
    r = run("memory", *args)
    assert r.code == 0, r.err
    d = r.json()["stages"][0]
    # Llama-2-7B, s 4096, b 2, t 1, no dropout, FlashAttention: 32 layers x 2 s b h checkpoints
    # = 32 x 2 x 4096 x 2 x 4096 = 2,147,483,648 bytes; logits 4096 x 2 x 32000 x 6 =
    # 1,572,864,000; one layer's working set s b h (8 + q_c + m_c) = 33,554,432 x (8 + 8 +
    # 16.125) = 1,077,936,128 (q_c 8 for MHA, m_c = 6 x 11008 / 4096 for SwiGLU; 8 sbh of
    # layer inputs, norm outputs and residuals without dropout masks)
    layer0 = float(eq.memory__activation_layer_bytes(
        a=32, b=2, c=1, d=0, h=4096, m_c=6 * 11008 / 4096, phi=1, q_c=8, r=0, s=4096,
        sigma=0, t=1, iota=1, x_c=0))
    assert layer0 == 1_077_936_128
    assert d["activations_bytes"] == 2_147_483_648 + 1_572_864_000 + 1_077_936_128


def test_expert_bias_bytes_by_hand():
    # GPT-OSS's eager fc2 bias add (Megatron-core experts.py _apply_bias): 14 passes of the
    # tau_mb x k x h bf16 rows over a forward and a backward, 7 a pass: 7 x 4096 x 4 x 2880 x 2
    # = 660,602,880 bytes per MoE layer and pass
    assert eq.compute__moe_expert_bias_bytes(b_a=2, h=2880, k=4, n_b=14, tau_mb=4096, t=1,
                                             t_x=1) == 660_602_880


def test_expert_bias_reaches_the_step_outside_a_cuda_graph(run):
    # gpt-oss-20b (expert biases, clamped GLU) on one DGX H100, EP 8, one 4096-token
    # micro-batch per GPU: the bias 7 x 4096 x 4 x 2880 x 2 = 660,602,880 bytes a pass, the
    # clamp 5.75 x 4096 x 4 x (2 x 2880) x 2 = 1,085,276,160 (compute.moe_act_clamp_bytes); 24 MoE
    # layers x 2 passes x their sum / (3350e9 x 0.9) = 0.0277951 s of element-wise time; a
    # full-iteration CUDA graph cannot hold the eager ops (experts.py @ d98e8a6 L357-361): the
    # Megatron profile's fused grouped MLP has none of them
    args = ("gpt-oss-20b", "--node", "dgx-h100", "--nodes", 1, "--ep", 8, "--seq-len", 4096,
            "--global-batch", 8, "--framework", "megatron", "--moe-dispatcher", "hybridep")
    eager = step_json(run, *args)
    graph = step_json(run, *args, "--cuda-graph-impl", "full_iteration")
    assert eager["elementwise_s"] - graph["elementwise_s"] == pytest.approx(
        2 * 24 * (660_602_880 + 1_085_276_160) / (3350e9 * 0.9), rel=1e-6)


def test_glu_clamp_passes_are_a_named_assumption_of_clamped_models_only(run):
    # the same gpt-oss-20b layout: --assume moe_act_clamp_passes=0 removes 2 x 24 x
    # 1,085,276,160 B / (3350e9 x 0.9) = 0.0172780 s; Qwen3-30B-A3B has no clamp, so the
    # assumption moves nothing there
    args = ("--node", "dgx-h100", "--nodes", 1, "--ep", 8, "--seq-len", 4096,
            "--global-batch", 8)
    on = step_json(run, "gpt-oss-20b", *args)
    off = step_json(run, "gpt-oss-20b", *args, "--assume", "moe_act_clamp_passes=0")
    assert on["elementwise_s"] - off["elementwise_s"] == pytest.approx(
        2 * 24 * 1_085_276_160 / (3350e9 * 0.9), rel=1e-6)
    q = step_json(run, "qwen3-30b-a3b", *args)
    q0 = step_json(run, "qwen3-30b-a3b", *args, "--assume", "moe_act_clamp_passes=0")
    assert q["elementwise_s"] == q0["elementwise_s"]


def test_expert_bias_passes_are_a_named_assumption_the_megatron_graph_sets(run):
    # the same gpt-oss-20b layout: framework-neutral physics reads no launch flag, so its
    # expert-bias time stays under --cuda-graph-impl (2 x 24 x 660,602,880 B / (3350e9 x 0.9)
    # = 0.0105171 s); --assume moe_expert_bias_passes=0 removes exactly that; the Megatron-LM
    # profile sets 0 under a full-iteration graph (its fused grouped MLP adds the bias)
    args = ("gpt-oss-20b", "--node", "dgx-h100", "--nodes", 1, "--ep", 8, "--seq-len", 4096,
            "--global-batch", 8, "--moe-dispatcher", "hybridep")
    bias = 2 * 24 * 660_602_880 / (3350e9 * 0.9)
    neutral = step_json(run, *args)
    graphed = step_json(run, *args, "--cuda-graph-impl", "full_iteration")
    off = step_json(run, *args, "--assume", "moe_expert_bias_passes=0")
    assert graphed["elementwise_s"] == pytest.approx(neutral["elementwise_s"], rel=1e-12)
    assert neutral["elementwise_s"] - off["elementwise_s"] == pytest.approx(bias, rel=1e-6)
    meg = step_json(run, *args, "--framework", "megatron", "--cuda-graph-impl", "full_iteration")
    assert meg["physics_profile"]["applied"]["moe_expert_bias_passes"] == 0.0


def test_gpt_oss_import_and_catalog_clamp_the_glu():
    # GptOssExperts clamps both halves at swiglu_limit (7.0 by default), Megatron-Bridge's
    # provider sets activation_func_clamp_value 7.0; a Llama config clamps nothing
    from pathlib import Path
    from optimus_calc.catalog import load
    from optimus_calc.hf_import import load_hf_config
    data = Path(__file__).parent / "data" / "hf"
    assert load_hf_config(data / "gpt_oss" / "config.json").glu_clamp is True
    assert load_hf_config(data / "llama" / "config.json").glu_clamp is False
    cat = load()
    assert cat.get("gpt-oss-120b", "model").glu_clamp and cat.get("gpt-oss-20b", "model").glu_clamp
    assert not cat.get("qwen3-30b-a3b", "model").glu_clamp
