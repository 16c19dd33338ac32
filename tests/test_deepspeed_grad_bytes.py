"""--grad-bytes on the DeepSpeed engine (plain DeepSpeed and Megatron-DeepSpeed): the layouts
where DeepSpeed @ edaa722 keeps fp32 gradients under a bf16/fp16 model, the rules refusing the
rest, and the keys the export writes for them.

What the source says (deepspeed/runtime/, read at edaa722):
- engine.py L1485-1496: grad_accum_dtype is the model dtype unless data_types.grad_accum_dtype
  is set; L1404-1417: communication_data_type is the model dtype (bf16/fp16) unless set.
- engine.py L1994-1996: bf16 + fp32 accumulation + ZeRO-1 + no CPU offload selects the
  BF16_Optimizer (fp32 gradient buffers, bf16_optimizer.py L176); every other ZeRO case the
  ZeRO optimizer (L1997); without ZeRO a model dtype other than grad_accum_dtype raises
  NotImplementedError (L2011-2021).
- zero/stage_1_and_2.py L361-364, L1678-1680: ZeRO-2's gradient partition is the model dtype;
  L1136-1140: stage 1 reduces its fp32 accumulation cast back to the model dtype.
- zero/stage3.py L742-744: ZeRO-3's gradient partitions are grad_accum_dtype, on the host with
  optimizer offload (L328).
"""

import json
from pathlib import Path

import pytest

from optimus_calc.frameworks import Framework, Reason, framework_support, layout_support
from optimus_calc.frameworks.deepspeed_export import deepspeed_config_dict
from optimus_calc.frameworks.exporting import ExportError
from optimus_calc.specs.training import Layout, Offload, Precision, Training

DS_TOP = json.loads((Path(__file__).parent / "data" / "framework_options.json")
                    .read_text())["deepspeed"]["top_level"]


@pytest.fixture
def m(cat):
    return cat.get("llama-3-70b", "model")


def _tr(grad_bytes=4, precision=Precision.BF16):
    return Training(seq_len=4096, global_batch=64, grad_bytes=grad_bytes, precision=precision)


def _ds(zero, offload=Offload.NONE, pp=1, tp=1, precision="bf16", grad_bytes=4):
    s = framework_support(tp, pp, 16 // (pp * tp), 1, 1, zero, list(Offload).index(offload),
                          False, 1, 1, True, 0, heads=64, n_kv=8, experts=0, layers=80,
                          precision=precision, grad_bytes=grad_bytes)
    return Reason(int(s.reason[Framework.DEEPSPEED]))


def test_rules_leave_zero1_bf16_and_zero3_without_offload():
    assert _ds(1) is Reason.OK and _ds(3) is Reason.OK
    assert _ds(1, pp=2) is Reason.OK  # the pipeline engine reduces through the BF16 optimizer
    assert _ds(3, precision="fp16") is Reason.OK
    assert _ds(0) is Reason.DS_GRAD_FP32_ZERO0
    assert _ds(0, pp=2) is Reason.DS_GRAD_FP32_ZERO0
    assert _ds(2) is Reason.DS_GRAD_FP32_ZERO2
    assert _ds(1, Offload.CPU) is Reason.DS_GRAD_FP32_OFFLOAD
    assert _ds(3, Offload.CPU) is Reason.DS_GRAD_FP32_OFFLOAD
    assert _ds(3, Offload.NVME) is Reason.DS_GRAD_FP32_OFFLOAD
    assert _ds(1, precision="fp16") is Reason.DS_GRAD_FP32_FP16_ZERO1


def test_rules_ignore_the_model_dtype_and_untyped_gradients():
    for zero in range(4):
        assert _ds(zero, grad_bytes=0) is Reason.OK      # untyped: the profile's 2 bytes
        assert _ds(zero, grad_bytes=2) is Reason.OK      # bf16 gradients, DeepSpeed's default
        assert _ds(zero, precision="fp32", grad_bytes=4) is Reason.OK  # an fp32 model's own
    # neither the model's bytes nor fp32 under a 16-bit model: every layout
    assert _ds(3, grad_bytes=3) is Reason.DS_GRAD_BYTES
    assert _ds(1, precision="fp32", grad_bytes=2) is Reason.DS_GRAD_BYTES


