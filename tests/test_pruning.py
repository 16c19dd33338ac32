"""Exact pruning, checked: the planner's evaluation (only the pipeline stages that can bind,
evaluate/stages.py) gives the same numbers as the evaluation of every stage, and the planner's
pairwise stage maxima the same as numpy's reductions.

10,000 random layouts drawn from the planner's own spaces (MoE, context parallelism, interleaved
pipelines, every offload strategy with its switches), in one batch per space: the pruned and
the full evaluation must agree exactly (same operations on the same numbers), layout by layout,
and the planner's lower bound on the step time (compute, EP all-to-alls, fixed host time) must
hold for every one of them.
"""

import numpy as np
import pytest

from optimus_calc.evaluate import strategies
from optimus_calc.evaluate.batch import Batch
from optimus_calc.evaluate.context import resolve_hardware
from optimus_calc.evaluate.engine import compute_bound_s, evaluate, evaluate_window
from optimus_calc.evaluate.evaluation import _pick
from optimus_calc.evaluate.stages import stage_argmax, stage_max
from optimus_calc.evaluate.step import TERMS
from optimus_calc.search.space import enumerate_space
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Training

# (model, node, nodes, sequence length, SmartNIC card): MoE (gpt-oss-120b, qwen3-30b-a3b),
# context parallelism (>= 32K tokens), interleaved PP (every space searches v up to 8), a
# superchip node (SuperOffload) and a SmartNIC card on the others (OptimusNIC)
SPACES = [("gpt-oss-120b", "dgx-h100", 8, 65536, "bluefield-3"),
          ("llama-3-70b", "dgx-a100", 4, 4096, "bluefield-3"),
          ("qwen3-30b-a3b", "dgx-h100", 2, 32768, "bluefield-3"),
          ("qwen3-14b", "gh200-nvl2", 4, 4096, None)]
PER_SPACE = 2_500


def _random_batch(cat, model, hw, seq, rng):
    codes = [c for c, _ in strategies.coded()]
    space = enumerate_space(model, hw.gpus, hw.gpus_per_node, None, seq,
                            [strategies.at(c).offload for c in codes])
    chunk = space.whole()
    n_kept = int(chunk.keep.sum())
    cols = chunk.columns(rng.integers(0, n_kept, PER_SPACE))
    # every strategy and its switches, whatever the node offers (infeasible ones must agree too)
    cols["offload"] = rng.choice(codes, PER_SPACE)
    cols.update(offload_params=rng.integers(0, 2, PER_SPACE),
                gpu_fraction=rng.choice([0.0, 0.3, 1.0], PER_SPACE),
                allow_spill=rng.integers(0, 2, PER_SPACE),
                smartnics_per_node=rng.choice([0, 2, 8], PER_SPACE))
    return cols


@pytest.mark.parametrize("name,node,nodes,seq,card", SPACES)
def test_pruned_stages_equal_every_stage(cat, name, node, nodes, seq, card):
    rng = np.random.default_rng(22)
    model = cat.get(name, "model")
    hw = resolve_hardware(cat, node, nodes, smartnic=card)
    tr, asm = Training(seq_len=seq), Assumptions()
    cols = _random_batch(cat, model, hw, seq, rng)
    assert len(np.unique(cols["offload"])) == len(strategies.coded())
    assert (cols["v"] > 1).any() and (cols["pp"] > 1).any()
    if model.is_moe:
        assert (cols["ep"] > 1).any()
    if seq >= 32768:
        assert (cols["cp"] > 1).any()
    batch = Batch.from_columns(cols)
    pruned = evaluate(batch, model, hw, tr, asm, all_stages=False)
    full = evaluate(batch, model, hw, tr, asm, all_stages=True)
    # the pruning drops stages: fewer evaluated, never more
    assert pruned.stage_index.shape[-1] < full.stage_index.shape[-1]
    for field in ("gpu_bytes", "reasons", "offload_bytes_per_gpu", "offload_bytes_per_device",
                  "spill_bytes_per_device", "host_bytes_per_node", "offload_devices_per_node",
                  "offload_capacity_per_device", "micro_batches"):
        a, b = getattr(pruned, field), getattr(full, field)
        np.testing.assert_array_equal(np.broadcast_to(a, np.shape(b)), b, err_msg=field)
    # the binding stages are the same stages of the model
    for which in ("worst_memory", "worst_time"):
        np.testing.assert_array_equal(_pick(pruned.stage_index, getattr(pruned, which)),
                                      _pick(full.stage_index, getattr(full, which)))
    for term in TERMS:
        np.testing.assert_array_equal(pruned.term(term), full.term(term), err_msg=term)
    # the lower bound (compute, EP and fixed host time) the planner skips second-pass layouts with
    # (engine.compute_bound_s) never exceeds the step time, and is no trivial bound
    _, bound = evaluate_window(batch, model, hw, tr, asm, compute_bound_s)
    step = np.asarray(pruned.step_time_s)
    assert (bound <= step).all() and (bound > 0).all()
    assert np.median(bound / step) > 0.3
    # the layouts cover feasible and infeasible ones, with and without an offload step
    assert 0 < int((full.reasons == 0).sum()) < PER_SPACE
    assert (full.term("optimizer_exposed_s") > 0).any()


