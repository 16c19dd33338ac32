"""The framework registry and the vectorised rule runner.

A plug-in registers once (:func:`register`); the CLI's ``--framework`` and ``--export`` choices,
the planner's rules and the rejection counts all read the registry. :func:`framework_support`
runs every registered framework's rule rows over numpy arrays of layouts (millions at once) and
returns, per framework, a "can run" mask and the code of the first rule that rejects each layout
(0 where it runs).
"""

from __future__ import annotations

import functools
from enum import Enum, IntEnum

import numpy as np

from optimus_calc.frameworks.base import FrameworkPlugin, Layouts, Rule
from optimus_calc.record import record

_PLUGINS: dict[str, FrameworkPlugin] = {}
_RULES: list[Rule | None] = [None]          # code -> rule; code 0 = runs
_CODES: dict[str, int] = {}                 # rule name -> code
# layout_support's answers by the rules' inputs (one model at a time): `compare` asks for each
# strategy's layout twice (the profile's choice, then the row's frameworks), and the rules read
# nothing else. Cleared when the registry changes. A speed tactic: the same answer either way.
_ONE: dict[tuple, tuple[object, dict]] = {}


def register(plugin: FrameworkPlugin) -> FrameworkPlugin:
    """Add a framework. Rule rows shared between frameworks (the same name) share a code."""
    _ONE.clear()
    if plugin.key in _PLUGINS:
        raise ValueError(f"framework {plugin.key!r} is already registered")
    for rule in plugin.rules:
        known = _CODES.get(rule.name)
        if known is None:
            _CODES[rule.name] = len(_RULES)
            _RULES.append(rule)
        elif _RULES[known] is not rule:
            raise ValueError(f"{plugin.key}: rule {rule.name} differs from the one registered")
    _PLUGINS[plugin.key] = plugin
    return plugin


def unregister(key: str) -> None:
    """Remove a framework (tests); its rule codes stay reserved."""
    _ONE.clear()
    del _PLUGINS[key]


def plugins() -> tuple[FrameworkPlugin, ...]:
    return tuple(_PLUGINS.values())


def plugin(key) -> FrameworkPlugin:
    return _PLUGINS[str(getattr(key, "value", key))]


def rule_of(code: int) -> Rule | None:
    return _RULES[int(code)]


def code_of(name: str) -> int:
    return _CODES[name]


def reason_text(code: int) -> str:
    rule = _RULES[int(code)]
    return "runs" if rule is None else rule.text


def make_enums() -> tuple[type[Enum], type[IntEnum], type[Enum]]:
    """(Framework, Reason, Export) enums of what is registered now: ``Framework`` members are
    str-valued (``Framework.DEEPSPEED == "deepspeed"``), ``Reason`` codes are rule codes."""
    def member(key: str) -> str:
        return key.upper().replace("-", "_")

    framework = Enum("Framework", {member(k): k for k in _PLUGINS}, type=str,
                     module=__name__)
    framework.label = property(lambda self: _PLUGINS[self.value].label)
    framework.plugin = property(lambda self: _PLUGINS[self.value])
    reason = IntEnum("Reason", {"OK": 0, **{r.name: c for r, c in
                                            ((_RULES[c], c) for c in range(1, len(_RULES)))}},
                     module=__name__)
    reason.text = property(lambda self: reason_text(self.value))
    reason.source = property(lambda self: "" if self.value == 0 else _RULES[self.value].source)
    export = Enum("Export", {member(p.exporter.name): p.exporter.name
                             for p in _PLUGINS.values() if p.exporter}, type=str,
                  module=__name__)
    return framework, reason, export


_ENUMS: dict[tuple[str, ...], tuple] = {}


def enums() -> tuple[type[Enum], type[IntEnum], type[Enum]]:
    """:func:`make_enums` of what is registered now, built once per registry state (the package
    exports the built-ins' as ``Framework``, ``Reason``, ``Export``; after a test registers and
    unregisters a toy framework, the built-ins' enums are the same classes again)."""
    key = tuple(_PLUGINS)
    if key not in _ENUMS:
        _ENUMS[key] = make_enums()
    return _ENUMS[key]


