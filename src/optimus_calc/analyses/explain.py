"""Every equation the evaluator computed for one layout, with its inputs and result (`explain`).

The evaluator records each compiled-equation call (:mod:`optimus_calc.equations.recording`);
this module reads the calls back at one pipeline stage: by default the stage that binds the
figure (the most loaded for memory and offload devices, the slowest for every time term).
With a token budget the training-time equations follow, and the collectives `comm` reports for
the cluster (an all-reduce of one GPU's gradients over every GPU) close the list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from optimus_calc.equations.recording import STAGES, Recorder, recording, set_scope, set_stage
from optimus_calc.errors import InputError
from optimus_calc.evaluate.evaluation import Evaluation, binding_kind, stage_value
from optimus_calc.record import record

if TYPE_CHECKING:
    from optimus_calc.evaluate.inputs import Inputs


@record
class Evaluated:
    """One equation as evaluated: values at ``pipeline_stage`` (None: not per stage)."""

    name: str
    stage: str
    scope: str
    inputs: dict[str, float]
    result: float
    pipeline_stage: int | None


def _binding(ev: Evaluation, kind: str) -> int:
    k = ev.worst_time if kind == "time" and ev.worst_time is not None else ev.worst_memory
    return int(np.asarray(k).reshape(-1)[0])


def _rows(calls, ev: Evaluation | None, pipeline_stage: int | None) -> list[Evaluated]:
    latest: dict[tuple[str, str, str], Evaluated] = {}
    for call in calls:
        if ev is None:
            pick = lambda x: float(np.asarray(x, dtype=np.float64).reshape(-1)[0])  # noqa: E731
            at = None
        else:
            kind = binding_kind(call)
            at = _binding(ev, kind) if pipeline_stage is None else pipeline_stage
            pick = lambda x, kind=kind, at=at: stage_value(ev, x, kind, at)  # noqa: E731
        row = Evaluated(call.name, call.stage, call.scope,
                        {k: pick(v) for k, v in call.inputs.items()}, pick(call.result), at)
        latest[(call.name, call.stage, call.scope)] = row  # a repeated call: its last values
    order = {s: i for i, s in enumerate(STAGES)}
    return sorted(latest.values(), key=lambda r: order.get(r.stage, len(order)))


def evaluated_equations(inp: Inputs, pipeline_stage: int | None = None,
                        tokens: float | None = None,
                        gpu_hour_price: float | None = None) -> list[Evaluated]:
    """Every equation evaluated for ``inp``'s layout, in evaluator-stage order."""
    from optimus_calc.evaluate.memory import estimate_memory

    est = estimate_memory(inp.model, inp.hw, inp.layout, inp.training, inp.assumptions,
                          record=True)
    ev = est.evaluation
    assert ev is not None
    stages = int(np.shape(ev.total_stage)[-1])
    if pipeline_stage is not None and not 0 <= pipeline_stage < stages:
        raise InputError(f"--stage {pipeline_stage}: the layout has pipeline stages 0 to "
                         f"{stages - 1}")
    rows = _rows(ev.calls, ev, pipeline_stage)
    rec = Recorder()
    with recording(rec):
        if tokens is not None and ev.has_step:
            set_stage("training")
            _training(inp, float(np.asarray(ev.step_time_s).reshape(-1)[0]), tokens,
                      gpu_hour_price)
        set_stage("collectives")
        _collectives(inp, float(np.asarray(ev.params_stage).reshape(-1)[0]))
    return rows + _rows(rec.calls, None, None)


def _training(inp: Inputs, step_s: float, tokens: float, price: float | None) -> None:
    from optimus_calc.analyses.train_time import train_time
    tr, hw = inp.training, inp.hw
    train_time(step_s, tr.global_batch * tr.seq_len, tokens, hw.gpus, hw.gpu.tdp_W or 0.0,
               inp.assumptions.pue, price)


def _collectives(inp: Inputs, params: float) -> None:
    """What `comm` reports for this cluster: every algorithm on an all-reduce (all-gather,
    broadcast, reduce) of one GPU's 16-bit gradients over all GPUs; SqueezeNIC's equations at
    r = 1 (no compression) across nodes. Each algorithm's calls carry its name as their scope
    (a hierarchical all-reduce times its legs with the ring's equation on part of the GPUs: the
    ring's own call over every GPU is the "ring all-reduce" one)."""
    from optimus_calc.evaluate import comm as C
    from optimus_calc.evaluate import squeezenic as SQ
    hw = inp.hw
    topo = C.topology(hw, hw.gpus)
    z = params * inp.training.gradient_bytes
    for algo, colls in C.ALLOWED.items():
        if algo is C.Algo.NVLS and topo.nvls_Bps is None:  # no NVLink SHARP on this group
            continue
        for coll in sorted(colls, key=lambda c: c.value):
            asm = inp.assumptions
            set_scope(f"{algo.value} {coll.value}")
            C.collective_time(coll, algo, z, topo, asm.hier_chunk_bytes,
                              asm.nccl_net_overhead_us, bool(asm.nccl_latency_model))
    if topo.nodes > 1:
        set_scope("squeezenic all-reduce")
        SQ.squeezenic(z, topo, 1.0, SQ.CompressSite.SMARTNIC, SQ.Approach.ONE, inp.assumptions)
    set_scope("")
