"""`compare`: one layout under every offload strategy the node offers, and the best of them.

Pure: evaluates with the one evaluator (a batch of one per strategy) and decides; the report
(report/compare_view.py) only lays the result out.
"""

from __future__ import annotations

from dataclasses import replace

from optimus_calc.catalog import Catalog
from optimus_calc.evaluate.context import check_layout, resolve_hardware
from optimus_calc.evaluate.inputs import Inputs
from optimus_calc.evaluate.memory import MemoryEstimate
from optimus_calc.evaluate.step import StepEstimate, step_of
from optimus_calc.specs.hardware import Node
from optimus_calc.specs.model import BareModel, Model
from optimus_calc.specs.training import Offload
from optimus_calc.record import record


@record
class Strategy:
    label: str
    offload: Offload
    smartnic: str | None = None
    what_if: bool = False   # hardware the node does not have (a SmartNIC it lacks)


@record
class StrategyResult:
    strategy: Strategy
    inputs: Inputs
    memory: MemoryEstimate
    step: StepEstimate
    frameworks: tuple[str, ...] = ()   # the frameworks that run this layout (frameworks.py)
    refusal: str = ""   # without one: why (the --framework named's rule, else each one's)


@record
class Comparison:
    inputs: Inputs                      # the first strategy's (no offload): the shared layout
    results: tuple[StrategyResult, ...]
    best: StrategyResult | None         # None: no strategy fits (on the node, runnable)
    baseline: StrategyResult            # the optimizer kept on the GPU
    best_what_if: StrategyResult | None = None   # the fastest what-if that fits


def strategies(cat: Catalog, node: Node) -> list[Strategy]:
    """Every registered offload strategy's rows on ``node``, in registry order (each strategy
    says which: for the built-ins no offload, ZeRO-Offload, ZeRO-Infinity, OptimusNIC with each
    catalog SmartNIC, and SuperOffload where the node is a superchip; a plug-in's one row)."""
    from optimus_calc.evaluate import strategies as registry
    return [Strategy(label, s.offload, card, what_if=lacks)
            for s in registry.strategies() for label, card, lacks in s.compare_entries(cat, node)]


def default_tp(model: Model | BareModel, gpus_per_node: int) -> int:
    """The largest valid TP degree inside a node (the planner's rule, evaluate.shapes)."""
    from optimus_calc.evaluate.shapes import tp_degrees
    return max(tp_degrees(model, gpus_per_node)) if isinstance(model, Model) else gpus_per_node


def best_of(results: tuple[StrategyResult, ...] | list[StrategyResult]) -> StrategyResult | None:
    """The fastest strategy that fits; step times equal to 0.1% prefer no spill to host RAM,
    then the faster optimizer step."""
    feasible = [r for r in results if r.memory.fits]
    if not feasible:
        return None
    ref = feasible[0].step.step_time_s
    return min(feasible, key=lambda r: (round(r.step.step_time_s / ref, 3),
                                        r.memory.offload.spill_to_host_bytes_per_device > 0,
                                        r.step.optimizer_s))


def with_strategy(cat: Catalog, inp: Inputs, strat: Strategy) -> Inputs:
    """``inp``'s layout with the strategy's offload target (and SmartNIC, resolved again)."""
    hw = inp.hw
    own = None if hw.smartnic_implicit or hw.smartnic is None else hw.smartnic.name
    hw = resolve_hardware(cat, hw.node.name, hw.nodes, hw.gpu.name, hw.gpus_per_node,
                          strat.smartnic or own)
    lay = inp.layout.model_copy(update={"offload": strat.offload, "smartnic": (
        hw.smartnic.name if hw.smartnic else None)})
    check_layout(inp.model, lay, inp.training)
    from optimus_calc.frameworks.physics import for_layout
    return replace(for_layout(inp, lay), hw=hw)


def compare(cat: Catalog, inp: Inputs) -> Comparison:
    """Evaluate the layout of ``inp`` under every strategy its node offers (and the what-ifs)."""
    results = []
    from optimus_calc.frameworks import Reason, layout_support
    for strat in strategies(cat, inp.hw.node):
        inp = with_strategy(cat, inp, strat)
        mem, st = step_of(inp, inp.model.name)
        support = (layout_support(inp.layout, inp.training, inp.model)
                   if isinstance(inp.model, Model) else {})
        runs = tuple(f.value for f, r in support.items() if r is Reason.OK)
        named = getattr(getattr(inp, "framework", None), "key", None)
        why = [r.text for f, r in support.items() if named in (None, f.value)]
        results.append(StrategyResult(strat, inp, mem, st, runs,
                                      "" if runs else "; ".join(dict.fromkeys(why))))
    res = tuple(results)
    base = next(r for r in res if r.strategy.offload is Offload.NONE)
    # "best on this hardware": what the node has and some framework runs; the rest what-ifs
    real = [r for r in res if not r.strategy.what_if and r.frameworks]
    imagined = [r for r in res if r not in real]
    return Comparison(res[0].inputs, res, best_of(real), base, best_of(imagined))
