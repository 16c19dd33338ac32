"""`breakeven`'s searches ask the evaluator for many values at once (analyses/breakeven/batched.py,
the bracketing search's look-ahead): the answers must be exactly those of one evaluation per value.

The layout is the paper's example of tests/test_breakeven.py (Llama 3 70B on two DGX A100, TP2
PP4 DP2 ZeRO-3, one micro-batch per step), with a BlueField-3 card and with the host CPU.
"""

import random

import pytest

from optimus_calc.analyses import breakeven as B
from optimus_calc.analyses.breakeven.batched import measure_fields, measure_many
from optimus_calc.analyses.breakeven.problem import _Bracket, bracket, bracket_all


@pytest.fixture(scope="module")
def cases(cat):
    from optimus_calc.evaluate.context import fill_layout, resolve_hardware
    from optimus_calc.inputs import resolve_model
    from optimus_calc.specs.assumptions import Assumptions
    from optimus_calc.specs.training import Offload, Training, ZeroStage
    hw = resolve_hardware(cat, "dgx-a100", 2, smartnic="bluefield-3")
    tr = Training(seq_len=2048, global_batch=16, micro_batch=8, recompute="full")
    model = resolve_model("llama70b", cat)
    out = {}
    for off in (Offload.SMARTNIC, Offload.CPU):
        lay = fill_layout(hw, 2, 4, None, 1, zero=ZeroStage(3), offload=off,
                          smartnic="bluefield-3" if off is Offload.SMARTNIC else None)
        out[off.value] = B.Case.of(model, hw, lay, tr, Assumptions())
    # an FPGA card with two memory tiers (Alveo V80: HBM and DDR), whose fabric, capacity and
    # second tier enter the optimizer step's branches
    fpga = resolve_hardware(cat, "dgx-a100", 2, smartnic="alveo-v80")
    lay = fill_layout(fpga, 2, 4, None, 1, zero=ZeroStage(3), offload=Offload.SMARTNIC,
                      smartnic="alveo-v80")
    out["fpga"] = B.Case.of(model, fpga, lay, tr, Assumptions())
    return out


@pytest.mark.parametrize("kind", ["smartnic", "cpu", "fpga"])
def test_many_values_in_one_evaluation_equal_one_at_a_time(cases, kind):
    """Every parameter of the device at five values from a hundredth to a hundred times its
    own: the stacked evaluation's figures equal measure() of each value exactly (State is a
    frozen dataclass of floats: == is bit for bit). The bandwidths, cores, clock and the
    SmartNICs per node must stack (the search's common case), and so must the capacities, an
    FPGA's fabric and its second memory tier."""
    from optimus_calc.evaluate.strategies import device_params
    case = cases[kind]
    stacked = []
    for p in device_params(case.hw, case.layout.offload):
        cur = p.get(case.hw, case.layout)
        values = [max(1.0, round(cur * f)) if p.integer else cur * f
                  for f in (0.01, 0.5, 1.0, 3.0, 100.0)]
        one_by_one = [B.measure(case.with_param(p, v)) for v in values]
        many = measure_many([case.with_param(p, v) for v in values])
        if many is not None:
            stacked.append(p.name)
            assert many == one_by_one, p.name
    must = {"memory_bandwidth_GBps", "core_bandwidth_GBps", "cores"}
    if kind == "smartnic":
        must |= {"core_GHz", "smartnic_host_link.bandwidth_GBps", "smartnics_per_node",
                 "memory_GB"}
    if kind == "cpu":
        must.add("host_memory_GB")
    if kind == "fpga":
        # the capacity, the fabric and the second tier are columns too (element-wise branches
        # in evaluate/optimizer.py device_time and SmartNIC.fp32_flops_per_s)
        must = {"memory_bandwidth_GBps", "memory_GB", "fabric_fp32_TFLOPS",
                "expansion_memory_GB", "expansion_bandwidth_GBps"}
    assert must <= set(stacked), stacked


def test_look_ahead_asks_the_same_questions_and_finds_the_same_value():
    """With a look-ahead the search still asks the predicate the same values in the same order
    (the look-ahead only warms a cache) and returns the same answer; every value it asks was
    handed to the look-ahead first, and the look-ahead's batches are at most 31 values (5
    levels of the bisection)."""
    rng = random.Random(18)
    for _ in range(200):
        integer = rng.random() < 0.4
        low, cap = (1.0, float(rng.randint(2, 4096))) if integer else (1e-6, 10 ** rng.uniform(
            -3, 6))
        cur = float(rng.randint(1, int(cap))) if integer else 10 ** rng.uniform(-5, 5)
        cur = min(cur, cap)
        threshold = rng.choice([rng.uniform(low, cap * 1.5), low / 2, cap * 2])
        asked_plain: list[float] = []
        asked: list[float] = []
        fetched: set[float] = set()
        batches: list[int] = []

        def plain(v):
            asked_plain.append(v)
            return v >= threshold

        def pred(v):
            assert v in fetched
            asked.append(v)
            return v >= threshold

        def ahead(vs):
            batches.append(len(vs))
            fetched.update(vs)
        want = bracket(plain, cur, low, cap, integer)
        assert bracket(pred, cur, low, cap, integer, ahead) == want
        assert asked == asked_plain
        assert max(batches) <= 31
        assert len(batches) <= len(asked)


