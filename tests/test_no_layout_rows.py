"""Rows without a layout say why. `sweep` over node types that offer different offload
targets: a node without the target asked for gets a row saying so, and the other nodes still
get theirs; a target that no node type of the sweep offers is a mistyped flag, refused before
anything runs. `plan --format csv` where nothing fits: one row with the reason."""

import csv
import io

import pytest

ARGS = ("sweep", "--models", "llama-3-8b", "--node", "dgx-a100,gh200-nvl2", "--nodes", "1",
        "--offloads", "superchip")


def _rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def test_a_node_without_the_target_gets_a_row_with_its_reason(run):
    r = run(*ARGS, "--format", "csv")
    assert r.code == 0, r.err
    a100, gh200 = _rows(r.out)
    # DGX A100 has host RAM and NVMe drives, no superchip CPU (catalog nodes: dgx-a100)
    assert (a100["node"], a100["fits"], a100["offload"]) == ("dgx-a100", "FALSE", "superchip")
    assert a100["reason"] == "dgx-a100 does not offer superchip (offers none, cpu, nvme)"
    assert a100["layouts_evaluated"] == "0" and a100["step_time_s"] == ""
    assert (gh200["node"], gh200["fits"], gh200["offload"]) == ("gh200-nvl2", "TRUE",
                                                                "superchip")


def test_the_offering_node_row_is_the_plan_of_that_node(run):
    """The row of the node that offers the target is what `plan` recommends there: the node
    without it changes nothing about the others."""
    (_, gh200) = _rows(run(*ARGS, "--format", "csv").out)
    d = run("plan", "llama-3-8b", "--node", "gh200-nvl2", "--nodes", 1, "--offloads",
            "superchip", "--format", "json").json()
    rec = d["recommended"]
    assert float(gh200["tokens_per_s"]) == pytest.approx(rec["tokens_per_s"], rel=1e-6)  # CSV: 3 decimals
    assert float(gh200["step_time_s"]) == pytest.approx(rec["step_time_s"], rel=1e-6)


def test_the_text_table_says_why_a_row_has_no_layout(run):
    r = run(*ARGS)
    assert r.code == 0, r.err
    assert ("llama-3-8b on 1 x dgx-a100, offload superchip: dgx-a100 does not offer superchip "
            "(offers none, cpu, nvme)") in " ".join(r.out.split())


def test_a_target_no_node_offers_is_refused_before_any_point_runs(run, tmp_path):
    out = tmp_path / "sweep.csv"
    r = run("sweep", "--models", "llama-3-8b", "--node", "dgx-a100,dgx-h100", "--nodes", "1,2",
            "--offloads", "none,superchip", "--format", "csv", "--output", out)
    assert r.code == 2
    assert r.err.strip() == ("error: --offloads superchip: no node type of the sweep offers it "
                             "(dgx-a100 offers none, cpu, nvme; dgx-h100 offers none, cpu, "
                             "nvme)")
    assert not out.exists()


@pytest.mark.parametrize("cmd", [("plan", "llama-3-8b"), ("sweep", "--models", "llama-3-8b")])
def test_the_error_names_the_flag_the_target_was_typed_with(run, cmd):
    """--offload (one target) and --offloads (a list) both restrict the targets; the refusal
    names the one the user typed."""
    for typed in ("--offload", "--offloads"):
        r = run(*cmd, "--node", "dgx-a100", "--nodes", 1, typed, "superchip")
        assert r.code == 2
        assert r.err.strip() == (f"error: {typed} superchip: dgx-a100 does not offer it "
                                 "(offers none, cpu, nvme)")
    # both flags: the one the refused target came from (a cold review found --offloads here)
    r = run(*cmd, "--node", "dgx-a100", "--nodes", 1, "--offload", "superchip", "--offloads", "cpu")
    assert r.code == 2 and r.err.startswith("error: --offload superchip: dgx-a100 does not")


def test_plan_csv_where_nothing_fits_carries_the_reason(run):
    """`plan --format csv` wrote only its header where no layout fits; the table, JSON and a
    sweep row give the reason, so the CSV does too (one row, empty rank)."""
    j = run("plan", "gpt-1008b", "--format", "json").json()
    assert j["recommended"] is None
    r = run("plan", "gpt-1008b", "--format", "csv")
    assert r.code == 0
    (row,) = _rows(r.out)
    assert (row["model"], row["node"], row["rank"]) == ("gpt-1008b", "dgx-a100", "")
    assert row["reason"] == j["why"] and row["reason"].startswith("no layout fits")


def test_a_sweep_plot_where_no_point_has_a_layout(run, tmp_path):
    """`sweep --plot` stopped with an internal error (no panel to draw) when no row had a
    layout; it draws an empty panel that says so."""
    pytest.importorskip("matplotlib")
    out = tmp_path / "s.svg"
    r = run("sweep", "--models", "gpt-1008b", "--node", "dgx-a100", "--nodes", 1, "--plot", out)
    assert r.code == 0, r.err
    assert "no point has a layout" in out.read_text()
