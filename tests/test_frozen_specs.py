"""The plain spec classes (specs/frozen.py): pydantic's model interface the code uses, and
validation through each class's pydantic twin with pydantic's rules and messages (issue 35)."""

import copy
import pickle

import pytest
from pydantic import ValidationError

from optimus_calc import catalog as C
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.frozen import Frozen, twin
from optimus_calc.specs.hardware import GPU, Cluster, Flops
from optimus_calc.specs.training import Layout


@pytest.fixture(scope="module")
def cat():
    return C.load(())


def test_bounds_and_defaults_are_the_declared_ones():
    # specs/assumptions.py: gpu_headroom = Field(default=0.05, ge=0, le=0.9)
    info = Assumptions.model_fields["gpu_headroom"]
    assert info.default == 0.05 and not info.is_required()
    assert [(b.ge, b.le) for b in info.metadata] == [(0, None), (None, 0.9)]
    assert Layout.model_fields["tp"].metadata[0].gt == 0  # tp: Field(default=1, gt=0, ...)
    assert GPU.model_fields["memory_GB"].is_required()
    assert list(Layout.model_fields)[:2] == ["tp", "pp"]  # declaration order


def test_validation_is_pydantics_with_the_class_name():
    with pytest.raises(ValidationError) as exc:
        Assumptions(gpu_headroom=2)
    err = exc.value
    assert err.title == "Assumptions"
    assert err.errors()[0]["loc"] == ("gpu_headroom",)
    assert "less than or equal to 0.9" in err.errors()[0]["msg"]
    with pytest.raises(ValidationError, match="extra"):
        Layout(tp=2, bogus=1)  # extra="forbid"
    # a field validator (Assumptions._a_switch: 0 or 1) and an after-model validator reading
    # the class's fields (Layout._ep_divides: EP divides DP x CP)
    with pytest.raises(ValidationError, match="0 or 1"):
        Assumptions(nccl_latency_model=0.5)
    with pytest.raises(ValidationError, match="ep"):
        Layout(dp=2, ep=3)


def test_validated_values_are_converted_as_pydantic_converts_them():
    a = Assumptions(gpu_headroom=0)  # an int for a float field becomes 0.0
    assert type(a.gpu_headroom) is float and a.gpu_headroom == 0.0
    assert a.model_fields_set == {"gpu_headroom"}
    assert type(Assumptions().sac_saves_ep_all_to_all) is float  # validate_default: 1 -> 1.0
    assert isinstance(a, Frozen) and not isinstance(a, twin(Assumptions))


def test_nested_specs_validate_and_come_back_as_specs(cat):
    node = cat.get("dgx-a100", "node")
    cluster = Cluster(node=node, count=2)  # a spec given as a nested field's value
    assert type(cluster.node) is type(node) and cluster.node == node
    assert cluster.gpus == 16  # 2 nodes x 8 GPUs (catalog dgx-a100)
    gpu = cat.get("a100-80gb", "gpu")
    raw = gpu.model_dump()
    assert raw["peak_TFLOPS"]["bf16"] == 312.0  # A100 datasheet, dense BF16
    again = GPU(**raw)
    assert again == gpu and type(again.peak_TFLOPS) is Flops
    with pytest.raises(ValidationError) as exc:
        GPU(**{**raw, "peak_TFLOPS": {**raw["peak_TFLOPS"], "fp32": 0}})
    assert "peak_TFLOPS.fp32" in str(exc.value)  # GPU._fp32_peak, run on the twin


def test_copy_construct_equality_hash_and_frozen():
    lay = Layout(tp=2, dp=4)
    wider = lay.model_copy(update={"tp": 4})  # not validated, as pydantic's model_copy
    assert (wider.tp, wider.dp, lay.tp) == (4, 4, 2)
    assert wider.model_fields_set == {"tp", "dp"}
    assert Layout.model_construct(tp=2, dp=4) == lay
    assert hash(Layout.model_construct(tp=2, dp=4)) == hash(lay)
    assert lay != wider and lay != object()
    with pytest.raises(ValidationError, match="Instance is frozen"):
        lay.tp = 8
    assert dict(lay)["dp"] == 4 and list(dict(lay)) == list(Layout.model_fields)
    for clone in (copy.copy(lay), copy.deepcopy(lay), pickle.loads(pickle.dumps(lay))):
        assert clone == lay and clone.model_fields_set == lay.model_fields_set
        assert hash(clone) == hash(lay)


def test_the_hash_is_kept_once_computed_and_copies_compute_their_own():
    # the hash is computed once per instance (62,000 hashes in a validate); a copy with a
    # changed field must not inherit its source's kept value
    lay = Layout(tp=2, dp=4)
    first = hash(lay)
    assert lay._hash_value == first and hash(lay) == first
    wider = lay.model_copy(update={"tp": 4})
    assert hash(wider) == hash(Layout(tp=4, dp=4)) != first
    assert hash(copy.deepcopy(lay)) == first and hash(lay.model_copy()) == first


def test_model_validate_and_json_dump():
    lay = Layout(tp=2)
    assert Layout.model_validate(lay) is lay
    assert Layout.model_validate({"tp": 2}) == lay
    with pytest.raises(ValidationError):
        Layout.model_validate([1, 2])
    dumped = Assumptions().model_dump(mode="json")
    assert dumped["gpu_headroom"] == 0.05
    assert Layout(tp=2).model_dump(exclude={"tp"}).get("tp") is None


def test_a_class_of_defaults_is_validated_once_and_never_shared():
    # cls() keeps its validated defaults per class (Assumptions() took ~15 us through the twin
    # each time); each instance gets its own dict, and a default factory's value is made per
    # instance, as pydantic does
    a, b = Assumptions(), Assumptions()
    assert a == b and a.__dict__ is not b.__dict__ and b.model_fields_set == set()
    assert type(b.sac_saves_ep_all_to_all) is float  # still the validated default (1 -> 1.0)
    from optimus_calc.specs.frozen import Field as F

    class Opt(Frozen):
        xs: dict = F(default_factory=dict)
        n: float = 1

    x, y = Opt(), Opt()
    assert x.xs == {} and x.xs is not y.xs and type(y.n) is float
