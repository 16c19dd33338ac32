"""The evaluator's typed, frozen context and the record each of its stages returns.

Arrays broadcast against each other: per-layout values carry a trailing stage axis of length 1
(``L(x)`` below), per-stage values the pipeline stages that can bind (see stages.py).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from optimus_calc.evaluate.batch import resolve_global_batch
from optimus_calc.evaluate.batch import R_FULL, Batch
from optimus_calc.evaluate.context import Hardware
from optimus_calc.evaluate.stages import (StageColumns, StageTable, sorted_unique,
                                          stage_argmax, stage_max, stage_table)
from optimus_calc.specs.model import BareModel, Model
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Training
from optimus_calc.record import record

Array = np.ndarray



def number(x):
    """A Python float for one value; an array as it is (a capacity given as a column by
    breakeven's stacked cases stays one value per row)."""
    return float(x) if np.ndim(x) == 0 else x

@record
class Ctx:
    """One batch of layouts on one model, hardware and training: everything a stage reads."""

    model: Model | BareModel
    hw: Hardware
    tr: Training
    asm: Assumptions
    t: Array
    pp: Array
    dp: Array
    cp: Array
    ep: Array
    z: Array            # ZeRO stage
    off: Array          # offload strategy code (strategies.code_of)
    rc: Array           # recompute code
    spf: Array          # 1 with sequence parallelism
    mb: Array
    v: Array            # interleaved chunks
    opar: Array         # 1: ZeRO-3 weights offloaded with the optimizer
    gfrac: Array        # SuperOffload: optimizer fraction kept on the GPU
    spill_ok: Array
    sn_k: Array         # SmartNICs per node (0: one per GPU)
    gb: Array           # global batch per layout
    m: Array            # micro-batches per step
    st: StageColumns    # the stage table's columns at each layout's pipeline degree
    etp: Array = 0      # expert TP (0: as TP; parallel folding sets it)

    @functools.cached_property
    def t_x(self) -> Array:
        """The experts' tensor-parallel degree: etp where set, else TP."""
        return np.where(np.asarray(self.etp) > 0, self.etp, self.t)

    @property
    def gpn(self) -> int:
        return self.hw.gpus_per_node

    @property
    def s(self) -> int:
        return self.tr.seq_len

    @functools.cached_property
    def iota(self) -> Array:
        """The most-loaded EP rank's share at each layout (efficiency.moe_imbalance_cap): the
        typed imbalance capped by what top-k routing can reach; 1 on a dense model."""
        if not getattr(self.model, "is_moe", False):
            return np.float64(1.0)
        from optimus_calc.evaluate.shapes import imbalance_at
        return imbalance_at(self.model, self.ep, self.asm.moe_imbalance)

    @functools.cached_property
    def r_full(self) -> Array:
        return (self.rc == R_FULL).astype(np.float64)

    @functools.cached_property
    def codes(self) -> frozenset:
        """The offload strategy codes the batch's layouts use (found once per context: every
        stage asks per strategy)."""
        off = np.asarray(self.off).reshape(-1)
        if off.size <= 64:
            return frozenset(off.tolist())
        # a large batch: one counting pass (a sort of every layout's code costs ~30x more)
        return frozenset((np.flatnonzero(np.bincount(off)) if off.min() >= 0
                          else sorted_unique(off)).tolist())

    def uses(self, code: int) -> bool:
        """Whether any layout of the batch uses offload strategy ``code``."""
        return code in self.codes

    def memo(self, key, make):
        """``make(self)``, made once per context: a figure several stages ask for."""
        d = self.__dict__.setdefault("_memo", {})
        if key not in d:
            d[key] = make(self)
        return d[key]

    def mine(self, code: int, stage=None):
        """``off == code``: the layouts of offload strategy ``code`` (shape of ``off``; with
        ``stage`` 0 without its stage axis), or True when the batch holds that strategy only;
        made once per context (the memory, devices, feasibility and optimizer stages ask)."""
        if len(self.codes) == 1:
            return True
        masks = self.__dict__.setdefault("_masks", {})
        got = masks.get((code, stage))
        if got is None:
            got = masks[code, stage] = self.off == code if stage is None else self.mine(code)[
                ..., stage]
        return got


# a frozen model's derived constants by the model's identity (kept, so its id is not reused):
# its properties sum every layer kind anew on each call, and a report evaluates the same model
# again and again (a speed tactic: the same values)
_PER_MODEL: dict[tuple, tuple] = {}


def per_model(model, what: str, make):
    """``make(model)``, made once per (frozen) model and ``what``."""
    key = (id(model), what)
    got = _PER_MODEL.get(key)
    if got is not None and got[0] is model:
        return got[1]
    value = make(model)
    if len(_PER_MODEL) >= 256:
        _PER_MODEL.clear()
    _PER_MODEL[key] = (model, value)
    return value


def active_params(model) -> float:
    """``float(model.active_params)``, kept per model (:func:`per_model`)."""
    return per_model(model, "active_params", lambda m: float(m.active_params))


def make_ctx(batch: Batch, model, hw: Hardware, tr: Training, asm: Assumptions,
             all_stages: bool, stages: StageTable | None) -> Ctx:
    L = lambda x: np.asarray(x)[..., None]  # noqa: E731  per-layout value -> stage axis
    dp, mb = L(batch.dp), L(batch.mb)
    gb = resolve_global_batch(dp, mb, tr)  # per layout: the training's or the batch rule's
    st = (stages or stage_table(model, batch.pp, all_stages, batch.v,
                                asm.pipeline_extra_layers_first > 0)).lookup(
        batch.pp, batch.v)  # stage-major
    return Ctx(model=model, hw=hw, tr=tr, asm=asm, t=L(batch.tp), pp=L(batch.pp), dp=dp,
               cp=L(batch.cp), ep=L(batch.ep), z=L(batch.zero), off=L(batch.offload),
               rc=L(batch.recompute), spf=L(batch.sp), mb=mb, v=L(batch.v),
               opar=L(batch.offload_params), gfrac=L(batch.gpu_fraction),
               spill_ok=L(batch.allow_spill), sn_k=L(batch.smartnics_per_node), gb=gb,
               m=gb // (dp * mb), st=st, etp=L(batch.etp))


def _at_rows(x, rows, nb: int):
    """``x`` at grid points ``rows`` when it varies along a planner chunk's grid (the axis
    before the stages, of length ``nb``), stored as it was (stage-major when it was)."""
    if not isinstance(x, np.ndarray) or x.ndim < 2 or x.shape[-2] != nb or nb == 1:
        return x
    if x.strides[-1] > x.strides[-2]:  # stage-major: np.take allocates the stages first
        return np.moveaxis(np.moveaxis(x, -1, 0).take(rows, axis=-1), 0, -1)
    return x.take(rows, axis=-2)


def at_grid(ctx: Ctx, mem: "MemoryRecord", rows) -> tuple[Ctx, "MemoryRecord"]:
    """``ctx`` at grid points ``rows`` (ascending) of a planner chunk, whose grid is the axis
    before the stages, and of ``mem`` what the compute stage reads (the activations' inputs,
    the rest left as it is): the planner's bound on the step, computed only where a layout
    still needs it. The values are the whole chunk's at those points."""
    nb = np.shape(ctx.gb)[-2]
    cut = lambda x: _at_rows(x, rows, nb)  # noqa: E731
    st = dataclasses.replace(ctx.st, **{f.name: cut(getattr(ctx.st, f.name))
                                        for f in dataclasses.fields(ctx.st)})
    sub = dataclasses.replace(ctx, st=st, **{f.name: cut(getattr(ctx, f.name))
                                             for f in dataclasses.fields(ctx) if f.name != "st"})
    return sub, dataclasses.replace(mem, act0=cut(mem.act0), layer_args={
        k: cut(v) for k, v in mem.layer_args.items()})


@record
class MemoryRecord:
    """GPU memory per stage (memory.*)."""

    flags: tuple            # (o_w, o_g, o_o, f_k)
    P: Array
    W: Array
    G: Array
    O: Array
    act: Array
    over: Array
    total: Array
    n_f: Array              # micro-batches in flight
    sigma: Array            # sequence parallelism in effect
    layer_args: dict        # memory.activation_layer_bytes' inputs but r
    states_only: bool
    n_sh: Array = 1.0       # memory.zero_shard_degree: ranks the ZeRO states shard over
    p_x: Array = 0.0        # expert parameters per GPU (shard over DP x CP / EP)
    act0: Array | None = None  # memory.activation_layer_bytes at r = 0 (the compute reuses it)

    @property
    def worst(self) -> Array:
        return stage_argmax(self.total)

    @functools.cached_property
    def gpu_bytes(self) -> Array:
        return stage_max(self.total)


@record
class HostState:
    """What one GPU moves off, per stage (memory.*_offloaded/host_*), and the host's RAM."""

    optimizer: Array
    gradients: Array
    weights: Array
    host_capacity: float


@record
class DeviceUse:
    """One offload strategy's devices (arrays per stage unless said)."""

    bytes_per_device: Array | float
    bytes_per_gpu: Array | float
    capacity: float                 # per device
    per_node: Array | int           # devices per node
    spill: Array | float = 0.0      # per device, to host RAM
    host_per_node: Array | float = 0.0


@record
class Devices:
    """The offload devices of every layout, reduced to the most loaded stage, and reasons."""

    bytes_per_device: Array
    bytes_per_gpu: Array
    capacity: Array
    per_node: Array
    spill: Array
    host_per_node: Array
    host_capacity: float
    reasons: Array          # bit set of Reason
    uses: dict              # strategy code -> its DeviceUse (per stage)


@record
class ComputeRecord:
    """Forward/backward per stage (compute.*, step.*_flops, step.elementwise_time)."""

    f_l: float
    f_h: float
    f_r: Array
    tokens: Array
    peak: float
    T_cf: Array
    T_cb: Array
    T_ef: Array
    T_eb: Array
    T_f: Array
    T_b: Array
    bubble: Array
    W_f: Array              # one micro-batch's forward
    W_b: Array              # one micro-batch's backward
    T_att: Array | float = 0.0  # the attention core's time in the step (step.cp_comm_time)


@record
class CommRecord:
    """Communication per stage (step.*_comm_time, step.dp_exposed_time)."""

    T_tp: Array
    T_cp: Array
    T_ep: Array
    T_pp: Array
    T_dp: Array
    T_dpx: Array


@record
class OptimizerInputs:
    """What every strategy's optimizer step starts from."""

    shard: Array            # parameters of one rank's optimizer partition, per stage
    phi: float              # FLOPs per parameter
    bpp: float              # bytes per parameter of a fused kernel (16-bit gradients)
    link_Bps: float         # GPU-host link, effective
    link_kw: dict           # link_GBps, link_eff for offload_step
    dp_tail_s: Array | float = 0.0  # exposed data-parallel time (step.dp_exposed_time)


@record
class OptimizerUse:
    """One strategy's optimizer step (arrays per stage)."""

    step_s: Array
    transfer_s: Array | float
    exposed_s: Array
    window_s: Array | float
    param_exposed_s: Array | float = 0.0


@record
class OptimizerRecord:
    """Every layout's optimizer step under its strategy (the strategies' OptimizerUse merged,
    0 outside their layouts): what the composition reads."""

    step_s: Array
    transfer_s: Array
    exposed_s: Array
    window_s: Array
    param_exposed_s: Array | float   # the exposed parameter-offload stream (T_po)
