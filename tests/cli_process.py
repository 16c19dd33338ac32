"""Running the CLI as a real process, for the tests that need one (resource limits, FIFOs,
devices), and the one-line error check they share (split from test_hardening*.py)."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from optimus_calc import catalog as catalog_mod

SRC = Path(__file__).resolve().parents[1] / "src"
HF = Path(__file__).resolve().parent / "data" / "hf"
BUILTIN = catalog_mod.builtin_dir()
GIB = 1 << 30


def cli_cpu(*args, timeout=60, stdout=None, fsize=None, mem=GIB, cwd=None, code=None):
    """The CLI in a subprocess under a 1 GiB address-space cap (and optionally a file-size
    limit); returns the CompletedProcess and the CPU seconds it used."""
    def limits():
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        if fsize is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    env = dict(os.environ, PYTHONPATH=str(SRC), PYTHONDONTWRITEBYTECODE="1")
    env.pop(catalog_mod.ENV_VAR, None)
    argv = [sys.executable, "-c", code] if code else [sys.executable, "-m", "optimus_calc"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        r = subprocess.run([*argv, *map(str, args)], preexec_fn=limits,
                           stdout=stdout or subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout, env=env, cwd=cwd)
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung for {timeout} s: {args}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


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


def one_line(r, code: int = 2) -> str:
    err = r.stderr if hasattr(r, "stderr") else r.err
    got = r.returncode if hasattr(r, "returncode") else r.code
    assert got == code, (got, err)
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
    return err


def one_line_exit_2(r) -> None:
    err = r.stderr if hasattr(r, "stderr") else r.err
    code = r.returncode if hasattr(r, "returncode") else r.code
    assert code == 2, (code, err)
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
