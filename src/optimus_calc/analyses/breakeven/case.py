"""Break-even inputs: the goals, one layout on one hardware configuration (a :class:`Case`), the
evaluator's figures for it at the stage that binds the step (:func:`measure`), the offload devices
and references `breakeven` compares, and sensitivity by finite differences.

Every figure is read from the one evaluator (:func:`optimus_calc.evaluate.engine.evaluate`).
"""

from __future__ import annotations

import dataclasses
from enum import Enum

import numpy as np

from optimus_calc.equations import compiled as eq
from optimus_calc.evaluate.batch import Batch
from optimus_calc.evaluate.optimusnic import card_pipeline
from optimus_calc.evaluate.context import Hardware
from optimus_calc.evaluate.engine import evaluate
from optimus_calc.evaluate.stages import StageTable, stage_table
from optimus_calc.evaluate.hw_params import Param
from optimus_calc.specs.model import Model
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Layout, Offload, Training
from optimus_calc.record import record


class Goal(str, Enum):
    HIDE = "hide"
    FIT = "fit"
    MATCH = "match"

    @property
    def text(self) -> str:
        return _GOAL_TEXT[self]


_GOAL_TEXT = {
    Goal.HIDE: "hide the optimizer step and its transfers in the step",
    Goal.FIT: "hold the optimizer shard without spilling",
    Goal.MATCH: "match the reference step time",
}


@record
class Case:
    """One layout on one hardware configuration."""

    model: Model
    hw: Hardware
    layout: Layout
    training: Training
    asm: Assumptions
    stages: StageTable

    @classmethod
    def of(cls, model: Model, hw: Hardware, layout: Layout, tr: Training,
           asm: Assumptions) -> "Case":
        return cls(model, hw, layout, tr, asm, stage_table(
            model, [layout.pp], False, [layout.interleave], asm.pipeline_extra_layers_first > 0))

    def with_param(self, p: Param, value: float) -> "Case":
        hw, lay = p.apply(self.hw, self.layout, value)
        return dataclasses.replace(self, hw=hw, layout=lay)


@record
class State:
    """The evaluator's figures of a batch of one, at the stage that binds the step."""

    step_time_s: float
    optimizer_s: float
    optimizer_exposed_s: float
    offload_transfer_s: float
    forward_s: float
    backward_s: float
    params_stage: float
    offload_bytes_per_device: float
    offload_capacity_per_device: float
    spill_bytes_per_device: float
    gpu_bytes: float
    gpu_capacity_bytes: float
    reasons: int
    offload: Offload
    window_s: float   # what the offloaded step overlaps with (the evaluator's own window)
    layers: float = 1.0           # layers of the binding stage (OptimusNIC's pipeline items)
    gradient_in_s: float = 0.0    # OptimusNIC's pipeline stages at the binding stage
    weights_out_s: float = 0.0
    pipeline_s: float = 0.0
    shard_params: float = 0.0     # the rank's optimizer partition (engine.optimizer_inputs)

    @property
    def excess_bytes(self) -> float:
        """State beyond the device's capacity (a SmartNIC's spill, a CPU's host-RAM excess)."""
        return max(0.0, self.offload_bytes_per_device - self.offload_capacity_per_device)

    @property
    def hide_margin_s(self) -> float:
        """OptimusNIC: the window minus the card's pipeline time (optimusnic.pipeline_time);
        the host strategies, whose step already includes its transfers and whose exposure has a
        floor: minus the exposed time."""
        if self.offload is Offload.SMARTNIC:
            return self.window_s - self.pipeline_s
        return -self.optimizer_exposed_s

    def update_budget_s(self, target: float = 0.0) -> float:
        """OptimusNIC: the longest update stage whose pipeline (optimusnic.pipeline_time, the
        link stages fixed) still fits the window plus ``target``; <= 0: the link stages alone
        fill it. pipeline_time is piecewise linear in T_up: with T_up the slowest stage it is
        T_up + (T_in + T_out) / n_L, otherwise M + (T_in + T_out + T_up - M) / n_L with M the
        slower link stage."""
        w = self.window_s + target
        n, t_in, t_out = max(self.layers, 1.0), self.gradient_in_s, self.weights_out_s
        m = max(t_in, t_out)
        slowest = w - (t_in + t_out) / n
        if slowest >= m:
            return slowest
        return n * (w - m) - (t_in + t_out - m)

    @property
    def link_stages_text(self) -> str:
        return (f"gradient in {self.gradient_in_s:.3g} s, weights out "
                f"{self.weights_out_s:.3g} s over {self.layers:.0f} layers")

    @property
    def base_step_s(self) -> float:
        """The step without its exposed optimizer time."""
        return self.step_time_s - self.optimizer_exposed_s


def measure(case: Case) -> State:
    """Evaluate ``case`` with the one evaluator."""
    tr = case.training
    ev = evaluate(Batch.of(case.layout, tr), case.model, case.hw, tr, case.asm,
                  stages=case.stages)
    return state_of(case, figures_of(ev), 0)


