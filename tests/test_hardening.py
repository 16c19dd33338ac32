"""Issue 15, input/output hardening: device and FIFO paths, size and nesting caps, per-type
catalog validation, atomic -o, exit 2 for every bad input, no inf reaching output, catalog
directories loaded once, and the information-only items. Each test failed on the code before the
fix (exit 1, a hang, a silent truncation, an absurd or infinite number, or a wrong message)."""

from __future__ import annotations

import json
import os
import time

import pytest

from optimus_calc import catalog as catalog_mod
from optimus_calc.loaders import MAX_INPUT_BYTES
from optimus_calc.search.space import divisors
from catalog_files import _entry_file
from cli_process import BUILTIN, HF, cli, one_line_exit_2


# --- 1. device and FIFO paths, size and nesting caps, unreadable names ------------------------

def test_model_from_dev_zero_is_an_input_error():
    r = cli("memory", "/dev/zero", timeout=30)  # before: read until MemoryError, exit 1
    one_line_exit_2(r)
    assert "/dev/zero" in r.stderr and "not a regular file" in r.stderr


def test_model_fifo_does_not_hang(tmp_path):
    fifo = tmp_path / "cfg.json"
    os.mkfifo(fifo)
    r = cli("memory", fifo, timeout=30)  # before: blocked forever in open()
    one_line_exit_2(r)
    assert "cfg.json" in r.stderr and "FIFO" in r.stderr
    os.mkfifo(tmp_path / "cfg")  # no .json, no slash: still read as a file, and refused
    r = cli("memory", "cfg", timeout=30, cwd=tmp_path)
    one_line_exit_2(r)
    assert "FIFO" in r.stderr


def test_catalog_symlink_to_dev_zero_and_fifo(tmp_path):
    d1 = tmp_path / "zero"
    d1.mkdir()
    (d1 / "z.toml").symlink_to("/dev/zero")
    r = cli("--catalog-dir", d1, "catalog", "list", timeout=30)
    one_line_exit_2(r)
    assert "z.toml" in r.stderr and "not a regular file" in r.stderr
    d2 = tmp_path / "fifo"
    d2.mkdir()
    os.mkfifo(d2 / "x.toml")
    r = cli("--catalog-dir", d2, "catalog", "list", timeout=30)
    one_line_exit_2(r)
    assert "x.toml" in r.stderr and "FIFO" in r.stderr


def test_oversized_config_json_is_an_input_error(run, tmp_path):
    data = json.loads((HF / "llama" / "config.json").read_text())
    data["_padding"] = "x" * MAX_INPUT_BYTES  # valid JSON, just too large
    p = tmp_path / "config.json"
    p.write_text(json.dumps(data))
    r = run("memory", p)  # before: loaded, exit 0
    one_line_exit_2(r)
    assert "config.json" in r.err and "limit" in r.err


