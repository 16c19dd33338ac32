"""Where SuperOffload keeps the offloaded state (evaluate/strategies/superchip.py devices): on
the Grace CPUs of each node, none spilled. The sampled mutation run of 2026-11-26
(docs/hardening.md, "Mutation score") found these fields pinned by no test of its selection."""

import pytest

from optimus_calc import catalog as catalog_mod
from optimus_calc.evaluate.context import resolve_hardware
from optimus_calc.evaluate.memory import estimate_memory
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Layout, Offload, Training


def test_superoffload_state_sits_on_each_nodes_grace_cpus():
    # gh200-nvl2: 2 GH200 superchips per node, so 2 Grace CPUs (catalog); bytes per Grace =
    # state per GPU x G_n / K_n = state x 2 / 2 (memory.bytes_per_offload_device); the node
    # holds 2 x that; nothing spills to other host memory
    cat = catalog_mod.load(())
    hw = resolve_hardware(cat, "gh200-nvl2", 2)
    assert hw.node.cpus == 2
    mem = estimate_memory(cat.get("llama-3-8b", "model"), hw,
                          Layout(tp=1, pp=1, dp=4, zero=3, offload=Offload.SUPERCHIP),
                          Training(seq_len=4096, global_batch=8), Assumptions())
    off = mem.offload
    assert off.devices_per_node == 2 and off.devices == 4
    assert off.bytes_per_device == pytest.approx(off.bytes_per_gpu, rel=1e-12)
    assert off.host_bytes_per_node == pytest.approx(2 * off.bytes_per_device, rel=1e-12)
    assert off.spill_to_host_bytes_per_device == 0.0
