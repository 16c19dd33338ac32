"""Outputs for spreadsheets (issue 13) and hostile catalog text (issue 15). Terminal width,
plots and time and cost to train are in tests/test_outputs_display.py."""

import csv
import io
import re

import pytest

from golden_cases import CASES

INT_RE = re.compile(r"^-?[0-9]+$")
FLOAT_RE = re.compile(r"^-?[0-9]+\.([0-9]+)$")
# numeric columns whose header carries no unit because they are dimensionless counts/degrees
COUNT_COLUMNS = {
    "nodes", "gpus", "seq_len", "global_batch", "micro_batch", "tp", "pp", "dp", "cp", "ep", "etp",
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
