"""Public throughput cases that calibrate the GEMM-efficiency curve (equations/efficiency.py),
and the algebra that turns the step model into "the efficiency each case needs". Pure.

Step time is affine in 1 / eta: every term that scales with compute (compute, pipeline bubble,
overlap windows) scales as 1 / eta and the others (element-wise HBM time, TP/PP/DP traffic,
optimizer) do not, so step(eta) = a + c / eta exactly. Two evaluations of the step model at
constant eta give (a, c) per case; the throughput of a case under any efficiency model is then
flops_per_gpu / (a + c / eta), and the eta that reproduces the published throughput is
c / (flops_per_gpu / published - a).
"""

from __future__ import annotations


import numpy as np

from optimus_calc.catalog import Catalog
from optimus_calc.equations import compiled as eq
from optimus_calc.specs.training import RECOMPUTE_CODES
from optimus_calc.evaluate.context import fill_layout, resolve_hardware
from optimus_calc.evaluate.efficiency import attention_flops, compute_efficiency
from optimus_calc.evaluate.memory import estimate_memory
from optimus_calc.evaluate.shapes import split_layers
from optimus_calc.evaluate.step import estimate_step
from optimus_calc.evaluate.work import attention_recomputed, layer_flops, recompute_flops
from optimus_calc.specs.hardware import GPU
from optimus_calc.specs.model import Model
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import CrossEntropyFusion, Recompute, Training, ZeroStage
from optimus_calc.record import record

# Narayanan et al. SC'21 Table 1 (calibration.md section 4) with the micro-batch size and the
# layers per virtual pipeline stage of Megatron-LM examples/academic_paper_scripts/sc21/
# run_table_1.sh (MBS, --num-layers-per-virtual-pipeline-stage), which the table omits:
# (model, TP, PP, GPUs, global batch, micro-batch, layers per virtual stage or 0, TFLOP/s/GPU)
NARAYANAN_TABLE1 = [
    ("gpt-1.7b", 1, 1, 32, 512, 16, 0, 137), ("gpt-3.6b", 2, 1, 64, 512, 16, 0, 138),
    ("gpt-7.5b", 4, 1, 128, 512, 16, 0, 142), ("gpt-18.4b", 8, 1, 256, 1024, 8, 0, 135),
    ("gpt-39.1b", 8, 2, 512, 1536, 4, 0, 138), ("gpt-76.1b", 8, 4, 1024, 1792, 2, 5, 140),
    ("gpt-145.6b", 8, 8, 1536, 2304, 2, 5, 148), ("gpt-310.1b", 8, 16, 1920, 2160, 1, 3, 155),
    ("gpt-529.6b", 8, 35, 2520, 2520, 1, 1, 163), ("gpt-1008b", 8, 64, 3072, 3072, 1, 0, 163)]
NARAYANAN_SOURCE = ("Narayanan et al. SC'21 Table 1; micro-batch and interleaving from "
                    "Megatron-LM examples/academic_paper_scripts/sc21/run_table_1.sh")

# Megatron-LM README "Training Speed and Scalability" (images/model_table.png): GPT, vocabulary
# 131,072, sequence 4096, DP 48, H100, model FLOPs (MFU 41-48%):
# (label, heads, hidden, layers, TP, PP, GPUs, global batch, TFLOP/s/GPU)
MEGATRON_H100 = [
    ("1.7B", 16, 2048, 24, 1, 1, 48, 192, 408.8), ("7.1B", 32, 4096, 30, 2, 1, 96, 192, 465.9),
    ("16B", 48, 6144, 32, 4, 1, 192, 192, 489.1), ("32B", 56, 7168, 48, 8, 1, 384, 192, 459.6),
    ("70B", 64, 8192, 84, 8, 2, 768, 384, 419.7), ("119B", 80, 10240, 92, 8, 4, 1536, 768, 420.5),
    ("177B", 96, 12288, 96, 8, 6, 2304, 1152, 432.8),
    ("314B", 128, 16384, 96, 8, 8, 3072, 1536, 474.4),
    ("462B", 144, 18432, 112, 8, 16, 6144, 3072, 459.9)]
