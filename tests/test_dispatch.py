"""Exhaustive Enum dispatch: every closed set that the code dispatches on is an Enum whose
dispatch ends in ``typing.assert_never``; the tests below call each dispatch site once per
member, so a member added without a branch fails here (assert_never raises at run time) and
not in a user's hands."""

import json

import pytest

from optimus_calc.evaluate.context import resolve_hardware
from optimus_calc.evaluate.strategies import offload_device_name
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Layout, Offload, Optimizer, Recompute, Training, ZeroStage


# ---- Objective ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def small_plans(cat):
    from optimus_calc.search.passes import Objective
    from optimus_calc.search.plan import plan
    m = cat.get("llama-2-7b", "model")
    hw = resolve_hardware(cat, "dgx-a100", 1)
    base = Training(seq_len=2048, global_batch=64)
    return {o: plan(m, hw, base, Assumptions(), o, 50) for o in Objective}


def test_every_objective_ranks_by_its_key(small_plans):
    from optimus_calc.search.passes import Objective
    for obj, res in small_plans.items():
        key = ((lambda c: (c.gpu_bytes, -c.tokens_per_s)) if obj is Objective.MEMORY else
               (lambda c: (-c.tokens_per_s, c.gpu_bytes)))
        assert res.objective is obj and len(res.top) == 50
        keys = [key(c) for c in res.top]
        # the top K is in rank order, and the recommendation is the first
        assert keys == sorted(keys) and res.recommended is res.top[0]
    t, m = small_plans[Objective.THROUGHPUT], small_plans[Objective.MEMORY]
    assert t.recommended.tokens_per_s >= m.recommended.tokens_per_s
    assert m.recommended.gpu_bytes <= t.recommended.gpu_bytes
    assert m.recommended.gpu_bytes < t.recommended.gpu_bytes  # the two objectives differ here
    assert small_plans[Objective.MEMORY].why.startswith("least GPU memory of")
    assert small_plans[Objective.THROUGHPUT].why.startswith("most tokens/s of")
    assert small_plans[Objective.TIME].why.startswith("shortest time to train of")
    assert small_plans[Objective.COST].why.startswith("cheapest to train of")
    # a plan's GPUs are fixed: time and cost to train rank exactly as throughput
    for o in (Objective.TIME, Objective.COST):
        assert [c.layout for c in small_plans[o].top] == [c.layout for c in t.top]


def test_objective_accepts_its_values_and_rejects_others(cat):
    from optimus_calc.search.passes import Objective
    from optimus_calc.search.plan import plan
    assert [o.value for o in Objective] == ["throughput", "time", "memory", "cost"]
    m = cat.get("llama-2-7b", "model")
    hw = resolve_hardware(cat, "dgx-a100", 1)
    with pytest.raises(ValueError):
        plan(m, hw, Training(seq_len=2048, global_batch=64), Assumptions(), "speed", 1)


# ---- Format ---------------------------------------------------------------------------------

def test_every_format_renders():
    from optimus_calc.report.document import Column, Document, Table
    from optimus_calc.report.formats import Format, render
    doc = Document(title="t", data={"x": 1.5, "o": Offload.CPU},
                   tables=[Table(title="", columns=[Column("a", "A", ".1f"), Column("b", "B")],
                                 rows=[{"a": 2.25, "b": Offload.NVME}])])
    out = {f: render(doc, f) for f in Format}
    assert json.loads(out[Format.JSON]) == {"x": 1.5, "o": "cpu"}
    head, row = out[Format.CSV].splitlines()
    assert head == "a,b" and float(row.split(",")[0]) == 2.25 and row.split(",")[1] == "nvme"
    assert out[Format.TABLE].startswith("t\n") and "2.2" in out[Format.TABLE] \
        and "nvme" in out[Format.TABLE]
    assert out[Format.HTML].startswith("<!DOCTYPE html>") and ">2.2<" in out[Format.HTML] \
        and ">nvme<" in out[Format.HTML]
    assert len(out) == len(Format) == 4