_TERMS = ("optimizer_s", "optimizer_exposed_s", "offload_transfer_s", "forward_s", "backward_s",
          "optimizer_window_s")
_FIELDS = ("step_time_s", "offload_bytes_per_device", "offload_capacity_per_device",
           "spill_bytes_per_device", "gpu_bytes", "capacity_bytes", "reasons")


def figures_of(ev) -> dict:
    """The figures a :class:`State` reads, as arrays with one row per layout of ``ev`` (the
    binding stage's parameters, shard degree and layers in ``stage``)."""
    rows = int(np.shape(ev.step_time_s)[0]) if np.ndim(ev.step_time_s) else 1

    def row_major(x):
        a = np.asarray(x, dtype=np.float64)
        if rows > 1 and a.ndim and a.shape[0] == rows:
            return a.reshape(rows, -1)
        return np.broadcast_to(a.reshape(1, -1), (rows, a.size))

    out = {name: row_major(ev.term(name))[:, 0] for name in _TERMS}
    out.update({name: row_major(getattr(ev, name))[:, 0] for name in _FIELDS})
    out["stage"] = (row_major(ev.worst_time)[:, 0],
                    row_major(ev.params_stage), row_major(np.broadcast_to(
                        np.asarray(ev.shard_degree_stage, dtype=np.float64),
                        np.shape(ev.params_stage))), row_major(ev.stage_layers))
    return out


def binding_figures(figs: dict, i: int) -> tuple[float, float, float, float]:
    """(parameters, shard degree, layers, optimizer window) of row ``i``'s binding stage."""
    worst, params, shards, layers = figs["stage"]
    k = int(worst[i])
    return (float(params[i, k if params.shape[1] > 1 else 0]),
            float(shards[i, k if shards.shape[1] > 1 else 0]),
            float(layers[i, k if layers.shape[1] > 1 else 0]),
            float(figs["optimizer_window_s"][i]))


def state_of(case: Case, figs: dict, i: int, pipe: dict | None = None) -> State:
    """The figures of ``case``, row ``i`` of :func:`figures_of` an evaluation (a batch of one:
    row 0; :mod:`.batched` stacks several cases in one evaluation and gives OptimusNIC's
    pipeline figures, ``pipe``, of every row at once)."""
    one = {k: float(v[i]) for k, v in figs.items() if k != "stage"}
    p_k, n_k, l_k, window = binding_figures(figs, i)
    if case.layout.offload is not Offload.SMARTNIC or case.hw.smartnic is None:
        pipe = {}
    elif pipe is None:
        pipe = pipeline_figures(case, p_k, n_k, l_k, window)
    return State(
        step_time_s=one["step_time_s"], optimizer_s=one["optimizer_s"],
        optimizer_exposed_s=one["optimizer_exposed_s"],
        offload_transfer_s=one["offload_transfer_s"],
        forward_s=one["forward_s"], backward_s=one["backward_s"],
        params_stage=p_k, layers=l_k, **pipe,
        shard_params=p_k / (n_k if int(case.layout.zero) >= 1 else 1),
        offload_bytes_per_device=one["offload_bytes_per_device"],
        offload_capacity_per_device=one["offload_capacity_per_device"],
        spill_bytes_per_device=one["spill_bytes_per_device"],
        gpu_bytes=one["gpu_bytes"], gpu_capacity_bytes=one["capacity_bytes"],
        reasons=int(one["reasons"]), offload=case.layout.offload,
        window_s=window)


def pipeline_figures(case: Case, params_stage, shard_degree, layers, window,
                     cards_per_node=None) -> dict:
    """OptimusNIC's pipeline at the binding stage, with the evaluator's inputs: the rank's ZeRO
    shard over the evaluator's shard degree (memory.zero_shard_degree), the card's spill
    (memory.optimizer_offloaded_bytes, bytes_per_offload_device, spill_bytes) and the window.
    Arrays welcome (then ``cards_per_node`` too, and arrays come back)."""
    hw, lay, tr = case.hw, case.layout, case.training
    gpn = hw.gpus_per_node
    k_sn = (lay.smartnics_per_node or gpn) if cards_per_node is None else cards_per_node
    shard = params_stage / (shard_degree if int(lay.zero) >= 1 else 1)
    opt = eq.memory__optimizer_offloaded_bytes(N_d=shard_degree, P=params_stage, Z=int(lay.zero),
                                               b_o=tr.optimizer_bytes, f_k=0.0, o_o=1.0)
    dev = eq.memory__bytes_per_offload_device(B_gpu=opt, G_n=gpn, K_n=k_sn)
    spill = eq.memory__spill_bytes(B_dev=dev, C=hw.smartnic.memory_bytes)
    pipe = card_pipeline(hw, tr, case.asm, shard_params=shard, cards_per_node=k_sn,
                         spill_bytes=spill, window_s=window, layers=layers)
    out = (pipe.gradient_in_s, pipe.weights_out_s, pipe.pipeline_s)
    if cards_per_node is None:
        out = tuple(float(x) for x in out)
    return dict(zip(("gradient_in_s", "weights_out_s", "pipeline_s"), out))


