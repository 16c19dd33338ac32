"""Which parameters `calibrate` fits: the candidate whose fit leaves the least of the cost the
fit minimises (squared log residual plus the prior's pull towards the defaults), its step kept
inside its bounds. Before, the ranking ignored how far a parameter had to move: a column the runs
barely depend on won by asking for a tenfold change (a review's cases below; each test failed on
the code before the fix)."""

from __future__ import annotations

from test_calibrate_guards import _synthetic_runs


def _fit(run, path):
    r = run("calibrate", path, "-o", path.with_suffix(".toml"), "--format", "json")
    assert r.code == 0, r.err
    return r.json()


def test_compute_bound_runs_slower_than_predicted_fit_the_gemm_ceiling(run, tmp_path):
    """Llama-2-7B at TP 1 on one and two DGX A100 (compute-bound), measured at 0.72x and 0.69x
    the prediction: gemm_eta_max 0.76 -> ~0.52 fits both (elasticity ~1: a 30% move). Before,
    hbm_efficiency 0.9 -> 0.09 won (elasticity ~0.04 at the default), and `step` of a
    memory-bound layout with that profile came out 1.9x slower."""
    path = _synthetic_runs(run, tmp_path, [("1", "1", "1", "1")], factor=0.72)
    text = path.read_text()
    two = _synthetic_runs(run, tmp_path, [("2", "1", "1", "1")], factor=0.69)
    path.write_text(text + two.read_text().split("\n", 1)[1])
    d = _fit(run, path)
    assert list(d["fitted"]) == ["gemm_eta_max"], d["fitted"]
    # 0.76 x 0.705 (the runs' mean factor) = 0.536, give or take the curve's shape
    assert 0.48 < d["fitted"]["gemm_eta_max"] < 0.58
    assert max(abs(r["error_after"]) for r in d["runs"]) < 0.03


def test_runs_faster_than_predicted_are_reproduced_by_what_is_fitted(run, tmp_path):
    """Three layouts measured 1.25x, 1.22x and 1.22x the prediction (a review's runs): before,
    hbm_efficiency (to its bound 1) and step_fixed_s (at its bound 0) were 'fitted' and the
    profile left -18% to -20% on the runs it was fitted on; the GEMM curve fits them."""
    runs = []
    for layout, factor in ((("1", "1", "1", "1"), 1.25), (("2", "2", "1", "2"), 1.22),
                           (("1", "2", "2", "1"), 1.22)):
        runs.append(_synthetic_runs(run, tmp_path, [layout], factor=factor).read_text())
    path = tmp_path / "runs.csv"
    path.write_text(runs[0] + "".join(t.split("\n", 1)[1] for t in runs[1:]))
    d = _fit(run, path)
    assert "hbm_efficiency" not in d["fitted"] and "gemm_eta_max" in d["fitted"], d["fitted"]
    assert max(abs(r["error_after"]) for r in d["runs"]) < 0.03