MEGATRON_SOURCE = "Megatron-LM README, Training Speed and Scalability (images/model_table.png)"
# Not published in the README: micro-batch 1, no recomputation, FlashAttention, and the
# interleaving depth is the best of the divisors the step model finds (stated as assumptions);
# TP communication fully overlapped (the README runs --tp-comm-overlap).
H100_MICRO_BATCH = 1
H100_TP_OVERLAP = 1.0
# Not published either: the gradient reduction dtype. Assumed bf16 (--grad-reduce-in-bf16, as
# NVIDIA's performance recipes run): the profile's fp32 main grads (4 bytes) would double the
# DP reduction and put the 32B row 27% under its published throughput
H100_GRAD_BYTES = 2
# Megatron-LM's own runs: the loss unfused (--cross-entropy-loss-fusion is off by default,
# core/model_parallel_config.py L320 @ d98e8a6; Narayanan et al.'s 2021 code had no fused one)
UNFUSED = CrossEntropyFusion.NONE

# The data-parallel implementation of each Table 1 run (run_table_1.sh, DDP=torch or local):
# PyTorch DDP overlaps the bucketed all-reduce with the backward, Megatron's local DDP reduces
# after it (Assumptions.dp_reduce_overlap 1 or 0)
NARAYANAN_TORCH_DDP = ("gpt-1.7b", "gpt-3.6b", "gpt-7.5b", "gpt-18.4b")


def _megatron_profile(tr: Training, asm: Assumptions) -> tuple[Training, Assumptions]:
    """The Megatron-LM physics profile (frameworks/megatron.py) on a case's specs; the case's
    own settings (and the user's --assume) win over it."""
    from optimus_calc.frameworks import plugin
    tr2, asm2, _, _ = plugin("megatron").profile.apply(tr, asm)
    return tr2, asm2


@record(frozen=False)
class AffineCase:
    """One published case reduced to the step model's affine form step = a + c / eta."""
    label: str
    published_tflops: float
    flops_per_gpu: float       # FLOPs counted by the publication (hardware or model) per GPU
    a_s: float
    c_s: float
    h: int
    t: int
    s: int
    b: int
    attention_share: float     # attention-core FLOPs / compute FLOPs of the loaded stage
    flash: bool
    config: str
    predicted_tflops: float = 0.0  # the evaluator's own answer with the efficiency curve

    def tflops(self, eta):
        return self.flops_per_gpu / (self.a_s + self.c_s / np.asarray(eta)) / 1e12

    @property
    def required_eta(self) -> float:
        return self.c_s / (self.flops_per_gpu / (self.published_tflops * 1e12) - self.a_s)

    def curve_eta(self, gpu: GPU):
        return float(compute_efficiency(gpu, self.h, self.t, self.s, self.b, 1.0,
                                        self.attention_share, self.flash))


def _affine(model: Model, hw, layout, tr: Training, asm: Assumptions, model_flops: bool):
    mem = estimate_memory(model, hw, layout, tr, asm)
    one = estimate_step(model, hw, layout, tr, asm.model_copy(update={"gemm_efficiency": 1.0}),
                        mem)
    half = estimate_step(model, hw, layout, tr, asm.model_copy(update={"gemm_efficiency": 0.5}),
                         mem)
    c = half.step_time_s - one.step_time_s
    flops = (one.model_flops if model_flops else one.hardware_flops) / hw.gpus
    direct = flops / estimate_step(model, hw, layout, tr, asm, mem).step_time_s / 1e12
    # attention share of the most loaded stage's compute FLOPs, as step.py counts them
    s = tr.seq_len
    f_l, f_h = layer_flops(model, s)
    rc = RECOMPUTE_CODES.index(tr.recompute)
    f_r = float(recompute_flops(model, s, rc, f_l, asm.selective_policy))
    # the most loaded stage: the last (its layers and the head) or the largest without the head
    # (the embedding-and-loss split gives the last stage one layer less, shapes.split_layers)
    split = split_layers(model.layers, layout.pp, asm.pipeline_extra_layers_first > 0)

    def stage_flops(n, head):
        work = dict(F_h=f_h, F_l=f_l, L_stage=n, lambda_h=head, tau_g=1.0)
        return float(eq.step__forward_flops(**work) + eq.step__backward_flops(F_r=f_r, **work))
    total, layers = max((stage_flops(split[-1], 1), split[-1]),
                        (stage_flops(max(split), 0), max(split)))
    attn = float(attention_flops(1.0, layers, s, (model.score_dim + model.value_dim) / 2,
                                 bool(attention_recomputed(rc, asm.selective_policy))))
    # a fused kernel executes half of the causal attention core (compute.causal_attention_flops)
    executed = float(eq.compute__causal_attention_flops(F_af=attn,
                                                        kappa_c=float(tr.flash_attention)))
    return one.step_time_s - c, c, flops, executed / (total - attn + executed), direct


