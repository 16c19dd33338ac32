"""The planner's exact filters (search/passes.py), checked against brute force: the rules
before memory, and the lower bound (compute, EP, fixed host time) that skips the step time of
layouts that cannot reach the top K, the best step without offload or the SmartNIC what-if,
evaluated in batches gathered over chunks. With small chunks, a small probe and small batches
(so every filter acts, over several chunks), the search must return
the same top K (step and GPU bytes, in order), feasible count, best no-offload step and what-if
as ranking every layout of the space evaluated whole."""

import functools

import numpy as np
import pytest

from optimus_calc import catalog as catalog_mod
from optimus_calc.evaluate import strategies
from optimus_calc.evaluate.context import resolve_hardware
from optimus_calc.search import passes
from optimus_calc.search.passes import Objective, search
from optimus_calc.search.inputs import offload_targets
from optimus_calc.search.space import enumerate_space
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Offload, Training
from tests_support import evaluate_space

CASES = [("llama-3-8b", "dgx-h100", 2, 32768, 64, "bluefield-3"),   # CP, SmartNIC what-if
         ("mixtral-8x7b", "dgx-h100", 2, 4096, 128, "alveo-v80"),   # MoE, expert parallelism
         ("llama-2-13b", "dgx-a100", 2, 4096, 64, None),
         ("qwen3-14b", "gh200-nvl2", 2, 4096, 32, None),            # SuperOffload
         # the default batch rule: each layout's global batch is its own (dp 12 holds 516,
         # dp 24 holds 528, dp 48 holds 528, ...), so step time and throughput rank apart
         ("llama-2-13b", "dgx-a100", 3, 4096, None, None),
         ("llama-3-8b", "dgx-h100", 5, 8192, None, "bluefield-3")]


def _brute(ev, cols, objective, top_k, distinct):
    ok = ev["feasible"] & ev["runs"]
    tps, gpu = ev["tokens_per_s"], ev["gpu_bytes"]
    key = (-tps, gpu) if objective is Objective.MEMORY else (gpu, -tps)
    idx = np.flatnonzero(ok)
    order = idx[np.lexsort(tuple(k[idx] for k in key))]
    if distinct:
        _, first = np.unique(cols["tp"][order] * 1_000_003 + cols["pp"][order],
                             return_index=True)
        order = order[np.sort(first)]
    top = order[:top_k]
    off = cols["offload"]
    none = ok & (off == strategies.code_of(Offload.NONE))
    smart = np.flatnonzero(ev["feasible"] & (off == strategies.code_of(Offload.SMARTNIC)))
    w = smart[np.lexsort(tuple(k[smart] for k in key))][:1]
    return (int(ok.sum()), tps[top], gpu[top], tps[none].max() if none.any() else 0.0,
            (tps[w], gpu[w]))


@functools.lru_cache(maxsize=None)
def _whole_space(name, node, nodes, seq, gb, card):
    """A case's whole space evaluated (brute force), once for its objectives and distinct
    settings: it does not depend on them, nor on the planner's chunking patched below."""
    cat = catalog_mod.load(())
    m = cat.get(name, "model")
    hw = resolve_hardware(cat, node, nodes, smartnic=card)
    base, asm = Training(seq_len=seq, global_batch=gb), Assumptions()
    space = enumerate_space(m, hw.gpus, hw.gpus_per_node, gb, seq, offload_targets(hw))
    return evaluate_space(space, m, hw, base, asm)


@pytest.mark.parametrize("objective", list(Objective))
@pytest.mark.parametrize("distinct", [False, True])
@pytest.mark.parametrize("name,node,nodes,seq,gb,card", CASES)
def test_pruned_search_equals_brute_force(cat, monkeypatch, name, node, nodes, seq, gb, card,
                                          objective, distinct):
    monkeypatch.setattr(passes, "PROBE", 3)              # prune from the first few layouts on
    monkeypatch.setattr(passes, "CHUNK_ELEMENTS", 1 << 13)  # and over several chunks,
    monkeypatch.setattr(passes, "SECOND_PASS_BATCH", 7)     # flushing the pending pass often
    evaluated = []
    second = passes._second_pass
    monkeypatch.setattr(passes, "_second_pass",
                        lambda cols, gpu, runs, *a: (evaluated.append(len(gpu)),
                                                     second(cols, gpu, runs, *a)))
    m = cat.get(name, "model")
    hw = resolve_hardware(cat, node, nodes, smartnic=card)
    base, asm = Training(seq_len=seq, global_batch=gb), Assumptions()
    space = enumerate_space(m, hw.gpus, hw.gpus_per_node, gb, seq, offload_targets(hw))
    res = search(m, hw, base, asm, space, objective, 5, distinct)
    ev, cols = _whole_space(name, node, nodes, seq, gb, card)
    assert len(cols["tp"]) == len(space)
    feasible, tps, gpu, best_none, (w_tps, w_gpu) = _brute(ev, cols, objective, 5, distinct)
    assert res.feasible == feasible > 5
    np.testing.assert_allclose(res.top["tps"], tps, rtol=1e-12)
    np.testing.assert_allclose(res.top["gpu"], gpu, rtol=1e-12)
    assert res.best_no_offload_tps == pytest.approx(best_none, rel=1e-12)
    if card:
        assert len(w_tps) == 1
        np.testing.assert_allclose(res.what_if["tps"], w_tps, rtol=1e-12)
        np.testing.assert_allclose(res.what_if["gpu"], w_gpu, rtol=1e-12)
    # every layout that fits was a candidate; the bound left some unevaluated
    smart = int((ev["feasible"] & (cols["offload"] == strategies.code_of(Offload.SMARTNIC))
                 & ~ev["runs"]).sum())
    assert sum(evaluated) < feasible + smart