def shortfall(goal: Goal, st: State, reference_s: float | None) -> float:
    """How far the goal is from met (<= 0: met): seconds exposed, bytes over, seconds slower."""
    if goal is Goal.HIDE:
        return st.optimizer_exposed_s
    if goal is Goal.FIT:
        return st.excess_bytes
    if goal is Goal.MATCH:
        assert reference_s is not None
        return st.step_time_s - reference_s * (1 + 1e-12)
    raise AssertionError(goal)  # pragma: no cover - exhaustive


def met(goal: Goal, st: State, reference_s: float | None) -> bool:
    return shortfall(goal, st, reference_s) <= 0.0


# ---- sensitivity ------------------------------------------------------------------------------

@record
class Sensitivity:
    param: Param
    entry: str
    current: float
    step_elasticity: float            # % change of step time for +1% of the parameter
    headroom_elasticity: float | None  # % change of GPU memory headroom (None: unchanged)


# ---- devices and references -------------------------------------------------------------------

def offload_for(entry, hw: Hardware, asked: Offload | None = None) -> Offload:
    """The offload target an entry stands for: a SmartNIC card; a CPU as SuperOffload's
    superchip CPU (the node's own, on a superchip node) or as ZeRO-Offload's host."""
    from optimus_calc.errors import InputError
    from optimus_calc.specs.hardware import CPU, SmartNIC

    if isinstance(entry, SmartNIC):
        if asked not in (None, Offload.SMARTNIC):
            raise InputError(f"--offload {asked.value} does not run on {entry.name}, a "
                             f"{entry.device_type}; use --offload smartnic or leave it out")
        return Offload.SMARTNIC
    if isinstance(entry, CPU):
        if asked in (Offload.CPU, Offload.NVME):
            return asked
        superchip = hw.node.superchip and entry.name == hw.node.cpu
        if asked is Offload.SUPERCHIP and not superchip:
            raise InputError(f"--offload superchip needs the CPU of a superchip node; "
                             f"{hw.node.name} with {entry.name} is not one")
        if asked not in (None, Offload.SUPERCHIP):
            raise InputError(f"--offload {asked.value} does not run on the CPU {entry.name}; "
                             "use cpu, nvme or superchip")
        return Offload.SUPERCHIP if superchip else Offload.CPU
    raise InputError(f"{entry.name} is a {entry.kind}; breakeven takes an offload device: a "
                     "SmartNIC, DPU or FPGA card, or a CPU")


def device_case(cat, base: Case, entry, offload: Offload) -> Case:
    """``base`` with its optimizer offloaded to ``entry`` (SmartNICs keep the layout's count
    per node; a CPU replaces the node's host CPU)."""
    from optimus_calc.specs.hardware import CPU, SmartNIC

    hw, lay = base.hw, base.layout
    if isinstance(entry, SmartNIC):
        hw = dataclasses.replace(hw, smartnic=entry, smartnic_implicit=False,
                                 smartnic_host_link=cat.get(entry.host_link, "link"))
        lay = lay.model_copy(update={"offload": Offload.SMARTNIC, "smartnic": entry.name})
    elif isinstance(entry, CPU):
        hw = dataclasses.replace(hw, cpu=entry)
        lay = lay.model_copy(update={"offload": offload, "smartnic": None})
    return dataclasses.replace(base, hw=hw, layout=lay)


def catalog_devices(cat, hw: Hardware) -> list[tuple[object, Offload]]:
    """Every SmartNIC/DPU/FPGA card in the catalog, the node's CPU as a ZeRO-Offload host and,
    on a superchip node, as SuperOffload's CPU."""
    out: list[tuple[object, Offload]] = [(sn, Offload.SMARTNIC) for sn in cat.all("smartnic")]
    out.append((hw.cpu, Offload.CPU))
    if hw.node.superchip:
        out.append((hw.cpu, Offload.SUPERCHIP))
    return out


@record
class Reference:
    """The step time ``match`` compares with."""

    label: str
    layout: Layout
    training: Training
    step_time_s: float
    fits: bool


def best_without_offload(case: Case) -> Reference | None:
    """The fastest layout that keeps the optimizer on the GPU (the planner over every layout,
    micro-batch, recomputation and ZeRO stage, offload none), or None if none fits."""
    from optimus_calc.search.plan import plan

    res = plan(case.model, case.hw, case.training, case.asm, offloads=[Offload.NONE], top_k=1)
    if res.recommended is None:
        return None
    c = res.recommended
    return Reference("the fastest layout without offload", c.layout, c.training, c.step_s,
                     True)


def reference_of(case: Case, layout: Layout, tr: Training, label: str) -> Reference:
    """A named layout's step time, through the same evaluator."""
    ref = dataclasses.replace(case, layout=layout, training=tr,
                              stages=stage_table(case.model, [layout.pp], False,
                                                 [layout.interleave],
                                                 case.asm.pipeline_extra_layers_first > 0))
    st = measure(ref)
    return Reference(label, layout, tr, st.step_time_s, st.reasons == 0)
