"""Compute efficiency from the shape of the work (equations/efficiency.py), array-friendly.

Every function takes scalars or numpy arrays (broadcast against each other) and returns the
same shape, so the vector evaluator can call it once for millions of layouts. The parameters
come from the GPU's catalog entry (``gemm_eta_max``, ``gemm_half_GFLOP``, ``attention_eta``,
``flash_attention_eta``). ``--assume gemm_efficiency=X`` replaces the whole curve by the
constant X (see :func:`compute_efficiency`).
"""

from __future__ import annotations

import numpy as np

from optimus_calc.equations.recording import eq
from optimus_calc.errors import InputError
from optimus_calc.evaluate.fp8 import bf16_equivalent
from optimus_calc.specs.hardware import GPU
from optimus_calc.specs.assumptions import Assumptions


def gemm_efficiency(gpu: GPU, h, t, s, b):
    """Efficiency of the weight GEMMs: hidden ``h``, TP size ``t``, ``s`` tokens per sequence on
    this GPU (s / cp with context parallelism), micro-batch ``b``."""
    w = eq.efficiency__gemm_flops(b=np.asarray(b, dtype=float), h=np.asarray(h, dtype=float),
                                  s=np.asarray(s, dtype=float), t=np.asarray(t, dtype=float))
    return eq.efficiency__gemm_efficiency(W_g=w, W_half=gpu.gemm_half_GFLOP * 1e9,
                                          eta_max=gpu.gemm_eta_max)


def kernel_of(gpu: GPU, kernel=None, asm: Assumptions | None = None) -> str:
    """The fused attention kernel a layout runs: ``kernel`` (--attention-kernel) or the GPU's
    default, FlashAttention-2 in place of a cuDNN default where the framework runs it
    (Assumptions.flash_attention_2_over_cudnn); an input error when it does not run on the GPU
    (FA3 is Hopper-only)."""
    k = str(getattr(kernel, "value", kernel) or gpu.attention_kernel)
    if (not getattr(kernel, "value", kernel) and asm is not None and k == "cudnn"
            and asm.flash_attention_2_over_cudnn and "fa2" in gpu.attention_kernel_eta):
        k = "fa2"
    if k != gpu.attention_kernel and k not in gpu.attention_kernel_eta:
        runs = sorted({gpu.attention_kernel, *gpu.attention_kernel_eta})
        if k == "cudnn" and gpu.vendor != "nvidia":
            why = "cuDNN is NVIDIA's library"
        elif k == "cudnn":
            why = f"no public training efficiency of cuDNN's fused attention on {gpu.name}"
        elif k == "fa3":
            why = "FlashAttention-3 runs on Hopper only"
        else:
            why = f"no public training efficiency of {k} on {gpu.name}"
        raise InputError(f"--attention-kernel {k}: no efficiency for it on {gpu.name} (the "
                         f"catalog lists {', '.join(runs)}; {why})")
    return k


def attention_kernel_name(gpu: GPU, training, asm: Assumptions | None = None) -> str:
    """The attention kernel a layout runs, as regimes.py names it: the fused kernel
    (--attention-kernel or the GPU's default, :func:`kernel_of`) or "unfused"."""
    if not training.flash_attention:
        return "unfused"
    return kernel_of(gpu, training.attention_kernel, asm)


def head_dim_ratio(gpu: GPU, kernel=None, asm: Assumptions | None = None) -> float | None:
    """The kernel's speed at head dim 64 over 128 (catalog attention_head_dim64) for the kernel
    :func:`kernel_of` gives, or None where the catalog has none (the head dim then moves
    nothing: efficiency.head_dim_attention_efficiency does not run; `explain` says so)."""
    return gpu.attention_head_dim64.get(kernel_of(gpu, kernel, asm))


def catalog_kernel_eta(gpu: GPU, kernel: str) -> float:
    """The catalog's end-to-end efficiency of fused attention ``kernel`` on ``gpu``: its default
    kernel's ``flash_attention_eta``, another's ``attention_kernel_eta`` entry (uncapped)."""
    return (gpu.flash_attention_eta if kernel == gpu.attention_kernel
            else gpu.attention_kernel_eta[kernel])


def kernel_efficiency(gpu: GPU, kernel=None, asm: Assumptions | None = None,
                      d_head: float = 128.0) -> float:
    """End-to-end (forward + backward) efficiency of the fused attention kernel on the causally
    halved FLOPs it executes: --assume attention_efficiency=X, else the catalog's value for the
    kernel on this GPU, never above the GEMM curve's ceiling ``gemm_eta_max`` (an attention
    kernel's tensor-core work runs no faster than the largest GEMMs; issue 32 item 1), at the
    model's head dim ``d_head`` where the catalog has the kernel's speed at 64
    (efficiency.head_dim_attention_efficiency)."""
    k = kernel_of(gpu, kernel, asm)
    if asm is not None and "attention_efficiency" in asm.model_fields_set:
        return float(asm.attention_efficiency)
    eta = min(catalog_kernel_eta(gpu, k), gpu.gemm_eta_max)
    if (r := head_dim_ratio(gpu, k)) is None:
        return float(eta)
    return float(eq.efficiency__head_dim_attention_efficiency(eta_k=eta, r_64=r, d_h=d_head))


