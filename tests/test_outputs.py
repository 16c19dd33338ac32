"""Outputs for spreadsheets, terminals and plots (issue 13) and hostile catalog text (issue 15)."""

import csv
import io
import math
import re
from pathlib import Path

import pytest

from golden_cases import CASES

INT_RE = re.compile(r"^-?[0-9]+$")
FLOAT_RE = re.compile(r"^-?[0-9]+\.([0-9]+)$")
# numeric columns whose header carries no unit because they are dimensionless counts/degrees
COUNT_COLUMNS = {
    "nodes", "gpus", "seq_len", "global_batch", "micro_batch", "tp", "pp", "dp", "cp", "ep",
    "zero", "interleave", "rank", "stage", "gpu_stage", "layouts_evaluated", "layouts_feasible",
    "nics_per_gpu_for_memory", "nics_per_gpu_for_compute", "nics_for_memory", "nics_for_compute",
    "recommended_nics_per_node", "offload_devices", "offload_devices_per_node",
    "offload_devices_per_gpu_for_capacity", "threads", "section", "max_layers", "min_nodes",
    "max_micro_batch", "tokens", "steps", "stage_layers"}
UNIT_WORDS = {"bytes", "s", "GBps", "Bps", "pct", "params", "flops", "tflops", "MWh", "usd",
              "hours", "days", "count", "W"}
# validate's and explain's value columns carry their unit in a `unit` column / the equation;
# breakeven's per-parameter rows too (current, required; ratio is required / current)
PER_ROW_UNIT = {"published", "predicted", "tolerance", "error", "value", "current", "required",
                "ratio", "loso", "loso_error"}


def _cmd_csv(run, argv, *extra):
    r = run(*argv, "--format", "csv", *extra)
    assert r.code == 0, r.err
    return r.out


def _column_type(cells):
    vals = [c for c in cells if c != ""]
    if not vals:
        return "empty"
    if all(v in ("TRUE", "FALSE") for v in vals):
        return "bool"
    if all(INT_RE.match(v) for v in vals):
        return "int"
    if all(FLOAT_RE.match(v) for v in vals):
        decimals = {FLOAT_RE.match(v).group(1).__len__() for v in vals}
        assert len(decimals) == 1, f"mixed decimals {decimals}"
        return "float"
    assert not any(v.lower() in ("true", "false") and v not in ("TRUE", "FALSE") for v in vals)
    return "text"


def check_csv(text, sep=","):
    """Every column one type; bytes integers; no scientific notation; units in numeric
    headers; no duplicate rows. Returns header and rows."""
    rows = list(csv.reader(io.StringIO(text), delimiter=sep))
    header, body = rows[0], rows[1:]
    assert len(set(header)) == len(header), header
    assert len({tuple(r) for r in body}) == len(body), "duplicate rows"
    for i, name in enumerate(header):
        cells = [r[i] for r in body]
        kind = _column_type(cells)
        for c in cells:
            if name != "model":  # a bare parameter count's name, e.g. 1e9, is text
                assert not re.match(r"^-?[0-9.]+[eE][+-]?[0-9]+$", c), (name, c)
            assert c not in ("nan", "inf", "-inf", "NaN"), (name, c)
        if ("bytes" in name.split("_") or name.endswith("_params")) and name != "offload_params":
            assert kind in ("int", "empty"), (name, cells[:3])
        if kind in ("int", "float") and name not in PER_ROW_UNIT:
            assert name in COUNT_COLUMNS or UNIT_WORDS & set(name.split("_")), \
                f"numeric column {name!r} has no unit in its name"
        if name in ("fits", "sequence_parallel", "offload_params"):
            assert kind == "bool", (name, cells)
    return header, body


CSV_CASES = {name: argv for name, argv in CASES.items()}
CSV_CASES["fit_nodes"] = ["fit", "llama-2-7b", "--solve", "nodes", "--tp", "8"]
CSV_CASES["plan_tokens"] = ["plan", "llama-2-13b", "--seq-len", "4096", "--global-batch", "64",
                            "--tokens", "1T", "--gpu-hour-price", "2"]
CSV_CASES["comm_one"] = ["comm", "all-gather", "--size", "1GB", "--nodes", "2"]


@pytest.mark.parametrize("name", sorted(CSV_CASES))
def test_every_command_csv_is_typed(run, name):
    check_csv(_cmd_csv(run, CSV_CASES[name]))


def test_byte_columns_are_integers_and_context_is_there(run):
    # the example: 24440877004.8 bytes was written as a float
    header, body = check_csv(_cmd_csv(run, ["sweep", "--models", "llama-2-7b", "--nodes",
                                            "1,2", "--seq-len", "2048"]))
    for col in ("model", "node", "nodes", "gpus", "seq_len", "global_batch", "precision"):
        assert col in header
    row = dict(zip(header, body[0]))
    assert INT_RE.match(row["gpu_memory_bytes"]) and row["seq_len"] == "2048"
    assert row["fits"] == "TRUE" and "mfu" not in header and 0 < float(row["mfu_pct"]) < 100
    for argv in (CASES["plan"], CASES["compare"], CASES["step"], CASES["memory"]):
        h, _ = check_csv(_cmd_csv(run, argv))
        assert {"model", "node", "nodes", "seq_len", "global_batch", "precision"} <= set(h), argv


