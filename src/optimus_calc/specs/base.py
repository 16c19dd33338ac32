"""Shared base for catalog entries: name, aliases and provenance."""

from __future__ import annotations

import re
from enum import Enum

import typing

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9.+-]*$")


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True,
                              defer_build=True)


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


def unvalidated(cls: type[BaseModel], fields: dict, trusted=()) -> BaseModel | None:
    """``cls(**fields)`` built without validating it (``model_construct``: no schema is
    built), or None when something in it needs validating. Nothing does when each field is
    in ``trusted`` (a value taken from a validated spec, whose bounds are the field's, or
    computed by our own code) or is its field's default (or an enum default's text): a value
    its default already is cannot fail. The defaults are kept as validation leaves them and the
    fields set are the keys of ``fields``, as ``cls(**fields)`` has them
    (tests/test_cold_start_budget.py checks the two are equal)."""
    if set(fields) - set(cls.model_fields):
        return None  # an unknown field: validation names it
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
            return None
    return cls.model_construct(_fields_set=set(fields), **values)
