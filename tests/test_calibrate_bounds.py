"""A fitted parameter the fit leaves on a bound of its range is said so (rev13c): before, runs
35% faster than today's prediction reported gemm_eta_max 0.75 -> 1 (+33.3%) as an ordinary fit,
though 1 is the top of its range (calibrate_fit.CANDIDATES) and 4% of the runs' gap remained."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_calibrate_guards import _runs

RUNS_YAML = Path(__file__).resolve().parents[1] / "docs" / "examples" / "runs.yaml"


def _fast_runs(run, tmp_path):
    lines = ["model,node,nodes,tp,framework,measured_tokens_per_s"]
    for tp in ("8", "4"):
        d = run("step", "llama-2-7b", "--node", "dgx-a100", "--tp", tp, "--framework",
                "megatron", "--format", "json").json()
        lines.append(f"llama-2-7b,dgx-a100,1,{tp},megatron,{1.35 * d['tokens_per_s']}")
    return _runs(tmp_path, "\n".join(lines) + "\n")


def test_a_parameter_on_its_bound_is_named(run, tmp_path):
    # 1.35x the throughput needs the GEMM curve's scale at 0.75 x 1.35 ~ 1.01 of peak (compute
    # is ~96% of these steps), above its upper bound 1.0: the fit stops there
    r = run("calibrate", _fast_runs(run, tmp_path), "-o", tmp_path / "f.toml", "--format", "json")
    assert r.code == 0, r.err
    d = r.json()
    assert d["fitted"]["gemm_eta_max"] == pytest.approx(1.0)
    assert d["on_bound"] == {"gemm_eta_max": "upper"}
    assert all(e < -0.02 for e in (row["error_after"] for row in d["runs"]))   # the gap left
    t = run("calibrate", _fast_runs(run, tmp_path), "-o", tmp_path / "f.toml")
    assert "gemm_eta_max ends on the upper bound of its range (1)" in " ".join(t.out.split())


def test_a_fit_inside_its_range_names_no_bound(run, tmp_path):
    # the guide's runs: gemm_eta_max 0.519 and gemm_half_GFLOP 25.9, inside (0.05, 1), (0.01, 1e4)
    r = run("calibrate", RUNS_YAML, "-o", tmp_path / "a.toml", "--format", "json")
    assert r.code == 0, r.err
    assert r.json()["on_bound"] == {} and set(r.json()["fitted"]) == {"gemm_eta_max",
                                                                      "gemm_half_GFLOP"}
