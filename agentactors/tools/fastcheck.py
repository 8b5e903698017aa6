"""A compiled, type-directed "is this certainly valid?" check for the simple schemas ``@tool`` generates.

Validating a call's arguments with ``jsonschema`` walks the schema through its
generic keyword machinery on every call (tens of microseconds for a
two-integer tool).  Almost every call the model makes is valid, so the
executor only needs a cheap *yes*; the issue list is wanted only when the
answer is *no*.  :func:`compile_check` turns a schema into a predicate built
from closures specialised per keyword, once per tool:

* ``True`` means the instance is valid under Draft 2020-12 — the predicate is
  conservative: it never says ``True`` where ``jsonschema`` would report an error;
* ``False`` means "not certain": the caller asks ``jsonschema`` (which also
  produces the issues).  A float where an integer is expected (``2.0`` is a
  valid JSON-Schema integer), a ``dict`` subclass, a non-ASCII corner of
  ``uniqueItems``... all simply fall back.

Schemas using anything outside the supported subset (``$ref``, ``oneOf``,
``allOf``, ``not``, ``patternProperties``, ``multipleOf``, unknown keywords,
...) compile to ``None``: those tools always go through ``jsonschema``.
``format`` is an annotation here, as in a ``jsonschema`` validator built
without a format checker (which is how :class:`ArgumentValidator` builds it).

The checks are also conservative about what no JSON value is (:mod:`agentactors.tools._odd`): a string
holding a lone surrogate is not certainly a ``"string"``, a NaN or an infinity not certainly a ``"number"``
— ``False``, and the validator finds them.  Where a schema types every position of an instance (every
property and item a typed scalar, an enum, or a container closed the same way: :func:`sees_every_value`),
a ``True`` therefore also means "nothing odd in it", and the validator need not walk the arguments again.
"""

from __future__ import annotations

import contextvars
import copy
import functools
import importlib
import math
import numbers
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from ._odd import whole

__all__ = [
    "Check",
    "close_call_budget",
    "compile_check",
    "open_call_budget",
    "pattern_limit",
    "pattern_search",
    "sees_every_value",
]

#: ``check(instance) -> bool``: ``True`` only when the instance is certainly valid.
Check = Callable[[Any], bool]

# Keywords that never make an instance invalid (with no format checker, ``format`` is one of them).
_ANNOTATIONS: Final = frozenset(
    ("title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly", "format")
)
_SUPPORTED: Final = frozenset(
    (
        "type",
        "enum",
        "const",
        "anyOf",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "prefixItems",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
    )
)
_OBJECT_KEYS: Final = ("properties", "required", "additionalProperties")
_ARRAY_KEYS: Final = ("items", "prefixItems", "minItems", "maxItems", "uniqueItems")
_STRING_KEYS: Final = ("minLength", "maxLength", "pattern")
_NUMBER_KEYS: Final = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_SCALAR_TYPES: Final = frozenset((str, int, float, bool, type(None)))
# re's own parser and compiler (loaded with re; no public API gives a pattern's parsed form): the pattern
# exactly as re reads it, and re's code for one node of it.
_re_parser: Any = importlib.import_module("re._parser")
_re_compiler: Any = importlib.import_module("re._compiler")
_MAXREPEAT: Final = int(_re_parser.MAXREPEAT)  # the count of an unbounded repetition ({n,}, *, +)


class _Unsupported(Exception):
    """The schema uses something the fast check does not cover."""


def compile_check(schema: Any) -> Check | None:
    """The fast predicate for ``schema``, or ``None`` when the schema is outside the supported subset.

    One with a ``pattern`` matches within a budget of its own for each instance (a quarter of a call's, see
    :func:`open_call_budget`): enough for any ordinary one; past it, "not certain", and the validator's walk
    (with a whole budget) says what is wrong.
    """
    try:
        check = _compile(schema)
        patterned = _has_pattern(schema)
    except (_Unsupported, re.error, TypeError, ValueError, RecursionError):
        return None  # validated the thorough way only (a schema too deep to compile included)
    if not patterned:
        return check
    open_budget, close_budget = _BUDGET.set, _BUDGET.reset
    re_steps, linear_steps = _CALL_RE_STEPS * _FAST_SHARE, _CALL_LINEAR_STEPS * _FAST_SHARE

    def budgeted(v: Any) -> bool:
        token = open_budget([re_steps, linear_steps])
        try:
            return check(v)
        finally:
            close_budget(token)

    return budgeted


