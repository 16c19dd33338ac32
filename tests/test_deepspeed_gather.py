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


def test_zero0_all_reduce_follows_the_backward_on_deepspeed(run):
    """DeepSpeed at ZeRO-0 (the DDP_BFLOAT16 / FP16 wrapper, no ZeRO optimizer) all-reduces in
    _backward_epilogue, after the whole backward: allreduce_gradients ->
    buffered_allreduce_fallback (engine.py L2891-2914, L2970-2982 @ edaa722); no hook overlaps
    it (PyTorch DDP and Megatron-LM's DDP do). ZeRO-0 has no gather (step.dp_comm_time:
    T_red + T_gat with T_gat 0), so the exposed DP time is the whole reduction; it showed only
    the last bucket. Framework-neutral keeps the overlapped buckets."""
    base = ("step", "llama-2-7b", "--nodes", 2, "--zero", 0, "--format", "json")
    ds = run(*base, "--framework", "deepspeed").json()
    assert ds["physics_profile"]["applied"]["dp_reduce_after_backward"] == 1
    assert ds["dp_comm_exposed_s"] == pytest.approx(ds["dp_comm_s"], rel=1e-9)
    neutral = run(*base).json()
    assert neutral["dp_comm_s"] == pytest.approx(ds["dp_comm_s"], rel=1e-9)
    assert neutral["dp_comm_exposed_s"] < neutral["dp_comm_s"] / 10
    e = run("explain", "step.dp_exposed_time", *base[1:-2], "--framework", "deepspeed",
            "--format", "json").json()
    assert e["values"]["o_dr"] == 0 and e["values"]["Z"] == 0


def test_pipeline_bf16_without_zero_is_the_bf16_optimizer(cat):
    """DeepSpeed's engine picks its BF16_Optimizer for bf16 in the pipeline engine when the
    gradients accumulate in bf16 and ZeRO is off (runtime/engine.py L2014-2018 @ edaa722), and
    that optimizer partitions the fp32 weights and Adam state over DP (bf16_optimizer.py
    L161-171) and keeps a gradient buffer (L176): ZeRO-1's memory, not the ZeRO-0 replicas the
    plan counted (12 bytes per parameter of the stage where DP 4 holds 3). DS_PIPE_BF16_ZERO0
    refuses the ZeRO-0 layout on DeepSpeed and
    Megatron-DeepSpeed; fp16 (FP16_Optimizer, unpartitioned), PP 1, ZeRO-1 and fp32 gradients
    (DS_GRAD_FP32_ZERO0, the engine's NotImplementedError) keep their answers."""
    from optimus_calc.frameworks import Framework, Reason, layout_support
    from optimus_calc.specs.training import Layout, Training
    m = cat.get("llama-2-7b", "model")
    tr = Training(seq_len=4096, global_batch=64)
    pp0 = Layout(tp=1, pp=2, dp=4, zero=0)
    for f in (Framework.DEEPSPEED, Framework.MEGATRON_DEEPSPEED):
        assert layout_support(pp0, tr, m)[f] is Reason.DS_PIPE_BF16_ZERO0
    assert layout_support(pp0, Training(seq_len=4096, global_batch=64, precision="fp16"), m)[
        Framework.DEEPSPEED] is Reason.OK
    assert layout_support(Layout(tp=1, pp=2, dp=4, zero=1), tr, m)[Framework.DEEPSPEED] \
        is Reason.OK
    assert layout_support(Layout(tp=1, pp=1, dp=8, zero=0), tr, m)[Framework.DEEPSPEED] \
        is Reason.OK
    assert layout_support(pp0, Training(seq_len=4096, global_batch=64, grad_bytes=4), m)[
        Framework.DEEPSPEED] is Reason.DS_GRAD_FP32_ZERO0
