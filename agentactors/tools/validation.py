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
Its regexes (``pattern``, ``patternProperties``) are matched in time bounded for any string
(:func:`~agentactors.tools.fastcheck.pattern_search`; one that cannot be is refused at build).  ``multipleOf`` is
decided exactly on the decimals written, ``uniqueItems`` in one pass with JSON equality (``jsonschema`` divides
floats, raises on an integer past a float's range, and compares every pair of objects).

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
from .fastcheck import Check, compile_check, pattern_search, sees_every_value
from .json_refs import check_refs_resolve, no_retrieval_registry
from .json_types import json_type_name
from .results import ValidationIssue
from .schema import describe_schema

if TYPE_CHECKING:
    import jsonschema.exceptions

__all__ = ["ArgumentValidator", "json_type_of"]


#: How many distinct compiled schemas the process keeps (least recently used dropped first).
_CACHE_SIZE: Final = 4096


class _SchemaInvalid(ValueError):
    """A schema that is not valid Draft 2020-12 (the message is ``jsonschema``'s); named per tool by the caller."""


def _build(schema: Mapping[str, Any]) -> tuple[Any, Check | None, bool]:
    """The ``jsonschema`` validator and the fast check of ``schema``, and whether that check sees every value.

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
    for pattern in _patterns_of(schema):
        try:
            pattern_search(pattern)  # refuses, now, a pattern no call could be checked against in bounded time
        except (re.error, ValueError) as exc:
            raise _SchemaInvalid(str(exc) if isinstance(exc, ValueError) else f"pattern {pattern!r}: {exc}") from None
        except RecursionError:  # groups nested past what re's parser (or ours) can walk
            raise _SchemaInvalid("a pattern is nested too deeply to be checked") from None
    # No format checker: "format" is an annotation, which the fast check relies on too.  A registry that never
    # retrieves: jsonschema's default one fetches a remote $ref from wherever the schema's author points it.
    validator = _validator_class()(schema, registry=no_retrieval_registry())
    fast = compile_check(schema)
    return validator, fast, fast is not None and sees_every_value(schema)


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
    """Draft 2020-12 with its three regex keywords matched by :func:`~.fastcheck.pattern_search`.

    ``jsonschema`` runs ``re.search`` for ``pattern``, ``patternProperties`` and the names ``additionalProperties``
    leaves to them; a catastrophic pattern would then stall the event loop (see :mod:`~.fastcheck`).  The same
    verdicts otherwise, so the fast check (which uses the same matcher) and the validator agree.
    """
    import jsonschema
    from jsonschema.exceptions import ValidationError

    def pattern(validator: Any, regex: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
        if validator.is_type(instance, "string") and not pattern_search(regex)(instance):
            yield ValidationError(f"does not match {regex!r}")

    def pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
        if not validator.is_type(instance, "object"):
            return
        for regex, subschema in patterns.items():
            search = pattern_search(regex)
            for key, value in instance.items():
                if search(key):
                    yield from validator.descend(value, subschema, path=key, schema_path=regex)

    def additional_properties(validator: Any, extra: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
        if not validator.is_type(instance, "object"):
            return
        properties = schema.get("properties", {})
        searches = [pattern_search(regex) for regex in schema.get("patternProperties", {})]
        extras = [k for k in instance if k not in properties and not any(search(k) for search in searches)]
        if validator.is_type(extra, "object"):
            for key in extras:
                yield from validator.descend(instance[key], extra, path=key)
        elif not extra and extras:
            yield ValidationError(f"{len(extras)} properties are not allowed")

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
            "multipleOf": multiple_of,
            "uniqueItems": unique_items,
        },
    )


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
def _compiled(key: str) -> tuple[Any, Check | None, bool]:
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

    __slots__ = ("_fast", "_sees_all", "_validator", "schema")

    def __init__(self, schema: Mapping[str, Any], *, tool_name: str = "tool") -> None:
        key = _canonical(schema)
        try:
            validator, fast, sees_all = _compiled(key) if key is not None else _build(schema)
        except _SchemaInvalid as exc:
            raise ValueError(f"tool {tool_name!r}: its parameters are not a valid JSON Schema: {exc}") from None
        self.schema = schema
        self._validator = validator
        self._fast: Check | None = fast
        self._sees_all = sees_all

    def issues(self, arguments: Any) -> list[ValidationIssue]:
        """Every way ``arguments`` break the schema, in schema order, each once (empty when valid).

        A NaN, an infinity or a lone surrogate anywhere in them is an issue of its own, and then the only
        kind reported (see the module).
        """
        fast = self._fast
        if fast is not None and fast(arguments) and (self._sees_all or not has_odd(arguments)):
            return []
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
        return issues


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
        searches = [pattern_search(p) for p in patterns]
        return [
            ValidationIssue(
                _path([*path, extra]), f"no such property (allowed: {allowed_text})", json_type_of(instance[extra])
            )
            for extra in instance
            if extra not in declared and not any(search(extra) for search in searches)
        ]
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
