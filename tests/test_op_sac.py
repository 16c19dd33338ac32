"""torchtitan's selective (op) activation checkpointing and its loss's logits (issue 32: each
framework's own physics). Sources: torchtitan/distributed/activation_checkpoint.py L98-123, the
save list models/llama3/infra/parallelize.py L36-52, components/loss.py L20-26 and train.py
L532-542 @ v0.2.2.

Llama 3 8B (catalog): h 4096, 32 heads x 128 (q_dim 4096), 8 KV heads (kv 1024), SwiGLU f 14336,
32 layers, vocabulary 128,256."""

from __future__ import annotations

import pytest

from optimus_calc.equations.recording import eq
from optimus_calc.evaluate.shapes import op_sac_widths

STEP = ("llama-3-8b", "--node", "grand-teton-h100", "--nodes", "1", "--zero", "3",
        "--framework", "torchtitan", "--micro-batch", "2", "--global-batch", "16",
        "--seq-len", "8192", "--format", "json")


def test_llama_block_widths(cat):
    # saved: wq 4096 + wv 1024 + SDPA 4096 + w1 14336 = 23,552 -> o_c = 2 x 23552 / 4096 = 11.5;
    # w2's h-wide output: i_c = 2 (the block input is in the equation); re-run: wk (1024), wo
    # (4096), w3 (14336)
    m = cat.get("llama-3-8b", "model")
    # W_r = h (kv + d_v + f) = 4096 x 19,456 = 79,691,776 weight elements
    assert op_sac_widths(m, 1) == pytest.approx((2.0, 11.5, 79_691_776))
    # no weight GEMM saved (policy 2): no w2 output, the SDPA output (2 x 4096 / 4096 = 2)
    assert op_sac_widths(m, 2)[:2] == pytest.approx((0.0, 2.0))
    # 2 W_r = 2 x 4096 x 19,456 = 159,383,552 FLOPs per token and layer
    assert float(eq.step__op_sac_recompute_flops_per_token(W_r=79_691_776)) == 159_383_552


def test_moe_block_widths(cat):
    # Qwen3-30B-A3B (catalog): h 2048, 32 heads x 128 (q_dim 4096), 4 KV heads (kv 512), 48
    # MoE layers, 128 experts, top-8 of width 768, SwiGLU, no shared expert. The router gate's
    # mm is forced to re-run and not counted (job_config.py L661-673: the default
    # per_op_sac_force_recompute_mm_shapes_by_fqns = ["moe.router.gate"]; activation_checkpoint
    # .py L110-113). Saved: wq 4096 + wv 512 + SDPA 4096 = 8,704 -> o_c = 2 x 8704 / 2048 = 8.5,
    # and no h-wide mm output (no w2 mm: the experts run torch._grouped_mm): i_c = 0; re-run: every routed expert GEMM (8 x 3 x 768 = 18,432) and
    # the router (128) besides wk (512) and wo (4096): W_r = 2048 x 23,168 = 47,448,064
    m = cat.get("qwen3-30b-a3b", "model")
    assert (m.moe_layers, m.experts, m.top_k, m.expert_ffn) == (48, 128, 8, 768)
    assert op_sac_widths(m, 1) == pytest.approx((0.0, 8.5, 47_448_064))
    # with one shared expert of width 768 (torchtitan's FeedForward w1, w3, w2 after the
    # routed experts): w1 is the 5th counted mm (saved, + 768 -> o_c = 2 x 9472 / 2048 = 9.25),
    # w3 the 6th (re-run, + 768 -> 2048 x 23,936 = 49,020,928), w2 the 7th (saved, h wide:
    # i_c = 2)
    shared = m.model_copy(update={"shared_experts": 1})
    assert shared.shared_ffn == 768
    assert op_sac_widths(shared, 1) == pytest.approx((2.0, 9.25, 49_020_928))


