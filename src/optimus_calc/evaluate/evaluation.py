"""The evaluator's result: arrays per layout (and per stage), read lazily at the binding stage."""

from __future__ import annotations

from dataclasses import field, fields

import numpy as np

from optimus_calc.equations import compiled as eq
from optimus_calc.record import record


@record
class Evaluation:
    """Arrays of the batch's broadcast shape (``..._stage`` and ``stage_...`` ones have a
    trailing stage axis; :func:`staged`)."""

    stage_index: np.ndarray
    stage_layers: np.ndarray
    params_stage: np.ndarray
    weights_stage: np.ndarray
    gradients_stage: np.ndarray
    optimizer_stage: np.ndarray
    activations_stage: np.ndarray
    overhead_stage: np.ndarray
    total_stage: np.ndarray
    in_flight_stage: np.ndarray
    worst_memory: np.ndarray | None  # position on the stage axis of the most loaded stage
    #                                (None from engine.evaluate_window)
    gpu_bytes: np.ndarray
    capacity_bytes: float
    micro_batches: np.ndarray
    offload_bytes_per_gpu: np.ndarray
    offload_bytes_per_device: np.ndarray
    offload_capacity_per_device: np.ndarray
    offload_devices_per_node: np.ndarray
    spill_bytes_per_device: np.ndarray
    host_bytes_per_node: np.ndarray
    host_capacity_bytes: float
    reasons: np.ndarray             # bit set of Reason
    has_step: bool
    step_time_s: np.ndarray | None = None
    worst_time: np.ndarray | None = None     # position on the stage axis of the slowest stage
    stage_terms: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    step_figures: dict[str, float] = field(default_factory=dict, repr=False)
    calls: tuple = field(default=(), repr=False)  # recording.Call of every equation, in order
    # memory.zero_shard_degree per stage: the ranks a stage's ZeRO states shard over (DP x CP,
    # experts over DP x CP / EP); analyses that size an offload shard take it from here
    shard_degree_stage: np.ndarray | float = 1.0

    def row(self, i: int, n: int, stages: int | None = None) -> "Evaluation":
        """Layout ``i`` of a flat batch of ``n`` layouts as a batch of one (arrays whose first
        axis is the batch's cut to row ``i``; the rest broadcast): what the one-layout reports
        (memory.memory_from, step.estimate_step) read. Recorded calls are not kept.

        ``stages``: the layout's own pipeline stages, when the batch mixed pipeline degrees
        with every stage evaluated (stages.stage_table pads a shorter pipeline with copies of
        its stage 0, which never bind: the worst stage is the first largest): the per-stage
        arrays are cut to them."""
        def cut(x, staged=False):
            if isinstance(x, dict):
                return {k: cut(v, staged) for k, v in x.items()}
            if isinstance(x, np.ndarray) and x.ndim and x.shape[0] == n:
                x = x[i:i + 1]
            if staged and stages is not None and np.ndim(x) and np.shape(x)[-1] > stages:
                x = x[..., :stages]
            return x
        out = {f.name: cut(getattr(self, f.name), staged(f.name)) for f in fields(self)}
        return Evaluation(**dict(out, calls=()))

    @property
    def inputs(self) -> dict[str, dict[str, np.ndarray]]:
        """The inputs of each recorded equation's last call (the one its figure comes from)."""
        return {c.name: c.inputs for c in self.calls}

    def last_call(self, name: str, scope: str | None = None):
        """The last recorded call of equation ``name`` (for ``scope`` if given), or None."""
        for call in reversed(self.calls):
            if call.name == name and scope in (None, call.scope):
                return call
        return None

    def scopes(self, name: str) -> list[str]:
        """What equation ``name`` was evaluated for (e.g. tp, cp, dp), in order."""
        return list(dict.fromkeys(c.scope for c in self.calls if c.name == name))

    @property
    def feasible(self) -> np.ndarray:
        return self.reasons == 0

    def term(self, name: str) -> np.ndarray:
        """A step-time term per layout, at the stage that binds the step (computed on demand:
        the planner ranks on ``step_time_s`` and asks for the rest of its top K only)."""
        f = self.step_figures
        if name == "step_time_s":
            return self.step_time_s
        if name == "model_flops":
            return np.broadcast_to(f["model_flops"], np.shape(self.step_time_s))
        if name == "model_flops_6n":
            return np.broadcast_to(f["model_flops_6n"], np.shape(self.step_time_s))
        if name == "mfu_6n":  # the same utilisation with 6 N tokens (compute.six_n_flops)
            return eq.step__mfu(F_model=f["model_flops_6n"], N_gpus=f["gpus"],
                                T_step=self.step_time_s, peak=f["peak"])
        if name == "model_flops_causal":
            return np.broadcast_to(f["model_flops_causal"], np.shape(self.step_time_s))
        if name == "mfu_causal":  # Megatron-LM's convention (compute.causal_model_flops)
            return eq.step__mfu(F_model=f["model_flops_causal"], N_gpus=f["gpus"],
                                T_step=self.step_time_s, peak=f["peak"])
        if name == "tokens":
            return np.broadcast_to(f["tokens"], np.shape(self.step_time_s))
        if name == "mfu":
            return eq.step__mfu(F_model=f["model_flops"], N_gpus=f["gpus"],
                                T_step=self.step_time_s, peak=f["peak"])
        if name == "tokens_per_s":
            return eq.step__tokens_per_s(T_step=self.step_time_s, tokens=f["tokens"])
        if name == "tflops_per_gpu":
            return self.term("hardware_flops") / self.step_time_s / f["gpus"] / 1e12
        return _pick(self.stage_terms[name], self.worst_time)


