"""Catalog integrity over every data file, and invariants over every entry."""

import json
import tomllib
from pathlib import Path

import pytest

from optimus_calc import catalog as catalog_mod
from optimus_calc.errors import CatalogError, UnknownNameError

FILES = sorted(catalog_mod.builtin_dir().rglob("*.toml"))


def test_catalog_files_exist():
    assert len(FILES) >= 10


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_file_parses_and_every_entry_has_a_source(path):
    data = tomllib.loads(path.read_text())
    assert data, f"{path} is empty"
    for kind, items in data.items():
        assert kind in catalog_mod.KINDS
        for raw in items:
            assert len(raw.get("source", "")) >= 10, f"{raw.get('name')} has no real source"


def test_names_unique_and_lowercase(cat):
    seen = set()
    for e in cat.all():
        for n in (e.name, *e.aliases):
            assert n == n.lower() and " " not in n
            assert n not in seen, f"duplicate name {n}"
            seen.add(n)


def test_unverified_and_assumed_name_real_fields(cat):
    for e in cat.all():
        fields = set(type(e).model_fields)
        for f in (*e.unverified, *e.assumed):
            assert f.split(".")[0] in fields, f"{e.name}: {f} is not a field"


REQUIRED = {
    "gpu": ["v100-32gb", "a100-40gb", "a100-80gb", "h100-sxm", "h100-pcie", "h200", "b200",
            "gb200", "gh200-96gb", "gh200-144gb", "mi250x", "mi300x", "mi300a"],
    "cpu": ["epyc-7742", "epyc-7763", "epyc-9654", "xeon-8168", "xeon-8480", "grace"],
    "smartnic": ["bluefield-2", "bluefield-3", "alveo-v80", "alveo-u280", "intel-ipu-e2100"],
    "nic": ["connectx-6", "connectx-7", "connectx-8"],
    "nvme": ["intel-d7-p5600", "micron-9550"],
    "node": ["dgx-2", "dgx-a100", "dgx-h100", "dgx-h200", "dgx-b200", "xe8545", "gh200",
             "mi300x-node"],
    "model": ["llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b", "llama-3-70b",
              "llama-3-405b", "gpt3-175b", "gpt2-xl", "bert-large", "mixtral-8x7b",
              "gpt-oss-20b", "gpt-oss-120b", "qwen3-14b", "qwen3-30b-a3b", "phi-4",
              "gpt-1.7b", "gpt-3.6b", "gpt-7.5b", "gpt-18.4b", "gpt-39.1b", "gpt-76.1b",
              "gpt-145.6b", "gpt-310.1b", "gpt-529.6b", "gpt-1008b"],
}


@pytest.mark.parametrize("kind", sorted(REQUIRED))
def test_required_entries_present(cat, kind):
    for name in REQUIRED[kind]:
        assert cat.find(name, kind) is not None, f"missing {kind} {name}"


def test_aliases_resolve(cat):
    assert cat.get("llama70b", "model").name == "llama-3-70b"
    assert cat.get("LLAMA70B", "model").name == "llama-3-70b"
    assert cat.get("bf3", "smartnic").name == "bluefield-3"


def test_unknown_name_suggests(cat):
    with pytest.raises(UnknownNameError, match="did you mean.*bluefield"):
        cat.get("bluefeild-3", "smartnic")


def test_xe8545_matches_the_seed(cat):
    # seeds/deepspeed-bandwidth-characterization-methods.md Table II
    n = cat.get("xe8545", "node")
    assert (n.gpus, n.gpu, n.cpus, n.cpu, n.host_memory_GB, n.nics, n.nic) == (
        4, "a100-40gb", 2, "epyc-7763", 1024, 2, "connectx-6")


def _write(tmp_path: Path, text: str) -> Path:
    d = tmp_path / "cat"
    d.mkdir()
    (d / "x.toml").write_text(text)
    return d


GOOD_GPU = '''[[gpu]]
name = "my-gpu"
vendor = "nvidia"
memory_GB = 10
hbm_bandwidth_GBps = 100
peak_TFLOPS = { fp32 = 1, bf16 = 10 }
scale_up_link = "nvlink3"
scale_up_GBps = 100
host_link = "pcie4-x16"
source = "my lab measurement, 2026"
'''


def test_user_catalog_dir_adds_entries(tmp_path):
    d = _write(tmp_path, GOOD_GPU)
    cat = catalog_mod.load((str(d),))
    assert cat.get("my-gpu", "gpu").memory_GB == 10


@pytest.mark.parametrize("text,match", [
    ("[[gpu]\nname=", r"x\.toml: not valid TOML.*line 1"),
    (GOOD_GPU.replace('memory_GB = 10', 'memory_GB = 10\ncolour = "red"'),
     r"x\.toml: \[\[gpu\]\] my-gpu: field 'colour': unknown key"),
    (GOOD_GPU.replace('source = "my lab measurement, 2026"\n', ''),
     r"field 'source': missing required field"),
    (GOOD_GPU.replace('hbm_bandwidth_GBps = 100', 'hbm_bandwidth_GBps = -1'),
     r"field 'hbm_bandwidth_GBps'"),
    (GOOD_GPU.replace('"my-gpu"', '"a100-80gb"'), r"name 'a100-80gb' clashes with a built-in"),
    (GOOD_GPU.replace('"nvlink3"', '"nvlink9"'), r"field 'scale_up_link': no link named"),
    ("[[gizmo]]\nname='x'", r"unknown table \[\[gizmo\]\]"),
])
def test_bad_user_catalog_files(tmp_path, text, match):
    d = _write(tmp_path, text)
    with pytest.raises(CatalogError, match=match):
        catalog_mod.load((str(d),))


def test_missing_catalog_dir(tmp_path):
    with pytest.raises(CatalogError, match="does not exist"):
        catalog_mod.load((str(tmp_path / "nope"),))


def test_parse_snapshot_is_fresh():
    # the built-in catalog's JSON snapshot holds every TOML file's exact text and its parse
    from optimus_calc.catalog_snapshot import snapshot
    root = catalog_mod.builtin_dir()
    on_disk = (root / catalog_mod.SNAPSHOT).read_text(encoding="utf-8")
    assert on_disk == snapshot(), "run python -m optimus_calc.catalog_snapshot"
    files = json.loads(on_disk)["files"]
    assert sorted(files) == sorted(p.relative_to(root).as_posix() for p in FILES)
    for rel, entry in files.items():
        assert entry["data"] == tomllib.loads((root / rel).read_text())


def test_an_edited_builtin_file_is_parsed_not_taken_from_the_snapshot(tmp_path):
    import shutil
    root = tmp_path / "catalog"
    shutil.copytree(catalog_mod.builtin_dir(), root)
    gpu = root / "gpus" / "nvidia.toml"
    text = gpu.read_text()
    assert 'memory_GB = 80' in text
    gpu.write_text(text.replace('memory_GB = 80', 'memory_GB = 81', 1))
    cat = catalog_mod.Catalog()
    catalog_mod._load_dir(root, cat, builtin=True)
    mem = sorted(e.memory_bytes for e in cat.entries["gpu"].values())
    assert 81e9 in mem
    # and a malformed edit is still an error naming the file, not a stale snapshot entry
    gpu.write_text(text + "\n[[gpu]\n")
    with pytest.raises(CatalogError, match="nvidia.toml"):
        catalog_mod._load_dir(root, catalog_mod.Catalog(), builtin=True)
