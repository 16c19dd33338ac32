"""The small-batch speed tactics give the numbers of the plain path, bit for bit.

A batch of a few layouts (`compare`, `step`, the planner's top K) pays numpy's per-call cost
many times over. These tactics cut it, each taken only when no `explain` records the calls:
NCCL's three protocols computed along one array axis (``nccl._ring_times_at_once``), and a
ring's collectives too (``nccl.ring_time_many``, ``work._rings``), a ring of one rank left at
0 s and only the ring a uniform ZeRO stage picks (``work._ring``, ``work._either``), and small
batches' ring times kept by their inputs (``work._RINGS``).
A recorded evaluation takes none of them, so it is the reference here.
"""

import numpy as np
import pytest

from optimus_calc.equations.recording import Recorder, recording
from optimus_calc.evaluate import nccl, work
from optimus_calc.evaluate.batch import Batch
from optimus_calc.evaluate.context import resolve_hardware
from optimus_calc.evaluate.engine import evaluate
from optimus_calc.frameworks import layout_support
from optimus_calc.frameworks import registry
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Layout, Offload, Training


@pytest.mark.parametrize("seed", range(12))
def test_protocols_at_once_equal_one_by_one(seed):
    rng = np.random.default_rng(seed)
    n = rng.integers(1, 65, size=(4, 1, 1))
    nodes = np.maximum(1, n // rng.integers(1, 9, size=(1, 3, 1)))
    z = rng.random((1, 1, 5)) * 10.0 ** rng.integers(2, 10)
    beta = 1 / (rng.random((4, 3, 1)) * 4e11 + 1e9)
    kw = dict(link_class=("nvlink", "pci")[seed % 2], net_overhead_s=rng.random() * 5e-6)
    if seed % 3 == 0:  # an overriding alpha per layout scales the tables' rows
        kw.update(alpha_i=rng.random((4, 1, 1)) * 1e-5, alpha_e=rng.random((1, 3, 1)) * 2e-5)
    coll = ("all-reduce", "reduce-scatter", "all-gather", "broadcast")[seed % 4]
    fast = nccl.ring_times(coll, n, nodes, z, beta, **kw)
    with recording(Recorder()):
        ref = nccl.ring_times(coll, n, nodes, z, beta, **kw)
    assert len(fast) == len(ref) == 3
    for a, b in zip(fast, ref):
        assert np.shape(a) == np.shape(b)
        np.testing.assert_array_equal(a, b)


def _figures(ev) -> dict:
    out = {k: np.asarray(getattr(ev, k)) for k in (
        "gpu_bytes", "reasons", "step_time_s", "worst_time", "worst_memory", "total_stage",
        "offload_bytes_per_gpu", "spill_bytes_per_device")}
    out.update({f"term {k}": np.asarray(v) for k, v in ev.stage_terms.items()})
    return out


# (model, node, nodes, [(tp, pp, dp, cp, ep, zero, offload)], global batch): a dense model with
# one rank per CP and DP group, mixed and uniform ZeRO stages, long context (CP 2), MoE (EP)
CASES = [
    ("llama70b", "dgx-a100", 2, [(8, 1, 2, 1, 1, 3, o) for o in
                                 ("none", "cpu", "nvme", "smartnic")], 64),
    ("llama70b", "dgx-a100", 2, [(8, 2, 1, 1, 1, z, "none") for z in (0, 1, 3)], 16),
    ("llama-2-13b", "dgx-h100", 1, [(2, 2, 1, 2, 1, 0, "none"), (4, 1, 2, 1, 1, 0, "cpu")], 32),
    ("qwen3-30b-a3b", "dgx-h100", 2, [(2, 1, 8, 1, 4, 3, "none"),
                                      (4, 2, 2, 1, 2, 1, "none")], 64),
]


@pytest.mark.parametrize("name,node,nodes,rows,gb", CASES)
def test_small_batch_equals_the_recorded_evaluation(cat, name, node, nodes, rows, gb):
    model = cat.get(name, "model")
    hw = resolve_hardware(cat, node, nodes, smartnic="bluefield-3")
    tr, asm = Training(seq_len=4096, global_batch=gb, micro_batch=1), Assumptions()
    lays = [Layout(tp=t, pp=p, dp=d, cp=c, ep=e, zero=z, offload=Offload(o))
            for t, p, d, c, e, z, o in rows]
    batches = [Batch.of_many(lays, [tr] * len(lays))] + [Batch.of(lay, tr) for lay in lays]
    for batch in batches:
        ref = _figures(evaluate(batch, model, hw, tr, asm, all_stages=True, record=True))
        for _ in range(2):  # the second time from the ring times kept by their inputs
            got = _figures(evaluate(batch, model, hw, tr, asm, all_stages=True))
            assert got.keys() == ref.keys()
            for k, v in ref.items():
                assert got[k].shape == v.shape, k
                np.testing.assert_array_equal(got[k], v, err_msg=k)
    assert work._RINGS and not any(t.flags.writeable for t in work._RINGS.values())


@pytest.mark.parametrize("seed", range(6))
def test_collectives_at_once_equal_one_by_one(seed):
    # a ring's collectives along one axis (nccl.ring_time_many) against ring_time per
    # collective as `explain` records it
    rng = np.random.default_rng(seed)
    n = rng.integers(1, 65, size=(40, 1))
    nodes = np.maximum(1, n // rng.integers(1, 9, size=(1, 3)))
    z = rng.random((40, 3)) * 10.0 ** rng.integers(2, 10)
    beta = 1 / (rng.random((40, 1)) * 4e11 + 1e9)
    kw = dict(link_class=("nvlink", "pci")[seed % 2], net_overhead_s=rng.random() * 5e-6)
    colls = [("all-gather", "all-reduce", "reduce-scatter"), ("all-gather", "reduce-scatter"),
             ("broadcast", "all-reduce")][seed % 3]
    fast = nccl.ring_time_many(colls, n, nodes, z, beta, **kw)
    with recording(Recorder()):
        ref = [nccl.ring_time(c, n, nodes, z, beta, **kw) for c in colls]
    assert len(fast) == len(ref) == len(colls)
    for a, b in zip(fast, ref):
        assert np.shape(a) == np.shape(b)
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("node", ["dgx-a100", "dgx-h100"])  # H100: NVLS all-reduce in TP 8
def test_flat_mixed_batch_equals_the_recorded_evaluation(cat, monkeypatch, node):
    """A flat batch above the ring cache's size (192 layouts: twice 4 offload strategies,
    ZeRO 1-3, TP 1-8, PP 1-2; the top-K report's kind) computes each ring's collectives
    together; the numbers are the recorded evaluation's."""
    model = cat.get("llama70b", "model")
    hw = resolve_hardware(cat, node, 2, smartnic="bluefield-3")
    tr, asm = Training(seq_len=4096, global_batch=64, micro_batch=1), Assumptions()
    lays = [Layout(tp=t, pp=p, dp=16 // (t * p), zero=z, offload=Offload(o))
            for o in ("none", "cpu", "nvme", "smartnic") for z in (1, 2, 3) for t in (8, 4, 2, 1)
            for p in (1, 2)] * 2  # above topology._RINGS_SMALL (128)
    batch = Batch.of_many(lays, [tr] * len(lays))
    together = []
    many = nccl.ring_time_many
    monkeypatch.setattr(nccl, "ring_time_many", lambda colls, *a, **k: (
        together.append(colls), many(colls, *a, **k))[1])
    ref = _figures(evaluate(batch, model, hw, tr, asm, all_stages=True, record=True))
    assert not together  # a recorded evaluation computes each collective on its own
    got = _figures(evaluate(batch, model, hw, tr, asm, all_stages=True))
    assert ("all-gather", "all-reduce", "reduce-scatter") in together
    for k, v in ref.items():
        assert got[k].shape == v.shape, k
        np.testing.assert_array_equal(got[k], v, err_msg=k)


def test_layout_support_is_asked_once_per_layout(cat, monkeypatch):
    """``compare`` asks twice for each strategy's layout: the second answer is the first's,
    and a change of the registry or of the model asks the rules again."""
    model, other = cat.get("llama70b", "model"), cat.get("llama-2-13b", "model")
    lay, tr = Layout(tp=8, dp=2, zero=3, offload=Offload.CPU), Training(seq_len=4096)
    calls = []  # the model each answer's rules were read on (registry.first_rule: once per
    #             registered framework and layout)
    real = registry.first_rule
    monkeypatch.setattr(registry, "first_rule", lambda rules, x: calls.append(x.model) or
                        real(rules, x))
    n = len(registry.plugins())
    first = layout_support(lay, tr, model)
    again = layout_support(lay, tr, model)
    assert again == first and again is not first and calls == [model] * n
    layout_support(lay, tr, other)
    assert calls == [model] * n + [other] * n
    registry._ONE.clear()
    assert (layout_support(lay, tr, model) == first
            and calls == [model] * n + [other] * n + [model] * n)


def test_a_single_layouts_terms_are_the_batch_terms(cat):
    """``first_term`` (estimate_step's reading of a batch of one) equals ``Evaluation.term``'s
    first value for every reported term, on a stage that binds past the first (PP 4)."""
    from optimus_calc.evaluate.evaluation import first_term
    from optimus_calc.evaluate.step import TERMS
    model = cat.get("llama70b", "model")
    hw = resolve_hardware(cat, "dgx-a100", 2)
    tr = Training(seq_len=4096, global_batch=64, micro_batch=1)
    binding = []
    for lay in (Layout(tp=4, pp=4, dp=1, zero=1, offload=Offload.CPU),
                Layout(tp=8, pp=1, dp=2, zero=3)):
        ev = evaluate(Batch.of(lay, tr), model, hw, tr, Assumptions(), all_stages=True)
        for k in TERMS:
            assert first_term(ev, k) == float(np.asarray(ev.term(k)).reshape(-1)[0]), k
        binding.append(int(np.asarray(ev.worst_time).reshape(-1)[0]))
    assert binding == [3, 0]  # the last of 4 stages (it holds the logits), the only one


def test_equations_kept_between_recordings_are_still_recorded(cat):
    """An evaluation outside a recording keeps the equations it looked up on the stand-in
    (``recording._OPEN``); a recording opened after it still sees every call."""
    from optimus_calc.equations import recording as R
    model, hw = cat.get("llama70b", "model"), resolve_hardware(cat, "dgx-a100", 2)
    tr = Training(seq_len=4096, global_batch=64, micro_batch=1)
    batch = Batch.of(Layout(tp=8, dp=2, zero=3, offload=Offload.CPU), tr)

    def calls():
        return len(evaluate(batch, model, hw, tr, Assumptions(), all_stages=True,
                            record=True).calls)
    first = calls()
    evaluate(batch, model, hw, tr, Assumptions(), all_stages=True)
    assert "memory__weights_bytes" in vars(R.eq) and R._OPEN == [0]
    assert calls() == first > 100
