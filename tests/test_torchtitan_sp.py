"""torchtitan runs tensor parallelism with sequence parallelism only (its apply_tp puts
SequenceParallel on the norms in every model's parallelize.py, and the [parallelism] section has
no switch for it: models/llama3/infra/parallelize.py L181, L212-233, config/job_config.py
L350-359 at v0.2.2): the rule TT_TP_SP reads the SP axis, which the planner's grid rules carry."""

import numpy as np
import pytest

from optimus_calc.evaluate.context import resolve_hardware
from optimus_calc.frameworks import Framework, Reason, framework_support, layout_support
from optimus_calc.frameworks.exporting import ExportError
from optimus_calc.frameworks.torchtitan_export import torchtitan_toml
from optimus_calc.search import passes
from optimus_calc.search.inputs import offload_targets
from optimus_calc.search.passes import Objective, search
from optimus_calc.search.space import enumerate_space
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Layout, Training
from tests_support import cli, cli_json, evaluate_space

SP_TEXT = Reason.TT_TP_SP.text


def test_plan_no_longer_offers_tp_without_sp_for_torchtitan():
    # one grid point (TP 2, PP 1, DP 4, micro-batch 1, no offload, no recompute) x ZeRO 0-3 x
    # SP off/on = 8 layouts. torchtitan refuses ZeRO-0 with TP (TT_DDP_ND: both SP values),
    # ZeRO-1 without PP (TT_ZERO1: both) and, of ZeRO-2/3, SP off (TT_TP_SP: 2); it runs
    # ZeRO-2 and ZeRO-3 with SP on, 2 layouts. Before the rule read SP, 4 were offered
    # (ZeRO-2/3 with SP off among them).
    d = cli_json("plan", "llama-3-8b", "--node", "dgx-h100", "--nodes", "1", "--framework",
                 "torchtitan", "--tp", "2", "--pp", "1", "--micro-batch", "1", "--offloads",
                 "none", "--recompute", "none", "--global-batch", "8")
    assert d["layouts"] == 8
    assert d["feasible"] == 2
    assert sorted((c["zero"], c["sequence_parallel"]) for c in d["candidates"]) == [
        (2, True), (3, True)]
    rej = d["framework_rejections"]
    assert rej[SP_TEXT] == 2
    assert rej[Reason.TT_DDP_ND.text] == 2 and rej[Reason.TT_ZERO1.text] == 2


def test_rule_reads_sp_only_for_torchtitan_and_only_with_tp(cat):
    m = cat.get("llama-3-8b", "model")
    lay = Layout(tp=2, pp=1, dp=4, zero=3)
    off = layout_support(lay, Training(seq_len=8192, global_batch=64, sequence_parallel=False),
                         m)
    assert off[Framework.TORCHTITAN] is Reason.TT_TP_SP
    assert off[Framework.MEGATRON] is Reason.OK  # Megatron-LM's --sequence-parallel is a flag
    on = layout_support(lay, Training(seq_len=8192, global_batch=64), m)
    assert on[Framework.TORCHTITAN] is Reason.OK
    no_tp = layout_support(Layout(tp=1, pp=1, dp=8, zero=3),
                           Training(seq_len=8192, global_batch=64, sequence_parallel=False), m)
    assert no_tp[Framework.TORCHTITAN] is Reason.OK  # SP off means nothing without TP


def test_only_a_rule_reading_sp_widens_the_result():
    # grid (4 points) x SP axis (2): frameworks without an SP rule keep the grid's shape
    tp = np.array([1, 2, 4, 8]).reshape(1, 4)
    sp = np.array([0, 1]).reshape(2, 1)
    args = (tp, 1, 1, 1, 1, 0, 0, False, 1, 1, sp, 0)
    kw = dict(heads=32, n_kv=8, experts=0, layers=32, global_batch=64)
    meg = framework_support(*args, frameworks=(Framework.MEGATRON,), **kw)
    assert meg.reason[Framework.MEGATRON].shape == (1, 4)
    tt = framework_support(*args, frameworks=(Framework.TORCHTITAN, Framework.MEGATRON), **kw)
    r = tt.reason[Framework.TORCHTITAN]
    assert r.shape == (2, 4)
    assert (r == Reason.TT_TP_SP).tolist() == [[False, True, True, True], [False] * 4]
    assert tt.reason[Framework.MEGATRON].shape == (2, 4)


def test_export_refuses_tp_without_sp_in_one_line(cat):
    m = cat.get("llama-3-8b", "model")
    lay = Layout(tp=2, pp=1, dp=4, zero=3)
    with pytest.raises(ExportError) as e:
        torchtitan_toml(lay, Training(seq_len=8192, global_batch=64, sequence_parallel=False), m)
    assert SP_TEXT in str(e.value) and "\n" not in str(e.value)
    assert "tensor_parallel_degree = 2" in torchtitan_toml(
        lay, Training(seq_len=8192, global_batch=64), m)


