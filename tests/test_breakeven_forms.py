"""Break-even's generated closed forms (issue 35): compiled_forms.py is what formgen produces
from the sympy registry, the numeric inversion gives the sympy inversion's answers, the printed
formula names the card's scale, and a numeric `breakeven` imports no sympy."""

import pytest

README_EXAMPLE = ["breakeven", "llama70b", "--nodes", "2", "--tp", "2", "--pp", "4", "--zero",
                  "3", "--recompute", "full", "--seq-len", "2048", "--global-batch", "16"]

# the values of tests/test_breakeven.py::test_invert_roofline_by_hand: P = 1e9 parameters,
# 28 bytes and 12 FLOPs each, eta_m = 0.8, 8 cores x 10 GB/s, 44 GFLOP/s per core, U = 2 s
HAND = {"P_n": 1e9, "beta_p": 28, "phi_p": 12, "eta_m": 0.8, "n_t": 8, "B_core": 10e9,
        "F_core": 44e9, "F_dev": 0.0, "U": 2.0, "K_x": 1e9}


def test_generated_forms_are_fresh():
    from optimus_calc.analyses.breakeven.formgen import TARGET, generate
    assert TARGET.read_text() == generate(), (
        "analyses/breakeven/compiled_forms.py is stale: run "
        "python -m optimus_calc.analyses.breakeven.formgen")


def test_numeric_inversion_by_hand():
    """Max(0, Max(P b / Min(n B_c, eta K_x x), P f / (n F)) - U) <= 0: the memory branch gives
    x = P b / (K_x eta U) = 1e9 x 28 / (1e9 x 0.8 x 2) = 17.5 GB/s; with 8 cores x 1 GB/s the
    cores hold the step at P b / (n B_c) = 28e9 / 8e9 = 3.5 s > U whatever x is."""
    from optimus_calc.analyses.breakeven import numeric as N
    form = N.form(("exposed", True, "B_mem"))
    inv = N.invert(form, HAND, 1e5)
    assert inv.value == pytest.approx(17.5, rel=1e-12)
    assert inv.formula == "x = P_n*beta_p/(K_x*U*eta_m)"
    never = N.invert(form, {**HAND, "B_core": 1e9}, 1e5)
    assert never.value is None and never.floor == pytest.approx(28 / 8 - 2)  # 3.5 s - 2 s
    assert "K_x*eta_m*x" in never.formula
    assert N.roof_at(form, {**HAND, "B_core": 1e9}, 1e5) == pytest.approx(3.5)
    assert N.binding_names(form, {**HAND, "B_core": 1e9}, 1e5) == [
        ("B_core", "P_n", "beta_p", "n_t")]


def test_numeric_inversion_of_cores_rounds_up():
    """Cores (integers, no scale): the FLOP branch needs n >= P f / (F U) = 12e9 / (44e9 x 2)
    = 0.136, the bandwidth branch n >= P b / (B_c U) = 28e9 / (10e9 x 2) = 1.4 -> 2 cores."""
    from optimus_calc.analyses.breakeven import numeric as N
    vals = {**HAND, "B_mem": 1e12}
    inv = N.invert(N.form(("exposed", True, "n_t")), vals, 1024, integer=True)
    assert inv.value == 2.0 and inv.formula == "x = P_n*beta_p/(B_core*U)"


def test_spill_fit_form_by_hand():
    """memory.spill_bytes <= 0 with C = K_x x + C_o: 40e9 bytes of state, 8 GB on the other
    tier -> x = (40e9 - 8e9) / 1e9 = 32 GB."""
    from optimus_calc.analyses.breakeven import numeric as N
    inv = N.invert(N.form(("spill_fit", None, None)),
                   {"B_dev": 40e9, "K_x": 1e9, "C_o": 8e9}, 1e6, floor_x=1e-3)
    assert inv.value == pytest.approx(32.0, rel=1e-12)
    assert inv.formula == "x = B_dev/K_x - C_o/K_x"


@pytest.mark.parametrize("key", [("exposed", True, "F_core"), ("exposed", True, "joint"),
                                 ("spill_fit", None, None)])
