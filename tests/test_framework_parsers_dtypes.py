"""DeepSpeed's own optimizer choice on the exported gradient dtypes (``--grad-bytes``), from its
PyPI package (0.19.8, ``make test-frameworks``; skipped without it, as test_framework_parsers.py
says): ``DeepSpeedEngine._do_optimizer_sanity_check`` run on the exported config as
``DeepSpeedConfig`` parses it, with the engine's own accessors and no model or GPU. It is where
DeepSpeed picks the optimizer wrapper from the model dtype, ``data_types.grad_accum_dtype``, the
ZeRO stage and the offload (runtime/engine.py L1978-2021 @ edaa722, the pinned commit; 0.19.8
has the same test), so it checks the premises of the DS_GRAD_* rules (frameworks/deepspeed.py)
on the real code: the BF16 optimizer for the ZeRO-1 export, the ZeRO optimizer for ZeRO-3, and
a refusal or another optimizer where the rules refuse the layout.
"""

import json

import pytest

from test_framework_parsers import _deepspeed_config, _export, _need, _plan


class _Engine:
    """The engine's own methods (get_data_types, zero_cpu_offload, ...) on a parsed config."""

    global_rank, pipeline_parallelism = 0, False

    def __init__(self, config):
        self._config = config

    def __getattr__(self, name):
        engine = _need("deepspeed.runtime.engine").DeepSpeedEngine
        return getattr(engine, name).__get__(self)


def _choice(run, tmp_path, *args, extra=None):
    """The optimizer wrapper DeepSpeed selects for the export of ``plan *args``."""
    torch = _need("torch")
    cfg = json.loads(_export(run, tmp_path, *args, "--export", "deepspeed"))
    cfg.update(extra or {})
    lay = _plan(run, *args)
    c = _deepspeed_config(cfg, lay["tp"] * lay["pp"] * lay["dp"], lay["dp"])
    adam = torch.optim.Adam([torch.nn.Parameter(torch.zeros(4))])
    with pytest.MonkeyPatch.context() as mp:  # rank 0 of no process group
        mp.setattr(_need("deepspeed.runtime.zero.utils").dist, "get_rank", lambda *a, **k: 0)
        return cfg, _Engine(c)._do_optimizer_sanity_check(adam)


def _engine_const(name: str) -> str:
    """The wrapper names the engine compares with (runtime/constants.py, zero/config.py)."""
    return getattr(_need("deepspeed.runtime.engine"), name)


DS = ("--framework", "deepspeed")
FP32_GRADS = {"data_types": {"grad_accum_dtype": "fp32"}, "communication_data_type": "fp32"}


@pytest.mark.parametrize("args", [
    ("llama8b", "--nodes", 1, *DS, "--zero", 1),
    # Megatron-DeepSpeed's plan pinned to ZeRO-1 (TP 8 x PP 4 x DP 1 when it was its first
    # choice; ZeRO-3 ranks first since the loss over the logits is timed): the same exporter
    # and engine
    ("llama70b", "--nodes", 4, "--framework", "megatron-deepspeed", "--zero", 1),
], ids=["deepspeed", "megatron-deepspeed"])
def test_zero1_bf16_export_gets_the_bf16_optimizer(run, tmp_path, args):
    cfg, choice = _choice(run, tmp_path, *args, "--grad-bytes", 4)
    assert cfg["zero_optimization"]["stage"] == 1 and cfg["data_types"]
    assert choice == _engine_const("BFLOAT16") == "bf16"


def test_zero3_export_gets_the_zero_optimizer(run, tmp_path):
    cfg, choice = _choice(run, tmp_path, "llama70b", "--nodes", 4, *DS, "--grad-bytes", 4)
    assert cfg["zero_optimization"]["stage"] == 3 and cfg["data_types"]
    assert choice == _engine_const("ZERO_OPTIMIZATION") == "zero_optimization"


def test_refused_layouts_run_otherwise_on_deepspeed(run, tmp_path):
    """The keys added by hand to exports of layouts the rules refuse with --grad-bytes 4."""
    zero_opt = _engine_const("ZERO_OPTIMIZATION")
    # ZeRO-0 (DS_GRAD_FP32_ZERO0): the unsupported mix
    with pytest.raises(NotImplementedError, match="unsupported mix"):
        _choice(run, tmp_path, "llama8b", "--nodes", 1, *DS, "--zero", 0, "--offloads", "none",
                extra=FP32_GRADS)
    # fp16 at ZeRO-1 (DS_GRAD_FP32_FP16_ZERO1) and bf16 ZeRO-1 with CPU offload
    # (DS_GRAD_FP32_OFFLOAD): the ZeRO optimizer, not the BF16 one
    cfg, choice = _choice(run, tmp_path, "llama8b", "--nodes", 1, *DS, "--zero", 1,
                          "--precision", "fp16", extra=FP32_GRADS)
    assert cfg["fp16"]["enabled"] and choice == zero_opt
    cfg, choice = _choice(run, tmp_path, "llama8b", "--nodes", 1, *DS, "--zero", 1,
                          "--offloads", "cpu", extra=FP32_GRADS)
    assert cfg["zero_optimization"]["offload_optimizer"]["device"] == "cpu"
    assert choice == zero_opt
