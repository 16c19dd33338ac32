"""Issue 15, output hardening: -o is written whole (atomic, the old mode kept), never over
a command's input, and a full device is an error (split by subject from test_hardening.py)."""

from __future__ import annotations

import json
import os

from catalog_files import _entry_file
from cli_process import HF, cli, one_line_exit_2


# --- 3. atomic -o, no overwriting an input, full devices ---------------------------------------

def test_output_over_the_model_config_is_refused(run, tmp_path):
    cfg = tmp_path / "cfg.json"
    text = (HF / "llama" / "config.json").read_text()
    cfg.write_text(text)
    r = run("memory", cfg, "-o", cfg)  # before: the report replaced the config, exit 0
    one_line_exit_2(r)
    assert "input" in r.err and cfg.read_text() == text
    r = run("plan", cfg, "--export", "deepspeed", "-o", cfg)
    one_line_exit_2(r)
    assert cfg.read_text() == text


def test_output_over_a_catalog_file_is_refused(run, tmp_path):
    f = _entry_file(tmp_path, "nic", "connectx-6")
    before = f.read_text()
    r = run("--catalog-dir", f.parent, "catalog", "list", "-o", f)
    one_line_exit_2(r)
    assert f.read_text() == before


def test_failed_write_keeps_the_old_file_and_leaves_no_new_one(tmp_path):
    """A 1000-byte file-size limit makes the write fail part way, as a full disk does. Before:
    the target was truncated to the 1000 bytes written (invalid JSON over a file that held
    data), and a new target was left behind partial."""
    old = tmp_path / "old.json"
    old.write_text('{"kept": true}')
    r = cli("memory", "llama70b", "--format", "json", "-o", old, fsize=1000)
    one_line_exit_2(r)
    assert old.read_text() == '{"kept": true}'
    new = tmp_path / "new.json"
    r = cli("memory", "llama70b", "--format", "json", "-o", new, fsize=1000)
    one_line_exit_2(r)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.json"]


def test_output_is_written_whole_with_the_old_mode(run, tmp_path):
    out = tmp_path / "out.json"
    out.write_text("old")
    out.chmod(0o640)
    r = run("memory", "llama70b", "--format", "json", "-o", out)
    assert r.code == 0, r.err
    assert json.loads(out.read_text())["model"]
    assert (out.stat().st_mode & 0o777) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_a_new_script_is_executable_other_new_files_are_not(run, tmp_path):
    # the Megatron-LM export is a bash script (#!/bin/bash): a new file gets the execute bits
    # the umask allows, as a new JSON gets 0o666 less the umask (round 30's cold review)
    umask = os.umask(0o022)
    try:
        sh, js = tmp_path / "launch.sh", tmp_path / "ds.json"
        assert run("plan", "llama-2-7b", "--export", "megatron", "-o", sh).code == 0
        assert run("plan", "llama-2-7b", "--export", "deepspeed", "-o", js).code == 0
    finally:
        os.umask(umask)
    assert sh.read_text().startswith("#!") and (sh.stat().st_mode & 0o777) == 0o755
    assert (js.stat().st_mode & 0o777) == 0o644


def test_stdout_on_a_full_device():
    with open("/dev/full", "w") as full:
        r = cli("memory", "llama70b", stdout=full)  # before: internal error OSError, exit 1
    one_line_exit_2(r)
    assert "standard output" in r.stderr
