"""The optimizer step on the device that owns the state: bytes and FLOPs per parameter, and a
memory/compute roofline with thread scaling (compute.optimizer_step_time)."""

from __future__ import annotations

from enum import Enum
from typing import assert_never

import numpy as np

from optimus_calc.equations.recording import eq
from optimus_calc.errors import InputError
from optimus_calc.specs.base import CatalogEntry
from optimus_calc.specs.hardware import CPU, GPU, SmartNIC
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Optimizer
from optimus_calc.units import GB
from optimus_calc.record import record


class Impl(str, Enum):
    FUSED = "fused"      # one pass: DeepSpeed CPUAdam, fused CUDA Adam, an FPGA pipeline
    PYTORCH = "pytorch"  # torch.optim single-tensor loop, fp32 tensors, one kernel per op


def bytes_per_param(opt: Optimizer, impl: Impl, grad_bytes: float) -> float:
    """Bytes moved per parameter.

    fused Adam: read fp32 master, m, v (12) + the gradient; write master, m, v (12) + the 16-bit
    copy for the GPU (2): 26 + gradient bytes. fused SGD (momentum): 8 + g + 8 + 2 = 18 + g.
    pytorch Adam (torch.optim.Adam, single-tensor, all fp32), counted per element:
    exp_avg.lerp_(g) 12, exp_avg_sq.mul_() 8 + addcmul_(g, g) 12, sqrt() 8, div_() 8, add_(eps)
    8, param.addcdiv_(m, denom) 16: 72 bytes. pytorch SGD: buf.mul_() 8 + add_(g) 12,
    param.add_(buf) 12: 32 bytes.
    """
    match impl:
        case Impl.PYTORCH:
            return 32.0 if opt is Optimizer.SGD else 72.0
        case Impl.FUSED:
            return (18.0 if opt is Optimizer.SGD else 26.0) + grad_bytes
        case _:
            assert_never(impl)


def flops_per_param(opt: Optimizer) -> float:
    """Adam: m (3), v (4), sqrt (1), divide (1), + eps (1), update (2) = 12; SGD+momentum 4."""
    return 4.0 if opt is Optimizer.SGD else 12.0


@record
class OptDevice:
    name: str
    kind: str
    mem_Bps: float
    mem_eff: float
    per_core: bool
    cores: int
    core_Bps: float
    core_flops: float
    device_flops: float
    capacity_bytes: float = 0.0
    slow_tier_Bps: float = 0.0  # FPGA second tier (DDR) used past capacity_bytes


def find_device(cat, name: str):
    """The GPU, CPU or SmartNIC catalog entry ``name`` (`optimizer-step --device`)."""
    for kind in ("smartnic", "cpu", "gpu"):
        entry = cat.find(name, kind)
        if entry is not None:
            return entry
    other = cat.find(name)
    if other is not None:
        raise InputError(f"--device {name!r} is a {other.kind}; an optimizer step runs on "
                         "a GPU, CPU or SmartNIC")
    cat.get(name, None, what="device")  # raises with suggestions
    raise AssertionError("unreachable")


def default_grad_bytes(entry) -> int:
    """Bytes per incoming gradient: fp32 on a CPU (ZeRO-Offload keeps fp32 gradients on the
    host), 16-bit elsewhere."""
    return 4 if isinstance(entry, CPU) else 2


# the devices made last, by the identity of their catalog entry (kept, so its id is not reused)
# and what else they read: the evaluator asks for the same GPU and SmartNIC on every call (a
# speed tactic: the same frozen record)
_FROM: dict[tuple, tuple] = {}


def device_from(entry, sockets: int, asm: Assumptions) -> OptDevice:
    key = (id(entry), sockets, asm.hbm_efficiency)
    got = _FROM.get(key)
    if got is not None and got[0] is entry:
        return got[1]
    dev = _device_from(entry, sockets, asm)
    if len(_FROM) >= 64:
        _FROM.clear()
    _FROM[key] = (entry, dev)
    return dev


def _device_from(entry, sockets: int, asm: Assumptions) -> OptDevice:
    if isinstance(entry, GPU):
        return OptDevice(entry.name, "gpu", entry.hbm_Bps, asm.hbm_efficiency, False, 0, 0, 0,
                         entry.peak_TFLOPS.flops_per_s("fp32"))
    if isinstance(entry, CPU):
        return OptDevice(entry.name, "cpu", entry.memory_Bps * sockets, entry.stream_efficiency,
                         True, entry.cores * sockets, entry.core_bandwidth_GBps * GB,
                         entry.base_GHz * 1e9 * entry.fp32_flops_per_cycle, 0)
    if isinstance(entry, SmartNIC):
        if entry.device_type == "fpga":
            return OptDevice(entry.name, "fpga", entry.memory_Bps, entry.memory_efficiency,
                             False, 0, 0, 0, entry.fp32_flops_per_s,
                             entry.memory_GB * GB, entry.expansion_bandwidth_GBps * GB)
        return OptDevice(entry.name, entry.device_type, entry.memory_Bps,
                         entry.memory_efficiency, True, entry.cores,
                         entry.core_bandwidth_GBps * GB,
                         entry.core_GHz * 1e9 * entry.fp32_flops_per_cycle, 0)
    name = entry.name if isinstance(entry, CatalogEntry) else entry
    raise InputError(f"{name} cannot run an optimizer step "
                     "(give a GPU, CPU or SmartNIC)")