# ---- Offload --------------------------------------------------------------------------------

def test_offload_device_name_for_every_target(cat):
    hw = resolve_hardware(cat, "dgx-a100", 1)
    names = {o: offload_device_name(o, hw) for o in Offload}
    assert names == {Offload.NONE: "none", Offload.CPU: "host RAM (2 x epyc-7742)",
                     Offload.NVME: "NVMe intel-d7-p5600", Offload.SMARTNIC: "SmartNIC bluefield-3",
                     Offload.SUPERCHIP: "epyc-7742 memory"}
    gh = resolve_hardware(cat, "gh200", 1)  # no NVMe drive type in the catalog entry
    assert offload_device_name(Offload.NVME, gh) == "NVMe drive"


def test_optimizer_device_for_every_target(cat):
    from optimus_calc.evaluate.step import optimizer_device
    hw = resolve_hardware(cat, "dgx-a100", 1)
    got = {o: optimizer_device(hw, Layout(dp=8, offload=o)) for o in Offload}
    assert got == {Offload.NONE: "a100-80gb", Offload.CPU: "2 x epyc-7742",
                   Offload.NVME: "2 x epyc-7742", Offload.SMARTNIC: "8 x bluefield-3 per node",
                   Offload.SUPERCHIP: "epyc-7742 (NVLink-C2C)"}
    assert optimizer_device(hw, Layout(dp=8, offload=Offload.SMARTNIC, smartnics_per_node=2)) \
        == "2 x bluefield-3 per node"


def _candidate(offload=Offload.NONE, recompute=Recompute.NONE, zero=ZeroStage.OS, tp=2, pp=2,
               dp=2):
    from optimus_calc.search.plan import Candidate
    lay = Layout(tp=tp, pp=pp, dp=dp, zero=zero, offload=offload,
                 smartnic="bluefield-3" if offload is Offload.SMARTNIC else None)
    tr = Training(seq_len=4096, micro_batch=2, global_batch=64, recompute=recompute)
    return Candidate(lay, tr, 1e9, 1.0, 0.5, 1e5)


def test_param_offload_target_for_every_offload_member():
    from optimus_calc.errors import InputError
    from optimus_calc.evaluate.offload_step import param_offload_traffic
    kw = dict(dp=1, micro_batches=1, link_GBps=10.0, link_eff=1.0, compute_per_microbatch_s=0.0,
              asm=Assumptions())
    for o in Offload:
        if o in (Offload.CPU, Offload.NVME):
            r = param_offload_traffic(1e9, target=o, **kw)
            # 1e9 params x 2 bytes, fetched in the forward and the backward: 4e9 bytes
            assert float(r.bytes_per_step) == pytest.approx(4e9)
            assert r.stream_s > 0
        else:
            with pytest.raises(InputError, match=f"'{o.value}': expected cpu or nvme"):
                param_offload_traffic(1e9, target=o, **kw)
    # the strings stay accepted and give the same numbers
    assert float(param_offload_traffic(1e9, target="cpu", **kw).stream_s) == \
        float(param_offload_traffic(1e9, target=Offload.CPU, **kw).stream_s)


# ---- Recompute ------------------------------------------------------------------------------

def test_megatron_export_for_every_recompute_mode(cat):
    from optimus_calc.report.plan_view import megatron_args
    m = cat.get("llama-2-7b", "model")
    got = {r: megatron_args(_candidate(recompute=r), m) for r in Recompute}
    assert "--recompute" not in got[Recompute.NONE]
    assert "--recompute-granularity selective" in got[Recompute.SELECTIVE]
    assert "--recompute-granularity full" in got[Recompute.FULL] and \
        "--recompute-method uniform" in got[Recompute.FULL]
    for text in got.values():
        assert "--tensor-model-parallel-size 2" in text and "--use-distributed-optimizer" in text


# ---- Export ---------------------------------------------------------------------------------

