"""YAML runs files for `calibrate` (issue 21): a small strict subset read by loaders.py, no new
dependency. The same runs as CSV and as YAML give the same profile; every construct outside the
subset is a one-line input error naming the file and line (exit 2), never a traceback."""

import pytest

from optimus_calc.errors import InputError
from optimus_calc.loaders import parse_runs_yaml

# Three llama-2-7b layouts on dgx-a100 with made-up measured tokens/s (the figures only need to
# be the same in both files; the fit is checked in test_calibrate.py).
RUNS = [("1", "1", "1", "1", "2900"), ("2", "2", "1", "2", "5600"), ("1", "2", "2", "1", "2500")]

CSV = "model,node,nodes,tp,pp,micro_batch,framework,measured_tokens_per_s\n" + "".join(
    f"llama-2-7b,dgx-a100,{n},{tp},{pp},{mb},megatron,{t}\n" for n, tp, pp, mb, t in RUNS)

# The same runs: under `runs:`, comments, quoted strings, a null (= default), 2.9e3 forms.
YAML = "# measured on our cluster\nruns:\n" + "".join(
    f"  - model: 'llama-2-7b'   # catalog name\n    node: \"dgx-a100\"\n    nodes: {n}\n"
    f"    tp: {tp}\n    pp: {pp}\n    micro_batch: {mb}\n    framework: megatron\n"
    f"    zero: ~\n    measured_tokens_per_s: {float(t):.1e}\n" for n, tp, pp, mb, t in RUNS)


def test_yaml_and_csv_of_the_same_runs_give_the_same_profile(run, tmp_path):
    out = {}
    for ext, text in (("csv", CSV), ("yaml", YAML)):
        runs, prof = tmp_path / f"runs.{ext}", tmp_path / f"{ext}.toml"
        runs.write_text(text)
        res = run("calibrate", runs, "-o", prof, "--format", "json")
        assert res.code == 0, res.err
        out[ext] = (res.json(), prof.read_text())
    (c, c_text), (y, y_text) = out["csv"], out["yaml"]
    assert c["fitted"] and c["fitted"] == y["fitted"]
    assert [r["error_after"] for r in c["runs"]] == [r["error_after"] for r in y["runs"]]
    # the profiles differ only in the file named by their provenance
    assert c_text.replace("runs.csv", "RUNS") == y_text.replace("runs.yaml", "RUNS")
    # YAML runs are numbered by the line of their dash: 3, 12, 21
    assert [r["row"] for r in y["runs"]] == [3, 12, 21]


def test_top_level_list_and_scalar_forms():
    text = ("- model: llama-2-7b\n  nodes: 2\n  flash: true\n  zero: null\n"
            "  measured_step_time_s: 4e-1\n  seq_len: 4e3\n  framework: 'it''s'\n"
            "-\n  model: \"a \\\"b\\\"\"\n")
    assert parse_runs_yaml(text, "r.yaml") == [
        (1, {"model": "llama-2-7b", "nodes": "2", "flash": "true",
             "measured_step_time_s": "0.4", "seq_len": "4000", "framework": "it's"}),
        (8, {"model": 'a "b"'})]


def test_runs_key_with_its_items_at_column_one():
    # block style puts a key's list at the key's own indentation (what kubectl and prettier
    # write); round 30's cold review found it refused as "only one top-level key"
    text = "runs:\n- model: llama-2-7b\n  nodes: 2\n- model: x\nother: 1\n"
    with pytest.raises(InputError, match="line 5: expected a list item"):
        parse_runs_yaml(text, "r.yaml")
    assert parse_runs_yaml(text.replace("other: 1\n", ""), "r.yaml") == [
        (2, {"model": "llama-2-7b", "nodes": "2"}), (4, {"model": "x"})]
    with pytest.raises(InputError, match="line 2: only one top-level key"):
        parse_runs_yaml("runs:\nother: 1\n", "r.yaml")


@pytest.mark.parametrize("text,expect", [
    ("- model: &a llama-2-7b\n", "line 1, key model: anchors are not supported"),
    ("- model: llama-2-7b\n- model: *a\n", "line 2, key model: aliases are not supported"),
    ("- model: !!str x\n", "line 1, key model: tags are not supported"),
    ("- model: [a, b]\n", "flow sequences are not supported"),
    ("- {model: a}\n", "line 1: flow mappings are not supported"),
    ("- model: |\n    x\n", "block (multi-line) scalars are not supported"),
    ("model: llama-2-7b\n", "line 1: expected a list item"),
    ("- model: x\n  model: y\n", "line 2: key 'model' appears twice"),
    ("- model: x\n  tp:\n    - 1\n", "line 3: indentation 4 where the run's keys are at 2"),
    ("- model: 'x\n", "line 1, key model: a quoted value must close on its own line"),
    ("---\n- model: x\n", "line 1: document markers and directives are not supported"),
    ("- model: x\n\ttp: 1\n", "line 2: tabs are not allowed"),
    ("# nothing\n", "no runs"),
    ("- model: x\n  measured_tokens_per_s: .nan\n", "'.nan' is not a finite number"),
    ("- - model: x\n", "line 1: nested lists are not supported"),
    ("- model: a: b\n", "nested mappings and lists are not supported"),
    ("runs:\n  - model: x\nother:\n", "line 3: expected a list item"),
])
def test_unsupported_yaml_is_one_line_naming_file_and_line(run, tmp_path, text, expect):
    with pytest.raises(InputError, match="runs file r.yaml"):
        parse_runs_yaml(text, "r.yaml")
    runs = tmp_path / "r.yaml"
    runs.write_text(text)
    res = run("calibrate", runs, "-o", tmp_path / "p.toml")
    assert res.code == 2 and res.err.count("\n") == 1, res.err
    assert "r.yaml" in res.err and expect in res.err and "Traceback" not in res.err
    assert not (tmp_path / "p.toml").exists()


@pytest.mark.parametrize("text,expect", [
    ("- model: llama-2-7b\n  colour: red\n  measured_tokens_per_s: 1\n",
     "line 1: unknown column 'colour'"),
    ("- model: llama-2-7b\n  tp: x\n  measured_tokens_per_s: 1\n", "line 1, column tp"),
    ("- model: llama-2-7b\n  tp: 2\n", "line 1: give exactly one of"),
    ("- nodes: 2\n  measured_tokens_per_s: 1\n", "line 1: column model is empty or missing"),
])
def test_yaml_runs_are_checked_like_csv_rows(run, tmp_path, text, expect):
    runs = tmp_path / "r.yml"
    runs.write_text(text)
    res = run("calibrate", runs, "-o", tmp_path / "p.toml")
    assert res.code == 2 and res.err.count("\n") == 1 and expect in res.err, res.err
