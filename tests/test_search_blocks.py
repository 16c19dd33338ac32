"""The planner's first pass over blocks of wanted layouts (search/pools.py): each rule pattern
cut into (ZeRO, offload) pairs with the same SP values, evaluated on one paired axis
(space.Chunk's ``paired``). The blocks cover the rule filter's wanted layouts exactly, each
once; a paired chunk evaluates each layout to the same bits as the full product chunk."""

import numpy as np
import pytest

from optimus_calc.evaluate import strategies
from optimus_calc.evaluate.batch import Batch
from optimus_calc.evaluate.context import resolve_hardware
from optimus_calc.evaluate.engine import evaluate
from optimus_calc.frameworks import Framework
from optimus_calc.search.pools import blocks, pattern_blocks, pattern_keys
from optimus_calc.search.inputs import offload_targets
from optimus_calc.search.space import Chunk, enumerate_space, grid_rules, profile_filter
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Offload, Training

SMART = strategies.code_of(Offload.SMARTNIC)


def _pattern(cells, shape=(4, 5, 2)):
    p = np.zeros(shape, dtype=bool)
    for z, o, s in cells:
        p[z, o, s] = True
    return p


def test_pattern_blocks_by_hand():
    # Megatron-LM on the worst known plan (offload axis none, cpu, cpu+weights, nvme,
    # nvme+weights): ZeRO-0 without offload, ZeRO-1 with none or cpu, both SP values each ->
    # one block of three pairs, offload-major: (0,0), (1,0), then (1,1)
    p = _pattern([(0, 0, 0), (0, 0, 1), (1, 0, 0), (1, 0, 1), (1, 1, 0), (1, 1, 1)])
    assert pattern_blocks(p) == [(((0, 0), (1, 0), (1, 1)), (0, 1))]
    # torchtitan: ZeRO-1 without offload, ZeRO-3 with cpu+weights, SP on only (index 1)
    p = _pattern([(1, 0, 1), (3, 2, 1)])
    assert pattern_blocks(p) == [(((1, 0), (3, 2)), (1,))]
    # pairs with different SP values are two blocks: ZeRO-0 both, ZeRO-2 only SP off
    p = _pattern([(0, 0, 0), (0, 0, 1), (2, 0, 0), (2, 3, 0)])
    assert pattern_blocks(p) == [(((0, 0),), (0, 1)), (((2, 0), (2, 3)), (0,))]
    assert pattern_blocks(np.zeros((4, 5, 2), dtype=bool)) == []


def test_pattern_keys_by_hand():
    cols = np.array([[1, 0, 1, 0], [0, 1, 1, 0], [1, 1, 1, 0]], dtype=bool)
    # column 0 holds rows 0 and 2: 1 + 4; column 1 rows 1, 2: 2 + 4; column 2 all: 7
    assert pattern_keys(cols).tolist() == [[5, 6, 7, 0]]
    tall = np.zeros((70, 2), dtype=bool)
    tall[9, 0] = tall[63, 0] = tall[65, 1] = True  # 2**9 + 2**63 in word 0; row 65: 2 in word 1
    assert pattern_keys(tall).tolist() == [[2**9 + 2**63, 0], [0, 2]]


def test_blocks_list_grid_points_by_pattern():
    # grid points 0 and 2 hold the Megatron-like pattern, 1 nothing, 3 the torchtitan-like one
    y = np.zeros((4, 5, 1, 2, 4), dtype=bool)
    for g in (0, 2):
        y[0, 0, 0, :, g] = y[1, 0, 0, :, g] = y[1, 1, 0, :, g] = True
    y[1, 0, 0, 1, 3] = y[3, 2, 0, 1, 3] = True
    out = blocks(y)
    assert [(b, r.tolist()) for b, r in out] == [
        ((((0, 0), (1, 0), (1, 1)), (0, 1)), [0, 2]), ((((1, 0), (3, 2)), (1,)), [3])]
    assert blocks(np.zeros((4, 5, 1, 2, 3), dtype=bool)) == []


def _cover(found, shape) -> np.ndarray:
    """How many blocks hold each layout of (zero, offload, 1, SP, grid)."""
    n = np.zeros(shape, dtype=np.int64)
    for (pairs, sps), rows in found:
        for z, o in pairs:
            for s in sps:
                n[z, o, 0, s, rows] += 1
    return n


@pytest.mark.parametrize("name,node,nodes,seq,gb,card", [
    ("qwen3-30b-a3b", "dgx-a100", 4, 32768, 4096, None),
    ("llama-3-8b", "dgx-h100", 2, 32768, 64, "bluefield-3")])
