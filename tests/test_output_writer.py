"""Issue 23, output hardening: one output writer for stdout, -o and --plot: file-size limits,
full devices, FIFOs without a reader, plot paths, never over the command's input (split by
subject from test_hardening_3.py)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from cli_process import HF, one_line
from cli_process import cli_cpu as cli


# --- 5. one output writer: stdout, -o, --plot ------------------------------------------------

def test_stdout_over_the_file_size_limit_is_an_error(tmp_path):
    """Before: `ulimit -f 1; optimus-calc catalog list --format json > f` exit 0, 1 kB of 34."""
    out = tmp_path / "f"
    with open(out, "w") as fh:
        r, _ = cli("catalog", "list", "--format", "json", stdout=fh, fsize=1024)
    err = one_line(r)
    assert "standard output" in err and "too large" in err.lower()


def test_stdout_on_dev_full_catalog_json():
    with open("/dev/full", "w") as full:
        r, _ = cli("catalog", "list", "--format", "json", stdout=full)
    assert "No space left" in one_line(r)


def test_output_to_a_fifo_without_reader_does_not_hang(run, tmp_path):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    err = one_line(run("catalog", "list", "-o", fifo))  # before: blocked forever in open()
    assert "out.fifo" in err and "FIFO" in err and "reading" in err
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    import time
    for _ in range(200):  # until the reader has the FIFO open
        r = run("catalog", "list", "--format", "csv", "-o", fifo)
        if r.code == 0:
            break
        time.sleep(0.01)
    reader.join(10)
    assert r.code == 0 and got and got[0].startswith(b"kind,name"), r.err


@pytest.fixture
def plot_ok():
    pytest.importorskip("matplotlib")


def _left(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


@pytest.mark.parametrize("target, message", [
    ("/proc/x.png", "cannot write"),
    ("/proc/self/x.png", "cannot write"),
    ("{tmp}/" + "a" * 300 + ".png", "file name too long"),
    ("{tmp}/nodir/x.png", "does not exist"),
    ("{tmp}/x.png/", "ends in '/'"),
    ("{tmp}", "is a directory"),
])
def test_plot_path_errors_are_one_line(run, tmp_path, plot_ok, target, message):
    """Before: the temporary file was made outside the error handling (exit 1), and
    `--plot /x.png/` wrote /x.png."""
    target = target.format(tmp=tmp_path)
    err = one_line(run("memory", "llama70b", "--plot", target))
    assert message in err and "--plot" in err
    assert _left(tmp_path) == []
    assert not os.path.isfile(target.rstrip("/"))


def test_plot_with_a_250_character_name_is_written(run, tmp_path, plot_ok):
    """A legal name (under 255 bytes) is written; only the temporary name is shortened."""
    name = "p" * 246 + ".svg"
    r = run("memory", "llama70b", "--plot", tmp_path / name)
    assert r.code == 0, r.err
    assert _left(tmp_path) == [name] and (tmp_path / name).read_bytes().startswith(b"<?xml")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a directory of mode 555")
def test_plot_into_an_unwritable_directory(run, tmp_path, plot_ok):
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o555)
    try:
        err = one_line(run("memory", "llama70b", "--plot", d / "x.png"))
    finally:
        d.chmod(0o755)
    assert "Permission denied" in err and _left(d) == []


@pytest.mark.parametrize("spell", ["cfg/input.svg", "./cfg/../cfg/input.svg", "cfg/link.svg"])
def test_plot_never_overwrites_the_commands_input(run, tmp_path, plot_ok, monkeypatch, spell):
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    text = (HF / "llama" / "config.json").read_text()
    (cfg / "input.svg").write_text(text)
    (cfg / "link.svg").symlink_to("input.svg")
    monkeypatch.chdir(tmp_path)
    err = one_line(run("memory", "cfg/input.svg", "--plot", spell))
    assert "input of this command" in err and "--plot" in err
    assert (cfg / "input.svg").read_text() == text and _left(cfg) == ["input.svg", "link.svg"]


def test_a_tiny_negative_is_written_as_zero_not_minus_zero():
    # -0.0004 at a percentage's 3 decimals rounds to "-0.000" (what calibrate's change column
    # showed): a zero has no sign; -0.0006 still reads -0.001 and a true zero stays 0.000
    from optimus_calc.report.formats import csv_cell
    assert csv_cell(-0.0004, "change_pct", "float") == "0.000"
    assert csv_cell(-0.0006, "change_pct", "float") == "-0.001"
    assert csv_cell(0.0, "change_pct", "float") == "0.000"
    assert csv_cell(-2e-10, "step_time_s", "float") == "0.000000000"