def test_a_form_built_at_run_time_is_the_generated_one(key):
    """The fallback for a form that is not generated (formgen.build, with sympy) gives the
    generated form's text, roots and numbers."""
    from optimus_calc.analyses.breakeven import numeric as N
    from optimus_calc.analyses.breakeven.compiled_forms import FORMS
    from optimus_calc.analyses.breakeven.formgen import build
    gen, built = FORMS[key], build(key)
    assert built["text"] == gen["text"]
    assert [t for _, t in built["roots"]] == [t for _, t in gen["roots"]]
    vals = {**HAND, "B_mem": 50e9, "A": 40e9, "B_dev": 40e9, "C_o": 8e9}
    assert N.invert(built, vals, 1e5) == N.invert(gen, vals, 1e5)


def test_sympy_and_numeric_inversions_agree():
    """The generated form inverts as sym.invert inverts the sympy goal (scale folded in)."""
    from optimus_calc.analyses.breakeven import numeric as N
    from optimus_calc.analyses.breakeven import sym as S
    vals = {S.Pn: 1e9, S.bpp: 28, S.fpp: 12, S.eta_m: 0.8, S.nthr: 8, S.B_core: 10e9,
            S.BW: 50e9, S.F_dev: 0.0, S.U_up: 1.0}
    for clock_flops in (16.0, 1.0):
        sympy_inv = S.invert(S.exposed_goal(True, S.F_core, 1e9 * clock_flops), vals, 0.0, 1e5)
        num_inv = N.invert(N.form(("exposed", True, "F_core")),
                           {**{s.name: v for s, v in vals.items()}, "K_x": 1e9 * clock_flops},
                           1e5)
        # P f / (K_x n U) = 12e9 / (16e9 x 8 x 1) = 0.09375 GHz (x16 at 1 FLOP/cycle); the
        # memory branch stays below U: 28e9 / min(8 x 10e9, 0.8 x 50e9) = 0.7 s
        assert num_inv.value == pytest.approx(12e9 / (1e9 * clock_flops * 8), rel=1e-12)
        assert sympy_inv.value == pytest.approx(num_inv.value, rel=1e-12)


def test_breakeven_prints_the_cards_scale_as_a_named_constant(run):
    """bluefield-3: 16 FP32 FLOP/cycle per core (catalog), so K_x = 1.6e10 FLOP/s per GHz; the
    equation no longer folds it into a coefficient (6.25e-11 = 1 / 1.6e10)."""
    r = run(*README_EXAMPLE, "--device", "bluefield-3", "--format", "json")
    reqs = {q["parameter"]: q for q in r.json()["requirements"]}
    clock = reqs["core_GHz"]["equation"]
    assert "K_x = 1.6e+10 FLOP/s per GHz of clock (16 FP32 FLOP/cycle x 1e9)" in clock
    assert "6.25e-11" not in clock and "P_n*phi_p/(K_x*n_t*x)" in clock
    assert reqs["memory_bandwidth_GBps"]["equation"].endswith("K_x = 1e+09 bytes/s per GB/s")


@pytest.mark.xdist_group("cold_start")  # the probe's process is test_breakeven_cold.py's
def test_numeric_breakeven_imports_no_sympy():
    """The README example (every card, closed forms for the SmartNICs' rooflines), then one
    card's parameters, the fit goal (memory.spill_bytes' form), `explain` of that form and
    `fit`'s closed form run without sympy in one fresh interpreter; the probe then imports it
    and sees it. The process is test_breakeven_cold.py's README probe, which goes on with
    them."""
    from test_breakeven_cold import AFTER_README, NOT_LOADED, README, cold
    assert README == README_EXAMPLE and "sympy" in NOT_LOADED
    first, after = cold(README, AFTER_README)
    assert first["code"] == 0 and "sympy" not in first["loaded"]
    assert AFTER_README[:2] == [README_EXAMPLE + ["--device", "bluefield-3"],
                                README_EXAMPLE + ["--goal", "fit", "--device", "bluefield-3"]]
    assert AFTER_README[2] == ["explain", "memory.spill_bytes", "--format", "json"]
    assert AFTER_README[3][:4] == ["fit", "1e9", "--solve", "layers"]
    assert AFTER_README[4] == ["@import", "sympy"]
    assert [r["code"] for r in after] == [0, 0, 0, 0, 0]
    assert [r["sympy"] for r in after] == [False, False, False, False, True]