def test_blocks_cover_each_wanted_layout_once(cat, name, node, nodes, seq, gb, card):
    model = cat.get(name, "model")
    hw = resolve_hardware(cat, node, nodes, smartnic=card)
    space = enumerate_space(model, hw.gpus, hw.gpus_per_node, gb, seq, offload_targets(hw))
    rules = grid_rules(space, model, Training(seq_len=seq, global_batch=gb), tuple(Framework),
                       1 << 14)
    cut = 0
    for frameworks in [(Framework.MEGATRON,), (Framework.TORCHTITAN,),
                       (Framework.DEEPSPEED, Framework.MEGATRON_DEEPSPEED)]:
        run, smart, *_ = profile_filter(rules, space, frameworks, True, SMART, 1000)
        for y in (run, smart):
            if y is None:
                continue
            found = blocks(y)
            np.testing.assert_array_equal(_cover(found, y.shape), y.astype(np.int64))
            for _, rows in found:
                assert (np.diff(rows) > 0).all()
            # what the bounding box of each grid point's pattern would have evaluated
            z, o, _, s, _ = y.shape
            box = (y.any(axis=(1, 3)).sum(axis=(0, 1)) * y.any(axis=(0, 3)).sum(axis=(0, 1))
                   * y.any(axis=(0, 1)).sum(axis=(0, 1)))
            cut += int(box.sum() - y.sum())
    assert cut > 0  # the rules' patterns are no products: the blocks evaluate less


def test_paired_chunk_evaluates_as_the_product(cat):
    m = cat.get("qwen3-30b-a3b", "model")
    hw = resolve_hardware(cat, "dgx-h100", 2, smartnic="bluefield-3")
    tr, asm = Training(seq_len=32768, global_batch=64), Assumptions()
    space = enumerate_space(m, hw.gpus, hw.gpus_per_node, 64, 32768, offload_targets(hw))
    rows = np.r_[0:12, len(space.base) - 12:len(space.base)]
    full = Chunk(space.base[rows], space.switches)
    zero, off, rec, sp = space.switches
    pairs = [(0, 0), (3, 0), (1, 1), (3, len(off) - 1)]  # offload-major, ZeRO varying
    zi, oi = (np.array(i) for i in zip(*pairs))
    paired = Chunk(space.base[rows], (zero[zi], off[oi], rec, sp[[1]]), paired=True)
    assert paired.shape == (4, 1, len(rec), 1, len(rows))
    ev_full = evaluate(Batch.from_columns(full.views()), m, hw, tr, asm)
    ev_pair = evaluate(Batch.from_columns(paired.views()), m, hw, tr, asm)
    for k in ("gpu_bytes", "reasons", "step_time_s"):
        a = np.broadcast_to(getattr(ev_full, k), full.shape)
        want = a[zi, oi][:, :, 1]  # (pair, recompute, grid) with SP on
        got = np.broadcast_to(getattr(ev_pair, k), paired.shape)[:, 0, :, 0]
        np.testing.assert_array_equal(got, want, err_msg=k)
    # a paired chunk's columns name each layout's own pair
    cols = paired.columns_at(np.arange(np.prod(paired.shape)))
    n = len(rec) * len(rows)
    assert cols["zero"].tolist() == [0] * n + [3] * n + [1] * n + [3] * n
    assert (cols["offload"][:2 * n] == strategies.code_of(Offload.NONE)).all()
    assert (cols["sp"] == 1).all() and (cols["tp"][:len(rows)] == space.base[rows, 0]).all()


@pytest.mark.parametrize("stage_major", [False, True])
def test_bound_on_some_grid_points_equals_the_whole_chunks(cat, monkeypatch, stage_major):
    """The planner's step bound computed on the grid points still needing it (records.at_grid,
    passes._bound_at) equals, bit for bit, the bound over the whole chunk at those points."""
    from optimus_calc.evaluate import stages
    from optimus_calc.evaluate.engine import compute_bound_s, evaluate_window
    from optimus_calc.search.passes import _bound_at

    if stage_major:
        monkeypatch.setattr(stages, "STAGE_MAJOR_FROM", 0)  # every per-stage array stage-major
    m = cat.get("qwen3-30b-a3b", "model")
    hw = resolve_hardware(cat, "dgx-h100", 2)
    tr = Training(seq_len=32768, global_batch=64)
    asm = Assumptions(moe_layer_host_s=0.0061, layer_fixed_s=1e-4)  # T_fix in the bound
    space = enumerate_space(m, hw.gpus, hw.gpus_per_node, 64, 32768, offload_targets(hw))
    rows = np.argsort(space.base[:, 1], kind="stable")[-30:]  # the deepest pipelines
    zero, off, rec, sp = space.switches
    chunk = Chunk(space.base[rows], (zero[[1, 3]], off[[0, 0]], rec, sp), paired=True)
    table = stages.stage_table(m, space.base[:, 1], False, space.base[:, 6])
    _, bound = evaluate_window(Batch.from_columns(chunk.views()), m, hw, tr, asm,
                               compute_bound_s, stages=table, lazy=True)
    full = np.broadcast_to(bound(), chunk.shape)
    assert table.index.shape[1] > 1 and np.unique(full).size > 20
    some = np.array([0, 3, 4, 17, 29])
    np.testing.assert_array_equal(np.broadcast_to(bound(some), chunk.shape[:-1] + (5,)),
                                  full[..., some])
    # at flat positions: on a few grid points (cut) and on most of them (the whole chunk)
    grid = np.arange(np.prod(chunk.shape)).reshape(chunk.shape)
    for points in (some, np.arange(27)):
        flat = np.sort(grid[..., points].reshape(-1))[::3]
        np.testing.assert_array_equal(_bound_at(chunk, flat, bound), full.reshape(-1)[flat])
