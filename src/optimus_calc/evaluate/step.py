"""Step time of one layout: the evaluator's batch of one, as a report.

No arithmetic lives here; the terms are those of :func:`optimus_calc.evaluate.engine.evaluate`
at the pipeline stage that binds, the same numbers the planner ranks with.
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING

import numpy as np

from optimus_calc.evaluate.batch import Batch
from optimus_calc.evaluate.context import Hardware
from optimus_calc.evaluate.engine import evaluate
from optimus_calc.evaluate.evaluation import first_term
from optimus_calc.evaluate.memory import MemoryEstimate, estimate_memory
from optimus_calc.errors import InputError
from optimus_calc.specs.model import BareModel, Model
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Layout, Training
from optimus_calc.record import record

if TYPE_CHECKING:
    from optimus_calc.evaluate.inputs import Inputs


@record
class StepEstimate:
    step_time_s: float
    forward_s: float
    backward_s: float
    compute_s: float
    elementwise_s: float
    bubble_s: float
    tp_comm_s: float
    cp_comm_s: float
    ep_comm_s: float
    pp_comm_s: float
    dp_comm_s: float
    dp_comm_exposed_s: float
    optimizer_s: float
    optimizer_exposed_s: float
    offload_transfer_s: float
    param_offload_exposed_s: float
    fixed_s: float
    model_flops: float
    hardware_flops: float
    mfu: float
    tflops_per_gpu: float
    tokens_per_s: float
    optimizer_device: str
    model_flops_6n: float = 0.0  # 6 N_active tokens (compute.six_n_flops): planners' convention
    mfu_6n: float = 0.0
    model_flops_causal: float = 0.0  # causal core halved (compute.causal_model_flops): Megatron's
    mfu_causal: float = 0.0
    binding_stage: int = 0
    notes: list[str] = field(default_factory=list)


TERMS = ("step_time_s", "forward_s", "backward_s", "compute_s", "elementwise_s", "bubble_s",
         "tp_comm_s", "cp_comm_s", "ep_comm_s", "pp_comm_s", "dp_comm_s", "dp_comm_exposed_s",
         "optimizer_s", "optimizer_exposed_s", "offload_transfer_s",
         "param_offload_exposed_s", "fixed_s", "model_flops",
         "hardware_flops", "mfu", "tflops_per_gpu", "tokens_per_s", "model_flops_6n", "mfu_6n",
         "model_flops_causal", "mfu_causal")


def optimizer_device(hw: Hardware, layout: Layout) -> str:
    """The device that runs the optimizer step, as the reports name it (its strategy's)."""
    from optimus_calc.evaluate.strategies import strategy
    return strategy(layout.offload).optimizer_device(hw, layout)


def estimate_step(model: Model, hw: Hardware, layout: Layout, tr: Training, asm: Assumptions,
                  mem: MemoryEstimate | None = None,
                  terms: dict[str, float] | None = None) -> StepEstimate:
    """The step report of one layout; ``terms``: its TERMS already read from the batch ``mem``
    was cut from (:func:`batch_terms`), instead of one by one from the batch of one."""
    if mem is None or mem.evaluation is None or mem.inputs_key != (layout, tr, asm):
        mem = estimate_memory(model, hw, layout, tr, asm)  # not evaluated with these inputs
        terms = None
    ev = mem.evaluation
    assert ev is not None and ev.has_step
    vals = (dict(terms) if terms is not None else
            {k: first_term(ev, k) for k in TERMS})
    from optimus_calc.evaluate.strategies import strategy
    notes = strategy(layout.offload).step_notes(mem.offload)
    stage = mem.stages[int(np.asarray(ev.worst_time).reshape(-1)[0])].index
    return StepEstimate(**vals, optimizer_device=optimizer_device(hw, layout),
                        binding_stage=stage, notes=notes)


def batch_terms(ev, n: int) -> list[dict[str, float]]:
    """TERMS of each layout of a flat batch of ``n`` (one array operation per term)."""
    cols = {k: np.broadcast_to(np.asarray(ev.term(k)), np.shape(ev.step_time_s)).reshape(-1)
            for k in TERMS}
    return [{k: float(v[j]) for k, v in cols.items()} for j in range(n)]


def _check_step_inputs(inp: Inputs, model_text: str) -> None:
    if isinstance(inp.model, BareModel):
        raise InputError(f"MODEL {model_text!r} is a bare parameter count: step time needs an "
                         "architecture (a catalog model or a config.json)")
    if inp.training.model_states_only:
        raise InputError("--model-states-only does not apply to step time")


def step_figure(inp: Inputs, model_text: str, figure: str) -> float:
    """One figure of :func:`step_of` (a TERMS name, or ``gpu_memory_bytes``: the most loaded
    stage's total), read from the one evaluation without building the reports (`calibrate`
    asks a few hundred of them per fit)."""
    _check_step_inputs(inp, model_text)
    tr = inp.training
    ev = evaluate(Batch.of(inp.layout, tr), inp.model, inp.hw, tr, inp.assumptions,
                  all_stages=True)
    value = ev.gpu_bytes if figure == "gpu_memory_bytes" else ev.term(figure)
    return float(np.asarray(value).reshape(-1)[0])


def step_of(inp: Inputs, model_text: str) -> tuple[MemoryEstimate, StepEstimate]:
    """Memory and step time of one resolved layout (`step`, `compare`); an input error when the
    model or the options give no step time."""
    _check_step_inputs(inp, model_text)
    mem = estimate_memory(inp.model, inp.hw, inp.layout, inp.training, inp.assumptions)
    st = estimate_step(inp.model, inp.hw, inp.layout, inp.training, inp.assumptions, mem)
    return mem, st
