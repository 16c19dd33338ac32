"""DeepSpeed's ZeRO-1/2 parameter all-gather: inside the optimizer's step(), before the next
forward is issued, so none of it hides (the DeepSpeed profile's dp_gather_overlap 0)."""

import pytest


def test_zero2_gather_is_exposed_on_deepspeed_and_hidden_on_megatron(run):
    """ZeRO-2 stage_1_and_2.py step() ends with all_gather_dp_groups (L2393-2401 @ edaa722), a
    blocking all_gather_into_tensor on the current stream (runtime/utils.py L1005-1019): the
    next forward queues behind it. step.dp_exposed_time at Z = 2 is
    T_red-part + (1 - o_pg) T_gat + o_pg max(0, T_gat - W_f): with o_pg 0 the whole T_gat.
    The profile left the neutral o_pg 1 (hidden behind the forward, Megatron-LM's
    --overlap-param-gather), so DeepSpeed showed none of it. Megatron-LM keeps o_pg 1."""
    args = ("step.dp_exposed_time", "llama-2-7b", "--nodes", 2, "--zero", 2, "--format",
            "json")
    ds = run("explain", *args, "--framework", "deepspeed").json()
    v = ds["values"]
    assert v["o_pg"] == 0 and v["T_gat"] > 0
    assert ds["result"] >= v["T_gat"] * (1 - 1e-12)  # the whole gather is in the exposed time
    meg = run("explain", *args[:-4], "--zero", 1, "--framework", "megatron", "--format",
              "json").json()
    assert meg["values"]["o_pg"] == 1
    # and in `step`: DeepSpeed ZeRO-2's exposed DP time minus the same layout with the gather
    # assumed hidden is the gather itself (T_gat < W_f here: hidden it leaves nothing)
    base = ("step", "llama-2-7b", "--nodes", 2, "--zero", 2, "--framework", "deepspeed",
            "--format", "json")
    whole = run(*base).json()
    hid = run(*base, "--assume", "dp_gather_overlap=1").json()
    assert v["T_gat"] < v["W_f"]
    assert whole["dp_comm_exposed_s"] - hid["dp_comm_exposed_s"] == pytest.approx(
        v["T_gat"], rel=1e-9)
