"""Checking a call's arguments against its tool's schema, and saying what is wrong without repeating it.

A :class:`ArgumentValidator` compiles the schema once (Draft 2020-12, the
maintained ``jsonschema`` validator) and turns every error into a
:class:`~agentactors.tools.results.ValidationIssue`: where (``window.end``,
``tags[1]``), what was expected, and the JSON *type* of what was sent — never
the value, which may be long, sensitive, or simply wrong in a way the model
should fix from the schema rather than from an echo.

Most calls are valid, so a call is first put to a compiled, type-directed
check (:mod:`~agentactors.tools.fastcheck`) that can only say "certainly
valid"; ``jsonschema`` walks the arguments only when it cannot, and then
produces the issues.  The issue texts are ``jsonschema``'s verdict either way.

Before the schema, what Python's JSON parser reads but no JSON value is (:mod:`~agentactors.tools._odd`):
a NaN or an infinity (which every ``minimum`` / ``maximum`` lets through: each comparison with NaN is
false), a string or key holding a lone surrogate (half a character, which the tool could not encode).
Those are the call's only issues when present, as for typed output: the schema's would name odd keys, and
judge NaN by comparisons that are all false.  A schema whose fast check types every position
(:func:`~agentactors.tools.fastcheck.sees_every_value`: what ``@tool`` makes of typed parameters) costs
nothing more for it — that check already refuses odd values — and any other walks the arguments once.

The schema is someone else's as often as not (an MCP server's, a ``ToolSpec`` from configuration), so it is
held to what it can make a call do.  Its ``$ref`` values are looked up in the schema alone — the validator's registry
never retrieves (:func:`~agentactors.tools.json_refs.no_retrieval_registry`) — and every one is looked up when
the validator is built, so an unresolvable one is a ``ValueError`` naming the tool then, not a failure of a call.
Its regexes are matched in time bounded for any string (:func:`~agentactors.tools.fastcheck.pattern_search`; one
that cannot be is refused at build) wherever ``jsonschema`` applies one to the model's data: ``pattern`` (on values
and, through ``propertyNames``, on keys), ``patternProperties``, and the property names ``additionalProperties`` and
``unevaluatedProperties`` leave to it.  A string longer than a backreference pattern can be checked on is an issue
of the call, never a pass.  The bound is per call as well as per string: a call's matching is charged to a budget
(:func:`~agentactors.tools.fastcheck.open_call_budget`: ``re`` at its worst-case estimate, then the linear matcher
at its steps), so an argument of thousands of strings, each just under what ``re`` is given, cannot hold the
event loop either; a string past the budget is the call's issue too.  The fast check matches within a quarter
of a budget and the walk a whole one, opened only for a schema with a regex (one without pays nothing).  The
schema is Draft 2020-12 throughout: a ``$schema`` inside it is not obeyed (``jsonschema`` would switch to its
stock validator of that draft for the subschema, with none of this).
``multipleOf`` is decided exactly on the decimals written, ``uniqueItems`` in one pass with JSON equality
(``jsonschema`` divides floats, raises on an integer past a float's range, and compares every pair of objects).

Checking a schema against the meta-schema and compiling it costs a few milliseconds; it is done once
per distinct schema in the process (:func:`_compiled`, keyed by the schema's JSON text), not
once per tool: an MCP server listed again after a reconnect, thousands of tools sharing one schema, an
agent built per request with the same output type all reuse the compiled form.  A schema is its JSON
form here — what the model is sent — and the cached copy is the process's own, so a caller mutating
its dict afterwards changes nothing that was compiled.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Final

from ._odd import has_odd, odd_issues
from .fastcheck import (
    Check,
    close_call_budget,
    compile_check,
    open_call_budget,
    pattern_limit,
    pattern_search,
    sees_every_value,
)
from .json_refs import check_refs_resolve, no_retrieval_registry
from .json_types import describe_schema, json_type_name
from .results import ValidationIssue

if TYPE_CHECKING:
    import jsonschema.exceptions

__all__ = ["ArgumentValidator", "json_type_of"]


#: How many distinct compiled schemas the process keeps (least recently used dropped first).
_CACHE_SIZE: Final = 4096


class _SchemaInvalid(ValueError):
    """A schema that is not valid Draft 2020-12 (the message is ``jsonschema``'s); named per tool by the caller."""


class _Uncheckable(Exception):
    """A string a pattern cannot be checked on in bounded time: longer than it can be checked on at all
    (:func:`~.fastcheck.pattern_limit`), or past what is left of the call's budget (``spent``).

    Raised out of the whole validation, not yielded as one error: under ``not``, ``if`` or an ``anyOf`` branch an
    error would turn into a pass.  :meth:`ArgumentValidator.issues` makes it the call's one issue.
    """

    def __init__(self, pattern: str, text: str, *, spent: bool) -> None:
        super().__init__(pattern)
        self.pattern = pattern
        self.text = text
        self.spent = spent


def _search(regex: str, text: str) -> bool:
    """Whether ``regex`` matches in ``text``, in bounded time.

    :raises _Uncheckable: ``text`` is too long for ``regex`` to be checked on, or the call's budget is spent.
    """
    found = pattern_search(regex)(text)
    if found is None:
        limit = pattern_limit(regex)
        raise _Uncheckable(regex, text, spent=limit is None or len(text) <= limit)
    return found


def _build(schema: Mapping[str, Any]) -> tuple[Any, Check | None, bool, bool]:
    """The ``jsonschema`` validator and the fast check of ``schema``, whether that check sees every value, and
    whether the schema has a regex (its calls then carry a budget for matching them).

    :raises _SchemaInvalid: ``schema`` fails the Draft 2020-12 meta-schema.
    """
    # Imported with the first tool, not with agentactors: jsonschema and its meta-schemas are a tenth of
    # `import agentactors`, and an agent without tools never needs them.
    import jsonschema
    import jsonschema.exceptions

    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        raise _SchemaInvalid(exc.message) from None
    except RecursionError:
        # A schema nested deeper than the meta-schema check can walk (an MCP server's listing can hold
        # one a hundred levels down): refused like any invalid schema, so that only its own tool is lost.
        # Caught once the stack has unwound: there is room again to build the error.
        raise _SchemaInvalid("it is nested too deeply to be checked") from None
    try:
        check_refs_resolve(schema)  # every reference now, not at a call (where it would fail the executor)
    except ValueError as exc:
        raise _SchemaInvalid(str(exc)) from None
    patterns = _patterns_of(schema)
    for pattern in patterns:
        try:
            pattern_search(pattern)  # refuses, now, a pattern no call could be checked against in bounded time
        except (re.error, ValueError) as exc:
            raise _SchemaInvalid(str(exc) if isinstance(exc, ValueError) else f"pattern {pattern!r}: {exc}") from None
        except RecursionError:  # groups nested past what re's parser (or ours) can walk
            raise _SchemaInvalid("a pattern is nested too deeply to be checked") from None
    # No format checker: "format" is an annotation, which the fast check relies on too.  A registry that never
    # retrieves: jsonschema's default one fetches a remote $ref from wherever the schema's author points it.
    # Compiled without its $schema keywords (_one_dialect): one would switch jsonschema to its stock validator.
    try:
        compiled = _one_dialect(schema)
    except RecursionError:  # (the meta-schema check walks deeper schemas than this copy does: in case it changes)
        raise _SchemaInvalid("it is nested too deeply to be checked") from None
    validator = _validator_class()(compiled, registry=no_retrieval_registry())
    fast = compile_check(schema)
    return validator, fast, fast is not None and sees_every_value(schema), bool(patterns)


#: Keywords whose values are data, not schemas (annotations among them).
_DATA: Final = frozenset(("const", "enum", "default", "examples"))
_ANNOTATION_DATA: Final = frozenset(("default", "examples"))


def _one_dialect(schema: Any) -> Any:
    """A copy of ``schema`` without its ``$schema`` keywords: validated as Draft 2020-12 throughout.

    ``jsonschema`` picks the validator class of each subschema it enters by that subschema's ``$schema``
    (``validator_for``): a ``"$schema": "http://json-schema.org/draft-07/schema#"`` — or the 2020-12 one, at the
    root of a schema with a ``$ref`` to itself — would validate that part with the stock class, whose ``pattern``
    and ``patternProperties`` run ``re`` unbounded (and whose ``multipleOf`` raises).  Dropped from every dict
    the validator could take for a schema: every one but those inside ``const`` / ``enum`` (data compared with
    the arguments) and ``default`` / ``examples`` (annotations: dropped there too, which changes no verdict).

    :raises _SchemaInvalid: a ``const`` or ``enum`` holds an object with a ``$schema`` and the schema has a
        ``$ref``: the reference could point into that value and have it taken for a schema.
    """
    kept: list[bool] = []  # a $schema kept inside const / enum data
    referring: list[bool] = []

    def copy(node: Any, data: bool) -> Any:
        if isinstance(node, list):
            return [copy(v, data) for v in node]
        if not isinstance(node, Mapping):
            return node
        if data:
            if "$schema" in node:
                kept.append(True)
            return {k: copy(v, True) for k, v in node.items()}
        if "$ref" in node or "$dynamicRef" in node:
            referring.append(True)
        return {
            k: (copy(v, True) if k in _DATA and k not in _ANNOTATION_DATA else copy(v, False))
            for k, v in node.items()
            if k != "$schema"
        }

    out = copy(schema, False)
    if kept and referring:
        raise _SchemaInvalid(
            "a const or enum value holds a \"$schema\" and the schema has a $ref, which could point into that value "
            "and have it taken for a schema of another draft"
        )
    return out


def _patterns_of(schema: Any) -> list[str]:
    """The regexes of ``schema``: its ``pattern`` values and ``patternProperties`` names, in every subschema.

    ``referencing``'s walk of the subschemas (data such as ``const`` and property *names* are not schemas).
    """
    from referencing.jsonschema import DRAFT202012

    found: list[str] = []
    stack = [schema]
    while stack:
        node = stack.pop()
        if not isinstance(node, Mapping):
            continue
        if isinstance(node.get("pattern"), str):
            found.append(node["pattern"])
        if isinstance(node.get("patternProperties"), Mapping):
            found.extend(name for name in node["patternProperties"] if isinstance(name, str))
        stack.extend(DRAFT202012.subresources_of(node))
    return found


@functools.cache
def _validator_class() -> Any:
    """Draft 2020-12 with every keyword that applies a regex matched by :func:`~.fastcheck.pattern_search`.

    ``jsonschema`` runs ``re.search`` for ``pattern``, ``patternProperties``, and the names ``additionalProperties``
    and ``unevaluatedProperties`` (its ``find_evaluated_property_keys_by_schema``) leave to them; a catastrophic
    pattern would then stall the event loop on a key or a value the model chose (see :mod:`~.fastcheck`).
    ``propertyNames`` applies its subschema's ``pattern`` (this one) to each key; ``dependentSchemas``, ``allOf``,
    ``if``... enter subschemas, whose keywords are these.  The same verdicts otherwise, so the fast check (which
    uses the same matcher) and the validator agree.
    """
    import jsonschema
    from jsonschema.exceptions import ValidationError

    def pattern(validator: Any, regex: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
        if validator.is_type(instance, "string") and not _search(regex, instance):
            yield ValidationError(f"does not match {regex!r}")

    def pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
        if not validator.is_type(instance, "object"):
            return
        for regex, subschema in patterns.items():
            for key, value in instance.items():
                if _search(regex, key):
                    yield from validator.descend(value, subschema, path=key, schema_path=regex)

    def additional_properties(validator: Any, extra: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
        if not validator.is_type(instance, "object"):
            return
        properties = schema.get("properties", {})
        patterns = list(schema.get("patternProperties", {}))
        extras = [k for k in instance if k not in properties and not any(_search(p, k) for p in patterns)]
        if validator.is_type(extra, "object"):
            for key in extras:
                yield from validator.descend(instance[key], extra, path=key)
        elif not extra and extras:
            yield ValidationError(f"{len(extras)} properties are not allowed")

    def unevaluated_properties(validator: Any, extra: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
        # jsonschema's own keyword, with the keys the schema evaluates found by _evaluated_keys.
        if not validator.is_type(instance, "object"):
            return
        evaluated = _evaluated_keys(validator, instance, schema)
        for key, value in instance.items():  # one error per key, at the key (jsonschema: one for them all)
            if key not in evaluated and next(validator.descend(value, extra), None) is not None:
                yield ValidationError("an unevaluated property is not allowed or not valid", path=[key], instance=value)

    def multiple_of(validator: Any, divisor: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
        if validator.is_type(instance, "number") and not _is_multiple(instance, divisor):
            yield ValidationError(f"is not a multiple of {divisor!r}")

    def unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
        if unique and validator.is_type(instance, "array") and len({_unique_key(v) for v in instance}) != len(instance):
            yield ValidationError("has non-unique elements")

    return jsonschema.validators.extend(  # type: ignore[no-untyped-call]
        jsonschema.Draft202012Validator,
        {
            "pattern": pattern,
            "patternProperties": pattern_properties,
            "additionalProperties": additional_properties,
            "unevaluatedProperties": unevaluated_properties,
            "multipleOf": multiple_of,
            "uniqueItems": unique_items,
        },
    )


def _evaluated_keys(validator: Any, instance: Mapping[str, Any], schema: Any) -> set[str]:
    """The keys of ``instance`` that ``schema`` evaluates: ``jsonschema``'s walk for ``unevaluatedProperties``.

    Its ``_utils.find_evaluated_property_keys_by_schema`` keyword for keyword, with ``patternProperties`` matched by
    :func:`_search` (it calls ``re.search`` on every key).  A ``$ref`` / ``$dynamicRef`` is looked up as it does,
    in the validator's resolver — ``validator._resolver``, the one private read: no public API gives the
    resolver of the subschema being validated, and the one it replaces reads the same field.
    """
    if validator.is_type(schema, "boolean"):
        return set()
    evaluated: set[str] = set()
    for keyword in ("$ref", "$dynamicRef"):
        ref = schema.get(keyword)
        if ref is not None:
            resolved = validator._resolver.lookup(ref)
            inner = validator.evolve(schema=resolved.contents, _resolver=resolved.resolver)
            evaluated |= _evaluated_keys(inner, instance, resolved.contents)
    properties = schema.get("properties")
    if validator.is_type(properties, "object"):
        evaluated |= properties.keys() & instance.keys()
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        subschema = schema.get(keyword)
        if subschema is not None:
            evaluated.update(
                key for key, value in instance.items() if next(validator.descend(value, subschema), None) is None
            )
    patterns = schema.get("patternProperties")
    if patterns:
        evaluated.update(key for key in instance if any(_search(regex, key) for regex in patterns))
    for name, subschema in schema.get("dependentSchemas", {}).items():
        if name in instance:
            evaluated |= _evaluated_keys(validator, instance, subschema)
    for keyword in ("allOf", "oneOf", "anyOf"):
        for subschema in schema.get(keyword, []):
            if next(validator.descend(instance, subschema), None) is None:
                evaluated |= _evaluated_keys(validator, instance, subschema)
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            evaluated |= _evaluated_keys(validator, instance, schema["if"])
            if "then" in schema:
                evaluated |= _evaluated_keys(validator, instance, schema["then"])
        elif "else" in schema:
            evaluated |= _evaluated_keys(validator, instance, schema["else"])
    return evaluated


def _is_multiple(value: Any, divisor: Any) -> bool:
    """Whether ``value`` is a multiple of ``divisor``, exactly, on the decimal numbers the JSON text wrote.

    ``jsonschema`` divides floats: ``0.3`` is then *not* a multiple of ``0.1`` (``0.3 / 0.1`` is
    ``2.9999999999999996``), and an integer past a float's range raises ``OverflowError`` out of the check
    (``10**400`` against ``0.5``).  Here a float is the decimal its shortest ``repr`` spells — what the model
    wrote — and the remainder is a :class:`~fractions.Fraction`'s: exact at any size.
    """
    if type(value) is int and type(divisor) is int:
        return value % divisor == 0
    try:
        return Fraction(value if type(value) is int else repr(float(value))) % Fraction(
            divisor if type(divisor) is int else repr(float(divisor))
        ) == 0
    except (ValueError, OverflowError, ZeroDivisionError):  # a non-finite divisor (a Python schema): only 0 is
        return bool(value == 0)


def _unique_key(value: Any) -> Any:
    """A hashable key equal for two values exactly when JSON Schema calls them equal (``uniqueItems``, ``enum``).

    ``1`` and ``1.0`` are equal, ``1`` and ``true`` are not, at any depth; objects compare by their key-value
    pairs, in any order.  ``jsonschema`` compares every pair of unhashable items — an array of 5,000 objects
    took 25 s on the event loop — where a set of these keys takes one pass.
    """
    if value is True or value is False:
        return ("b", value)
    if isinstance(value, list | tuple):
        return ("a", tuple(_unique_key(v) for v in value))
    if isinstance(value, dict):
        return ("o", frozenset((k, _unique_key(v)) for k, v in value.items()))
    return value  # a number (1 == 1.0, with equal hashes), a string, null


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _compiled(key: str) -> tuple[Any, Check | None, bool, bool]:
    """:func:`_build` of the schema whose JSON text is ``key``, once per process (see the module docstring).

    Thread-safe (``lru_cache``; MCP listings build their tools in a worker thread).  A schema that fails
    the meta-schema is not cached: it raises each time.
    """
    return _build(json.loads(key))  # the cache's own copy of the schema: nobody else holds it


def _canonical(schema: Mapping[str, Any]) -> str | None:
    """The schema's JSON text (the cache key), or ``None`` for one with no JSON form.

    Keys keep their order: the issues of a call come in schema order, so it is part of the schema.
    """
    try:
        return json.dumps(schema, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None


class ArgumentValidator:
    """A compiled validator for one tool's parameters (compiled once per distinct schema in the process).

    :raises ValueError: the schema is not a valid Draft 2020-12 JSON Schema.
    """

    __slots__ = ("_fast", "_patterned", "_sees_all", "_validator", "schema")

    def __init__(self, schema: Mapping[str, Any], *, tool_name: str = "tool") -> None:
        key = _canonical(schema)
        try:
            validator, fast, sees_all, patterned = _compiled(key) if key is not None else _build(schema)
        except _SchemaInvalid as exc:
            raise ValueError(f"tool {tool_name!r}: its parameters are not a valid JSON Schema: {exc}") from None
        self.schema = schema
        self._validator = validator
        self._fast: Check | None = fast
        self._sees_all = sees_all
        self._patterned = patterned

    def issues(self, arguments: Any) -> list[ValidationIssue]:
        """Every way ``arguments`` break the schema, in schema order, each once (empty when valid).

        A NaN, an infinity or a lone surrogate anywhere in them is an issue of its own, and then the only
        kind reported (see the module).  A schema with a regex matches it within a budget for the call (see
        the module); one without pays nothing for that.
        """
        fast = self._fast
        if fast is not None and fast(arguments) and (self._sees_all or not has_odd(arguments)):
            return []  # (a fast check with a pattern matches within a budget of its own: compile_check)
        if self._patterned:  # a whole budget: what the fast check spent leaves the walk no less to judge with
            token = open_call_budget()
            try:
                return self._walk(arguments)
            finally:
                close_call_budget(token)
        return self._walk(arguments)

    def _walk(self, arguments: Any) -> list[ValidationIssue]:
        """The issues of arguments the fast check could not call valid: ``jsonschema``'s walk (see the module)."""
        if has_odd(arguments):
            return odd_issues(arguments)
        issues: list[ValidationIssue] = []
        seen_required: set[tuple[Any, ...]] = set()
        seen: set[ValidationIssue] = set()
        try:
            for error in self._validator.iter_errors(arguments):
                for issue in _issues_of(error, seen_required):
                    if issue not in seen:  # two keywords can say the same thing (maxItems and items: false)
                        seen.add(issue)
                        issues.append(issue)
        except RecursionError:
            # ``jsonschema`` recurses once per level of the arguments under a recursive schema ($ref): the
            # model's arguments, nested a few hundred levels deep, would otherwise raise out of the executor
            # and end the run.  They are an issue of the call like any other (caught once the stack unwound).
            return [ValidationIssue("arguments", "arguments nested less deeply", "arguments nested too deeply")]
        except _Uncheckable as exc:
            # No verdict can be had in bounded time: the call's one issue (the model can send a shorter string).
            return [_uncheckable_issue(arguments, exc)]
        return issues


def _uncheckable_issue(arguments: Any, exc: _Uncheckable) -> ValidationIssue:
    """The issue of a string too long for its pattern, or past the call's budget for matching, at the first place
    the arguments hold it (key or value)."""
    where = _first_place(arguments, exc.text)
    shown = exc.pattern if len(exc.pattern) <= 80 else exc.pattern[:79] + "…"
    if exc.spent:
        return ValidationIssue(
            _path(where),
            f"fewer or shorter strings to check against the pattern {shown} (one call's strings are matched "
            "within a time budget, spent before this one)",
            f"a string of {len(exc.text)} chars",
        )
    return ValidationIssue(
        _path(where),
        f"a string of at most {pattern_limit(exc.pattern)} chars (the longest the pattern {shown} is checked on)",
        f"a string of {len(exc.text)} chars",
    )


def _first_place(arguments: Any, text: str) -> list[Any]:
    """The path of the first key or string value equal to ``text`` in ``arguments``, in document order.

    Depth first, each container's entries taken as they come (never a list of them all, nor a path per entry):
    the arguments of a call past its budget can hold a million strings, and the one sought is usually early.
    """
    path: list[Any] = []
    stack: list[Iterator[tuple[Any, Any]]] = [_entries(arguments)]
    while stack:
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
            if path:
                path.pop()
            continue
        key, value = entry
        if (type(key) is str and key == text) or value is text or (type(value) is str and value == text):
            return [*path, key]
        if isinstance(value, dict | list):
            path.append(key)
            stack.append(_entries(value))
    return []


def _entries(node: Any) -> Iterator[tuple[Any, Any]]:
    if isinstance(node, dict):
        return iter(node.items())
    if isinstance(node, list):
        return enumerate(node)
    return iter(())


_JSON_TYPE_ARTICLE = {
    "null": "null",
    "boolean": "a boolean",
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "array": "an array",
    "object": "an object",
}


def json_type_of(value: Any) -> str:
    """``a string``, ``an integer``, ``null``...: how a JSON value's type is named in issue texts."""
    name = json_type_name(value)
    if name == "null":
        return name
    if name is None:
        return f"a {type(value).__name__}"
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _path(parts: Sequence[Any]) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            key = str(part)
            key = key if len(key) <= 40 else key[:39] + "…"
            out += f".{key}" if out else key
    return out or "arguments"


def _issues_of(
    error: jsonschema.exceptions.ValidationError, seen_required: set[tuple[Any, ...]]
) -> list[ValidationIssue]:
    path = list(error.absolute_path)
    instance = error.instance
    got = json_type_of(instance)
    kind = str(error.validator)
    value: Any = error.validator_value
    schema = error.schema if isinstance(error.schema, dict) else {}
    if kind == "required":
        key = tuple(path)
        if key in seen_required or not isinstance(instance, dict):
            return []
        seen_required.add(key)
        props = schema.get("properties") or {}
        return [
            ValidationIssue(_path([*path, name]), f"{describe_schema(props.get(name))} (required)", "nothing")
            for name in value
            if name not in instance
        ]
    if kind == "additionalProperties" and isinstance(instance, dict):
        declared = schema.get("properties") or {}
        allowed = list(declared.keys())
        allowed_text = ", ".join(allowed) if allowed else "none"
        # A name one of the patternProperties matches is a property too: not an extra one.
        patterns = [p for p in (schema.get("patternProperties") or {}) if isinstance(p, str)]
        if patterns:
            allowed_text += f"; or a name matching {', '.join(patterns)}"
        return [  # (every key was matched by the keyword already: none is too long for its pattern)
            ValidationIssue(
                _path([*path, extra]), f"no such property (allowed: {allowed_text})", json_type_of(instance[extra])
            )
            for extra in instance
            if extra not in declared and not any(_search(p, extra) for p in patterns)
        ]
    if kind == "unevaluatedProperties" and path:
        expected = "no such property (none the schema evaluates)" if value is False else (
            f"{describe_schema(value)} (a property the schema does not evaluate)")
        return [ValidationIssue(_path(path), expected, got)]
    if kind == "type":
        kinds = value if isinstance(value, list) else [value]
        expected = " or ".join(_JSON_TYPE_ARTICLE.get(k, str(k)) for k in kinds)
        return [ValidationIssue(_path(path), expected, got)]
    if kind in ("anyOf", "oneOf"):
        return [ValidationIssue(_path(path), describe_schema(schema), got)]
    if kind == "enum":
        return [ValidationIssue(_path(path), describe_schema(schema), f"{got} that is not one of them")]
    if kind == "const":
        return [ValidationIssue(_path(path), describe_schema(schema), f"{got} that differs")]
    bounds = {
        "minimum": f"a number ≥ {value}",
        "maximum": f"a number ≤ {value}",
        "exclusiveMinimum": f"a number > {value}",
        "exclusiveMaximum": f"a number < {value}",
        "multipleOf": f"a multiple of {value}",
    }
    if kind in bounds:
        return [ValidationIssue(_path(path), bounds[kind], f"{got} out of that range")]
    if kind in ("minLength", "maxLength") and isinstance(instance, str):
        word = "at least" if kind == "minLength" else "at most"
        return [ValidationIssue(_path(path), f"a string of {word} {value} chars", f"a string of {len(instance)} chars")]
    if kind in ("minItems", "maxItems", "items", "prefixItems") and isinstance(instance, list):
        if kind == "minItems":
            expected = f"an array of at least {value} items"
        elif kind == "maxItems":
            expected = f"an array of at most {value} items"
        else:
            expected = f"an array of at most {len(schema.get('prefixItems') or [])} items"
        return [ValidationIssue(_path(path), expected, f"an array of {len(instance)} items")]
    if kind == "uniqueItems":
        return [ValidationIssue(_path(path), "an array of unique items", "an array with duplicates")]
    if kind == "pattern":
        return [ValidationIssue(_path(path), f"a string matching the pattern {value}", "a string that does not match")]
    if kind in ("minProperties", "maxProperties") and isinstance(instance, dict):
        word = "at least" if kind == "minProperties" else "at most"
        return [
            ValidationIssue(_path(path), f"an object with {word} {value} properties", f"{len(instance)} properties")
        ]
    return [ValidationIssue(_path(path), f"a value satisfying '{kind}' ({describe_schema(schema)})", got)]
