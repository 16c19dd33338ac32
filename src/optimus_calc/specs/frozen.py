"""The specs' base class without pydantic on the path that trusts its input (issue 35).

A spec class (GPU, Model, Layout, Assumptions, ...) is declared as a pydantic model is: typed
fields with ``Field(default, ge=..., description=...)``, ``field_validator`` and
``model_validator``. Building one from untrusted input (a user's TOML file, a flag) validates it
with pydantic, through the class's *twin* (:func:`twin`: a pydantic model built from the same
declaration the first time the class validates something: the same fields, types, defaults,
bounds, validators, config, class variables, properties, methods and name), so the rules and
messages are pydantic's. Trusted input (the catalog snapshot, base.unvalidated) builds the plain
class directly: a cold `plan` never imports pydantic's models (tests/test_cold_start_budget.py).

The instances keep the part of pydantic's model interface the code uses: ``model_fields``
(name -> :class:`FieldInfo`: annotation, default, description, bounds in ``metadata``),
``model_fields_set``, ``model_construct``, ``model_copy``, ``model_validate``, ``model_dump``,
``dict(spec)`` as (name, value) pairs, equality and hashing by value, frozen attributes.
"""

from __future__ import annotations

import types
import typing
from functools import cache
from typing import Any, ClassVar

_MISSING: Any = object()


class _Bound:
    """A field's bound in ``metadata``, read as annotated_types' Gt/Ge/Lt/Le (pydantic's)."""
    __slots__ = ("gt", "ge", "lt", "le")

    def __init__(self, kind: str, value: float):
        for k in self.__slots__:
            setattr(self, k, value if k == kind else None)

    def __repr__(self) -> str:
        kind = next(k for k in self.__slots__ if getattr(self, k) is not None)
        return f"{kind.capitalize()}({getattr(self, kind)!r})"


# other constraints, in ``metadata`` as pydantic has them (base.unvalidated leaves them alone)
_CONSTRAINTS = ("strict", "min_length", "max_length", "pattern", "multiple_of", "allow_inf_nan",
                "max_digits", "decimal_places")


class FieldInfo:
    """A declared field: what pydantic's FieldInfo gives the code (annotation, default,
    default_factory, description, metadata, is_required) and pydantic Field's arguments."""
    __slots__ = ("annotation", "default", "default_factory", "description", "metadata", "kwargs")

    def __init__(self, default: Any = _MISSING, **kwargs: Any):
        self.annotation: Any = None
        self.default = default
        self.default_factory = kwargs.get("default_factory")
        self.description = kwargs.get("description")
        self.metadata = [_Bound(k, kwargs[k]) for k in ("gt", "ge", "lt", "le")
                         if kwargs.get(k) is not None] + [
            types.SimpleNamespace(**{k: kwargs[k]}) for k in _CONSTRAINTS
            if kwargs.get(k) is not None]
        self.kwargs = kwargs

    def is_required(self) -> bool:
        return self.default is _MISSING and self.default_factory is None

    def __repr__(self) -> str:
        return f"FieldInfo(annotation={self.annotation!r}, default={self.default!r})"


def Field(default: Any = _MISSING, **kwargs: Any) -> Any:  # noqa: N802 (pydantic's name)
    """A field's declaration (pydantic's keyword arguments)."""
    return FieldInfo(default, **kwargs)


class Check:
    """A spec class's validator: the twin hands it to pydantic (base.unvalidated runs it)."""
    __slots__ = ("kind", "fields", "mode", "func")

    def __init__(self, kind: str, fields: tuple[str, ...], mode: str, func: Any):
        self.kind, self.fields, self.mode, self.func = kind, fields, mode, func


def field_validator(*fields: str, mode: str = "after"):
    """pydantic's ``field_validator``, recorded on the class."""
    return lambda func: Check("field", fields, mode, func)


def model_validator(*, mode: str):
    """pydantic's ``model_validator``, recorded on the class."""
    return lambda func: Check("model", (), mode, func)


