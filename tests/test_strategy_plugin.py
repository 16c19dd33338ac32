"""An offload target is one strategy object: a toy one registered here, in the test only (no
file of src/ changes), is used by `memory`, `step` and the planner (issue 18)."""

import numpy as np
import pytest

from optimus_calc.equations.recording import eq
from optimus_calc.evaluate import strategies
from optimus_calc.evaluate.context import resolve_hardware
from optimus_calc.evaluate.memory import estimate_memory
from optimus_calc.evaluate.reasons import Reason
from optimus_calc.evaluate.records import DeviceUse, OptimizerUse
from optimus_calc.evaluate.step import estimate_step
from optimus_calc.evaluate.strategies.base import OffloadStrategy, bit
from optimus_calc.search.plan import offload_targets, plan
from optimus_calc.specs.training import Assumptions, Layout, Offload, Training, ZeroStage

CXL_BYTES = 512e9   # one memory expander per node (a toy figure)
CXL_Bps = 64e9      # its bandwidth as the CPU sees it (a toy figure)
ADAM_BYTES = 28.0   # fused Adam: read p, g, m, v and write p, m, v in fp32


class CXLMemory(OffloadStrategy):
    """Optimizer state in a CXL memory expander; the host CPU steps it at the expander's
    bandwidth after the backward, nothing hidden."""

    offload = "cxl"
    label = "CXL memory"
    device = "CXL expander"

    def flags(self, opar, gfrac):
        return 0.0, 0.0, 1.0, 0.0  # the optimizer state leaves the GPU, nothing else

    def devices(self, ctx, host):
        per = eq.memory__bytes_per_offload_device(B_gpu=host.optimizer, G_n=ctx.gpn, K_n=1)
        return DeviceUse(per, host.optimizer, CXL_BYTES, 1, 0.0, 0.0)

    def reasons(self, ctx, dev, host_capacity):
        return bit(dev.bytes_per_device > dev.capacity, Reason.HOST_RAM)

    def reason_text(self, reason, info):
        return "CXL expander full" if reason is Reason.HOST_RAM else None

    def optimizer(self, ctx, mem, comp, opt, dev):
        step = opt.shard * ADAM_BYTES / CXL_Bps
        moved = opt.shard * (ctx.tr.gradient_bytes + ctx.tr.weight_bytes) / opt.link_Bps
        return OptimizerUse(step, moved, step + moved, 0.0)


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


def test_the_planner_searches_the_toy_strategy(cat, cxl):
    model, hw, tr, asm = _inputs(cat)
    assert Offload("cxl") in offload_targets(hw)  # offered on every node
    res = plan(model, hw, tr, asm, offloads=[Offload("cxl")], top_k=3)
    assert res.recommended is not None
    assert all(c.layout.offload.value == "cxl" for c in res.top)
    best = res.recommended
    again = estimate_step(model, hw, best.layout, best.training, asm)
    assert best.step_s == pytest.approx(again.step_time_s, rel=1e-9)
    assert np.isfinite(again.optimizer_s) and again.optimizer_s > 0


def test_unregistered_after(cat):
    assert "cxl" not in {s.key for s in strategies.strategies()}
    assert [s.key for s in strategies.strategies()] == [o.value for o in Offload]