def test_megatron_deepspeed_shares_the_rows(m):
    tr = _tr()
    lay = Layout(tp=2, pp=2, dp=4, zero=1)  # TP with PP: Megatron-DeepSpeed only
    sup = layout_support(lay, tr, m)
    assert sup[Framework.MEGATRON_DEEPSPEED] is Reason.OK
    assert layout_support(Layout(tp=2, pp=2, dp=4, zero=0), tr, m)[
        Framework.MEGATRON_DEEPSPEED] is Reason.DS_GRAD_FP32_ZERO0
    assert layout_support(lay, _tr(), m)[Framework.MEGATRON] is Reason.OK  # not its row


def test_zero1_bf16_export_writes_fp32_accumulation_and_reduction(m):
    cfg = deepspeed_config_dict(Layout(tp=1, pp=1, dp=16, zero=1), _tr(), m)
    assert cfg["data_types"] == {"grad_accum_dtype": "fp32"}  # runtime/config.py L896
    assert cfg["communication_data_type"] == "fp32"           # runtime/config.py L209-223
    assert {"data_types", "communication_data_type"} <= set(DS_TOP)
    assert cfg["bf16"] == {"enabled": True} and cfg["zero_optimization"]["stage"] == 1
    note = next(n for n in cfg["_launch"]["notes"] if n.startswith("--grad-bytes 4"))
    assert "BF16_Optimizer" in note and "runtime/engine.py L1994-1996" in note


def test_zero3_export_and_megatron_deepspeed(m):
    cfg = deepspeed_config_dict(Layout(tp=1, pp=1, dp=16, zero=3), _tr(), m)
    assert cfg["data_types"]["grad_accum_dtype"] == "fp32"
    assert cfg["communication_data_type"] == "fp32"
    assert any("runtime/zero/stage3.py L742-744" in n for n in cfg["_launch"]["notes"])
    md = deepspeed_config_dict(Layout(tp=2, pp=2, dp=4, zero=1), _tr(), m)
    assert md["_launch"]["launcher"].startswith("Megatron-DeepSpeed")
    assert md["data_types"] == {"grad_accum_dtype": "fp32"} and "--bf16" in \
        md["_launch"]["command"]


@pytest.mark.parametrize("grad_bytes,precision", [(0, Precision.BF16), (2, Precision.BF16),
                                                  (4, Precision.FP32)])
def test_model_dtype_gradients_write_no_key(m, grad_bytes, precision):
    cfg = deepspeed_config_dict(Layout(tp=1, pp=1, dp=16, zero=1), _tr(grad_bytes, precision),
                                m)
    assert "data_types" not in cfg and "communication_data_type" not in cfg


@pytest.mark.parametrize("lay,where", [
    (Layout(tp=1, pp=1, dp=16, zero=0), "runtime/engine.py L2011-2021"),
    (Layout(tp=1, pp=1, dp=16, zero=2), "runtime/zero/stage_1_and_2.py L361-364, L1678-1680"),
    (Layout(tp=1, pp=1, dp=16, zero=3, offload=Offload.CPU), "runtime/zero/stage3.py L328"),
    (Layout(tp=1, pp=1, dp=16, zero=1, offload=Offload.CPU), "runtime/engine.py L1994-1996"),
], ids=["zero0", "zero2", "zero3-offload", "zero1-offload"])
def test_export_refuses_what_deepspeed_runs_in_the_model_dtype(m, lay, where):
    with pytest.raises(ExportError) as e:
        deepspeed_config_dict(lay, _tr(), m)
    msg = str(e.value)
    assert "--grad-bytes 4" in msg and where in msg and "\n" not in msg


def test_export_refuses_fp16_zero1(m):
    with pytest.raises(ExportError, match=r"fp16 at ZeRO-1.*stage_1_and_2\.py L1136-1140"):
        deepspeed_config_dict(Layout(tp=1, pp=1, dp=16, zero=1), _tr(4, Precision.FP16), m)


