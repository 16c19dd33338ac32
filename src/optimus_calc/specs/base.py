"""Shared base for catalog entries: name, aliases and provenance."""

import math
import re
from enum import Enum

import typing

from optimus_calc.specs.frozen import _Bound, Field, Frozen, field_validator, model_validator

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9.+-]*$")


def _numeric(annotation) -> bool:
    """int or float (also inside Optional/Union), not bool."""
    if annotation in (int, float):
        return True
    return any(a in (int, float) for a in typing.get_args(annotation))


class CatalogEntry(Frozen):
    """Every catalog entry names itself and says where its numbers come from."""

    @model_validator(mode="before")
    @classmethod
    def _strict_numbers(cls, data):
        """Numbers must be written as numbers: `true` is not 1.0 and "80" is not 80 (pydantic's
        lax mode would coerce both, silently)."""
        if isinstance(data, dict):
            for name, field in cls.model_fields.items():
                v = data.get(name)
                if _numeric(field.annotation) and isinstance(v, (bool, str)):
                    raise ValueError(f"field {name!r}: {v!r} is not a number (write it without "
                                     "quotes; true/false are not numbers)")
        return data

    name: str = Field(description="canonical lowercase-hyphenated name, e.g. a100-80gb")
    aliases: tuple[str, ...] = Field(default=(), description="other accepted spellings")
    title: str = Field(default="", description="human-readable name")
    source: str = Field(min_length=3, description="URL or paper + table the numbers come from")
    notes: str = Field(default="", description="free text: caveats, derivations")
    unverified: tuple[str, ...] = Field(
        default=(), description="fields not checked against a vendor-grade source")
    assumed: tuple[str, ...] = Field(
        default=(), description="fields that are assumptions, not measurements or datasheet values")

    @field_validator("name")
    @classmethod
    def _name_format(cls, v: str) -> str:
        if not NAME_RE.match(v):
            raise ValueError(f"name {v!r} must be lowercase letters, digits and hyphens")
        return v

    @field_validator("aliases")
    @classmethod
    def _alias_format(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for a in v:
            if not NAME_RE.match(a):
                raise ValueError(f"alias {a!r} must be lowercase letters, digits and hyphens")
        return v

    @property
    def kind(self) -> str:  # overridden by subclasses as a class attribute
        return type(self).__name__.lower()


_NO_DEFAULT = object()


def _validated_default(field):
    """A field's default as validation leaves it (a float field's integer default becomes a
    float); _NO_DEFAULT for a field without a plain default (required, or a default factory)."""
    if field.is_required() or field.default_factory is not None:
        return _NO_DEFAULT
    d = field.default
    return float(d) if field.annotation is float and type(d) is int else d


def _is_default(value, default) -> bool:
    """``value`` is the default itself, of its type, or an enum default's text (a click
    choice)."""
    if value is default or (type(value) is type(default) and value == default):
        return True
    return (isinstance(default, Enum) and type(value) is type(default.value)
            and value == default.value)


# what unvalidated() knows validation does: the Frozen config's keys (nothing else changes a value)
_PLAIN_CONFIG = {"frozen", "extra", "validate_default"}


def _bounded(field, value) -> bool:
    """``value`` meets every constraint of ``field`` (only gt/ge/lt/le are known here)."""
    for m in field.metadata:
        if not isinstance(m, _Bound):
            return False
        if not ((m.gt is None or value > m.gt) and (m.ge is None or value >= m.ge)
                and (m.lt is None or value < m.lt) and (m.le is None or value <= m.le)):
            return False
    return True


def _as_validated(field, value):
    """``value`` as validation returns it when validation can only accept it unchanged (or
    take an enum's value text for its member): an int within the field's bounds (not a bool),
    a finite float within them, a bool, an enum member or value, a plain string, None where
    the field allows it; _NO_DEFAULT when anything else (a bad value among them) needs
    validating."""
    ann, args = field.annotation, typing.get_args(field.annotation)
    if args:  # X | None
        kinds = [a for a in args if a is not type(None)]
        if len(args) != 2 or len(kinds) != 1:
            return _NO_DEFAULT
        if value is None:
            return None
        ann = kinds[0]
    if not isinstance(ann, type):
        return _NO_DEFAULT
    if issubclass(ann, Enum):  # the declared members only (no plug-in pseudo-member)
        members = {m.value: m for m in ann}
        if type(value) is ann:
            return value if members.get(value.value) is value else _NO_DEFAULT
        member = members.get(value) if type(value) in (int, str) else None
        ok = member is not None and type(member.value) is type(value) and not field.metadata
        return member if ok else _NO_DEFAULT
    if type(value) is not ann or ann not in (int, float, bool, str):
        return _NO_DEFAULT
    if ann is float and not math.isfinite(value):
        return _NO_DEFAULT
    if ann in (bool, str):
        return value if not field.metadata else _NO_DEFAULT
    return value if _bounded(field, value) else _NO_DEFAULT


def _after_checks_pass(cls: type[Frozen], obj: Frozen) -> bool:
    """The class's after-model validators (Layout's EP rule) accept ``obj`` as it is (a
    validator's errors are ValueError or AssertionError, as pydantic's are)."""
    for check in cls.checks.values():
        if check.kind != "model":
            continue
        try:
            if check.func(obj) is not obj:
                return False
        except (ValueError, AssertionError):
            return False
    return True


def _plainly_checked(cls: type[Frozen]) -> set | None:
    """The fields whose values unvalidated() may check itself (none validated by a field
    validator of the class), or None when the class validates in a way it does not know."""
    checks = cls.checks.values()
    if set(cls.model_config) - _PLAIN_CONFIG or \
            any(c.kind == "model" and (c.mode != "after" or getattr(
                getattr(c.func, "__code__", None), "co_argcount", 0) != 1) for c in checks):
        return None
    own = {f for c in checks if c.kind == "field" for f in c.fields}
    return set() if "*" in own else set(cls.model_fields) - own


def unvalidated(cls: type[Frozen], fields: dict, trusted=()) -> Frozen | None:
    """``cls(**fields)`` built without validating it (``model_construct``: no schema is
    built), or None when something in it needs validating. Nothing does when each field is
    in ``trusted`` (a value taken from a validated spec, whose bounds are the field's, or
    computed by our own code), is its field's default (or an enum default's text: a value its
    default already is cannot fail), or is a value validation could only accept unchanged
    (:func:`_as_validated`: an int within the field's bounds, an enum's member or value text,
    a bool, ...: what click's IntRange and Choice parsed); the class's after-model validators
    then run on the result (a failing one: None, and validation raises its error). The
    defaults are kept as validation leaves them and the fields set are the keys of ``fields``,
    as ``cls(**fields)`` has them (tests/test_cold_start_budget.py and
    tests/test_unvalidated.py check the two are equal)."""
    checkable = _plainly_checked(cls)
    if checkable is None or set(fields) - set(cls.model_fields):
        return None  # a validator not known here, or an unknown field: validation names it
    values = {}
    for name, field in cls.model_fields.items():
        default = _validated_default(field)
        if name not in fields:
            if default is _NO_DEFAULT:
                return None
            values[name] = default
        elif name in trusted:
            values[name] = fields[name]
        elif default is not _NO_DEFAULT and _is_default(fields[name], default):
            values[name] = default
        else:
            value = _as_validated(field, fields[name]) if name in checkable else _NO_DEFAULT
            if value is _NO_DEFAULT:
                return None
            values[name] = value
    obj = cls.model_construct(_fields_set=set(fields), **values)
    return obj if _after_checks_pass(cls, obj) else None


# the MLP kind of a transformer layer (specs/model.py re-exports it)
class FFNType(str, Enum):
    GELU = "gelu"
    RELU = "relu"
    SWIGLU = "swiglu"
    GEGLU = "geglu"
    RELU2 = "relu2"

    @property
    def matrices(self) -> int:
        """Weight matrices per MLP: 2 for GELU/ReLU/squared ReLU, 3 for gated (SwiGLU/GeGLU)."""
        return 3 if self in (FFNType.SWIGLU, FFNType.GEGLU) else 2
