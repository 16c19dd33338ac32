"""The minimum card: the joint requirement over a SmartNIC's own catalog fields for a goal.

Two answers, both found by bisection with the one evaluator as the oracle (the goal, once met,
stays met as any field grows):

- the smallest uniform multiple of the named card: every capability scaled by the same factor
  (capacities, bandwidths, the host link, the clock or fabric; the core count is kept and its
  per-core bandwidth scaled, so the multiple is continuous);
- the cheapest corner: starting from that multiple, each field in turn lowered to the least
  value that still meets the goal with the others at theirs (host link first, then capacity,
  then the update's roofline). Lowering a later field never makes an earlier one lowerable, so
  after one pass every field is at its least value given the others.

When even a very large multiple does not meet the goal, the card is not what binds: the GPU's
own link or the window (or, for match, the rest of the step) does; :mod:`.reach` says which
change to the layout or training makes the goal reachable.
"""

from __future__ import annotations

import dataclasses
import math

from optimus_calc.analyses.breakeven.batched import (Rows, Unstackable, measure_changes,
                                                     measure_rows, model_changes)
from optimus_calc.analyses.breakeven.case import Case, Goal, State, measure, met
from optimus_calc.analyses.breakeven.problem import bracket
from optimus_calc.specs.hardware import MIN_GB, MIN_GBPS, MIN_GHZ, MIN_TFLOPS, Link, SmartNIC
from optimus_calc.record import record

MULTIPLE_CAP = 1e4   # no card beyond this multiple of the named one is tried
MULTIPLE_FLOOR = 1e-4  # nor below this one (search bounds, not physics)
LINK = "host_link.bandwidth_GBps"


@record
class CardSpec:
    """A SmartNIC and its host link, as the evaluator uses them."""

    card: SmartNIC
    link: Link

    def get(self, field: str) -> float:
        if field == LINK:
            return float(self.link.bandwidth_GBps)
        return float(getattr(self.card, field))

    def with_field(self, field: str, value: float) -> "CardSpec":
        if field == LINK:
            return dataclasses.replace(self, link=self.link.model_copy(
                update={"bandwidth_GBps": float(value)}))
        v = int(round(value)) if field == "cores" else float(value)
        return dataclasses.replace(self, card=self.card.model_copy(update={field: v}))


def card_fields(card: SmartNIC) -> tuple[str, ...]:
    """The fields of the joint requirement, in the corner's order: the host link, capacity,
    then the update's roofline (memory bandwidth, cores x per-core bandwidth, FLOPs)."""
    if card.device_type == "fpga":
        tier = (("expansion_memory_GB", "expansion_bandwidth_GBps")
                if card.expansion_memory_GB > 0 else ())
        return (LINK, "memory_GB", *tier[:1], "memory_bandwidth_GBps", *tier[1:],
                "fabric_fp32_TFLOPS")
    return (LINK, "memory_GB", "memory_bandwidth_GBps", "cores", "core_bandwidth_GBps",
            "core_GHz")


def _scaled_fields(card: SmartNIC) -> tuple[str, ...]:
    """What a uniform multiple scales: every field of the requirement but the core count
    (cores x per-core bandwidth and cores x clock scale through the per-core figures)."""
    return tuple(f for f in card_fields(card) if f != "cores")


def scaled(spec: CardSpec, factor: float, integers: str = "up") -> CardSpec:
    """``spec`` with every field of the requirement times ``factor`` (the core count too when
    ``integers`` is "up" or "down": rounded that way, for a card saved at a margin)."""
    out = spec
    for f in _scaled_fields(spec.card):
        out = out.with_field(f, spec.get(f) * factor)
    if integers != "keep" and spec.card.cores:
        c = spec.card.cores * factor
        c = math.ceil(c - 1e-9) if integers == "up" else math.floor(c + 1e-9)
        out = out.with_field("cores", max(1, c))
    return out


def with_card(case: Case, spec: CardSpec) -> Case:
    """``case`` with its SmartNIC (and host link) replaced by ``spec``."""
    hw = dataclasses.replace(case.hw, smartnic=spec.card, smartnic_host_link=spec.link)
    return dataclasses.replace(case, hw=hw)


@record
class FieldRequirement:
    field: str
    named: float           # the named card's value
    corner: float          # the least value with the other fields at the corner's
    binding: bool          # False: the field does not bind down to its floor (kept as named)


@record
class MinimumCard:
    goal: Goal
    named: CardSpec
    multiple: float | None     # None: no multiple up to MULTIPLE_CAP meets the goal
    corner: CardSpec | None
    fields: tuple[FieldRequirement, ...]
    state_at_corner: State | None
    state_at_cap: State | None  # when no multiple does: the figures at the cap
    evaluations: int