def test_every_export_target(cat):
    from optimus_calc.frameworks import Export
    from optimus_calc.report.plan_view import export_text
    m = cat.get("llama-2-7b", "model")
    # a layout each framework runs: DeepSpeed ZeRO-1 without pipelining, Megatron-LM TP 2 PP 2
    # with its distributed optimizer, torchtitan FSDP2 (ZeRO-3)
    layouts = {Export.DEEPSPEED: _candidate(tp=1, pp=1, dp=8),
               Export.MEGATRON: _candidate(),
               Export.TORCHTITAN: _candidate(zero=ZeroStage.OS_G_P, tp=1, pp=1, dp=8)}
    # torchtitan builds only its registered flavours: llama-3-8b is its llama3 "8B"
    models = {e: cat.get("llama-3-8b", "model") if e is Export.TORCHTITAN else m for e in Export}
    out = {e: export_text(e, layouts[e], models[e], 8) for e in Export}
    assert json.loads(out[Export.DEEPSPEED])["train_micro_batch_size_per_gpu"] == 2
    assert "--tensor-model-parallel-size 2" in out[Export.MEGATRON]
    assert out[Export.TORCHTITAN].startswith("# torchtitan")
    assert len(out) == len(Export) == 3


def test_export_on_the_command_line(run, tmp_path):
    r = run("plan", "llama-2-7b", "--seq-len", "2048", "--global-batch", "64",
            "--export", "megatron")
    assert r.code == 0 and "--seq-length 2048" in r.out and "--global-batch-size 64" in r.out
    p = tmp_path / "ds.json"
    # DeepSpeed's own physics: the Megatron-LM profile's TP overlap makes a TP 8 layout the
    # best of all frameworks, which DeepSpeed runs as AutoTP with a 512-sequence batch
    r = run("plan", "llama-2-7b", "--seq-len", "2048", "--global-batch", "64",
            "--framework", "deepspeed", "--export", "deepspeed", "-o", p)
    assert r.code == 0 and r.out == "" and json.loads(p.read_text())["train_batch_size"] == 64


# ---- Solve (fit) ----------------------------------------------------------------------------

def test_every_solve_kind(run):
    from optimus_calc.analyses.fit import Solve
    keys = {Solve.LAYERS: "max_layers", Solve.NODES: "min_nodes",
            Solve.MICRO_BATCH: "max_micro_batch"}
    for s in Solve:
        d = run("fit", "llama-2-7b", "--solve", s.value, "--zero", "1", "--format",
                "json").json()
        assert d["solve"] == s.value and d[keys[s]] >= 1, d
    # 7B on one DGX A100 (ZeRO-1 over 8 GPUs) fits: one node is the fewest
    assert run("fit", "llama-2-7b", "--solve", "nodes", "--zero", "1", "--format",
               "json").json()["min_nodes"] == 1


# ---- Impl, Dtype ------------------------------------------------------------------------------

def test_bytes_per_param_for_every_impl_and_optimizer():
    from optimus_calc.evaluate.optimizer import Impl, bytes_per_param
    got = {(i, o): bytes_per_param(o, i, 2) for i in Impl for o in Optimizer}
    # fused Adam: 12 read + 12 written + 2 (16-bit copy) + 2 (gradient) = 28; SGD 8+8+2+2 = 20;
    # torch.optim Adam op by op 72, SGD 32 (evaluate/optimizer.py bytes_per_param)
    assert got == {(Impl.FUSED, Optimizer.ADAM): 28.0, (Impl.FUSED, Optimizer.ADAMW): 28.0,
                   (Impl.FUSED, Optimizer.SGD): 20.0, (Impl.PYTORCH, Optimizer.ADAM): 72.0,
                   (Impl.PYTORCH, Optimizer.ADAMW): 72.0, (Impl.PYTORCH, Optimizer.SGD): 32.0}


