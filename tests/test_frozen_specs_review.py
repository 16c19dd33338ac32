"""Review of the plain spec classes (specs/frozen.py, issue 35): where they behaved differently
from the pydantic models they replace (8250c52), each case checked against pydantic's own
behaviour by hand."""

import pytest
from pydantic import ValidationError

from optimus_calc.specs.training import Layout

GPU_ENTRY = '''[[gpu]]
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


def test_a_field_named_self_is_an_unknown_key(tmp_path, run):
    # pydantic's __init__ takes self positionally only: a key "self" is one more (extra) field
    with pytest.raises(ValidationError) as exc:
        Layout(**{"self": 1})
    assert exc.value.errors()[0]["type"] == "extra_forbidden"
    assert exc.value.errors()[0]["loc"] == ("self",)
    (tmp_path / "x.toml").write_text(GPU_ENTRY + "self = 1\n")
    res = run("--catalog-dir", tmp_path, "catalog", "show", "my-gpu")
    assert res.code == 2
    assert "[[gpu]] my-gpu: field 'self': unknown key" in res.err
    assert "internal error" not in res.err
