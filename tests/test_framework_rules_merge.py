"""frameworks/registry.run_rules on a planner's grid merges consecutive rules whose failures
read few axes before writing them, and skips rules that fail nowhere (a speed tactic): the
codes must equal the rule-by-rule writes, bit for bit and in the same shape."""

import numpy as np

from optimus_calc.evaluate.context import resolve_hardware
from optimus_calc.frameworks import Framework, registry
from optimus_calc.search.inputs import offload_targets
from optimus_calc.search.space import enumerate_space, grid_rules
from optimus_calc.specs.training import Training


def test_merged_rules_equal_rule_by_rule(cat, monkeypatch):
    # the worst known plan's grid: 82,597 points x (4 ZeRO x 5 offload) = 1.65 M layouts
    model = cat.get("qwen3-30b-a3b", "model")
    hw = resolve_hardware(cat, "dgx-a100", 720)
    base = Training(seq_len=32768, global_batch=99792000)
    space = enumerate_space(model, hw.gpus, hw.gpus_per_node, 99792000, 32768,
                            offload_targets(hw))
    assert len(space.base) * 20 >= registry.MERGE_FROM
    merged = grid_rules(space, model, base, tuple(Framework), 1 << 22)
    monkeypatch.setattr(registry, "MERGE_FROM", 1 << 62)  # every rule written on its own
    ref = grid_rules(space, model, base, tuple(Framework), 1 << 22)
    for f in Framework:
        assert merged[f].shape == ref[f].shape
        np.testing.assert_array_equal(merged[f], ref[f], err_msg=str(f))
    # each framework rejects some layouts with several different rules
    assert all(len(np.unique(ref[f])) > 3 for f in Framework)


def test_one_layouts_first_rule_is_the_grids_code(cat):
    # layout_support (a single command's one layout) scans the rules front to back and stops at
    # the first that holds (registry.first_rule); run_rules writes them back to front over a
    # grid. Same code on every layout of a grid where several rules often hold at once.
    import itertools

    from optimus_calc.frameworks.base import Layouts
    model = cat.get("qwen3-30b-a3b", "model")
    axes = dict(tp=[1, 2, 3, 8], pp=[1, 3, 4], dp=[1, 3, 16], cp=[1, 2], ep=[1, 2, 128],
                zero=[0, 1, 3], off=[0, 1, 2, 3], opar=[False, True], v=[1, 2], mb=[1, 3])
    points = list(itertools.product(*axes.values()))[::37]  # 186 of the 6,912, spread
    cols = [np.array(c) for c in zip(*points)]
    shape = dict(heads=model.heads, n_kv=model.n_kv, experts=model.experts,
                 layers=model.layers, global_batch=96, model=model, seq_len=4096)
    grid = Layouts(*cols, **shape)
    several = 0
    for p in registry.plugins():
        codes = registry.run_rules(p.rules, grid)
        for j, pt in enumerate(points):
            one = Layouts(*pt, **shape)
            assert registry.first_rule(p.rules, one) == codes[j], (p.key, pt)
            several += sum(r.when(one) is not None and bool(np.any(r.when(one)))
                           for r in p.rules) > 1
    assert several > 100  # the order matters on these layouts


def test_the_offload_allowlist_reads_as_np_isin():
    # runs_offloads' mask (frameworks/base._none_of: one comparison a code) is ~np.isin on the
    # planner's offload axis and on one layout alike, for empty, partial and full allowlists
    from optimus_calc.frameworks.base import _none_of
    rng = np.random.default_rng(24)
    for codes in (np.array([], dtype=np.int64), np.array([0]), np.array([0, 2, 5]),
                  np.arange(6)):
        for values in (rng.integers(0, 6, size=(3, 1, 7)), np.int64(2), np.array(5)):
            got = _none_of(values, codes)
            np.testing.assert_array_equal(got, ~np.isin(values, codes))
            assert np.shape(got) == np.shape(values)
