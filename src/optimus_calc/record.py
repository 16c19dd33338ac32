"""``@record``: the project's dataclass, built without compiling code per class.

``@record`` is ``@dataclass(frozen=True)`` and ``@record(frozen=False)`` is ``@dataclass``, with
the same behaviour: ``dataclasses.fields``, ``replace``, ``asdict`` and ``is_dataclass`` work on
the class (it carries ``__dataclass_fields__`` made of ``dataclasses.Field`` objects); fields
with defaults and ``field(default_factory=..., repr=False, compare=False)``; positional or
keyword construction with the same errors; equality and (frozen) hashing over the compared
fields; the same repr; assignment to a frozen instance raises ``FrozenInstanceError``.

Why: Python 3.11's dataclass writes and compiles the source of six methods for every frozen
class (1.5-3.5 ms a class); the ~60 classes a cold ``plan`` imports cost some 90 ms, a tenth of
the command. Here the methods are shared functions reading a per-class tuple of fields, so
building a class costs microseconds; constructing an instance costs about a microsecond a field
more than a generated ``__init__``, and no hot loop builds records per layout (the evaluator
works on arrays). tests/test_record.py checks each behaviour against a real dataclass twin.
"""

from __future__ import annotations

import dataclasses
import types
from dataclasses import MISSING, Field, FrozenInstanceError

_FIELDS = "__dataclass_fields__"


def record(cls=None, /, *, frozen: bool = True):
    """Class decorator: a dataclass (frozen unless ``frozen=False``) without generated code."""
    def wrap(c):
        return _build(c, frozen)
    return wrap if cls is None else wrap(cls)


def _is_classvar(annotation) -> bool:
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar"))


def _build(cls, frozen: bool):
    fields: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        fields.update(getattr(base, _FIELDS, {}))
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        if _is_classvar(annotation):
            continue
        value = cls.__dict__.get(name, MISSING)
        f = value if isinstance(value, Field) else dataclasses.field(default=value)
        if f.default is not MISSING and f.default_factory is not MISSING:
            raise ValueError(f"{name}: cannot specify both default and default_factory")
        f.name, f.type, f._field_type = name, annotation, dataclasses._FIELD
        fields[name] = f
        if isinstance(value, Field):  # the class attribute is the plain default, as dataclass
            if f.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
    seen_default = False
    for f in fields.values():
        if f.init and (f.default is not MISSING or f.default_factory is not MISSING):
            seen_default = True
        elif f.init and seen_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
    setattr(cls, _FIELDS, fields)
    cls.__dataclass_params__ = types.SimpleNamespace(
        init=True, repr=True, eq=True, order=False, unsafe_hash=False, frozen=frozen)
    init = [f for f in fields.values() if f.init]
    cls.__record_defaults__ = {f.name: f.default for f in init if f.default is not MISSING}
    cls.__record_factories__ = {f.name: f.default_factory for f in init
                                if f.default_factory is not MISSING}
    cls.__record_compare__ = tuple(f.name for f in fields.values() if f.compare)
    cls.__record_repr__ = tuple(f.name for f in fields.values() if f.repr)
    cls.__match_args__ = tuple(f.name for f in init)
    cls.__record_nameset__ = frozenset(cls.__match_args__)
    for name, fn in (("__init__", _init), ("__repr__", _repr), ("__eq__", _eq)):
        if name not in cls.__dict__:
            setattr(cls, name, fn)
    if frozen:
        cls.__setattr__, cls.__delattr__ = _frozen_setattr, _frozen_delattr
        if "__hash__" not in cls.__dict__ or cls.__dict__["__hash__"] is None:
            cls.__hash__ = _hash
    elif "__hash__" not in cls.__dict__:
        cls.__hash__ = None  # eq without frozen: unhashable, as dataclass
    if cls.__doc__ is None:
        cls.__doc__ = f"{cls.__name__}({', '.join(cls.__match_args__)})"
    return cls


def _init(self, *args, **kwargs):
    cls = type(self)
    names = cls.__match_args__
    # every field given, all by keyword or all by position: one dict update
    if not args and kwargs.keys() == cls.__record_nameset__:
        self.__dict__.update(kwargs)
    elif not kwargs and len(args) == len(names):
        self.__dict__.update(zip(names, args))
    else:
        _init_slow(self, cls, names, args, kwargs)
    post = getattr(self, "__post_init__", None)
    if post is not None:
        post()


def _init_slow(self, cls, names, args, kwargs):
    if args:
        if len(args) > len(names):
            need = len(names) - len(cls.__record_defaults__) - len(cls.__record_factories__) + 1
            takes = f"{need}" if need == len(names) + 1 else f"from {need} to {len(names) + 1}"
            raise TypeError(f"{cls.__name__}.__init__() takes {takes} positional arguments but "
                            f"{len(args) + 1} were given")
        for name, value in zip(names, args):
            if name in kwargs:
                raise TypeError(f"{cls.__name__}.__init__() got multiple values for argument "
                                f"{name!r}")
            kwargs[name] = value
    if len(kwargs) < len(names):
        for name in names:
            if name not in kwargs and name not in cls.__record_defaults__ \
                    and name not in cls.__record_factories__:
                raise TypeError(f"{cls.__name__}.__init__() missing 1 required positional "
                                f"argument: {name!r}")
    d = self.__dict__  # as object.__setattr__ would (frozen classes refuse setattr)
    for name in names:
        if name in kwargs:
            d[name] = kwargs.pop(name)
        elif name in cls.__record_factories__:
            d[name] = cls.__record_factories__[name]()
        else:
            d[name] = cls.__record_defaults__[name]
    if kwargs:
        raise TypeError(f"{cls.__name__}.__init__() got an unexpected keyword argument "
                        f"{next(iter(kwargs))!r}")


def _repr(self) -> str:
    cls = type(self)
    inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in cls.__record_repr__)
    return f"{cls.__qualname__}({inner})"


def _eq(self, other):
    if other.__class__ is not self.__class__:
        return NotImplemented
    names = self.__record_compare__
    return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)


def _hash(self) -> int:
    return hash(tuple(getattr(self, n) for n in self.__record_compare__))


def _frozen_setattr(self, name, value):
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self, name):
    raise FrozenInstanceError(f"cannot delete field {name!r}")