def test_oversized_catalog_file_is_an_input_error(run, tmp_path):
    (tmp_path / "big.toml").write_text("# padding\n" * (MAX_INPUT_BYTES // 10 + 1))
    r = run("--catalog-dir", tmp_path, "catalog", "list")  # before: loaded, exit 0
    one_line_exit_2(r)
    assert "big.toml" in r.err and "limit" in r.err


def test_deep_json_is_an_input_error(run, tmp_path):
    p = tmp_path / "deep.json"
    p.write_text("[" * 100_000 + "]" * 100_000)
    r = run("memory", p)  # before: RecursionError, exit 1
    one_line_exit_2(r)
    assert "deep.json" in r.err and "nested too deeply" in r.err


def test_non_utf8_toml_is_an_input_error(run, tmp_path):
    (tmp_path / "latin1.toml").write_bytes(b'[[gpu]]\nname = "caf\xe9"\n')
    r = run("--catalog-dir", tmp_path, "catalog", "list")  # before: UnicodeDecodeError, exit 1
    one_line_exit_2(r)
    assert "latin1.toml" in r.err and "UTF-8" in r.err


def test_deeply_nested_toml_is_an_input_error(run, tmp_path):
    (tmp_path / "deep.toml").write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    r = run("--catalog-dir", tmp_path, "catalog", "list")  # before: RecursionError, exit 1
    one_line_exit_2(r)
    assert "deep.toml" in r.err and "nested too deeply" in r.err


def test_catalog_dir_of_unknown_user(run):
    r = run("--catalog-dir", "~nouser-optimus-calc/x", "catalog", "list")  # before: exit 1
    one_line_exit_2(r)
    assert "~nouser-optimus-calc/x" in r.err


@pytest.mark.parametrize("where", ["model", "catalog-dir", "output"])
def test_names_too_long_for_the_file_system(run, tmp_path, where):
    long = str(tmp_path / ("a" * 300))
    args = {"model": ("memory", long + ".json"),
            "catalog-dir": ("--catalog-dir", long, "catalog", "list"),
            "output": ("memory", "llama70b", "-o", long + ".json")}[where]
    r = run(*args)  # before: OSError ENAMETOOLONG, exit 1
    one_line_exit_2(r)


# --- 4. exit 2 where 2 is promised, flags the user typed --------------------------------------

@pytest.mark.parametrize("args", [
    ("step", "llama70b", "--assume", "zero_bucket_params=0"),
    ("step", "llama70b", "--assume", "zero_bucket_params=1e-300"),
    ("plan", "llama70b", "--assume", "zero_bucket_params=0"),
    ("memory", "llama70b", "--zero", "1", "--assume", "zero_bucket_params=0"),
    ("step", "llama70b", "--assume", "gemm_efficiency=1e-300"),
    ("step", "llama70b", "--assume", "hbm_efficiency=1e-300"),
    ("comm", "all-reduce", "--size", "1GB", "--nodes", "2", "--compression", "0.5",
     "--assume", "nic_compress_GBps=1e-300"),
])
def test_divisor_assumptions_bounded_away_from_zero(run, args):
    r = run(*args)
    one_line_exit_2(r)
    assert "--assume" in r.err


def test_default_global_batch_over_the_bound_names_the_flags(run):
    r = run("memory", "llama-3-8b", "--micro-batch", "1000000", "--nodes", "13")
    one_line_exit_2(r)
    assert "--micro-batch" in r.err and "--global-batch" in r.err


@pytest.mark.parametrize("args", [
    ("plan", "llama70b", "--nodes", "1000000", "--gpus-per-node", "1024"),
    ("memory", "llama70b", "--nodes", "1000000"),
    ("step", "llama70b", "--nodes", "1000000"),
])
def test_huge_clusters_name_the_flags_typed(run, args):
    r = run(*args)  # before: a pydantic error (exit 1), or one naming dp
    one_line_exit_2(r)
    assert "--nodes" in r.err and "dp:" not in r.err


@pytest.mark.parametrize("nodes", ["99999999999", "\u00b2", "\u0662", "1,\u00b2"])
def test_sweep_node_counts(run, nodes):
    r = run("sweep", "--models", "llama70b", "--nodes", nodes)
    one_line_exit_2(r)
    assert "--nodes" in r.err


# --- 5. no inf reaching output -----------------------------------------------------------------

@pytest.mark.parametrize("flag", ["--nic-efficiency", "--intra-efficiency"])
def test_tiny_efficiency_flags(run, flag):
    r = run("comm", "all-reduce", "--size", "1GB", "--nodes", "2", flag, "1e-300")
    one_line_exit_2(r)  # before: exit 0 with a time of 1e+300 s or more
    assert flag in r.err


def test_tiny_catalog_link_cannot_reach_output(run, tmp_path):
    _entry_file(tmp_path, "link", "nvlink3", bandwidth_GBps=1e-300)
    r = run("--catalog-dir", tmp_path / "cat", "catalog", "list")
    one_line_exit_2(r)
    assert "bandwidth_GBps" in r.err


# --- 6. the same catalog directory once ------------------------------------------------------

def test_same_catalog_dir_twice_is_loaded_once(run, tmp_path, monkeypatch):
    d = _entry_file(tmp_path, "nic", "connectx-6").parent
    for dirs in ((str(d), str(d)), (str(d) + "/", str(d)), (str(d / "."), str(d))):
        cat = catalog_mod.load(dirs)  # before: "name 'my-nic' clashes with nic 'my-nic'"
        assert cat.get("my-nic", "nic").name == "my-nic"
    r = run("--catalog-dir", d, "--catalog-dir", str(d) + "/", "catalog", "show", "my-nic")
    assert r.code == 0, r.err
    monkeypatch.setenv(catalog_mod.ENV_VAR, str(d))  # the flag and the variable: one directory
    r = run("--catalog-dir", d, "catalog", "show", "my-nic")
    assert r.code == 0, r.err


def test_builtin_dir_as_a_user_dir_is_not_a_clash():
    cat = catalog_mod.load((str(BUILTIN),))
    assert cat.get("a100-80gb", "gpu").name == "a100-80gb"


# --- 7. information items ----------------------------------------------------------------------

def test_comm_sizes_over_the_cap_is_an_error(run):
    r = run("comm", "all-reduce", "--sizes", "1B..1e21")  # before: silently stopped at 64
    one_line_exit_2(r)
    assert "64" in r.err
    r = run("comm", "all-reduce", "--sizes", "1KB..8GB", "--format", "json")
    assert r.code == 0, r.err
    # 1 kB, 2 kB, ..., 2^23 kB = 8.39 GB > 8 GB: 2^0..2^22 kB, 23 sizes (1e3 * 2^22 = 4.19e9)
    assert len(r.json()["rows"]) == 23


@pytest.mark.parametrize("device", ["a100-80gb", "alveo-v80"])
def test_threads_on_a_device_without_threads_is_an_error(run, device):
    r = run("optimizer-step", "--params", "1B", "--device", device, "--threads", "4")
    one_line_exit_2(r)  # before: ignored, exit 0
    assert "--threads" in r.err


def test_threads_still_apply_to_cpus_and_dpus(run):
    for device in ("bluefield-3", "epyc-7742"):
        r = run("optimizer-step", "--params", "1B", "--device", device, "--threads", "4")
        assert r.code == 0, r.err


def test_fit_layers_says_it_hit_the_search_cap(run, tmp_path):
    """A 64-wide model fits more than the 100,000-layer search cap on one DGX: the answer is a
    lower bound, not exact."""
    p = tmp_path / "config.json"
    p.write_text(json.dumps({"_name_or_path": "tiny", "model_type": "gpt2", "n_embd": 64,
                             "n_layer": 1, "n_head": 1, "n_inner": 64, "n_positions": 8,
                             "vocab_size": 64}))
    r = run("fit", p, "--solve", "layers", "--zero", "3", "--seq-len", "8", "--format", "json")
    assert r.code == 0, r.err
    d = r.json()
    assert d["max_layers"] == 100_000
    assert "cap" in d["method"] and "exact" not in d["method"]


def test_divisors_by_factorisation():
    for n in range(1, 3000):
        assert divisors(n) == [d for d in range(1, n + 1) if n % d == 0], n
    # 100,000,000 = 2^8 * 5^8: (8 + 1) * (8 + 1) = 81 divisors
    t0 = time.perf_counter()
    ds = divisors(100_000_000)
    assert len(ds) == 81 and ds[0] == 1 and ds[-1] == 100_000_000
    # 999,999,937 is prime; 2^30 has 31 divisors
    assert divisors(999_999_937) == [1, 999_999_937]
    assert len(divisors(2 ** 30)) == 31
    assert time.perf_counter() - t0 < 0.5  # before: a loop to n, several seconds


@pytest.mark.parametrize("value", ["true", '"80"'])
def test_catalog_numbers_are_numbers(run, tmp_path, value):
    # issue 15: `memory_GB = true` loaded as 1.0 and "80" as 80 (pydantic's lax coercion)
    d = tmp_path / "cat"
    d.mkdir()
    (d / "g.toml").write_text(f"""[[gpu]]
name = "lax-gpu"
vendor = "nvidia"
memory_GB = {value}
hbm_bandwidth_GBps = 2000
peak_TFLOPS = {{ fp32 = 19.5, bf16 = 312 }}
scale_up_link = "nvlink3"
scale_up_GBps = 300
host_link = "pcie4-x16"
source = "test entry"
""")
    r = run("--catalog-dir", d, "catalog", "show", "lax-gpu")
    assert r.code == 2 and "field 'memory_GB'" in r.err and "is not a number" in r.err


def test_plan_objective_memory_says_slower_not_negative_faster(run):
    # issue 15: `plan --objective memory` printed "-39.5% faster"
    r = run("plan", "llama70b", "--nodes", 4, "--objective", "memory", "--format", "json")
    assert r.code == 0
    assert "-" not in r.json()["why"].split("than the best")[0].split(";")[-1]
