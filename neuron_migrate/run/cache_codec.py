"""A compact, fast encoding of `FileResult`s: nested tuples that `marshal` stores.

Unpickling frozen dataclasses costs a few microseconds per object, which made reading cached
results (and results sent back by pool workers) cost as much as a sizeable part of checking.
Here a dataclass becomes `[tag, field values...]`, an enum `[tag, value]`, and tuples stay
tuples; decoding fills each instance's `__dict__` directly, as unpickling does, at a fraction of
the cost. Field lists are read from the classes, so new fields are carried without edits here;
a value of a type this codec does not know raises `TypeError`, so nothing is silently lost.
"""

from __future__ import annotations

import dataclasses
import marshal
from collections.abc import Callable
from enum import Enum
from typing import Any

from neuron_migrate.model import (
    FileResult,
    Finding,
    Fix,
    Position,
    Requirement,
    Safety,
    Severity,
    TextEdit,
)

_CLASSES: tuple[type, ...] = (FileResult, Finding, Fix, TextEdit, Position, Safety, Severity, Requirement)
_TAGS = {cls: tag for tag, cls in enumerate(_CLASSES)}
_FIELDS: dict[type, tuple[str, ...]] = {
    cls: tuple(f.name for f in dataclasses.fields(cls)) for cls in _CLASSES if dataclasses.is_dataclass(cls)
}
_PLAIN = (str, int, float, bool, type(None))


def encode(value: Any) -> Any:
    """`value` as marshal-able nested tuples and tagged lists."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is tuple:
        return tuple(encode(item) for item in value)
    tag = _TAGS.get(kind)
    if tag is None:
        raise TypeError(f"cannot encode a {kind.__name__}")
    if issubclass(kind, Enum):
        return [tag, value.value]
    return [tag, *(encode(getattr(value, name)) for name in _FIELDS[kind])]


def decode(value: Any) -> Any:
    """The object `encode` was given."""
    kind = type(value)
    if kind is list:
        return _BUILDERS[value[0]](value)
    if kind is tuple:
        return _decode_tuple(value)
    return value


def _decode_tuple(items: tuple[Any, ...]) -> tuple[Any, ...]:
    builders = _BUILDERS
    return tuple([builders[v[0]](v) if type(v) is list else _decode_tuple(v) if type(v) is tuple else v for v in items])


def _builder(cls: type) -> Callable[[list[Any]], Any]:
    """A function that rebuilds a `cls` from its encoding.

    For dataclasses it is generated, straight-line code per field that calls the nested value's
    builder directly (as `dataclasses` generates `__init__`): a generic loop over the fields and
    a call to `decode` per value cost twice as much per object.
    """
    if issubclass(cls, Enum):
        members = cls._value2member_map_
        return lambda value: members[value[1]]
    lines = ["def build(value):", "    instance = new(cls)", "    state = instance.__dict__"]
    for index, name in enumerate(_FIELDS[cls], start=1):
        lines += [
            f"    item = value[{index}]",
            "    kind = type(item)",
            "    if kind is list:",
            "        item = builders[item[0]](item)",
            "    elif kind is tuple:",
            "        item = decode_tuple(item)",
            f"    state[{name!r}] = item",
        ]
    lines.append("    return instance")
    namespace: dict[str, Any] = {
        "new": object.__new__,
        "cls": cls,
        "builders": _BUILDERS,
        "decode_tuple": _decode_tuple,
    }
    exec("\n".join(lines), namespace)  # the code is built from field names only
    return namespace["build"]


_BUILDERS: list[Callable[[list[Any]], Any]] = []
_BUILDERS.extend(_builder(cls) for cls in _CLASSES)


def dumps(result: FileResult) -> bytes:
    return marshal.dumps(encode(result))


def loads(data: bytes) -> FileResult:
    return decode(marshal.loads(data))
