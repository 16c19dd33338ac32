"""An offload target is one strategy object: a toy one registered here, in the test only (no
file of src/ changes), is used by `memory`, `step`, `compare` and the planner (issue 18); every
built-in framework declares the targets it runs, so each refuses it with its generated reason
and no exporter writes it (issue 33)."""

import numpy as np
import pytest

from optimus_calc.evaluate import strategies
from optimus_calc.evaluate.context import resolve_hardware
from optimus_calc.evaluate.memory import estimate_memory
from optimus_calc.evaluate.step import estimate_step
from optimus_calc.frameworks import Framework, layout_support, plugin
from optimus_calc.search.passes import NOT_RUNNABLE
from optimus_calc.search.inputs import offload_targets
from optimus_calc.search.plan import plan
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Layout, Offload, Training, ZeroStage

from tests.toy_offload import ADAM_BYTES, memory_device

CXL_BYTES = 512e9   # one memory expander per node (a toy figure)
CXL_Bps = 64e9      # its bandwidth as the CPU sees it (a toy figure)
# the toy of tests/toy_offload.py as a CXL memory expander
CXLMemory = memory_device("cxl", "CXL memory", "CXL expander", CXL_BYTES, CXL_Bps)


@pytest.fixture
def cxl():
    s = strategies.register(CXLMemory())
    yield s
    strategies.unregister("cxl")


def _inputs(cat):
    model = cat.get("llama-2-7b", "model")
    hw = resolve_hardware(cat, "dgx-a100", 1)
    return model, hw, Training(seq_len=4096, global_batch=64), Assumptions()


def test_memory_and_step_use_the_toy_strategy(cat, cxl):
    model, hw, tr, asm = _inputs(cat)
    lay = Layout(dp=8, zero=ZeroStage.OS, offload="cxl")
    assert lay.offload is Offload("cxl") and lay.offload.value == "cxl"
    mem = estimate_memory(model, hw, lay, tr, asm)
    base = estimate_memory(model, hw, lay.model_copy(update={"offload": Offload.NONE}), tr, asm)
    # the optimizer state left the GPU; weights and gradients stayed
    assert mem.worst.optimizer_bytes == 0 and base.worst.optimizer_bytes > 0
    assert mem.worst.gradients_bytes == base.worst.gradients_bytes
    # 6.74e9 params / 8 ranks x 12 B = 10.1 GB per GPU; 8 GPUs share one expander: 80.9 GB
    shard = base.worst.params / 8
    assert mem.offload.bytes_per_gpu == pytest.approx(shard * 12, rel=1e-12)
    assert mem.offload.bytes_per_device == pytest.approx(shard * 12 * 8, rel=1e-12)
    assert mem.offload.device == "CXL expander" and mem.offload.devices_per_node == 1
    assert mem.offload.capacity_bytes_per_device == CXL_BYTES and mem.fits
    st = estimate_step(model, hw, lay, tr, asm, mem)
    assert st.optimizer_s == pytest.approx(shard * ADAM_BYTES / CXL_Bps, rel=1e-12)
    assert st.optimizer_device == "CXL expander"
    assert st.offload_transfer_s > 0
    assert st.optimizer_exposed_s == pytest.approx(st.optimizer_s + st.offload_transfer_s)


def test_the_toy_strategy_reports_its_reason(cat, cxl):
    model, hw, tr, asm = _inputs(cat)
    big = cat.get("llama-3-70b", "model")
    mem = estimate_memory(big, hw, Layout(dp=8, zero=ZeroStage.OS, offload="cxl"), tr, asm)
    assert "CXL expander full" in mem.reasons  # 70.6e9 x 12 B = 847 GB > 512 GB


def test_the_planner_searches_the_toy_strategy_and_no_framework_runs_it(cat, cxl):
    # every built-in framework declares the targets it runs (an allowlist): the toy target is
    # evaluated (the rules drop every layout of it) and none is recommended
    model, hw, tr, asm = _inputs(cat)
    assert Offload("cxl") in offload_targets(hw)  # offered on every node
    res = plan(model, hw, tr, asm, offloads=[Offload("cxl")], top_k=3)
    assert res.recommended is None and res.feasible == 0
    assert res.infeasible_by_reason == {NOT_RUNNABLE: res.evaluated}
    for f in Framework:
        assert plugin(f).offload_rule.text in res.why
        assert plugin(f).offload_rule.text in res.framework_rejections


_TOY_RULES: list = []


def _toy_framework():
    """A framework plug-in that declares the toy target (its rule rows built once: a rule name
    keeps its code in the registry)."""
    from optimus_calc.frameworks.base import SMARTNIC, FrameworkPlugin, runs_offloads
    if not _TOY_RULES:
        _TOY_RULES.append(runs_offloads("TOY_OFFLOAD_TARGET", "toy", (Offload.NONE,
                                                                     Offload("cxl")), "test"))
    return FrameworkPlugin(key="toy", label="toy", repo="test/toy", commit="0" * 40,
                           rules=(SMARTNIC, _TOY_RULES[0]), launch="")


@pytest.fixture
def toy_framework(cxl):
    from optimus_calc.frameworks import register
    from optimus_calc.frameworks.registry import enums, unregister
    register(_toy_framework())
    yield enums()[0]("toy")
    unregister("toy")


