"""``optimus_calc.record.record`` behaves as the dataclass it replaces: each check is made on a
record and on its ``@dataclass`` twin, and the two must agree."""

import dataclasses
import copy
from dataclasses import dataclass, field

import pytest

from optimus_calc.record import record


def _pair(frozen=True):
    def body(deco):
        @deco
        class Point:
            """A point."""
            x: float
            y: float = 2.0
            tags: list = field(default_factory=list)
            note: str = field(default="n", repr=False, compare=False)
        return Point
    return (body(record if frozen else record(frozen=False)),
            body(dataclass(frozen=True) if frozen else dataclass))


@pytest.mark.parametrize("frozen", [True, False])
def test_construction_repr_eq_and_helpers_agree(frozen):
    R, D = _pair(frozen)
    for args, kw in [((1.0,), {}), ((1.0, 3.0), {}), ((), {"x": 1.0, "tags": [1]}),
                     ((1.0,), {"note": "m"}), ((1.0, 3.0, [2], "p"), {}),   # all by position
                     ((), {"note": "q", "tags": [], "y": 0.5, "x": 4.0})]:  # all by keyword
        r, d = R(*args, **kw), D(*args, **kw)
        assert repr(r).replace("Point", "P") == repr(d).replace("Point", "P")
        assert dataclasses.asdict(r) == dataclasses.asdict(d)
        assert [f.name for f in dataclasses.fields(r)] == [f.name for f in dataclasses.fields(d)]
        assert dataclasses.is_dataclass(r) and dataclasses.is_dataclass(R)
        assert dataclasses.replace(r, y=9.0).y == 9.0 == dataclasses.replace(d, y=9.0).y
        assert r == R(*args, **kw) and (r != R(5.0)) and r.__eq__(d) is NotImplemented
        assert r.__match_args__ == d.__match_args__ == ("x", "y", "tags", "note")
    assert R(1.0, note="a") == R(1.0, note="b")  # compare=False
    assert R(1.0).tags is not R(1.0).tags        # default_factory per instance
    assert R.y == D.y == 2.0 and R.__doc__ == "A point."


@pytest.mark.parametrize("frozen", [True, False])
def test_argument_errors_agree(frozen):
    R, D = _pair(frozen)
    for args, kw in [((), {}), ((1, 2, [], "n", 5), {}), ((1,), {"x": 2}), ((1,), {"z": 0})]:
        with pytest.raises(TypeError) as er:
            R(*args, **kw)
        with pytest.raises(TypeError) as ed:
            D(*args, **kw)
        # the same complaint (the qualified names differ)
        assert str(er.value).split("()")[-1] == str(ed.value).split("()")[-1]


def test_frozen_and_hashing_agree():
    R, D = _pair(True)
    r, d = R(1.0, tags=()), D(1.0, tags=())
    for obj in (r, d):
        with pytest.raises(dataclasses.FrozenInstanceError):
            obj.x = 2.0
        with pytest.raises(dataclasses.FrozenInstanceError):
            del obj.x
    assert hash(r) == hash(d) == hash((1.0, 2.0, ()))
    assert R.__dataclass_params__.frozen and copy.deepcopy(r) == r == copy.copy(r)
    M, _ = _pair(False)
    m = M(1.0)
    m.x = 3.0
    assert m.x == 3.0 and M.__hash__ is None and not M.__dataclass_params__.frozen


def test_inheritance_class_variables_and_post_init():
    from typing import ClassVar

    @record
    class Base:
        a: int
        kind: ClassVar[str] = "base"

    @record
    class Child(Base):
        b: int = 1

        def __post_init__(self):
            object.__setattr__(self, "b", self.b * 10)

    c = Child(5, 2)
    assert (c.a, c.b) == (5, 20) and [f.name for f in dataclasses.fields(c)] == ["a", "b"]
    assert Child.kind == "base" and "kind" not in Child.__dataclass_fields__
    with pytest.raises(TypeError, match="non-default argument 'c' follows default argument"):
        @record
        class Bad:
            a: int = 0
            c: int
