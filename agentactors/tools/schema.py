"""Python type hints to JSON Schema, JSON arguments back to Python values, and docstring parsing.

The schema is what the model sees; the conversion is what the tool receives.  Both
walk the same annotation with the same rules, so a value that validates against
the schema converts into the annotated type:

====================================  =============================================  ==========================
annotation                            schema                                         the tool receives
====================================  =============================================  ==========================
``str`` ``int`` ``float`` ``bool``    ``string`` ``integer`` ``number`` ``boolean``  the value (``float`` for
                                                                                     an integral ``number``)
``None``                              ``null``                                       ``None``
``X | None``, ``Union[X, Y]``         ``anyOf``                                      as the first member the
                                                                                     value validates against
                                                                                     and converts as
``list[T]``, ``Sequence[T]``          ``array`` of ``T``                             ``list``
``tuple[T, ...]`` / ``tuple[A, B]``   ``array`` / ``prefixItems``                    ``tuple``
``set[T]``, ``frozenset[T]``          ``array`` with ``uniqueItems``                 ``set`` / ``frozenset``
``dict[str, V]``, ``Mapping[str, V]``  ``object`` with ``additionalProperties``      ``dict``
``Literal[...]``, an ``Enum``         ``enum`` (of the members' values)              the literal / the member
attrs class, dataclass, ``TypedDict``  nested ``object``                             an instance / a ``dict``
a pydantic ``BaseModel``              its ``model_json_schema()``, ``$ref`` inlined  ``model_validate``'s
                                                                                     instance
``datetime``, ``date``, ``UUID``,     ``string`` with a ``format``                   the parsed value
``Path``
``Annotated[T, "text"]``              ``T``'s schema with ``description``            as for ``T``
``Annotated[T, Field(ge=0, ...)]``    ``T``'s schema with ``minimum``, ...           as for ``T``
``Any``                               ``{}`` (anything)                              the value
``NewType("Id", T)``, ``type A = T``  ``T``'s schema                                 as for ``T``
====================================  =============================================  ==========================

Constraints in ``Annotated`` metadata — pydantic's ``Field(...)`` (``gt``, ``ge``, ``lt``, ``le``,
``multiple_of``, ``min_length``, ``max_length``, ``pattern``, ``description``) and the ``annotated_types``
objects it is built on (``Gt``, ``Ge``, ``Len``, ...) — become the matching JSON Schema keywords, so the
validator enforces them before the tool runs.  Both are read by their attributes: pydantic is never
imported here (it is an optional extra), a model class is recognised by its ``model_json_schema`` and
``model_validate``.

Recursive classes are rejected (vendors accept no ``$ref`` cycles reliably).  Constraints on an optional value
(``Annotated[str | None, Field(max_length=3)]``) apply to each member but ``null``.
"""

from __future__ import annotations

import collections.abc as cabc
import dataclasses
import datetime as _dt
import enum
import functools
import inspect
import json
import sys
import types
import typing
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path, PurePath
from typing import Annotated, Any, Literal, Union

import attrs

from ..errors import AgentActorsError
from ..redaction import redact
from .docstrings import parse_docstring
from .json_refs import inline_refs
from .json_types import describe_schema, json_type_name

__all__ = [
    "ConversionError",
    "convert",
    "converter_for",
    "describe_schema",
    "is_object_type",
    "is_pydantic_model",
    "is_union",
    "json_default_value",
    "needs_conversion",
    "pydantic_issue",
    "pydantic_issues",
    "schema_for",
    "shows_credential",
    "unwrap_annotated",
    "with_default",
    "without_credentials",
]

_SCALARS: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_SEQUENCES = (list, cabc.Sequence, cabc.MutableSequence, cabc.Iterable, cabc.Collection)
_SETS = (set, frozenset, cabc.Set, cabc.MutableSet)
_MAPPINGS = (dict, cabc.Mapping, cabc.MutableMapping)
_FORMATTED: dict[type, str] = {_dt.datetime: "date-time", _dt.date: "date", uuid.UUID: "uuid"}


class ConversionError(AgentActorsError, ValueError):
    """A validated argument could not become the annotated Python value (a date that does not parse, ...).

    ``path`` names where; ``expected`` what was wanted.  Neither holds the value.
    """

    def __init__(self, path: str, expected: str) -> None:
        super().__init__(f"{path}: expected {expected}")
        self.path = path
        self.expected = expected

    def __reduce__(self) -> Any:
        # Exception's own pickling would call __init__ with the one message (Ray and multiprocessing ship errors);
        # the notes come back with the __dict__.
        return (type(self), (self.path, self.expected), dict(self.__dict__))


