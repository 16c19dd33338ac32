"""Error ranges (regimes.py) from validate's residuals per regime (issue 21)."""

import subprocess
import sys
from pathlib import Path

import pytest

from optimus_calc.regimes import ErrorRange, error_range, gpu_family, regime_of
from optimus_calc.validate import residuals_source as generate
from optimus_calc.regime_residuals import RESIDUALS

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


def test_bounds_arithmetic():
    # eps (predicted / true step time - 1) from -2% to +2%: a predicted 100 s step is truly
    # 100 / 1.02 = 98.04 .. 100 / 0.98 = 102.04 s; a predicted rate 1000 is 980 .. 1020
    r = ErrorRange("public", -0.02, 0.02, 3, "3 public cases like this")
    assert r.bounds("step_time_s", 100) == pytest.approx((98.0392, 102.0408), rel=1e-5)
    assert r.bounds("tokens_per_s", 1000) == pytest.approx((980, 1020))
    assert r.text("step_time_s", 100) == "(-2% / +2%, 3 public cases like this)"
    none = ErrorRange("unvalidated", None, None, 0, "no public case like this")
    assert none.bounds("mfu", 0.5) == (None, None) and "unvalidated" in none.text("mfu", 0.5)


def test_a100_megatron_range_is_narayanans_ten_rows(cat):
    model = cat.get("llama-2-7b", "model")
    r = error_range("a100-80gb", ["megatron", "deepspeed"], "none", model)
    rows = [x for x in RESIDUALS if x[0] == "4"]
    assert r.count == 10 == len(rows)
    assert (r.eps_low, r.eps_high) == (min(x[7] for x in rows), max(x[7] for x in rows))
    # no framework that runs it has a public case: unvalidated
    assert error_range("a100-80gb", ["torchtitan"], "none", model).status == "unvalidated"
    assert error_range("b200", ["megatron"], "none", model).status == "unvalidated"
    assert error_range("a100-80gb", ["deepspeed"], "cpu", model).count == 2


def test_step_plan_sweep_json_carry_ranges(run):
    price = ["--tokens", "1T", "--gpu-hour-price", "2"]
    step = run("step", "llama-2-7b", *price, "--format", "json").json()
    # Megatron-LM's physics: Narayanan's A100 rows are its public cases
    meg = ["--framework", "megatron"]
    plan = run("plan", "llama-2-7b", "--top", "2", *meg, *price, "--format", "json").json()
    sweep = run("sweep", "--models", "llama-2-7b", "--nodes", "1", *meg, *price,
                "--format", "json").json()
    for d in (step, plan["recommended"], plan["candidates"][1], sweep["rows"][0]):
        for k in ("step_time_s", "tokens_per_s", "train_days", "cost_usd", "gpu_memory_bytes"):
            assert d[f"{k}_low"] <= d[k] <= d[f"{k}_high"], k
        assert d["error_range"] == "public"
    # the step time's range is Narayanan's: 1 + eps from 0.98 to 1.02
    assert step["step_time_s_high"] / step["step_time_s"] == pytest.approx(
        1 / (1 + min(x[7] for x in RESIDUALS if x[0] == "4")))
    # DeepSpeed's physics has no public A100 case without offload: unvalidated, no range
    # (the default plan's best llama-2-7b rows are Megatron-LM's since its profile runs the
    # recipes' overlaps, 0.2% ahead of DeepSpeed's)
    rec = run("plan", "llama-2-7b", "--top", "1", "--framework", "deepspeed", "--format",
              "json").json()["recommended"]
    assert rec["framework"].startswith("deepspeed") and rec["error_range"] == "unvalidated"
    assert rec["step_time_s_low"] is None
    csv = run("step", "llama-2-7b", "--format", "csv").out.splitlines()[0].split(",")
    assert "step_time_s_low" in csv and "tokens_per_s_high" in csv
    csv = run("sweep", "--models", "llama-2-7b", "--nodes", "1", "--format", "csv").out
    assert "step_time_s_low,step_time_s_high" in csv.splitlines()[0]


def test_b200_says_unvalidated(run):
    res = run("step", "llama70b", "--node", "dgx-b200", "--tp", "8", "--zero", "3")
    assert res.code == 0 and "unvalidated" in res.out
    d = run("step", "llama70b", "--node", "dgx-b200", "--tp", "8", "--zero", "3",
            "--format", "json").json()
    assert d["error_range"] == "unvalidated"
    assert d["step_time_s_low"] is None and d["step_time_s_high"] is None


def test_validate_prints_errors_per_regime(run):
    res = run("validate")
    assert "errors per regime" in res.out and "a100 x megatron x offload none x dense" in res.out
    regimes = run("validate", "--format", "json").json()["regimes"]
    a100 = next(r for r in regimes if r["regime"].startswith("a100 x megatron")
                and r["kind"] == "throughput")
    assert a100["cases"] == 10 and a100["mean_abs_error"] < 0.05


def test_step_and_plan_do_not_run_validate():
    """Ranges come from the generated table: a `step` never imports the validate module."""
    code = ("import sys; from optimus_calc.cli.main import main\n"
            "try:\n    main(['step', 'llama-2-7b', '--format', 'json'])\n"
            "except SystemExit: pass\n"
            "print('VALIDATE', 'optimus_calc.validate' in sys.modules, file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"})
    assert "VALIDATE False" in out.stderr, out.stderr
