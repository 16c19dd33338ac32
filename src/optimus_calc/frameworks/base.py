"""What a framework plug-in is: its pinned source, its rules as rows, its exporter, the
environment it needs and its physics profile.

A :class:`Rule` is one row: a name, a predicate over the layout arrays (:class:`Layouts`), the
text a user sees and the source file and line it comes from. Rules run in order; the first that
holds rejects the layout. Predicates are numpy boolean expressions over millions of layouts at
once, so a rule costs a few vectorised operations.
"""

from __future__ import annotations

from dataclasses import field, replace
from functools import cached_property
from typing import Callable

import numpy as np

from optimus_calc.specs.training import OFFLOAD_CODES, Offload, offload_code
from optimus_calc.record import record

# Offload codes in the layout arrays (specs.training.offload_code: the Offload enum's order, then
# targets added by offload-strategy plug-ins, which no framework runs unless a rule says so).
OFFLOAD_ORDER: tuple[Offload, ...] = OFFLOAD_CODES
OFF_NONE, OFF_CPU, OFF_NVME, OFF_SMARTNIC, OFF_SUPERCHIP = (offload_code(o) for o in (
    Offload.NONE, Offload.CPU, Offload.NVME, Offload.SMARTNIC, Offload.SUPERCHIP))


def not_dividing(n: int, d: np.ndarray) -> np.ndarray:
    """``n % d != 0`` through a lookup table over the (small) degrees: faster than ``%`` on
    millions of int64 values; ``%`` itself where the table would outgrow the values (one
    layout's CP x TP on a million GPUs: a table of millions for one value)."""
    top = int(d.max(initial=1))
    if d.size < top:
        return (n % np.maximum(d, 1)) != 0
    table = (n % np.arange(1, top + 1)) != 0
    return table[np.maximum(d, 1) - 1]


def dividing_into(d: np.ndarray, n: int) -> np.ndarray:
    """``d % n == 0`` elementwise for a scalar n (lookup table as above)."""
    top = int(d.max(initial=1))
    if d.size < top:
        return np.maximum(d, 1) % max(n, 1) == 0
    return (np.arange(1, top + 1) % max(n, 1) == 0)[np.maximum(d, 1) - 1]


