"""Error ranges (regimes.py) from validate's residuals per regime (issue 21)."""

from pathlib import Path

import pytest

from optimus_calc.regimes import ErrorRange, error_range, gpu_family, regime_for, regime_of
from optimus_calc.validate import residuals_text as generate
from optimus_calc.regimes import _residuals

SRC = Path(__file__).resolve().parents[1] / "src"


def test_residual_table_is_fresh():
    """regime_residuals.py is what `python -m optimus_calc.validate` writes from validate today."""
    path = SRC / "optimus_calc" / "regime_residuals.py"
    assert path.read_text() == generate(), "run: python -m optimus_calc.validate"


def test_regime_key(cat):
    assert gpu_family("a100-80gb") == gpu_family("a100-40gb") == "a100"
    dense, moe = cat.get("llama-2-7b", "model"), cat.get("mixtral-8x7b", "model")
    r = regime_of("h100-sxm", "megatron", "none", dense)
    assert (r.gpu_family, r.framework, r.offload, r.model_class) == ("h100", "megatron", "none",
                                                                     "dense")
    assert regime_of("h100-sxm", "megatron", "none", moe).model_class == "moe"
    # precision class (bf16 and fp16 share the 16-bit peak), sequence and scale bands at
    # their edges: 8K is the top of "<=8K", 32K of "8K-32K"; 16 nodes of "<=16 nodes"
    k = regime_for("h100-sxm", "megatron", "none", dense, "fp16", 8192, 16)
    assert (k.precision, k.seq_band, k.scale_band) == ("16-bit", "<=8K", "<=16 nodes")
    k = regime_for("h100-sxm", "megatron", "none", dense, "fp8", 8193, 17)
    assert (k.precision, k.seq_band, k.scale_band) == ("fp8", "8K-32K", ">16 nodes")
    assert regime_for("a100", "x", "none", dense, "bf16", 32769, 1).seq_band == ">32K"
    assert regime_for("a100", "x", "none", dense, "bf16", 32768, 1).scale_band == "1 node"


def _cv(rows):
    """The cross-validated residuals (in-sample where not refitted), as regimes.py reads them."""
    return [x[11] if x[11] is not None else x[10] for x in rows]


def test_a100_megatron_range_is_narayanans_rows_cross_validated(cat):
    model = cat.get("llama-2-7b", "model")
    # Narayanan's seven runs on more than 16 nodes at seq 2048: their LOSO residuals
    r = error_range("a100-80gb", ["megatron"], "none", model, seq_len=2048, nodes=64)
    rows = [x for x in _residuals() if x[0] == "4" and x[8] == ">16 nodes"]
    assert r.status == "public" and r.count == 7 == len(rows)
    # the prediction stays inside its own range: 0 joins the residuals
    assert (r.eps_low, r.eps_high) == (min(_cv(rows) + [0]), max(_cv(rows) + [0]))
    assert "cross-validated" in r.basis
    # one node: no public Megatron case on one A100 node, so the range widens to the worst
    # residual of the nearest regime (the scale band freed first: Narayanan's ten rows)
    one = error_range("a100-80gb", ["megatron"], "none", model, seq_len=2048, nodes=1)
    ten = [x for x in _residuals() if x[0] == "4"]
    worst = max(abs(e) for e in _cv(ten))
    assert one.status == "widened" and (one.eps_low, one.eps_high) == (-worst, worst)
    assert one.basis.startswith("no public case like this")
    assert error_range("a100-80gb", ["deepspeed"], "cpu", model).count == 2


def test_a100_long_context_and_b200_say_no_public_case(cat):
    model = cat.get("llama-3-8b", "model")
    # FlashAttention-2 on A100 past 8K tokens: no public row (FA2 Table 1 stops at 8k); the
    # band carries the kernel (regimes.seq_band), so MPT's six framework-neutral A100 rows at
    # 64K (FlashAttention-1's Triton port: 7B, 3B, 1B, 760M, 350M, 125M) vouch for fa1 only
    r = error_range("a100-80gb", ["torchtitan", "none"], "none", model, seq_len=131072,
                    nodes=1, kernel="fa2")
    assert r.status == "widened" and "seq >32K fa2" in r.basis
    fa1 = error_range("a100-80gb", ["none"], "none", model, seq_len=131072, nodes=1,
                      kernel="fa1")
    assert (fa1.status, fa1.count) == ("public", 6)
    b = error_range("b200", ["megatron"], "none", model, precision="bf16", seq_len=8192)
    assert b.status == "widened" and "no public case like this" in b.basis


