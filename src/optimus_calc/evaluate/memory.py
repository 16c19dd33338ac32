"""Memory of one layout: the evaluator's batch of one, as a per-stage report with reasons.

No arithmetic lives here: every number is read from :func:`optimus_calc.evaluate.engine.evaluate`
(the planner's evaluator), so single-layout and planner figures are the same by construction.
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING

import numpy as np

from optimus_calc.errors import InputError
from optimus_calc.evaluate.batch import Batch
from optimus_calc.evaluate.context import Hardware
from optimus_calc.evaluate.engine import evaluate, usable_gpu_bytes
from optimus_calc.evaluate.evaluation import Evaluation, stage_value
from optimus_calc.evaluate.strategies import strategy
from optimus_calc.evaluate.reasons import Reason, reasons_of
from optimus_calc.evaluate.evaluation import binding_kind
from optimus_calc.specs.model import BareModel, Model
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Layout, Offload, Training
from optimus_calc.units import fmt_gb
from optimus_calc.record import record

if TYPE_CHECKING:
    from optimus_calc.evaluate.inputs import Inputs


@record
class StageMemory:
    index: int
    layers: int
    params: float
    weights_bytes: float
    gradients_bytes: float
    optimizer_bytes: float
    activations_bytes: float
    overhead_bytes: float
    total_bytes: float
    micro_batches_in_flight: int


@record
class OffloadMemory:
    target: Offload
    device: str
    devices: int                       # in the whole cluster
    devices_per_node: int
    bytes_per_gpu: float               # what one GPU moves off (optimizer shard etc.)
    bytes_per_device: float
    capacity_bytes_per_device: float
    spill_to_host_bytes_per_device: float
    fits_on_device: bool
    host_bytes_per_node: float
    host_capacity_bytes_per_node: float
    devices_per_gpu_for_capacity: int  # cards per GPU that would hold the shard (SmartNIC)


@record
class MemoryEstimate:
    stages: list[StageMemory]
    worst: StageMemory
    capacity_bytes: float
    offload: OffloadMemory
    fits: bool
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    model_states_total_bytes: float = 0.0
    micro_batches: int = 1
    evaluation: Evaluation | None = field(default=None, repr=False, compare=False)
    inputs_key: tuple = field(default=(), repr=False, compare=False)  # (layout, training, asm)

    usable_bytes: float = 0.0          # capacity less the safety margin (gpu_headroom)

    @property
    def headroom_bytes(self) -> float:
        """Usable GPU memory left free (0 when the layout does not fit)."""
        return max(0.0, self.usable_bytes - self.worst.total_bytes)

    @property
    def shortfall_bytes(self) -> float:
        """GPU memory missing for the layout to fit (0 when it fits)."""
        return max(0.0, self.worst.total_bytes - self.usable_bytes)

    def inputs(self, name: str, stage: int | None = None,
               scope: str | None = None) -> dict[str, float] | None:
        """The values equation ``name`` received for the binding stage (for `explain`): its
        last evaluation, or the one for ``scope``."""
        ev = self.evaluation
        call = None if ev is None else ev.last_call(name)
        if call is None:
            return None
        if scope is not None:
            call = ev.last_call(name, scope)
            named = [repr(s) for s in ev.scopes(name) if s]
            if call is None:
                raise InputError(f"--for {scope!r}: {name} is evaluated " + (
                    f"for {', '.join(named)} here" if named else "once here, for no scope: "
                    "leave --for out"))
        if stage is not None and not 0 <= stage < len(self.stages):
            raise InputError(f"--stage {stage}: the layout has pipeline stages 0 to "
                             f"{len(self.stages) - 1}")
        return {k: stage_value(ev, v, binding_kind(call), stage)
                for k, v in call.inputs.items()}


def _stages(ev: Evaluation) -> list[StageMemory]:
    n = np.shape(ev.total_stage)[-1]

    def col(x) -> list[float]:  # the first layout's row as floats, one per stage
        row = np.asarray(x, dtype=np.float64).reshape(-1, np.shape(x)[-1])[0].tolist()
        return row if len(row) > 1 else row * n
    ix, lay, par, w, g, o, act, over, tot, fl = map(col, (
        ev.stage_index, ev.stage_layers, ev.params_stage, ev.weights_stage, ev.gradients_stage,
        ev.optimizer_stage, ev.activations_stage, ev.overhead_stage, ev.total_stage,
        ev.in_flight_stage))
    return [StageMemory(int(ix[k]), int(lay[k]), par[k], w[k], g[k], o[k], act[k], over[k],
                        tot[k], int(fl[k])) for k in range(n)]


def _reason_text(r: Reason, ev: Evaluation, worst: StageMemory, hw: Hardware,
                 target: Offload, asm: Assumptions) -> str:
    one = lambda x: float(np.asarray(x).reshape(-1)[0])  # noqa: E731
    if r is Reason.GPU_MEMORY:
        usable = usable_gpu_bytes(hw, asm)
        return (f"GPU memory {fmt_gb(worst.total_bytes)} on stage {worst.index} exceeds the "
                f"{fmt_gb(usable)} usable of {hw.gpu.name} ({fmt_gb(ev.capacity_bytes)} less "
                f"{asm.gpu_headroom:.0%} headroom; model states "
                f"{fmt_gb(worst.weights_bytes + worst.gradients_bytes + worst.optimizer_bytes)}"
                f", activations {fmt_gb(worst.activations_bytes)}, overheads "
                f"{fmt_gb(worst.overhead_bytes)})")
    info = dict(dev=one(ev.offload_bytes_per_device), cap=one(ev.offload_capacity_per_device),
                host=one(ev.host_bytes_per_node), host_cap=ev.host_capacity_bytes,
                node=hw.node.name, hw=hw, per_gpu=one(ev.offload_bytes_per_gpu))
    text = strategy(target).reason_text(r, info)
    if text is None:
        raise AssertionError(r)  # every Reason a strategy raises has its text
    return text


def memory_from(ev: Evaluation, model: Model | BareModel, hw: Hardware, layout: Layout,
                tr: Training, asm: Assumptions | None = None) -> MemoryEstimate:
    """The report of a batch-of-one evaluation evaluated with ``all_stages``."""
    stages = _stages(ev)
    k = int(np.asarray(ev.worst_memory).reshape(-1)[0])
    worst = stages[k]
    one = lambda x: float(np.asarray(x).reshape(-1)[0])  # noqa: E731
    bits = int(np.asarray(ev.reasons).reshape(-1)[0])
    reasons = [_reason_text(r, ev, worst, hw, layout.offload, asm or Assumptions())
               for r in reasons_of(bits)]
    notes: list[str] = []
    target = layout.offload
    dev, cap = one(ev.offload_bytes_per_device), one(ev.offload_capacity_per_device)
    spill = one(ev.spill_bytes_per_device)
    per_node = int(one(ev.offload_devices_per_node))
    per_gpu = one(ev.offload_bytes_per_gpu)
    strat = strategy(target)
    info = dict(dev=dev, spill=spill, per_gpu=per_gpu)
    notes += strat.notes(hw, layout, info)
    cards = strat.devices_per_gpu_for_capacity(hw, per_gpu)
    name = strat.device_name(hw)
    # a target the node lacks (superchip, NVMe) holds nothing: never "fits on device yes"
    no_device = {Reason.NOT_SUPERCHIP, Reason.NO_NVME} & set(reasons_of(bits))
    fits_dev = not no_device and strat.fits_on_device(dev, cap, spill)
    off = OffloadMemory(target, name, per_node * hw.nodes, per_node, per_gpu, dev, cap, spill,
                        fits_dev, one(ev.host_bytes_per_node), ev.host_capacity_bytes, cards)
    copy = ev.last_call("fp8.weight_copy_bytes")
    if copy is not None and stage_value(ev, copy.result, "memory", k) > 0:
        q = tr.gemm_recipe.label
        notes.append(f"{q} ({tr.gemm_recipe.value}): the weights include "
                     f"{fmt_gb(stage_value(ev, copy.result, 'memory', k))} of {q} weight copies "
                     f"(fp8.weight_copy_bytes); GEMM inputs are saved in {q} "
                     "(fp8.activation_layer_bytes)")
    if asm is not None and asm.zero1_grad_all_reduce and int(layout.zero) == 1:
        notes.append(f"gradients: the {tr.gradient_bytes}-byte buffer and the {tr.weight_bytes}-"
                     "byte .grad DeepSpeed's BF16_Optimizer keeps next to it (memory."
                     "gradients_bytes, a_bf; not in the model-state total below)")
    if isinstance(model, BareModel):
        notes.append(f"{model.name} is a bare parameter count: parameters split evenly over "
                     "pipeline stages; no activations")
    per_param = tr.weight_bytes + tr.gradient_bytes + tr.optimizer_bytes
    return MemoryEstimate(stages=stages, worst=worst, capacity_bytes=ev.capacity_bytes,
                          offload=off, fits=not reasons, reasons=reasons, notes=notes,
                          model_states_total_bytes=model.total_params * per_param,
                          micro_batches=int(one(ev.micro_batches)), evaluation=ev,
                          inputs_key=(layout, tr, asm),
                          usable_bytes=usable_gpu_bytes(hw, asm or Assumptions()))


def estimate_memory(model: Model | BareModel, hw: Hardware, layout: Layout, tr: Training,
                    asm: Assumptions, record: bool = False) -> MemoryEstimate:
    """The memory report of one layout (every pipeline stage); ``record``: keep every equation
    call with its inputs (what `explain` prints; a quarter of the cost of a one-layout
    evaluation, so only the explaining commands ask for it)."""
    ev = evaluate(Batch.of(layout, tr), model, hw, tr, asm, all_stages=True, record=record)
    return memory_from(ev, model, hw, layout, tr, asm)


def equation_values(inp: Inputs, name: str, stage: int | None = None,
                    scope: str | None = None) -> tuple[dict[str, float], list[str]]:
    """The inputs equation ``name`` received when the one evaluator ran on ``inp`` (at the
    binding pipeline stage: the most loaded for memory.*, the slowest for step.* and
    compute.*), and every scope it was evaluated for: what `explain NAME MODEL ...` prints."""
    est = estimate_memory(inp.model, inp.hw, inp.layout, inp.training, inp.assumptions,
                          record=True)
    values = est.inputs(name, stage, scope)
    if values is None and (why := _condition(name, inp)):
        raise InputError(f"{name} is not evaluated for this configuration: {why}")
    if values is None:
        raise InputError(f"{name} is not evaluated for this configuration (e.g. step time "
                         "with --model-states-only or a bare parameter count, or an equation "
                         "the command uses with other inputs); 'optimus-calc explain' lists the "
                         "equations")
    assert est.evaluation is not None
    return values, est.evaluation.scopes(name)


# Equations that run only under a condition of the model or the hardware: what `explain` says
# when one did not run (the generic message otherwise)
# the equations that run only with the weights offloaded (--offload-params)
_PARAM_STREAM = ("offload.param_stream_exposed", "offload.param_stream_bytes",
                 "offload.param_stream_time_cpu", "offload.param_stream_time_nvme")
_ONLY_WHEN = {
    "efficiency.head_dim_attention_efficiency": "it runs only where the GPU's catalog entry "
    "lists head-dim ratios for its fused attention kernel (attention_head_dim64: the H100 "
    "family and Blackwell; none on A100 or V100, whose kernel runs at its fitted efficiency "
    "at every head dim) and FlashAttention is on",
    "compute.rope_bytes": "it runs only for a model with a YaRN RoPE scaling "
    "(rope_yarn_factor > 1, e.g. gpt-oss; not MLA) under a profile whose RoPE is unfused "
    "(--framework megatron)",
    **{eq: f"it runs only with --recompute selective --recompute-modules {mod} (Megatron-LM's "
       "list: framework-neutral physics and --framework megatron read it; the other profiles "
       "drop it, which step notes)" for eq, mod in (
           ("compute.moe_act_recompute_bytes", "moe_act"),
           ("compute.norm_recompute_bytes", "layernorm"),
           ("memory.discarded_activation_bytes", "layernorm or moe_act, on an MoE model"))},
    **{eq: "it runs only when the weights are offloaded (--offload-params, with --offload cpu "
       "or nvme at --zero 3): they are then streamed in every micro-batch"
       for eq in _PARAM_STREAM},
}


def _condition(name: str, inp) -> str:
    """Why equation ``name`` did not run, where it runs only under a condition that these
    inputs miss ("" where they meet it: something else kept it from running)."""
    from optimus_calc.evaluate.efficiency import head_dim_ratio
    from optimus_calc.evaluate.rope import rope_unfused
    model, asm, tr = inp.model, inp.assumptions, inp.training
    if ("moe" in name or "expert" in name) and not getattr(model, "is_moe", False):
        return "it runs only for an MoE model (this one is dense)"
    # the evaluator's own conditions (evaluate/efficiency.py, rope.py), not a copy of them
    sel = tr.recompute.value == "selective"
    missed = {"efficiency.head_dim_attention_efficiency": not tr.flash_attention
              or head_dim_ratio(inp.hw.gpu, tr.attention_kernel, asm) is None,
              "compute.rope_bytes": not rope_unfused(model, asm),
              "compute.moe_act_recompute_bytes": not sel or "moe_act" not in tr.recompute_modules,
              "compute.norm_recompute_bytes": not sel or "layernorm" not in tr.recompute_modules,
              **dict.fromkeys(_PARAM_STREAM, not inp.layout.offload_params),
              "memory.discarded_activation_bytes": not sel or not tr.recompute_modules
              or not getattr(model, "is_moe", False)}
    return _ONLY_WHEN[name] if missed.get(name) else ""
