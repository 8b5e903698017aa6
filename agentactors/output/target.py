"""An output type, analysed once: its members, their schemas, and how a JSON answer becomes a value of it.

:class:`OutputTarget` is built once per agent from ``T`` (:mod:`agentactors.output.spec`).  The families:

====================================================  ====================================================
``T``                                                 what the model is asked for
====================================================  ====================================================
a pydantic model, dataclass, ``TypedDict``, attrs     an object with the class's fields
class
``int`` ``float`` ``bool`` ``str``, ``list[...]``,    ``{"response": <T's schema>}`` — every strategy needs an
``dict[str, ...]``, ``Literal[...]`` / an ``Enum``    object at the root (tool parameters, OpenAI strict
(a constrained pick), ``X | None``, unions of these   mode), so the value is wrapped and unwrapped here
``A | B`` of object types                             one member per class: a tool each (``{name}_{A}``), or
                                                      ``{"response": A | B}`` as text, the first member the
                                                      answer validates as wins
====================================================  ====================================================

Checking an answer (:meth:`OutputTarget.check`) is: ``null`` for an optional property read as absent
(strict modes send every property, in nested objects too), no NaN or infinity (not JSON numbers, though
Python's parser reads them: every comparison with NaN is false, so a ``minimum`` or ``maximum`` would let
it through) and no lone surrogate in a string (half a character, which the caller could not encode), the
JSON Schema (Draft 2020-12, the tool-argument validator: types, ``enum`` members,
required fields, nested types, ``Field`` constraints), then the conversion into ``T`` (pydantic's own
validation for a model).  Every problem becomes a :class:`~agentactors.tools.results.ValidationIssue`:
where, what was expected, the JSON type sent — never the value.  A value outside a ``Literal``'s set or an
enum's values is an issue, never coerced.
"""

from __future__ import annotations

import enum
import re
import typing
from collections import abc
from collections.abc import Sequence
from typing import Any, Literal

import attrs

from ..tools.json_nulls import drop_null_optionals
from ..tools.json_nulls import has_null as _has_null
from ..tools.results import ValidationIssue
from ..tools.schema import (
    ConversionError,
    convert,
    is_object_type,
    is_pydantic_model,
    is_union,
    pydantic_issues,
    schema_for,
    unwrap_annotated,
)
from ..tools.validation import ArgumentValidator
from .spec import DEFAULT_TOOL_NAME, check_output_type

__all__ = ["WRAPPER", "Checked", "Member", "OutputTarget", "drop_null_optionals", "issue_lines", "type_label"]

#: The property a non-object answer is wrapped in.
WRAPPER = "response"

_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_.\-]")


def type_label(tp: Any) -> str:
    """A short name for ``tp`` (``Person``, ``int``, ``list[str]``, ``Literal['a', 'b']``)."""
    tp, _ = unwrap_annotated(tp)
    if isinstance(tp, type) and not typing.get_args(tp):
        return tp.__name__
    return repr(tp).replace("typing.", "")


@attrs.frozen(slots=True)
class Checked:
    """The verdict on one answer: the value (``ok``) or the issues the model will read."""

    ok: bool
    value: Any = None
    issues: tuple[ValidationIssue, ...] = ()


@attrs.frozen(slots=True, eq=False)
class Member:
    """One shape the answer may take: its Python type, its object schema, its output tool's name."""

    tp: Any
    name: str
    schema: dict[str, Any]
    wrapped: bool
    description: str
    validator: ArgumentValidator = attrs.field(repr=False)

    def check(self, arguments: Any) -> Checked:
        """Validate ``arguments`` (the object the model sent) and convert it into :attr:`tp`."""
        # NaN, infinities and lone surrogates are the validator's to refuse, alone, as for a tool's arguments
        # (agentactors.tools.validation): one walk for both, in the same words.
        if _has_null(arguments):
            arguments = drop_null_optionals(arguments, self.schema)
        issues = self.validator.issues(arguments)
        if issues:
            return Checked(False, issues=tuple(issues))
        raw = arguments[WRAPPER] if self.wrapped else arguments
        if is_pydantic_model(self.tp):
            try:  # the model's own validation, every error of it (convert would report the first only)
                return Checked(True, self.tp.model_validate(raw))
            except ValueError as exc:
                return Checked(False, issues=_pydantic(exc))
        try:
            value = convert(raw, self.tp, WRAPPER if self.wrapped else "answer")
        except ConversionError as exc:
            return Checked(False, issues=(ValidationIssue(exc.path, exc.expected, "a value that does not convert"),))
        except ValueError as exc:  # a pydantic model's own validators (a ValueError), when convert passes it on
            return Checked(False, issues=_pydantic(exc))
        except TypeError as exc:
            # The schema passed, the building did not: a set of items Python cannot hash (``set[Any]`` given
            # lists, a set of TypedDicts).  pydantic says the same as an issue; so does this, naming the type.
            where = WRAPPER if self.wrapped else "answer"
            got = f"a value that does not convert ({type(exc).__name__}: {str(exc)[:120]})"
            return Checked(False, issues=(ValidationIssue(where, f"a value that converts into {type_label(self.tp)}",
                                                          got),))
        return Checked(True, value)


