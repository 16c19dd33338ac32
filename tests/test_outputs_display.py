"""Outputs, continued: terminal width, plots, and time and cost to train (issue 13). The CSV
checks (`check_csv`) are in tests/test_outputs.py."""

import math
from pathlib import Path

import pytest

from golden_cases import CASES
from test_outputs import _cmd_csv, check_csv


# ---------------------------------------------------------------------------- terminal width

WIDE = [CASES["plan"], CASES["compare"], CASES["sweep"], CASES["step"], CASES["memory"],
        ["explain"], CASES["catalog_list"], CASES["nics"]]


@pytest.mark.parametrize("argv", WIDE, ids=[a[0] for a in WIDE])
def test_tables_fit_80_columns(run, monkeypatch, argv):
    monkeypatch.setenv("COLUMNS", "80")
    r = run(*argv)
    assert r.code == 0, r.err
    assert max(len(line) for line in r.out.splitlines()) <= 80


def test_columns_is_respected_and_compact_layout_drops_columns(run, monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")  # the plan's framework column takes 21 of 120
    wide = run(*CASES["plan"]).out
    monkeypatch.setenv("COLUMNS", "80")
    narrow = run(*CASES["plan"]).out
    assert "free" in wide and "free" not in narrow  # the optional "free GB" column left out
    assert max(map(len, wide.splitlines())) > 80


def test_explain_sources_wrap_at_word_boundaries(run, monkeypatch):
    from optimus_calc.equations.registry import load_all
    from optimus_calc.report.common import cite
    monkeypatch.setenv("COLUMNS", "80")
    out = run("explain").out
    words = set(out.split())
    for eq in load_all().values():
        for w in cite(eq.source).split():  # the source as users read it
            if len(w) <= 20:  # longer tokens (paths) may fold, never be cut off
                assert w in words, (eq.name, w)


# --------------------------------------------------------------------------------- plots

PLOTS = {
    "sweep": ["sweep", "--models", "llama-2-7b", "--nodes", "1,2", "--seq-len", 2048,
              "--tokens", "1T", "--gpu-hour-price", 2],
    "memory": ["memory", "llama70b", "--nodes", 4, "--tp", 8, "--pp", 4],
    "compare": ["compare", "llama-2-13b", "--seq-len", 4096, "--global-batch", 16],
    "comm": ["comm", "all-reduce", "--sizes", "1MB..1GB", "--nodes", 2],
}


@pytest.mark.parametrize("kind", sorted(PLOTS))
@pytest.mark.parametrize("ext", ["png", "svg"])
def test_plot_is_a_deterministic_image(run, tmp_path, kind, ext):
    pytest.importorskip("matplotlib")
    paths = [tmp_path / f"a.{ext}", tmp_path / f"b.{ext}"]
    for p in paths:
        r = run(*PLOTS[kind], "--plot", p, "--format", "json")
        assert r.code == 0, r.err
        assert r.json()  # the normal output is still there
    data = [p.read_bytes() for p in paths]
    if ext == "png":
        assert data[0][:8] == b"\x89PNG\r\n\x1a\n"
    else:
        assert data[0].lstrip().startswith(b"<?xml") and b"<svg" in data[0][:2000]
        assert b"<dc:date>" not in data[0]
    assert data[0] == data[1]
    assert sorted(x.name for x in tmp_path.iterdir()) == sorted(p.name for p in paths)


@pytest.mark.parametrize("target,msg", [("out.jpg", "must end in .png or .svg"),
                                        ("nodir/out.png", "does not exist")])
def test_plot_bad_path_is_exit_2(run, tmp_path, target, msg):
    p = tmp_path / target if "/" in target else tmp_path / target
    r = run(*PLOTS["memory"], "--plot", p)
    assert r.code == 2 and msg in r.err and r.out == ""
    assert not p.exists()


@pytest.mark.xdist_group("cold_start")  # the probe's process is test_cold_start.py's
def test_matplotlib_is_imported_only_for_plots():
    # a fresh interpreter that ran the machine formats (`plan`, `memory`, `step`) and then
    # `memory 70e9 --model-states-only --format json` has not imported matplotlib
    from test_cold_start import MACHINE, MACHINE_THEN_EXPLAIN, probe_sequence
    i = MACHINE.index(["memory", "70e9", "--model-states-only", "--format", "json"])
    r = probe_sequence(MACHINE_THEN_EXPLAIN)[i]
    assert r["code"] == 0 and "matplotlib" not in r["loaded"], r


# ------------------------------------------------------------------------ time and cost

def test_train_time_by_hand():
    from optimus_calc.analyses.train_time import train_time
    # 10 s steps of 1024 x 4096 = 4,194,304 tokens; 4,194,304,000 tokens = 1000 steps =
    # 10,000 s = 0.11574 days; 16 GPUs: 16 x 10,000 / 3600 = 44.444 GPU-hours;
    # energy 16 x 700 W x 1.2 x 10,000 s = 1.344e8 J = 0.037333 MWh; at $2: $88.89
    t = train_time(10.0, 1024 * 4096, 4_194_304_000, 16, 700.0, 1.2, 2.0)
    assert t.steps == pytest.approx(1000)
    assert t.train_days == pytest.approx(10_000 / 86_400)
    assert t.gpu_hours == pytest.approx(44.4444, rel=1e-5)
    assert t.energy_MWh == pytest.approx(0.0373333, rel=1e-5)
    assert t.cost_usd == pytest.approx(88.8889, rel=1e-5)
    assert train_time(10.0, 4096, 4096, 1, 0.0, 1.2).energy_MWh is None  # no TDP: no energy


def test_plan_tokens_json(run):
    d = run("plan", "llama70b", "--nodes", 2, "--tokens", "15e12", "--format", "json").json()
    r = d["recommended"]
    # steps = 15e12 / (global batch x seq); days = steps x step time / 86400;
    # GPU-hours = 16 GPUs x steps x step time / 3600; A100 TDP 400 W, PUE 1.2 (default)
    steps = 15e12 / (d["assumed"]["global_batch"] * d["assumed"]["seq_len"])
    seconds = steps * r["step_time_s"]
    assert d["train_days"] == pytest.approx(seconds / 86400)
    assert d["gpu_hours"] == pytest.approx(16 * seconds / 3600)
    assert d["energy_MWh"] == pytest.approx(16 * 400 * 1.2 * seconds / 3.6e9)
    assert d["cost_usd"] is None
    p = run("plan", "llama70b", "--nodes", 2, "--tokens", "15T", "--gpu-hour-price", 2,
            "--assume", "pue=1.5", "--format", "json").json()
    assert p["cost_usd"] == pytest.approx(2 * p["gpu_hours"])
    assert p["energy_MWh"] == pytest.approx(d["energy_MWh"] * 1.5 / 1.2)
    assert p["candidates"][0]["train_days"] == pytest.approx(p["train_days"])


@pytest.mark.parametrize("argv", [
    ["step", "llama-2-7b", "--tp", 8, "--seq-len", 4096, "--global-batch", 64],
    ["compare", "llama-2-13b", "--seq-len", 4096, "--global-batch", 16],
    ["sweep", "--models", "llama-2-7b", "--nodes", "1", "--seq-len", 2048],
])
def test_tokens_on_step_compare_sweep(run, argv):
    d = run(*argv, "--tokens", "2e12", "--gpu-hour-price", "3", "--format", "json").json()
    rows = d.get("strategies") or d.get("rows") or [d]
    for row in rows:
        # cost = price x GPU-hours exactly; days x 24 x GPUs = GPU-hours
        assert row["cost_usd"] == pytest.approx(3 * row["gpu_hours"])
        gpus = row.get("gpus") or d.get("gpus") or d["hardware"]["gpus"]
        assert row["train_days"] * 24 * gpus == pytest.approx(row["gpu_hours"])
    header, body = check_csv(_cmd_csv(run, argv, "--tokens", "2e12", "--gpu-hour-price", "3"))
    row = dict(zip(header, body[0]))
    assert row["tokens"] == "2000000000000"
    for k in ("train_days", "gpu_hours", "energy_MWh", "cost_usd"):
        assert math.isfinite(float(row[k])) and float(row[k]) > 0


@pytest.mark.parametrize("args,msg", [
    (["--gpu-hour-price", "2"], "needs --tokens"),
    (["--tokens", "abc"], "--tokens 'abc'"),
    (["--tokens", "0"], "--tokens"),
    (["--tokens", "1T", "--gpu-hour-price", "nan"], "finite"),
])
def test_tokens_bad_input(run, args, msg):
    r = run("step", "llama-2-7b", "--tp", 8, *args)
    assert r.code == 2 and msg in r.err


def test_train_equations_are_registered_and_match_the_compiled_forms(run):
    import inspect

    from optimus_calc.equations import compiled as C
    from optimus_calc.equations.registry import load_all
    compiled = dict(inspect.getmembers(C, inspect.isfunction))
    reg = load_all()
    for name in ("train.steps", "train.time_s", "train.days", "train.gpu_hours",
                 "train.energy_mwh", "train.cost_usd"):
        eq = reg[name]
        vals = {"T_tok": 4_194_304_000, "B_seq": 1024, "S_seq": 4096, "t_step": 10.0,
                "n_gpu": 16, "P_gpu": 700.0, "PUE": 1.2, "c_gpu": 2.0}
        args = [vals[s.name] for s in eq.args]
        assert float(eq.lambdified()(*args)) == pytest.approx(
            float(compiled[eq.func_name](*args)))
    assert reg["train.days"].lambdified()(1024, 4096, 4_194_304_000, 10.0) == \
        pytest.approx(10_000 / 86_400)
    assert run("explain", "train.energy_mwh").code == 0


def test_plot_and_output_cannot_be_the_same_file(run, tmp_path):
    p = tmp_path / "x.svg"
    r = run(*PLOTS["memory"], "--plot", p, "-o", p)
    assert r.code == 2 and "same file" in r.err and not p.exists()
