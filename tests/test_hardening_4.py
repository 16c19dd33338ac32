"""Issue 37 Low: bad input read as plain or refused in one line (BOM, CR line ends, options
spelled twice, YAML negatives, kernel refusals, closed stdout, control characters, saved-card
clashes). Each test failed on the code before its fix."""

from __future__ import annotations

import os

import pytest

from test_calibrate_guards import _runs, one_line


# ---- issue 37 Low -------------------------------------------------------------------------------

RUNS_CSV = "model,tp,measured_tokens_per_s\nllama-2-7b,1,20000\nllama-2-7b,2,18000\n"


@pytest.mark.parametrize("name, data", [
    ("bom.csv", b"\xef\xbb\xbf" + RUNS_CSV.encode()),               # Excel's "CSV UTF-8"
    ("cr.csv", RUNS_CSV.replace("\n", "\r").encode()),              # CR-only line ends
    ("crlf.csv", RUNS_CSV.replace("\n", "\r\n").encode()),
    ("bom.yaml", b"\xef\xbb\xbfruns:\n  - model: llama-2-7b\n    tp: 1\n"
                 b"    measured_tokens_per_s: 20000\n  - model: llama-2-7b\n    tp: 2\n"
                 b"    measured_tokens_per_s: 18000\n"),
])
def test_runs_files_with_bom_or_cr_line_ends_read_as_plain(run, tmp_path, name, data):
    # before: "column model is empty" (BOM) and csv.Error, exit 1 (CR only)
    runs = tmp_path / name
    runs.write_bytes(data)
    r = run("calibrate", runs, "-o", tmp_path / "p.toml", "--format", "json")
    assert r.code == 0, r.err
    assert [x["measured"] for x in r.json()["runs"]] == [20000, 18000]


def test_profile_with_bom_reads(run, tmp_path):
    p = tmp_path / "p.toml"
    p.write_bytes(b'\xef\xbb\xbf[profile]\nsource = "fitted by hand"\n')
    r = run("step", "llama-2-7b", "--profile", p)
    assert r.code == 0, r.err and "fitted by hand" in r.out


def test_one_option_spelled_twice_in_a_run_is_refused(run, tmp_path):
    runs = _runs(tmp_path, "model,seq-len,seq_len,measured_tokens_per_s\n"
                           "llama-2-7b,1024,2048,20000\n")
    err = one_line(run("calibrate", runs, "-o", tmp_path / "p.toml"))
    assert "row 2: columns 'seq-len' and 'seq_len' are the same option" in err


def test_negative_yaml_number_is_a_number(run, tmp_path):
    # before: "nested lists are not supported"; now the option's own range check speaks
    runs = tmp_path / "runs.yaml"
    runs.write_text("- model: llama-2-7b\n  tp: -1\n  measured_tokens_per_s: 20000\n")
    err = one_line(run("calibrate", runs, "-o", tmp_path / "p.toml"))
    assert "column tp: -1 is not in the range" in err and "nested" not in err


@pytest.mark.parametrize("node, why", [
    ("dgx-a100", "no public training efficiency of cuDNN's fused attention on a100-80gb"),
    ("mi300x-node", "cuDNN is NVIDIA's library")])
def test_cudnn_refusal_gives_its_own_reason(run, node, why):
    err = one_line(run("step", "llama-2-7b", "--node", node, "--attention-kernel", "cudnn"))
    assert why in err and "FlashAttention-3" not in err


def test_fa3_refusal_keeps_its_reason(run):
    err = one_line(run("step", "llama-2-7b", "--attention-kernel", "fa3"))
    assert "FlashAttention-3 runs on Hopper only" in err


@pytest.mark.parametrize("argv", [["plan", "llama-2-7b", "--framework", "auto"],
                                  ["plan", "llama-2-7b", "--framework", "megatron,auto"],
                                  ["nics", "llama-2-7b", "--framework", "auto"]])
def test_framework_auto_in_a_search_names_any_and_each(run, argv):
    err = one_line(run(*argv))
    assert "'any'" in err and "'each'" in err


def test_nics_framework_auto_with_a_layout_runs(run):
    r = run("nics", "llama-2-7b", "--framework", "auto", "--tp", "2")
    assert r.code == 0, r.err


def test_closed_stdout_is_an_error(tmp_path):
    import subprocess
    import sys
    src = os.path.join(os.path.dirname(__file__), "..", "src")
    env = dict(os.environ, PYTHONPATH=src)
    r = subprocess.run([sys.executable, "-m", "optimus_calc", "step", "llama-2-7b"],
                       stdout=None, stderr=subprocess.PIPE, text=True, env=env,
                       preexec_fn=lambda: os.close(1), timeout=120)
    assert r.returncode == 2, r.stderr
    assert r.stderr == "error: cannot write to standard output: it is closed (give -o FILE)\n"


def test_control_characters_in_the_profile_variable_are_escaped(run, monkeypatch):
    from optimus_calc.cli import main as main_mod
    monkeypatch.setattr(main_mod, "main", main_mod.main)
    monkeypatch.setenv("OPTIMUS_CALC_PROFILE", "x\x1b[31mred\x07.toml")
    import contextlib
    import io
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exc:
        main_mod.main(["step", "llama-2-7b"])
    assert exc.value.code == 2
    assert err.getvalue() == ("error: profile x\\x1b[31mred\\x07.toml: cannot read: No such "
                              "file or directory\n")


def test_output_name_with_a_newline_is_shown_escaped(run, tmp_path):
    r = run("step", "llama-2-7b", "-o", tmp_path / "a\nb.txt")
    assert r.code == 0, r.err
    assert r.err.endswith("a\\nb.txt\n") and r.err.count("\n") == 1


def test_visible_escapes_control_and_format_characters():
    from optimus_calc.errors import visible
    assert visible("a\x1b[0m\x07\u202eb c\u00e9") == "a\\x1b[0m\\x07\\u202eb c\u00e9"


def test_two_saved_cards_in_one_directory_do_not_clash(run, tmp_path):
    # before: both named bluefield-3-min-hide, and every command loading the directory failed
    args = ("breakeven", "llama70b", "--nodes", "2", "--tp", "2", "--pp", "4", "--zero", "3",
            "--recompute", "full", "--seq-len", "2048", "--global-batch", "16", "--device",
            "bluefield-3")
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    assert run(*args, "--save-card", a).code == 0
    assert run(*args, "--save-card", a).code == 0  # the same file again: replaced
    err = one_line(run(*args, "--save-card", b))
    assert "already defines 'bluefield-3-min-hide'" in err and not b.exists()
    r = run("--catalog-dir", tmp_path, "step", "llama70b", "--nodes", "2", "--tp", "2", "--pp",
            "4", "--zero", "3", "--offload", "smartnic", "--smartnic", "bluefield-3-min-hide")
    assert r.code == 0, r.err


def test_error_range_contains_its_value():
    """Residuals of one sign (two public cases -5% and -3%: predicted too fast) keep the value
    inside its range: step time 100 s gives 100 / (1 + 0) = 100 to 100 / (1 - 0.05) = 105.26 s,
    tokens/s 1000 gives 950 to 1000 (before: 103.09 to 105.26 s, which excluded 100 s)."""
    from optimus_calc.regimes import ErrorRange
    er = ErrorRange("public", -0.05, -0.03, 2, "2 public cases like this")
    lo, hi = er.bounds("step_time_s", 100.0)
    assert lo == pytest.approx(100.0) and hi == pytest.approx(100 / 0.95)
    lo, hi = er.bounds("tokens_per_s", 1000.0)
    assert lo == pytest.approx(950.0) and hi == pytest.approx(1000.0)