def _has_pattern(schema: Any) -> bool:
    """Whether a ``pattern`` may be in ``schema`` (one inside data, such as an ``enum``, is counted: harmless)."""
    if isinstance(schema, dict):
        return isinstance(schema.get("pattern"), str) or any(_has_pattern(v) for v in schema.values())
    if isinstance(schema, list):
        return any(_has_pattern(v) for v in schema)
    return False


def _always(_: Any) -> bool:
    return True


def _never(_: Any) -> bool:
    return False


# Exact types only: a subclass (bool is one of int) is either excluded by the keyword or left to jsonschema.
# A string of whole characters only, a finite float only (``v - v`` is 0.0 for those, NaN for NaN and ±inf):
# anything else is left to the validator, which says what it is (see the module).
_TYPE_CHECKS: Final[dict[str, Check]] = {
    "string": lambda v: type(v) is str and whole(v),
    "integer": lambda v: type(v) is int,
    "number": lambda v: type(v) is int or (type(v) is float and v - v == 0.0),
    "boolean": lambda v: v is True or v is False,
    "null": lambda v: v is None,
    "array": lambda v: type(v) is list,
    "object": lambda v: type(v) is dict,
}


def _compile(schema: Any) -> Check:
    if schema is True:
        return _always
    if schema is False:
        return _never
    if type(schema) is not dict:
        raise _Unsupported
    unknown = schema.keys() - _SUPPORTED - _ANNOTATIONS
    if unknown:
        raise _Unsupported
    checks: list[Check] = []
    kind = schema.get("type")
    object_keys = any(k in schema for k in _OBJECT_KEYS)
    if kind == "object" and object_keys:
        checks.append(_object_check(schema, typed=True))  # tests the type itself
    else:
        if kind is not None:
            checks.append(_type_check(kind))
        if object_keys:
            checks.append(_object_check(schema, typed=False))
    if "enum" in schema:
        checks.append(_member_check(schema["enum"]))
    if "const" in schema:
        checks.append(_member_check([schema["const"]]))
    if "anyOf" in schema:
        checks.append(_any_of(schema["anyOf"]))
    if any(k in schema for k in _ARRAY_KEYS):
        checks.append(_array_check(schema))
    if any(k in schema for k in _STRING_KEYS):
        checks.append(_string_check(schema))
    if any(k in schema for k in _NUMBER_KEYS):
        checks.append(_number_check(schema))
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks

        def both(v: Any) -> bool:
            return first(v) and second(v)

        return both
    frozen = tuple(checks)

    def every(v: Any) -> bool:
        return all(c(v) for c in frozen)

    return every


def _type_check(kind: Any) -> Check:
    if isinstance(kind, str):
        if kind not in _TYPE_CHECKS:
            raise _Unsupported
        return _TYPE_CHECKS[kind]
    if isinstance(kind, list) and kind and all(isinstance(k, str) and k in _TYPE_CHECKS for k in kind):
        options = tuple(_TYPE_CHECKS[k] for k in kind)

        def any_type(v: Any) -> bool:
            return any(c(v) for c in options)

        return any_type
    raise _Unsupported


def _member_check(values: Any) -> Check:
    if not isinstance(values, list):
        raise _Unsupported
    # (type, value) pairs: True is not 1 and 1.0 is not 1 here; jsonschema's looser equality
    # (1 == 1.0) only costs a fallback.  NaN never equals itself, so it is never a member; an infinity
    # and a string with half a character are left out too, so a member found is never odd (see the module).
    members = frozenset(
        (type(v), v)
        for v in values
        if type(v) in _SCALAR_TYPES
        and not (type(v) is float and not math.isfinite(v))
        and not (type(v) is str and not whole(v))
    )

    def member(v: Any) -> bool:
        return type(v) in _SCALAR_TYPES and (type(v), v) in members

    return member