_TypeAliasType: Any = getattr(typing, "TypeAliasType", None)  # ``type X = ...`` (Python 3.12 on)


def _alias_target(tp: Any) -> Any:
    """What a ``NewType`` or a ``type X = ...`` alias stands for, else ``None``.

    ``UserId = NewType("UserId", int)`` is an ``int`` to JSON and to the tool (a NewType is the identity at
    run time), so it is described and converted as one.
    """
    if isinstance(tp, typing.NewType):
        return tp.__supertype__
    if _TypeAliasType is not None and isinstance(tp, _TypeAliasType):
        return tp.__value__
    return None


def unwrap_annotated(tp: Any) -> tuple[Any, str | None]:
    """``Annotated[T, "text", ...]`` → ``(T, "text")``; anything else → ``(tp, None)``.

    A pydantic ``Field(description=...)`` in the metadata counts as the text too.  A ``NewType`` or a
    ``type`` alias is unwrapped as well (to what it stands for).
    """
    if type(tp) is type:  # a plain class (int, str, a dataclass): the common case, nothing to unwrap
        return tp, None
    description: str | None = None
    while True:
        if typing.get_origin(tp) is Annotated:
            for meta in tp.__metadata__:
                if description is not None:
                    break
                if isinstance(meta, str):
                    description = meta
                elif isinstance(getattr(meta, "metadata", None), list):  # a pydantic FieldInfo
                    text = getattr(meta, "description", None)
                    if isinstance(text, str) and text:
                        description = text
            tp = tp.__origin__
            continue
        target = _alias_target(tp)
        if target is None:
            return tp, description
        tp = target


# Constraint attributes of annotated_types objects (and of pydantic's metadata built on them).
_CONSTRAINTS = ("gt", "ge", "lt", "le", "multiple_of", "min_length", "max_length", "pattern")
_NUMERIC_KEYWORDS = {
    "gt": "exclusiveMinimum",
    "ge": "minimum",
    "lt": "exclusiveMaximum",
    "le": "maximum",
    "multiple_of": "multipleOf",
}
_LENGTH_KEYWORDS = {
    "string": ("minLength", "maxLength"),
    "array": ("minItems", "maxItems"),
    "object": ("minProperties", "maxProperties"),
}


def _constraints_of(tp: Any) -> dict[str, Any]:
    """The constraints in ``Annotated`` metadata (outermost first wins), by attribute name."""
    found: dict[str, Any] = {}

    def take(meta: Any, depth: int = 0) -> None:
        if isinstance(meta, str | int | float | bool) or meta is None or depth > 4:
            return
        inner = getattr(meta, "metadata", None)
        if isinstance(inner, list):  # a pydantic FieldInfo: its constraints are annotated_types objects
            for item in inner:
                take(item, depth + 1)
            return
        for name in _CONSTRAINTS:
            try:
                value = getattr(meta, name, None)
            except Exception:
                continue
            if name == "pattern" and hasattr(value, "pattern"):
                value = getattr(value, "pattern", None)  # a compiled regex
            if isinstance(value, int | float | str) and not isinstance(value, bool):
                found.setdefault(name, value)

    while True:
        if typing.get_origin(tp) is Annotated:
            for meta in tp.__metadata__:
                take(meta)
            tp = tp.__origin__
        else:
            tp = _alias_target(tp)
            if tp is None:
                return found


def _constrained(schema: dict[str, Any], constraints: dict[str, Any]) -> dict[str, Any]:
    out = dict(schema)
    kind = out.get("type")
    options = out.get("anyOf")
    if kind is None and isinstance(options, list):
        # ``Annotated[str | None, Field(max_length=3)]``: the constraints are on the value, so on each member
        # (a length has no meaning for an untyped union, and was lost there); ``null`` takes none.
        out["anyOf"] = [
            o if not isinstance(o, dict) or o.get("type") == "null" else _constrained(o, constraints) for o in options
        ]
        return out
    for name, value in constraints.items():
        if name in _NUMERIC_KEYWORDS:
            out[_NUMERIC_KEYWORDS[name]] = value
        elif name == "pattern":
            out["pattern"] = value
        elif isinstance(kind, str) and kind in _LENGTH_KEYWORDS:
            out[_LENGTH_KEYWORDS[kind][0 if name == "min_length" else 1]] = value
    return out