def _pydantic(exc: BaseException) -> tuple[ValidationIssue, ...]:
    return tuple(ValidationIssue(where or "answer", expected, "a value it rejects") for where, expected in
                 pydantic_issues(exc))


def _is_pick(tp: Any) -> bool:
    tp, _ = unwrap_annotated(tp)
    return typing.get_origin(tp) is Literal or (isinstance(tp, type) and issubclass(tp, enum.Enum))


def _description(tp: Any, given: str | None, member_of: str | None) -> str:
    if given:
        return given
    tp, _ = unwrap_annotated(tp)
    label = type_label(tp)
    if member_of:
        return f"The final answer, when it is a {label}: call this tool with it to finish."
    if _is_pick(tp):
        return "The final answer: call this tool with exactly one of the allowed values to finish."
    return f"The final answer ({label}): call this tool with it to finish."


def _never_hashable(tp: Any) -> bool:
    """Whether no value of ``tp`` can be hashed: a list, a mapping, a set, a TypedDict (a dict), a class
    whose instances have no hash (a dataclass with ``eq`` and not ``frozen``, a pydantic model not frozen),
    or a union of such."""
    tp, _ = unwrap_annotated(tp)
    if is_union(tp):
        return all(_never_hashable(a) for a in typing.get_args(tp))  # None is hashable: X | None may be held
    origin = typing.get_origin(tp) or tp
    if origin is frozenset:
        return False
    if isinstance(origin, type) and issubclass(origin, (list, dict, set, abc.Sequence, abc.Mapping, abc.Set)):
        return origin is not tuple and origin is not str and origin is not bytes  # built as lists, dicts, sets
    if typing.is_typeddict(tp):
        return True
    return isinstance(tp, type) and getattr(tp, "__hash__", None) is None


def _unhashable_set(tp: Any) -> Any:
    """The first ``set[X]`` / ``frozenset[X]`` in ``tp``'s type arguments whose ``X`` is never hashable, or ``None``.

    Such a set can hold no answer: the schema would pass and building the set raise, on every attempt.
    (The fields of a class are not looked into: a value that cannot be hashed is still refused then, as an
    issue of the answer.)
    """
    inner, _ = unwrap_annotated(tp)
    args = typing.get_args(inner)
    if typing.get_origin(inner) in (set, frozenset) and args and _never_hashable(args[0]):
        return inner
    for arg in args:
        found = _unhashable_set(arg) if not isinstance(arg, str | int | float | bool | enum.Enum) else None
        if found is not None:
            return found
    return None


def _value_inside(tp: Any) -> Any:
    """A value written as a type argument (``[int]`` in ``list[[int]]``), else ``None``; ``Literal``'s are values."""
    inner, _ = unwrap_annotated(tp)
    if typing.get_origin(inner) is Literal:
        return None
    for arg in typing.get_args(inner):
        if arg is Ellipsis:  # tuple[int, ...]
            continue
        try:
            check_output_type(arg)
        except TypeError:
            return arg
        if (found := _value_inside(arg)) is not None:
            return found
    return None


def _member(tp: Any, name: str, description: str | None, member_of: str | None) -> Member:
    inner, _ = unwrap_annotated(tp)
    try:
        schema = schema_for(tp)
    except TypeError as exc:
        if (value := _value_inside(tp)) is not None:  # list[[int]] was "unhashable type: 'list'"
            try:
                check_output_type(value, f"output_type {type_label(tp)}: each type argument")
            except TypeError as said:
                raise TypeError(str(said)) from None
        raise TypeError(f"output_type {type_label(tp)}: {exc}") from None
    if (bad := _unhashable_set(tp)) is not None:
        raise TypeError(
            f"output_type {type_label(tp)}: {type_label(bad)} cannot hold any value: a set's items must be "
            f"hashable, and no {type_label(typing.get_args(bad)[0])} is (use a list, or a frozen class)"
        )
    fixed = is_object_type(inner) and schema.get("type") == "object" and isinstance(schema.get("properties"), dict)
    if fixed:
        wrapped = False
        object_schema = schema
    else:
        wrapped = True
        object_schema = {
            "type": "object",
            "properties": {WRAPPER: schema},
            "required": [WRAPPER],
            "additionalProperties": False,
        }
    text = _description(tp, description, member_of)
    validator = ArgumentValidator(object_schema, tool_name=name)
    return Member(tp, name, object_schema, wrapped, text, validator)