def test_plan_picks_a_layout_deepspeed_runs_and_exports_it(run, tmp_path):
    args = ("plan", "llama70b", "--nodes", 4, "--framework", "deepspeed", "--grad-bytes", 4)
    r = run(*args, "--format", "json")
    assert r.code == 0, r.err
    lay = r.json()["recommended"]
    # ZeRO-1 does not fit: plain DeepSpeed has no TP with PP, so at best AutoTP 8 x DP 4 holds
    # (2 B weights + 4 B fp32 gradients) x 70.55 B / 8 = 52.9 GB and Adam's 12 B x 70.55 B /
    # (8 x 4) = 26.5 GB, 79.4 GB > 76 GB usable before any activation: ZeRO-3 it is
    assert lay["zero"] == 3 and lay["offload"] == "none"
    out = tmp_path / "ds.json"
    assert run(*args, "--export", "deepspeed", "-o", out).code == 0
    cfg = json.loads(out.read_text())
    assert cfg["zero_optimization"]["stage"] == lay["zero"]
    assert cfg["data_types"] == {"grad_accum_dtype": "fp32"}
    assert cfg["communication_data_type"] == "fp32"


def test_plan_with_only_refused_stages_is_a_one_line_error(run):
    r = run("plan", "llama70b", "--nodes", 4, "--framework", "deepspeed", "--grad-bytes", 4,
            "--zero", 2, "--pp", 1, "--export", "deepspeed")
    assert r.code == 2
    assert "--grad-bytes 4" in r.err and "stage_1_and_2.py L361-364, L1678-1680" in r.err


def test_bf16_optimizer_all_reduces_the_fp32_gradients(run):
    """DeepSpeed's BF16_Optimizer (bf16, --grad-bytes 4, ZeRO-1) reduces the fp32 gradients
    with buffered_allreduce_fallback (engine.py L3784-3794): an all-reduce, twice a ring
    reduce-scatter's steps. With the per-step alpha model (nccl_latency_model=0), Llama 3 8B
    (8,030,261,248 parameters) on one DGX H100, DP 8: 32,121,044,992 gradient bytes in 17
    buckets of DeepSpeed's 5e8 elements; a reduce-scatter is 17 x 7 x (1 us + z / (8 x 369
    GB/s)) = 0.0762868 s (NVLink4 369 GB/s effective, catalog), and the all-reduce adds
    exactly that again to dp_comm_s."""
    base = ("step", "llama-3-8b", "--node", "dgx-h100", "--nodes", 1, "--zero", 1, "--tp", 1,
            "--pp", 1, "--framework", "deepspeed", "--grad-bytes", 4, "--assume",
            "nccl_latency_model=0", "--format", "json")
    ar = run(*base).json()
    rs = run(*base, "--assume", "zero1_grad_all_reduce=0").json()
    assert ar["physics_profile"]["applied"]["zero1_grad_all_reduce"] == 1
    t_rs = 7 * (17e-6 + 8_030_261_248 * 4 / (8 * 369e9))
    assert ar["dp_comm_s"] - rs["dp_comm_s"] == pytest.approx(t_rs, rel=1e-6)
    # without --grad-bytes 4 DeepSpeed runs its ZeRO-1 optimizer: no all-reduce
    plain = run(*base[:-6], "--format", "json").json()
    assert "zero1_grad_all_reduce" not in plain["physics_profile"]["applied"]


def test_pipeline_engine_reduces_after_the_flush(run):
    """DeepSpeed's pipeline engine turns overlap_comm off (engine.py L2390-2393) and reduces
    the gradients after the schedule's last step (pipe/schedule.py L237-241: ReduceTiedGrads,
    ReduceGrads, OptimizerStep): with PP > 1 none of the reduction hides (o_dr 0). ZeRO-1 on
    two DGX H100, PP 2: DeepSpeed's bf16 gradients and bf16 parameters move the same bytes, so
    the reduction is half of dp_comm_s; the gather runs inside step(), before the next forward
    (stage_1_and_2.py L2393-2401), so the exposed DP time is all of dp_comm_s; --assume
    dp_reduce_after_pipeline=0 hides all of the reduction but its last bucket."""
    base = ("step", "llama-3-8b", "--node", "dgx-h100", "--nodes", 2, "--tp", 1, "--pp", 2,
            "--zero", 1, "--framework", "deepspeed", "--global-batch", 64, "--assume",
            "nccl_latency_model=0", "--format", "json")
    d = run(*base).json()
    assert d["physics_profile"]["applied"]["dp_reduce_after_pipeline"] == 1
    assert d["dp_comm_exposed_s"] == pytest.approx(d["dp_comm_s"], rel=1e-9)
    hidden = run(*base, "--assume", "dp_reduce_after_pipeline=0").json()
    gather = d["dp_comm_s"] / 2
    assert hidden["dp_comm_exposed_s"] - gather < gather / 5
