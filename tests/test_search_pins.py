"""Pins (--tp, --pp, --dp, --cp, --ep, --micro-batch, --interleave) are applied inside the
enumeration's loops (search/space.py): the pinned space must be exactly the unpinned one
filtered to the pinned values, in the same order, except that a pinned micro-batch is searched
as given (past the MAX_MICRO_BATCH_TOKENS cap), a pinned CP at any sequence length and a pinned
interleave also where it cuts a stage's layers unevenly."""

from __future__ import annotations

import numpy as np
import pytest

from optimus_calc.evaluate.context import resolve_hardware
from optimus_calc.search.inputs import offload_targets
from optimus_calc.search.space import BASE_COLS, enumerate_space

# (model, node, nodes, seq, global batch): the worst unpinned plan (MoE, CP from 32K) and a
# dense model under the batch rule
CASES = [("qwen3-30b-a3b", "dgx-a100", 720, 32768, 99792000), ("llama70b", "dgx-h100", 4, 4096,
                                                                None)]
PINS = [{"tp": (2,)}, {"pp": (2, 4), "mb": (1, 2)}, {"dp": (1440, 16)}, {"cp": (1,)},
        {"ep": (8,), "v": (2,)}, {"tp": (3,)}]


def _space(cat, name, node, nodes, seq, gb, pins):
    m = cat.get(name, "model")
    hw = resolve_hardware(cat, node, nodes)
    return enumerate_space(m, hw.gpus, hw.gpus_per_node, gb, seq, offload_targets(hw), pins=pins)


@pytest.mark.parametrize("case", CASES)
def test_pins_inside_the_loops_equal_filtering_after(cat, case):
    everything = _space(cat, *case, None)
    for pins in PINS:
        keep = np.ones(len(everything.base), dtype=bool)
        for col, values in pins.items():
            keep &= np.isin(everything.base[:, BASE_COLS.index(col)], values)
        pinned = _space(cat, *case, pins)
        col = lambda j: pinned.base[:, BASE_COLS.index(j)]  # noqa: E731
        layers = cat.get(case[0], "model").layers
        uneven = (col("v") > 1) & (layers % (col("pp") * col("v")) != 0)
        # the extra rows of a pinned interleave are the uneven ones, each chunk with a layer,
        # the embedding or the loss
        assert (col("pp")[uneven] * col("v")[uneven] <= layers + 2).all()
        assert uneven.any() == ("v" in pins and len(everything.base[keep]) < len(pinned.base))
        assert np.array_equal(pinned.base[~uneven], everything.base[keep]), pins
        assert all(np.array_equal(a, b) for a, b in zip(pinned.switches, everything.switches))
    # TP 3 divides neither 32 heads nor 8 GPUs: nothing
    assert len(_space(cat, *case, {"tp": (3,)}).base) == 0


def test_a_pinned_micro_batch_past_the_cap_is_searched(cat):
    # 99,792,000 = 2^7 3^4 5^3 7 11; at 32,768 tokens the cap is 2^20 / 2^15 = 32 sequences, so
    # micro-batch 64 appears only pinned, wherever it divides the per-replica batch (gb / dp)
    case = CASES[0]
    assert not (_space(cat, *case, None).base[:, BASE_COLS.index("mb")] > 32).any()
    pinned = _space(cat, *case, {"mb": (64, 7)}).base
    col = {k: pinned[:, j] for j, k in enumerate(BASE_COLS)}
    assert set(col["mb"].tolist()) == {7, 64}
    assert ((col["gb"] // col["dp"]) % col["mb"] == 0).all()
    # DP 1440 leaves 69,300 = 2^2 3^2 5^2 7 11 sequences per replica: 7 divides it, 64 not
    assert set(col["mb"][col["dp"] == 1440].tolist()) == {7}
    assert 64 in col["mb"][col["dp"] == 45].tolist()  # 2,217,600 = 2^7 ... per replica