class Layouts:
    """The layout arrays the rules read (broadcast together) and the model's shape. Derived
    masks that several frameworks share are computed once (cached).

    ``sp`` (sequence parallelism, 0/1) stays on its own axis, outside the broadcast: the
    planner holds it as a switch axis of its own (search/space.Chunk), and only a rule that
    reads it pays for that axis (registry.run_rules widens the result where one does)."""

    def __init__(self, tp, pp, dp, cp, ep, zero, offload, offload_params, interleave,
                 micro_batch, *, heads: int, n_kv: int, experts: int, layers: int,
                 global_batch=None, precision: str = "bf16", model=None,
                 fp8_recipe: str = "te-delayed", etp=None, sp=True, attention_kernel: str = "",
                 seq_len: int | None = None, moe_dispatcher: str = "alltoall",
                 cuda_graph: bool = False, grad_bytes: int = 0, dropout: bool = False):
        # each array keeps its own shape (the search's grid columns are (1, 1, 1, 1, grid), its
        # switches one axis each): a rule computes on the axes it reads, and only its result
        # meets the others' (run_rules), never millions of broadcast copies of a switch
        (self.tp, self.pp, self.dp, self.cp, self.ep, self.zero, self.off, self.v,
         self.mb) = (np.asarray(a, dtype=np.int64) for a in (
             tp, pp, dp, cp, ep, zero, offload, interleave, micro_batch))
        self.oparams = np.asarray(offload_params, dtype=bool)
        # expert TP: as TP unless given (Megatron-LM's parallel folding, --etp)
        self.etp = self.tp if etp is None else np.asarray(etp, dtype=np.int64)
        self._shape = np.broadcast_shapes(self.tp.shape, self.pp.shape, self.dp.shape,
                                          self.cp.shape, self.ep.shape, self.zero.shape,
                                          self.off.shape, self.v.shape, self.mb.shape,
                                          self.oparams.shape, self.etp.shape)
        self.heads, self.n_kv, self.experts, self.layers = heads, n_kv, experts, layers
        self.gb = None if global_batch is None else np.asarray(global_batch, dtype=np.int64)
        self.sp = np.asarray(sp, dtype=bool)  # sequence parallelism (Training's default: on)
        self.precision = precision
        self.fp8_recipe = fp8_recipe  # with precision fp8: te-delayed, te-current or torchao
        self.model = model  # the Model, for rules on the architecture (None: those are skipped)
        # the fused kernel the run names (--attention-kernel), "" for the GPU's default or none
        self.attention_kernel = attention_kernel
        self.seq_len = seq_len  # tokens per sequence (None: the rules on it are skipped)
        self.moe_dispatcher = moe_dispatcher  # --moe-dispatcher: alltoall, deepep, hybridep
        self.cuda_graph = bool(cuda_graph)  # --cuda-graph-impl full_iteration (Megatron-LM's)
        self.grad_bytes = int(grad_bytes)  # Training.grad_bytes: --grad-bytes (0: not typed)
        self.dropout = bool(dropout)  # Training.dropout: dropout masks (--dropout)

    def seq_not_dividing(self, divisor) -> np.ndarray | None:
        """The sequence not a multiple of ``divisor`` (an array); None without a sequence."""
        return None if self.seq_len is None else not_dividing(self.seq_len, divisor)

    @property
    def shape(self) -> tuple[int, ...]:
        """The layouts' shape: every array's broadcast together."""
        return self._shape

    def everywhere(self) -> np.ndarray:
        return np.ones(self.shape, dtype=bool)

    def fp8_unless(self, *recipes: str) -> np.ndarray | None:
        """Everywhere when the run is FP8 with a recipe outside ``recipes``; None otherwise
        (the rule does not apply)."""
        if self.precision != "fp8" or self.fp8_recipe in recipes:
            return None
        return self.everywhere()

    @cached_property
    def smartnic(self) -> np.ndarray:
        return self.off == OFF_SMARTNIC

    @cached_property
    def offloading(self) -> np.ndarray:
        return self.off != OFF_NONE

    @cached_property
    def heads_bad(self) -> np.ndarray:
        """Heads or KV heads not a multiple of TP."""
        return not_dividing(self.heads, self.tp) | not_dividing(self.n_kv, self.tp)

    @cached_property
    def tp_without_sp(self) -> np.ndarray:
        """TP > 1 with sequence parallelism off (over the broadcast shape and ``sp``'s axis)."""
        return (self.tp > 1) & ~self.sp

    @cached_property
    def etp_not_tp(self) -> np.ndarray:
        """Expert TP other than TP (parallel folding, --etp)."""
        return self.etp != self.tp

    @cached_property
    def experts_bad(self) -> np.ndarray | None:
        """Experts not a multiple of EP (None for a dense model: the rule does not apply)."""
        return not_dividing(self.experts, self.ep) if self.experts else None


Predicate = Callable[[Layouts], "np.ndarray | None"]


@record
class Rule:
    """One row: where ``when`` holds, the framework cannot run the layout. ``when`` returns
    None where the rule does not apply to this model or request (e.g. no experts)."""

    name: str          # stable identifier, e.g. "DS_ZERO23_PP"
    text: str          # what the user reads; names the framework and cites the source
    source: str        # file and line at the pinned commit (also quoted in ``text``)
    when: Predicate
    on_model: bool = False  # about the architecture: no layout of this model escapes it
    offloads: tuple = ()    # an allowlist row (runs_offloads): the offload targets it lets by
    precisions: tuple = ()  # an allowlist row (runs_precisions): the precisions it lets by
    on_run: bool = False    # about the run (its precision, its attention kernel): no layout
    #                         escapes it


@record
class EnvVar:
    """An environment variable the launch needs (exported in the script), with its source."""

    name: str
    value: str | None  # None: must be unset
    why: str


