"""--fp8-param-gather (Megatron-LM megatron/training/arguments.py L2016-2018 @ d98e8a6; on in
NVIDIA's FP8 recipes, Megatron-Bridge training/mixed_precision.py L218, L251, L289 @ v0.3.0):
the GEMM weights are Transformer Engine FP8 parameters, with no 16-bit copy, and the
distributed optimizer all-gathers them in FP8 (fp8.primary_weight_saving_bytes,
fp8.gather_bytes_per_param)."""

import pytest

from optimus_calc.equations.compiled import fp8 as f8

# Llama 3 8B's GEMM weights per layer: attention q 4096 x 4096, k and v 4096 x 1024 each, o
# 4096 x 4096 = 41,943,040; SwiGLU MLP 3 x 4096 x 14,336 = 176,160,768; x 32 layers
P_G = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336)  # 6,979,321,856
LLAMA = ("memory", "llama-3-8b", "--node", "dgx-h100", "--nodes", "1", "--tp", "1",
         "--precision", "fp8", "--framework", "megatron", "--seq-len", "4096",
         "--global-batch", "64", "--format", "json")


def _weights(run, *extra):
    return run(*LLAMA, *extra).json()["per_gpu"]["weights_bytes"]


def test_the_16_bit_copy_of_the_gemm_weights_is_not_kept(run):
    # distributed optimizer (ZeRO-1): 2 bytes x P_G = 13,958,643,712 bytes fewer
    on, off = _weights(run, "--zero", "1"), _weights(run, "--zero", "1", "--no-fp8-param-gather")
    assert off - on == pytest.approx(2 * P_G, rel=1e-9)
    # Megatron-FSDP (ZeRO-3) over 8 ranks: the shards are FP8, 1 byte fewer per GEMM weight
    z3 = _weights(run, "--zero", "3"), _weights(run, "--zero", "3", "--no-fp8-param-gather")
    assert z3[1] - z3[0] == pytest.approx((2 - 1) * P_G / 8, rel=1e-9)


def test_only_where_megatron_runs_fp8_parameters(run):
    # DDP (ZeRO 0): refused by Megatron-LM without a sharded optimizer (arguments.py
    # L1095-1097), so nothing changes; nor under framework-neutral physics, nor in bf16
    assert _weights(run, "--zero", "0") == _weights(run, "--zero", "0", "--no-fp8-param-gather")
    neutral = [a for a in LLAMA if a not in ("--framework", "megatron")]
    assert (run(*neutral, "--zero", "1").json()["per_gpu"]["weights_bytes"]
            == run(*neutral, "--zero", "1", "--no-fp8-param-gather").json()["per_gpu"][
                "weights_bytes"])
    bf16 = [a if a != "fp8" else "bf16" for a in LLAMA]
    assert (run(*bf16, "--zero", "1").json()["per_gpu"]["weights_bytes"]
            == 2 * 8_030_261_248)  # Llama 3 8B's parameters in bf16


def test_the_equations_by_hand():
    # no 16-bit copy: b_w x P_g with a sharded optimizer, (b_w - b_8) x P_g / N_d under
    # ZeRO-3, nothing at ZeRO 0 or with the optimizer offloaded
    kw = dict(N_d=8, P_g=1e9, b_8=1.0, b_w=2.0, k_pw=1.0, o_x=0.0)
    assert f8.fp8__primary_weight_saving_bytes(Z=1, **kw) == 2e9
    assert f8.fp8__primary_weight_saving_bytes(Z=3, **kw) == 1.25e8
    assert f8.fp8__primary_weight_saving_bytes(Z=0, **kw) == 0
    assert f8.fp8__primary_weight_saving_bytes(Z=1, **{**kw, "o_x": 1.0}) == 0
    # the all-gather: GEMM weights (87% of the parameters) in 1 byte, the rest in 2:
    # 2 - 0.87 x (2 - 1) = 1.13 bytes per parameter
    g = dict(b_8=1.0, b_w=2.0, k_pw=1.0, o_x=0.0, phi_g=0.87)
    assert f8.fp8__gather_bytes_per_param(Z=1, **g) == pytest.approx(1.13)
    assert f8.fp8__gather_bytes_per_param(Z=0, **g) == 2.0
    assert f8.fp8__gather_bytes_per_param(Z=1, **{**g, "k_pw": 0.0}) == 2.0


def test_the_distributed_optimizer_gathers_less(run):
    # ZeRO-1 over 8 GPUs, bandwidth-bound: the reduce-scatter moves the fp32 gradients, 4 B x
    # P, unchanged; the parameter all-gather 2 P - P_G bytes instead of 2 P (the GEMM weights
    # in 1 byte, the rest in 2). So DP time scales by (4 P + 2 P - P_G) / 6 P = 1 - P_G / 6 P
    # = 1 - 6,979,321,856 / (6 x 8,030,261,248) = 0.85515 (latencies, equal on both sides,
    # would only raise it)
    step = ("step",) + LLAMA[1:] + ("--zero", "1")
    on = run(*step).json()["breakdown"]["dp_comm_s"]
    off = run(*step, "--no-fp8-param-gather").json()["breakdown"]["dp_comm_s"]
    assert on / off == pytest.approx(1 - P_G / (6 * 8_030_261_248), rel=2e-3)


def test_the_export_writes_the_flag_where_the_plan_timed_it(run, tmp_path):
    def flags(*extra):
        out = tmp_path / "run.sh"
        r = run("plan", "gpt-1.7b", "--node", "dgx-h100", "--tp", "2", "--pp", "1",
                "--precision", "fp8", "--fp8-recipe", "te-current", "--seq-len", "4096",
                "--global-batch", "64", "--framework", "megatron", "--export", "megatron",
                "-o", out, *extra)
        assert r.code == 0, r.err
        return out.read_text()
    assert "--fp8-param-gather" in flags("--zero", "1")
    assert "--fp8-param-gather" not in flags("--zero", "1", "--no-fp8-param-gather")
    assert "--fp8-param-gather" not in flags("--zero", "0")  # DDP: Megatron refuses it


def test_two_byte_gradients_export_as_megatrons_bf16_reduction(run, tmp_path):
    # --grad-bytes 2 under the Megatron-LM profile (whose bf16 default is 4, fp32 main grads)
    # times bf16 gradients; the export says so with --grad-reduce-in-bf16 (arguments.py
    # L1213-1214 @ d98e8a6), as NVIDIA's performance configs run (Megatron-Bridge
    # scripts/performance/configs/llama/llama3_llm_pretrain.py L43-44 @ v0.3.0)
    def text(*extra):
        out = tmp_path / "run.sh"
        r = run("plan", "gpt-1.7b", "--node", "dgx-h100", "--tp", "2", "--pp", "1", "--zero", "1",
                "--seq-len", "4096", "--global-batch", "64", "--framework", "megatron",
                "--export", "megatron", "-o", out, *extra)
        assert r.code == 0, r.err
        return out.read_text()
    assert "--grad-reduce-in-bf16" in text("--grad-bytes", "2")
    assert "--grad-reduce-in-bf16" not in text()
