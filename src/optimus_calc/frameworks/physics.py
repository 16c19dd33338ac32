"""Which framework's physics profile a single-layout command applies, and why.

``--framework NAME`` picks one; without it, the first framework in registry order whose rules run
the layout; a layout no framework runs (a SmartNIC what-if, a bare parameter count) keeps the
framework-neutral parameters. The profile's values reach the evaluator as named parameters of
Training / Assumptions (:meth:`PhysicsProfile.apply`): a value the user typed (--grad-bytes,
--assume) or a calibration profile (--profile) set wins over the framework's.
"""

from __future__ import annotations

from dataclasses import field, replace

from optimus_calc.errors import InputError
from optimus_calc.frameworks.base import NEUTRAL_READS, FrameworkPlugin, Setting
from optimus_calc.frameworks.registry import layout_support, plugin, plugins
from optimus_calc.record import record


@record
class Choice:
    """The framework whose profile was applied (None: framework-neutral), why, and what it set."""

    key: str | None
    label: str
    why: str
    applied: tuple[Setting, ...] = ()
    kept: tuple[str, ...] = ()      # profile values the user's own values override
    requested: str | None = None    # --framework as given (None: chosen per layout)
    before: tuple = field(default=(), repr=False, compare=False)  # (training, asm) unapplied
    yields: frozenset = field(default=frozenset(), repr=False, compare=False)  # apply's

    def data(self) -> dict:
        return {"framework": self.key, "why": self.why,
                "applied": {x.name: x.value for x in self.applied},
                "sources": {x.name: x.source for x in self.applied},
                "user_values_kept": list(self.kept)}

    def text(self) -> str:
        """The header line: the profile, why, and the values it set."""
        head = (f"{self.label} profile ({self.why})" if self.key else
                f"framework-neutral parameters ({self.why})")
        sets = ", ".join(f"{x.name}={x.value:g}" for x in self.applied)
        if sets:
            head += f"; sets {sets}"
        if self.kept:
            head += f"; your values kept for {', '.join(self.kept)}"
        return head


def _support(layout, training, model) -> dict:
    from optimus_calc.specs.model import Model
    if not isinstance(model, Model):
        return {}
    return {str(getattr(f, "value", f)): r for f, r in layout_support(layout, training,
                                                                      model).items()}


def choose(name: str | None, layout, training, model) -> tuple[FrameworkPlugin | None, str]:
    """(plug-in or None, why) for one layout."""
    sup = _support(layout, training, model)
    if name is None:
        runs = [p.label for p in plugins() if int(sup.get(p.key, 1)) == 0]
        return None, ("no --framework" + (f"; runs on {', '.join(runs)}: --framework NAME or "
                                          "auto applies its physics" if runs else ""))
    if name != "auto":
        p = plugin(name)
        r = sup.get(p.key)
        if r is None or int(r) == 0:
            return p, "--framework " + p.key
        return p, f"--framework {p.key}, although its rules reject this layout: {r.text}"
    if not sup:
        return None, "a bare parameter count: the framework rules need an architecture"
    for p in plugins():
        if int(sup[p.key]) == 0:
            return p, ("--framework auto: the first registered framework that runs this layout"
                       + (f"; {', '.join(q.label for q in plugins()[:plugins().index(p)])} "
                          "reject it" if p is not plugins()[0] else ""))
    first = next(iter(sup.values()))
    return None, f"no framework runs this layout ({first.text})"


def framework_sp(name: str | None, typed: bool | None, layout, training, model):
    """(training, note): sequence parallelism as ``--framework NAME`` runs the layout when its
    rules run it with one SP value only (DeepSpeed's AutoTP: off; torchtitan's TP: on). Not
    typed (``typed`` None), the training takes that value and ``note`` says so; typed the
    other way, an InputError naming the flag and the rule. Otherwise (no name, auto, TP 1, a
    rule refusing both or neither) the training as given and no note."""
    if name in (None, "auto") or layout.tp < 2:
        return training, ""
    key = plugin(name).key
    runs = {s: _support(layout, training.model_copy(update={"sequence_parallel": s}),
                        model).get(key) for s in (True, False)}
    if any(r is None for r in runs.values()) or sum(int(r) == 0 for r in runs.values()) != 1:
        return training, ""
    sp = int(runs[True]) == 0
    if typed is not None and bool(typed) != sp:
        raise InputError(f"{'--sp' if typed else '--no-sp'} with --framework {key} and --tp "
                         f"{layout.tp}: {runs[not sp].text}")
    if typed is not None or training.sequence_parallel == sp:
        return training, ""
    return (training.model_copy(update={"sequence_parallel": sp}),
            f"; sequence parallelism {'on' if sp else 'off'} (--sp/--no-sp not given): the only "
            f"way {plugin(name).label} runs TP {layout.tp}")