def test_compare_csv_is_in_bytes_like_the_others(run):
    header, body = check_csv(_cmd_csv(run, CASES["compare"]))
    assert not [h for h in header if h.endswith("_GB")]
    row = dict(zip(header, body[0]))
    # llama-2-13b, TP 8, ZeRO-3 over DP 1: 13.02e9 params x 2 bytes / 8 = 3,254,691,840 weights
    assert int(row["gpu_weights_bytes"]) == 3_254_691_840
    parts = sum(int(row[f"gpu_{k}_bytes"]) for k in ("weights", "gradients", "optimizer",
                                                      "activations", "overhead"))
    assert abs(parts - int(row["gpu_memory_bytes"])) <= 5  # integer rounding of five parts


def test_list_cells_use_one_separator(run):
    header, body = check_csv(_cmd_csv(run, ["memory", "llama70b", "--nodes", 2, "--tp", 4,
                                            "--pp", 2, "--zero", 1]))
    row = dict(zip(header, body[0]))
    assert row["stage_layers"] == "40|40"  # never "40; 40", and the same form with one stage
    header, body = check_csv(_cmd_csv(run, ["memory", "llama70b", "--nodes", 2, "--tp", 8,
                                            "--zero", 3]))
    assert dict(zip(header, body[0]))["stage_layers"] == "80"


def test_sweep_dedupes_rows_that_differ_only_in_the_smartnic_offered(run):
    # bert-large on DGX-H100 (no SmartNIC): without --smartnic there is no what-if and one row
    # per node count; with two cards offered each row names its card's what-if (no duplicate)
    args = ["sweep", "--models", "bert-large", "--node", "dgx-h100", "--nodes", "1,8",
            "--seq-len", 512, "--global-batch", 64]
    header, body = check_csv(_cmd_csv(run, args))
    rows = [dict(zip(header, r)) for r in body]
    assert [r["nodes"] for r in rows] == ["1", "8"]
    assert all(r["offload"] == "none" and r["smartnic"] == "" for r in rows)
    header, body = check_csv(_cmd_csv(run, args + ["--smartnic", "bluefield-3,bluefield-2"]))
    rows = [dict(zip(header, r)) for r in body]
    assert [(r["nodes"], r["smartnic"]) for r in rows] == [
        ("1", "bluefield-3"), ("1", "bluefield-2"), ("8", "bluefield-3"), ("8", "bluefield-2")]
    assert len({tuple(r) for r in body}) == len(body)


def test_fit_csv_is_one_row_with_headers(run):
    header, body = check_csv(_cmd_csv(run, CASES["fit"]))
    assert len(body) == 1 and header[0] == "model" and "k" not in header
    row = dict(zip(header, body[0]))
    # 32 GB V100 (dgx-2), ZeRO-1 over 64 GPUs, fp16: 2 + 2 + 12/64 bytes/param = 4.1875;
    # max params = 0.95 x 32e9 / 4.1875 = 7.26e9 (the usable memory: 5% headroom)
    assert int(row["max_params"]) == pytest.approx(0.95 * 32e9 / 4.1875, rel=1e-9, abs=1)
    assert row["solve"] == "layers"


def test_german_locale_round_trip(run):
    plain = _cmd_csv(run, CASES["step"])
    german = _cmd_csv(run, CASES["step"], "--csv-sep", ";", "--csv-decimal", ",")
    h1, b1 = check_csv(plain)
    h2, b2 = check_csv(german, sep=";")
    assert h1 == h2 and len(b1) == len(b2)
    for a, b in zip(b1[0], b2[0]):
        if FLOAT_RE.match(a):
            assert "." not in b and float(b.replace(",", ".")) == float(a)
        else:
            assert a == b
    assert ";" in german.splitlines()[0] and "," not in german.splitlines()[0]


@pytest.mark.parametrize("args,msg", [
    (["--csv-sep", ",", "--csv-decimal", ","], "must differ"),
    (["--csv-sep", ";;"], "one character"),
    (["--csv-decimal", "x"], "'.' or ','"),
    (["--csv-sep", "1"], "not usable"),
])
def test_csv_option_validation(run, args, msg):
    r = run(*CASES["step"], "--format", "csv", *args)
    assert r.code == 2 and msg in r.err and r.out == ""