def test_stage_max_is_numpy_max():
    rng = np.random.default_rng(1)
    for shape in [(7, 1), (5, 3), (4, 2, 3, 4), (1000, 5)]:
        x = rng.random(shape)
        x[..., -1] = x[..., 0]  # ties
        np.testing.assert_array_equal(stage_max(x), x.max(axis=-1))
    x = np.array([[1.0, np.nan, 2.0], [np.inf, 0.0, -1.0]])
    np.testing.assert_array_equal(stage_max(x), x.max(axis=-1))
    assert stage_max(np.float64(3.0)) == 3.0


def test_stage_argmax_is_numpy_argmax():
    """The first largest stage, ties and NaN (numpy: the first NaN) as np.argmax gives them."""
    rng = np.random.default_rng(2)
    for shape in [(7, 1), (5, 3), (4, 2, 3, 4), (1000, 5), (40, 30, 4), (3000, 3)]:
        x = rng.integers(0, 3, shape).astype(float)  # many ties
        x[rng.random(shape) < 0.1] = np.nan
        x[rng.random(shape) < 0.1] = np.inf
        np.testing.assert_array_equal(stage_argmax(x), np.argmax(x, axis=-1))
        finite = np.nan_to_num(x)  # no NaN: the pairwise path for the large ones
        np.testing.assert_array_equal(stage_argmax(finite), np.argmax(finite, axis=-1))
        fortran = np.asfortranarray(finite)
        np.testing.assert_array_equal(stage_argmax(fortran), np.argmax(finite, axis=-1))
    x = np.array([[1.0, np.nan, 2.0, np.nan], [np.inf, 0.0, np.inf, -1.0], [0.0, 0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(stage_argmax(x), [1, 0, 0])


@pytest.mark.parametrize("name,node,nodes,lay", [
    ("llama-3-70b", "dgx-a100", 4, dict(tp=4, pp=8, dp=1, zero=1, interleave=2)),
    ("llama-3-70b", "dgx-a100", 4, dict(tp=8, pp=4, dp=1, zero=1)),
    ("gpt-oss-120b", "dgx-h100", 8, dict(tp=2, pp=6, dp=4, ep=4, cp=2, zero=3)),
    ("qwen3-30b-a3b", "dgx-h100", 2, dict(tp=1, pp=3, dp=2, cp=2, ep=2, zero=2))])
def test_nic_sizing_pruned_equals_every_stage(cat, monkeypatch, name, node, nodes, lay):
    """size_nics evaluates the stages that can bind: its answer is the one of every stage
    (a dropped stage repeats a kept stage's shard, layers and window)."""
    from optimus_calc.analyses import nics
    from optimus_calc.specs.training import Layout

    model = cat.get(name, "model")
    hw = resolve_hardware(cat, node, nodes)
    layout, tr = Layout(**lay), Training(seq_len=32768 if lay.get("cp", 1) > 1 else 4096)
    pruned = nics.size_nics(cat, model, hw, layout, tr, Assumptions())
    calls = []
    every = nics.evaluate_window

    def all_stages(*a, **kw):
        calls.append(1)
        return every(*a, **dict(kw, all_stages=True))

    monkeypatch.setattr(nics, "evaluate_window", all_stages)
    full = nics.size_nics(cat, model, hw, layout, tr, Assumptions())
    assert calls and len(full) == len(pruned) >= 2
    assert pruned == full
    # the window NIC sizing reads is the one the whole evaluation gives a SmartNIC layout
    card = cat.get("bluefield-3", "smartnic")
    hw_sn = nics._with_card(hw, cat, card)
    lay_sn = layout.model_copy(update={"offload": "smartnic", "smartnic": card.name})
    ev = evaluate(Batch.of(lay_sn, tr), model, hw_sn, tr, Assumptions(), all_stages=True)
    _, win = every(Batch.of(lay_sn, tr), model, hw_sn, tr, Assumptions(), nics.SMARTNIC.window_of,
                   all_stages=True, comm=True)
    np.testing.assert_array_equal(np.broadcast_to(win, ev.stage_terms["optimizer_window_s"].shape),
                                  ev.stage_terms["optimizer_window_s"])
    assert (win > 0).all()
    assert any(s.nics_per_gpu_for_compute is not None for s in full)


@pytest.mark.parametrize("name,node,nodes,seq", [("llama-3-70b", "dgx-a100", 2, 4096),
                                                 ("gpt-oss-120b", "dgx-h100", 4, 32768)])
def test_top_k_reports_batched_equal_one_by_one(cat, name, node, nodes, seq):
    """The planner's top K reports come from one evaluation of layouts with different pipeline
    degrees (the shorter pipelines padded, then cut to their own stages): each equals the
    report of its layout evaluated alone (memory per stage, step terms, frameworks)."""
    import dataclasses

    from optimus_calc.search import plan as P

    model, hw = cat.get(name, "model"), resolve_hardware(cat, node, nodes)
    tr, asm = Training(seq_len=seq), Assumptions()
    res = P.plan(model, hw, tr, asm, top_k=8, distinct=True)
    assert len({c.layout.pp for c in res.top}) >= 2   # padded stages in the batch
    for i, c in enumerate(res.top):
        one = P._candidate(_cols(c), 0, model, hw, tr, asm)
        assert one.layout == c.layout and one.training == c.training
        assert one.step == c.step and one.frameworks == c.frameworks
        assert (dataclasses.replace(one.memory, evaluation=None)
                == dataclasses.replace(c.memory, evaluation=None))
        assert (one.gpu_bytes, one.step_s, one.mfu) == (c.gpu_bytes, c.step_s, c.mfu)


def _cols(c) -> dict:
    """The search's columns of candidate ``c`` (search.plan.layout_of/training_of's inverse)."""
    from optimus_calc.specs.training import RECOMPUTE_CODES, offload_code

    lay, tr = c.layout, c.training
    return {k: np.array([v]) for k, v in dict(
        tp=lay.tp, pp=lay.pp, dp=lay.dp, cp=lay.cp, ep=lay.ep, zero=int(lay.zero),
        offload=offload_code(lay.offload), offload_params=int(lay.offload_params),
        v=lay.interleave, mb=tr.micro_batch,
        gb=tr.global_batch, recompute=RECOMPUTE_CODES.index(tr.recompute),
        sp=int(tr.sequence_parallel)).items()}


def test_bound_adds_the_fixed_host_time(cat):
    """The planner's bound is T_b + T_bubble + T_ep + T_f + T_fix of the most loaded stage,
    summed as step.time sums them: equal, bit for bit, to that sum of the full evaluation's
    terms, no larger than the step, above the compute and EP sum by the fixed time when it is
    set, and (an MoE model's all-to-alls) above the sum without T_ep. A dense model's bound
    (no T_ep computed) is that sum without T_ep, bit for bit."""
    rng = np.random.default_rng(5)
    model = cat.get("qwen3-30b-a3b", "model")
    hw = resolve_hardware(cat, "dgx-h100", 2)
    # Megatron-LM's per-MoE-layer host sync (frameworks/megatron.py) and a per-layer launch
    # cost: T_fix = L_moe m 6.1 ms (r_h + 1) + L_stage m 0.1 ms + 20 ms
    tr = Training(seq_len=32768)
    asm = Assumptions(moe_layer_host_s=0.0061, layer_fixed_s=1e-4, step_fixed_s=0.02)
    batch = Batch.from_columns(_random_batch(cat, model, hw, 32768, rng))
    ev = evaluate(batch, model, hw, tr, asm)
    _, bound = evaluate_window(batch, model, hw, tr, asm, compute_bound_s)
    t = ev.stage_terms
    compute = t["backward_s"] + t["bubble_s"] + t["ep_comm_s"] + t["forward_s"]
    np.testing.assert_array_equal(bound, stage_max(compute + t["fixed_s"]))
    step = np.asarray(ev.step_time_s)
    assert (bound <= step).all()
    # every stage holds MoE layers: at least 20 ms + 6.1 ms per micro-batch above compute
    assert (bound - stage_max(compute) >= 0.02 + 0.0061 * ev.micro_batches - 1e-9).all()
    no_ep = t["backward_s"] + t["bubble_s"] + t["forward_s"] + t["fixed_s"]
    assert (bound > stage_max(no_ep)).mean() > 0.5
    dense = cat.get("llama-3-8b", "model")
    batch = Batch.from_columns(_random_batch(cat, dense, hw, 8192, rng))
    ev = evaluate(batch, dense, hw, Training(seq_len=8192), asm)
    _, bound = evaluate_window(batch, dense, hw, Training(seq_len=8192), asm, compute_bound_s)
    t = ev.stage_terms
    assert not t["ep_comm_s"].any()
    np.testing.assert_array_equal(bound, stage_max(
        t["backward_s"] + t["bubble_s"] + t["forward_s"] + t["fixed_s"]))
    assert (bound <= np.asarray(ev.step_time_s)).all()
