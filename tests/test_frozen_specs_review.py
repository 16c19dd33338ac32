"""Review of the plain spec classes (specs/frozen.py, issue 35): where they behaved differently
from the pydantic models they replace (8250c52), each case checked against pydantic's own
behaviour by hand."""

import pytest
from pydantic import ValidationError

from optimus_calc.specs.hardware import Flops
from optimus_calc.specs.training import Layout

from test_catalog import GOOD_GPU as GPU_ENTRY  # a valid user GPU entry


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


def test_a_subclass_instance_is_its_base_spec_as_a_nested_value():
    # pydantic accepts an instance of a subclass for a model-typed field and keeps it as given
    # (revalidate_instances="never"): a plug-in's node type in a Cluster, its FLOP table in a GPU
    from optimus_calc import catalog as C
    from optimus_calc.specs.frozen import Field
    from optimus_calc.specs.hardware import GPU, Cluster, Flops, Node

    class RackNode(Node):
        rack: str = Field(default="r1", description="rack")

    class Fp6Flops(Flops):
        fp6: float = Field(default=0.0, ge=0, le=1e6)

    cat = C.load(())
    node = RackNode(**{**cat.get("dgx-a100", "node").model_dump(), "rack": "r9"})
    cluster = Cluster(node=node, count=2)
    assert cluster.node is node and cluster.node.rack == "r9"
    assert cluster.gpus == 16  # 2 nodes x 8 GPUs (catalog dgx-a100)
    peak = Fp6Flops(fp32=1, bf16=10, fp6=40)
    gpu = GPU(**{**cat.get("a100-80gb", "gpu").model_dump(), "peak_TFLOPS": peak})
    assert gpu.peak_TFLOPS is peak
    # pydantic dumps a nested value by its declared class: Flops's seven fields, no fp6
    assert gpu.model_dump()["peak_TFLOPS"] == {"fp64": 0.0, "fp32": 1.0, "tf32": 0.0,
                                               "bf16": 10.0, "fp16": 0.0, "fp8": 0.0,
                                               "fp4": 0.0}
    assert "rack" not in cluster.model_dump()["node"] and node.model_dump()["rack"] == "r9"
    with pytest.raises(ValidationError, match="Node"):  # another spec is still not a Node
        Cluster(node=cat.get("a100-80gb", "gpu"), count=2)
    with pytest.raises(ValidationError, match="does not divide"):  # Node's own rule, inherited
        RackNode(**{**node.model_dump(), "gpus_per_host": 3})


def test_model_dump_copies_containers_and_dumps_declared_fields_only():
    from optimus_calc import catalog as C
    from optimus_calc.specs.hardware import GPU

    gpu = GPU(**C.load(()).get("h100-sxm", "gpu").model_dump())
    etas = dict(gpu.attention_kernel_eta)
    assert etas  # catalog h100-sxm lists the other kernels' efficiencies
    dumped = gpu.model_dump()
    dumped["attention_kernel_eta"]["fa2"] = 1.0  # pydantic's dump is a copy: the spec keeps its
    assert gpu.attention_kernel_eta == etas
    # model_copy(update=) takes any key, unvalidated; pydantic's dump names the fields only
    lay = Layout(tp=2).model_copy(update={"bogus": 1})
    assert "bogus" not in lay.model_dump() and lay.model_dump()["tp"] == 2
    assert list(lay.model_dump()) == list(Layout.model_fields)


def test_str_repr_equality_and_assignment_are_pydantics():
    lay = Layout(tp=2)
    # pydantic's str() is the fields without the class's name, space-separated
    assert str(lay).startswith("tp=2 pp=1 dp=1 cp=1 ep=1 etp=None zero=<ZeroStage.NONE: 0> ")
    assert repr(lay).startswith("Layout(tp=2, pp=1, ")
    # model_copy(update=) keeps an unknown key, unvalidated; pydantic's ==, hash and repr
    # look at the declared fields only
    odd = lay.model_copy(update={"bogus": 1})
    assert odd == lay and hash(odd) == hash(lay) and repr(odd) == repr(lay)
    assert odd != lay.model_copy(update={"tp": 4})
    # assigning to a frozen model is pydantic's ValidationError (a ValueError), not a TypeError
    with pytest.raises(ValidationError) as exc:
        lay.tp = 8
    assert exc.value.errors()[0]["type"] == "frozen_instance"
    assert exc.value.errors()[0]["loc"] == ("tp",) and exc.value.title == "Layout"
    with pytest.raises(ValueError, match="Instance is frozen"):
        del lay.pp


