"""Break-even's generated closed forms (analyses/breakeven/compiled_forms.py) evaluated by hand
at points where each piece binds: the sampled mutation run of 2026-11-26 (docs/hardening.md,
"Mutation score") found the per-core and device-FLOPs forms pinned by no test of its selection.

Values as tests/test_breakeven_forms.py's HAND: P = 1e9 parameters, 28 bytes (beta_p) and 12
FLOPs (phi_p) each, eta_m = 0.8; here a card of 100 GB/s memory, 10 GB/s and 44 GFLOP/s per core,
and a budget U = 0.5 s."""

import pytest

from optimus_calc.analyses.breakeven import numeric as N

V = {"P_n": 1e9, "beta_p": 28, "phi_p": 12, "eta_m": 0.8, "B_mem": 100e9, "B_core": 10e9,
     "F_core": 44e9, "F_dev": 10e9, "U": 0.5, "K_x": 1e9, "n_t": 8}


def test_required_cores_form_by_hand():
    """Cores x: the update takes max(P phi / (F_core x), P beta / min(B_core x, B_mem eta_m)).
    At x = 4: compute 12e9 / 176e9 = 0.068182 s; memory 28e9 / min(40e9, 80e9) = 0.7 s;
    roof 0.7 s, goal max(0, 0.7 - 0.5) = 0.2 s. At x = 16: 28e9 / min(160e9, 80e9) = 0.35 s,
    goal 0. Roots: compute x = P phi / (F_core U) = 12e9 / 22e9 = 0.545455 cores; per-core
    bandwidth x = P beta / (B_core U) = 28e9 / 5e9 = 5.6 cores."""
    f = N.form(("exposed", True, "n_t"))
    assert f["roof"](4.0, **V) == pytest.approx(0.7, rel=1e-12)
    assert f["goal"](4.0, **V) == pytest.approx(0.2, rel=1e-12)
    assert f["goal"](16.0, **V) == 0
    (compute, c_text), (memory, m_text) = f["roots"]
    assert c_text == "x = P_n*phi_p/(F_core*U)" and m_text == "x = P_n*beta_p/(B_core*U)"
    assert compute(0.0, **V) == pytest.approx(12 / 22, rel=1e-12)
    assert memory(0.0, **V) == pytest.approx(5.6, rel=1e-12)


def test_required_cores_form_when_compute_binds():
    """The same form at x = 0.5 core with memory out of the way (B_core 1e12 B/s): compute
    12e9 / (44e9 x 0.5) = 0.545455 s; memory 28e9 / min(5e11, 8e10) = 0.35 s; goal
    0.545455 - 0.5 = 0.045455 s."""
    f = N.form(("exposed", True, "n_t"))
    v = {**V, "B_core": 1e12}
    assert f["roof"](0.5, **v) == pytest.approx(12 / 22, rel=1e-12)
    assert f["goal"](0.5, **v) == pytest.approx(12 / 22 - 0.5, rel=1e-12)


def test_device_flops_form_without_a_per_core_parameter():
    """A card sized by its fabric (per_core False) with the clock as the parameter: neither piece
    depends on x. Device compute P phi / F_dev = 12e9 / 10e9 = 1.2 s; memory P beta /
    (B_mem eta_m) = 28e9 / 80e9 = 0.35 s; goal max(0, 1.2 - 0.5) = 0.7 s; the compute piece
    alone is 1.2 s."""
    f = N.form(("exposed", False, "F_core"))
    assert f["goal"](1.0, **V) == pytest.approx(0.7, rel=1e-12)
    (compute, names), (memory, _) = f["roof_pieces"]
    assert names == ("F_dev", "P_n", "phi_p")
    assert compute(1.0, **V) == pytest.approx(1.2, rel=1e-12)
    assert memory(1.0, **V) == pytest.approx(0.35, rel=1e-12)


def test_global_batch_sweep_reaches_sixteen_times_the_batch():
    """`--sweep global-batch` doubles the micro-batch at the layout's 8 micro-batches per step
    until DP x micro-batch reaches 16 x the global batch (sweep.py MAX_BATCH_MULTIPLE): Llama-2
    70B on 16 GPUs, TP 2 x PP 4 so DP 2, global batch 16: micro-batches 1, 2, ..., 128
    (2 x 128 = 256 = 16 x 16), global batches 16 x 2^k for k = 0..7."""
    import json

    from tests_support import cli
    from test_optimusnic import LAYOUT
    # not the cached run test_optimusnic.py shares: mutmut maps tests to the functions they
    # call, and a cache hit calls none
    code, out, err = cli.__wrapped__("breakeven", *LAYOUT, "--device", "bluefield-3", "--sweep",
                                     "global-batch", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    rows = doc["batch_sweep"]["rows"]
    assert [r["micro_batch"] for r in rows] == [2 ** k for k in range(8)]
    assert [r["global_batch"] for r in rows] == [16 * 2 ** k for k in range(8)]
    # a count of micro-batches: 8, never 8.0 in the JSON
    assert all(type(r["micro_batches"]) is int and r["micro_batches"] == 8 for r in rows)