def attention_efficiency(gpu: GPU, flash, kernel=None, asm: Assumptions | None = None,
                         d_head: float = 128.0):
    """Efficiency of the attention core: the fused kernel's (on the FLOPs it executes, at head
    dim ``d_head``) or the unfused path's."""
    fused = (kernel_efficiency(gpu, kernel, asm, d_head)
             if np.any(np.asarray(flash, dtype=bool)) else 0.0)
    return np.where(np.asarray(flash, dtype=bool), fused, gpu.attention_eta)


def attention_seconds(flops, peak, gpu: GPU, flash, kernel=None, asm: Assumptions | None = None,
                      curve=None, d_head: float = 128.0):
    """The attention core's executed ``flops`` at its efficiency (``curve`` when computed;
    --assume gemm_efficiency=X replaces it as in compute_efficiency), compute.compute_time:
    what a context-parallel ring's traffic can hide behind (step.cp_comm_time)."""
    if asm is not None and "gemm_efficiency" in asm.model_fields_set:
        curve = asm.gemm_efficiency
    elif curve is None:
        curve = attention_efficiency(gpu, flash, kernel, asm, d_head)
    return eq.compute__compute_time(FLOPs=flops, eta_g=curve, peak=peak)


def causal_factor(flash):
    """kappa_c of compute.causal_attention_flops: 1 for a block-skipping fused kernel."""
    return np.asarray(flash, dtype=float)


def attention_span(model, s, flash=None):
    """The sequence the attention core's FLOPs see (compute.attention_span): ``s``, or less
    where the model's layers have a sliding window; ``s`` itself (the same value) without one.
    With ``flash`` (Training.flash_attention, an array or bool) the span the kernel executes
    (compute.executed_attention_span): the unfused path computes the whole sequence."""
    if not getattr(model, "sliding_window_layers", 0):
        return s
    span = eq.compute__attention_span(L=model.layers, L_sw=model.sliding_window_layers,
                                      W_sw=model.sliding_window, s=s)
    if flash is None:
        return span
    return eq.compute__executed_attention_span(S_w=span, kappa_c=causal_factor(flash), s=s)


def attention_flops(tokens, layers, s, q_d, recompute_attention):
    """FLOPs of the attention core over forward and backward (step.attention_core_flops with
    d_s = d_v = ``q_d``, plus step.attention_backward_flops: x2, and a recomputed forward when
    ``recompute_attention``): 4 s q_d per token per layer forward (Narayanan et al. 5.1)."""
    fwd = eq.step__attention_core_flops(L_stage=layers, d_s=q_d, d_v=q_d, s=s, tau_g=tokens)
    return fwd + eq.step__attention_backward_flops(
        F_af=fwd, r_a=np.asarray(recompute_attention, dtype=float))


def expert_efficiency(gpu: GPU, h, t, tokens_mb, top_k, experts, ep, expert_ffn,
                      streams=4.0, imbalance=1.0, fixed: float | None = None, etp=None):
    """Efficiency of the routed experts' balanced FLOPs on the step's critical path: the GEMM
    curve at the size of the GEMMs that share one fixed cost (efficiency.expert_launch_flops:
    of the rank's E / ep local experts, the ``streams`` that run concurrently; ``imbalance``
    times the balanced tokens on the most-loaded rank), divided by ``imbalance``
    (efficiency.expert_critical_efficiency). ``fixed`` (``--assume gemm_efficiency=X``)
    replaces the curve, not the imbalance. ``etp``: the experts' TP (None: TP)."""
    ep, t = np.asarray(ep, dtype=float), np.asarray(t, dtype=float)
    t_x = t if etp is None else np.asarray(etp, dtype=float)
    m_x = eq.efficiency__tokens_per_expert(E=experts, e_p=ep, k=top_k, t=t, t_x=t_x,
                                           tau_mb=np.asarray(tokens_mb, dtype=float))
    w = eq.efficiency__expert_gemm_flops(M_x=m_x, f_x=expert_ffn, h=h, t_x=t_x)
    n_g = np.minimum(experts / ep, np.asarray(streams, dtype=float))
    w_l = eq.efficiency__expert_launch_flops(W_x=w, iota=imbalance, n_g=n_g)
    eta_l = (np.broadcast_to(np.float64(fixed), np.shape(w_l)) if fixed is not None else
             eq.efficiency__gemm_efficiency(W_g=w_l, W_half=gpu.gemm_half_GFLOP * 1e9,
                                            eta_max=gpu.gemm_eta_max))
    return eq.efficiency__expert_critical_efficiency(eta_l=eta_l, iota=imbalance)