@pytest.mark.parametrize("seed", range(6))
def test_random_spaces_with_varying_batches_rank_by_throughput(cat, monkeypatch, seed):
    # random models, node counts and sequences under the default batch rule (the global
    # batches of the feasible layouts differ): the planner's top K is brute force's order by
    # tokens/s, then GPU bytes
    rng = np.random.default_rng(seed)
    monkeypatch.setattr(passes, "PROBE", 2)
    monkeypatch.setattr(passes, "CHUNK_ELEMENTS", 1 << 12)
    monkeypatch.setattr(passes, "SECOND_PASS_BATCH", 5)
    name = ["llama-3-8b", "llama-2-13b", "qwen3-14b", "mixtral-8x7b"][rng.integers(4)]
    node = ["dgx-a100", "dgx-h100"][rng.integers(2)]
    nodes = int([3, 5, 6, 7, 9][rng.integers(5)])  # GPUs not a power of two
    seq = int([2048, 4096, 8192][rng.integers(3)])
    m = cat.get(name, "model")
    hw = resolve_hardware(cat, node, nodes)
    base, asm = Training(seq_len=seq, global_batch=None), Assumptions()
    space = enumerate_space(m, hw.gpus, hw.gpus_per_node, None, seq, offload_targets(hw))
    res = search(m, hw, base, asm, space, Objective.THROUGHPUT, 5, False)
    ev, cols = evaluate_space(space, m, hw, base, asm)
    feasible, tps, gpu, _, _ = _brute(ev, cols, Objective.THROUGHPUT, 5, False)
    assert res.feasible == feasible > 5
    assert len(np.unique(cols["gb"][ev["feasible"] & ev["runs"]])) > 1
    np.testing.assert_allclose(res.top["tps"], tps, rtol=1e-12)
    np.testing.assert_allclose(res.top["gpu"], gpu, rtol=1e-12)
    # tokens/s = global batch x sequence / step time, per layout (step.tokens_per_s)
    np.testing.assert_allclose(res.top["tps"], res.top["gb"] * seq / res.top["step"],
                               rtol=1e-12)


def test_rules_are_checked_before_memory(cat):
    # 2 x DGX-A100, Llama-2-13B: every layout is counted once, by the first filter that drops
    # it: the frameworks' rules, then memory; the feasible ones are the rest
    m = cat.get("llama-2-13b", "model")
    hw = resolve_hardware(cat, "dgx-a100", 2)
    base, asm = Training(seq_len=4096, global_batch=64), Assumptions()
    space = enumerate_space(m, hw.gpus, hw.gpus_per_node, 64, 4096, offload_targets(hw))
    res = search(m, hw, base, asm, space, Objective.THROUGHPUT, 5, False)
    ev, _ = evaluate_space(space, m, hw, base, asm)
    assert res.infeasible_by_reason[passes.NOT_RUNNABLE] == int((~ev["runs"]).sum())
    assert sum(res.infeasible_by_reason.values()) + res.feasible == len(space)
    assert res.smallest_gpu_bytes == pytest.approx(ev["gpu_bytes"][ev["runs"]].min(),
                                                   rel=1e-12)


def test_gather_merges_sub_chunks_exactly_and_within_its_limit(cat):
    # the planner gathers the rules' small sub-chunks (same switch values) into chunks of at
    # most ``limit`` layouts: the merged chunk holds exactly the parts' layouts, masks stacked
    from optimus_calc.search.space import Gather
    m = cat.get("llama-3-70b", "model")
    hw = resolve_hardware(cat, "dgx-a100", 4)
    space = enumerate_space(m, hw.gpus, hw.gpus_per_node, 256, 4096, offload_targets(hw))
    chunks = list(space.chunks(7))
    per_chunk = 7 * space.switch_count
    gather = Gather(3 * per_chunk + 1)
    merged, fed = [], []
    for c in chunks:
        mask = np.zeros(c.shape, dtype=bool)
        mask.reshape(-1)[::5] = True
        fed.append((c, mask))
        merged += list(gather.add(c, mask))
    merged += list(gather.flush())
    assert len(merged) < len(chunks) and all(np.prod(c.shape) <= 3 * per_chunk + 1
                                             for c, _ in merged)
    rows = lambda cm: {k: v for k, v in cm[0].columns_at(np.flatnonzero(cm[1])).items()}  # noqa
    def table(parts):  # every layout as a row of its fields, in one order (the merged chunk
        cols = [rows(x) for x in parts]  # lists its parts' layouts switch-major)
        t = np.stack([np.concatenate([c[k] for c in cols]) for k in cols[0]], axis=1)
        return t[np.lexsort(t.T[::-1])]
    np.testing.assert_array_equal(table(fed), table(merged))