def test_op_sac_bytes_under_tp_and_sp():
    # Llama 3 8B block, s 8192, b 2 (s b h = 67,108,864), TP 8 with SP (torchtitan's TP plan:
    # wo and w2 RowwiseParallel to Shard(1), parallelize.py L232, L239): the block input
    # sharded 2/8 = 0.25; w2's saved mm output is the whole partial sum, 2; the reduce-scatters
    # after wo and w2 keep their sharded outputs, 4/8 = 0.5; the column-parallel outputs
    # 11.5/8 = 1.4375: 4.1875 s b h = 281,018,368 B
    args = dict(b=2, c=1, h=4096, i_c=2.0, o_c=11.5, s=8192, sigma=1)
    assert float(eq.memory__op_sac_layer_bytes(t=8, **args)) == pytest.approx(281_018_368)
    # TP 1: the input and w2's output, 2 + 2, no reduce-scatter: 15.5 s b h = 1,040,187,392 B
    assert float(eq.memory__op_sac_layer_bytes(t=1, **args)) == pytest.approx(1_040_187_392)


def test_torchtitan_memory_keeps_the_op_sac_set_and_its_loss_logits(run):
    # per layer and micro-batch: s b h (i_c + o_c) = 8192 x 2 x 4096 x 15.5 = 1,040,187,392 B;
    # x 32 layers = 33,285,996,544; the loss holds 10 bytes per logit (bf16 pred 2, its fp32
    # copy 4, log_softmax's fp32 output 4): 8192 x 2 x 128,256 x 10 = 21,013,463,040
    d = run("memory", *STEP, "--recompute", "selective").json()
    assert d["per_gpu"]["activations_bytes"] == pytest.approx(33_285_996_544 + 21_013_463_040,
                                                              rel=1e-9)


def test_torchtitan_float8_keeps_the_bf16_op_sac_set(run):
    # torchao's Float8Linear calls torch.mm on its Float8 tensor subclasses (float8_linear.py,
    # matmul_with_hp_or_float8_args); SAC's dispatch mode sees that aten.mm before the subclass
    # lowers it to torch._scaled_mm, so it counts and saves the same outputs as in BF16: the
    # activations above, 33,285,996,544 + 21,013,463,040 B. (Policy 2, every GEMM re-run, would
    # keep s b h (2 + 2) per layer, 8,589,934,592 B in all: torchtitan's Table 1 Float8 run
    # peaks at 76.8 GiB against 82.4 without, not ~25 GB lower.)
    d = run("memory", *STEP, "--recompute", "selective", "--precision", "fp8",
            "--fp8-recipe", "torchao").json()
    assert d["per_gpu"]["activations_bytes"] == pytest.approx(33_285_996_544 + 21_013_463_040,
                                                              rel=1e-9)


def test_torchtitan_selective_reruns_gemms_not_the_attention_core(run):
    # Korthikanti's selective re-runs the core, 2 s (d_s + d_v) = 2 x 8192 x 8192 = 134,217,728
    # FLOPs per token and layer; op AC re-runs 159,383,552 of weight GEMMs instead: + 25,165,824
    # x 32 layers x 131,072 tokens (16 x 8192) = 1.05553e14 hardware FLOPs per step
    tt = run("step", *STEP, "--recompute", "selective").json()
    ko = run("step", *STEP, "--recompute", "selective",
                 "--assume", "selective_policy=0").json()
    assert tt["hardware_flops"] - ko["hardware_flops"] == pytest.approx(
        25_165_824 * 32 * 131_072, rel=1e-9)


def test_selective_policy_is_a_policy(run):
    r = run("step", *STEP[:-2], "--assume", "selective_policy=0.5")
    assert r.code == 2 and r.err.strip() == (
        "error: --assume selective_policy: must be 0, 1 or 2 (a policy)")


def test_op_sac_reruns_the_routed_experts_at_their_own_efficiency():
    # the routed experts' torch._grouped_mm is outside the save list: op AC (policy 1) re-runs
    # them as full recomputation does, so compute.moe_expert_backward_flops counts 2 + 1
    # forwards and times them at the grouped-GEMM efficiency; Korthikanti's selective (policy
    # 0) leaves them alone
    from optimus_calc.evaluate.batch import R_FULL, R_NONE, R_SELECTIVE
    from optimus_calc.evaluate.work import experts_recomputed
    rc = [R_NONE, R_SELECTIVE, R_FULL]
    assert experts_recomputed(rc, 1).tolist() == [False, True, True]
    assert experts_recomputed(rc, 0).tolist() == [False, False, True]
    assert float(eq.compute__moe_expert_backward_flops(F_xf=1e12, r_x=True)) == 3e12
