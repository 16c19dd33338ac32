"""Parameter offload in the planner's search (issue 33): the ZeRO-3 weights leave the GPU with
the optimizer state (DeepSpeed offload_param, torchtitan's FSDP2 CPUOffloadPolicy) as a variant
of each target whose strategy moves them; the frameworks' rules decide who runs it."""

import numpy as np
import pytest

from optimus_calc.evaluate import strategies
from optimus_calc.evaluate.context import resolve_hardware
from optimus_calc.search.inputs import offload_targets
from optimus_calc.search.space import enumerate_space
from optimus_calc.specs.training import Offload


def test_params_axis_is_zero3_only_and_the_space_counts_what_it_keeps(cat):
    m = cat.get("llama-3-70b", "model")
    hw = resolve_hardware(cat, "dgx-a100", 2)
    space = enumerate_space(m, hw.gpus, hw.gpus_per_node, None, 4096, offload_targets(hw))
    chunk = space.whole()
    cols = chunk.columns(np.arange(len(space)))
    assert len(space) == int(chunk.keep.sum())
    with_params = cols["offload_params"] == 1
    assert with_params.any() and (cols["zero"][with_params] == 3).all()
    # only the targets whose strategy moves the weights: host RAM and the node's NVMe drives
    # (no SmartNIC card is named, so the node offers none)
    targets = {strategies.at(int(c)).offload for c in np.unique(cols["offload"][with_params])}
    assert targets == {o for o in offload_targets(hw) if strategies.strategy(o).offloads_params}
    assert targets == {Offload.CPU, Offload.NVME}
    # --no-offload-params: none of them; the rest of the space unchanged
    kept = enumerate_space(m, hw.gpus, hw.gpus_per_node, None, 4096, offload_targets(hw),
                           offload_params=(False,))
    assert len(kept) == len(space) - int(with_params.sum())


def test_torchtitan_plan_on_two_nodes_offers_fsdp2_cpu_offload(run):
    # issue 33: "no layout fits" before; FSDP2's CPUOffloadPolicy is ZeRO-3 with the weights,
    # gradients and optimizer on the host
    d = run("plan", "llama70b", "--nodes", 2, "--framework", "torchtitan",
            "--format", "json").json()
    rec = d["recommended"]
    assert rec is not None and rec["frameworks"] == ["torchtitan"]
    assert (rec["zero"], rec["offload"], rec["offload_params"]) == (3, "cpu", True)
    assert rec["gpu_memory_bytes"] <= 0.95 * 80e9
    toml = run("plan", "llama70b", "--nodes", 2, "--framework", "torchtitan",
               "--export", "torchtitan").out
    assert "enable_cpu_offload = true" in toml
    r = run("plan", "llama70b", "--nodes", 2, "--framework", "torchtitan",
            "--no-offload-params", "--format", "json")
    assert r.code == 0 and r.json()["recommended"] is None


def test_planned_params_offload_layout_is_the_memory_commands(run):
    # the layout: `memory llama70b --nodes 2 --tp 1 --zero 3 --offload cpu
    # --offload-params --recompute full --framework torchtitan` = 27.1 GB per GPU with the
    # framework-neutral 6 bytes per logit; torchtitan's loss holds 10 (bf16 pred, its fp32 copy,
    # log_softmax's fp32 output): + 4 x 8192 x 128,256 = 4.203 GB, x 1.05 fragmentation =
    # 4.413 GB -> 31.5 GB. The planner, pinned to it, finds the same layout and the same bytes
    d = run("plan", "llama70b", "--nodes", 2, "--framework", "torchtitan", "--tp", 1, "--pp", 1,
            "--recompute", "full", "--micro-batch", 1, "--format", "json").json()
    rec = d["recommended"]
    assert (rec["dp"], rec["zero"], rec["offload_params"]) == (16, 3, True)
    m = run("memory", "llama70b", "--nodes", 2, "--tp", 1, "--zero", 3, "--offload", "cpu",
            "--offload-params", "--recompute", "full", "--framework", "torchtitan",
            "--format", "json").json()
    assert m["per_gpu"]["total_bytes"] == pytest.approx(27.1e9 + 4.413e9, abs=0.05e9)
    assert rec["gpu_memory_bytes"] == pytest.approx(m["per_gpu"]["total_bytes"], rel=1e-9)


def test_deepspeed_zero3_params_offload_is_searched_and_exported(run):
    d = run("plan", "llama70b", "--nodes", 2, "--framework", "deepspeed", "--offload-params",
            "--format", "json").json()
    assert d["candidates"] and all(c["offload_params"] and c["zero"] == 3
                                   for c in d["candidates"])
    cfg = run("plan", "llama70b", "--nodes", 2, "--framework", "deepspeed",
              "--offload-params", "--export", "deepspeed").out
    assert '"offload_param": {\n      "device": "cpu"' in cfg


def test_megatron_never_gets_params_offload(run):
    # Megatron-LM has no parameter offload (frameworks/megatron.py MG_OFFLOAD_PARAMS)
    d = run("plan", "llama70b", "--nodes", 2, "--framework", "megatron", "--offload-params",
            "--format", "json").json()
    assert d["recommended"] is None
    assert any("Megatron-LM: no parameter offload" in k for k in d["framework_rejections"])


@pytest.mark.parametrize("args", [("--offloads", "none"), ("--zero", "1,2"), ("--max-zero", 2)])
def test_params_offload_that_cannot_be_searched_names_the_flag(run, args):
    r = run("plan", "llama70b", "--nodes", 2, "--offload-params", *args)
    assert r.code == 2 and r.err.startswith("error: --offload-params: the weights leave the GPU "
                                            "only with ZeRO-3 and a target that moves them")
