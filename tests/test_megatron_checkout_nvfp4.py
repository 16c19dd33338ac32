"""Megatron-LM d98e8a64's parse_args + validate_args on the --precision nvfp4 exports, and the
GPT builder's parameter count (the planned one). Needs the checkout on PYTHONPATH like
tests/test_megatron_checkout.py (skipped without it; outside CI, docs/frameworks.md).

Transformer Engine is not installed, so validate_args' `is_te_min_version("2.7.0.dev0")` (the
FP4 checks, arguments.py L1058 and L1108) is answered True; every other version check keeps its
real (TE-absent) answer. The device is Blackwell (get_device_arch_version 10), as on B200/GB200.
"""

import pytest

from optimus_calc import catalog
from test_framework_parsers import _export, _plan
from test_megatron_checkout import (_megatron_build, _megatron_validate,  # noqa: F401
                                    megatron)


@pytest.fixture
def nvfp4(megatron, monkeypatch):
    arguments, torch = megatron
    real = arguments.is_te_min_version

    def te(version, *a, **k):
        return True if version == "2.7.0.dev0" else real(version, *a, **k)
    monkeypatch.setattr(arguments, "is_te_min_version", te)
    monkeypatch.setattr(arguments, "get_device_arch_version", lambda: 10)  # Blackwell
    return arguments, torch


CASES = {
    "b200-plan": ("llama-3-8b", "--node", "dgx-b200", "--nodes", 1),
    "b200-zero0": ("llama-3-8b", "--node", "dgx-b200", "--nodes", 1, "--zero", 0),
    "b200-zero1": ("llama-3-8b", "--node", "dgx-b200", "--nodes", 1, "--zero", 1,
                   "--offloads", "none"),
    "b200-zero1-cpu": ("llama-3-8b", "--node", "dgx-b200", "--nodes", 1, "--zero", 1,
                       "--offloads", "cpu"),
    "gb200-plan": ("llama-3-70b", "--node", "gb200-nvl72", "--nodes", 1),
    "gb200-zero1": ("llama-3-70b", "--node", "gb200-nvl72", "--nodes", 1, "--zero", 1,
                    "--offloads", "none"),
    "gb200-qwen3moe": ("qwen3-30b-a3b", "--node", "gb200-nvl72", "--nodes", 1),
}


@pytest.mark.parametrize("case", list(CASES))
def test_nvfp4_export_validates_and_builds(run, tmp_path, monkeypatch, nvfp4, case):
    arguments, torch = nvfp4
    args = (*CASES[case], "--precision", "nvfp4", "--framework", "megatron")
    text = _export(run, tmp_path, *args, "--export", "megatron")
    lay = _plan(run, *args)
    (tmp_path.parent / f"{case}.sh").write_text(text)
    margs, argv = _megatron_validate(arguments, monkeypatch, text)
    assert margs.fp4 == "e2m1" and margs.fp4_recipe == "nvfp4" and margs.bf16
    # NVFP4 parameters under the distributed optimizer only (Fp8Recipe.params_max_zero):
    # Megatron-FSDP (ZeRO 2-3) has no NVFP4 shard quantization
    gather = lay["zero"] == 1 and lay.get("offload", "none") in ("none", None)
    assert ("--fp4-param-gather" in argv) is gather
    assert margs.fp4_param_gather is gather
    assert (margs.tensor_model_parallel_size, margs.pipeline_model_parallel_size,
            margs.data_parallel_size) == (lay["tp"], lay["pp"], lay["dp"])
    if lay["zero"] == 0:
        assert "--fp4-param-gather" not in argv
    planned = catalog.load(()).get(CASES[case][0], "model")
    built, mtp = _megatron_build(arguments, torch, margs)
    assert built == planned.total_params