def _any_of(schemas: Any) -> Check:
    if not isinstance(schemas, list) or not schemas:
        raise _Unsupported
    options = tuple(_compile(s) for s in schemas)

    def any_of(v: Any) -> bool:
        return any(c(v) for c in options)

    return any_of


def _object_check(schema: Mapping[str, Any], *, typed: bool) -> Check:
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    if not isinstance(properties, dict) or not isinstance(required, list):
        raise _Unsupported
    props = {name: _compile(sub) for name, sub in properties.items()}
    needed = tuple(required)
    additional = schema.get("additionalProperties", True)
    extra: Check | None
    if additional is True:
        extra = None  # anything else is allowed
    elif additional is False:
        extra = _never
    else:
        extra = _compile(additional)
    known_only = extra is _never

    def check_typed_object(v: Any) -> bool:
        if type(v) is not dict:
            return False
        for name in needed:
            if name not in v:
                return False
        for key, item in v.items():
            c = props.get(key)
            if c is None:
                if extra is None:
                    continue
                if known_only or not extra(item):
                    return False
            elif not c(item):
                return False
        return True

    if typed:
        return check_typed_object

    def check_object(v: Any) -> bool:
        if type(v) is not dict:
            return not isinstance(v, dict)  # the keywords do not apply to non-objects
        return check_typed_object(v)

    return check_object


def _array_check(schema: Mapping[str, Any]) -> Check:
    prefix_schemas = schema.get("prefixItems", [])
    if not isinstance(prefix_schemas, list):
        raise _Unsupported
    prefix = tuple(_compile(s) for s in prefix_schemas)
    items = schema.get("items", True)
    rest: Check | None = None if items is True else (_never if items is False else _compile(items))
    no_rest = rest is _never
    min_items = _count(schema.get("minItems", 0))
    max_items = _count(schema.get("maxItems")) if "maxItems" in schema else None
    unique = schema.get("uniqueItems", False)
    if not isinstance(unique, bool):
        raise _Unsupported

    def check_array(v: Any) -> bool:
        if type(v) is not list:
            return not isinstance(v, list)  # the keywords do not apply to non-arrays
        n = len(v)
        if n < min_items or (max_items is not None and n > max_items):
            return False
        for c, item in zip(prefix, v, strict=False):
            if not c(item):
                return False
        if n > len(prefix) and rest is not None:
            if no_rest:
                return False
            for item in v[len(prefix) :] if prefix else v:
                if not rest(item):
                    return False
        if unique and n > 1:
            # Only all-string arrays are decided here (no bool/int/float equality corners).
            for item in v:
                if type(item) is not str:
                    return False
            return len(set(v)) == n
        return True

    return check_array


def _string_check(schema: Mapping[str, Any]) -> Check:
    min_length = _count(schema.get("minLength", 0))
    max_length = _count(schema.get("maxLength")) if "maxLength" in schema else None
    pattern = schema.get("pattern")
    if pattern is not None and not isinstance(pattern, str):
        raise _Unsupported
    # re.search's verdict, in bounded time (the validator's pattern keyword uses the same matcher).  None (a
    # string too long for the pattern to be checked on) is "not certain": the validator says what it is.
    search = pattern_search(pattern) if pattern is not None else None

    def check_string(v: Any) -> bool:
        if type(v) is not str:
            return not isinstance(v, str)  # the keywords do not apply to non-strings
        n = len(v)
        if n < min_length or (max_length is not None and n > max_length):
            return False
        return search is None or search(v) is True

    return check_string


def _number_check(schema: Mapping[str, Any]) -> Check:
    bounds = {k: schema[k] for k in _NUMBER_KEYS if k in schema}
    for bound in bounds.values():
        if type(bound) not in (int, float):
            raise _Unsupported
    low = bounds.get("minimum")
    high = bounds.get("maximum")
    low_open = bounds.get("exclusiveMinimum")
    high_open = bounds.get("exclusiveMaximum")

    def check_number(v: Any) -> bool:
        t = type(v)
        if t is not int and t is not float:
            # Booleans and non-numbers are not "number" to jsonschema: the keywords do not apply.
            return t is bool or not isinstance(v, numbers.Number)
        # The very comparisons jsonschema makes, so NaN and big ints behave the same way.
        if low is not None and v < low:
            return False
        if high is not None and v > high:
            return False
        if low_open is not None and v <= low_open:
            return False
        return not (high_open is not None and v >= high_open)

    return check_number


