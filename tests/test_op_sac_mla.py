"""torchtitan's selective (op) AC on an MLA block: the aten.mm order of torchtitan's DeepSeek-V3
attention (models/deepseek_v3/model/model.py L275 wq_a, L276 wq_b, L288 wkv_a, L295 wkv_b,
L323 wo @ v0.2.2) then the MLP's w1, w3, w2 (models/moe/moe.py L67-68); every second mm re-runs
(distributed/activation_checkpoint.py L108-118). wq_a and wkv_a are NoParallel, replicated
(deepseek_v3/infra/parallelize.py L271, L292).

DeepSeek-V3 (catalog): h 7168, 128 heads, q_lora_rank 1536, kv_lora_rank 512, nope 128, rope 64,
v 128 (d_s = 128 x 192 = 24,576; d_v = 16,384), dense SwiGLU f 18,432 in the first 3 of 61
layers, then 58 MoE layers of 256 experts, top-8 of width 2048, one shared expert of 2048."""

from __future__ import annotations

import pytest

from optimus_calc.evaluate.shapes import op_sac_widths

# the mms of a dense block, (in, out): wq_a 7168x1536 (saved, replicated), wq_b 1536x24576
# (re-run), wkv_a 7168x576 (saved, replicated), wkv_b 512x32768 (re-run), wo 16384x7168 (saved,
# the partial sum), w1 7168x18432 (re-run), w3 (saved, sharded), w2 18432x7168 (re-run).
# Re-run: 37,748,736 + 16,777,216 + 2 x 132,120,576 = 318,767,104 weight elements.
DENSE_W_R = 318_767_104
# an MoE block: the same attention; the shared expert's w1 (re-run, 14,680,064), w3 (saved,
# 2048), w2 (re-run, 14,680,064); every routed expert GEMM and the router gate re-run,
# 7168 x (8 x 3 x 2048 + 256) = 354,156,544: 54,525,952 + 29,360,128 + 354,156,544
MOE_W_R = 438_042_624


def test_mla_block_follows_its_own_mm_order(cat):
    m = cat.get("deepseek-v3", "model")
    assert (m.layers, m.dense_layers, m.moe_layers, m.q_lora_rank, m.kv_lora_rank) == (
        61, 3, 58, 1536, 512)
    i_c, o_c, w_r = op_sac_widths(m, 1)
    # saved, not sharded: wq_a 1536 + wkv_a 576 + wo 7168 = 9,280 -> 2 x 9280 / 7168
    assert i_c == pytest.approx(18_560 / 7168, rel=1e-12)
    # saved, sharded: w3 (18,432 dense, 2048 MoE) and the SDPA output 16,384:
    # (3 x 2 x 34,816 + 58 x 2 x 18,432) / 61 / 7168
    assert o_c == pytest.approx((3 * 69_632 + 58 * 36_864) / 61 / 7168, rel=1e-12)
    assert w_r == pytest.approx((3 * DENSE_W_R + 58 * MOE_W_R) / 61, rel=1e-12)
    # the Llama order (wk, wo, w3 re-run) it had before: h (d_s + d_v + f_rm) =
    # 7168 x (24,576 + 16,384 + (3 x 18,432 + 58 x 51,456) / 61) = 650,796,116, 51% more
    assert 7168 * (24_576 + 16_384 + (3 * 18_432 + 58 * 51_456) / 61) / w_r == pytest.approx(
        1.5059, abs=1e-4)


def test_mla_without_q_lora_rank(cat):
    # DeepSeek-V2-Lite's shape (q_lora_rank 0; torchtitan's deepseek_v3 16B flavour): wq
    # 7168x24576 (saved), wkv_a 7168x576 (re-run), wkv_b 512x32768 (saved), wo 16384x7168
    # (re-run), w1 (saved), w3 7168x18432 (re-run), w2 (saved, the partial sum). Dense layer:
    # re-run 4,128,768 + 117,440,512 + 132,120,576 = 253,689,856; saved sharded wq 24,576 +
    # wkv_b 32,768 + w1 18,432 + SDPA 16,384 = 92,160 -> o_c 2 x 92160 / 7168; w2: i_c 2
    m = cat.get("deepseek-v3", "model")
    dense = m.model_copy(update={"q_lora_rank": 0, "experts": 0, "first_dense_layers": 0})
    assert not dense.is_moe
    assert op_sac_widths(dense, 1) == pytest.approx((2.0, 184_320 / 7168, 253_689_856),
                                                    rel=1e-12)


def test_mla_selective_reruns_what_the_mm_order_says(run):
    # step hardware FLOPs with op AC minus without recomputation = 2 W_r per token and layer
    # (the SDPA output is saved, the core is not re-run): 2 x (3 x 318,767,104 + 58 x
    # 438,042,624) = 52,725,547,008 FLOPs per token x 256 x 4096 tokens
    args = ("step", "deepseek-v3", "--node", "dgx-h100", "--nodes", "32", "--pp", "8", "--ep",
            "32", "--zero", "1", "--framework", "torchtitan", "--global-batch", "256",
            "--seq-len", "4096", "--format", "json")
    sel = run(*args, "--recompute", "selective").json()
    none = run(*args, "--recompute", "none").json()
    assert sel["hardware_flops"] - none["hardware_flops"] == pytest.approx(
        52_725_547_008 * 256 * 4096, rel=1e-9)
