"""The offloaded optimizer step, parameter-offload traffic, NVMe swaps and ZeRO-3 gather overheads
over arrays: every numeric input may be a numpy array (one element per candidate layout) and the
outputs broadcast. The physics is in equations/offload.py; this module only chooses the inputs
(implementation traits, strategy rules, DeepSpeed's defaults) and sums the phases.

A single layout is a batch of one: pass floats, get 0-d arrays back.

Wiring into the step evaluator (per candidate layout, arrays of equal shape):

- ``P_rank`` = optimizer parameters of one rank (its ZeRO partition of the stage's parameters);
  ``ranks_per_node`` = GPUs per node; ``HostCPU.from_catalog(node CPU, node.cpus)``; the link is
  ``node.gpu_host_link`` (bandwidth_GBps, efficiency); ``impl`` CPUADAM for ZeRO-Offload/Infinity,
  GRACE_ADAM for SuperOffload (with ``grad_device_bytes=param_device_bytes=4, pageable=0,
  cpu_convert=param_cpu_convert=0, grad_crossings=0`` and
  ``threads=strategy_threads(Overlap.BACKWARD, ...)``).
- ``offload_step_phases(...).total`` is the step; ``exposed_step`` puts ZeRO-Offload's and
  ZeRO-Infinity's on the critical path after the last backward (window 0). SuperOffload's
  exposure is its speculation-then-validation model (offload_schedules.superoffload_step),
  OptimusNIC's the card's per-layer pipeline (evaluate/optimusnic.py): one model each, the one
  `step` and `breakeven` both run. NVMe: ``nvme_optimizer_step(P_rank, total, ...)`` replaces
  the CPU step (its ``grad_write_s`` runs inside the last backward).
- ``param_offload_traffic`` per step with ``compute_per_microbatch_s`` = forward + backward of one
  micro-batch; its ``exposed_s`` adds to the step. ``zero3_exposed_gather`` is per micro-batch
  (multiply by the micro-batches) and replaces a once-per-step gather charge.
"""

from __future__ import annotations

from enum import Enum
from typing import assert_never

import numpy as np

from optimus_calc.equations.recording import active as recording_active
from optimus_calc.equations.recording import eq
from optimus_calc.errors import InputError
from optimus_calc.evaluate.stages import ndim
from optimus_calc.specs.hardware import CPU
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Offload
from optimus_calc.units import GB
from optimus_calc.record import record

ADAM_FLOPS_PER_PARAM = 12.0  # evaluate/optimizer.py flops_per_param (Adam)
OVERFLOW_PASSES = 5.0        # abs, eq, ne, any, any (stage3.py L2171-2181; ATen TensorCompare.cpp)
STATE_BYTES = 12.0           # fp32 master + exp_avg + exp_avg_sq, swapped per step
FP32_GRAD_BYTES = 4.0        # the host keeps fp32 gradients (ZeRO-Offload)


class AdamImpl(str, Enum):
    """The optimizer kernel that runs on the host."""

    CPUADAM = "cpuadam"        # DeepSpeed CPUAdam: fused, OpenMP, AVX-512/AVX2 on x86
    GRACE_ADAM = "grace-adam"  # SuperOffload's GraceAdam: fused, Arm SVE
    TORCH = "torch"            # torch.optim.Adam on the CPU: one pass per tensor op

    def bytes_per_param(self) -> float:
        """Bytes moved per parameter. Fused kernels read p, g, m, v and write p, m, v in fp32
        (cpu_adam.h L158-198: 16 + 12 = 28); torch.optim.Adam one pass per op: 72
        (counted op by op in evaluate/optimizer.py bytes_per_param)."""
        match self:
            case AdamImpl.TORCH:
                return 72.0
            case AdamImpl.CPUADAM | AdamImpl.GRACE_ADAM:
                return 28.0
            case _:
                assert_never(self)

    def simd_fraction(self, cpu: CPU) -> float:
        """Share of the core's FP32 SIMD width the kernel uses. CPUAdam is vectorised only for
        x86 (csrc/includes/simd.h L8-14: AVX-512 or AVX2), elsewhere it runs its scalar loop
        (1 of the 4 fp32 lanes of a 128-bit Neoverse SVE/NEON pipe); GraceAdam is written for
        SVE; ATen's fp32 kernels are vectorised on both."""
        match self:
            case AdamImpl.CPUADAM:
                return 1.0 if cpu.vendor in ("amd", "intel") else 0.25
            case AdamImpl.GRACE_ADAM | AdamImpl.TORCH:
                return 1.0
            case _:
                assert_never(self)