def first_term(ev: Evaluation, name: str) -> float:
    """``ev.term(name)``'s first value as a float: of a batch of one, its value. A stage term is
    read at the binding stage directly (``_pick`` broadcasts and copies the whole array, per
    term, for each single-layout report: a speed tactic, the same value)."""
    x = ev.stage_terms.get(name) if name not in _DERIVED else None
    if x is None:
        return float(np.asarray(ev.term(name)).reshape(-1)[0])
    x = np.asarray(x)
    row = x.reshape(-1, x.shape[-1])[0]
    return float(row[int(np.asarray(ev.worst_time).reshape(-1)[0])] if row.shape[-1] > 1
                 else row[0])


# the names Evaluation.term computes itself (the rest are stage terms picked at the binding stage)
_DERIVED = frozenset(("step_time_s", "model_flops", "model_flops_6n", "mfu_6n", "tokens", "mfu",
                      "tokens_per_s", "tflops_per_gpu", "model_flops_causal", "mfu_causal"))


def staged(name: str) -> bool:
    """Whether Evaluation field ``name`` has a trailing stage axis: the class's naming rule,
    ``..._stage`` and ``stage_...`` (stage_terms: each of its values)."""
    return name.endswith("_stage") or name.startswith("stage_")


def _pick(x, k):
    """x (..., K) at stage position k (...,)."""
    x, k = np.asarray(x), np.asarray(k)
    if x.shape[-1] == 1:  # the same on every stage
        return np.broadcast_to(x[..., 0], np.broadcast_shapes(x.shape[:-1], k.shape)).copy()
    x = np.broadcast_to(x, np.broadcast_shapes(x.shape, k.shape + (1,)))
    return np.take_along_axis(x, np.asarray(k)[..., None], axis=-1)[..., 0]


MEMORY_STAGES = ("memory", "offload devices")
"""Evaluator stages whose binding pipeline stage is the most loaded one (the rest: the slowest)."""


def binding_kind(call) -> str:
    """``memory`` or ``time``: which pipeline stage binds the figure ``call`` contributes to."""
    return "memory" if call.stage in MEMORY_STAGES else "time"


def stage_value(ev: Evaluation, x, which: str = "time", stage: int | None = None):
    """A recorded input of a batch of one, at the binding stage (``time`` or ``memory``)."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 0:
        return float(x)
    k = stage if stage is not None else int(
        (ev.worst_time if which == "time" and ev.worst_time is not None
         else ev.worst_memory).reshape(-1)[0])
    flat = x.reshape(-1, x.shape[-1]) if x.ndim >= 1 else x
    row = flat[0]
    return float(row[k] if row.shape[-1] > 1 else row[0])