def narayanan_cases(cat: Catalog, asm: Assumptions | None = None) -> list[AffineCase]:
    asm = asm or Assumptions()
    out = []
    for name, tp, pp, gpus, gb, mb, lpv, pub in NARAYANAN_TABLE1:
        model = cat.get(name, "model")
        hw = resolve_hardware(cat, "dgx-a100", gpus // 8)
        v = model.layers // (pp * lpv) if lpv else 1
        lay = fill_layout(hw, tp, pp, None, 1, zero=ZeroStage(1), interleave=v)
        tr = Training(seq_len=2048, global_batch=gb, micro_batch=mb, recompute=Recompute.FULL,
                      flash_attention=False, cross_entropy_fusion=UNFUSED)
        # the run's own DDP (run_table_1.sh); the 2021 code predates the async TP backward
        # all-reduce and the bf16 fp32-gradient rule, so the rest stays framework-neutral
        asm_c = asm if "dp_reduce_overlap" in asm.model_fields_set else asm.model_copy(
            update={"dp_reduce_overlap": float(name in NARAYANAN_TORCH_DDP)})
        a, c, flops, share, direct = _affine(model, hw, lay, tr, asm_c, model_flops=False)
        out.append(AffineCase(name, pub, flops, a, c, model.hidden, tp, 2048, mb, share, False,
                              f"TP {tp} PP {pp} v {v}, micro-batch {mb}, {gpus} GPUs", direct))
    return out


def megatron_h100_cases(cat: Catalog, asm: Assumptions | None = None) -> list[AffineCase]:
    asm = asm or Assumptions()
    asm = asm.model_copy(update={"tp_overlap": H100_TP_OVERLAP, **(
        {} if "dp_reduce_overlap" in asm.model_fields_set else {"dp_reduce_overlap": 1.0})})
    out = []
    for label, heads, hidden, layers, tp, pp, gpus, gb, pub in MEGATRON_H100:
        model = Model(name=f"megatron-gpt-{label.lower()}", family="gpt", layers=layers,
                      hidden=hidden, heads=heads, ffn_hidden=4 * hidden, ffn_type="gelu",
                      vocab=131072, tied_embeddings=False, position_embedding="rope", norm="layernorm",
                      seq_len=4096, source=MEGATRON_SOURCE)
        hw = resolve_hardware(cat, "dgx-h100", gpus // 8)
        tr = Training(seq_len=4096, global_batch=gb, micro_batch=H100_MICRO_BATCH,
                      recompute=Recompute.NONE, flash_attention=True,
                      grad_bytes=H100_GRAD_BYTES, cross_entropy_fusion=UNFUSED)
        # today's Megatron-LM: its profile (async TP backward), with the README's
        # --overlap-grad-reduce (README.md L91-122 @ d98e8a6)
        tr, asm_c = _megatron_profile(tr, asm)
        if "zero_bucket_params" not in asm.model_fields_set:  # with --overlap-grad-reduce,
            # bucket_size = max(40000000, 1000000 * dp_size) parameters (ddp L131-137)
            asm_c = asm_c.model_copy(update={"zero_bucket_params": max(4e7, 1e6 * gpus
                                                                       // (tp * pp))})
        best = None
        for v in [d for d in range(1, 13) if layers % (pp * d) == 0 and (pp > 1 or d == 1)]:
            lay = fill_layout(hw, tp, pp, None, 1, zero=ZeroStage(1), interleave=v)
            a, c, flops, share, direct = _affine(model, hw, lay, tr, asm_c, model_flops=True)
            if best is None or a + c < best[1] + best[2]:
                best = (v, a, c, flops, share, direct)
        v, a, c, flops, share, direct = best  # type: ignore[misc]
        out.append(AffineCase(label, pub, flops, a, c, hidden, tp, 4096, H100_MICRO_BATCH, share,
                              True, f"TP {tp} PP {pp} v {v}, micro-batch {H100_MICRO_BATCH}, "
                              f"{gpus} GPUs", direct))
    return out
