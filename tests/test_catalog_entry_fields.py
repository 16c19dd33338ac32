"""Issue 15, input hardening: every device type's required fields are checked when the catalog
loads, and a catalog entry missing one exits 2 in every command (split by subject from
test_hardening.py)."""

from __future__ import annotations

import math
import tomllib

import pytest

from optimus_calc import catalog as catalog_mod
from optimus_calc.errors import CatalogError
from catalog_files import _entry_file
from cli_process import BUILTIN, one_line_exit_2


# --- 2. required fields per device type, at catalog load ---------------------------------------

# (kind, built-in entry copied, fields dropped, fields changed, field the error must name)
BAD_ENTRIES = [
    ("smartnic", "bluefield-3", ("cores",), {}, "cores"),
    ("smartnic", "bluefield-3", ("core_bandwidth_GBps",), {}, "core_bandwidth_GBps"),
    ("smartnic", "bluefield-3", (), {"core_GHz": 0.0}, "core_GHz"),
    ("smartnic", "bluefield-3", ("fp32_flops_per_cycle",), {}, "fp32_flops_per_cycle"),
    ("smartnic", "intel-ipu-e2100", ("cores",), {}, "cores"),
    ("smartnic", "alveo-v80", ("fabric_fp32_TFLOPS",), {}, "fabric_fp32_TFLOPS"),
    ("smartnic", "alveo-v80", ("expansion_bandwidth_GBps",), {}, "expansion_bandwidth_GBps"),
    ("smartnic", "bluefield-3", (), {"memory_efficiency": 1e-300}, "memory_efficiency"),
    ("gpu", "a100-80gb", (), {"peak_TFLOPS": {"bf16": 312.0}}, "peak_TFLOPS.fp32"),
    ("gpu", "a100-80gb", (), {"peak_TFLOPS": {"fp32": 19.5, "bf16": 1e-300}}, "peak_TFLOPS.bf16"),
    ("gpu", "a100-80gb", (), {"hbm_bandwidth_GBps": 1e-300}, "hbm_bandwidth_GBps"),
    ("cpu", "epyc-7742", (), {"base_GHz": 0.0}, "base_GHz"),
    ("cpu", "epyc-7742", (), {"base_GHz": 1e-300}, "base_GHz"),
    ("cpu", "epyc-7742", (), {"core_bandwidth_GBps": 1e-300}, "core_bandwidth_GBps"),
    ("nic", "connectx-6", (), {"efficiency": 1e-300}, "efficiency"),
    ("nic", "connectx-6", (), {"line_rate_Gbps": 1e-300}, "line_rate_Gbps"),
    ("link", "nvlink3", (), {"bandwidth_GBps": 1e-300}, "bandwidth_GBps"),
    ("link", "nvlink3", (), {"efficiency": 1e-300}, "efficiency"),
    ("nvme", None, (), {"read_GBps": 1e-300}, "read_GBps"),
    ("node", "dgx-a100", (), {"host_memory_GB": 1e-300}, "host_memory_GB"),
    ("node", "dgx-a100", (), {"gpus_per_host": 3}, "gpus_per_host"),
    ("model", "llama-3-70b", (), {"published_params": math.inf}, "published_params"),
    ("model", "llama-3-70b", (), {"seq_len": 20_000_000}, "seq_len"),
]


@pytest.mark.parametrize("kind,base,drop,changes,field", BAD_ENTRIES,
                         ids=[f"{k}-{f}-{'missing' if d else 'bad'}"
                              for k, _, d, _, f in BAD_ENTRIES])
def test_catalog_entry_validated_at_load(tmp_path, kind, base, drop, changes, field):
    if base is None:
        base = next(iter(tomllib.loads(
            (BUILTIN / "storage" / "nvme.toml").read_text())["nvme"]))["name"]
    f = _entry_file(tmp_path, kind, base, drop, **changes)
    with pytest.raises(CatalogError) as exc:
        catalog_mod.load((str(f.parent),))
    msg = str(exc.value)
    assert str(f) in msg and f"my-{kind}" in msg and repr(field) in msg, msg


def test_the_copies_themselves_are_valid(tmp_path):
    """The BAD_ENTRIES fixtures fail only because of the one change each makes."""
    for kind, base in (("smartnic", "bluefield-3"), ("smartnic", "alveo-v80"),
                       ("smartnic", "intel-ipu-e2100"), ("gpu", "a100-80gb"),
                       ("cpu", "epyc-7742"), ("nic", "connectx-6"), ("link", "nvlink3"),
                       ("node", "dgx-a100"), ("model", "llama-3-70b")):
        d = tmp_path / f"{kind}-{base}"
        d.mkdir()
        f = _entry_file(d, kind, base)
        cat = catalog_mod.load((str(f.parent),))
        assert cat.get(f"my-{kind}", kind).name == f"my-{kind}"


def test_dpu_without_cores_exits_2_in_every_command(run, tmp_path):
    """Before: ZeroDivisionError (exit 1) in plan, nics, compare, step and optimizer-step."""
    f = _entry_file(tmp_path, "smartnic", "bluefield-3", ("cores", "core_bandwidth_GBps"))
    for args in (("plan", "llama-2-7b", "--smartnic", "my-smartnic"),
                 ("nics", "llama-2-7b", "--smartnic", "my-smartnic"),
                 ("compare", "llama-2-7b", "--smartnic", "my-smartnic"),
                 ("step", "llama-2-7b", "--offload", "smartnic", "--zero", "1",
                  "--smartnic", "my-smartnic"),
                 ("optimizer-step", "--params", "1B", "--device", "my-smartnic")):
        r = run("--catalog-dir", f.parent, *args)
        one_line_exit_2(r)
        assert "'cores'" in r.err and "my-smartnic" in r.err, (args, r.err)


def test_a_source_citing_docs_reference_is_not_doubled():
    # report.common.cite maps the seeds' shared/reference paths to the repository's
    # docs/reference copies; a source that already names docs/reference/ stays as written
    from optimus_calc.report.common import cite
    assert cite("docs/reference/hardware-specs.md: GB200") == \
        "docs/reference/hardware-specs.md: GB200"
    assert cite("shared/reference/calibration.md section 3") == \
        "docs/reference/calibration.md section 3"
    assert cite("hardware-specs.md section 5 (x)") == "hardware-specs.md section 5 (x)"


def test_gb200_nvl72_is_one_nvlink_domain(cat):
    # 72 GB200 GPUs and 36 Grace CPUs (2 GPUs per Grace) on NVLink5 (900 GB/s per direction,
    # docs/reference/hardware-specs.md GB200 row); C2C to the Grace half: a superchip node
    n = cat.get("gb200-nvl72", "node")
    assert (n.gpus, n.cpus, n.gpu, n.intra_link, n.gpu_host_link, n.superchip) == \
        (72, 36, "gb200", "nvlink5", "nvlink-c2c", True)
    assert n.host_memory_GB == 36 * 480