# The types whose compiled check looks at the value itself (and refuses what is odd in it).
_SCALAR_KINDS: Final = frozenset(("string", "integer", "number", "boolean", "null"))


def sees_every_value(schema: Any) -> bool:
    """Whether :func:`compile_check`'s ``True`` for ``schema`` means every string, float and key was looked at.

    So that the validator knows a certainly valid instance holds nothing odd without walking it again.
    ``True`` for a schema whose every position is typed: a typed scalar (``"string"`` …, or a list of
    those), an ``enum`` / ``const``, an ``anyOf`` of such, an ``array`` whose items all are, an ``object``
    whose properties all are and that allows no other key (``additionalProperties: false``).  ``False``
    whenever a position is open (``{}``, an untyped keyword, ``additionalProperties`` left open) or the
    schema is outside the fast check's subset — then the validator walks.
    """
    try:
        return _sees_all(schema)
    except RecursionError:
        return False


def _sees_all(schema: Any) -> bool:
    if schema is False:
        return True  # nothing passes
    if type(schema) is not dict:
        return False
    if "enum" in schema or "const" in schema:
        return True  # a member found is never odd (_member_check)
    kind = schema.get("type")
    if (isinstance(kind, str) and kind in _SCALAR_KINDS) or (
        isinstance(kind, list) and kind and all(isinstance(k, str) and k in _SCALAR_KINDS for k in kind)
    ):
        return True
    options = schema.get("anyOf")
    if isinstance(options, list) and options and all(_sees_all(s) for s in options):
        return True
    if kind == "array":
        items = schema.get("items", True)
        prefix = schema.get("prefixItems", [])
        return isinstance(prefix, list) and all(_sees_all(s) for s in prefix) and _sees_all(items)
    if kind == "object":
        properties = schema.get("properties", {})
        return (
            schema.get("additionalProperties", True) is False
            and isinstance(properties, dict)
            and all(_sees_all(s) for s in properties.values())
        )
    return False


def _count(value: Any) -> int:
    if type(value) is not int or value < 0:
        raise _Unsupported
    return value


# -- patterns, matched in bounded time ------------------------------------------------------------------------
#
# A schema's ``pattern`` (and ``patternProperties``' names) is someone else's regex — an MCP server's, a user's
# model's — run against the model's strings on the event loop.  ``re`` backtracks: ``^(a+)+$`` against
# ``"a" * 40 + "b"`` takes minutes, ``a*a*b`` against 10,000 ``a`` takes as long, and no thread can bound it
# (``re`` holds the GIL throughout).  So each pattern is looked at once, when the validator is built:
#
# * an upper bound on the steps ``re`` can take on a string of length n — ``K · m · (n + 1) ** (u + 1)`` for a
#   pattern of m nodes with u unbounded repetitions and backreferences (comparing a group costs up to its
#   length), K the product of its bounded choices (alternatives, the range of ``{a,b}``), where no repetition
#   repeats a choice; *exponential* where one does (``(a+)+``, ``(a|ab)*``, ``([a-z]+-)*``);
# * a string for which that bound stays under :data:`_RE_STEPS` is matched by ``re`` itself (every ordinary
#   pattern on an ordinary argument: the exact semantics, at ``re``'s speed); a longer one — any string, for an
#   exponential pattern — by a Thompson-NFA simulation of the same parsed pattern (:class:`_Linear`), whose time
#   is linear in the string (steps ≤ n · program size) and which takes ``re``'s own compiled code for each
#   character class and anchor, so both say the same;
# * the simulation takes the regular core and lookarounds (a password rule's ``(?=.*\d)``, ``(?!.*\.\.)``): a
#   lookaround only says whether its body matches at a position — it binds nothing a later part could use
#   without a backreference — so where each holds is found for every position at once, in one more linear pass
#   per lookaround, before the search;
# * a pattern beyond that (a backreference, an atomic group, a possessive or conditional part) is matched by
#   ``re`` on strings up to the length its bound allows (:func:`pattern_limit`) and on no longer one: a longer
#   string is *uncheckable* (:func:`pattern_search` says ``None``), which the validator reports as an issue of
#   the call — never a hang, never a pass.  Such a pattern is refused when the tool is made if it can backtrack
#   exponentially (it could then only be checked on strings of a few characters) or no string at all fits.
#
# ``jsonschema``'s ``pattern``, ``patternProperties``, ``additionalProperties`` and ``unevaluatedProperties`` use
# the same matcher (validation.py), so the fast check and the validator never disagree.
#
# That bounds one string; an argument can hold thousands, each just under the bound (64 Mi chars of JSON text
# may hold ten thousand strings of ``[a-p]{0,50}$``'s worst, ~2 ms each for ``re``).  So a validation call opens
# a budget on its thread (:func:`open_call_budget`) and every match in it is charged: ``re`` its worst-case
# estimate, out of :data:`_CALL_RE_STEPS`; once that is spent, the linear matcher, its steps (positions times
# instructions, each program's pass over the string), out of :data:`_CALL_LINEAR_STEPS` — it is linear, but a
# large program (``x{1,5000}``, ``.{0,2000}!``: thousands of instructions alive at once) costs ~0.1 ms a
# character.  A string neither can take is *uncheckable*, as one too long for a backreference pattern is.  So a
# call spends at most ~0.2 s on ``re`` and ~0.5 s on the simulation (measured worst cases, 2 cores), whatever it
# holds, and every verdict given is ``re``'s.  Outside a call (no budget open) a match is not charged.