def test_model_validate_and_model_construct_corners():
    # a mapping whose keys are not all strings is pydantic's invalid_key error, not a TypeError
    with pytest.raises(ValidationError) as exc:
        Layout.model_validate({1: 2})
    assert exc.value.errors()[0]["type"] == "invalid_key"
    # pydantic's model_construct drops an unknown key (extra="forbid") and counts only fields set
    lay = Layout.model_construct(tp=2, bogus=3)
    assert lay.model_fields_set == {"tp"} and "bogus" not in dict(lay) and lay == Layout(tp=2)


def test_constraints_other_than_bounds_are_left_to_validation():
    # pydantic's metadata lists every constraint (MinLen for CatalogEntry.source, Strict for
    # Model.dropout), and base.unvalidated builds nothing it cannot check itself
    from optimus_calc.specs.base import unvalidated
    from optimus_calc.specs.frozen import Field
    from optimus_calc.specs.hardware import GPU
    from optimus_calc.specs.model import Model

    assert len(GPU.model_fields["source"].metadata) == 1  # min_length=3
    assert len(Model.model_fields["dropout"].metadata) == 3  # ge=0, le=1, strict

    class TaggedLayout(Layout):  # a plug-in's layout with a constrained text field
        tag: str = Field(default="a", pattern="^[a-z]+$")
        label: str = Field(default="abc", min_length=3)

    assert unvalidated(TaggedLayout, {"tag": "B!"}) is None
    assert unvalidated(TaggedLayout, {"label": "x"}) is None
    with pytest.raises(ValidationError, match="pattern"):
        TaggedLayout(tag="B!")
    assert unvalidated(TaggedLayout, {"tp": 2}).tp == 2  # a bounded int is still checked here


PLUGIN = '''from __future__ import annotations
from typing import ClassVar, Optional
from optimus_calc.specs.base import Frozen
from optimus_calc.specs.frozen import Field
from optimus_calc.specs.hardware import Flops
from optimus_calc.specs.hardware import Flops
from optimus_calc.specs.training import Layout

class WeightedLayout(Layout):
    unit: ClassVar[str] = "x"
    weight: float = Field(default=1, ge=0, le=10)

class Pair(Frozen):
    left: Flops
    right: Optional[Later] = None

class Later(Frozen):
    x: int = Field(default=0, ge=0)
'''


def test_a_plugin_module_with_postponed_annotations(tmp_path, monkeypatch):
    # `from __future__ import annotations` makes every annotation text; pydantic resolves
    # it (also a name defined later in the module) and so must the plain classes
    import importlib

    from optimus_calc.specs.base import unvalidated
    (tmp_path / "review_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("review_plugin")
    assert mod.WeightedLayout.model_fields["weight"].annotation is float
    assert "unit" not in mod.WeightedLayout.model_fields
    # the int default of a float field comes out as validation leaves it: 1.0
    assert type(unvalidated(mod.WeightedLayout, {}).weight) is float
    pair = mod.Pair(left={"fp32": 1}, right={"x": 2})
    assert type(pair.left) is Flops and pair.left.fp32 == 1.0
    assert type(pair.right) is mod.Later and pair.right.x == 2
    with pytest.raises(ValidationError) as exc:
        mod.Pair(left={"fp32": -1})
    assert exc.value.errors()[0]["loc"] == ("left", "fp32")


def test_zero_argument_super_in_a_subclass_validates():
    # a plug-in's layout doubles the GPU count through super() and extends Layout's EP rule;
    # pydantic ran both on the instance itself, the twin must too (not a TypeError from super)
    from optimus_calc.specs.frozen import model_validator

    class Doubled(Layout):
        @property
        def gpus(self) -> int:
            return super().gpus * 2

        @model_validator(mode="after")
        def _ep_divides(self):
            if self.gpus > 8:
                raise ValueError(f"{self.gpus} GPUs: at most 8")
            return super()._ep_divides()

    assert Doubled(tp=2).gpus == 4  # tp 2 x pp x dp x cp 1 = 2, doubled
    with pytest.raises(ValidationError, match="16 GPUs: at most 8"):  # tp 8: 8 x 2
        Doubled(tp=8)
    with pytest.raises(ValidationError, match="--ep 3 must divide"):  # Layout's own rule
        Doubled(dp=2, ep=3)
