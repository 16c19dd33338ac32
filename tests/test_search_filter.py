"""The planner's filter 0 (the frameworks' rules) computed once per physics profile over the
whole grid (search/space.profile_filter) against the chunk-by-chunk count it replaced: the
same runnable and what-if layouts, the same count of layouts no framework runs, and the same
rejections by rule in the same order, ties of equal counts included (the order a chunk-by-chunk
count first meets them decides those, and the plan prints them in it)."""

import numpy as np
import pytest

from optimus_calc.evaluate import strategies
from optimus_calc.evaluate.context import resolve_hardware
from optimus_calc.frameworks import Framework
from optimus_calc.search.inputs import offload_targets
from optimus_calc.search.space import Space, enumerate_space, grid_rules, profile_filter
from optimus_calc.specs.training import Offload, Training

SMART = strategies.code_of(Offload.SMARTNIC)
GROUPS = [(Framework.DEEPSPEED, Framework.MEGATRON_DEEPSPEED), (Framework.MEGATRON,),
          (Framework.TORCHTITAN,), tuple(Framework)]
CASES = [("qwen3-30b-a3b", "dgx-a100", 4, 32768, 4096, None),   # MoE, CP: ties of counts
         ("llama-3-8b", "dgx-h100", 2, 32768, 64, "bluefield-3"),  # the SmartNIC what-if
         ("mixtral-8x7b", "dgx-h100", 2, 4096, 128, None)]


def _chunk_by_chunk(rules, space, frameworks, rows, what_if):
    """The reference: each chunk's layouts (Chunk.keep) and each framework's first failing
    rule (grid_rules, sliced to the chunk), counted chunk by chunk (framework by framework,
    code by code), as filter 0 counted them before."""
    run, smart, dropped, n_gone = [], [], {}, 0
    for i, chunk in enumerate(space.chunks(rows)):
        v = chunk.views()
        lo, hi = i * rows, i * rows + len(chunk.base)
        reason = {f: np.broadcast_to(rules[f][..., lo:hi], chunk.shape) for f in frameworks}
        runs = np.zeros(chunk.shape, dtype=bool)
        for f in frameworks:
            runs |= reason[f] == 0
        gone = chunk.keep & ~runs
        n_gone += int(gone.sum())
        for f in frameworks:
            codes = reason[f][gone]
            for c in np.unique(codes):
                dropped[(f, int(c))] = dropped.get((f, int(c)), 0) + int((codes == c).sum())
        run.append(chunk.keep & runs)
        smart.append(gone & (v["offload"] == SMART) if what_if else np.zeros_like(gone))
    return (np.concatenate(run, axis=-1), np.concatenate(smart, axis=-1), n_gone,
            sorted(dropped.items(), key=lambda kv: -kv[1]))


def _check(rules, space, frameworks, rows) -> int:
    """profile_filter against the reference; the number of tied counts."""
    run, smart, wanted, n_gone, dropped = profile_filter(rules, space, frameworks, True,
                                                         SMART, rows)
    ref_run, ref_smart, ref_gone, ref_dropped = _chunk_by_chunk(rules, space, frameworks,
                                                                rows, True)
    shape = ref_run.shape
    np.testing.assert_array_equal(np.broadcast_to(run, shape), ref_run)
    np.testing.assert_array_equal(np.broadcast_to(smart if smart is not None else False,
                                                  shape), ref_smart)
    np.testing.assert_array_equal(wanted, (ref_run | ref_smart).any(axis=(0, 1, 2, 3)))
    assert n_gone == ref_gone  # both count each recompute value
    # the order after the plan's sort by count (stable: ties keep the order counted)
    assert [((f, c), n) for f, c, n in sorted(dropped, key=lambda x: -x[2])] == ref_dropped
    counts = [n for _, n in ref_dropped]
    return sum(counts.count(n) > 1 for n in counts)


@pytest.mark.parametrize("name,node,nodes,seq,gb,card", CASES)
@pytest.mark.parametrize("rows", [37, 100000])
def test_profile_filter_equals_chunk_by_chunk(cat, name, node, nodes, seq, gb, card, rows):
    model = cat.get(name, "model")
    hw = resolve_hardware(cat, node, nodes, smartnic=card)
    base = Training(seq_len=seq, global_batch=gb)
    space = enumerate_space(model, hw.gpus, hw.gpus_per_node, gb, seq, offload_targets(hw))
    rules = grid_rules(space, model, base, tuple(Framework), 1 << 14)
    ties = sum(_check(rules, space, frameworks, rows) for frameworks in GROUPS)
    if name == "qwen3-30b-a3b":
        assert ties > 0  # real rejections tie


def test_tied_rejections_keep_the_order_chunks_meet_them():
    # two grid points (TP 2), one chunk each; framework A's rule 2 rejects every layout of
    # the first grid point, its rule 1 every layout of the second: equal counts, and a chunk
    # by chunk count meets rule 2 first (not in code order); B runs nothing, rule 3 throughout
    base = np.array([[2, 1, 1, 1, 1, 1, 1, 8], [2, 1, 1, 1, 1, 2, 1, 8]], dtype=np.int64)
    space = Space(base, (np.array([0, 1]), np.array([strategies.code_of(Offload.NONE)]),
                         np.array([0, 1, 2]), np.array([0, 1])))
    a = np.zeros((2, 1, 1, 2, 2), dtype=np.int16)
    a[..., 0], a[..., 1] = 2, 1
    rules = {"A": a, "B": np.full_like(a, 3)}
    assert _check(rules, space, ("A", "B"), 1) == 2
    dropped = profile_filter(rules, space, ("A", "B"), True, SMART, 1)[-1]
    # each of A's rejects 2 ZeRO x 2 SP x 3 recompute layouts of its grid point, B's both
    assert sorted(dropped, key=lambda x: -x[2]) == [("B", 3, 24), ("A", 2, 12), ("A", 1, 12)]