#: The worst-case steps ``re`` may take on one string before the linear matcher is used instead.  ``re``'s
#: real worst on a string at that bound is ~2 ms (``[a-p]{0,50}$``; the estimate is an upper bound).
_RE_STEPS: Final = 1_000_000
#: The estimated ``re`` steps one call may spend on all its strings together (~0.1 s at ``re``'s worst).
_CALL_RE_STEPS: Final = 40 * _RE_STEPS
#: The share of a call's budget the fast check spends on one instance (:func:`compile_check`).
_FAST_SHARE: Final = 0.25
#: The linear matcher's steps one call may spend: ~0.1-0.35 µs each at worst (``[a-p]{0,50}$``: fifty
#: threads alive, each character tested by ``re``'s code for the class), ~0.3-0.7 s.
_CALL_LINEAR_STEPS: Final = 2_000_000
#: What one position of one pass of the simulation costs beyond its instructions, in instructions (~1 µs).
_PASS_STEPS: Final = 20
#: The largest program the linear matcher builds (``x{1,5000}`` unrolls); a larger pattern is not linearised.
_MAX_PROGRAM: Final = 20_000
_REPEATS: Final = frozenset(("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"))
_SINGLE: Final = frozenset(("LITERAL", "NOT_LITERAL", "ANY", "IN"))


class _NotLinear(Exception):
    """The pattern uses something beyond what the linear matcher takes (a backreference, an atomic group...)."""


def _cost(items: Any) -> tuple[bool, int, float, int]:
    """``(exponential, unbounded repetitions, constant factor, nodes)`` of a parsed pattern (see above)."""
    exp, unbounded, factor, nodes = False, 0, 1.0, 0
    for op, av in items:
        name = str(op)
        nodes += 1
        if name == "GROUPREF":
            unbounded += 1  # one comparison costs up to the group's length: one more factor of n
        elif name in _REPEATS:
            low, high, body = av
            b_exp, b_unbounded, b_factor, b_nodes = _cost(body)
            nodes += b_nodes
            variable_body = b_exp or b_unbounded > 0 or b_factor > 1
            if high != low and variable_body:
                exp = True
            elif high != low:
                if high >= _MAXREPEAT:
                    unbounded += 1
                else:
                    factor *= high - low + 1
            else:  # a fixed count: the body that many times in a row
                exp |= b_exp
                unbounded += b_unbounded * low
                factor *= b_factor ** min(low, 64)
        elif name in ("SUBPATTERN", "ATOMIC_GROUP", "ASSERT", "ASSERT_NOT", "BRANCH", "GROUPREF_EXISTS"):
            if name == "SUBPATTERN":
                parts = [av[3]]
            elif name == "ATOMIC_GROUP":
                parts = [av]
            elif name in ("ASSERT", "ASSERT_NOT"):
                parts = [av[1]]
            elif name == "BRANCH":
                parts = list(av[1])
            else:
                parts = [p for p in av[1:] if p is not None]
            costs = [_cost(p) for p in parts]
            exp |= any(c[0] for c in costs)
            unbounded += max(c[1] for c in costs)
            factor *= max(c[2] for c in costs) * (len(parts) if name in ("BRANCH", "GROUPREF_EXISTS") else 1)
            nodes += sum(c[3] for c in costs)
    return exp, unbounded, min(factor, 1e18), nodes