class Overlap(str, Enum):
    """What the offloaded step overlaps with (equations offload.exposed_*)."""

    NONE = "zero-offload"       # ZeRO-Offload / ZeRO-Infinity: after backward, nothing hidden
    BACKWARD = "superoffload"   # SuperOffload: bucket by bucket during backward
    PER_LAYER = "optimusnic"    # OptimusNIC: layer by layer as gradients are aggregated


@record
class HostCPU:
    """The host side of one node as arrays (from the catalog CPU and node)."""

    mem_GBps: np.ndarray | float       # peak memory bandwidth per socket
    stream_eff: np.ndarray | float     # STREAM triad / peak
    sockets: np.ndarray | float
    cores: np.ndarray | float          # physical cores per socket
    GHz: np.ndarray | float
    flops_per_cycle: np.ndarray | float
    core_GBps: np.ndarray | float      # what one thread draws

    @classmethod
    def from_catalog(cls, cpu: CPU, sockets: int) -> "HostCPU":
        return cls(cpu.memory_bandwidth_GBps, cpu.stream_efficiency, sockets, cpu.cores,
                   cpu.base_GHz, cpu.fp32_flops_per_cycle, cpu.core_bandwidth_GBps)


@record
class Phases:
    """Seconds per phase of one rank's offloaded step (arrays)."""

    grad_d2h: np.ndarray
    grad_host_copy: np.ndarray
    overflow_check: np.ndarray
    unscale: np.ndarray
    adam: np.ndarray
    param_host_copy: np.ndarray
    param_h2d: np.ndarray
    # (parameters, threads, pass bandwidth, mask rate, link bytes/s) the phases were computed
    # from: another schedule of the same rank passes them back (offload_step_phases' rates)
    rates: tuple = ()
    # what else the unscale, Adam and parameter phases read (Adam's kernel and SIMD share, the
    # parameters' device bytes, cast and pinning): offload_step_phases' ``same``
    params: tuple = ()

    @property
    def total(self) -> np.ndarray:
        return eq.offload__step_time(T_ad=self.adam, T_d2h=self.grad_d2h, T_gc=self.grad_host_copy,
                                     T_h2d=self.param_h2d, T_ov=self.overflow_check,
                                     T_pc=self.param_host_copy, T_un=self.unscale)

    def as_dict(self) -> dict[str, np.ndarray]:
        return {"grad_d2h": self.grad_d2h, "grad_host_copy": self.grad_host_copy,
                "overflow_check": self.overflow_check, "unscale": self.unscale,
                "adam": self.adam, "param_host_copy": self.param_host_copy,
                "param_h2d": self.param_h2d, "total": self.total}


def _num(x):
    """``np.asarray(x, dtype=float)``, as a numpy scalar when ``x`` is one number: the same value,
    and the arithmetic on it skips a 0-d array's ufunc dispatch (a speed tactic)."""
    if type(x) in (float, int, np.float64):
        return np.float64(x)
    return np.asarray(x, dtype=float)


def _positive(name: str, value) -> np.ndarray:
    if type(value) is float or type(value) is int:  # one number: no array reductions
        if not (value > 0 and value < np.inf):
            raise InputError(f"{name} must be a positive finite number (got {value!r})")
        return np.float64(value)
    arr = np.asarray(value, dtype=float)
    # min > 0 is False for NaN; max < inf refuses +inf (array methods: no wrapper per call)
    if arr.size and not (arr.min() > 0 and arr.max() < np.inf):
        raise InputError(f"{name} must be a positive finite number (got {value!r})")
    return arr


def threads_per_rank(host: HostCPU, ranks_per_node, asm: Assumptions, share: float = 1.0):
    """Threads one rank's CPU work uses: the assumption, or the node's cores split over its GPU
    ranks (DeepSpeed launcher --bind_cores_to_rank), times the share the strategy gives it."""
    if asm.offload_threads_per_rank > 0:
        return np.asarray(asm.offload_threads_per_rank * share, dtype=float)
    cores = _num(host.cores) * _num(host.sockets)
    return np.maximum(1.0, cores * share / _num(ranks_per_node))


def strategy_threads(overlap: "Overlap", host: HostCPU, ranks_per_node, asm: Assumptions):
    """Threads of one rank's optimizer work under a strategy: SuperOffload gives CPU-Adam a share
    of the cores (the rest keep feeding the GPU); the others use the rank's cores."""
    match overlap:
        case Overlap.BACKWARD:
            return threads_per_rank(host, ranks_per_node, asm, asm.superoffload_core_fraction)
        case Overlap.NONE | Overlap.PER_LAYER:
            return threads_per_rank(host, ranks_per_node, asm)
        case _:
            assert_never(overlap)