def is_pydantic_model(tp: Any) -> bool:
    """Whether ``tp`` is a pydantic model class (recognised by its methods: pydantic is never imported here)."""
    return (
        isinstance(tp, type)
        and callable(getattr(tp, "model_json_schema", None))
        and callable(getattr(tp, "model_validate", None))
    )


def _untitled(node: Any) -> Any:
    """A pydantic schema without the ``title`` it gives every node: tokens that tell the model nothing."""
    if isinstance(node, list):
        return [_untitled(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in ("enum", "const", "default", "examples"):
            out[key] = value
        elif key == "properties" and isinstance(value, dict):
            out[key] = {name: _untitled(sub) for name, sub in value.items()}
        else:
            out[key] = _untitled(value)
    return out


def _pydantic_schema(tp: type) -> dict[str, Any]:
    try:
        schema = inline_refs(tp.model_json_schema())  # type: ignore[attr-defined]
    except ValueError as exc:
        raise TypeError(f"{tp.__qualname__}: {exc}; recursive types cannot be tool parameters") from None
    out = _untitled(schema)
    assert isinstance(out, dict)
    return without_credentials(out) or out  # pydantic records every field's default and examples


def _is_union(tp: Any) -> bool:
    origin = typing.get_origin(tp)
    return origin is Union or origin is types.UnionType


def _is_typeddict(tp: Any) -> bool:
    if not isinstance(tp, type):
        return False
    if typing.is_typeddict(tp):
        return True
    # typing_extensions.TypedDict (the one pydantic asks for before Python 3.12) is a class of its own there,
    # which typing.is_typeddict does not know: asked of typing_extensions, loaded already when such a class exists.
    extensions = sys.modules.get("typing_extensions")
    return extensions is not None and bool(extensions.is_typeddict(tp))


def _is_record(tp: Any) -> bool:
    return isinstance(tp, type) and (attrs.has(tp) or dataclasses.is_dataclass(tp) or _is_typeddict(tp))


def is_object_type(tp: Any) -> bool:
    """Whether ``tp`` is a class whose schema is an object with named fields: attrs, dataclass, TypedDict, pydantic."""
    return _is_record(tp) or is_pydantic_model(tp)


def is_union(tp: Any) -> bool:
    """Whether ``tp`` is ``A | B`` / ``Union[A, B]`` (``Optional[A]`` included)."""
    return _is_union(tp)


def json_default_value(value: Any) -> tuple[bool, Any]:
    """``(True, jsonable)`` for a default that can be recorded in a schema, else ``(False, None)``.

    The recorded value is a copy, in its JSON form: a tool that mutates its default list must not change
    the schema every later model reads (what one call appended would be shown to the next run).  A NaN or an
    infinity (``limit: float = math.inf``) is no JSON value: a schema holding one could not be sent.  A
    default holding a registered secret or anything shaped like a credential is not recorded either: the
    schema goes to the model's vendor with every request (:func:`shows_credential`).
    """
    ok, jsonable = _json_default(value)
    if not ok or shows_credential(jsonable):  # a credential as a default (api_key: str = "sk-..."): never shown
        return False, None
    return True, jsonable


def _json_default(value: Any) -> tuple[bool, Any]:
    """:func:`json_default_value` without the credential check: what a class's fields cache (the check is made
    each time a schema is, since a secret may be registered after the class was first described)."""
    if isinstance(value, enum.Enum):
        value = value.value
    elif isinstance(value, tuple | frozenset | set):
        value = list(value)
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return False, None
    return True, json.loads(text)


def shows_credential(value: Any) -> bool:
    """Whether a schema's data value (a ``default``, an item of ``examples``) holds a registered secret or
    anything shaped like a credential — in a string, a key, or a number's text.

    Each string is checked as it is, not as JSON text: JSON escapes a quote, a backslash or (by default) any
    non-ASCII character, and a secret spelled so would not be found.  A walk with a stack, not recursion, that
    looks at each container once (a value of an explicit spec may hold itself).
    """
    todo = [value]
    seen: set[int] = set()
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            if redact(item) != item:
                return True
            continue
        if isinstance(item, Mapping | list | tuple):
            if id(item) in seen:
                continue
            seen.add(id(item))
        if isinstance(item, Mapping):
            for key, sub in item.items():
                todo.append(key)
                todo.append(sub)
        elif isinstance(item, list | tuple):
            todo.extend(item)
        elif item is not None and not isinstance(item, bool):
            text = repr(item)
            if redact(text) != text:
                return True
    return False


# Where a JSON Schema keeps other schemas (a data keyword — ``default``, ``enum``, ``const``, ``examples`` — never
# does): one schema, a list of them, a map of names to them.  ``items`` is one schema, or a list in old drafts.
_ONE_SCHEMA = frozenset(
    ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames", "unevaluatedItems",
     "unevaluatedProperties", "additionalItems", "contentSchema")
)
_SCHEMA_LISTS = frozenset(("anyOf", "allOf", "oneOf", "prefixItems", "items"))
_SCHEMA_MAPS = frozenset(("properties", "patternProperties", "$defs", "definitions", "dependentSchemas"))
# A path to a schema node: ``None`` for the root, else ``(the parent's path, key or index)`` (shared, not copied).
_Path = tuple[Any, Any] | None


def without_credentials(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """``schema`` without the ``default`` and ``examples`` items that hold a credential (:func:`shows_credential`),
    or ``None`` when it shows none.

    A schema goes to the model's vendor with every request, and into every ``llm.request`` event and record.
    A credential there is *dropped*, not masked: a model shown ``"default": "[REDACTED]"`` could send that text
    back as the value, while a parameter without its default is still optional (the function gets its own
    default when the model omits it).  ``enum`` and ``const`` are left as they are: they say what validates.

    The result is a new dict that shares every part that did not change (the given schema is not touched).  The
    walk knows where schemas nest (``properties``, ``anyOf``, ``items``, ...), so a property *named*
    ``default`` is a property, not a default.  It uses a stack, not recursion, so any depth is walked, and looks at
    each node once, so a schema that holds itself ends; a node reached from two places (an explicit spec may share
    one dict) loses its credential at the first place in one pass, at the other in the next.
    """
    out: dict[str, Any] | None = None
    for _ in range(_PASSES):
        again = _without_credentials_once(out if out is not None else schema)
        if again is None:
            break
        out = again
    return out


#: Passes of :func:`without_credentials` at most: one more for each further place a shared node holding a
#: credential is reached from (a generated schema shares none).
_PASSES = 64


def _without_credentials_once(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    found: list[tuple[_Path, str, list[Any] | None]] = []
    todo: list[tuple[Any, _Path]] = [(schema, None)]
    seen: set[int] = set()
    while todo:
        node, path = todo.pop()
        if not isinstance(node, Mapping) or id(node) in seen:
            continue  # a boolean schema, or a node walked already
        seen.add(id(node))
        for key, value in node.items():
            if key == "default":
                if shows_credential(value):
                    found.append((path, key, None))
            elif key == "examples":
                kept = [v for v in value if not shows_credential(v)] if isinstance(value, list) else None
                if (kept is None and shows_credential(value)) or (kept is not None and len(kept) != len(value)):
                    found.append((path, key, kept or None))
            elif key in _SCHEMA_MAPS and isinstance(value, Mapping):
                todo.extend((sub, ((path, key), name)) for name, sub in value.items())
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                todo.extend((sub, ((path, key), i)) for i, sub in enumerate(value))
            elif key in _ONE_SCHEMA:
                todo.append((value, (path, key)))
    if not found:
        return None
    root = dict(schema)
    copies: dict[tuple[Any, ...], Any] = {(): root}
    for path, key, kept in found:
        steps: list[Any] = []
        while path is not None:
            path, step = path
            steps.append(step)
        steps.reverse()
        holder: Any = root
        for depth, step in enumerate(steps):
            prefix = tuple(steps[: depth + 1])
            copied = copies.get(prefix)
            if copied is None:
                original = holder[step]
                copied = copies[prefix] = dict(original) if isinstance(original, Mapping) else list(original)
                holder[step] = copied
            holder = copied
        if kept is None:
            del holder[key]
        else:
            holder[key] = kept
    return root


def with_default(schema: dict[str, Any], default: Any) -> dict[str, Any]:
    """``schema`` with its JSON ``default`` recorded (a new dict).

    A ``None`` default for a schema that takes no ``null`` (``limit: int = None``, Python's old implicit
    ``Optional``) makes it take ``null`` too: the model reads ``"default": null``, and sending the very
    default it was shown must not be refused.  The function gets ``None``, as when the model omits it.
    """
    out = dict(schema)
    if default is None and not _takes_null(out):
        description = out.pop("description", None)
        out = {"anyOf": [out, {"type": "null"}]}
        if description is not None:
            out["description"] = description
    out["default"] = default
    return out


def _takes_null(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return schema is True
    if not any(k in schema for k in ("type", "enum", "const", "anyOf", "oneOf", "allOf", "not", "$ref")):
        return True  # unconstrained ({} or annotations only)
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if any(isinstance(o, list) and any(_takes_null(m) for m in o) for o in (schema.get("anyOf"), schema.get("oneOf"))):
        return True
    if isinstance(schema.get("enum"), list) and None in schema["enum"]:
        return True
    return "const" in schema and schema["const"] is None


def _class_description(cls: type) -> str | None:
    doc = inspect.getdoc(cls)
    if not doc:
        return None
    # dataclasses invent "Name(field: type, ...)" docstrings; they describe nothing.
    if dataclasses.is_dataclass(cls) and doc.startswith(cls.__name__ + "("):
        return None
    if doc == inspect.getdoc(object) or doc == inspect.getdoc(dict):
        return None
    text, _ = parse_docstring(doc)
    return text or None


@functools.lru_cache(maxsize=512)  # read for every value converted: type hints are slow to resolve
def _record_fields(cls: type) -> list[tuple[str, Any, bool, tuple[bool, Any], str | None]]:
    """``(init name, annotation, required, (has default, default), description)`` for each init field (read only)."""
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception as exc:  # unresolvable forward references: say which class
        raise TypeError(f"cannot resolve the type hints of {cls.__qualname__}: {exc}") from exc
    out: list[tuple[str, Any, bool, tuple[bool, Any], str | None]] = []
    if attrs.has(cls):
        for f in attrs.fields(cls):
            if not f.init:
                continue
            required = f.default is attrs.NOTHING
            default = (False, None)
            if not required and not isinstance(f.default, attrs.Factory):  # type: ignore[arg-type]
                default = _json_default(f.default)
            desc = f.metadata.get("description") if f.metadata else None
            out.append((f.alias or f.name, hints.get(f.name, Any), required, default, desc))
    elif dataclasses.is_dataclass(cls):
        for df in dataclasses.fields(cls):
            if not df.init:
                continue
            has_default = df.default is not dataclasses.MISSING
            required = not has_default and df.default_factory is dataclasses.MISSING
            default = _json_default(df.default) if has_default else (False, None)
            desc = df.metadata.get("description") if df.metadata else None
            out.append((df.name, hints.get(df.name, Any), required, default, desc))
        # ``InitVar`` pseudo-fields are __init__ parameters too (dataclasses.fields leaves them out): without
        # them, the class could not be made from any argument the model sends.
        for name, hint in hints.items():
            if isinstance(hint, dataclasses.InitVar):
                given = getattr(cls, name, dataclasses.MISSING)  # a default stays on the class
                has_default = given is not dataclasses.MISSING
                default = _json_default(given) if has_default else (False, None)
                out.append((name, hint.type, not has_default, default, None))
    else:  # TypedDict
        required_keys = getattr(cls, "__required_keys__", frozenset(hints))
        for key, hint in hints.items():
            inner = hint
            required = key in required_keys
            # A NotRequired/Required wrapper decides: __required_keys__ misses it under postponed annotations
            # (``from __future__ import annotations``: the class saw strings, and counted the key as the
            # class's totality says).
            while typing.get_origin(inner) in (typing.NotRequired, typing.Required):
                required = typing.get_origin(inner) is typing.Required
                inner = typing.get_args(inner)[0]
            out.append((key, inner, required, (False, None), None))
    return out


def schema_for(tp: Any, *, _stack: tuple[type, ...] = ()) -> dict[str, Any]:
    """The JSON Schema of annotation ``tp`` (see the module table).

    :raises TypeError: the annotation has no JSON form (a callable, a recursive
        class, a mapping with non-string keys, ...).
    """
    constraints = _constraints_of(tp) if typing.get_origin(tp) is Annotated or _alias_target(tp) is not None else None
    tp, description = unwrap_annotated(tp)
    schema = _schema_for(tp, _stack)
    if constraints:
        schema = _constrained(schema, constraints)
    if description:
        schema = {**schema, "description": description}
    return schema


def _enum_schema(values: list[Any]) -> dict[str, Any]:
    schema: dict[str, Any] = {"enum": values}
    kinds = {_json_type_of(v) for v in values}
    if len(kinds) == 1:
        schema = {"type": kinds.pop(), **schema}
    return schema


def _json_type_of(value: Any) -> str:
    return json_type_name(value) or type(value).__name__


def _schema_for(tp: Any, stack: tuple[type, ...]) -> dict[str, Any]:
    if tp is Any or tp is object:
        return {}
    if tp is None or tp is type(None):
        return {"type": "null"}
    if tp in _SCALARS:
        return {"type": _SCALARS[tp]}
    if isinstance(tp, type) and tp in _FORMATTED:
        return {"type": "string", "format": _FORMATTED[tp]}
    if isinstance(tp, type) and issubclass(tp, PurePath):
        return {"type": "string"}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _enum_schema([m.value for m in tp])
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is Literal:
        return _enum_schema([a.value if isinstance(a, enum.Enum) else a for a in args])
    if _is_union(tp):
        return {"anyOf": [schema_for(a, _stack=stack) for a in args]}
    if tp in _SEQUENCES or origin in _SEQUENCES:
        return {"type": "array", "items": schema_for(args[0], _stack=stack)} if args else {"type": "array"}
    if tp is tuple or origin is tuple:
        if not args:
            return {"type": "array"}
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": schema_for(args[0], _stack=stack)}
        if args == ((),):  # tuple[()]
            return {"type": "array", "maxItems": 0}
        return {
            "type": "array",
            "prefixItems": [schema_for(a, _stack=stack) for a in args],
            "items": False,
            "minItems": len(args),
            "maxItems": len(args),
        }
    if tp in _SETS or origin in _SETS:
        out: dict[str, Any] = {"type": "array", "uniqueItems": True}
        if args:
            out["items"] = schema_for(args[0], _stack=stack)
        return out
    if tp in _MAPPINGS or origin in _MAPPINGS:
        if not args:
            return {"type": "object"}
        key, _ = unwrap_annotated(args[0])
        if key is not str and key is not Any:
            raise TypeError(f"{tp!r}: JSON object keys are strings, so a mapping's key type must be str")
        return {"type": "object", "additionalProperties": schema_for(args[1], _stack=stack)}
    if is_pydantic_model(tp):
        return _pydantic_schema(tp)
    if _is_record(tp):
        if tp in stack:
            raise TypeError(f"{tp.__qualname__} refers to itself; recursive types cannot be tool parameters")
        properties: dict[str, Any] = {}
        required: list[str] = []
        for name, hint, is_required, (has_default, default), desc in _record_fields(tp):
            prop = schema_for(hint, _stack=(*stack, tp))
            if desc and "description" not in prop:
                prop["description"] = desc
            if has_default and not shows_credential(default):  # checked now: the fields are cached
                prop = with_default(prop, default)
            properties[name] = prop
            if is_required:
                required.append(name)
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        schema["additionalProperties"] = False
        cls_desc = _class_description(tp)
        if cls_desc:
            schema["description"] = cls_desc
        return schema
    raise TypeError(
        f"cannot describe {tp!r} as JSON Schema: use str, int, float, bool, None, lists, tuples, sets, "
        "dicts with str keys, Literal, an Enum, unions of these, attrs / dataclass / TypedDict classes or "
        "pydantic models"
    )


def needs_conversion(tp: Any) -> bool:
    """Whether a JSON value must be converted to match ``tp`` (so plain JSON types skip the walk)."""
    tp, _ = unwrap_annotated(tp)
    if tp in (str, bool, Any, object, None, type(None)):
        return False
    origin = typing.get_origin(tp)
    if origin is Literal:  # an enum member, or a number member a JSON 1.0 must become
        return any(isinstance(a, enum.Enum) or _is_number(a) for a in typing.get_args(tp))
    if _is_union(tp) or tp in _SEQUENCES or origin in _SEQUENCES or tp in _MAPPINGS or origin in _MAPPINGS:
        return any(needs_conversion(a) for a in typing.get_args(tp))
    if _is_typeddict(tp):
        return any(needs_conversion(h) for _, h, _, _, _ in _record_fields(tp))
    return True  # int (an integral float), float, tuples, sets, enums, records, formatted strings


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _integral(value: Any) -> bool:
    """A JSON number with no fractional part sent as a float (``2.0``): JSON Schema's ``integer`` takes it."""
    return isinstance(value, float) and value.is_integer()


_NO_MEMBER: Any = object()


def _literal_member(value: Any, args: tuple[Any, ...]) -> Any:
    """The member of ``Literal[*args]`` that ``value`` (validated against its ``enum``) stands for, else
    ``_NO_MEMBER``.

    Equal is not enough: ``True == 1``, so a bool matches only a bool member (and a number never one); the
    member itself is returned — ``1`` for ``1.0``, the enum member for its value.
    """
    for a in args:
        member = a.value if isinstance(a, enum.Enum) else a
        if isinstance(value, bool) or isinstance(member, bool):
            if value is member:
                return a
        elif value == member:
            return a
    return _NO_MEMBER


def _int_value(value: Any, path: str) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value  # _integral, inline


def _float_value(value: Any, path: str) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return float(value)
        except OverflowError:  # an integer of hundreds of digits: a valid JSON "number" no float holds
            raise ConversionError(path, "a number a float can hold") from None
    return value


def converter_for(tp: Any) -> Callable[[Any, str], Any]:
    """``convert(value, tp, path)`` as a function of ``(value, path)``, with ``tp``'s wrapping resolved once.

    A tool resolves one per parameter when it is made, so a call pays for its values only, not for
    reading its annotations again: ``int`` and ``float`` (the common cases) get their own function.
    """
    unwrapped, _ = unwrap_annotated(tp)
    if unwrapped is int:
        return _int_value
    if unwrapped is float:
        return _float_value
    return functools.partial(_convert_to, unwrapped)


def _convert_to(tp: Any, value: Any, path: str) -> Any:
    return convert(value, tp, path)


def convert(value: Any, tp: Any, path: str = "arguments") -> Any:
    """Turn a validated JSON value into the Python value annotation ``tp`` describes.

    :raises ConversionError: the value cannot become that type (a malformed date, ...).
    """
    tp, _ = unwrap_annotated(tp)
    if value is None or tp is Any or tp is object:
        return value
    if tp is float:
        return _float_value(value, path)
    if tp is int:
        return int(value) if _integral(value) else value
    if tp in _SCALARS:
        return value
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(value)
        except ValueError:
            raise ConversionError(path, f"one of the {tp.__name__} values") from None
    if origin is Literal:
        member = _literal_member(value, args)
        return value if member is _NO_MEMBER else member
    if isinstance(tp, type) and tp in _FORMATTED:
        return _parse_formatted(value, tp, path)
    if isinstance(tp, type) and issubclass(tp, PurePath):
        return tp(value) if tp is not PurePath else Path(value)
    if _is_union(tp):
        if not isinstance(value, str | dict | list):
            # A number or a bool (None returned above): its member is decided by its type alone, one walk.
            for loose in (False, True):
                for member in args:
                    if _matches(value, member, loose=loose):
                        return convert(value, member, path)
            return value
        failed: ConversionError | None = None
        for member in _union_members_for(value, args):
            try:
                return convert(value, member, path)
            except ConversionError as exc:  # ("" for date | str: not a date, still a str) the next one may take it
                failed = failed or exc
        if failed is not None:
            raise failed
        return value
    if tp in _SEQUENCES or origin in _SEQUENCES:
        return [convert(v, args[0], f"{path}[{i}]") for i, v in enumerate(value)] if args else list(value)
    if tp is tuple or origin is tuple:
        if not args or args == ((),):
            return tuple(value)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(convert(v, args[0], f"{path}[{i}]") for i, v in enumerate(value))
        return tuple(convert(v, a, f"{path}[{i}]") for i, (v, a) in enumerate(zip(value, args, strict=False)))
    if tp in _SETS or origin in _SETS:
        items = [convert(v, args[0], f"{path}[{i}]") for i, v in enumerate(value)] if args else list(value)
        return frozenset(items) if (tp is frozenset or origin is frozenset) else set(items)
    if tp in _MAPPINGS or origin in _MAPPINGS:
        if not args:
            return dict(value)
        return {k: convert(v, args[1], f"{path}.{k}") for k, v in value.items()}
    if is_pydantic_model(tp):
        try:
            return tp.model_validate(value)
        except ValueError as exc:  # pydantic's ValidationError: its own validators said no
            where, expected = pydantic_issue(exc)
            raise ConversionError(f"{path}.{where}" if where else path, expected) from None
    if _is_record(tp):
        fields = {name: hint for name, hint, _, _, _ in _record_fields(tp)}
        kwargs = {k: convert(v, fields.get(k, Any), f"{path}.{k}") for k, v in value.items()}
        if _is_typeddict(tp):
            return kwargs
        try:
            return tp(**kwargs)
        except (TypeError, ValueError) as exc:  # the class's own validators rejected it
            raise ConversionError(path, f"a valid {tp.__name__} ({type(exc).__name__})") from None
    return value


def pydantic_issues(exc: BaseException) -> list[tuple[str, str]]:
    """``(where, what was expected)`` for each error of a pydantic ``ValidationError`` (never the input)."""
    errors = getattr(exc, "errors", None)
    try:
        items = errors(include_input=False, include_url=False) if callable(errors) else []
    except TypeError:
        items = errors() if callable(errors) else []
    out: list[tuple[str, str]] = []
    for item in items:
        loc = item.get("loc", ()) if isinstance(item, dict) else ()
        where = ""
        for part in loc:
            where += f"[{part}]" if isinstance(part, int) else (f".{part}" if where else str(part))
        message = str(item.get("msg", "a valid value")) if isinstance(item, dict) else "a valid value"
        out.append((where, message[:1].lower() + message[1:]))
    return out or [("", type(exc).__name__)]


def pydantic_issue(exc: BaseException) -> tuple[str, str]:
    """The first of :func:`pydantic_issues`."""
    return pydantic_issues(exc)[0]


def _union_members_for(value: Any, members: tuple[Any, ...]) -> list[Any]:
    """The members of a union a validated JSON value may convert as, the likeliest first (tried in turn).

    The value's own type first: ``float | int`` keeps ``2`` an int, ``int | float`` keeps ``2.0`` a float;
    then the numbers JSON blurs (``2`` for ``float | None``, ``2.0`` for ``int | None``).  Among several
    members that could take an object or an array (``Circle | Square``, ``list[A] | list[B]``), those whose
    schema the value satisfies — what the validator's ``anyOf`` said — come first, not merely the first record.
    """
    for loose in (False, True):
        candidates = [m for m in members if _matches(value, m, loose=loose)]
        if len(candidates) > 1 and isinstance(value, dict | list):
            fitting = [m for m in candidates if _fits(value, m)]
            candidates = fitting + [m for m in candidates if not any(m is f for f in fitting)]
        if candidates:
            return candidates
    return []


def _fits(value: Any, tp: Any) -> bool:
    """Whether a JSON value satisfies ``tp``'s schema (to choose among a union's structured members)."""
    try:
        check = _member_check(tp)
    except TypeError:  # an annotation that cannot be hashed (metadata without a hash): not cached
        check = _member_check.__wrapped__(tp)
    return check(value)


@functools.lru_cache(maxsize=256)
def _member_check(tp: Any) -> Callable[[Any], bool]:
    """A validator of ``tp``'s schema: the fast check where it is certain, else the arguments' validator — whose
    regexes are bounded per string and per call (:mod:`.validation`), where ``jsonschema``'s own ran ``re``
    unbounded on the model's value (a member type's catastrophic ``pattern`` held the event loop)."""
    from .fastcheck import compile_check
    from .validation import ArgumentValidator  # (here, not at the top: validation.py imports this module)

    schema = schema_for(tp)
    fast = compile_check(schema)
    full = ArgumentValidator(schema, tool_name="output")

    def check(value: Any) -> bool:
        return (fast is not None and fast(value)) or not full.issues(value)

    return check


def _matches(value: Any, tp: Any, *, loose: bool = False) -> bool:
    """Whether a JSON value plausibly belongs to union member ``tp`` (first match wins).

    ``loose``: a number JSON does not tell apart belongs too — an int to ``float``, an integral float
    (``2.0``) to ``int``; asked only when no member took the value as it is.
    """
    tp, _ = unwrap_annotated(tp)
    if tp is Any or tp is object:
        return True
    if tp is None or tp is type(None):
        return value is None
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return (isinstance(value, int) and not isinstance(value, bool)) or (loose and _integral(value))
    if tp is float:
        return isinstance(value, float) or (loose and isinstance(value, int) and not isinstance(value, bool))
    if tp is str:
        return isinstance(value, str)
    origin = typing.get_origin(tp)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _literal_member(value, tuple(tp)) is not _NO_MEMBER  # (True is no member 1 of an IntEnum)
    if origin is Literal:
        return _literal_member(value, typing.get_args(tp)) is not _NO_MEMBER
    if _is_union(tp):
        return any(_matches(value, a, loose=loose) for a in typing.get_args(tp))
    if _is_record(tp) or is_pydantic_model(tp) or tp in _MAPPINGS or origin in _MAPPINGS:
        return isinstance(value, dict)
    if tp in (*_SEQUENCES, *_SETS, tuple) or origin in (*_SEQUENCES, *_SETS, tuple):
        return isinstance(value, list)
    if isinstance(tp, type) and (tp in _FORMATTED or issubclass(tp, PurePath)):
        return isinstance(value, str)
    return False


def _parse_formatted(value: Any, tp: type, path: str) -> Any:
    try:
        if tp is _dt.datetime:
            return _dt.datetime.fromisoformat(value)
        if tp is _dt.date:
            return _dt.date.fromisoformat(value)
        return uuid.UUID(value)
    except (TypeError, ValueError):
        raise ConversionError(path, f"a {_FORMATTED[tp]} string") from None


# --- describing a schema in a few words (for the model's fix-it text) ---------------------------


