"""When no card meets the goal: what binds on the GPU side, and the change to the hardware,
layout or training that makes the goal reachable, each checked with the evaluator on a card
MULTIPLE_CAP times the named one (so the card does not bind).

OptimusNIC's window is the last micro-batch's backward and the next forward (and the exposed
data-parallel time): a larger
micro-batch (fewer micro-batches per step at the same global batch, or a larger global batch
at the same count) widens it; a faster GPU-host link shortens the link stages the card cannot
speed up.
"""

from __future__ import annotations

import dataclasses

from optimus_calc.analyses.breakeven.batched import measure_rows
from optimus_calc.analyses.breakeven.card import MULTIPLE_CAP, CardSpec, scaled, with_card
from optimus_calc.analyses.breakeven.case import Case, Goal, State, measure, met
from optimus_calc.analyses.breakeven.problem import bracket
from optimus_calc.record import record

MAX_MICRO_BATCH = 64  # micro-batch sizes tried


@record
class Reach:
    binding: str               # what binds instead of the card
    changes: tuple[str, ...]   # each alone makes the goal reachable (with a large enough card)


def _binding(goal: Goal, st: State, reference_s: float | None, card: str) -> str:
    big = f"even {MULTIPLE_CAP:g} x {card}"
    if goal is Goal.MATCH and reference_s is not None and st.base_step_s > reference_s:
        return (f"{big} cannot match: the step without any optimizer time "
                f"({st.base_step_s:.4g} s) is already longer than the reference "
                f"({reference_s:.4g} s)")
    if goal is Goal.FIT:
        return f"{big} does not hold the state ({st.excess_bytes / 1e9:.3g} GB over)"
    return (f"{big} leaves {st.optimizer_exposed_s:.3g} s exposed: the GPU side binds. The "
            f"card's pipeline needs {st.pipeline_s:.3g} s (gradient in {st.gradient_in_s:.3g} s "
            f"and weights out {st.weights_out_s:.3g} s over the GPU's own link, over "
            f"{st.layers:.0f} layers) against the {st.window_s:.3g} s window (the last "
            "micro-batch's backward + the next forward + the exposed DP time)")


def _ok(case: Case, goal: Goal, reference_s: float | None) -> bool:
    st = measure(case)
    return st.reasons == 0 and met(goal, st, reference_s)


def _gpu_link(big: Case, goal: Goal, reference_s: float | None) -> str | None:
    link = big.hw.gpu_host_link
    cur = float(link.bandwidth_GBps)

    def at(v: float) -> Case:
        return dataclasses.replace(big, hw=dataclasses.replace(
            big.hw, gpu_host_link=link.model_copy(update={"bandwidth_GBps": v})))
    known: dict[float, tuple] = {}   # value -> (rows, row) of a look-ahead's evaluation

    def ahead(values: list[float]) -> None:  # the search's next questions in one evaluation
        todo = [v for v in values if v not in known]
        rows = measure_rows([at(v) for v in todo])
        if rows is not None:
            known.update((v, (rows, i)) for i, v in enumerate(todo))

    def state(v: float) -> State:
        if v not in known:
            return measure(at(v))
        rows, i = known[v]
        return rows.state(i)
    status, v = bracket(lambda v: met(goal, state(v), reference_s), cur, cur,
                        cur * MULTIPLE_CAP, False, ahead)
    if status != "value" or v is None:
        return None
    return (f"a GPU-host link of {v:.4g} GB/s or more ({v / cur:.3g}x {link.name}'s "
            f"{cur:.4g} GB/s)")


def _micro_batches(big: Case, goal: Goal, reference_s: float | None) -> list[str]:
    tr, dp = big.training, big.layout.dp
    m_now = tr.global_batch // (dp * tr.micro_batch)
    out: list[str] = []
    for b in range(tr.micro_batch + 1, MAX_MICRO_BATCH + 1):  # same global batch
        if tr.global_batch % (dp * b) == 0 and _ok(dataclasses.replace(
                big, training=tr.model_copy(update={"micro_batch": b})), goal, reference_s):
            out.append(f"micro-batch {b} at global batch {tr.global_batch}: "
                       f"{tr.global_batch // (dp * b)} micro-batches per step instead of {m_now}")
            break
    for b in range(tr.micro_batch + 1, MAX_MICRO_BATCH + 1):  # same micro-batches per step
        gb = dp * b * m_now
        if _ok(dataclasses.replace(big, training=tr.model_copy(
                update={"micro_batch": b, "global_batch": gb})), goal, reference_s):
            out.append(f"global batch {gb} (micro-batch {b}, still {m_now} micro-batches per "
                       "step)")
            break
    return out


def reachable(case: Case, named: CardSpec, goal: Goal, reference_s: float | None,
              at_cap: State) -> Reach:
    """What binds at the cap and the changes that make ``goal`` reachable."""
    big = with_card(case, scaled(named, MULTIPLE_CAP, "keep"))
    changes: list[str] = []
    if goal is not Goal.FIT:
        link = _gpu_link(big, goal, reference_s)
        if link:
            changes.append(link)
        changes += _micro_batches(big, goal, reference_s)
    return Reach(_binding(goal, at_cap, reference_s, named.card.name), tuple(changes))
