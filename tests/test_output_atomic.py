"""Issue 15, output hardening: -o is written whole (atomic, the old mode kept), never over
a command's input, and a full device is an error (split by subject from test_hardening.py)."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from optimus_calc import catalog as catalog_mod
from catalog_files import _entry_file

SRC = Path(__file__).resolve().parents[1] / "src"
HF = Path(__file__).resolve().parent / "data" / "hf"
BUILTIN = catalog_mod.builtin_dir()


def cli(*args, timeout=60, stdout=None, fsize=None, env=None, cwd=None):
    """Run the CLI in a subprocess (FIFOs, devices and resource limits need a real process).
    Memory is capped at 2 GiB so an unbounded read fails fast instead of exhausting the host."""
    def limits():
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
        if fsize is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    full_env = dict(os.environ, PYTHONPATH=str(SRC), PYTHONDONTWRITEBYTECODE="1")
    full_env.pop(catalog_mod.ENV_VAR, None)
    full_env.update(env or {})
    try:
        r = subprocess.run([sys.executable, "-m", "optimus_calc", *map(str, args)],
                           preexec_fn=limits, stdout=stdout or subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=timeout, env=full_env,
                           cwd=cwd)
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung for {timeout} s: {args}")
    return r


def one_line_exit_2(r) -> None:
    err = r.stderr if hasattr(r, "stderr") else r.err
    code = r.returncode if hasattr(r, "returncode") else r.code
    assert code == 2, (code, err)
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and "internal error" not in err, err


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


def test_stdout_on_a_full_device():
    with open("/dev/full", "w") as full:
        r = cli("memory", "llama70b", stdout=full)  # before: internal error OSError, exit 1
    one_line_exit_2(r)
    assert "standard output" in r.stderr