@record
class OptStep:
    time_s: float
    bound: str
    bytes: float
    flops: float
    threads: int
    bandwidth_Bps: float
    inputs: dict


def device_time(dev: OptDevice, params, beta_p, phi_p, state_bytes, threads=None):
    """(time_s, achievable bandwidth) of ``dev`` updating ``params`` parameters (arrays welcome).

    The one implementation of compute.optimizer_step_time's inputs: a two-tier FPGA card reads
    the part of the state that overflows its fast memory from the slow tier (harmonic mean of
    the two bandwidths, weighted by the bytes in each)."""
    params = np.asarray(params, dtype=np.float64)
    mem = dev.mem_Bps
    # element-wise, so a capacity or a slow tier given as a column (breakeven's stacked cases)
    # takes the same branch per row as a number would
    slow, cap = dev.slow_tier_Bps, dev.capacity_bytes
    if type(slow) is float and type(cap) is float:  # one device (numpy's any: a call each)
        two_tier = slow > 0 and cap > 0
    else:
        two_tier = bool(np.any(np.asarray(slow) > 0) and np.any(np.asarray(cap) > 0))
    if two_tier:
        slow, cap = np.asarray(slow, dtype=np.float64), np.asarray(cap, dtype=np.float64)
        state = params * state_bytes
        with np.errstate(divide="ignore", invalid="ignore"):  # rows without a second tier
            fast = np.minimum(1.0, cap / np.maximum(state, cap))
            mixed = 1.0 / (fast / dev.mem_Bps + (1 - fast) / slow)
        mem = np.where((state > cap) & (cap > 0) & (slow > 0), mixed, dev.mem_Bps)
    n_t = threads or (dev.cores if dev.per_core else 1)
    with np.errstate(divide="ignore", invalid="ignore"):  # the branch not taken may divide by 0
        f = np.float64  # numpy scalars: the untaken branch gives inf, not ZeroDivisionError
        t = eq.compute__optimizer_step_time(
            B_core=f(dev.core_Bps), B_mem=mem, F_core=f(dev.core_flops), F_dev=f(dev.device_flops),
            P_n=params, beta_p=beta_p, c_n=int(dev.per_core), eta_m=dev.mem_eff, n_t=n_t,
            phi_p=phi_p)
    bw = (np.minimum(mem * dev.mem_eff, n_t * dev.core_Bps) if dev.per_core
          else mem * dev.mem_eff)
    return t, bw


def optimizer_step(dev: OptDevice, params: float, opt: Optimizer, impl: Impl,
                   grad_bytes: float, threads: int | None = None, count: int = 1,
                   state_bytes: float = 12.0) -> OptStep:
    """Time for ``count`` identical devices to step ``params`` parameters together.

    ``state_bytes`` (optimizer state per parameter, 12 for mixed-precision Adam) decides how
    much of a two-tier FPGA card's fast memory the state fills."""
    if count < 1:
        raise InputError(f"--count {count} must be >= 1")
    per_dev = params / count
    n_t = threads or (dev.cores if dev.per_core else 1)
    if dev.per_core and n_t > dev.cores:
        raise InputError(f"--threads {n_t} exceeds the {dev.cores} cores of {dev.name}")
    bpp = bytes_per_param(opt, impl, grad_bytes)
    t, bw = device_time(dev, per_dev, bpp, flops_per_param(opt), state_bytes, n_t)
    t, bw = float(t), float(bw)
    kw = dict(B_core=dev.core_Bps, B_mem=bw / dev.mem_eff if not dev.per_core else dev.mem_Bps,
              F_core=dev.core_flops, F_dev=dev.device_flops, P_n=per_dev, beta_p=bpp,
              c_n=int(dev.per_core), eta_m=dev.mem_eff, n_t=n_t, phi_p=flops_per_param(opt))
    t_mem = per_dev * bpp / bw
    return OptStep(t, "memory" if t_mem >= t * (1 - 1e-12) else "compute", per_dev * bpp,
                   per_dev * flops_per_param(opt), n_t, bw, kw)