def test_bracket_state_machine_by_hand():
    """Integers 1..64 from 40, goal v >= 37: 40 yes, then halving: 20 no; bisection 30 no,
    35 no, 37 yes, 36 no -> 37. The first look-ahead from the start holds 40, the bound 64 (40
    not met) and 20 (40 met)."""
    asked = []
    assert bracket(lambda v: asked.append(v) or v >= 37, 40.0, 1.0, 64.0, True) == (
        "value", 37.0)
    assert asked == [40.0, 20.0, 30.0, 35.0, 37.0, 36.0]
    search = _Bracket(40.0, 1.0, 64.0, True)
    assert search.ahead(search.start(), 2) == [40.0, 20.0, 64.0]


@pytest.mark.parametrize("kind", ["smartnic", "cpu", "fpga"])
def test_several_fields_as_columns_equal_one_at_a_time(cases, kind):
    """measure_fields stacks every hardware parameter of the device at once, each at three
    values, without a case per value: each field a parameter changes is a column holding its
    value in that parameter's rows and today's value in the others' (the joint bandwidth pair
    changes two fields, an FPGA's second tier a nested one; the cards per node are the batch's
    column). Every row equals measure() of the case with that one parameter changed, bit for
    bit."""
    from optimus_calc.evaluate.strategies import device_params
    case = cases[kind]
    asks = []
    for p in device_params(case.hw, case.layout.offload):
        cur = p.get(case.hw, case.layout)
        asks += [(p, max(1.0, round(cur * f)) if p.integer else cur * f) for f in (0.3, 2.0, 7.0)]
    params = {p.key for p, _ in asks}
    assert len(params) >= 4 and (kind == "fpga" or any("+" in k for k in params))
    assert ("layout.smartnics_per_node" in params) is (kind != "cpu")
    rows = measure_fields(case, asks)
    assert rows is not None and len(rows) == len(asks)
    for i, (p, v) in enumerate(asks):
        assert rows.state(i) == B.measure(case.with_param(p, v)), (p.key, v)


def test_searches_advanced_together_answer_as_each_alone():
    """bracket_all of 50 random searches (integers and reals, thresholds inside, below and
    above the range) gives each search the answer bracket gives it alone, asks each predicate
    the same values in the same order, and hands every value to the one look-ahead call of its
    round first; with several searches a round asks at most as many calls as the longest."""
    rng = random.Random(7)
    specs = []
    for _ in range(50):
        integer = rng.random() < 0.4
        low, cap = (1.0, float(rng.randint(2, 4096))) if integer else (1e-6, 10 ** rng.uniform(
            -3, 6))
        cur = min(float(rng.randint(1, int(cap))) if integer else 10 ** rng.uniform(-5, 5), cap)
        specs.append((cur, low, cap, integer,
                      rng.choice([rng.uniform(low, cap * 1.5), low / 2, cap * 2])))
    alone, asked_alone = [], []
    for cur, low, cap, integer, t in specs:
        seen: list[float] = []
        alone.append(bracket(lambda v, t=t, seen=seen: seen.append(v) or v >= t, cur, low, cap,
                             integer))
        asked_alone.append(seen)
    asked: list[list[float]] = [[] for _ in specs]
    fetched: list[set[float]] = [set() for _ in specs]
    rounds: list[int] = []

    def pred(i):
        def f(v):
            assert v in fetched[i]
            asked[i].append(v)
            return v >= specs[i][4]
        return f

    def ahead(wants):
        rounds.append(len(wants))
        for i, vs in wants:
            fetched[i].update(vs)
    together = bracket_all([(pred(i), cur, low, cap, integer)
                            for i, (cur, low, cap, integer, _) in enumerate(specs)], ahead)
    assert together == alone and asked == asked_alone
    assert len(rounds) <= max(len(a) for a in asked_alone) and max(rounds) > 1


