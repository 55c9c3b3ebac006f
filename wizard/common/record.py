"""Records: what `@dataclass(frozen=True)` gives the hot path, without its start-up cost.

`ddp-doctor triage --json` must start within 3x a bare interpreter. Importing `dataclasses`
(with `inspect`, `ast`, `dis`...) and defining a frozen dataclass (six methods generated with
`exec` each) cost more than the whole rest of a run, for ~25 classes. `@record` reads the
same class syntax (annotated fields, defaults, `field(default_factory=...)`, properties and
methods) and builds the class with one small `__init__` made without compiling (see
`_init`); equality, hashing, repr and immutability come from shared functions. Instances
behave as frozen dataclass instances do; `replace(obj, **changes)` stands in for
`dataclasses.replace`.
"""

from __future__ import annotations

_MISSING = object()


class FrozenInstanceError(AttributeError):
    """Assigning to a field of a frozen record."""


class _Factory:
    __slots__ = ("make",)

    def __init__(self, make):
        self.make = make


def field(*, default_factory):
    """A field whose default is made fresh for every instance (like dataclasses.field)."""
    return _Factory(default_factory)


def record(cls=None, *, frozen: bool = True):
    """Turn an annotated class into a record (see the module docstring)."""

    def build(cls):
        return _build(cls, frozen)

    return build if cls is None else build(cls)


def replace(obj, **changes):
    """A copy of the record `obj` with some fields changed."""
    if not hasattr(type(obj), "__record_fields__"):
        raise TypeError("replace() needs a record instance")
    return type(obj)(**{**obj.__dict__, **changes})


def _build(cls, frozen: bool):
    names = tuple(cls.__dict__.get("__annotations__", {}))
    defaults, factories, seen_default = [], [], False
    for name in names:
        if name in cls.__dict__:
            default = cls.__dict__[name]
            seen_default = True
            if isinstance(default, _Factory):
                factories.append((name, default.make))
                default = _MISSING
            defaults.append(default)
        elif seen_default:
            raise TypeError(f"{cls.__name__}: field {name!r} without a default follows one with")
    init = _init(names, tuple(defaults), tuple(factories))
    body = {k: v for k, v in cls.__dict__.items() if k not in names and k != "__dict__"}
    body.pop("__weakref__", None)
    body.update(
        __init__=init,
        __record_fields__=names,
        __eq__=_eq,
        __repr__=_repr,
        __match_args__=names,
    )
    if frozen:
        body.update(__hash__=_hash, __setattr__=_frozen_set, __delattr__=_frozen_delete)
    else:
        body["__hash__"] = None  # mutable and compared by value, as a dataclass
    built = type(cls)(cls.__name__, cls.__bases__, body)
    built.__init__.__qualname__ = f"{built.__qualname__}.__init__"
    return built


# Every record's __init__ is one of these two small functions, its code given the record's
# own parameters (`code.replace`: the names, how many): a real signature (keywords,
# defaults, the usual TypeErrors) with no source to compile per class. Compiling a
# generated __init__ (as dataclasses does) cost ~0.1 ms per class, 3.4 ms of every run's
# start-up for ~30 records. Their only local is `self`, so any parameters can follow it;
# locals() holds them all, in order.
def _store(self):
    self.__dict__.update(locals())
    del self.__dict__["self"]


def _store_and_make(self):
    self.__dict__.update(locals())
    del self.__dict__["self"]
    _make_missing(self)  # noqa: F821 - in the function's own globals (_init)


def _init(names: tuple, defaults: tuple, factories: tuple):
    """An `__init__(self, *names)` storing its arguments in the instance's __dict__;
    `defaults` for the last parameters, `_MISSING` where `factories` make the value."""
    from types import FunctionType

    template = (_store_and_make if factories else _store).__code__
    if "self" in names:
        raise TypeError("a record field cannot be called 'self'")
    fields = {"co_argcount": len(names) + 1, "co_nlocals": len(names) + 1}
    fields.update(co_varnames=("self", *names), co_name="__init__")
    if hasattr(template, "co_qualname"):  # Python 3.11+
        fields["co_qualname"] = "__init__"
    namespace = {"__builtins__": __builtins__}
    if factories:

        def make_missing(obj):
            values = obj.__dict__
            for name, make in factories:
                if values[name] is _MISSING:
                    values[name] = make()

        namespace["_make_missing"] = make_missing
    return FunctionType(template.replace(**fields), namespace, "__init__", defaults or None)


def _eq(self, other):
    if other.__class__ is not self.__class__:
        return NotImplemented
    return self.__dict__ == other.__dict__


def _hash(self):
    values = self.__dict__
    return hash(tuple(values[name] for name in self.__record_fields__))


def _repr(self):
    values = self.__dict__
    fields = ", ".join(f"{name}={values[name]!r}" for name in self.__record_fields__)
    return f"{self.__class__.__qualname__}({fields})"


def _frozen_set(self, name, value):
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delete(self, name):
    raise FrozenInstanceError(f"cannot delete field {name!r}")