def _dumped(value: Any, annotation: Any = None) -> Any:
    """A field's value as pydantic's python-mode model_dump gives it: a spec as a dict of the
    declared class's fields (a subclass's instance too), dicts, lists and tuples as copies."""
    if isinstance(value, Frozen):
        out = value.model_dump()
        declared = next((a for a in (annotation, *typing.get_args(annotation))
                         if isinstance(a, type) and issubclass(a, Frozen)), None)
        if declared is not None and type(value) is not declared:
            out = {k: out[k] for k in declared.model_fields if k in out}
        return out
    if isinstance(value, dict):
        return {k: _dumped(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_dumped(v) for v in value)
    return value


def _class_var(annotation: Any) -> bool:
    if isinstance(annotation, str):  # not resolved (yet): as pydantic reads it
        return annotation.startswith(("ClassVar", "typing.ClassVar"))
    return annotation is ClassVar or typing.get_origin(annotation) is ClassVar


def _hints(cls: type) -> dict[str, Any]:
    """The class's annotations as objects where a module wrote them as text (``from
    __future__ import annotations``: a plug-in's), as pydantic resolves them; {} while a name
    they use is not defined yet (the twin resolves them again when it is built)."""
    try:
        return typing.get_type_hints(cls, include_extras=True)
    except (NameError, AttributeError, TypeError):
        return {}


class Frozen:
    """A frozen, value-compared spec (see the module's docstring)."""
    __slots__ = ("__dict__", "__weakref__", "_fields_set", "_hash_value")

    model_config: ClassVar[dict] = {"frozen": True, "extra": "forbid", "validate_default": True}
    model_fields: ClassVar[dict[str, FieldInfo]] = {}
    checks: ClassVar[dict[str, Check]] = {}       # validator name -> its declaration
    class_vars: ClassVar[dict[str, Any]] = {}     # ClassVar annotations (the twin repeats them)

    def __init_subclass__(cls, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        fields = dict(cls.model_fields)
        checks = dict(cls.checks)
        class_vars = dict(cls.class_vars)
        own = cls.__dict__.get("__annotations__", {})
        if any(isinstance(a, str) for a in own.values()):
            own = {**own, **{k: v for k, v in _hints(cls).items() if k in own}}
        for name, annotation in own.items():
            if _class_var(annotation):
                class_vars[name] = annotation
                continue
            value = cls.__dict__.get(name, _MISSING)
            info = value if isinstance(value, FieldInfo) else FieldInfo(value)
            info.annotation = annotation
            fields[name] = info
            if value is not _MISSING:
                delattr(cls, name)  # as pydantic: the default is the field's, not the class's
        for name, value in list(cls.__dict__.items()):
            if isinstance(value, Check):
                checks[name] = value
                setattr(cls, name, value.func)
        cls.model_fields, cls.checks, cls.class_vars = fields, checks, class_vars

    def __init__(self, /, **data: Any):  # self positional only: a key "self" is a field
        values, fields_set = validated(type(self), data)
        object.__setattr__(self, "__dict__", values)
        object.__setattr__(self, "_fields_set", fields_set)

    @classmethod
    def model_validate(cls, obj: Any) -> Frozen:
        """``obj`` validated (an instance of the class is returned as it is, as pydantic
        does; anything else goes to pydantic, which names what is wrong)."""
        if isinstance(obj, cls):
            return obj
        if isinstance(obj, dict) and all(isinstance(k, str) for k in obj):
            return cls(**obj)
        return from_twin(twin(cls).model_validate(to_twin(obj)))

    @classmethod
    def model_construct(cls, _fields_set: set[str] | None = None, **values: Any) -> Frozen:
        """An instance from trusted values, unvalidated; missing fields take their defaults
        (pydantic's ``model_construct``)."""
        obj = object.__new__(cls)
        full = {}
        for name, info in cls.model_fields.items():
            if name in values:
                full[name] = values[name]
            elif info.default_factory is not None:
                full[name] = info.default_factory()
            elif info.default is not _MISSING:
                full[name] = info.default
        object.__setattr__(obj, "__dict__", full)
        object.__setattr__(obj, "_fields_set",
                           set(full).intersection(values) if _fields_set is None
                           else set(_fields_set))
        return obj

    @property
    def model_fields_set(self) -> set[str]:
        return self._fields_set

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> Frozen:
        """A copy with ``update`` applied, unvalidated (pydantic's ``model_copy``)."""
        if deep:
            import copy
            return copy.deepcopy(self).model_copy(update=update)
        obj = object.__new__(type(self))
        values = dict(self.__dict__)
        fields_set = set(self._fields_set)
        if update:
            values.update(update)
            fields_set.update(update)
        object.__setattr__(obj, "__dict__", values)
        object.__setattr__(obj, "_fields_set", fields_set)
        return obj

    def model_dump(self, *, mode: str = "python", exclude: set[str] | None = None,
                   **kwargs: Any) -> dict[str, Any]:
        """The fields as a dict (nested specs as dicts, containers copied, as pydantic's);
        ``mode="json"`` and other options are pydantic's, through the twin."""
        if mode != "python" or kwargs or isinstance(exclude, dict):
            return to_twin(self).model_dump(mode=mode, exclude=exclude, **kwargs)
        return {k: _dumped(self.__dict__[k], info.annotation) for k, info in
                self.model_fields.items() if k in self.__dict__ and not (exclude and k in exclude)}

    def __iter__(self):
        yield from self.__dict__.items()

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        mine, theirs = self.__dict__, other.__dict__  # type: ignore[union-attr]
        if mine == theirs:
            return True
        # as pydantic: the fields only (model_copy(update=...) may have added other keys)
        return all(mine.get(k, _MISSING) == theirs.get(k, _MISSING) for k in self.model_fields)

    def __hash__(self) -> int:  # computed once: the fields never change (nor, hashable, theirs)
        if (h := getattr(self, "_hash_value", None)) is None:
            h = hash(tuple(self.__dict__.get(k, _MISSING) for k in self.model_fields))
            object.__setattr__(self, "_hash_value", h)
        return h

    def __setattr__(self, name: str, value: Any) -> None:
        raise _frozen_error(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise _frozen_error(self, name, None)

    def _pairs(self, sep: str) -> str:
        return sep.join(f"{k}={v!r}" for k, v in self.__dict__.items() if k in self.model_fields)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._pairs(', ')})"

    def __str__(self) -> str:  # pydantic's: the fields without the class's name
        return self._pairs(" ")

    def __copy__(self) -> Frozen:
        return self.model_copy()

    def __deepcopy__(self, memo: dict) -> Frozen:
        import copy
        obj = object.__new__(type(self))
        object.__setattr__(obj, "__dict__", copy.deepcopy(self.__dict__, memo))
        object.__setattr__(obj, "_fields_set", set(self._fields_set))
        return obj

    def __reduce__(self):
        return (_rebuild, (type(self), dict(self.__dict__), set(self._fields_set)))


def _frozen_error(obj: Frozen, name: str, value: Any) -> Exception:
    """pydantic's error for an assignment to a frozen model (a ValueError)."""
    from pydantic_core import ValidationError
    return ValidationError.from_exception_data(
        type(obj).__name__, [{"type": "frozen_instance", "loc": (name,), "input": value}])


def _rebuild(cls: type[Frozen], values: dict, fields_set: set) -> Frozen:
    return cls.model_construct(_fields_set=fields_set, **values)


# -- the twins: pydantic models that validate (see the module's docstring) ---------------------

_MACHINERY = frozenset(vars(Frozen)) | {"__annotations__", "__dict__", "__weakref__"}
_DEFAULTS: dict[type, dict] = {}  # cls -> cls()'s validated values (no default factory)
_SPEC_OF: dict[type, type[Frozen]] = {}  # twin -> its spec class


def _twin_type(annotation: Any) -> Any:
    """``annotation`` with every spec class in it replaced by its twin."""
    if isinstance(annotation, type) and issubclass(annotation, Frozen):
        return twin(annotation)
    args = typing.get_args(annotation)
    new = tuple(_twin_type(a) for a in args)
    if new == args:
        return annotation
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return typing.Union[new]  # noqa: UP007 (built from a tuple)
    return origin[new if len(new) > 1 else new[0]]


def _members(cls: type[Frozen], cell: Any) -> dict[str, Any]:
    """The class's own methods, properties and plain class attributes (its bases' come with
    the bases' twins), their zero-argument ``super()`` reading the twins (:func:`_for_twin`)."""
    return {name: _for_twin(value, cls, cell) for name, value in vars(cls).items()
            if name not in _MACHINERY and name not in cls.checks and name not in cls.model_fields}


def _for_twin(value: Any, cls: type[Frozen], cell: Any) -> Any:
    """A function (property, classmethod, staticmethod) whose ``__class__`` cell (what its
    ``super()`` reads) holds the twin of the spec class it names (``cell``: ``cls``'s twin)."""
    if isinstance(value, property):
        return property(*(_for_twin(f, cls, cell) for f in (value.fget, value.fset, value.fdel)))
    if isinstance(value, (classmethod, staticmethod)):
        return type(value)(_for_twin(value.__func__, cls, cell))
    code = getattr(value, "__code__", None)
    if code is None or "__class__" not in code.co_freevars:
        return value
    spec = value.__closure__[code.co_freevars.index("__class__")].cell_contents
    if not (isinstance(spec, type) and issubclass(spec, Frozen)):
        return value
    closure = tuple((cell if spec is cls else types.CellType(twin(spec))) if n == "__class__"
                    else c for n, c in zip(code.co_freevars, value.__closure__))
    out = types.FunctionType(code, value.__globals__, value.__name__, value.__defaults__, closure)
    out.__kwdefaults__, out.__qualname__ = value.__kwdefaults__, value.__qualname__
    out.__dict__.update(value.__dict__)
    return out


@cache
def twin(cls: type[Frozen]) -> type:
    """The pydantic model that validates ``cls``'s input (built once): its twin (pydantic's
    model machinery is imported here, when something is first validated)."""
    from pydantic import BaseModel, ConfigDict
    from pydantic import Field as PydanticField
    from pydantic import field_validator as pydantic_field_validator
    from pydantic import model_validator as pydantic_model_validator
    if any(isinstance(info.annotation, str) for info in cls.model_fields.values()):
        hints = _hints(cls)
        for name, info in cls.model_fields.items():
            info.annotation = hints.get(name, info.annotation)
    cell = types.CellType()  # the twin, for its methods' super() (filled in below)
    ns: dict[str, Any] = _members(cls, cell)
    annotations: dict[str, Any] = dict(cls.class_vars)
    ns.update({name: getattr(cls, name) for name in cls.class_vars if hasattr(cls, name)})
    for name, info in cls.model_fields.items():
        annotations[name] = _twin_type(info.annotation)
        ns[name] = (PydanticField(**info.kwargs) if info.default is _MISSING else
                    PydanticField(info.default, **info.kwargs))
    for name, check in cls.checks.items():
        decorate = (pydantic_field_validator(*check.fields, mode=check.mode)
                    if check.kind == "field" else pydantic_model_validator(mode=check.mode))
        ns[name] = decorate(_for_twin(check.func, cls, cell))
    ns.update(__module__=cls.__module__, __qualname__=cls.__qualname__, __doc__=cls.__doc__,
              __annotations__=annotations, model_config=ConfigDict(**cls.model_config))
    # the spec classes' hierarchy (a subclass's instance is its base's, as a nested field's value)
    bases = tuple(BaseModel if b is Frozen else twin(b) if issubclass(b, Frozen) else b
                  for b in cls.__bases__)
    model = type(cls.__name__, bases, ns)
    cell.cell_contents = model
    _SPEC_OF[model] = cls
    return model


def to_twin(value: Any) -> Any:
    """A spec instance as its twin's instance (unvalidated: it was validated or trusted)."""
    if not isinstance(value, Frozen):
        return value
    return twin(type(value)).model_construct(_fields_set=set(value.model_fields_set),
                                             **{k: to_twin(v) for k, v in value.__dict__.items()})


def from_twin(value: Any) -> Any:
    """A twin's instance as its spec class's instance (other values unchanged)."""
    if (spec := _SPEC_OF.get(type(value))) is None:
        return value
    return spec.model_construct(_fields_set=set(value.model_fields_set),
                                **{k: from_twin(v) for k, v in value.__dict__.items()})


def validated(cls: type[Frozen], data: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """``cls(**data)``'s field values and fields set, validated by pydantic (which raises its
    ValidationError naming what is wrong)."""
    given: dict[int, tuple[Any, Any]] = {}  # a spec given as a value comes back as itself

    def into(value: Any) -> Any:
        out = to_twin(value)
        if out is not value:
            given[id(out)] = (out, value)
        return out

    def back(value: Any) -> Any:  # (most values are no twin: returned as they are)
        hit = given.get(id(value)) if type(value) in _SPEC_OF else None
        return value if type(value) not in _SPEC_OF else (
            hit[1] if hit is not None and hit[0] is value else from_twin(value))

    if not data and cls in _DEFAULTS:  # cls(): its defaults, validated once
        return dict(_DEFAULTS[cls]), set()
    obj = twin(cls)(**{k: into(v) for k, v in data.items()})
    out = {k: back(v) for k, v in obj.__dict__.items()}, set(obj.model_fields_set)
    if not data and all(f.default_factory is None for f in cls.model_fields.values()):
        _DEFAULTS[cls] = dict(out[0])  # (a factory's value is made per instance: not kept)
    return out
