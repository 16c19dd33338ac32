"""When DeepSpeed runs the phases of the offloaded optimizer step, per ZeRO stage and precision,
and what of them the backward hides (the phases themselves: evaluate/offload_step.py, the
equations: equations/offload.py). Arrays in, arrays out: one element per candidate layout.

Sources (DeepSpeed @ edaa722 unless named; docs/reference/framework-physics.md section 1.3):

- ZeRO-1/2 + CPU (stage_1_and_2.py): the gradient is cast to fp32 on the GPU and copied
  non-blocking into the fp32 CPU partition (L1590-1605), overflow is tracked on the GPU
  (L1498-1504) and norms are taken on the GPU: no host scan, no host cast of the gradient. The
  copies run from the reduction hooks: ZeRO-2 during the boundary backward, ZeRO-1 after the
  backward unless overlap_comm (L1758-1769). Then unscale (mul_ over the fp32 partition,
  L2434-2449), CPU-Adam, the 16-bit cast on the CPU and the copy back (L2337-2341).
- ZeRO-3 + CPU (stage3.py): the phases of offload_step_phases (the release calibrated on
  seeds/optimusnic.md Table 4); the host inf/NaN scan only with fp16 (L2547-2551).
- SuperOffload (superoffload/superoffload_stage3.py): as ZeRO-3 for the gradient (host buffer
  and back, GPU norm, GPU cast, fp32 to the host: L134-159), the CPU-Adam worker steps each
  completed sub-group during the backward (L161-184; no gradient clipping), step() then unscales
  every sub-group (L223-230, stage3.py L2696-2705) and, from v0.18.9 (729df6c), copies it back
  to the GPU (L114-119; v0.18.0, the release of the published numbers, does not: af56ed4
  L173-176). The worker holds ``cpuadam_cores_perc`` of the cores (superoffload_utils.py
  L189-216), set with psutil on the main thread only, so step()'s ATen passes keep the intra-op
  pool's cores (assumption superoffload_step_core_fraction).
"""

from __future__ import annotations


import numpy as np

from optimus_calc.equations.recording import eq
from optimus_calc.evaluate.offload_step import (AdamImpl, HostCPU, Overlap, exposed_step,
                                                offload_step_phases, strategy_threads,
                                                threads_per_rank)
from optimus_calc.specs.hardware import CPU
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Precision
from optimus_calc.record import record

FP32 = 4.0  # bytes of the fp32 gradient the GPU casts before the copy


@record
class OffloadStep:
    """One rank's offloaded step: all phases, their GPU-host link share, the exposed part."""

    step_s: np.ndarray
    transfer_s: np.ndarray
    exposed_s: np.ndarray