def test_bounds_arithmetic():
    # eps (predicted / true step time - 1) from -2% to +2%: a predicted 100 s step is truly
    # 100 / 1.02 = 98.04 .. 100 / 0.98 = 102.04 s; a predicted rate 1000 is 980 .. 1020
    r = ErrorRange("public", -0.02, 0.02, 3, "3 public cases like this")
    assert r.bounds("step_time_s", 100) == pytest.approx((98.0392, 102.0408), rel=1e-5)
    assert r.bounds("tokens_per_s", 1000) == pytest.approx((980, 1020))
    assert r.text("step_time_s", 100) == "(-2% / +2%, 3 public cases like this)"
    none = ErrorRange("unvalidated", None, None, 0, "no public case like this")
    assert none.bounds("mfu", 0.5) == (None, None) and "unvalidated" in none.text("mfu", 0.5)


def test_step_plan_sweep_json_carry_ranges(run):
    price = ["--tokens", "1T", "--gpu-hour-price", "2"]
    meg = ["--framework", "megatron"]
    step = run("step", "llama-2-7b", "--nodes", "4", *meg, *price, "--format", "json").json()
    plan = run("plan", "llama-2-7b", "--top", "2", *meg, *price, "--format", "json").json()
    sweep = run("sweep", "--models", "llama-2-7b", "--nodes", "1", *meg, *price,
                "--format", "json").json()
    for d in (step, plan["recommended"], plan["candidates"][1], sweep["rows"][0]):
        for k in ("step_time_s", "tokens_per_s", "train_days", "cost_usd", "gpu_memory_bytes"):
            assert d[f"{k}_low"] <= d[k] <= d[f"{k}_high"], k
        assert d["error_range"] in ("public", "widened")
    # 4 A100 nodes at seq 4096 (llama-2-7b's): Narayanan's three runs on <= 16 nodes are at
    # seq 2048, the same band: the step time's range is theirs, cross-validated
    rows = [x for x in _residuals() if x[0] == "4" and x[8] == "<=16 nodes"]
    assert step["error_range"] == "public"
    assert step["step_time_s_high"] / step["step_time_s"] == pytest.approx(
        1 / (1 + min(_cv(rows) + [0])))
    csv = run("step", "llama-2-7b", "--format", "csv").out.splitlines()[0].split(",")
    assert "step_time_s_low" in csv and "tokens_per_s_high" in csv
    csv = run("sweep", "--models", "llama-2-7b", "--nodes", "1", "--format", "csv").out
    assert "step_time_s_low,step_time_s_high" in csv.splitlines()[0]


def test_b200_says_no_public_case(run):
    res = run("step", "llama70b", "--node", "dgx-b200", "--tp", "8", "--zero", "3")
    assert res.code == 0 and "no public case like this" in res.out
    d = run("step", "llama70b", "--node", "dgx-b200", "--tp", "8", "--zero", "3",
            "--format", "json").json()
    assert d["error_range"] == "widened"
    assert d["step_time_s_low"] < d["step_time_s"] < d["step_time_s_high"]