@pytest.mark.parametrize("kind", ["smartnic", "fpga"])
def test_cards_as_columns_equal_one_at_a_time(cases, kind):
    """The minimum-card search asks for whole cards (a multiple of the named one, then one
    field at a time lowered from a corner): stacked as columns of the named card's fields, each
    card's figures equal measure() of the case with that card, bit for bit."""
    from optimus_calc.analyses.breakeven.card import (CardSpec, _Oracle, card_fields, scaled,
                                                      with_card)
    case = cases[kind]
    named = CardSpec(case.hw.smartnic, case.hw.smartnic_host_link)
    specs = [scaled(named, f, "keep") for f in (0.25, 0.5, 2.0, 9.0)]
    corner = scaled(named, 3.0, "up")
    specs += [corner.with_field(f, corner.get(f) * g) for f in card_fields(named.card)
              for g in (0.1, 0.7)]
    oracle = _Oracle(case, B.Goal.HIDE, None)
    rows = oracle._columns(specs)
    assert rows is not None and len(rows) == len(specs)
    oracle.prefetch(specs)
    for spec in specs:
        assert oracle.state(spec) == B.measure(with_card(case, spec)), spec


@pytest.mark.parametrize("kind", ["smartnic", "cpu", "fpga"])
def test_device_figures_read_from_the_look_ahead_are_the_case_s_own(cases, kind):
    """solve_device reads the device's own figures from the stacked evaluation of every
    parameter at its value: the same State as one evaluation of the case, bit for bit."""
    for goal in (B.Goal.HIDE, B.Goal.FIT):
        assert B.solve_device(cases[kind], goal).state == B.measure(cases[kind])


def _hw_params(case):
    from optimus_calc.evaluate.strategies import device_params
    return [p for p in device_params(case.hw, case.layout.offload) if p.role != "layout"]


def test_rows_at_today_s_values_are_checked_against_one_measurement(cases, monkeypatch):
    """Each parameter stacked for the first time is checked at its first row against a batch
    of one; a search asks every parameter at today's value first, and those rows are all the
    case itself: measured once, not once per parameter."""
    from optimus_calc.analyses.breakeven import batched
    case = cases["smartnic"]
    params = _hw_params(case)
    asks = [(p, p.get(case.hw, case.layout)) for p in params]
    asks += [(p, 2 * p.get(case.hw, case.layout)) for p in params]
    calls = []
    monkeypatch.setattr(batched, "_CHECKED", {})
    monkeypatch.setattr(batched, "measure", lambda c: calls.append(c) or B.measure(c))
    rows = measure_fields(case, asks)
    assert len(calls) == 1 and calls[0] is case
    assert set(batched._CHECKED) == {(p.key,) for p in params}
    assert all(batched._CHECKED.values())
    for i, (p, v) in enumerate(asks):
        assert rows.state(i) == B.measure(case.with_param(p, v)), (p.key, v)


def test_a_stacking_bug_is_caught_at_today_s_value(cases, monkeypatch):
    """An evaluator that collapsed a column to one value (a reduction over the layouts) gives
    the row at today's value another figure than the case measured alone: the check refuses
    the stack, and the parameter is evaluated one case at a time from then on."""
    import numpy as np
    from optimus_calc.analyses.breakeven import batched
    from optimus_calc.evaluate.hw_params import with_fields
    real = batched.evaluate

    def collapsing(batch, model, hw, *args, **kw):
        col = hw.smartnic.memory_bandwidth_GBps
        if isinstance(col, np.ndarray):
            hw = with_fields(hw, {("smartnic", "memory_bandwidth_GBps"): float(col.max())})
        return real(batch, model, hw, *args, **kw)

    monkeypatch.setattr(batched, "_CHECKED", {})
    monkeypatch.setattr(batched, "evaluate", collapsing)
    case = cases["smartnic"]
    p = next(q for q in _hw_params(case) if q.key == "smartnic.memory_bandwidth_GBps")
    cur = p.get(case.hw, case.layout)
    assert measure_fields(case, [(p, cur), (p, cur * 1000)]) is None
    assert batched._CHECKED[(p.key,)] is False


def test_the_first_look_ahead_is_what_a_search_asks_first():
    """solve._closed_forms evaluates each searched parameter's first look-ahead with the
    closed forms' checks (problem.first_look_ahead): it must be the values bracket_all's first
    round asks, so that round finds them known and calls the evaluator for nothing."""
    from optimus_calc.analyses.breakeven.problem import first_look_ahead
    seen = []
    searches = [(lambda v: v >= 37.5, 10.0, 0.01, 1e4, False),
                (lambda v: v >= 3, 8.0, 1.0, 64.0, True),
                (lambda v: v >= 0.5, 2.0, 0.002, 2e6, False)]
    bracket_all(searches, seen.append)
    assert seen[0] == [(i, first_look_ahead(cur, low, cap, integer))
                       for i, (_, cur, low, cap, integer) in enumerate(searches)]
    assert seen[0][0][1][0] == 10.0 and len(seen[0][0][1]) > 10  # today's value, then 4 levels
