"""Framework fixed costs (issue 19 "Scale and size", issue 21 "the framework's fixed costs"):
Assumptions.step_fixed_s / layer_fixed_s, the registered step.fixed_time term of step.time, and
`calibrate` fitting them from runs that differ in work per step."""

import pytest

RUNS = [("16", "1", "1"), ("64", "2", "1"), ("32", "1", "2")]   # global batch, micro-batch, tp
HELD_OUT = ["--global-batch", "128", "--micro-batch", "2", "--tp", "2"]


def step_json(run, *args):
    res = run("step", *args, "--node", "dgx-a100", "--format", "json")
    assert res.code == 0, res.err
    return res.json()


def test_fixed_time_adds_per_step_and_per_layer_micro_batch(run):
    base = step_json(run, "llama-2-7b")
    fixed = step_json(run, "llama-2-7b", "--assume", "step_fixed_s=0.3",
                      "--assume", "layer_fixed_s=0.001")
    assert base["fixed_s"] == 0 and base["breakdown"]["fixed_s"] == 0
    # llama-2-7b: 32 layers; global batch 512 / (micro-batch 1 x DP 8) = 64 micro-batches:
    # 0.3 + 0.001 x 32 x 64 = 2.348 s, added to the step and nothing else
    assert fixed["fixed_s"] == pytest.approx(2.348, rel=1e-9)
    assert fixed["step_time_s"] - base["step_time_s"] == pytest.approx(2.348, rel=1e-9)
    assert fixed["compute_s"] == base["compute_s"]
    table = run("step", "llama-2-7b", "--node", "dgx-a100", "--assume", "step_fixed_s=0.3").out
    assert "fixed costs (per step, layer, MoE host sync)" in table and "step.fixed_time" in table
    res = run("explain", "step.fixed_time", "llama-2-7b", "--node", "dgx-a100",
              "--assume", "step_fixed_s=0.3")
    assert res.code == 0 and "assumed" in res.out and "0.3" in res.out


def test_calibrate_fits_a_per_step_fixed_cost(run, tmp_path):
    """Measured = today's prediction + 0.3 s (a framework's per-step host work): small steps
    (0.36-1.8 s of gpt-1.7b) of different work per step tell the constant apart from the GEMM
    efficiency; the profile gives step_fixed_s ~ 0.3 s and predicts a held-out layout."""
    lines = ["model,node,global_batch,micro_batch,tp,measured_step_time_s"]
    for gb, mb, tp in RUNS:
        t = step_json(run, "gpt-1.7b", "--global-batch", gb, "--micro-batch", mb, "--tp", tp)
        lines.append(f"gpt-1.7b,dgx-a100,{gb},{mb},{tp},{t['step_time_s'] + 0.3!r}")
    runs, prof = tmp_path / "runs.csv", tmp_path / "fixed.toml"
    runs.write_text("\n".join(lines) + "\n")
    res = run("calibrate", runs, "-o", prof, "--format", "json")
    assert res.code == 0, res.err
    rep = res.json()
    assert rep["fitted"]["step_fixed_s"] == pytest.approx(0.3, rel=0.05)
    assert all(abs(r["error_after"]) < 0.01 for r in rep["runs"])
    assert "layer_fixed_s" in rep["kept_at_default"]   # 3 runs fit at most 2 parameters
    assert "[assumptions]\nstep_fixed_s = 0.29" in prof.read_text()  # 0.2995
    default = step_json(run, "gpt-1.7b", *HELD_OUT)["step_time_s"]
    fitted = step_json(run, "gpt-1.7b", *HELD_OUT, "--profile", prof)
    assert fitted["step_time_s"] == pytest.approx(default + 0.3, rel=0.05)
    assert fitted["assumptions"]["step_fixed_s"] == pytest.approx(0.3, rel=0.05)


def test_runs_of_one_work_per_step_cannot_fit_a_fixed_cost(run, tmp_path):
    """Two runs of the same layout with the same work per step at +10%: a constant and the GEMM
    efficiency explain them alike; one parameter is fitted and the other is named as kept."""
    t = step_json(run, "gpt-1.7b", "--global-batch", "32")["step_time_s"]
    runs = tmp_path / "same.csv"
    runs.write_text("model,node,global_batch,measured_step_time_s\n"
                    f"gpt-1.7b,dgx-a100,32,{1.1 * t!r}\ngpt-1.7b,dgx-a100,32,{1.1 * t!r}\n")
    rep = run("calibrate", runs, "-o", tmp_path / "p.toml", "--format", "json").json()
    assert len(rep["fitted"]) == 1 and "gemm_eta_max" in rep["fitted"]
    assert "step_fixed_s" in rep["kept_at_default"]
