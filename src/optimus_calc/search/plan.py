"""Plan: search every layout, rank by the objective, recommend one, size the SmartNICs."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from optimus_calc.catalog import Catalog
from optimus_calc.errors import InputError
from optimus_calc.evaluate.context import Hardware, resolve_hardware
from optimus_calc.evaluate.memory import MemoryEstimate, estimate_memory
from optimus_calc.evaluate.optimizer import Impl, device_from, optimizer_step
from optimus_calc.evaluate.step import StepEstimate, estimate_step
from optimus_calc.search.space import OFFLOAD_CODES, RECOMPUTE_CODES, Space, enumerate_space
from optimus_calc.search.vector import REASONS, evaluate
from optimus_calc.specs.model import Model
from optimus_calc.specs.training import Assumptions, Layout, Offload, Training, ZeroStage
from optimus_calc.units import fmt_gb


def default_global_batch(gpus: int) -> int:
    """512 sequences, or the GPU count rounded up to a power of two on larger clusters."""
    return max(512, 1 << (gpus - 1).bit_length())


@dataclass
class Candidate:
    layout: Layout
    training: Training
    gpu_bytes: float
    step_s: float
    mfu: float
    tokens_per_s: float
    memory: MemoryEstimate | None = None
    step: StepEstimate | None = None


@dataclass
class NicSizing:
    smartnic: str
    memory_bytes: float
    optimizer_bytes_per_gpu: float
    nics_per_gpu_for_memory: int
    host_spill_bytes_per_nic: float       # with one card per GPU
    nics_per_gpu_for_compute: int | None  # None: the step cannot be hidden
    optimizer_s_one_card: float
    window_s: float
    recommended_nics_per_node: int | None
    gpu_bytes_without_offload: float
    gpu_bytes_with_offload: float


@dataclass
class PlanResult:
    model: Model
    hw: Hardware
    training: Training
    objective: str
    evaluated: int
    feasible: int
    infeasible_by_reason: dict[str, int]
    top: list[Candidate]
    recommended: Candidate | None
    why: str
    nic_sizing: list[NicSizing] = field(default_factory=list)
    smallest_gpu_bytes: float = 0.0
    notes: list[str] = field(default_factory=list)


def layout_of(space: Space, i: int, hw: Hardware, smartnic: str | None) -> Layout:
    off = OFFLOAD_CODES[int(space.offload[i])]
    return Layout(tp=int(space.tp[i]), pp=int(space.pp[i]), dp=int(space.dp[i]),
                  cp=int(space.cp[i]), ep=int(space.ep[i]), zero=ZeroStage(int(space.zero[i])),
                  offload=off, interleave=int(space.v[i]),
                  smartnic=smartnic if off is Offload.SMARTNIC else None)


def training_of(space: Space, i: int, base: Training) -> Training:
    return base.model_copy(update={"micro_batch": int(space.mb[i]),
                                   "recompute": RECOMPUTE_CODES[int(space.recompute[i])],
                                   "sequence_parallel": bool(space.sp[i])})


def offload_targets(hw: Hardware) -> list[Offload]:
    out = [Offload.NONE, Offload.CPU]
    if hw.node.nvme_drives and hw.nvme is not None:
        out.append(Offload.NVME)
    out.append(Offload.SMARTNIC)
    if hw.node.superchip:
        out.append(Offload.SUPERCHIP)
    return out


def plan(model: Model, hw: Hardware, base: Training, asm: Assumptions, objective: str = "time",
         top_k: int = 5, offloads: list[Offload] | None = None, max_zero: int = 3,
         recomputes: list | None = None, distinct: bool = False) -> PlanResult:
    """Rank every layout. ``distinct`` keeps the best layout per (TP, PP) in the top K."""
    space = enumerate_space(model, hw.gpus, hw.gpus_per_node, base.global_batch, base.seq_len,
                            offloads or offload_targets(hw),
                            zero_stages=tuple(range(max_zero + 1)),
                            recomputes=recomputes or RECOMPUTE_CODES)
    if len(space) == 0:
        raise InputError(f"no layout of {model.name} divides {hw.gpus} GPUs with global batch "
                         f"{base.global_batch} (TP must divide the heads and the node's GPUs)")
    ev = evaluate(space, model, hw, base, asm)
    counts = Counter(REASONS[r] for r in ev.reason[ev.reason >= 0].tolist())
    feasible_idx = np.flatnonzero(ev.feasible)
    notes: list[str] = []
    if hw.smartnic_implicit:
        notes.append(f"{hw.node.name} has no SmartNIC: smartnic layouts assume one "
                     f"{hw.smartnic.name} per GPU (--smartnic NAME)")
    smallest = float(ev.gpu_bytes.min())
    if feasible_idx.size == 0:
        return PlanResult(model, hw, base, objective, len(space), 0, dict(counts), [], None,
                          f"no layout fits: the smallest needs {fmt_gb(smallest)} per GPU on "
                          f"{fmt_gb(hw.gpu.memory_bytes)} {hw.gpu.name} GPUs",
                          smallest_gpu_bytes=smallest, notes=notes)
    if objective == "memory":
        order = np.lexsort((ev.step_s[feasible_idx], ev.gpu_bytes[feasible_idx]))
    else:
        order = np.lexsort((ev.gpu_bytes[feasible_idx], ev.step_s[feasible_idx]))
    ranked = feasible_idx[order]
    top: list[Candidate] = []
    if distinct:  # the best layout of each (TP, PP), in rank order
        _, first = np.unique(space.tp[ranked] * 1_000_003 + space.pp[ranked], return_index=True)
        ranked = ranked[np.sort(first)]
    for i in ranked[: max(top_k * 4, 20)]:  # re-check with the scalar path (every stage)
        lay, tr = layout_of(space, int(i), hw, hw.smartnic.name), training_of(space, int(i), base)
        mem = estimate_memory(model, hw, lay, tr, asm)
        if not mem.fits:
            continue
        st = estimate_step(model, hw, lay, tr, asm, mem)
        top.append(Candidate(lay, tr, mem.worst.total_bytes, st.step_time_s, st.mfu,
                             st.tokens_per_s, mem, st))
        if len(top) == top_k:
            break
    rec = top[0] if top else None
    why = _why(rec, ev, space, feasible_idx, objective) if rec else "no layout fits"
    result = PlanResult(model, hw, base, objective, len(space), int(feasible_idx.size),
                        dict(counts), top, rec, why, smallest_gpu_bytes=smallest, notes=notes)
    return result


def _why(rec: Candidate, ev, space: Space, feasible_idx, objective: str) -> str:
    lay = rec.layout
    n = feasible_idx.size
    if objective == "memory":
        s = f"least GPU memory of {n:,} feasible layouts ({fmt_gb(rec.gpu_bytes)} per GPU)"
    else:
        s = (f"fastest of {n:,} feasible layouts: {rec.tokens_per_s:,.0f} tokens/s, "
             f"MFU {rec.mfu:.1%}")
    no_off = feasible_idx[space.offload[feasible_idx] == OFFLOAD_CODES.index(Offload.NONE)]
    if lay.offload is not Offload.NONE:
        if no_off.size == 0:
            s += "; no layout fits without offloading the optimizer"
        else:
            best = float(ev.step_s[no_off].min())
            s += (f"; {100 * (1 - rec.step_s / best):.1f}% faster than the best layout that "
                  "keeps the optimizer on the GPU")
    else:
        s += "; the optimizer stays on the GPU"
    return s


def size_nics(cat: Catalog, model, hw: Hardware, layout: Layout, tr: Training,
              asm: Assumptions) -> list[NicSizing]:
    """For each SmartNIC type: cards per GPU to hold the optimizer shard and to hide its step."""
    out = []
    base_mem = estimate_memory(model, hw, layout.model_copy(update={"offload": Offload.NONE}),
                               tr, asm)
    for sn in cat.all("smartnic"):
        hw_sn = resolve_hardware(cat, hw.node.name, hw.nodes, hw.gpu.name, hw.gpus_per_node,
                                 sn.name)
        lay = layout.model_copy(update={"offload": Offload.SMARTNIC, "smartnic": sn.name,
                                        "smartnics_per_node": 0})
        mem = estimate_memory(model, hw_sn, lay, tr, asm)
        opt = mem.offload.bytes_per_gpu
        k_mem = max(1, math.ceil(opt / sn.memory_bytes)) if opt > 0 else 0
        spill = max(0.0, opt - sn.memory_bytes)
        one = optimizer_step(device_from(sn, 1, asm), opt / max(tr.optimizer_bytes, 1),
                             tr.optimizer, Impl.FUSED, tr.gradient_bytes,
                             state_bytes=tr.optimizer_bytes)
        k_cmp, window = None, 0.0
        if isinstance(model, Model):
            st = estimate_step(model, hw_sn, lay, tr, asm, mem)
            window = st.compute_s + st.elementwise_s
            xfer = st.offload_transfer_s
            if window > xfer:
                k_cmp = max(1, math.ceil(one.time_s / (window - xfer)))
        rec = max(k_mem, k_cmp) * hw.gpus_per_node if k_cmp is not None else None
        out.append(NicSizing(sn.name, sn.memory_bytes, opt, k_mem, spill, k_cmp, one.time_s,
                             window, rec, base_mem.worst.total_bytes, mem.worst.total_bytes))
    return out
