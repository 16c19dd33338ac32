"""The batch-of-one caches (issue 35: `calibrate`, `compare` and the suite evaluate one layout
thousands of times) give the numbers of the plain path, bit for bit, when what they read changes.

``topology._GROUPS`` keeps a node's ring groups (alpha, beta) by the link and NIC figures they
read; ``StageTable.lookup`` keeps a small batch's stage columns on the table. `calibrate` changes
the scale-up link's and the NIC's efficiency between two evaluations of the same layout: a key
without them would return the previous hardware's groups. A recorded evaluation (`explain`)
takes neither cache, so it is the reference.
"""

from dataclasses import replace

import numpy as np
import pytest

from optimus_calc.evaluate import topology
from optimus_calc.evaluate.batch import Batch
from optimus_calc.evaluate.context import resolve_hardware
from optimus_calc.evaluate.engine import evaluate
from optimus_calc.evaluate.stages import stage_table
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Layout, Training


def _hw_variants(hw):
    """The hardware as calibrate_fit.predict rebuilds it: link and NIC efficiency changed."""
    link = hw.intra_link.model_copy(update={"efficiency": hw.intra_link.efficiency * 0.5})
    nic = hw.nic.model_copy(update={"efficiency": hw.nic.efficiency * 0.5})
    return [hw, replace(hw, intra_link=link), replace(hw, nic=nic), hw]


@pytest.mark.parametrize("lay", [Layout(tp=8, pp=1, dp=2, zero=1),       # DP over the NICs
                                 Layout(tp=4, pp=2, dp=2, cp=1, zero=3)])  # TP, DP in a node
def test_ring_groups_follow_the_link_and_nic_efficiency(cat, lay):
    model = cat.get("llama70b", "model")
    tr, asm = Training(seq_len=4096, global_batch=64, micro_batch=1), Assumptions()
    batch = Batch.of(lay, tr)
    steps = []
    for hw in _hw_variants(resolve_hardware(cat, "dgx-a100", 2)):
        ref = evaluate(batch, model, hw, tr, asm, all_stages=True, record=True)
        got = evaluate(batch, model, hw, tr, asm, all_stages=True)
        for k in ("tp_comm_s", "dp_comm_s", "dp_comm_exposed_s", "pp_comm_s"):
            np.testing.assert_array_equal(got.stage_terms[k], ref.stage_terms[k], err_msg=k)
        np.testing.assert_array_equal(got.step_time_s, ref.step_time_s)
        steps.append(float(got.step_time_s[0]))
    # a slower link or NIC lengthens the step (the groups were not reused); the same hardware
    # again gives the same step
    assert steps[1] > steps[0] and steps[3] == steps[0]
    assert topology._GROUPS and not any(a.flags.writeable for g in topology._GROUPS.values()
                                        for a in g)


def test_stage_columns_kept_per_pipeline_degree(cat):
    """A table asked for PP 2, then PP 4, then PP 2 again answers each with its own columns
    (those of a fresh lookup on a large batch, which keeps nothing), read-only when kept."""
    model = cat.get("llama70b", "model")  # 80 layers
    table = stage_table(model, [2, 4], True)
    for pp in (2, 4, 2):
        small = table.lookup(np.array([[pp]]))
        big = table.lookup(np.full((40, 1), pp))  # over _LOOKUPS_SMALL: not kept
        for k in ("index", "layers", "first", "last"):
            np.testing.assert_array_equal(getattr(small, k)[0], getattr(big, k)[0], err_msg=k)
            assert not getattr(small, k).flags.writeable
        # the pp stages' layers add up to the model's 80 (2 x 40 or 4 x 20; PP 2's row is
        # padded to the table's width with copies of its first stage)
        assert small.layers[0, 0, :pp].sum() == 80 and small.index[0, 0, pp - 1] == pp - 1


def test_calibrate_predictions_kept_by_run_and_values(tmp_path, monkeypatch):
    """A fit's predictions are kept by (run, values) and shared with the leave-one-out subsets:
    the same values again cost no evaluation, other values are evaluated (a slower link
    predicts fewer tokens/s), and a subset reads the full set's predictions."""
    from tests.test_calibrate_guards import _load, _runs
    from optimus_calc.analyses import calibrate_fit as F
    runs = _load(_runs(tmp_path, "model,tp,measured_tokens_per_s\nllama-2-7b,2,1000\n"
                                 "llama-2-7b,4,1000\n"))
    rs = F.RunSet(runs)
    calls = []
    real = F.predict
    monkeypatch.setattr(F, "predict", lambda r, v: (calls.append(1), real(r, v))[1])
    values = F.defaults_of(runs)
    first = rs.log_preds(values)
    assert len(calls) == 2
    np.testing.assert_array_equal(rs.log_preds(dict(values)), first)
    assert len(calls) == 2
    slow = rs.log_preds({**values, "link_efficiency": values["link_efficiency"] * 0.5})
    assert len(calls) == 4 and (slow < first).all()   # TP 2 and 4 talk over the link
    np.testing.assert_array_equal(rs.without(0).log_preds(values), first[1:])
    assert len(calls) == 4