def deepspeed_cpu_step(shard, *, zero, bucketed_params, precision: Precision, backward_s,
                       host: HostCPU, cpu: CPU, ranks_per_node, link_GBps, link_eff, asm: Assumptions,
                       weight_bytes: float, grad_bytes: float,
                       partition_tensors=0.0) -> OffloadStep:
    """ZeRO-Offload (offload_optimizer: cpu) for ZeRO stage ``zero`` (an array: 1, 2 or 3 per
    layout); ``backward_s`` the boundary micro-batch's backward; ``bucketed_params`` the GPU's
    parameters before partitioning (its gradient buckets carry all of them);
    ``partition_tensors`` the parameter tensors of the rank's partition (ZeRO-1/2's per-tensor
    host syncs, offload.host_sync_time)."""
    z = np.asarray(zero)
    impl = AdamImpl.CPUADAM
    common = dict(host=host, ranks_per_node=ranks_per_node, link_GBps=link_GBps,
                  link_eff=link_eff, impl=impl, simd_fraction=impl.simd_fraction(cpu), asm=asm)
    fp16 = 1.0 if precision is Precision.FP16 else 0.0
    is3 = z >= 3
    # each schedule only where a layout runs it: one layout records one schedule's equations,
    # the ones `explain` then shows (offload.step_time is both schedules' total)
    out3 = out12 = None
    rates = None  # the rank's rates, found once for both schedules (the same inputs)
    if is3.any():
        z3 = offload_step_phases(shard, grad_device_bytes=grad_bytes,
                                 param_device_bytes=weight_bytes, host_buffer_bytes=grad_bytes,
                                 overflow_scan=fp16, **common)
        rates, total = z3.rates, z3.total
        out3 = (total, z3.grad_d2h + z3.param_h2d, exposed_step(Overlap.NONE, total))
    if not is3.all():
        # ZeRO-1/2: fp32 over the link, no crossing before it, no host cast, no host scan
        z12 = offload_step_phases(shard, grad_device_bytes=FP32, grad_crossings=0.0,
                                  cpu_convert=0.0, grad_final_bytes=FP32, rates=rates,
                                  same=z3 if rates is not None else None,
                                  param_device_bytes=weight_bytes, overflow_scan=0.0, **common)
        t_g, total = z12.grad_d2h + z12.grad_host_copy, z12.total
        o_c = np.where(z >= 2, asm.ds_zero2_overlap_comm, asm.ds_zero1_overlap_comm)
        ex12 = eq.offload__exposed_zero12_offload(P_g=bucketed_params, T_g=t_g,
                                                 T_post=total - t_g, W_b=backward_s,
                                                 Z_b=asm.zero_bucket_params, o_c=o_c)
        t_hs = eq.offload__host_sync_time(N_tp=partition_tensors,
                                          n_hs=asm.offload_host_syncs_per_tensor,
                                          t_hs=asm.host_sync_us * 1e-6)
        out12 = (total + t_hs, z12.grad_d2h + z12.param_h2d, ex12 + t_hs)
    out3, out12 = out3 or out12, out12 or out3
    return OffloadStep(*(np.where(is3, a, b) for a, b in zip(out3, out12)))


def superoffload_step(shard, *, precision: Precision, backward_s, host: HostCPU, cpu: CPU,
                      ranks_per_node, link_GBps, link_eff, asm: Assumptions,
                      weight_bytes: float, grad_bytes: float) -> OffloadStep:
    """SuperOffload's step for the ``shard`` parameters whose state lives on the Grace CPU."""
    impl = AdamImpl.GRACE_ADAM
    worker = strategy_threads(Overlap.BACKWARD, host, ranks_per_node, asm)
    main = threads_per_rank(host, ranks_per_node, asm, asm.superoffload_step_core_fraction)
    fp16 = 1.0 if precision is Precision.FP16 else 0.0
    kw = dict(host=host, ranks_per_node=ranks_per_node, link_GBps=link_GBps, link_eff=link_eff,
              impl=impl, simd_fraction=impl.simd_fraction(cpu), asm=asm,
              grad_device_bytes=grad_bytes, grad_final_bytes=FP32, cpu_convert=0.0,
              pageable=0.0, param_device_bytes=weight_bytes, host_buffer_bytes=grad_bytes,
              overflow_scan=fp16)
    spec = offload_step_phases(shard, threads=worker, **kw)  # the worker: CPU-Adam
    post = offload_step_phases(shard, threads=main, **kw)    # step(): unscale, copies, scan
    t_sp = spec.grad_d2h + spec.adam
    t_post = post.unscale + asm.superoffload_param_copy * (post.param_host_copy + post.param_h2d)
    total = t_sp + t_post + post.overflow_check
    stv = eq.offload__exposed_superoffload_stv(P_r=shard, T_ov=post.overflow_check,
                                               T_post=t_post, T_sp=t_sp, W_b=backward_s,
                                               Z_s=asm.zero_sub_group_params)
    exposed = np.where(asm.superoffload_clipping > 0, exposed_step(Overlap.NONE, total), stv)
    return OffloadStep(total, spec.grad_d2h + asm.superoffload_param_copy * spec.param_h2d,
                       exposed)