def test_step_refuses_no_sp_when_torchtitan_runs_tp_only_with_sp():
    # the framework's rules run TP 2 x ZeRO-3 with SP on only: a typed --no-sp is refused in
    # one line naming the flag and the rule (frameworks/physics.framework_sp), exit 2; left
    # out, SP is on (the default) and the layout runs
    code, out, err = cli("step", "llama-3-8b", "--node", "dgx-h100", "--tp", "2", "--zero", "3",
                         "--framework", "torchtitan", "--no-sp", "--format", "json")
    assert code == 2 and out == ""
    line = err.strip()
    assert "\n" not in line and line.startswith("error: --no-sp with --framework torchtitan")
    assert SP_TEXT in line
    d = cli_json("step", "llama-3-8b", "--node", "dgx-h100", "--tp", "2", "--zero", "3",
                 "--framework", "torchtitan")
    assert d["training"]["sequence_parallel"] is True
    # a layout torchtitan refuses on another rule whatever SP is (ZeRO-0 with TP: TT_DDP_ND)
    # keeps the existing mechanism: the profile applies and the header names that rule
    code, out, _ = cli("step", "llama-3-8b", "--node", "dgx-h100", "--tp", "2", "--zero", "0",
                       "--framework", "torchtitan", "--no-sp", "--format", "json")
    assert code == 0
    assert "although its rules reject this layout" in out and Reason.TT_DDP_ND.text in out


@pytest.mark.parametrize("objective", [Objective.THROUGHPUT, Objective.MEMORY])
def test_torchtitan_search_equals_brute_force_over_the_sp_axis(cat, monkeypatch, objective):
    # the planner's rule filter over (zero, offload, 1, SP, grid) against every layout of the
    # space checked one by one, with small chunks so sub-chunks split along SP
    monkeypatch.setattr(passes, "PROBE", 3)
    monkeypatch.setattr(passes, "CHUNK_ELEMENTS", 1 << 13)
    monkeypatch.setattr(passes, "SECOND_PASS_BATCH", 7)
    m = cat.get("llama-3-8b", "model")
    hw = resolve_hardware(cat, "dgx-h100", 2)
    base, asm = Training(seq_len=4096, global_batch=64), Assumptions()
    space = enumerate_space(m, hw.gpus, hw.gpus_per_node, 64, 4096, offload_targets(hw))
    fw = (Framework.TORCHTITAN,)
    res = search(m, hw, base, asm, space, objective, 5, False, fw, what_if=False)
    ev, cols = evaluate_space(space, m, hw, base, asm, fw)
    ok = ev["feasible"] & ev["runs"]
    assert res.feasible == int(ok.sum()) > 5
    assert not (ok & (cols["tp"] > 1) & (cols["sp"] == 0)).any()
    # each layout counted by its first failing rule: TT_TP_SP's count is where it is first
    v = space.whole().views()
    first = framework_support(v["tp"], v["pp"], v["dp"], v["cp"], v["ep"], v["zero"],
                              v["offload"], v["offload_params"], v["v"], v["mb"], v["sp"],
                              v["recompute"], heads=m.heads, n_kv=m.n_kv, experts=m.experts,
                              layers=m.layers, global_batch=v["gb"], model=m, frameworks=fw)
    n_sp = int(space.whole().finish(first.reason[Framework.TORCHTITAN] == Reason.TT_TP_SP).sum())
    assert res.framework_rejections[SP_TEXT] == n_sp > 0
    assert res.infeasible_by_reason[passes.NOT_RUNNABLE] == int((~ev["runs"]).sum())
    tps, gpu = ev["tokens_per_s"], ev["gpu_bytes"]
    idx = np.flatnonzero(ok)
    key = (-tps, gpu) if objective is Objective.MEMORY else (gpu, -tps)
    top = idx[np.lexsort(tuple(k[idx] for k in key))][:5]
    np.testing.assert_allclose(res.top["tps"], tps[top], rtol=1e-12)
    np.testing.assert_allclose(res.top["gpu"], gpu[top], rtol=1e-12)


def test_rule_text_names_only_flags_of_the_commands_that_show_it():
    # the text is shown by `plan` (framework_rejections) and in `step`'s header: it must not
    # tell to "plan TP > 1 with --sp", a flag `plan` lacks (it searches SP itself); the one
    # flag it names, --sp, is `step`'s
    import re
    import click
    from optimus_calc.cli.main import cli as root
    with click.Context(root) as ctx:
        opts = {c: {o for p in root.get_command(ctx, c).params
                    for o in p.opts + p.secondary_opts} for c in ("plan", "step")}
    assert "--sp" not in opts["plan"] and "--sp" in opts["step"]
    assert re.findall(r"--[a-z][a-z-]*", SP_TEXT) == ["--sp"]
    assert "plan TP" not in SP_TEXT


def test_torchtitan_shards_nothing_over_one_data_parallel_rank():
    # ParallelDims.fsdp_enabled = dp_shard > 1 or cp > 1 (parallel_dims.py L334-335): with
    # DP x CP = 1 torchtitan applies no FSDP, so ZeRO 1-3 are the ZeRO-0 run and are refused;
    # DP 2 or CP 2 shard (ZeRO-3 runs), and ZeRO-0 over one rank runs
    zero = np.array([0, 1, 2, 3]).reshape(4, 1)
    dp = np.array([1, 2, 1]).reshape(1, 3)
    cp = np.array([1, 1, 2]).reshape(1, 3)
    kw = dict(heads=32, n_kv=8, experts=0, layers=32, global_batch=64)
    r = framework_support(1, 1, dp, cp, 1, zero, 0, False, 1, 1, 1, 0,
                          frameworks=(Framework.TORCHTITAN,), **kw).reason[Framework.TORCHTITAN]
    one_rank = (r == Reason.TT_ZERO_ONE_RANK).tolist()
    assert one_rank == [[False, False, False], [True, False, False], [True, False, False],
                        [True, False, False]]
    assert r[3, 1] == 0 and r[3, 2] == 0 and r[0, 0] == 0