def persistent_params(tensor_numels, layers, asm: Assumptions):
    """Parameters ZeRO-3 keeps whole on every GPU: tensors below
    stage3_param_persistence_threshold (config.py L211), ``tensor_numels`` one layer's tensor
    sizes (e.g. norm weights and biases of width h), times the layers."""
    sizes = np.asarray(tensor_numels, dtype=float)
    small = np.where(sizes < asm.zero3_persistence_threshold_params, sizes, 0.0)
    return small.sum(axis=-1) * np.asarray(layers, dtype=float)


def host_rates(host: HostCPU, ranks_per_node, threads, asm: Assumptions):
    """(bytes/s of a bandwidth-bound pass, elements/s of a comparison pass) for one rank."""
    B_r = eq.offload__cpu_rank_bandwidth(
        B_sock=_num(host.mem_GBps) * GB, B_thr=_num(host.core_GBps) * GB,
        S_n=host.sockets, eta_c=asm.cpu_pass_efficiency, eta_s=host.stream_eff,
        k_n=ranks_per_node, n_th=threads)
    R_m = eq.offload__cpu_mask_rate(c_m=asm.cpu_mask_elems_per_cycle,
                                    f_c=_num(host.GHz) * 1e9, n_th=threads)
    return B_r, R_m


def offload_step_phases(params_rank, *, host: HostCPU, ranks_per_node, link_GBps, link_eff,
                        impl: AdamImpl, simd_fraction, asm: Assumptions, threads=None,
                        grad_device_bytes=2.0, param_device_bytes=2.0, host_buffer_bytes=2.0,
                        pageable=1.0, cpu_convert=1.0, param_cpu_convert=1.0,
                        grad_crossings=2.0, grad_final_bytes=None, overflow_scan=1.0,
                        rates=None, same: Phases | None = None) -> Phases:
    """Phase times of one rank's offloaded step, DeepSpeed ZeRO-Offload/Infinity order.

    ``params_rank`` parameters whose state the rank updates (its ZeRO partition); ``host`` the
    node's CPU; ``ranks_per_node`` the GPU ranks sharing it; ``link_GBps``/``link_eff`` the
    GPU-host link per direction (PCIe, NVLink-C2C); ``host_buffer_bytes`` the dtype of the host
    gradient buffer the overflow check reads (DeepSpeed: the model dtype, 2); ``pageable`` 1
    with offload_optimizer pin_memory false (the default); ``cpu_convert`` (gradients) and
    ``param_cpu_convert`` (parameters) 1 when the host does the 16/32-bit casts (DeepSpeed
    v0.15.0), 0 when the GPU does (SuperOffload; gradients from DeepSpeed v0.16.4);
    ``grad_crossings`` the 16-bit gradient's trips over the link before its fp32 copy (DeepSpeed
    partition_grads: D2H into the host buffer and back, 2; SuperOffload 0) and
    ``grad_final_bytes`` the bytes of that fp32 copy per gradient (default: 16-bit if the CPU
    converts, else 4); ``overflow_scan`` 1 when the host buffer is scanned for inf/NaN
    (ZeRO-3 with fp16, the profile of Table 4), 0 otherwise (bf16; ZeRO-1/2 check on the GPU).
    ``rates``: what an earlier call on the same rank, host and link returned as ``.rates``;
    ``same``: that call's phases, whose unscale, Adam and parameter phases are this call's when
    they read the same (a speed tactic: the same numbers; not while `explain` records)."""
    if rates is None:
        P = _positive("parameters per rank", params_rank)
        k = _positive("GPU ranks per node", ranks_per_node)
        n_t = threads_per_rank(host, k, asm) if threads is None else _positive("threads", threads)
        rates = (P, n_t, *host_rates(host, k, n_t, asm),
                 _positive("GPU-host link bandwidth", link_GBps) * GB)
    P, n_t, B_r, R_m, B_l = rates
    link = dict(B_l=B_l, eta_l=link_eff)
    if grad_final_bytes is None and type(cpu_convert) in (int, float) \
            and type(grad_device_bytes) in (int, float):  # numbers: where()'s value, no arrays
        grad_final_bytes = np.float64(grad_device_bytes if cpu_convert > 0 else FP32_GRAD_BYTES)
    elif grad_final_bytes is None:
        grad_final_bytes = np.where(np.asarray(cpu_convert) > 0, grad_device_bytes,
                                    FP32_GRAD_BYTES)
    grad = dict(P_r=P, b_gd=grad_device_bytes, b_gx=grad_final_bytes, n_x=grad_crossings)
    params = (impl, simd_fraction, param_device_bytes, param_cpu_convert, pageable)
    if same is not None and same.rates is rates and _same(same.params, params) \
            and not recording_active():
        return Phases(eq.offload__grad_d2h_time(**grad, **link),
                      eq.offload__grad_host_copy_time(B_r=B_r, c_v=cpu_convert, s_p=pageable,
                                                      **grad),
                      _overflow_check(B_r, P, R_m, host_buffer_bytes, overflow_scan),
                      same.unscale, same.adam, same.param_host_copy, same.param_h2d, rates,
                      params)
    return Phases(
        grad_d2h=eq.offload__grad_d2h_time(**grad, **link),
        grad_host_copy=eq.offload__grad_host_copy_time(B_r=B_r, c_v=cpu_convert, s_p=pageable,
                                                       **grad),
        overflow_check=_overflow_check(B_r, P, R_m, host_buffer_bytes, overflow_scan),
        unscale=eq.offload__unscale_time(B_r=B_r, P_r=P),
        adam=eq.offload__adam_time(B_r=B_r, F_cyc=host.flops_per_cycle,
                                   P_r=P, beta_a=impl.bytes_per_param(),
                                   f_c=_num(host.GHz) * 1e9, n_th=n_t,
                                   phi_a=ADAM_FLOPS_PER_PARAM, u_v=simd_fraction),
        param_host_copy=eq.offload__param_host_copy_time(B_r=B_r, P_r=P, b_pd=param_device_bytes,
                                                         c_w=param_cpu_convert, s_p=pageable),
        param_h2d=eq.offload__param_h2d_time(P_r=P, b_pd=param_device_bytes, **link),
        rates=rates, params=params,
    )


