"""The evaluator's memory order is a speed choice, never a change of numbers.

The planner's chunks put the grid axis last (``Chunk.views``) and large batches' per-stage
arrays are stored stage-major (``stages.STAGE_MAJOR_FROM``), so numpy's inner loops run along
the many layouts; ``by_strategy`` writes each strategy's run of the offload axis as a slice.
Every figure must equal, bit for bit, the evaluation of the same layouts with the grid axis
first and every array in C order, and of the same layouts as a flat batch of columns.
"""

import numpy as np
import pytest

from optimus_calc.evaluate import stages, strategies
from optimus_calc.evaluate.batch import Batch
from optimus_calc.evaluate.context import resolve_hardware
from optimus_calc.evaluate.engine import evaluate
from optimus_calc.evaluate.stages import by_strategy
from optimus_calc.search.space import Chunk, enumerate_space
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Training

# MoE with a SmartNIC (expert DP), long context (CP), a superchip (SuperOffload), NVMe and CPU
SPACES = [("qwen3-30b-a3b", "dgx-h100", 2, 32768, "bluefield-3"),
          ("llama-2-13b", "dgx-a100", 2, 4096, None),
          ("qwen3-14b", "gh200-nvl2", 2, 4096, None)]


def _figures(ev) -> dict:
    """Every array figure of an evaluation, by name."""
    fields = {k: getattr(ev, k) for k in ("gpu_bytes", "reasons", "step_time_s", "worst_time",
                                          "worst_memory", "micro_batches",
                                          "offload_bytes_per_gpu", "host_bytes_per_node",
                                          "spill_bytes_per_device", "total_stage",
                                          "params_stage", "activations_stage")}
    fields.update({f"term {k}": v for k, v in ev.stage_terms.items()})
    return {k: np.asarray(v) for k, v in fields.items()}


def _grid_first(chunk: Chunk) -> dict:
    """The chunk's columns with the grid axis first, (nb, 1, 1, 1, 1), switches after it."""
    return {k: np.moveaxis(v, -1, 0) for k, v in chunk.views().items()}


def _grid_last(ev) -> dict:
    """Every array figure of an evaluation over :func:`_grid_first` in the chunk's order."""
    out = {}
    for k, v in _figures(ev).items():
        if v.ndim == 6:  # per stage: the grid axis goes before the stages
            v = np.moveaxis(v, 0, -2)
        elif v.ndim:
            v = np.moveaxis(v, 0, -1)
        out[k] = v
    return out


@pytest.mark.parametrize("name,node,nodes,seq,card", SPACES)
def test_grid_last_equals_grid_first_and_flat(cat, monkeypatch, name, node, nodes, seq, card):
    m = cat.get(name, "model")
    hw = resolve_hardware(cat, node, nodes, smartnic=card)
    tr, asm = Training(seq_len=seq, global_batch=64), Assumptions()
    codes = [c for c, _ in strategies.coded()]
    space = enumerate_space(m, hw.gpus, hw.gpus_per_node, 64, seq,
                            [strategies.at(c).offload for c in codes])
    # the first grid points and the deepest pipelines (several stages per layout)
    rows = np.unique(np.r_[np.arange(20), np.argsort(space.base[:, 1], kind="stable")[-20:]])
    chunk = Chunk(space.base[rows], space.switches)
    monkeypatch.setattr(stages, "STAGE_MAJOR_FROM", 0)       # every per-stage array reordered
    fast = _figures(evaluate(Batch.from_columns(chunk.views()), m, hw, tr, asm))
    st = stages.stage_table(m, space.base[:, 1], False).lookup(chunk.views()["pp"])
    assert st.layers.shape[-1] > 1 and st.layers.strides[-1] > st.layers.strides[-2]
    monkeypatch.setattr(stages, "STAGE_MAJOR_FROM", 1 << 62)  # none: C order, grid first
    ref = evaluate(Batch.from_columns(_grid_first(chunk)), m, hw, tr, asm)
    for k, v in _grid_last(ref).items():
        a = np.broadcast_to(fast[k], np.broadcast_shapes(np.shape(fast[k]), np.shape(v)))
        np.testing.assert_array_equal(a, np.broadcast_to(v, a.shape), err_msg=k)
    # the same layouts as a flat batch (the planner's second pass; masked strategy merge)
    monkeypatch.setattr(stages, "STAGE_MAJOR_FROM", 0)
    n = int(chunk.keep.sum())
    flat = evaluate(Batch.from_columns(chunk.columns(np.arange(n))), m, hw, tr, asm)
    ref = _grid_last(ref)
    for k in ("step_time_s", "gpu_bytes", "reasons"):
        np.testing.assert_array_equal(getattr(flat, k),
                                      chunk.finish(ref[k]), err_msg=k)


def _reference(pairs, shape):
    out = np.zeros(shape)
    for mine, value in pairs:
        out = np.where(mine, value, out)
    return out


@pytest.mark.parametrize("seed", range(30))
def test_by_strategy_equals_the_masked_merge(seed):
    """Runs along one axis (sliced), scattered positions and masks over several axes (masked
    copy): the merge equals np.where over the strategies, and is stored stage-major."""
    rng = np.random.default_rng(seed)
    shape = (3, 4, 5, 2)
    codes = rng.integers(0, 3, size=4)
    kind = seed % 5
    if kind == 0:      # a run per strategy along axis 1 (sorted codes)
        off = np.sort(codes).reshape(1, 4, 1, 1)
    elif kind == 1:    # scattered along axis 1
        off = codes.reshape(1, 4, 1, 1)
    elif kind == 2:    # varying over two axes
        off = rng.integers(0, 3, size=(3, 4, 1, 1))
    elif kind == 3:    # one strategy for every layout
        off = np.full((1, 4, 1, 1), codes[0])
    else:              # a flat batch's long axis (a run, but scanned only on short axes)
        off = np.sort(rng.integers(0, 3, size=200)).reshape(1, 200, 1, 1)
        shape = (3, 200, 5, 2)
    pairs = [(off == c, rng.random(shape[2:]) * (c + 1)) for c in range(3)]
    got = by_strategy(pairs, shape)
    np.testing.assert_array_equal(got, _reference(pairs, np.broadcast_shapes(shape, off.shape)))
    if got.size > 512:  # the trailing (stage) axis outermost in memory (small: C order)
        assert got.strides[-1] > got.strides[-2]
