"""Framework physics profiles (issue 19): --framework changes the numbers through named
parameters; the user's own values win; the planner evaluates each layout per framework."""

import pytest

from optimus_calc.equations.recording import eq
from optimus_calc.frameworks import plugin
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Precision, Training

BASE = ("memory", "llama70b", "--nodes", 2, "--tp", 4, "--zero", 3, "--offload", "cpu",
        "--format", "json")


def _mem(run, *extra):
    r = run(*BASE, *extra)
    assert r.code == 0, r.err
    return r.json()


def test_megatron_keeps_the_fp32_gradient_buffer_on_the_gpu(run):
    # Llama-3-70B (70.55e9 params) at TP 4 on 16 GPUs: P = 17.64e9 per GPU before ZeRO
    # (A/t + R, norms replicated); ZeRO-3 (Megatron-FSDP) shards the fp32 main grads over DP 4:
    # 4 B x 17.64e9 / 4 = 17.64 GB on the GPU (megatron/training/arguments.py L1204-1217,
    # hybrid_optimizer.py L100-115 @ d98e8a6). DeepSpeed moves its bf16 partition to the host.
    mg = _mem(run, "--framework", "megatron")
    ds = _mem(run, "--framework", "deepspeed")
    p = mg["per_gpu"]["params"]
    assert p == pytest.approx(17.64e9, rel=2e-3)
    assert mg["per_gpu"]["gradients_bytes"] == pytest.approx(4 * p / 4, rel=1e-9)
    assert mg["per_gpu"]["gradients_bytes"] == pytest.approx(17.64e9, rel=2e-3)
    assert ds["per_gpu"]["gradients_bytes"] == 0.0
    assert mg["training"]["bytes_per_param"]["gradients"] == 4
    assert ds["training"]["bytes_per_param"]["gradients"] == 2
    assert mg["physics_profile"]["framework"] == "megatron"
    assert "hybrid_optimizer.py" in mg["physics_profile"]["sources"]["grads_stay_on_gpu"]
    # 8.82 weights + 17.64 grads + activations and overheads: over the 76 GB usable of an A100
    assert not mg["fits"] and ds["fits"]


def test_auto_picks_the_first_framework_that_runs_the_layout(run):
    # DeepSpeed (registered first) rejects TP with ZeRO-3 (AutoTP); Megatron-LM runs it
    d = _mem(run, "--framework", "auto")
    assert d["physics_profile"]["framework"] == "megatron"
    assert "first registered framework" in d["physics_profile"]["why"]
    r = run(*BASE[:-2], "--framework", "auto")
    assert "framework: Megatron-LM profile" in r.out
    # without --framework: framework-neutral, and the header says who runs the layout
    d = _mem(run)
    assert d["physics_profile"]["framework"] is None
    assert d["per_gpu"]["gradients_bytes"] == 0.0
    assert "Megatron-LM" in d["physics_profile"]["why"]


def test_smartnic_what_if_is_framework_neutral(run):
    d = run("memory", "llama70b", "--nodes", 2, "--tp", 4, "--zero", 3, "--offload",
            "smartnic", "--framework", "auto", "--format", "json").json()
    assert d["physics_profile"]["framework"] is None
    assert d["training"]["bytes_per_param"]["gradients"] == 2
    assert "no framework runs" in d["physics_profile"]["why"]


def test_user_values_win_over_the_framework(run):
    d = _mem(run, "--framework", "megatron", "--grad-bytes", "2", "--assume",
             "grads_stay_on_gpu=0")
    assert d["per_gpu"]["gradients_bytes"] == 0.0
    assert d["training"]["bytes_per_param"]["gradients"] == 2
    assert set(d["physics_profile"]["user_values_kept"]) == {"grad_bytes", "grads_stay_on_gpu"}
    # --grad-bytes 2 alone: the buffer stays on the GPU, at 2 B: 17.64e9 x 2 / 4 = 8.82 GB
    d = _mem(run, "--framework", "megatron", "--grad-bytes", "2")
    assert d["per_gpu"]["gradients_bytes"] == pytest.approx(2 * d["per_gpu"]["params"] / 4)


