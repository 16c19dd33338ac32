"""The pure logic of tools/mutate_sample.py (the sampled mutation run, docs/hardening.md): the
directory of a mutant, the seeded stratified draw, the Wilson interval and the weighted score,
each against values computed by hand in the comments."""

import importlib.util
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[1] / "tools" / "mutate_sample.py"
_SPEC = importlib.util.spec_from_file_location("mutate_sample", _PATH)
ms = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(ms)


@pytest.mark.parametrize("name, stratum", [
    ("optimus_calc.equations.compiled.step.x_t_step__mutmut_3", "compiled"),
    ("optimus_calc.analyses.breakeven.solve.x_root__mutmut_1", "analyses"),
    ("optimus_calc.evaluate.strategies.cpu.xǁCpuǁstep__mutmut_2", "evaluate"),
    ("optimus_calc.frameworks.megatron.x_rules__mutmut_9", "frameworks"),
    ("optimus_calc.search.plan.x_plan__mutmut_4", "search"),
    ("optimus_calc.equations.memory.x_f__mutmut_1", None),  # the sympy sources: not mutated
    ("optimus_calc.report.html.x_page__mutmut_1", None),
    ("other.evaluate.work.x_f__mutmut_1", None),
])
def test_stratum_is_the_directory_under_the_package(name, stratum):
    assert ms.stratum_of(name) == stratum


def _names():
    # 30 evaluate, 5 compiled, 12 search mutants, one outside the strata, none in the others
    out = [f"optimus_calc.evaluate.work.x_f__mutmut_{i}" for i in range(30)]
    out += [f"optimus_calc.equations.compiled.step.x_g__mutmut_{i}" for i in range(5)]
    out += [f"optimus_calc.search.plan.x_h__mutmut_{i}" for i in range(12)]
    return out + ["optimus_calc.report.html.x_page__mutmut_1"]


def test_stratified_sample_sizes_and_membership():
    sample = ms.stratified_sample(_names(), per_dir=8, seed=7)
    # 8 of 30 and 8 of 12; all 5 of the smaller stratum; empty strata stay empty
    assert {s: len(v) for s, v in sample.items()} == {
        "frameworks": 0, "search": 8, "analyses": 0, "evaluate": 8, "compiled": 5}
    assert all(ms.stratum_of(n) == s for s, v in sample.items() for n in v)
    assert all(len(set(v)) == len(v) for v in sample.values())  # without replacement


def test_stratified_sample_is_seeded_and_order_free():
    names = _names()
    a = ms.stratified_sample(names, per_dir=8, seed=7)
    assert ms.stratified_sample(list(reversed(names)), per_dir=8, seed=7) == a
    # another seed draws another evaluate sample (C(30, 8) = 5,852,925 possible draws)
    assert ms.stratified_sample(names, per_dir=8, seed=8)["evaluate"] != a["evaluate"]


def test_a_larger_sample_extends_the_smaller():
    names = _names()
    small = ms.stratified_sample(names, per_dir=4, seed=7)
    large = ms.stratified_sample(names, per_dir=10, seed=7)
    # 4 of 30 within 10 of 30, 4 of 12 within 10 of 12, 4 of 5 within all 5
    assert all(set(small[s]) < set(large[s]) for s in ("evaluate", "search", "compiled"))
    assert len(large["compiled"]) == 5


def test_wilson_interval_by_hand():
    # 8 of 10, z = 1.96: z^2/n = 0.38416, centre = (0.8 + 0.19208) / 1.38416 = 0.716738,
    # half = 1.96/1.38416 * sqrt(0.016 + 0.009604) = 1.416021 * 0.160012 = 0.226581
    # -> [0.490157, 0.943319]
    lo, hi = ms.wilson_interval(8, 10, z=1.96)
    assert lo == pytest.approx(0.490157, abs=2e-6)
    assert hi == pytest.approx(0.943319, abs=2e-6)
    # 0 of 10: centre = half = 0.19208/1.38416 = 0.138770 -> [0, 0.277540]; 10 of 10 mirrors it
    assert ms.wilson_interval(0, 10, z=1.96) == pytest.approx((0.0, 0.277540), abs=2e-6)
    assert ms.wilson_interval(10, 10, z=1.96) == pytest.approx((0.722460, 1.0), abs=2e-6)
    assert ms.wilson_interval(0, 0) == (0.0, 1.0)


def test_stratified_score_by_hand():
    # strata of 100 and 300 mutants, 8/10 and 9/10 detected: p = 0.25*0.8 + 0.75*0.9 = 0.875;
    # var = 0.0625*0.16/10*(1-10/100) + 0.5625*0.09/10*(1-10/300) = 0.0009 + 0.00489375
    # = 0.00579375, sd 0.0761167, half (z 1.96) 0.149189 -> [0.725811, 1.024189 clipped to 1]
    p, lo, hi = ms.stratified_score([(100, 8, 10), (300, 9, 10), (50, 0, 0)], z=1.96)
    assert p == pytest.approx(0.875, abs=1e-9)
    assert lo == pytest.approx(0.725811, abs=2e-6)
    assert hi == 1.0


def test_tally_counts_timeouts_as_detected_and_unrun_apart():
    t = ms.tally(["killed", "killed", "timeout", "survived", "no tests", "not checked",
                  "suspicious", "segfault"])
    # killed 2 + segfault 1; scored = 3 killed + 1 timeout + 1 survived + 1 no tests
    assert t == {"killed": 3, "timeout": 1, "survived": 1, "no tests": 1, "not checked": 2,
                 "scored": 6}


def test_a_size_per_directory():
    sample = ms.stratified_sample(_names(), {"frameworks": 3, "search": 2, "analyses": 3,
                                             "evaluate": 6, "compiled": 9}, seed=7)
    # 6 of 30, 2 of 12, all 5 (of 9 asked); each the prefix of the same shuffle as per_dir=8
    assert [len(sample[s]) for s in ("search", "evaluate", "compiled")] == [2, 6, 5]
    full = ms.stratified_sample(_names(), per_dir=8, seed=7)
    assert set(sample["evaluate"]) < set(full["evaluate"])