#: One instruction of a program: ``("char", match)``, ``("assert", match)``, ``("look", index, negated)``,
#: ``("split", a, b)``, ``("jmp", a)``, ``("match",)``.
_Instruction = tuple[Any, ...]


class _Linear:
    """A Thompson-NFA (Pike VM) search over a parsed pattern: ``re.search`` semantics for whether it matches.

    Only *whether* matters to a schema, so which match (greedy or lazy) does not: the simulation keeps every
    live state at once and is linear in the string.  Each character class and anchor is ``re``'s own code for
    that one node, called at the position (``Pattern.match(s, pos)``), so the flags, categories and anchor
    rules are exactly ``re``'s.

    A lookaround is a program of its own, run over the whole string before the search to mark where it holds:
    a lookahead's body backwards (marking where a match of it starts), a lookbehind's forwards (where one ends:
    ``re`` takes only fixed-width lookbehinds, so that is where one starting ``width`` earlier ends).  Python's
    lookarounds are atomic, which changes no verdict here: they bind nothing a backreference-free pattern reads.
    """

    __slots__ = ("_looks", "_program", "_size")

    def __init__(self, parsed: Any) -> None:
        # Each lookaround's program and its direction (True: ahead); an inner one comes before the one around it.
        self._looks: list[tuple[list[_Instruction], bool]] = []
        self._size = 0
        self._program = self._compile(parsed, parsed.state.flags, parsed.state, reverse=False)

    @property
    def steps_per_position(self) -> int:
        """What :meth:`search` costs at most per position of the string, in the budget's steps.

        Every program (the search's and each lookaround's) passes over the string once, and at a position visits
        each of its instructions at most once (``seen``), plus the pass's own work there.
        """
        return self._size + _PASS_STEPS * (1 + len(self._looks))

    def _node(self, node: Any, flags: int, state: Any) -> Callable[[str, int], Any]:
        own = copy.copy(state)
        own.flags = flags
        return _re_compiler.compile(_re_parser.SubPattern(own, [node]), flags).match  # type: ignore[no-any-return]

    def _compile(self, items: Any, flags: int, state: Any, *, reverse: bool) -> list[_Instruction]:
        program: list[_Instruction] = []
        self._emit(program, items, flags, state, reverse)
        program.append(("match",))
        self._size += len(program)
        return program

    def _emit(self, program: list[_Instruction], items: Any, flags: int, state: Any, reverse: bool) -> None:
        nodes = list(items)
        for node in reversed(nodes) if reverse else nodes:
            if len(program) + self._size > _MAX_PROGRAM:
                raise _NotLinear
            op, av = node
            name = str(op)
            if name in _SINGLE:
                program.append(("char", self._node(node, flags, state)))
            elif name == "AT":
                program.append(("assert", self._node(node, flags, state)))
            elif name == "SUBPATTERN":
                _, add, remove, body = av
                self._emit(program, body, (flags | add) & ~remove, state, reverse)
            elif name in ("ASSERT", "ASSERT_NOT"):
                direction, body = av
                ahead = direction == 1
                self._looks.append((self._compile(body, flags, state, reverse=ahead), ahead))
                program.append(("look", len(self._looks) - 1, name == "ASSERT_NOT"))
            elif name == "BRANCH":
                alternatives = av[1]
                jumps: list[int] = []
                for i, alternative in enumerate(alternatives):
                    if i < len(alternatives) - 1:
                        split = len(program)
                        program.append(("split", split + 1, -1))
                        self._emit(program, alternative, flags, state, reverse)
                        jumps.append(len(program))
                        program.append(("jmp", -1))
                        program[split] = ("split", split + 1, len(program))
                    else:
                        self._emit(program, alternative, flags, state, reverse)
                for j in jumps:
                    program[j] = ("jmp", len(program))
            elif name in ("MAX_REPEAT", "MIN_REPEAT"):
                low, high, body = av
                for _ in range(low):
                    self._emit(program, body, flags, state, reverse)
                    if len(program) + self._size > _MAX_PROGRAM:
                        raise _NotLinear
                if high >= _MAXREPEAT:
                    loop = len(program)
                    program.append(("split", loop + 1, -1))
                    self._emit(program, body, flags, state, reverse)
                    program.append(("jmp", loop))
                    program[loop] = ("split", loop + 1, len(program))
                else:
                    splits: list[int] = []
                    for _ in range(high - low):
                        splits.append(len(program))
                        program.append(("split", len(program) + 1, -1))
                        self._emit(program, body, flags, state, reverse)
                        if len(program) + self._size > _MAX_PROGRAM:
                            raise _NotLinear
                    for at in splits:
                        program[at] = ("split", at + 1, len(program))
            else:  # a backreference, an atomic group, a possessive or conditional part
                raise _NotLinear

    def search(self, text: str) -> bool:
        tables: list[bytearray] = []
        for program, ahead in self._looks:  # inner lookarounds first: the outer ones read their marks
            marks = bytearray(len(text) + 1)
            _run(program, text, tables, forward=not ahead, marks=marks)
            tables.append(marks)
        return _run(self._program, text, tables, forward=True, marks=None)


