"""CONTRIBUTING.md, followed: the contract an offload target and a framework must keep.

`check_offload_target` and `check_framework` are what CONTRIBUTING.md names for each: they run
over every registered target and framework (the built-ins keep them), and over a toy of each,
registered here only (no file of src/ changes): the half-done toy fails the check, the finished
one passes and takes part in `memory`, `step` and the planner's rules.
"""

import math
import re

import numpy as np
import pytest

from optimus_calc.evaluate import strategies
from optimus_calc.evaluate.context import resolve_hardware
from optimus_calc.evaluate.memory import estimate_memory
from optimus_calc.evaluate.step import estimate_step
from optimus_calc.evaluate.strategies.base import OffloadStrategy
from optimus_calc.frameworks import FrameworkPlugin, Rule, plugins, register
from optimus_calc.frameworks.base import PhysicsProfile, Setting
from optimus_calc.frameworks.registry import framework_support, make_enums, unregister
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Layout, Offload, Training, ZeroStage
from tests.toy_offload import ADAM_BYTES, memory_device

# ---- the contracts ---------------------------------------------------------------------------

# where each target is offered: the first node (and SmartNIC) of these that offers it
NODES = (("dgx-a100", None), ("dgx-a100", "bluefield-3"), ("gh200", None))


def check_offload_target(s: OffloadStrategy, cat) -> None:
    """What every offload target keeps (CONTRIBUTING.md, "Add an offload target")."""
    assert s.label, f"{s.key}: no label (how reports name the strategy)"
    assert s.device, f"{s.key}: no device (what one of its devices is)"
    assert s.key in {x.key for x in strategies.strategies()}, f"{s.key}: not registered"
    layout = Layout(dp=8, zero=ZeroStage.OS_G_P, offload=s.key)
    if s.key != Offload.NONE.value:
        o_w, o_g, o_o, _ = s.flags(False, 0.0)
        assert o_w + o_g + o_o > 0, f"{s.key}: flags() moves nothing off the GPU"
    hw = next((h for h in (resolve_hardware(cat, node, 1, smartnic=card) for node, card in NODES)
               if s.offered(h)), None)
    assert hw is not None, f"{s.key}: offered by none of {NODES}"
    model, tr, asm = cat.get("llama-2-7b", "model"), Training(seq_len=4096), Assumptions()
    layout = layout.model_copy(update={"dp": hw.gpus})
    mem = estimate_memory(model, hw, layout, tr, asm)
    base = estimate_memory(model, hw, layout.model_copy(update={"offload": Offload.NONE}), tr,
                           asm)
    st = estimate_step(model, hw, layout, tr, asm, mem)
    figures = (mem.worst.total_bytes, st.step_time_s, st.optimizer_s)
    assert all(math.isfinite(x) and x >= 0 for x in figures), (s.key, figures)
    if s.key != Offload.NONE.value:
        assert mem.worst.total_bytes < base.worst.total_bytes, f"{s.key}: GPU memory not less"
        assert mem.offload.device == s.device_name(hw), (s.key, mem.offload.device)
        assert st.optimizer_s > 0, f"{s.key}: optimizer() gives no step"
        assert st.optimizer_device == s.optimizer_device(hw, layout), (s.key, st.optimizer_device)


def check_framework(p: FrameworkPlugin) -> None:
    """What every framework keeps (CONTRIBUTING.md, "Add a framework")."""
    assert re.fullmatch(r"[a-z0-9-]+", p.key), f"{p.key!r}: --framework names are lowercase"
    assert re.fullmatch(r"[0-9a-f]{40}", p.commit), f"{p.key}: commit {p.commit!r} is not pinned"
    assert re.fullmatch(r"[\w.-]+/[\w.-]+", p.repo), f"{p.key}: repo {p.repo!r} is not owner/name"
    assert p.launch, f"{p.key}: no launch path"
    names = [r.name for r in p.rules]
    assert len(names) == len(set(names)), f"{p.key}: rule names repeat"
    for rule in p.rules:
        assert rule.text and rule.source in rule.text, (p.key, rule.name, "cite the source")
    for x in p.profile.settings:
        assert x.source and " L" in x.source, (p.key, x.name, "a file and line")
        if x.name != "grad_bytes":
            Assumptions(**{x.name: x.value})  # a valid parameter, in range
    framework, _, _ = make_enums()
    assert p.key in [f.value for f in framework], f"{p.key}: not registered"


