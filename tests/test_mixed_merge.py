"""The mixed small batches' speed tactics of round 7 (mixed-eval2) give the plain path's numbers.

``by_strategy``'s one-check merge of a small batch's float64 figure, the OptimusNIC pipeline
reusing the optimizer step's roofline (``card_pipeline(update=...)``) and the evaluator's NVMe
step without the gradient write time it does not read. Each is compared with what it replaces,
element by element.
"""

import numpy as np
import pytest

from optimus_calc.equations.recording import Recorder, recording
from optimus_calc.evaluate import optimusnic
from optimus_calc.evaluate.context import resolve_hardware
from optimus_calc.evaluate.offload_step import nvme_optimizer_step
from optimus_calc.evaluate.stages import by_strategy
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Training


@pytest.mark.parametrize("seed", range(6))
def test_one_check_merge_is_the_masked_merge(seed):
    """Per-layout masks (a stage axis of 1) against per-stage values and numbers: the result is
    each strategy's value on its layouts and 0 elsewhere, as np.where applied strategy by
    strategy gives it."""
    rng = np.random.default_rng(seed)
    n, stages = int(rng.integers(2, 80)), int(rng.integers(1, 4))
    code = rng.integers(0, 4, size=(n, 1))
    values = [rng.random((n, stages)) * 1e9, 2.5, rng.random((n, stages)) - 0.5]
    pairs = [(code == c, v) for c, v in zip((1, 2, 3), values)]
    got = by_strategy(pairs, (n, stages))
    ref = np.zeros((n, stages))
    for m, v in pairs:
        ref = np.where(m, v, ref)
    assert got.shape == (n, stages) and got.dtype == np.float64
    np.testing.assert_array_equal(got, ref)
    # code 0 (no pair given) keeps the merge's 0 on every stage
    assert not got[code[:, 0] == 0].any()


def test_one_strategys_figure_is_its_values_on_its_layouts():
    mine = np.array([[True], [False], [True]])
    got = by_strategy([(mine, np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))], (3, 2))
    np.testing.assert_array_equal(got, [[1.0, 2.0], [0.0, 0.0], [5.0, 6.0]])


@pytest.fixture(scope="module")
def sn_hw(cat):
    return resolve_hardware(cat, "dgx-a100", 2, smartnic="bluefield-3")


def _pipe(hw, shard, k, **kw):
    tr, asm = Training(seq_len=4096, global_batch=64, micro_batch=1), Assumptions()
    return optimusnic.card_pipeline(hw, tr, asm, shard_params=shard, cards_per_node=k,
                                    spill_bytes=0.0, window_s=0.5, layers=40, **kw)


def test_pipeline_takes_the_given_update_only_on_the_same_parameters(sn_hw):
    shard = np.array([[1.1e9, 2.3e9], [0.7e9, 5.0e8]])
    k = np.array([[8], [4]])
    ref = _pipe(sn_hw, shard, k)
    per_card = shard * (sn_hw.gpus_per_node / k)  # the pipeline's own parameters per card
    same = _pipe(sn_hw, shard, k, update=(per_card, ref.update_s))
    for name in ("update_s", "pipeline_s", "exposed_s"):
        np.testing.assert_array_equal(getattr(same, name), getattr(ref, name))
    # other parameters: the given time is not used (a marker that would show if it were)
    other = _pipe(sn_hw, shard, k, update=(per_card * 2, np.full(shard.shape, 123.0)))
    np.testing.assert_array_equal(other.update_s, ref.update_s)
    # while `explain` records, the roofline is computed (its call shown) whatever is given
    with recording(rec := Recorder()):
        _pipe(sn_hw, shard, k, update=(per_card, np.full(shard.shape, 123.0)))
    assert rec.last("compute.optimizer_step_time") is not None


def test_nvme_step_without_the_gradient_write_keeps_the_rest():
    kw = dict(ranks_per_node=8, drives=4, read_GBps=6.8, write_GBps=4.0, asm=Assumptions())
    P, cpu = np.array([1e9, 3e9]), np.array([0.4, 1.2])
    full, lean = nvme_optimizer_step(P, cpu, **kw), nvme_optimizer_step(P, cpu, **kw,
                                                                        grad_write=False)
    assert lean.grad_write_s is None
    for name in ("read_s", "write_s", "step_s"):
        np.testing.assert_array_equal(getattr(lean, name), getattr(full, name))
    # 4 B fp32 gradients of 1e9 parameters x 8 ranks over 4 drives at 4 GB/s x nvme_efficiency
    eff = Assumptions().nvme_efficiency
    assert float(full.grad_write_s[0]) == pytest.approx(4 * 1e9 * 8 / (4 * 4e9 * eff), rel=1e-12)
    with recording(Recorder()):  # `explain` sees the call
        assert nvme_optimizer_step(P, cpu, **kw, grad_write=False).grad_write_s is not None