def test_a_framework_that_declares_the_toy_target_runs_it(cat, toy_framework):
    model, hw, tr, asm = _inputs(cat)
    res = plan(model, hw, tr, asm, offloads=[Offload("cxl")], top_k=3,
               frameworks=(toy_framework,))
    assert res.recommended is not None
    assert all(c.layout.offload.value == "cxl" and c.frameworks == ("toy",) for c in res.top)
    best = res.recommended
    again = estimate_step(model, hw, best.layout, best.training, asm)
    assert best.step_s == pytest.approx(again.step_time_s, rel=1e-9)
    assert np.isfinite(again.optimizer_s) and again.optimizer_s > 0


def test_every_built_in_framework_refuses_the_toy_target_with_its_generated_reason(cat, cxl):
    model, hw, tr, asm = _inputs(cat)
    lay = Layout(dp=8, zero=ZeroStage.OS, offload="cxl")
    support = layout_support(lay, tr, model)
    for f in Framework:
        rule = plugin(f).offload_rule
        assert Offload("cxl") not in rule.offloads and Offload.CPU in rule.offloads
        assert support[f].name == rule.name
        # Megatron-DeepSpeed runs on DeepSpeed's engine: its row is the engine's
        assert ": offloads only to cpu" in rule.text
        assert rule.text.endswith("; no other target, a plug-in's included")
    # the same layout offloading to host RAM runs on DeepSpeed (ZeRO-1 + CPU offload)
    assert layout_support(lay.model_copy(update={"offload": Offload.CPU}), tr,
                          model)[Framework.DEEPSPEED].name == "OK"


def test_the_cli_accepts_the_toy_target(cat, cxl, run):
    d = run("memory", "llama-2-7b", "--dp", 8, "--zero", 1, "--offload", "cxl",
            "--format", "json").json()
    assert d["offload"]["device"] == "CXL expander"
    # the step report names the strategy's own step equation (none for the toy: blank)
    text = run("step", "llama-2-7b", "--dp", 8, "--zero", 1, "--offload", "cxl").out
    assert "optimizer step (on CXL expander)" in text
    assert "compute.optimizer_step_time" not in text.split("optimizer step (on")[1].split("\n")[0]
    assert "cxl" in run("memory", "--help").out


def test_compare_lists_the_toy_target(cat, cxl, run):
    rows = run("compare", "llama-2-7b", "--format", "json").json()["strategies"]
    toy = [r for r in rows if r["offload"] == "cxl"]
    assert len(toy) == 1 and toy[0]["strategy"] == "CXL memory (CXL expander)"
    assert toy[0]["frameworks"] == []


def test_no_export_of_the_toy_target(cat, cxl, run, tmp_path):
    from optimus_calc.frameworks import export_choices, exporter
    from optimus_calc.frameworks.exporting import ExportError
    _, _, tr, _ = _inputs(cat)
    model = cat.get("llama-3-8b", "model")  # a shape every exporter builds (torchtitan's llama3)
    from optimus_calc.frameworks import exported_frameworks
    for name in export_choices():
        out = tmp_path / f"{name}.txt"
        r = run("plan", "llama-2-7b", "--offloads", "cxl", "--export", name, "-o", out)
        assert r.code == 2 and not out.exists()
        assert r.err.startswith("error: nothing to export: no framework runs any layout")
        # the export searches its own frameworks' layouts: their allowlists say why
        texts = [plugin(f).offload_rule.text for f in exported_frameworks(name)]
        assert texts and all(t in r.err for t in texts) and "Traceback" not in r.err
        # the exporter itself refuses the layout, with its framework's generated reason
        with pytest.raises(ExportError, match="offloads only to cpu"):
            exporter(name).render(Layout(dp=8, zero=ZeroStage.OS, offload="cxl"),
                                  tr.model_copy(update={"global_batch": 64}), model, 8)


def test_each_built_in_strategy_names_an_equation_explain_prints(cat, run):
    # the step report's "optimizer step" row names its strategy's equation, and `explain`
    # prints it with this layout's values, its result the step's optimizer_s (issue 33:
    # --offload cpu answered "not evaluated"; ZeRO-1 and ZeRO-3 run different CPU schedules)
    for off, eqn in (("none", "compute.optimizer_step_time"), ("cpu", "offload.step_time"),
                     ("nvme", "offload.nvme_step_time")):
        assert strategies.strategy(off).step_equation == eqn
        for zero in (1, 3):
            layout = ("llama-2-7b", "--dp", 8, "--zero", zero, "--offload", off)
            assert f" {eqn}" in run("step", *layout).out
            r = run("explain", eqn, *layout)
            assert r.code == 0 and r.out.startswith(f"{eqn} [s]")
            got = run("explain", eqn, *layout, "--format", "json").json()["result"]
            want = run("step", *layout, "--format", "json").json()["optimizer_s"]
            assert got == pytest.approx(want, rel=1e-12) and want > 0


def test_unregistered_after(cat):
    assert "cxl" not in {s.key for s in strategies.strategies()}
    assert [s.key for s in strategies.strategies()] == [o.value for o in Offload]