@record
class FrameworkSupport:
    """Per framework key: ``ok[f]`` (bool array) and ``reason[f]`` (int16 array of rule codes,
    the first rule that fails; 0 where the framework runs the layout). Keys are framework
    names; the ``Framework`` enum's members compare and hash equal to them. ``ok`` is made
    when first read (the planner's grid reads only the codes)."""

    reason: dict

    @functools.cached_property
    def ok(self) -> dict:
        return {k: r == 0 for k, r in self.reason.items()}

    def any(self, frameworks=None) -> np.ndarray:
        """Runnable by at least one of ``frameworks`` (default: all)."""
        fs = list(frameworks) if frameworks else list(self.ok)
        out = np.zeros_like(self.ok[fs[0]])
        for f in fs:
            out |= self.ok[f]
        return out


# From this many layouts, consecutive rules whose failures span at most 1/MERGE_SHARE of the
# layouts (the grid axis alone, or the switches alone) are merged at their own size first and
# written once, and a rule that fails nowhere writes nothing: on the worst known plan's 1.7 M
# layouts most rules read either the grid or the switches. A speed tactic: the same codes.
MERGE_FROM = 1 << 16
MERGE_SHARE = 8


def run_rules(rules: tuple[Rule, ...], x: Layouts) -> np.ndarray:
    """The code of the first rule that holds, per layout (0: none holds). The rules are written
    last to first, each where it holds (broadcast from the axes it read), so the first that
    holds is the one left: one pass per rule, no full-size temporaries. Over ``x.shape``,
    widened to a rule's broadcast shape where one reads an axis outside it (``x.sp``)."""
    reason = np.zeros(x.shape, dtype=np.int16)
    large = reason.size >= MERGE_FROM
    part = None  # the merged codes of consecutive rules with small failures

    def write(reason, codes, where):
        shape = np.broadcast_shapes(reason.shape, np.shape(where))
        if shape != reason.shape:
            reason = np.broadcast_to(reason, shape).copy()
        if not large or where.any():
            np.copyto(reason, codes, where=where)
        return reason
    for rule in reversed(rules):
        fail = rule.when(x)
        if fail is None:
            continue
        if large:
            small = np.broadcast_shapes(np.shape(fail), part.shape if part is not None else ())
            if np.prod(small) * MERGE_SHARE <= reason.size:
                if part is None or part.shape != small:
                    part = np.broadcast_to(part if part is not None else np.int16(0),
                                           small).copy()
                np.copyto(part, _CODES[rule.name], where=fail)
                continue
            if part is not None:
                reason, part = write(reason, part, part != 0), None
                if np.prod(np.shape(fail)) * MERGE_SHARE <= reason.size:
                    part = np.zeros(np.shape(fail), dtype=np.int16)
                    np.copyto(part, _CODES[rule.name], where=fail)
                    continue
        reason = write(reason, _CODES[rule.name], fail)
    if part is not None:
        reason = write(reason, part, part != 0)
    return reason


def first_rule(rules: tuple[Rule, ...], x: Layouts) -> int:
    """:func:`run_rules` of one layout: the code of the first rule that holds (0: none), read
    front to back and stopping there, with nothing written (a single command asks for one
    layout; the broadcasting writes were two thirds of its rules' time)."""
    for rule in rules:
        fail = rule.when(x)
        if fail is None:
            continue
        if fail.any() if isinstance(fail, (np.ndarray, np.generic)) else np.any(fail):
            return _CODES[rule.name]
    return 0


