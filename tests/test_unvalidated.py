"""specs/base.unvalidated checks the values validation could only accept unchanged (an int
within the field's bounds, a finite float within them, a bool, an enum's member or value text,
None where allowed) without building a schema, and leaves everything else to pydantic: it never
accepts a value validation refuses, and what it builds is what validation builds (values,
types, fields set). The typed flags of break-even's cold path (--tp, --pp, --zero, --recompute,
--seq-len, --global-batch) reach the specs this way."""

import math

import pytest
from pydantic import ValidationError

from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.base import unvalidated
from optimus_calc.specs.training import Layout, Offload, Recompute, Training, ZeroStage
from test_cold_start_budget import _deep_same

NAN, INF = float("nan"), float("inf")
# the bounds of Training's and Layout's fields either side, and values of other types
INTS = [0, 1, 2, -1, 3, 4, 8, 9, 1000, 1001, 1024, 1025, 1_000_000, 1_000_001, 10_000_000,
        10_000_001, 100_000_000, 100_000_001, True, False, 1.0, 2.5, "4", NAN, INF]
FLOATS = [0.0, 0.1, 0.5, 1.0, 1.5, -0.1, 0.9, 0.95, 1e3, 1e-3, 1, 0, True, NAN, INF, -INF,
          "0.1"]
OTHERS = [None, "none", "full", "bf16", "fp16", "te-current", "sgd", "cudnn", "bogus", "",
          "bluefield-3", Offload.NONE, Offload.CPU, Recompute.FULL, ZeroStage.OS_G_P, 3,
          "3"]
VALUES = INTS + FLOATS + OTHERS


def _both(cls, fields):
    """(what validation builds or None when it refuses, what unvalidated builds or None)."""
    try:
        valid = cls(**fields)
    except ValidationError:
        valid = None
    return valid, unvalidated(cls, fields)


@pytest.mark.parametrize("cls,base", [(Training, {"seq_len": 4096}), (Layout, {}),
                                      (Assumptions, {})], ids=["Training", "Layout",
                                                                "Assumptions"])
def test_never_accepts_what_validation_refuses_and_builds_the_same(cls, base):
    accepted = refused = 0
    for name in cls.model_fields:
        for value in VALUES:
            fields = {**base, name: value}
            valid, trusted = _both(cls, fields)
            if valid is None:
                assert trusted is None, (name, value)
                refused += 1
            elif trusted is not None:
                _deep_same(trusted, valid, f"{cls.__name__}.{name}={value!r}")
                accepted += 1
    assert refused > 50  # the grid holds bad values for every kind of field
    if cls is not Assumptions:
        assert accepted > 50  # ... and plain good ones it takes without a schema


def test_the_typed_flags_of_the_readme_breakeven_need_no_schema():
    # breakeven llama70b --nodes 2 --tp 2 --pp 4 --zero 3 --recompute full --seq-len 2048
    # --global-batch 16: the values click parsed (IntRange ints, Choice text)
    tr = unvalidated(Training, {"seq_len": 2048, "micro_batch": 1, "global_batch": 16,
                                "recompute": "full", "precision": "bf16"})
    assert tr is not None and tr.recompute is Recompute.FULL and tr.global_batch == 16
    lay = unvalidated(Layout, {"tp": 2, "pp": 4, "dp": 2, "cp": 1, "ep": 1,
                               "zero": ZeroStage(3), "offload": Offload.NONE,
                               "superchip_gpu_fraction": 0.1})
    assert lay is not None and lay.zero is ZeroStage.OS_G_P and lay.gpus == 16
    assert type(lay.superchip_gpu_fraction) is float


@pytest.mark.parametrize("fields,ok", [
    ({"dp": 8, "ep": 4}, True),            # EP divides dp x cp
    ({"dp": 8, "ep": 3}, False),           # it does not: the model validator's error
    ({"tp": 4, "dp": 4, "ep": 8, "etp": 1}, True),   # folding: EP x ETP divides 16
    ({"tp": 4, "dp": 4, "ep": 8, "etp": 3}, False),
])
def test_the_model_validator_runs_on_what_it_builds(fields, ok):
    valid, trusted = _both(Layout, fields)
    assert (valid is not None) is ok
    assert (trusted is not None) is ok
    if ok:
        _deep_same(trusted, valid)


def test_fields_with_their_own_validator_are_left_to_validation():
    # Assumptions' field validators (a policy, a switch, zero-or-at-least-one) are not known to
    # unvalidated: a value for those fields is validated; a plain bounded field is not
    assert unvalidated(Assumptions, {"selective_policy": 1.0}) is None
    assert unvalidated(Assumptions, {"nccl_latency_model": 0.0}) is None
    asm = unvalidated(Assumptions, {"gpu_headroom": 0.1})
    assert asm is not None and asm.gpu_headroom == 0.1
    assert asm.model_fields_set == {"gpu_headroom"}


def test_a_plugin_offload_and_an_unknown_text_go_to_validation():
    from optimus_calc.specs.training import register_offload
    extra = register_offload("test-unvalidated-target")
    assert unvalidated(Layout, {"offload": extra}) is None
    assert unvalidated(Layout, {"offload": "test-unvalidated-target"}) is None
    assert unvalidated(Layout, {"offload": "nowhere"}) is None
    assert math.isnan(NAN) and unvalidated(Layout, {"superchip_gpu_fraction": NAN}) is None


@pytest.mark.parametrize("args,message", [
    (["breakeven", "mixtral-8x7b", "--nodes", "2", "--tp", "2", "--ep", "3"],
     "error: --ep 3 must divide dp x cp = 8 (or give --etp: Megatron-LM's parallel folding)"),
    (["breakeven", "llama70b", "--nodes", "2", "--global-batch", "7"],
     "error: --global-batch 7 is not a multiple of --dp 16 x --micro-batch 1 = 16"),
])
def test_bad_typed_layouts_are_the_same_one_line_error(run, args, message):
    r = run(*args)
    assert r.code == 2 and r.out == ""
    assert r.err.strip() == message


def test_bad_values_from_the_api_are_validation_errors():
    # build_inputs' callers other than click (scripts, tests) get pydantic's bounds as before
    from optimus_calc import catalog as C
    from optimus_calc.errors import InputError
    from optimus_calc.evaluate.context import fill_layout, resolve_hardware
    from optimus_calc.inputs import make_training
    hw = resolve_hardware(C.load(()), "dgx-a100", 2)
    with pytest.raises(InputError, match=r"^--seq-len 0: Input should be greater than 0$"):
        make_training(seq_len=0)
    with pytest.raises(InputError, match=r"^interleave: Input should be less than or equal to 1000$"):
        fill_layout(hw, 2, 4, None, 1, interleave=1001)