def test_csv_cell_rules():
    from optimus_calc.report.formats import CsvOptions, column_kind, csv_cell
    assert csv_cell(24440877004.8, "gpu_total_bytes", "int") == "24440877005"
    assert csv_cell(-1.5, "x_s", "float") == "-1.500000000"  # a number: no quote
    assert csv_cell(0.5, "mfu_pct", "float", CsvOptions(";", ",")) == "0,500"
    assert csv_cell(True, "fits", "bool") == "TRUE"
    assert csv_cell([40, 40], "stage_layers", "list") == "40|40"
    for text in ("=1+1", "+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1"):
        assert csv_cell(text, "name", "text").startswith("'"), text
    assert csv_cell("=HYPERLINK(\"http://x\")", "t", "text") == "'=HYPERLINK(\"http://x\")"
    assert csv_cell("a\x1b[31mb", "t", "text") == "a\\x1b[31mb"
    assert column_kind("published", [120, 31.4]) == "float"
    assert column_kind("offload_bytes_per_device", [1.0, 2.5]) == "int"
    assert column_kind("tokens_per_s", [1.0, 2.5]) == "float"


# ------------------------------------------------------------------------------ hostile text

HOSTILE = '''[[gpu]]
name = "evil-gpu"
title = "[/] closes nothing [bold]and opens[/bold] \\u001b[31mred\\u001b[0m"
vendor = "nvidia"
memory_GB = 10
hbm_bandwidth_GBps = 100
peak_TFLOPS = { bf16 = 10, fp32 = 1 }
scale_up_link = "nvlink3"
scale_up_GBps = 100
host_link = "pcie4-x16"
source = "=HYPERLINK(\\"http://example.invalid\\") [link=x]y[/link] \\u202eevil"
'''


@pytest.fixture
def hostile_dir(tmp_path):
    d = tmp_path / "cat"
    d.mkdir()
    (d / "x.toml").write_text(HOSTILE)
    return d


@pytest.mark.parametrize("argv", [["catalog", "show", "evil-gpu"], ["catalog", "list",
                                                                      "--kind", "gpu"]])
def test_markup_and_escapes_in_catalog_text_are_shown_not_obeyed(run, hostile_dir, argv):
    r = run("--catalog-dir", hostile_dir, *argv)
    assert r.code == 0, r.err
    assert "\x1b" not in r.out and "\u202e" not in r.out
    if argv[1] == "show":
        assert "[/] closes nothing [bold]and opens[/bold]" in r.out  # literally, not styled
        assert "\\x1b[31mred" in r.out and "[link=x]y[/link]" in r.out
        j = run("--catalog-dir", hostile_dir, *argv, "--format", "json")
        assert "\x1b" not in j.out and j.json()["title"].startswith("[/]")


def test_csv_injection_from_catalog_text(run, hostile_dir):
    r = run("--catalog-dir", hostile_dir, "catalog", "list", "--kind", "gpu", "--format", "csv")
    rows = {row["name"]: row for row in csv.DictReader(io.StringIO(r.out))}
    assert rows["evil-gpu"]["source"].startswith("'=HYPERLINK(")
    assert "\x1b" not in r.out and "\\x1b" in rows["evil-gpu"]["title"]


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


def test_matplotlib_is_imported_only_for_plots():
    import subprocess
    import sys
    code = ("import sys; from optimus_calc.cli.main import main\n"
            "try:\n main(['memory', '70e9', '--model-states-only', '--format', 'json'])\n"
            "except SystemExit: pass\n"
            "assert 'matplotlib' not in sys.modules, 'matplotlib imported'")
    src = Path(__file__).resolve().parents[1] / "src"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr


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


def test_sources_name_papers_not_missing_files(run):
    # issue 13: cited sources named files users do not have (seeds/*.md); they name the papers,
    # and the two reference tables ship in docs/reference/
    from pathlib import Path
    for argv in (["explain", "--format", "json"], ["validate", "--format", "json"],
                 ["catalog", "list", "--format", "json"]):
        r = run(*argv)
        assert r.code == 0 and "seeds/" not in r.out, argv
    root = Path(__file__).resolve().parents[1]
    assert (root / "docs/reference/calibration.md").is_file()
    assert (root / "docs/reference/hardware-specs.md").is_file()


def test_safe_text_escapes_exactly_the_control_and_bidi_characters():
    # the one-regex safe_text against the per-character rule it replaced: category Cc or a
    # bidi override/isolate is escaped, a newline kept unless asked, everything else as is
    import sys
    import unicodedata
    from optimus_calc.report.formats import safe_text
    bidi = {chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}

    def reference(text, keep_newlines=True):
        out = []
        for ch in text:
            if ch == "\n" and keep_newlines:
                out.append(ch)
            elif ch in bidi or unicodedata.category(ch) == "Cc":
                code = ord(ch)
                out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
            else:
                out.append(ch)
        return "".join(out)
    every = "".join(chr(c) for c in range(0x30000) if not 0xD800 <= c < 0xE000)
    every += chr(sys.maxunicode)
    for keep in (True, False):
        assert safe_text(every, keep) == reference(every, keep)
    assert safe_text("a\x1b[31mb\u202e") == "a\\x1b[31mb\\u202e"
