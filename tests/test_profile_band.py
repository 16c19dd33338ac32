"""A profile's leave-one-out band needs the runs and the GPU it came from (rev13c). Before:
`runs = 0` with a band printed "leave-one-out over the 0 runs" beside a -10% / +10% range, and a
band without `gpu` was accepted and never used (every GPU kept the public range, silently)."""

from __future__ import annotations

import pytest

BAND = "loo_error_low = -0.1\nloo_error_high = 0.1\n"


@pytest.mark.parametrize("head", ['runs = 0\ngpu = "a100-80gb"\n', 'runs = 1\ngpu = "a100-80gb"\n',
                                  "runs = 3\n"])
def test_a_band_without_runs_or_gpu_is_refused(run, tmp_path, head):
    p = tmp_path / "p.toml"
    p.write_text(f"[profile]\n{head}{BAND}")
    r = run("step", "llama-2-7b", "--profile", p)
    assert r.code == 2 and r.err.count("\n") == 1, r.err
    assert "need 'profile.runs' >= 2" in r.err and "'profile.gpu'" in r.err


def test_a_band_with_its_runs_and_gpu_is_used(run, tmp_path):
    # 3 runs on the A100: the band is predicted / true - 1 in [-0.1, +0.1], so the true step
    # lies in [T / 1.1, T / 0.9] (regimes.bounds, as the -0.99 / +100 test of test_calibrate_guards)
    p = tmp_path / "p.toml"
    p.write_text(f'[profile]\nruns = 3\ngpu = "a100-80gb"\n{BAND}')
    d = run("step", "llama-2-7b", "--profile", p, "--format", "json").json()
    assert d["step_time_s_low"] == pytest.approx(d["step_time_s"] / 1.1, rel=1e-9)
    assert d["step_time_s_high"] == pytest.approx(d["step_time_s"] / 0.9, rel=1e-9)
