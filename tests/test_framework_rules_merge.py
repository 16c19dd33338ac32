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