@record
class Setting:
    """One physics value a framework sets: a field of Training (``grad_bytes``) or of
    Assumptions, its value, the file and line at the pinned commit it comes from, and the
    precisions it applies to (empty: all)."""

    name: str
    value: float
    source: str
    precisions: tuple[str, ...] = ()
    # a condition on the Training (its launch flags, e.g. ``overlap_grad_reduce``): the value
    # applies where it holds; None: always
    when: Callable[[object], bool] | None = field(default=None, compare=False, repr=False)
    # the value for one model (what the framework builds for its family), None where it sets
    # nothing for that model; None here: ``value`` for every model. Needs the model: a profile
    # applied without one (a bare parameter count) leaves the assumption's default
    per_model: Callable[[object], float | None] | None = field(default=None, compare=False,
                                                                repr=False)

    def applies(self, training) -> bool:
        return ((not self.precisions or training.precision.value in self.precisions)
                and (self.when is None or bool(self.when(training))))

    def for_model(self, model) -> Setting | None:
        """This setting with its value for ``model``, or None if it sets nothing there."""
        if self.per_model is None:
            return self
        value = None if model is None else self.per_model(model)
        return None if value is None else replace(self, value=value, per_model=None)


TRAINING_SETTINGS = ("grad_bytes",)  # Training fields a profile may set (0 there = not typed)


@record
class PhysicsProfile:
    """How the framework's own mechanics change the numbers: named parameter values the
    evaluator already reads (evaluate/ sits below frameworks/ and never imports it). A value
    the user typed (--grad-bytes, --assume) wins over the framework's; the framework's wins
    over a calibration profile's (--profile: calibrate fits a value only on the runs whose
    framework sets none, analyses/calibrate_fit.predict) and the framework-neutral default."""

    settings: tuple[Setting, ...] = ()

    def for_training(self, training, model=None) -> tuple[Setting, ...]:
        """The settings that apply to ``training`` (its precision and launch flags) and
        ``model`` (a per-model setting with its value for it)."""
        found = (x.for_model(model) for x in self.settings if x.applies(training))
        return tuple(x for x in found if x is not None)

    def key(self, training, model=None) -> tuple:
        """What the evaluator receives: frameworks with equal keys give equal numbers."""
        return tuple(sorted((x.name, x.value) for x in self.for_training(training, model)))

    def apply(self, training, assumptions, model=None, yields=frozenset()):
        """(training, assumptions, applied, kept): the profile's values set where the user gave
        none; ``applied`` the Settings used, ``kept`` the names the user's values override.
        ``yields``: names set by a calibration profile, not typed (the framework's win)."""
        applied, kept, tr_upd, asm_upd = [], [], {}, {}
        for x in self.for_training(training, model):
            if x.name in TRAINING_SETTINGS:
                if getattr(training, x.name):
                    kept.append(x.name)
                    continue
                tr_upd[x.name] = int(x.value)
            elif x.name in assumptions.model_fields_set and x.name not in yields:
                kept.append(x.name)
                continue
            else:
                asm_upd[x.name] = x.value
            applied.append(x)
        tr = training.model_copy(update=tr_upd) if tr_upd else training
        asm = assumptions
        if asm_upd:  # not marked as typed: a later step still tells user values from these
            asm = type(assumptions).model_construct(
                _fields_set=set(assumptions.model_fields_set),
                **{**dict(assumptions), **asm_upd})  # its flat fields (no serializer built)
        return tr, asm, tuple(applied), tuple(kept)


@record
class Exporter:
    """``plan --export NAME``: ``render(layout, training, model, gpus_per_node, extra_first)
    -> str``, imported lazily from ``module`` (exporters stay off the cold-start path);
    ``extra_first``: the pipeline split the plan evaluated (Assumptions.
    pipeline_extra_layers_first; None: the framework's own)."""

    name: str
    describes: str   # "a DeepSpeed JSON config", for the --export help
    module: str
    function: str

    def render(self, layout, training, model, gpus_per_node: int | None = None,
               extra_first: bool | None = None) -> str:
        from importlib import import_module
        return getattr(import_module(self.module), self.function)(
            layout, training, model, gpus_per_node, extra_first=extra_first)


