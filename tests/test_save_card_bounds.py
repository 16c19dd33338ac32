"""`breakeven --save-card` writes only a card the catalog loads (a cold review saved a
BlueField-3 'minimum card' of 0.0058 GHz cores that `--catalog-dir` then refused), and only to a
*.toml file (`--catalog-dir` reads nothing else)."""

import pytest

from optimus_calc.catalog import check_entries
from optimus_calc.errors import CatalogError

_CARD = """[[smartnic]]
name = "tiny"
title = "t"
device_type = "dpu"
cores = 16
core_GHz = {ghz}
fp32_flops_per_cycle = 16
memory_GB = 32.0
memory_bandwidth_GBps = 100.0
memory_efficiency = 0.7
core_bandwidth_GBps = 5.0
line_rate_Gbps = 400.0
host_link = "pcie5-x16"
source = "test"
"""


def test_check_entries_applies_the_loaders_bounds():
    check_entries(_CARD.format(ghz=2.0), "c.toml")  # within bounds: no error
    # specs/hardware.py: a DPU's core_GHz must be >= 0.01
    with pytest.raises(CatalogError, match=r"c\.toml: \[\[smartnic\]\] tiny: field 'core_GHz'"):
        check_entries(_CARD.format(ghz=0.005), "c.toml")


def test_a_card_below_the_catalogs_bounds_is_not_written(run, tmp_path):
    out = tmp_path / "c.toml"
    # BERT-large's optimizer step over 64 nodes is so small that the cheapest BlueField-3
    # corner hiding it has cores below 0.01 GHz
    r = run("breakeven", "bert-large", "--nodes", 64, "--device", "bluefield-3",
            "--save-card", out)
    assert r.code == 2
    assert r.err.startswith("error: --save-card: nothing written: the card would not load")
    assert "core_GHz" in r.err and len(r.err.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize("name", ["c.txt", "c.TOML"])  # catalog._toml_files: "*.toml" only
def test_a_card_file_must_be_toml(run, tmp_path, name):
    r = run("breakeven", "llama-2-7b", "--device", "bluefield-3", "--save-card",
            tmp_path / name)
    assert r.code == 2
    assert "a card is a catalog TOML file; name it *.toml" in r.err
    assert not (tmp_path / name).exists()