def test_apply_keeps_typed_assumptions_unmarked():
    tr = Training(seq_len=4096, precision=Precision.BF16)
    asm = Assumptions(tp_overlap=0.25)
    tr2, asm2, applied, kept = plugin("megatron").profile.apply(tr, asm)
    assert tr2.gradient_bytes == 4 and asm2.grads_stay_on_gpu == 1.0
    assert asm2.tp_overlap == 0.25 and asm2.model_fields_set == {"tp_overlap"}
    # the profile's tp_overlap (--tp-comm-overlap, on by default) yields to the typed 0.25
    assert kept == ("tp_overlap",)
    assert {x.name for x in applied} >= {"grad_bytes", "dp_reduce_overlap"}
    # fp16: Megatron keeps fp16 main grads unless asked (only bf16 forces fp32)
    tr3, _, _, _ = plugin("megatron").profile.apply(
        Training(seq_len=4096, precision=Precision.FP16), asm)
    assert tr3.gradient_bytes == 2


def test_every_profile_value_is_a_valid_parameter_with_a_source():
    from optimus_calc.frameworks import plugins
    for p in plugins():
        for x in p.profile.settings:
            assert x.source and (" L" in x.source), (p.key, x.name)
            if x.name != "grad_bytes":
                Assumptions(**{x.name: x.value})  # in range


def test_megatron_hides_the_backward_tp_collectives(run):
    # step.tp_comm_time: per layer 2 forward + 2 backward collective pairs; Megatron's async
    # dgrad hides the backward's 2 (o_tb = 1): TP time halves without recompute, and with full
    # recompute falls from 2 + 2 + 2 to 2 + 2 units: x 4/6
    args = ("step", "llama70b", "--nodes", 2, "--tp", 8, "--zero", 1, "--no-tp-comm-overlap",
            "--format", "json")
    mg = run(*args, "--framework", "megatron").json()
    neutral = run(*args, "--framework", "megatron", "--assume", "tp_backward_overlap=0").json()
    assert mg["tp_comm_s"] == pytest.approx(0.5 * neutral["tp_comm_s"], rel=1e-9)
    rc = ("--recompute", "full")
    mg = run(*args, *rc, "--framework", "megatron").json()
    neutral = run(*args, *rc, "--framework", "megatron", "--assume",
                  "tp_backward_overlap=0").json()
    assert mg["tp_comm_s"] == pytest.approx(4 / 6 * neutral["tp_comm_s"], rel=1e-9)


def test_reduction_after_the_backward_is_exposed_whole():
    # ZeRO-1, 1 micro-batch: reduction 2 s in buckets of 0.5 s, backward window 3 s, gathers
    # 1 s hidden by a 10 s forward. Overlapped: max(0, 2 - 3) + min(2, 0.5) = 0.5 s; Megatron
    # without --overlap-grad-reduce (o_dr = 0): the whole 2 s.
    kw = dict(G_x=0.0, T_bkt=0.5, T_gat=1.0, T_red=2.0, W_b=3.0, W_f=10.0, Z=1, m=1, A_g=0.0, o_pg=1.0,
              r_z=0)
    assert float(eq.step__dp_exposed_time(o_dr=1.0, **kw)) == pytest.approx(0.5)
    assert float(eq.step__dp_exposed_time(o_dr=0.0, **kw)) == pytest.approx(2.0)


def test_zero3_reduction_shares_the_backward_link_with_the_gathers():
    # ZeRO-3, 2 micro-batches: the overlapped reduce-scatter is inside G_x (1 s, from
    # offload.zero3_exposed_gather_time); only the last 0.5 s bucket follows each backward:
    # 2 x (1 + 0.5) = 3 s. Reduced after the backward (o_dr = 0): 2 x (1 + 2) = 6 s.
    kw = dict(G_x=1.0, T_bkt=0.5, T_gat=1.0, T_red=2.0, W_b=3.0, W_f=10.0, Z=3, m=2, A_g=0.0, o_pg=1.0,
              r_z=0)
    assert float(eq.step__dp_exposed_time(o_dr=1.0, **kw)) == pytest.approx(3.0)
    assert float(eq.step__dp_exposed_time(o_dr=0.0, **kw)) == pytest.approx(6.0)


