"""Interleaved pipelines count each rank's MoE layers over the chunks it holds: virtual stage
j runs on rank j mod PP (Megatron-LM core/transformer/transformer_layer.py L200-202 @ d98e8a6:
chunk v of rank p starts at layer v L / V + p L / (PP V); torchtitan's "loop" style,
distributed/pipeline_parallel.py L451-461 @ v0.2.2), not over a contiguous split."""

from __future__ import annotations

import pytest

from optimus_calc.evaluate.shapes import rank_layer_ranges, stage_shapes
from optimus_calc.evaluate.stages import stage_table


def test_leading_dense_layers_follow_the_chunks(cat):
    # DeepSeek-V3: 61 layers, the first 3 dense. PP 8: 7, 7, 7, 8, 8, 8, 8, 8 layers per rank
    # (split_layers: the extra on the last). Contiguous, rank 0 holds layers 0-6: 3 dense, 4
    # MoE. Interleaved 4 chunks: rank 0's 7 layers as 1 + 2 + 2 + 2, the others' as
    # 2 + 2 + 2 + 2, so virtual stages 0, 1, 2 hold one layer each (layers 0, 1, 2) and each
    # of ranks 0, 1, 2 holds one dense layer: 6 MoE layers each
    m = cat.get("deepseek-v3", "model")
    assert [s.moe_layers for s in stage_shapes(m, 8)] == [4, 7, 7, 8, 8, 8, 8, 8]
    inter = stage_shapes(m, 8, 4)
    assert [s.moe_layers for s in inter] == [6, 6, 6, 8, 8, 8, 8, 8]
    assert [s.layers for s in inter] == [7, 7, 7, 8, 8, 8, 8, 8]
    # virtual stage 8 (rank 0's second chunk) starts after 3 x 1 + 5 x 2 = 13 layers
    assert rank_layer_ranges(61, 8, 4)[0] == [(0, 1), (13, 15), (29, 31), (45, 47)]


def test_moe_every_second_layer_over_odd_chunks(cat):
    # 48 layers, an MoE layer every second one (layers 1, 3, 5, ...), PP 4 x 4 chunks of 3:
    # chunk j holds layers 3j..3j+2, one odd layer when j is even, two when j is odd; rank p
    # holds chunks p, p + 4, p + 8, p + 12, all of p's parity: 4 or 8 MoE layers. Contiguous,
    # each rank's 12 layers hold 6
    m = cat.get("qwen3-30b-a3b", "model").model_copy(update={"moe_layer_freq": 2})
    assert m.moe_layers == 24
    assert [s.moe_layers for s in stage_shapes(m, 4)] == [6, 6, 6, 6]
    assert [s.moe_layers for s in stage_shapes(m, 4, 4)] == [4, 8, 4, 8]


def test_interleaved_stage_memory_holds_the_moved_layers(run):
    # rank 0 trades 2 dense layers for MoE layers, rank 1 one. At EP 32 a rank holds 8 of 256
    # experts: 8 x 44,040,192 + the shared expert 44,040,192 + the router 1,835,264 (256 x 7168
    # and its 256 bias) against the dense MLP's 396,361,728: + 1,835,264 parameters per layer
    args = ("memory", "deepseek-v3", "--node", "dgx-h100", "--nodes", "32", "--pp", "8",
            "--ep", "32", "--zero", "1", "--framework", "torchtitan", "--global-batch", "256",
            "--seq-len", "4096", "--format", "json")
    flat = [s["params"] for s in run(*args).json()["stages"]]
    inter = [s["params"] for s in run(*args, "--interleave", "4").json()["stages"]]
    assert inter[0] - flat[0] == pytest.approx(2 * 1_835_264, abs=0.5)
    assert inter[1] - flat[1] == pytest.approx(-1_835_264, abs=0.5)
    assert inter[3:] == flat[3:]


def test_interleave_keys_the_table_only_where_it_matters(cat):
    dense = stage_table(cat.get("llama-3-8b", "model"), [4, 4], False, [1, 2])
    assert not dense.by_v and len(dense.pps) == 1
    moe = stage_table(cat.get("deepseek-v3", "model"), [8, 8], False, [1, 4])
    assert moe.by_v and len(moe.pps) == 2
    st = moe.lookup([8, 8], [1, 4])
    assert st.moe_layers[0, 0] == 4 and st.moe_layers[1, 0] == 6  # rank 0: contiguous 4, 6


def test_search_over_interleaved_mixed_moe_equals_brute_force(cat, monkeypatch):
    # the planner's stage table keyed by (PP, interleave) (search/passes.py) against every
    # layout of the space evaluated whole: Qwen3-30B-A3B with 3 leading dense layers (48
    # layers, 45 MoE) on 2 x DGX H100, where PP 2, 4, 8 x 2-8 chunks divide the layers. Rank 0
    # of PP 4 holds layers 0-11, 3 dense, contiguous; with 2 chunks of 6 layers it holds
    # layers 0-5 and 24-29, still 3 dense; with 4 chunks of 3, layers 0-2 (all dense), 12-14,
    # 24-26, 36-38: 9 MoE layers either way. PP 8 x 2 chunks of 3: rank 0 holds 0-2 and 24-26,
    # 3 MoE layers, where contiguous layers 0-5 hold 3 too; PP 8 x 3 chunks of 2: 0-1, 16-17,
    # 32-33, 4 MoE layers against 3 contiguous
    import numpy as np
    from optimus_calc.evaluate.context import resolve_hardware
    from optimus_calc.frameworks import Framework
    from optimus_calc.search import passes
    from optimus_calc.search.inputs import offload_targets
    from optimus_calc.search.passes import Objective, search
    from optimus_calc.search.space import enumerate_space
    from optimus_calc.specs.assumptions import Assumptions
    from optimus_calc.specs.training import Training
    from tests_support import evaluate_space
    monkeypatch.setattr(passes, "PROBE", 3)
    monkeypatch.setattr(passes, "CHUNK_ELEMENTS", 1 << 13)
    monkeypatch.setattr(passes, "SECOND_PASS_BATCH", 7)
    m = cat.get("qwen3-30b-a3b", "model").model_copy(update={"first_dense_layers": 3})
    assert (m.layers, m.moe_layers) == (48, 45)
    assert [s.moe_layers for s in stage_shapes(m, 8)] == [3, 6, 6, 6, 6, 6, 6, 6]
    assert [s.moe_layers for s in stage_shapes(m, 8, 3)] == [4, 5, 6, 6, 6, 6, 6, 6]
    hw = resolve_hardware(cat, "dgx-h100", 2)
    base, asm = Training(seq_len=4096, global_batch=64), Assumptions()
    space = enumerate_space(m, hw.gpus, hw.gpus_per_node, 64, 4096, offload_targets(hw))
    fw = tuple(Framework)
    res = search(m, hw, base, asm, space, Objective.THROUGHPUT, 5, False, fw, what_if=False)
    ev, cols = evaluate_space(space, m, hw, base, asm, fw)
    ok = ev["feasible"] & ev["runs"]
    assert (ok & (cols["v"] == 3) & (cols["pp"] == 8)).any()
    assert res.feasible == int(ok.sum())
    tps, gpu = ev["tokens_per_s"], ev["gpu_bytes"]
    idx = np.flatnonzero(ok)
    top = idx[np.lexsort((gpu[idx], -tps[idx]))][:5]
    np.testing.assert_allclose(res.top["tps"], tps[top], rtol=1e-12)
    np.testing.assert_allclose(res.top["gpu"], gpu[top], rtol=1e-12)
