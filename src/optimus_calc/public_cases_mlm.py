"""Megatron-LM's own published throughput table: ``examples/llama/README.md`` "FP8 Performance"
(H100, the FP8 Llama 3 example). Data only: validate_public.py runs them
(public_cases.public_rows)."""

from __future__ import annotations

from optimus_calc.public_row import DS as _DS
from optimus_calc.public_row import MEG as _MEG
from optimus_calc.public_row import PublicRow

# NVIDIA/Megatron-LM examples/llama/README.md @ d98e8a6 (table added by bf6e99859f, 2025-06-14),
# "FP8 Performance": model, GPUs, GBS, MBS, seq, TP, PP, CP, VP, EP, GA, tokens/s/GPU, TFLOP/s.
# The README says the configuration follows NeMo's performance scripts; its example script
# (examples/llama/train_llama3_8b_h100_fp8.sh @ bf6e99859f) sets --fp8-format hybrid with an
# amax history of 1024 (L106-110: delayed scaling), --attention-backend fused (L73: cuDNN),
# --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather (L124-127), SP with
# TP (L119) and no recomputation flag; --bf16 --grad-reduce-in-bf16 (L95-96 @ d98e8a6): the
# gradients reduced in bf16 (--grad-bytes 2)
MLM_LLAMA = "Megatron-LM examples/llama/README.md @ d98e8a6, FP8 Performance (H100)"
_ASM = ("FP8 delayed scaling (te-delayed: --fp8-format hybrid, --fp8-amax-history-len 1024, "
        "train_llama3_8b_h100_fp8.sh L106-110); cuDNN attention (--attention-backend fused, "
        "L73); distributed optimizer with overlapped grad reduce and param gather (L124-127); "
        "recompute none (the script sets none); TP communication overlap as the NeMo "
        "performance scripts the README follows; gradients reduced in bf16 "
        "(--grad-reduce-in-bf16, L96: --grad-bytes 2)")
_SAME = ("the same figure as Megatron-Bridge's H100 Llama3 70B FP8 TP4 PP8 VP5 row (1,621 "
         "tokens/s/GPU, public_cases._megatron_dense): the same run, counted once")


def mlm_llama_rows() -> list[PublicRow]:
    """The table's three rows as published; the 70B row is listed (counted once elsewhere)."""
    r = PublicRow
    return [
        r(MLM_LLAMA, "H100 Llama3-8B FP8 CP2, 8 GPUs (Megatron-LM example)", "llama-3-8b",
          "dgx-h100", 1, 13812, cp=2, gbs=128, mbs=1, assumed=_ASM, grad_bytes=2, **_DS, **_MEG),
        r(MLM_LLAMA, "H100 Llama3-70B FP8 TP4 PP8 VP5, 64 GPUs (Megatron-LM example)",
          "llama-3-70b", "dgx-h100", 8, 1621, tp=4, pp=8, vp=5, gbs=128, mbs=1, why_not=_SAME),
        r(MLM_LLAMA, "H100 Llama3-405B FP8 TP8 PP8 CP2 VP8, 1024 GPUs (Megatron-LM example)",
          "llama-3-405b", "dgx-h100", 128, 315, tp=8, pp=8, cp=2, vp=8, gbs=512, mbs=1,
          assumed=_ASM, grad_bytes=2, **_DS, **_MEG),
    ]