@record
class FrameworkPlugin:
    """One training framework: everything the tool knows about it lives in its module."""

    key: str                      # the --framework name
    label: str                    # as printed
    repo: str                     # GitHub owner/name
    commit: str                   # the pinned commit every file:line refers to
    rules: tuple[Rule, ...]
    launch: str                   # the documented launch path the exports target
    environment: Callable[[object], tuple[EnvVar, ...]] = lambda layout: ()  # per Layout
    exporter: Exporter | None = None
    exported_by: str | None = None  # another plug-in's exporter that covers this framework
    profile: PhysicsProfile = field(default_factory=PhysicsProfile)
    # (Training field, its flag) of the launch flags only this framework's profile reads: set
    # off their default under another profile they move nothing, and `step` says so
    launch_flags: tuple[tuple[str, str], ...] = ()

    @property
    def offload_rule(self) -> Rule | None:
        """Its allowlist row of offload targets (:func:`runs_offloads`), None if it has none."""
        return next((r for r in self.rules if r.offloads), None)

    @property
    def offload_targets(self) -> tuple[Offload, ...] | None:
        """The offload targets it runs (its allowlist row); None: not declared."""
        rule = self.offload_rule
        return None if rule is None else rule.offloads

    @property
    def precisions(self) -> tuple[str, ...] | None:
        """The training precisions it runs (its allowlist row); None: not declared."""
        return next((r.precisions for r in self.rules if r.precisions), None)


def runs_offloads(name: str, framework: str, targets: tuple[Offload, ...], source: str,
                  how: str = "") -> Rule:
    """The generated allowlist row of a framework's offload targets: a layout whose target is
    not among ``targets`` (a built-in the framework lacks, or any target an offload-strategy
    plug-in registers) is refused with one reason naming what it runs. ``how``: the switch that
    turns it on, quoted in the text."""
    codes = np.array([offload_code(t) for t in targets], dtype=np.int64)
    named = ", ".join(t.value for t in targets if t is not Offload.NONE) or "nothing"
    text = (f"{framework}: offloads only to {named} ({how + ', ' if how else ''}{source}); "
            "no other target, a plug-in's included")
    return Rule(name, text, source, lambda x: _none_of(x.off, codes), offloads=tuple(targets))


def _none_of(values: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``~np.isin(values, codes)`` for a few codes, one comparison each (np.isin's own path
    for a short list, without its set-up: a tenth of a one-layout command's rules)."""
    out = np.ones(np.shape(values), dtype=bool)
    for c in codes:
        out &= values != c
    return out


def runs_precisions(name: str, text: str, source: str, precisions: tuple[str, ...]) -> Rule:
    """The allowlist row of a framework's training precisions (Training.precision values):
    every layout is refused when the run's precision is not among ``precisions``."""
    return Rule(name, text, source,
                lambda x: None if x.precision in precisions else x.everywhere(),
                precisions=tuple(precisions), on_run=True)


def runs_dispatchers(name: str, text: str, source: str, dispatchers: tuple[str, ...]) -> Rule:
    """The allowlist row of a framework's MoE token dispatchers (--moe-dispatcher): every
    layout of an MoE model is refused when the run's dispatcher is not among ``dispatchers``."""
    return Rule(name, text, source,
                lambda x: None if not x.experts or x.moe_dispatcher in dispatchers
                else x.everywhere(), on_run=True)


def no_iteration_graph(name: str, text: str, source: str) -> Rule:
    """The row of a framework that captures no training iteration as one CUDA graph: every
    layout is refused when the run asks for one (--cuda-graph-impl full_iteration)."""
    return Rule(name, text, source, lambda x: x.everywhere() if x.cuda_graph else None,
                on_run=True)


def refuses_kernel(name: str, text: str, source: str, kernel: str) -> Rule:
    """The row of a fused attention kernel a framework does not run: every layout is refused
    when the run names ``kernel`` (--attention-kernel)."""
    return Rule(name, text, source,
                lambda x: x.everywhere() if x.attention_kernel == kernel else None, on_run=True)


SMARTNIC = Rule(
    "SMARTNIC",
    "SmartNIC (OptimusNIC) offload is a research prototype that no framework runs; it is a "
    "what-if", "", lambda x: x.smartnic)


def unbuildable_everywhere(unbuildable: Callable[[object], str | None]):
    """The test of an architecture rule (``on_model``): every layout, when the framework cannot
    build the model (``unbuildable`` gives its reason), else none; without a model, none."""
    def test(x):
        if x.model is None or unbuildable(x.model) is None:
            return None
        return x.everywhere()
    return test


# launch flags framework-neutral physics reads as well (a profile not listing them drops them:
# physics.apply_framework): Megatron-LM's --recompute-modules
NEUTRAL_READS = frozenset({"recompute_modules"})