def test_flops_per_s_for_every_dtype(cat):
    from optimus_calc.specs.hardware import Dtype
    peak = cat.get("h100-sxm", "gpu").peak_TFLOPS
    got = {d: peak.flops_per_s(d) for d in Dtype}
    assert got == {Dtype.FP64: 34e12, Dtype.FP32: 67e12, Dtype.TF32: 494.5e12,
                   Dtype.BF16: 989e12, Dtype.FP16: 989e12, Dtype.FP8: 1979e12,
                   Dtype.FP4: 0.0}  # Hopper has no FP4 tensor cores


# ---- Precision, Optimizer in the exports ----------------------------------------------------

def test_exports_for_every_precision_and_optimizer(cat):
    from dataclasses import replace

    from optimus_calc.frameworks.exporting import ExportError
    from optimus_calc.report.plan_view import deepspeed_config, megatron_args
    from optimus_calc.specs.training import Precision
    m = cat.get("llama-2-7b", "model")
    for p in Precision:
        for o in Optimizer:
            c = _candidate(tp=1, pp=1, dp=8)
            c = replace(c, training=c.training.model_copy(update={"precision": p,
                                                                  "optimizer": o}))
            meg = megatron_args(c, m, 8)
            if p in (Precision.FP8, Precision.NVFP4):  # DeepSpeed has neither (rule DS_FP8)
                with pytest.raises(ExportError, match="no FP8 or NVFP4 training switch"):
                    deepspeed_config(c, m)
                assert "--bf16" in meg
                if p is Precision.FP8:
                    assert "--fp8-format hybrid" in meg
                    assert "--fp8-recipe delayed" in meg  # the default recipe, te-delayed
                else:  # TransformerConfig.fp4 / fp4_recipe, transformer_config.py L671-681
                    assert "--fp4-format e2m1" in meg and "--fp4-recipe nvfp4" in meg
                continue
            ds = json.loads(deepspeed_config(c, m))
            # DeepSpeed: bf16 / fp16 sections, none for fp32; its optimizer type names
            assert ("bf16" in ds) == (p is Precision.BF16)
            assert ("fp16" in ds) == (p is Precision.FP16)
            assert ds["optimizer"]["type"] == {Optimizer.ADAM: "Adam", Optimizer.ADAMW: "AdamW",
                                               Optimizer.SGD: "SGD"}[o]
            assert ("--bf16" in meg) == (p is Precision.BF16)
            assert ("--fp16" in meg) == (p is Precision.FP16)
            assert ("--optimizer sgd" in meg) == (o is Optimizer.SGD)


# ---- Goal (breakeven) ---------------------------------------------------------------------------

def test_breakeven_view_for_every_goal():
    from types import SimpleNamespace

    from optimus_calc.analyses.breakeven.case import Goal
    from optimus_calc.report import breakeven_view as V
    from optimus_calc.specs.training import Offload
    st = SimpleNamespace(offload_bytes_per_device=2e9, offload_capacity_per_device=32e9,
                         optimizer_s=0.5, offload_transfer_s=0.25, window_s=1.0,
                         optimizer_exposed_s=0.0, step_time_s=3.0, pipeline_s=0.75,
                         gradient_in_s=0.125, weights_out_s=0.125, layers=4.0)
    for g in Goal:
        case = SimpleNamespace(layout=SimpleNamespace(offload=Offload.SMARTNIC))
        res = SimpleNamespace(goal=g, margin=1e9 if g is Goal.FIT else 0.25, state=st,
                              reference_s=2.0, case=case)
        cols = [c.key for c in V._now_columns(g)]
        text = V.now_text(res)
        if g is Goal.FIT:
            assert V.margin_text(res) == "+1 GB" and cols == ["state", "capacity"]
            assert text.startswith("2 GB of optimizer state per device, capacity 32 GB")
        else:
            assert V.margin_text(res) == "+0.25 s"
            assert cols[:3] == ["opt", "xfer", "window"]
            assert ("step" in cols) == (g is Goal.MATCH)
            assert ("vs reference 2 s" in text) == (g is Goal.MATCH)