def compute_efficiency(gpu: GPU, h, t, s, b, total_flops, attn_flops, flash,
                       asm: Assumptions | None = None, kernel=None, expert_flops=0.0,
                       eta_x=None, fp8: float | None = None, bf16_gemm_flops=0.0,
                       curves: tuple | None = None, d_head: float = 128.0,
                       fp8_peak: str = "fp8"):
    """Effective efficiency of ``total_flops`` of which ``attn_flops`` are the attention core
    (as the kernel executes them), ``expert_flops`` the routed experts' GEMMs (at ``eta_x``) and
    the rest weight GEMMs. Compute time is then total_flops / (peak x this).

    When the user set ``gemm_efficiency`` explicitly (``--assume gemm_efficiency=X``), X is
    returned for every layout: the curve is replaced, not combined. With ``fp8`` (the FP8 GEMM
    efficiency ratio, evaluate/fp8.py) the weight and expert GEMMs run at the ``fp8_peak``
    (catalog peak: fp8, or fp4 for NVFP4) and the
    result is against the BF16 peak (X then stands for the BF16 GEMMs and the attention core),
    but for ``bf16_gemm_flops`` of them (the output head), which stay bf16 on the BF16 curve.
    ``curves``: (gemm_efficiency, attention_efficiency) at these arguments, when already
    computed (the forward's, reused by the backward)."""
    total = np.asarray(total_flops, dtype=float)
    fixed = asm is not None and "gemm_efficiency" in asm.model_fields_set
    if fixed and fp8 is None and (eta_x is None or np.all(np.asarray(eta_x)
                                                         == asm.gemm_efficiency)):
        return np.broadcast_to(np.float64(asm.gemm_efficiency), np.broadcast(
            total, np.asarray(h), np.asarray(t), np.asarray(s), np.asarray(b)).shape).copy()
    if not fixed and curves is None:
        curves = (gemm_efficiency(gpu, h, t, s, b),
                  attention_efficiency(gpu, flash, kernel, asm, d_head))
    eta_d = np.float64(asm.gemm_efficiency) if fixed else curves[0]
    eta_a = np.float64(asm.gemm_efficiency) if fixed else curves[1]
    f_a = np.clip(np.asarray(attn_flops, dtype=float), 0.0, total)
    pos = total > 0
    work = bool(pos.all())  # every layout works: the same values, fewer passes
    safe = total if work else np.where(pos, total, 1.0)  # no work: the curve's, not 0/0
    # no expert work (a dense model): f_x = clip(0, 0, total - f_a) is 0 wherever the result
    # reads it (total > 0), so the number 0 gives the same values without the clip
    f_x = 0.0 if type(expert_flops) is float and expert_flops == 0 else np.clip(
        np.asarray(expert_flops, dtype=float), 0.0, total - f_a)
    if fp8 is not None:  # FP8 GEMMs and the bf16 head: their times add (layer_efficiency)
        f_dd = np.maximum(total - f_a - f_x, 0.0)
        f_h = np.clip(np.asarray(bf16_gemm_flops, dtype=float), 0.0, f_dd)
        d_safe = np.where(f_dd > 0, f_dd, 1.0)
        eta_d = eq.efficiency__layer_efficiency(
            F_a=f_h / d_safe, F_d=np.where(f_dd > 0, (f_dd - f_h) / d_safe, 1.0), eta_a=eta_d,
            eta_d=bf16_equivalent(gpu, eta_d, fp8, fp8_peak))
        if eta_x is not None:
            eta_x = bf16_equivalent(gpu, eta_x, fp8, fp8_peak)
    f_d = (total - f_a - f_x) / safe if work else np.where(pos, (total - f_a - f_x) / safe, 1.0)
    if eta_x is None or not np.any(f_x > 0):
        mixed = eq.efficiency__layer_efficiency(F_a=f_a / safe, F_d=f_d, eta_a=eta_a, eta_d=eta_d)
    else:
        mixed = eq.efficiency__moe_layer_efficiency(F_a=f_a / safe, F_d=f_d, F_x=f_x / safe,
                                                    eta_a=eta_a, eta_d=eta_d, eta_x=eta_x)
    if not work:
        return np.where(pos, mixed, eta_d)
    shape = np.broadcast_shapes(np.shape(mixed), np.shape(eta_d), total.shape)
    if isinstance(mixed, np.ndarray) and mixed.shape == shape:
        return mixed
    return np.array(np.broadcast_to(mixed, shape), dtype=np.float64)