def test_a_frameworks_physics_is_vouched_for_by_its_own_rows_only(run):
    # Qwen3-30B-A3B EP 8 PP 2 on 2 DGX H100: Megatron-Bridge's five H100 MoE BF16 rows
    # (<= 16 nodes) match Megatron-LM's physics; DeepSpeed's physics (its 2-byte gradients, no
    # MoE host sync) has no public MoE row, so its range is widened, not "5 public cases"
    args = ("step", "qwen3-30b-a3b", "--node", "dgx-h100", "--nodes", "2", "--ep", "8", "--tp",
            "1", "--pp", "2", "--zero", "1", "--micro-batch", "1", "--global-batch", "64",
            "--format", "json", "--framework")
    mg = run(*args, "megatron").json()
    ds = run(*args, "deepspeed").json()
    assert (mg["error_range"], mg["error_range_basis"]) == (
        "public", "5 public cases like this, cross-validated")
    assert ds["error_range"] == "widened"
    assert "(h100 x deepspeed x offload none x moe" in ds["error_range_basis"]


def test_validate_prints_errors_per_regime(run):
    res = run("validate")
    assert "errors per regime" in res.out and "leave-one-source-out" in res.out
    doc = run("validate", "--format", "json").json()
    a100 = next(r for r in doc["regimes"] if r["regime"] == "a100 x megatron x offload none x "
                "dense x 16-bit x seq <=8K x >16 nodes" and r["kind"] == "throughput")
    assert a100["cases"] == 7 and a100["mean_abs_error"] < 0.05
    # every public row is a case or listed with its reason; the 150
    assert len(doc["cases"]) + len(doc["not_expressed"]) >= 150
    assert all(m["why"] for m in doc["not_expressed"])
    assert doc["cross_validated"]["rows"] >= 80


@pytest.mark.xdist_group("cold_start")  # the probe's process is test_cold_start.py's
def test_step_and_plan_do_not_run_validate():
    """Ranges come from the generated table: a `step` never imports the validate module (a
    fresh interpreter's `plan --format json`, then `memory`, then `step`)."""
    from test_cold_start import MACHINE, MACHINE_THEN_EXPLAIN, probe_sequence
    i = MACHINE.index(["step", "llama-2-7b", "--format", "json"])
    r = probe_sequence(MACHINE_THEN_EXPLAIN)[i]
    assert r["code"] == 0 and "optimus_calc.regimes" in r["ours"]  # the ranges were read
    assert "optimus_calc.validate" not in r["ours"], r["ours"]


def test_past_the_largest_public_run_no_case_vouches(run, cat):
    # the largest public case: the Llama 3 paper's 16,384 H100 (2,048 nodes of 8; Dubey et al.
    # 2024 Table 4); past it the scale band has no case, so the range is widened, not claimed
    from optimus_calc.public_cases import public_rows
    from optimus_calc.regimes import PUBLIC_MAX_GPUS, scale_band
    assert max(r.nodes * (r.gpus_per_node or cat.get(r.node, "node").gpus) for r in public_rows()
               if not r.why_not) == PUBLIC_MAX_GPUS == 16384
    assert (scale_band(2048, 16384), scale_band(2049, 16392)) == (">16 nodes", ">16384 GPUs")
    far = run("step", "llama70b", "--nodes", 125000, "--tp", 8, "--format", "json").json()
    assert far["error_range"] == "widened" and ">16384 GPUs" in far["error_range_basis"]
    near = run("step", "llama70b", "--nodes", 2000, "--tp", 8, "--format", "json").json()
    assert near["error_range"] == "public"


def test_past_the_longest_public_sequence_no_case_vouches(run):
    # NeMo's long-sequence rows reach 1,048,576 tokens (public_cases_long.py); a 10M-token step
    # said "6 public cases like this" from the >32K band (round 30's cold review)
    from optimus_calc.public_cases import public_rows
    from optimus_calc.regimes import PUBLIC_MAX_SEQ, seq_band
    assert max(r.seq for r in public_rows() if not r.why_not) == PUBLIC_MAX_SEQ == 1048576
    assert (seq_band(1048576, "fa2"), seq_band(1048577, "fa2")) == (">32K fa2", ">1024K fa2")
    args = ("step", "llama-2-7b", "--cp", 8, "--format", "json")
    far = run(*args[:2], "--seq-len", 10_000_000, *args[2:]).json()
    assert far["error_range"] == "widened" and "seq >1024K fa2" in far["error_range_basis"]
    assert run(*args[:2], "--seq-len", 65536, *args[2:]).json()["error_range"] == "public"