class _Oracle:
    """The goal at a card; ``calls`` counts the questions (a value :meth:`prefetch` evaluated
    ahead in one call of the evaluator is counted when it is asked)."""

    def __init__(self, case: Case, goal: Goal, reference_s: float | None):
        self.case, self.goal, self.reference_s, self.calls = case, goal, reference_s, 0
        self._known: dict[tuple, tuple[Rows, int]] = {}

    @staticmethod
    def _key(spec: CardSpec) -> tuple:
        return tuple(spec.get(f) for f in card_fields(spec.card))

    def state(self, spec: CardSpec) -> State:
        self.calls += 1
        key = self._key(spec)
        known = self._known.get(key)
        if known is None:
            return measure(with_card(self.case, spec))
        rows, i = known
        return rows.state(i)

    def prefetch(self, specs: list[CardSpec]) -> None:
        todo = {self._key(s): s for s in specs if self._key(s) not in self._known}
        specs = list(todo.values())
        try:  # the cards as columns of the case's own card, else a case per card
            rows = self._columns(specs) if len(specs) > 1 else measure_rows(
                [with_card(self.case, s) for s in specs])
        except Unstackable:
            rows = measure_rows([with_card(self.case, s) for s in specs])
        if rows is not None:  # None: asked one at a time
            self._known.update((key, (rows, i)) for i, key in enumerate(todo))

    def _columns(self, specs: list[CardSpec]) -> Rows | None:
        """measure_changes of each card's fields that differ from the case's own card and
        host link (model_changes)."""
        hw, changes, firsts = self.case.hw, [], {}
        for r, spec in enumerate(specs):
            change = {**model_changes(hw.smartnic, spec.card, "smartnic"),
                      **model_changes(hw.smartnic_host_link, spec.link, "smartnic_host_link")}
            for role, path in change:
                firsts.setdefault(f"{role}.{path}", r)
            changes.append(change)
        return measure_changes(self.case, changes, lambda i: with_card(self.case, specs[i]),
                               firsts)

    def ok(self, spec: CardSpec) -> bool:
        return met(self.goal, self.state(spec), self.reference_s)


def _floor(field: str) -> float:
    """The least value a catalog entry may hold (specs/hardware.py MIN_* bounds)."""
    return {"cores": 1.0, "core_GHz": MIN_GHZ, "fabric_fp32_TFLOPS": MIN_TFLOPS}.get(
        field, max(MIN_GB, MIN_GBPS))


def _corner(oracle: _Oracle, named: CardSpec, start: CardSpec):
    spec, reqs = start, []
    for f in card_fields(named.card):
        cur = spec.get(f)
        integer = f == "cores"
        status, value = bracket(
            lambda v, f=f: oracle.ok(spec.with_field(f, v)), cur, _floor(f), cur, integer,
            lambda vs, f=f: oracle.prefetch([spec.with_field(f, v) for v in vs]))
        if status == "value" and value is not None:
            spec = spec.with_field(f, value)
            reqs.append(FieldRequirement(f, named.get(f), spec.get(f), True))
        else:  # met down to the floor: the field does not bind; keep the named card's value
            spec = spec.with_field(f, min(cur, named.get(f)))
            reqs.append(FieldRequirement(f, named.get(f), spec.get(f), False))
    return spec, tuple(reqs)


def minimum_card(case: Case, goal: Goal, reference_s: float | None = None) -> MinimumCard:
    """The smallest multiple of ``case``'s SmartNIC and the cheapest corner that meet ``goal``."""
    hw = case.hw
    assert hw.smartnic is not None and hw.smartnic_host_link is not None
    named = CardSpec(hw.smartnic, hw.smartnic_host_link)
    oracle = _Oracle(case, goal, reference_s)
    status, m = bracket(lambda f: oracle.ok(scaled(named, f, "keep")), 1.0, MULTIPLE_FLOOR,
                        MULTIPLE_CAP, False,
                        lambda fs: oracle.prefetch([scaled(named, f, "keep") for f in fs]))
    if status == "never" or m is None:
        at_cap = oracle.state(scaled(named, MULTIPLE_CAP, "keep"))
        return MinimumCard(goal, named, None, None, (), None, at_cap, oracle.calls)
    if status == "any":
        m = MULTIPLE_FLOOR
    corner, reqs = _corner(oracle, named, scaled(named, m, "keep"))
    return MinimumCard(goal, named, m, corner, reqs, oracle.state(corner), None, oracle.calls)