def _run(
    program: list[_Instruction], text: str, tables: list[bytearray], *, forward: bool, marks: bytearray | None
) -> bool:
    """Run ``program`` over ``text`` with a thread starting at every position (``re.search``'s every start).

    ``marks`` ``None``: whether it matches anywhere (forwards).  Otherwise every position where a match ends
    (forwards) or, for a program emitted in reverse, starts (backwards) is marked in it.
    """
    n = len(text)
    last = n if forward else 0
    current: list[int] = []
    for pos in range(n + 1) if forward else range(n, -1, -1):
        # The closure of the threads alive at pos, plus a new one starting here.
        seen: set[int] = set()
        ready: list[int] = []
        stack = [0, *reversed(current)]
        while stack:
            pc = stack.pop()
            if pc in seen:
                continue
            seen.add(pc)
            instruction = program[pc]
            kind = instruction[0]
            if kind == "char":
                ready.append(pc)
            elif kind == "match":
                if marks is None:
                    return True
                marks[pos] = 1
            elif kind == "jmp":
                stack.append(instruction[1])
            elif kind == "split":
                stack.append(instruction[2])
                stack.append(instruction[1])
            elif kind == "look":
                if tables[instruction[1]][pos] != instruction[2]:  # marked, and not negated (or the reverse)
                    stack.append(pc + 1)
            elif instruction[1](text, pos) is not None:  # an anchor that holds here
                stack.append(pc + 1)
        if pos == last:
            break
        at = pos if forward else pos - 1  # the character consumed on the way to the next position
        current = [pc + 1 for pc in ready if program[pc][1](text, at) is not None]
    return False


#: What the call open in this context may still spend — ``[re steps, linear matcher steps]`` (see above) — or
#: ``None`` outside a call (nothing charged).  A context variable: each thread and task has its own, and a
#: validation runs to its end without yielding, so no other call's matching comes in between.
_BUDGET: Final[contextvars.ContextVar[list[float] | None]] = contextvars.ContextVar("pattern_budget", default=None)


def open_call_budget(share: float = 1.0) -> object:
    """Start one call's budget (``share`` of it) for the matching done in this context until
    :func:`close_call_budget` is given what this returns.  Every :func:`pattern_search` match is charged to it.
    """
    return _BUDGET.set([_CALL_RE_STEPS * share, _CALL_LINEAR_STEPS * share])