def _member_name(prefix: str, tp: Any) -> str:
    """``{prefix}_{Class}``, as a tool name can be: 64 characters of ``[A-Za-z0-9_.-]``.

    A class name is any identifier (``Résumé``), and often a long one; the vendors refuse such a tool
    name on every request, and the user cannot rename a union's member tools.  So letters a tool name
    cannot hold become ``_``, and a name past 64 characters is cut, with a short digest of the whole
    (deterministic: the same class, the same name, in every process) so two long names stay apart.
    """
    whole = f"{prefix}_{type_label(tp)}"
    name = _UNSAFE_NAME.sub("_", whole)
    if name == whole and len(name) <= 64:
        return name
    # The digest of the class's own name: ``Résumé`` and ``R_sum_`` stay two tools.
    import hashlib  # (here: a long class name is rare, and hashlib costs the package's import ~2 ms)

    digest = hashlib.sha256(whole.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{name[:55]}_{digest}"


def _members_of_union(tp: Any) -> tuple[Any, ...] | None:
    """The classes of a union of object types (``A | B``), else ``None``."""
    inner, _ = unwrap_annotated(tp)
    if not is_union(inner):
        return None
    args = typing.get_args(inner)
    if len(args) > 1 and all(is_object_type(unwrap_annotated(a)[0]) for a in args):
        return args
    return None


class OutputTarget:
    """``T`` analysed: its members (one per output tool), the schema text strategies ask for, the checks.

    :param tp: the output type.
    :param name: the output tool's name (members of a union get ``{name}_{Member}``).
    :param description: the output tool's description (default: from the type).
    :raises TypeError: ``T`` has no JSON Schema form.
    """

    __slots__ = ("_by_name", "members", "name", "pick", "text_member", "tp")

    def __init__(self, tp: Any, *, name: str = DEFAULT_TOOL_NAME, description: str | None = None) -> None:
        self.tp = tp
        self.name = name
        self.pick = _is_pick(tp)
        classes = _members_of_union(tp)
        if classes is None:
            self.members: tuple[Member, ...] = (_member(tp, name, description, None),)
            self.text_member: Member = self.members[0]
        else:
            self.members = tuple(_member(c, _member_name(name, c), None, type_label(tp)) for c in classes)
            # The text strategies ask for {"response": A | B}; each member checks its own branch.
            wrapped = {
                "type": "object",
                "properties": {WRAPPER: {"anyOf": [m.schema for m in self.members]}},
                "required": [WRAPPER],
                "additionalProperties": False,
            }
            self.text_member = Member(
                tp, name, wrapped, True, _description(tp, description, None), ArgumentValidator(wrapped, tool_name=name)
            )
        self._by_name = {m.name: m for m in self.members}

    @property
    def is_union(self) -> bool:
        """Whether ``T`` is a union of object types (one output tool per member)."""
        return len(self.members) > 1

    @property
    def schema(self) -> dict[str, Any]:
        """The object schema the text strategies (native, prompted) ask for."""
        return self.text_member.schema

    def member(self, tool_name: str) -> Member | None:
        """The member whose output tool is ``tool_name``, or ``None`` (not an output tool)."""
        return self._by_name.get(tool_name)

    def check(self, arguments: Any, member: Member | None = None) -> Checked:
        """The verdict on the object an output tool was called with (``member``) or the text answer's JSON."""
        if member is not None:
            return member.check(arguments)
        if not self.is_union:
            return self.text_member.check(self._wrapped(arguments, self.text_member))
        branch = arguments.get(WRAPPER) if isinstance(arguments, dict) and set(arguments) == {WRAPPER} else arguments
        best: Checked | None = None
        for m in self.members:
            verdict = m.check(branch)
            if verdict.ok:
                return verdict
            if best is None or len(verdict.issues) < len(best.issues):
                best = verdict
        assert best is not None
        return best

    @staticmethod
    def _wrapped(value: Any, member: Member) -> Any:
        # A text answer of a wrapped type may come bare ("refund", 42): the model answered the inner schema.
        if member.wrapped and not (isinstance(value, dict) and WRAPPER in value):
            return {WRAPPER: value}
        return value


def issue_lines(issues: Sequence[ValidationIssue]) -> tuple[str, ...]:
    """The issues as the model reads them, one line each."""
    return tuple(i.line() for i in issues)