def apply_framework(name: str | None, layout, training, assumptions, model,
                    yields: frozenset = frozenset(), note: str = ""):
    """(training, assumptions, Choice): the chosen profile applied to one layout's specs;
    ``yields``: PhysicsProfile.apply's (a calibration profile's names); ``note`` follows the
    reason the profile was chosen (:func:`framework_sp`'s)."""
    p, why = choose(name, layout, training, model)
    why += note
    before = (training, assumptions)
    if p is None:
        return training, assumptions, Choice(None, "", why, requested=name, before=before,
                                             yields=yields)
    tr, asm, applied, kept = p.profile.apply(training, assumptions, model, yields)
    return _read(p, tr), asm, Choice(p.key, p.label, why, applied, kept, name, before, yields)


def _read(p, tr):
    """``tr`` without the framework-neutral launch flags plug-in ``p`` does not read (they move
    nothing under its profile: report.common.unread_flags_note)."""
    reads = {f for f, _ in p.launch_flags}
    if drop := {f: () for f in NEUTRAL_READS - reads if getattr(tr, f, None)}:
        return tr.model_copy(update=drop)
    return tr


def unread_dropped(name, tr):
    """``tr`` as the plug-ins ``--framework NAME[,NAME...]`` names read it: every launch flag
    none of them declares (FrameworkPlugin.launch_flags) back at its default, as their physics
    moves nothing for it (where the checks of another framework's flags read it); unchanged
    without a named plug-in (neutral physics, auto, each: a layout may run where they are
    read)."""
    names = [n.strip() for n in str(getattr(name, "value", name) or "").split(",")]
    keys = {str(getattr(p.key, "value", p.key)): p for p in plugins()}
    ps = [keys[n] for n in names if n in keys]
    if not ps or len(ps) < len(names):
        return tr
    reads = {f for p in ps for f, _ in p.launch_flags}
    fields = type(tr).model_fields
    back = {f: fields[f].default for p in plugins() for f, _ in p.launch_flags
            if f not in reads and getattr(tr, f) != fields[f].default}
    return tr.model_copy(update=back) if back else tr


def for_layout(inp, layout):
    """``inp`` (evaluate.inputs.Inputs) with ``layout`` and the framework profile chosen again
    for it (``compare`` varies the offload target: another framework may run it)."""
    choice = inp.framework
    if choice is None or not choice.before:
        return replace(inp, layout=layout)
    tr0, asm0 = choice.before
    tr, asm, new = apply_framework(choice.requested, layout, tr0, asm0, inp.model,
                                   choice.yields)
    return replace(inp, layout=layout, training=tr, assumptions=asm, framework=new)


def profile_groups(frameworks, training, assumptions, model=None,
                   yields: frozenset = frozenset()) -> list[tuple[tuple, object, object]]:
    """[(frameworks, training, assumptions)]: each framework's profile applied to a search's
    specs (and ``model``: per-model settings), frameworks whose applied parameters are
    identical in one group (one search)."""
    groups: dict[tuple, list] = {}
    for f in frameworks:
        tr, asm, _, _ = plugin(f).profile.apply(training, assumptions, model, yields)
        tr = _read(plugin(f), tr)
        key = (tr.grad_bytes, tr.recompute_modules, tuple(sorted(dict(asm).items())))
        groups.setdefault(key, [tr, asm, []])[2].append(f)
    return [(tuple(fs), tr, asm) for tr, asm, fs in groups.values()]


def profile_parts(frameworks, training, assumptions, model, yields: frozenset,
                  recomputes, sps) -> list[tuple[tuple, object, object, tuple, tuple]]:
    """:func:`profile_groups` for a planner that varies recompute and sequence parallelism per
    layout: a Setting's ``when`` may read them (Megatron-LM's --tp-comm-overlap needs SP, its
    EP overlap refuses full recompute), so each framework's profile is applied at every
    (recompute, SP) pair of ``recomputes`` x ``sps`` (Recompute members, bools). Frameworks
    with the same values at every pair share a group, as in profile_groups; a group is cut into
    parts of equal values, each a product of recompute modes x SP values (one search each):
    [(frameworks, training, assumptions, recomputes, sps)], parts of a group consecutive."""
    pairs = [(r, s) for r in recomputes for s in sps]
    groups: dict[tuple, list] = {}
    for f in frameworks:
        tr = _read(plugin(f), plugin(f).profile.apply(training, assumptions, model, yields)[0])
        at = {}
        for r, s in pairs:
            t = training.model_copy(update={"recompute": r, "sequence_parallel": s})
            t2, asm, _, _ = plugin(f).profile.apply(t, assumptions, model, yields)
            t2 = _read(plugin(f), t2)
            at[(r, s)] = ((t2.grad_bytes, t2.recompute_modules,
                           tuple(sorted(dict(asm).items()))), asm)
        sig = tuple(at[p][0] for p in pairs)
        groups.setdefault(sig, [tr, at, []])[2].append(f)
    out = []
    for tr, at, fs in groups.values():
        blocks: dict[tuple, list] = {}  # (values, the SP values a mode takes them at) -> modes
        for r in recomputes:
            by_key: dict = {}
            for s in sps:
                by_key.setdefault(at[(r, s)][0], []).append(s)
            for key, ss in by_key.items():
                blocks.setdefault((key, tuple(ss)), []).append(r)
        out += [(tuple(fs), tr, at[(rs[0], ss[0])][1], tuple(rs), ss)
                for (_, ss), rs in blocks.items()]
    return out