def _overflow_check(B_r, P, R_m, b_acc, o_s):
    """offload.overflow_check_time. Without the host scan (``o_s`` 0) on one positive finite
    rate of each kind it is 0 x (a finite time) = +0 everywhere: those zeros without the call,
    unless `explain` records it (``P`` is positive and finite: offload_step_phases checks it)."""
    if (type(o_s) in (int, float) and o_s == 0 and not recording_active()
            and all(ndim(x) == 0 and 0 < float(x) < np.inf for x in (B_r, R_m, b_acc))):
        return np.zeros(np.shape(P))
    return eq.offload__overflow_check_time(B_r=B_r, P_r=P, R_m=R_m, b_acc=b_acc,
                                           n_m=OVERFLOW_PASSES, o_s=o_s)


def _same(a: tuple, b: tuple) -> bool:
    """Whether two ``Phases.params`` are the same inputs (numbers equal, the rest identical)."""
    return len(a) == len(b) and all(
        x is y or (type(x) in (int, float) and type(y) in (int, float) and x == y)
        for x, y in zip(a, b))


def exposed_step(overlap: Overlap, step_s):
    """Seconds of a step that follows the last backward left on the critical path
    (offload.exposed_zero_offload: all of it). The strategies that overlap their step have a
    model of their own (see the module's docstring), so only ``Overlap.NONE`` is accepted."""
    if overlap is not Overlap.NONE:
        raise ValueError(f"{overlap}: exposed by its strategy's own model, not exposed_step")
    return eq.offload__exposed_zero_offload(T_s=step_s)


@record
class NVMeStep:
    read_s: np.ndarray
    write_s: np.ndarray
    grad_write_s: np.ndarray | None  # during the last backward (None: not asked for)
    step_s: np.ndarray        # the whole step (CPU phases and swaps)


def nvme_optimizer_step(params_rank, cpu_step_s, *, ranks_per_node, drives, read_GBps,
                        write_GBps, asm: Assumptions, pipelined=0.0,
                        grad_write: bool = True) -> NVMeStep:
    """ZeRO-Infinity offload_optimizer: nvme. The node's ranks share a RAID0 of its drives.
    Without ``grad_write`` (the evaluator's step does not read it) no gradient write time,
    unless `explain` records the call."""
    P = _positive("parameters per rank", params_rank)
    n = _positive("NVMe drives", drives)
    common = dict(P_r=P, eta_d=asm.nvme_efficiency, k_n=ranks_per_node, n_d=n)
    rd = eq.offload__nvme_read_time(R_rd=_positive("NVMe read", read_GBps) * GB,
                                    b_gs=FP32_GRAD_BYTES, b_os=STATE_BYTES, **common)
    wr = eq.offload__nvme_write_time(R_wr=_positive("NVMe write", write_GBps) * GB,
                                     b_os=STATE_BYTES, **common)
    gw = (eq.offload__nvme_grad_write_time(R_wr=_num(write_GBps) * GB, b_gs=FP32_GRAD_BYTES,
                                           **common)
          if grad_write or recording_active() else None)
    total = eq.offload__nvme_step_time(T_cpu=cpu_step_s, T_rd=rd, T_wr=wr, pi_n=pipelined)
    return NVMeStep(rd, wr, gw, total)


