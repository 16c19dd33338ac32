"""Framework fixed costs as sourced per-event costs (issue 32 item 6).

DeepSpeed ZeRO-1/2 with the optimizer offloaded to the CPU syncs the host twice per parameter
tensor of the rank's partition at the accumulation boundary: `if self._has_inf_or_nan(...)`
in the overflow tracker and `param_norm.item()` in the norm (deepspeed/runtime/zero/
stage_1_and_2.py L1498-1500, L1622 @ edaa722). The count comes from the source; the cost of
one sync, host_sync_us = 25 us, is assumed (no public measurement, no public per-step time to
fit it on)."""

import pytest

# llama-2-7b: 32 layers x (q, k, v, o, gate, up, down, 2 norms) = 288 parameter tensors
BASE = ("step", "llama-2-7b", "--seq-len", 4096, "--global-batch", 8, "--offload", "cpu",
        "--format", "json")


def _step(run, *args):
    r = run(*BASE, *args)
    assert r.code == 0, r.err
    return r.json()["step_time_s"]


def test_host_sync_time_by_hand():
    from optimus_calc.equations import compiled as eq
    # 2 syncs x 36 tensors x 25 us = 1.8 ms
    assert float(eq.offload__host_sync_time(N_tp=36, n_hs=2, t_hs=25e-6)) == \
        pytest.approx(1.8e-3, rel=1e-12)


@pytest.mark.parametrize("layout", [
    ("--nodes", 1, "--zero", 2),              # DP 8: 288 / 8 = 36 tensors in the partition
    ("--nodes", 1, "--zero", 1),
    ("--nodes", 2, "--tp", 2, "--zero", 1),   # TP 2 x DP 8: 288 shards / 8 = 36
])
def test_deepspeed_zero12_cpu_pays_two_syncs_per_partition_tensor(run, layout):
    ds = _step(run, *layout, "--framework", "deepspeed")
    off = _step(run, *layout, "--framework", "deepspeed", "--assume",
                "offload_host_syncs_per_tensor=0")
    # 2 x 36 x 25 us = 1.8 ms, exposed once per step
    assert ds - off == pytest.approx(2 * 36 * 25e-6, rel=1e-6)
    # the syncs' cost is the named assumption: 100 us per sync gives 7.2 ms
    slow = _step(run, *layout, "--framework", "deepspeed", "--assume", "host_sync_us=100")
    assert slow - off == pytest.approx(2 * 36 * 100e-6, rel=1e-6)


def test_only_the_deepspeed_zero12_offload_step_pays_them(run):
    # framework-neutral physics: no per-tensor syncs (the assumption's default is 0)
    neutral = _step(run, "--nodes", 1, "--zero", 2)
    # (and the parameter all-gather hidden as the neutral physics has it: DeepSpeed runs it
    # inside step(), dp_gather_overlap 0, tests/test_deepspeed_gather.py)
    off = _step(run, "--nodes", 1, "--zero", 2, "--framework", "deepspeed", "--assume",
                "offload_host_syncs_per_tensor=0", "--assume", "dp_gather_overlap=1")
    assert neutral == pytest.approx(off, rel=1e-12)
    # ZeRO-3 + CPU runs another path (stage3.py: no per-tensor overflow sync with bf16,
    # framework-physics.md F1): unchanged
    z3 = _step(run, "--nodes", 1, "--zero", 3, "--framework", "deepspeed")
    z3_off = _step(run, "--nodes", 1, "--zero", 3, "--framework", "deepspeed", "--assume",
                   "offload_host_syncs_per_tensor=0")
    assert z3 == z3_off


def test_the_deepspeed_profile_cites_the_lines():
    from optimus_calc.frameworks.deepspeed import ENGINE_PROFILE
    s = {x.name: x for x in ENGINE_PROFILE.settings}["offload_host_syncs_per_tensor"]
    assert s.value == 2 and "L1498-1500" in s.source and "L1622" in s.source
