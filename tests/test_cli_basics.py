import csv
import io
import subprocess
import sys

import pytest

from optimus_calc import __version__


def test_version(run):
    r = run("--version")
    assert r.code == 0 and __version__ in r.out


def test_help_lists_commands(run):
    r = run("--help")
    assert r.code == 0 and "catalog" in r.out


def test_python_dash_m():
    p = subprocess.run([sys.executable, "-m", "optimus_calc", "--version"],
                       capture_output=True, text=True)
    assert p.returncode == 0 and __version__ in p.stdout


def test_catalog_list_csv_is_clean(run):
    r = run("catalog", "list", "--kind", "gpu", "--format", "csv")
    assert r.code == 0 and r.err == ""
    rows = list(csv.DictReader(io.StringIO(r.out)))
    assert {row["name"] for row in rows} >= {"a100-80gb", "h100-sxm", "mi300x"}
    assert all(row["source"] for row in rows)


def test_catalog_show_json_alias(run):
    r = run("catalog", "show", "llama70b", "--format", "json")
    d = r.json()
    assert r.code == 0 and d["name"] == "llama-3-70b" and d["alias_of"] == "llama-3-70b"


def test_unknown_name_exit_2_one_line(run):
    r = run("catalog", "show", "bluefeild-3")
    assert r.code == 2 and r.out == ""
    assert r.err.count("\n") == 1 and r.err.startswith("error: ")
    assert "did you mean" in r.err


def test_unknown_option_exit_2(run):
    r = run("catalog", "list", "--nope")
    assert r.code == 2 and r.err.startswith("error: no such option --nope")


def test_catalog_dir_option_and_env(run, tmp_path, monkeypatch):
    d = tmp_path / "c"
    d.mkdir()
    (d / "n.toml").write_text(
        '[[nic]]\nname="my-nic"\nline_rate_Gbps=100\nhost_link="pcie4-x16"\nalpha_us=2\n'
        'efficiency=0.9\nsource="vendor brief, 2026"\n')
    assert run("--catalog-dir", d, "catalog", "show", "my-nic").code == 0
    monkeypatch.setenv("OPTIMUS_CALC_CATALOG", str(d))
    assert run("catalog", "show", "my-nic").code == 0


def test_bad_user_catalog_exit_2(run, tmp_path):
    d = tmp_path / "c"
    d.mkdir()
    (d / "bad.toml").write_text("[[nic]\n")
    r = run("--catalog-dir", d, "catalog", "list")
    assert r.code == 2 and "bad.toml: not valid TOML" in r.err


def test_output_to_missing_directory(run, tmp_path):
    r = run("catalog", "list", "-o", tmp_path / "no" / "x.csv")
    assert r.code == 2 and "does not exist" in r.err


def test_output_to_file(run, tmp_path):
    out = tmp_path / "x.json"
    r = run("catalog", "show", "a100-80gb", "--format", "json", "-o", out)
    assert r.code == 0 and r.out == "" and '"memory_GB": 80.0' in out.read_text()


@pytest.mark.parametrize("typed,suggestion", [
    ("plna", "did you mean plan?"),                    # difflib ratio 0.75
    ("optimizer_step", "did you mean optimizer-step?"),
    ("swep", "did you mean sweep or step?"),
])
def test_unknown_command_did_you_mean(run, typed, suggestion):
    r = run(typed)
    assert r.code == 2 and r.out == ""
    assert r.err == f"error: no such command '{typed}'; {suggestion}\n"


def test_unknown_command_far_from_all_lists_them(run):
    r = run("zzz", "--nodes", "2")
    assert r.code == 2 and r.err.startswith("error: no such command 'zzz'; commands: breakeven,")


def test_global_option_after_the_command_says_where_it_goes(run):
    r = run("step", "llama70b", "--nodes", "2", "--catalog-dir", "/tmp")
    assert r.code == 2 and r.err.count("\n") == 1
    assert "--catalog-dir is a global option, give it first" in r.err