def framework_support(tp, pp, dp, cp, ep, zero, offload, offload_params, interleave,
                      micro_batch, sequence_parallel, recompute, *, heads: int, n_kv: int,
                      experts: int, layers: int, global_batch=None,
                      precision: str = "bf16", frameworks=None, model=None,
                      fp8_recipe: str = "te-delayed", etp=None,
                      attention_kernel: str = "", seq_len: int | None = None,
                      moe_dispatcher: str = "alltoall",
                      cuda_graph: bool = False, grad_bytes: int = 0,
                      dropout: bool = False) -> FrameworkSupport:
    """Which framework runs each layout. Arrays broadcast together; ``offload`` holds indices
    into ``specs.training.Offload``, ``zero`` 0-3, ``offload_params`` bool. ``global_batch``
    (scalar or array) gives the micro-batch count for rules that need it; without it those
    rules are skipped. ``precision`` is the Training precision value (bf16, fp16, fp32, fp8),
    ``fp8_recipe`` its FP8 recipe (te-delayed, te-current, torchao), ``attention_kernel`` the
    fused kernel it names (:func:`named_kernel`), ``seq_len`` its sequence (rules on it skipped
    without), ``moe_dispatcher`` and ``cuda_graph`` its launch choices, ``grad_bytes`` its
    Training.grad_bytes (0: not typed), ``dropout`` its dropout (:func:`asked_dropout`).
    ``model`` (the Model) enables the rules on the architecture (a framework that cannot build
    it); without it they are skipped.
    ``sequence_parallel`` (0/1) is read by the rules as ``Layouts.sp``, on its own axis: the
    arrays returned have the broadcast shape of every input when a rule reads it, else of every
    input but it. ``recompute`` is accepted for a stable signature: every registered framework
    supports each of its values."""
    del recompute
    x = Layouts(tp, pp, dp, cp, ep, zero, offload, offload_params, interleave, micro_batch,
                heads=heads, n_kv=n_kv, experts=experts, layers=layers,
                global_batch=global_batch, precision=precision, model=model,
                fp8_recipe=fp8_recipe, etp=etp, sp=sequence_parallel,
                attention_kernel=attention_kernel, seq_len=seq_len, moe_dispatcher=moe_dispatcher,
                cuda_graph=cuda_graph, grad_bytes=grad_bytes, dropout=dropout)
    Framework = enums()[0]
    wanted = None if frameworks is None else {str(getattr(f, "value", f)) for f in frameworks}
    keys = [Framework(p.key) if p.key in Framework._value2member_map_ else p.key
            for p in plugins() if wanted is None or p.key in wanted]
    reason = {k: run_rules(_PLUGINS[str(getattr(k, "value", k))].rules, x) for k in keys}
    shape = np.broadcast_shapes(*(r.shape for r in reason.values())) if reason else ()
    reason = {k: r if r.shape == shape else np.broadcast_to(r, shape)
              for k, r in reason.items()}
    return FrameworkSupport(reason=reason)


def rejected_counts(support: FrameworkSupport, frameworks=None) -> dict[str, int]:
    """For the layouts none of ``frameworks`` (default: all) runs, how many each framework's
    first failing rule rejects, keyed by the rule's text (the texts name the framework). A
    layout rejected by three frameworks counts once under each of their rules."""
    fs = list(frameworks) if frameworks else list(support.ok)
    dropped = ~support.any(fs)
    out: dict[str, int] = {}
    for f in fs:
        codes, counts = np.unique(support.reason[f][dropped], return_counts=True)
        for c, n in zip(codes, counts):
            text = reason_text(int(c))
            out[text] = out.get(text, 0) + int(n)
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def offload_refusals(frameworks, targets) -> list[str]:
    """The allowlist texts (frameworks/base.runs_offloads) of ``frameworks`` (keys) when none of
    them runs any of the offload ``targets`` (every framework declaring its list), once each;
    [] when some framework runs one of them."""
    texts = []
    for key in frameworks:
        p = plugin(key)
        rule = p.offload_rule
        if rule is None or any(t in rule.offloads for t in targets):
            return []
        texts.append(rule.text)
    return list(dict.fromkeys(texts))


def model_refusals(frameworks, model) -> list[str]:
    """The architecture rows (Rule.on_model) that refuse ``model`` in every one of
    ``frameworks`` (keys), once each; [] when one of them can build it (or without a model)."""
    if model is None or not hasattr(model, "heads"):
        return []
    x = Layouts(1, 1, 1, 1, 1, 0, 0, False, 1, 1, heads=model.heads, n_kv=model.n_kv,
                experts=model.experts, layers=model.layers, model=model)
    texts = []
    for key in frameworks:
        hit = next((r.text for r in plugin(key).rules
                    if r.on_model and r.when(x) is not None), None)
        if hit is None:
            return []
        texts.append(hit)
    return list(dict.fromkeys(texts))


def named_kernel(training) -> str:
    """The fused attention kernel a run names (--attention-kernel), "" when it runs the GPU's
    default or no fused kernel: what the frameworks' kernel rules read."""
    k = training.attention_kernel
    return k.value if k is not None and training.flash_attention else ""


def asked_dropout(training) -> bool:
    """The run's dropout as the rules read it: Training.dropout where it was given (the CLI
    always gives it: the model's config or --dropout); a Training built without it leaves the
    rules on it skipped, as an untyped --grad-bytes does."""
    return bool(training.dropout) and "dropout" in training.model_fields_set


