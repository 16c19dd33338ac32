"""The DeepSpeed engine's profiles time the model's own attention, FlashAttention-2, where the
GPU's default fused kernel is cuDNN's (Assumptions.flash_attention_2_over_cudnn): Megatron-
DeepSpeed runs flash_attn (--use-flash-attn-v2, megatron/arguments.py L927-935 @ 4efb479),
which its export writes, and refuses a named cuDNN kernel. Round 18: it was timed with
Transformer Engine's cuDNN attention on Hopper and Blackwell."""

import pytest

H100 = ("step", "llama-3-8b", "--node", "dgx-h100", "--zero", "3", "--format", "json")


def _compute(run, *extra):
    return run(*H100, *extra).json()["compute_s"]


@pytest.mark.parametrize("framework", ["megatron-deepspeed", "deepspeed"])
def test_the_engine_times_flash_attention_2_on_hopper(run, framework):
    fw = ("--framework", framework)
    # the same numbers as with FlashAttention-2 named (h100-sxm attention_kernel_eta fa2 0.22)
    assert _compute(run, *fw) == pytest.approx(_compute(run, *fw, "--attention-kernel", "fa2"),
                                               rel=1e-12)
    # slower than the neutral cuDNN default (0.26 against 0.22 on the same attention FLOPs)
    assert _compute(run, *fw) > _compute(run)
    text = run(*H100[:-2], *fw).out
    assert "attention kernel fa2 at 0.22" in " ".join(text.split())


def test_megatron_keeps_cudnn_and_a100_keeps_its_default(run):
    # Megatron-LM runs Transformer Engine's attention (cuDNN on Hopper): unchanged; on A100
    # the default is FlashAttention-2 already, so the engine's profile moves nothing there
    assert _compute(run, "--framework", "megatron") == pytest.approx(
        _compute(run, "--framework", "megatron", "--attention-kernel", "cudnn"), rel=1e-12)
    a100 = ("step", "llama-3-8b", "--node", "dgx-a100", "--zero", "3", "--format", "json")
    assert run(*a100, "--framework", "megatron-deepspeed").json()["compute_s"] == pytest.approx(
        run(*a100, "--framework", "megatron-deepspeed", "--attention-kernel", "fa2").json()[
            "compute_s"], rel=1e-12)


def test_the_switch_is_zero_or_one(run):
    r = run("step", "llama-3-8b", "--node", "dgx-h100", "--assume",
            "flash_attention_2_over_cudnn=0.5")
    assert r.code == 2 and "flash_attention_2_over_cudnn: must be 0 or 1" in r.err


def test_the_plan_header_names_the_rows_kernel_and_the_export_note_agrees(run):
    # the header's efficiencies are framework-neutral (cuDNN 0.26 on H100); the recommended
    # row runs under the engine's profile (FlashAttention-2 0.22), which it now says (review)
    args = ("plan", "llama-3-8b", "--node", "dgx-h100", "--nodes", "2", "--seq-len", "16384",
            "--framework", "megatron-deepspeed")
    head = " ".join(run(*args).out.split())
    assert ("attention cudnn 0.26 on the halved causal FLOPs (the recommended row's "
            "megatron-deepspeed profile runs fa2 at 0.22)") in head
    out = run(*args, "--export", "deepspeed").out
    assert "--use-flash-attn-v2" in out and "plan with --attention-kernel fa2" not in out


def test_the_kernel_switch_moves_compute_by_hand(run):
    # llama-3-8b on one DGX H100, ZeRO-3, seq 8192 (its default), global batch 512 (the
    # default) over DP 8: 524,288 tokens a GPU. The causal attention core executes
    # 3 x (2 x 8192 x (4096 + 4096) / 2) = 201,326,592 FLOPs per token and layer (forward +
    # backward, halved), x 32 layers x 524,288 tokens = 3.3777e15 FLOPs; at 989 TFLOP/s, the
    # cuDNN default 0.26 against FlashAttention-2's 0.22 (h100-sxm catalog, head dim 128):
    # 3.3777e15 / 989e12 x (1 / 0.22 - 1 / 0.26) = 2.38830 s more compute
    engine = _compute(run, "--framework", "megatron-deepspeed")
    assert engine - _compute(run) == pytest.approx(2.38830, rel=1e-4)