def close_call_budget(token: object) -> None:
    """End the call's budget :func:`open_call_budget` opened (``token``: what it returned)."""
    _BUDGET.reset(token)  # type: ignore[arg-type]


@functools.lru_cache(maxsize=4096)
def _matcher(pattern: str) -> tuple[Callable[[str], bool | None], int | None, int]:
    """:func:`pattern_search` and :func:`pattern_limit` of ``pattern``, and the longest string ``re`` is given."""
    compiled = re.compile(pattern)
    parsed = _re_parser.parse(pattern)
    exp, unbounded, factor, nodes = _cost(parsed)
    linear: _Linear | None
    try:
        linear = _Linear(parsed)
    except (_NotLinear, RecursionError):
        linear = None
    # The longest string re may take under the bound: K·m·(n+1)^(u+1) ≤ _RE_STEPS.
    weight, power = factor * max(nodes, 1), unbounded + 1
    limit = int((_RE_STEPS / weight) ** (1 / power)) - 1
    by_re = compiled.search
    current = _BUDGET.get
    if linear is None:
        shown = pattern if len(pattern) <= 80 else pattern[:79] + "…"
        if exp:
            raise ValueError(
                f"pattern {shown!r} can take time exponential in the length of the string it checks (it repeats "
                "a repetition or alternatives) and uses a backreference, atomic group, possessive or conditional "
                "part, which the linear-time matcher does not take: it cannot be checked in bounded time"
            )
        if limit < 1:
            raise ValueError(
                f"pattern {shown!r} uses a backreference, atomic group, possessive or conditional part, which the "
                "linear-time matcher does not take, and is too large to be checked in bounded time on any string"
            )
        checkable = limit

        def bounded(text: str) -> bool | None:
            n = len(text)
            if n > checkable:
                return None
            budget = current()
            if budget is not None:
                cost = weight * (n + 1) ** power
                if cost > budget[0]:
                    return None  # the call's re budget is spent, and no other matcher takes the pattern
                budget[0] -= cost
            return by_re(text) is not None

        return bounded, checkable, checkable
    by_simulation = linear.search
    per_position = linear.steps_per_position
    if exp:
        def simulated(text: str) -> bool | None:
            budget = current()
            if budget is not None:
                cost = (len(text) + 1) * per_position
                if cost > budget[1]:
                    return None
                budget[1] -= cost
            return by_simulation(text)

        return simulated, None, -1

    def search(text: str) -> bool | None:
        n = len(text)
        budget = current()
        if budget is None:  # outside a call
            return by_re(text) is not None if n <= limit else by_simulation(text)
        if n <= limit:
            cost = weight * (n + 1) ** power
            if cost <= budget[0]:
                budget[0] -= cost
                return by_re(text) is not None
        steps = (n + 1) * per_position
        if steps > budget[1]:
            return None  # both of the call's budgets are spent (or this string alone is past them)
        budget[1] -= steps
        return by_simulation(text)

    return search, None, max(limit, 0)


def pattern_search(pattern: str) -> Callable[[str], bool | None]:
    """``search(text)``: whether ``pattern`` matches anywhere in ``text``, in time bounded for any text.

    What ``re.search`` says (see above for how the time is bounded) — or ``None`` when ``text`` is longer than
    :func:`pattern_limit` (a pattern with a backreference, an atomic group, a possessive or conditional part
    cannot be checked on it in bounded time) or, inside a call's budget (:func:`open_call_budget`), when what is
    left of it cannot pay for ``text``: the caller says so (for a schema: an issue of the call).
    Cached per pattern: a schema's patterns are built once with its validator, and the validator's keywords
    find them here by their text.

    :raises re.error: ``pattern`` is not a regular expression ``re`` reads.
    :raises ValueError: ``pattern`` can take time exponential in the string's length and uses a part no
        linear-time matcher takes, or is too large to be checked on any string; the message says which.
    """
    return _matcher(pattern)[0]


def pattern_limit(pattern: str) -> int | None:
    """The longest string :func:`pattern_search` checks ``pattern`` on (``None``: any string).

    :raises re.error: as :func:`pattern_search`.
    :raises ValueError: as :func:`pattern_search`.
    """
    return _matcher(pattern)[1]