@pytest.mark.parametrize("key", [s.key for s in strategies.strategies()])
def test_every_offload_target_keeps_the_contract(cat, key):
    check_offload_target(strategies.strategy(key), cat)


@pytest.mark.parametrize("key", [p.key for p in plugins()])
def test_every_framework_keeps_the_contract(key):
    check_framework(next(p for p in plugins() if p.key == key))


# ---- a toy offload target, half done then finished ---------------------------------------------

TOY_BYTES = 1e12     # one toy memory box per node (a toy figure)
TOY_Bps = 100e9      # its bandwidth to the CPU that steps the optimizer (a toy figure)


class HalfDoneBox(OffloadStrategy):
    """Step 1 of CONTRIBUTING begun: the module and its key, nothing else yet."""

    offload = "contrib-box"


# finished: the toy of tests/toy_offload.py as a per-node memory box
ToyBox = memory_device("contrib-box", "toy memory box", "memory box", TOY_BYTES, TOY_Bps)


def test_a_toy_offload_target_fails_the_contract_until_finished(cat):
    for toy, passes in ((HalfDoneBox(), False), (ToyBox(), True)):
        strategies.register(toy)
        try:
            if passes:
                check_offload_target(toy, cat)
            else:
                with pytest.raises(AssertionError, match="no label"):
                    check_offload_target(toy, cat)
        finally:
            strategies.unregister(toy.key)
    assert "contrib-box" not in {s.key for s in strategies.strategies()}


def test_the_finished_toy_target_steps_at_its_bandwidth(cat):
    strategies.register(ToyBox())
    try:
        model, hw = cat.get("llama-2-7b", "model"), resolve_hardware(cat, "dgx-a100", 1)
        lay = Layout(dp=8, zero=ZeroStage.OS, offload="contrib-box")
        tr, asm = Training(seq_len=4096), Assumptions()
        mem = estimate_memory(model, hw, lay, tr, asm)
        st = estimate_step(model, hw, lay, tr, asm, mem)
        # 6.74e9 parameters / 8 ranks = 842M per GPU; 842M x 28 B / 100 GB/s = 0.236 s
        shard = mem.worst.params / 8
        assert shard == pytest.approx(6.738e9 / 8, rel=1e-3)
        assert st.optimizer_s == pytest.approx(shard * ADAM_BYTES / TOY_Bps, rel=1e-12)
        assert st.optimizer_s == pytest.approx(0.2358, rel=1e-3)
        assert mem.worst.optimizer_bytes == 0
    finally:
        strategies.unregister("contrib-box")


# ---- a toy framework, half done then finished --------------------------------------------------

def _toy_framework(done: bool) -> FrameworkPlugin:
    if not done:  # rules written, the commit not pinned yet and a rule without its source line
        rule = Rule("CONTRIB_HALF_TP", "toy: no tensor parallelism", "toy/engine.py L12",
                    lambda x: x.tp > 1)
        return FrameworkPlugin(key="contrib-toy", label="Toy", repo="example/toy",
                               commit="main", rules=(rule,), launch="toy-run train.py")
    rule = Rule("CONTRIB_TOY_TP", "toy: no tensor parallelism (toy/engine.py L12)",
                "toy/engine.py L12", lambda x: x.tp > 1)
    profile = PhysicsProfile((Setting("grad_bytes", 4, "toy/engine.py L40: fp32 grads"),))
    return FrameworkPlugin(key="contrib-toy", label="Toy", repo="example/toy",
                           commit="0123456789abcdef0123456789abcdef01234567", rules=(rule,),
                           launch="toy-run train.py", profile=profile)


def test_a_toy_framework_fails_the_contract_until_finished():
    for done in (False, True):
        toy = register(_toy_framework(done))
        try:
            if done:
                check_framework(toy)
                # its rule takes part in the planner's rules: TP 1 runs, TP 2 does not
                s = framework_support(np.array([1, 2]), 1, 8, 1, 1, 1, 0, False, 1, 1, True, 0,
                                      heads=64, n_kv=8, experts=0, layers=80)
                assert s.ok["contrib-toy"].tolist() == [True, False]
            else:
                with pytest.raises(AssertionError, match="not pinned"):
                    check_framework(toy)
        finally:
            unregister("contrib-toy")
    assert "contrib-toy" not in [p.key for p in plugins()]