def test_plan_has_a_framework_column_and_rows_per_framework(run):
    r = run("plan", "llama70b", "--nodes", 2, "--tp", 4, "--dp", 4, "--zero", 3, "--offloads",
            "cpu", "--recompute", "none", "--micro-batch", 1, "--top", 10, "--framework", "each",
            "--format", "json")
    assert r.code == 0, r.err
    rows = r.json()["candidates"]
    by_fw = {c["framework"]: c for c in rows}
    # Megatron-DeepSpeed (DeepSpeed's engine: bf16 grads to the host) fits at 60.8 GB; the
    # same layout on Megatron-LM keeps 17.64 GB of fp32 grads on the GPU and does not fit
    assert "megatron-deepspeed" in by_fw
    assert by_fw["megatron-deepspeed"]["gpu_memory_bytes"] == pytest.approx(60.8e9, rel=5e-3)
    assert "megatron" not in by_fw
    text = run("plan", "llama70b", "--nodes", 2).out
    assert " framework " in text


def test_the_default_plan_evaluates_each_frameworks_physics(run):
    """`plan` defaults to --framework each: the headline TP4 DP4 ZeRO-3 + CPU layout of
    llama70b on 2 x DGX-A100 is never a Megatron-LM row, since Megatron-LM keeps the fp32
    gradient buffer on the GPU: 70.55e9 x 4 B / (TP 4 x DP 4) = 17.64 GB more, 80.3 GB against
    76 GB usable (test_megatron_keeps_the_fp32_gradient_buffer_on_the_gpu); the neutral
    search (--framework any) lists Megatron-LM among the frameworks that run it."""
    pins = ("--tp", 4, "--dp", 4, "--zero", 3, "--offloads", "cpu", "--no-offload-params",
            "--recompute", "none", "--micro-batch", 1, "--format", "json")
    each = run("plan", "llama70b", "--nodes", 2, *pins).json()["candidates"]
    assert each and all("megatron" != c["framework"] for c in each)
    assert any(c["framework"] == "megatron-deepspeed" for c in each)
    neutral = run("plan", "llama70b", "--nodes", 2, *pins, "--framework", "any").json()
    assert "megatron" in neutral["candidates"][0]["frameworks"]


def _ds_step(run, nodes, seq, mb, *extra):
    r = run("step", "llama-3-8b", "--node", "dgx-h100", "--nodes", nodes, "--zero", 3,
            "--micro-batch", mb, "--seq-len", seq, "--global-batch", 8 * nodes * mb,
            "--framework", "deepspeed", "--format", "json", *extra)
    assert r.code == 0, r.err
    return r.json()


def test_zero3_gathers_stop_hiding_at_hundreds_of_gpus(run):
    # Llama-3-8B, DeepSpeed ZeRO-3 over 384 H100 (48 nodes), 2,048 tokens per GPU. The ring
    # all-gather of each of the 288 submodules (32 layers x 9) pays 383 steps of latency:
    # (48 x 3 us + 336 x 1 us) / 384 x 383 = 479 us, plus 55.8 MB x 383/384 over the rails'
    # 8 x 50 GB/s x 0.9 = 0.15 ms: t_g = 0.63 ms against a forward of ~0.29 ms per module, so
    # the forward alone waits ~287 x 0.34 ms = 98 ms, the backward (gather + reduce-scatter
    # per module against ~0.58 ms of compute) ~60 ms more, and 2 x 288 x 50 us of fixed cost:
    # at least 0.18 s of DP time exposed per step, where one node (479 -> 7 us of latency)
    # exposes ~0.03 s.
    big, one = _ds_step(run, 48, 2048, 1), _ds_step(run, 1, 2048, 1)
    assert big["dp_comm_exposed_s"] > 0.18
    assert one["dp_comm_exposed_s"] < 0.05
    assert big["step_time_s"] / one["step_time_s"] > 1.5
    # 16,384 tokens per GPU: compute per module is 8x longer and the gathers hide again, as
    # torchtitan measures for FSDP on 8 and 128 H100 (5,762 vs 5,605 tokens/s/GPU, -2.7%;
    # benchmarks/llama3_h100_202412_torchtitan.md @ 73a0e69)
    big, one = _ds_step(run, 48, 8192, 2), _ds_step(run, 1, 8192, 2)
    assert big["step_time_s"] == pytest.approx(one["step_time_s"], rel=0.03)