def _one_key(layout, training) -> tuple:
    from optimus_calc.specs.training import offload_code
    return (layout.tp, layout.pp, layout.dp, layout.cp, layout.ep, int(layout.zero),
            offload_code(layout.offload), layout.offload_params, layout.interleave,
            training.micro_batch, training.sequence_parallel, training.recompute.code,
            training.global_batch, training.precision.value, training.fp8_recipe.value,
            getattr(layout, "expert_tp", None), named_kernel(training), training.seq_len,
            training.moe_dispatcher.value, training.cuda_graph_full_iteration,
            training.grad_bytes, asked_dropout(training))


def layout_support(layout, training, model) -> dict:
    """Scalar convenience for one (Layout, Training, Model): the Reason per framework."""
    key = _one_key(layout, training)
    hit = _ONE.get(key)
    if hit is not None and hit[0] is model:
        return dict(hit[1])
    Reason = enums()[1]
    (tp, pp, dp, cp, ep, zero, off, opar, v, mb, sp, rc, gb, prec, recipe, etp, kern, seq,
     disp, graph, gbytes, drop) = key
    del rc  # framework_support's: every framework supports each recomputation mode
    x = Layouts(tp, pp, dp, cp, ep, zero, off, opar, v, mb, heads=model.heads, n_kv=model.n_kv,
                experts=model.experts, layers=model.layers, global_batch=gb, precision=prec,
                model=model, fp8_recipe=recipe, etp=etp, sp=sp, attention_kernel=kern,
                seq_len=seq, moe_dispatcher=disp, cuda_graph=graph, grad_bytes=gbytes,
                dropout=drop)
    Framework = enums()[0]
    out = {(Framework(p.key) if p.key in Framework._value2member_map_ else p.key):
           Reason(first_rule(p.rules, x)) for p in plugins()}
    if hit is None and len(_ONE) >= 256 or hit is not None:
        _ONE.clear()  # another model, or many layouts: start again
    _ONE[key] = (model, out)
    return dict(out)


def layouts_support(layouts, trainings, model) -> list[dict]:
    """:func:`layout_support` of several layouts in one pass of the rules (the planner's top K);
    the trainings must share precision, FP8 recipe, attention kernel, sequence and gradient
    bytes (each layout alone otherwise)."""
    from optimus_calc.specs.training import offload_code
    if len({(t.precision, t.fp8_recipe, named_kernel(t), t.seq_len, t.moe_dispatcher,
             t.cuda_graph_full_iteration, t.grad_bytes, asked_dropout(t)) for t in trainings}) > 1:
        return [layout_support(lay, t, model) for lay, t in zip(layouts, trainings)]
    Reason = enums()[1]
    col = lambda f: np.array([f(lay, t) for lay, t in zip(layouts, trainings)])  # noqa: E731
    s = framework_support(
        col(lambda lay, t: lay.tp), col(lambda lay, t: lay.pp), col(lambda lay, t: lay.dp),
        col(lambda lay, t: lay.cp), col(lambda lay, t: lay.ep),
        col(lambda lay, t: int(lay.zero)), col(lambda lay, t: offload_code(lay.offload)),
        col(lambda lay, t: lay.offload_params), col(lambda lay, t: lay.interleave),
        col(lambda lay, t: t.micro_batch), col(lambda lay, t: t.sequence_parallel),
        col(lambda lay, t: t.recompute.code), heads=model.heads, n_kv=model.n_kv,
        experts=model.experts, layers=model.layers,
        global_batch=col(lambda lay, t: t.global_batch), precision=trainings[0].precision.value,
        model=model, fp8_recipe=trainings[0].fp8_recipe.value,
        etp=col(lambda lay, t: getattr(lay, "expert_tp", lay.tp)),
        attention_kernel=named_kernel(trainings[0]), seq_len=trainings[0].seq_len,
        moe_dispatcher=trainings[0].moe_dispatcher.value,
        cuda_graph=trainings[0].cuda_graph_full_iteration, grad_bytes=trainings[0].grad_bytes,
        dropout=asked_dropout(trainings[0]))
    return [{f: Reason(int(np.broadcast_to(r, (len(layouts),))[i])) for f, r in s.reason.items()}
            for i in range(len(layouts))]