@record
class ParamOffload:
    bytes_per_step: np.ndarray   # per rank
    stream_s: np.ndarray         # per step
    exposed_s: np.ndarray        # per step, beyond the micro-batches' compute


def param_offload_traffic(stage_params, *, dp, micro_batches, weight_bytes=2.0, recompute_full=0.0,
                          target: Offload | str, link_GBps, link_eff, compute_per_microbatch_s,
                          ranks_per_node=1.0, drives=1.0, read_GBps=1.0,
                          asm: Assumptions) -> ParamOffload:
    """ZeRO-3 offload_param (target Offload.CPU) or ZeRO-Infinity (Offload.NVME; the strings
    "cpu" and "nvme" are accepted): every micro-batch fetches the rank's parameter partition in
    its forward and backward (and recomputed forward where it gathers again: a fetch per
    gather, Assumptions.zero3_recompute_regathers)."""
    r_g = np.asarray(recompute_full, dtype=float) * asm.zero3_recompute_regathers
    Q = eq.offload__param_stream_bytes(N_d=_positive("dp", dp), P_p=stage_params,
                                       b_w=weight_bytes, r_f=r_g,
                                       m_b=_positive("micro-batches", micro_batches))
    B_l = _positive("GPU-host link bandwidth", link_GBps) * GB
    try:
        where = Offload(target)
    except ValueError:
        where = None
    match where:
        case Offload.CPU:
            t = eq.offload__param_stream_time_cpu(B_l=B_l, Q_p=Q, eta_l=link_eff)
        case Offload.NVME:
            t = eq.offload__param_stream_time_nvme(
                B_l=B_l, Q_p=Q, R_rd=_positive("NVMe read", read_GBps) * GB,
                eta_d=asm.nvme_efficiency, eta_l=link_eff, k_n=ranks_per_node,
                n_d=_positive("NVMe drives", drives))
        case Offload.NONE | Offload.SMARTNIC | Offload.SUPERCHIP | None:
            # parameters are offloaded by ZeRO-3 offload_param only (to the host or NVMe)
            name = target.value if isinstance(target, Offload) else target
            raise InputError(f"parameter offload target {name!r}: expected cpu or nvme")
        case _:
            assert_never(where)
    exposed = eq.offload__param_stream_exposed(T_q=t / micro_batches, W_c=compute_per_microbatch_s,
                                               m_b=micro_batches)
    return ParamOffload(Q, t, exposed)


def zero3_exposed_gather(*, modules, module_params, gather_s, forward_s, backward_s,
                         asm: Assumptions, recompute_full=0.0, reduce_s=0.0):
    """Gather time one micro-batch waits for under ZeRO-3 (forward and backward passes, and a
    recomputed forward's where it gathers again: Assumptions.zero3_recompute_regathers), with
    DeepSpeed's prefetch limits from the assumptions. ``forward_s`` and
    ``backward_s`` are one micro-batch's compute windows (the backward's with its recomputed
    forward); ``reduce_s`` the micro-batch's gradient reduce-scatters that overlap the backward
    (every bucket but the last, offload.zero3_overlapped_reduce_time: they share the
    backward's link with the gathers; 0 when the reduction runs after the backward)."""
    depth = eq.offload__zero3_prefetch_depth(B_pf=asm.zero3_prefetch_bucket_params,
                                             M_live=asm.zero3_max_live_params, p_m=module_params)
    n = _positive("modules", modules)
    # a recomputed forward that gathers again is a pass of its own, out of the backward's
    # window; one that reuses the backward's gather (FSDP2, Megatron-FSDP) runs inside it
    r = np.asarray(recompute_full, dtype=float) * asm.zero3_recompute_regathers
    t_cf = np.asarray(forward_s) / n
    t_cb = np.maximum(0.0, np.asarray(backward_s) - r * np.asarray(forward_s)) / n
    return eq.offload__zero3_exposed_gather_time(
        alpha_g=asm.zero3_gather_latency_us * 1e-6, c_pass=2.0 + r, d_p=depth, n_mod=n,
        t_cb=t_cb, t_cf=t_cf, t_g=gather_s, T_rb=reduce_s)
