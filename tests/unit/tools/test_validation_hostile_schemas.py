"""Schemas chosen by someone else (an MCP server, a ``ToolSpec`` from config, a user's model): what they may not do.

* A ``$ref`` is looked up in the schema itself and nowhere else: nothing is ever fetched (``jsonschema``'s default
  registry would ``urlopen`` a remote one, synchronously, from the event loop, at the first call), and one that
  does not resolve is refused when the tool is made — a ``ValueError`` naming the tool and the reference — not
  at a call, from inside the executor.
* A ``pattern`` is matched in bounded time whatever the string: a catastrophic one (``^(a+)+$``) no longer
  stalls the event loop for minutes; ordinary patterns keep their exact meaning.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentactors import ToolCall
from agentactors.messages import ToolSpec
from agentactors.tools import ToolStatus
from agentactors.tools.executor import ToolExecutorActor
from agentactors.tools.fastcheck import compile_check, pattern_search
from agentactors.tools.registry import Tool
from agentactors.tools.validation import ArgumentValidator


def take(**arguments: Any) -> str:
    return "ran"


def make(schema: dict[str, Any], name: str = "hostile") -> Tool[Any, Any]:
    return Tool.from_spec(ToolSpec(name, "A tool.", schema), take)


@pytest.fixture
def remote_port() -> Iterator[tuple[socket.socket, int]]:
    """A local listener standing in for the host a remote ``$ref`` names: nothing may connect to it."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        yield listener, listener.getsockname()[1]


def assert_nobody_connected(listener: socket.socket) -> None:
    with pytest.raises(BlockingIOError):
        listener.accept()


# -- $ref ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "where",
    [
        lambda port: {"x": {"$ref": f"http://127.0.0.1:{port}/schema.json"}},
        lambda port: {"x": {"$ref": f"http://127.0.0.1:{port}/schema.json#/$defs/a"}},
        # Relative to an $id that points at the host: the same fetch, spelled indirectly.
        lambda port: {"x": {"$id": f"http://127.0.0.1:{port}/dir/", "$ref": "other.json"}},
        lambda port: {"x": {"$dynamicRef": f"http://127.0.0.1:{port}/schema.json#node"}},
    ],
)
def test_a_remote_ref_is_refused_when_the_tool_is_made_and_nothing_is_fetched(
    remote_port: tuple[socket.socket, int], where: Any
) -> None:
    listener, port = remote_port
    schema = {"type": "object", "properties": where(port)}
    with pytest.raises(ValueError, match=r"tool 'hostile'.*\$(dynamic)?[rR]ef .*does not resolve within the schema"):
        make(schema)
    assert_nobody_connected(listener)


def test_a_remote_ref_in_a_validator_never_connects_even_when_the_check_is_bypassed(
    remote_port: tuple[socket.socket, int],
) -> None:
    """Also the output schemas' path (``ArgumentValidator`` directly): the same refusal, the same silence."""
    listener, port = remote_port
    with pytest.raises(ValueError, match="tool 'answer'"):
        ArgumentValidator({"$ref": f"http://127.0.0.1:{port}/x.json"}, tool_name="answer")
    assert_nobody_connected(listener)


@pytest.mark.parametrize(
    ("ref", "defs"),
    [
        ("#/$defs/nope", {}),
        ("#/$defs/a/properties/missing", {"a": {"type": "object"}}),
        ("#nowhere", {}),  # an anchor nobody declared
        ("other.json", {}),  # relative to no base: another document, never fetched
    ],
)
def test_a_ref_that_resolves_to_nothing_is_refused_when_the_tool_is_made(ref: str, defs: dict[str, Any]) -> None:
    schema = {"type": "object", "properties": {"x": {"$ref": ref}}, "$defs": defs}
    with pytest.raises(ValueError, match=r"tool 'hostile'.*\$ref '.*' does not resolve within the schema") as caught:
        make(schema)
    assert ref in str(caught.value)


def test_refs_that_resolve_inside_the_schema_still_serve() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"$ref": "#/$defs/node"},
            "b": {"$ref": "#point"},
            "c": {"$id": "https://example.invalid/inner", "$defs": {"n": {"type": "integer"}}, "$ref": "#/$defs/n"},
            "d": {"$ref": "https://example.invalid/inner#/$defs/n"},
            "e": {"$ref": "#/$defs/we~1ird~0name"},
        },
        "$defs": {
            "node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}},
            "point": {"$anchor": "point", "type": "array", "items": {"type": "number"}},
            "we/ird~name": {"type": "string"},
        },
    }
    t = make(schema)
    assert t.validate({"a": {"next": {"next": {}}}, "b": [1, 2.5], "c": 3, "d": 4, "e": "s"}) == []
    paths = {i.path for i in t.validate({"a": {"next": 5}, "b": ["x"], "c": "x", "d": 1.5, "e": 1})}
    assert paths == {"a.next", "b[0]", "c", "d", "e"}


def test_a_ref_inside_data_is_data_not_a_reference() -> None:
    """``const`` / ``enum`` / ``default`` / ``examples`` hold values, which may look like anything."""
    schema = {
        "type": "object",
        "properties": {
            "x": {"const": {"$ref": "#/$defs/nope"}, "default": {"$ref": "http://127.0.0.1:1/"}},
            "y": {"enum": [{"$dynamicRef": "#x"}], "examples": [{"$ref": "#/nope"}]},
        },
    }
    t = make(schema)
    assert t.validate({"x": {"$ref": "#/$defs/nope"}, "y": {"$dynamicRef": "#x"}}) == []


def test_a_property_named_ref_is_a_name_not_a_reference() -> None:
    t = make({"type": "object", "properties": {"$ref": {"type": "string"}, "$id": {"type": "integer"}}})
    assert t.validate({"$ref": "anything", "$id": 3}) == []
    assert [i.path for i in t.validate({"$ref": 1})] == ["$ref"]


# -- pattern ------------------------------------------------------------------------------------------------

CATASTROPHIC = "^(a+)+$"
EVIL = "a" * 40 + "b"  # minutes for re.search(CATASTROPHIC, EVIL)


def quickly(check: Any, within: float = 2.0) -> Any:
    started = time.monotonic()
    value = check()
    assert time.monotonic() - started < within
    return value


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"s": {"type": "string", "pattern": CATASTROPHIC}}},  # the fast check's
        {"type": "object", "properties": {"s": {"pattern": CATASTROPHIC, "not": {"const": 1}}}},  # jsonschema's
    ],
)
def test_a_catastrophic_pattern_is_checked_in_bounded_time(schema: dict[str, Any]) -> None:
    t = make(schema)
    issues = quickly(lambda: t.validate({"s": EVIL}))
    assert [(i.path, i.got) for i in issues] == [("s", "a string that does not match")]
    assert quickly(lambda: t.validate({"s": "a" * 40})) == []


def test_a_catastrophic_pattern_on_property_names_is_checked_in_bounded_time() -> None:
    t = make({"type": "object", "propertyNames": {"pattern": CATASTROPHIC}})
    assert len(quickly(lambda: t.validate({EVIL: 1}))) == 1
    assert quickly(lambda: t.validate({"a" * 40: 1})) == []


@pytest.mark.parametrize("closed", [True, False])
def test_a_catastrophic_pattern_property_name_is_matched_in_bounded_time(closed: bool) -> None:
    schema: dict[str, Any] = {"type": "object", "patternProperties": {CATASTROPHIC: {"type": "integer"}}}
    if closed:
        schema["additionalProperties"] = False
    t = make(schema)
    issues = quickly(lambda: t.validate({EVIL: "x", "a" * 30: "not an integer"}))
    expected = {("a" * 30, "an integer")}  # a name the pattern matches is a property, not an extra one
    if closed:  # the name the pattern does not match is one no property may have (its path is clipped)
        expected.add(("a" * 39 + "…", f"no such property (allowed: none; or a name matching {CATASTROPHIC})"))
    assert {(i.path, i.expected) for i in issues} == expected


def test_patterns_that_backtrack_polynomially_are_checked_in_bounded_time_on_long_strings() -> None:
    t = make({"type": "object", "properties": {"s": {"type": "string", "pattern": "a*a*a*b"}}})
    assert [i.path for i in quickly(lambda: t.validate({"s": "a" * 20_000}))] == ["s"]
    assert quickly(lambda: t.validate({"s": "a" * 20_000 + "b"})) == []


def test_a_pattern_that_cannot_be_bounded_is_refused_when_the_tool_is_made() -> None:
    """Exponential, and beyond what a linear-time matcher takes (a backreference after a repeated repetition).

    (A lookahead around one, ``(?=(a+)+$)``, is linear now: test_validation_regex_keywords.py.)"""
    with pytest.raises(ValueError, match=r"tool 'hostile'.*pattern '\(\(a\+\)\+\)\\\\1' can take time exponential"):
        make({"type": "object", "properties": {"s": {"type": "string", "pattern": r"((a+)+)\1"}}})


ORDINARY = [
    (r"^[A-Z]{3}$", ["ABC", "AB", "ABCD", "abc"]),
    (r"^\d{4}-\d{2}-\d{2}$", ["2024-01-31", "2024-1-31", "x2024-01-31", "2024-01-31\n"]),
    (r"^[a-z0-9]+(-[a-z0-9]+)*$", ["abc-def", "abc--def", "-abc", "a" * 5000 + "-b", "a" * 5000 + "--"]),
    (r"^[\w.+-]+@([\w-]+\.)+[\w-]{2,}$", ["a.b+c@example.co.uk", "a@b", "x@y.z" + "." * 3000]),
    (r"^(?=.*[A-Z])(?=.*\d).{8,}$", ["Passw0rdX", "password1", "Sh0rt"]),
    (r"^((25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(25[0-5]|2[0-4]\d|1?\d?\d)$", ["192.168.0.1", "256.1.1.1", "1.2.3"]),
    (r"(?i)^[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}$", ["123E4567-e89b-12d3-a456-426614174000", "123"]),
    (r"^https?://", ["https://x", "ftp://x", "http:/x"]),
    (r"\bcat\b", ["a cat.", "concat", "cat" * 4000]),
    (r"^$", ["", "x", "\n"]),
    (r"^(foo|bar)+$", ["foobarfoo", "fooba", "foo" * 3000, "foo" * 3000 + "x"]),
]


@pytest.mark.parametrize(("pattern", "texts"), ORDINARY)
def test_ordinary_patterns_keep_their_meaning(pattern: str, texts: list[str]) -> None:
    import re

    t = make({"type": "object", "properties": {"s": {"type": "string", "pattern": pattern}}})
    for text in texts:
        expected = re.search(pattern, text) is not None
        assert (t.validate({"s": text}) == []) is expected, (pattern, text[:40])


@pytest.mark.anyio
async def test_a_call_against_a_catastrophic_pattern_is_an_invalid_result_at_once() -> None:
    executor = ToolExecutorActor([make({"type": "object", "properties": {"s": {"type": "string",
                                                                              "pattern": CATASTROPHIC}}})])
    with anyio.fail_after(10):
        result = await executor.execute_one(ToolCall("1", "hostile", {"s": EVIL}))
        good = await executor.execute_one(ToolCall("2", "hostile", {"s": "a" * 40}))
    assert result.status is ToolStatus.invalid and "s: expected a string matching the pattern" in result.content
    assert good.content == "ran"


def test_a_pattern_longer_strings_go_to_the_linear_matcher_with_the_same_verdicts() -> None:
    """Past the length ``re`` is trusted with, the simulation answers: the same as ``re``, on strings re is quick on."""
    import re

    for pattern in ("^[a-z]+$", "a*b", r"\d+\.\d+$", "^(ab|a)c", "(?i)x[^y]z"):
        search = pattern_search(pattern)
        for text in ("ab" * 3000 + "c", "a" * 6000, "1" * 3000 + ".5", "XQZ" + "a" * 5000, ""):
            assert search(text) == (re.search(pattern, text) is not None), (pattern, text[:20])


# -- the linear matcher agrees with re ---------------------------------------------------------------------

_ATOMS = st.sampled_from(["a", "b", ".", "[ab]", "[^a]", r"\d", r"\w", "^", "$", r"\b", r"\B", r"\A", r"\Z", "(?i:A)",
                         "(?<=a)", "(?<!b)", "(?<=[a1] )", r"(?<!\b.)"])  # lookbehinds: fixed width only


def _regexes() -> st.SearchStrategy[str]:
    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return (
            st.tuples(inner, inner).map("".join)
            | st.tuples(inner, inner).map(lambda p: f"(?:{p[0]}|{p[1]})")
            | st.tuples(inner, st.sampled_from(["*", "+", "?", "{2}", "{1,3}", "{0,2}?", "*?", "+?"])).map(
                lambda p: f"(?:{p[0]}){p[1]}"
            )
            | inner.map(lambda p: f"({p})")
            | st.tuples(st.sampled_from(["(?=", "(?!"]), inner).map(lambda p: f"{p[0]}{p[1]})")  # lookaheads
        )

    return st.recursive(_ATOMS, extend, max_leaves=6)


@settings(max_examples=400, deadline=None)
@given(_regexes(), st.text(alphabet="ab1A \n", max_size=8))
def test_the_linear_matcher_says_what_re_search_says(pattern: str, text: str) -> None:
    import importlib
    import re

    from agentactors.tools.fastcheck import _Linear

    parser = importlib.import_module("re._parser")  # (re's own parser, as fastcheck loads it)
    assert _Linear(parser.parse(pattern)).search(text) == (re.search(pattern, text) is not None)
    assert pattern_search(pattern)(text) == (re.search(pattern, text) is not None)


# -- multipleOf, uniqueItems, enum/const, big numbers ---------------------------------------------------------


@pytest.mark.parametrize(
    ("divisor", "value", "valid"),
    [
        (0.1, 0.3, True),  # jsonschema: 0.3 / 0.1 == 2.9999999999999996, "not a multiple"
        (0.1, 0.7, True),
        (0.01, 1.1, True),
        (0.1, 0.35, False),
        (1e-308, 1.0, True),
        (1e-308, 1e308, True),  # jsonschema: the quotient overflows to infinity, "not a multiple"
        (0.5, 10**400, True),  # jsonschema: OverflowError out of the check (out of the executor)
        (0.3, 10**400, False),
        (1e308, 10**400, True),
        (1e308, 10**400 + 1, False),
        (3, 10**400, False),
        (3, 3 * 10**400, True),
        (2, 4.0, True),
        (2, 5.0, False),
        (0.5, 2**53 + 1, True),
    ],
)
def test_multiple_of_is_exact_on_the_decimals_written_and_never_raises(divisor: Any, value: Any, valid: bool) -> None:
    t = make({"type": "object", "properties": {"n": {"type": "number", "multipleOf": divisor}}})
    assert (t.validate({"n": value}) == []) is valid


def test_unique_items_over_thousands_of_objects_is_checked_in_one_pass() -> None:
    t = make({"type": "object", "properties": {"rows": {"type": "array", "uniqueItems": True}}})
    rows: list[Any] = [{"id": i, "tags": [i, str(i)]} for i in range(5000)]
    assert quickly(lambda: t.validate({"rows": rows}), within=1.0) == []  # jsonschema: 25 s, pair by pair
    rows.append({"tags": [4999.0, "4999"], "id": 4999})  # equal to the last: 1 == 1.0, keys in any order
    assert [i.got for i in quickly(lambda: t.validate({"rows": rows}), within=1.0)] == ["an array with duplicates"]


def test_unique_items_keeps_true_and_one_apart_at_every_depth() -> None:
    t = make({"type": "object", "properties": {"xs": {"type": "array", "uniqueItems": True}}})
    assert t.validate({"xs": [1, True, 0, False, [1], [True], {"a": 0}, {"a": False}, None]}) == []
    assert t.validate({"xs": [[1], [True], [1]]}) != []  # jsonschema's sorted shortcut misses this duplicate
    assert t.validate({"xs": [{"a": [1]}, {"a": [1.0]}]}) != []


_JSONISH = st.recursive(
    st.none() | st.booleans() | st.sampled_from([0, 1, 2, 0.0, 1.0, -0.0, 2.5]) | st.sampled_from(["", "a", "1"]),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.sampled_from(["a", "b"]), children, max_size=2),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_JSONISH, max_size=5))
def test_unique_items_agrees_with_json_schema_equality_pair_by_pair(items: list[Any]) -> None:
    from jsonschema._utils import equal

    duplicates = any(equal(items[i], items[j]) for i in range(len(items)) for j in range(i + 1, len(items)))
    assert (ArgumentValidator({"uniqueItems": True}).issues(items) != []) is duplicates


@settings(max_examples=300, deadline=None)
@given(_JSONISH, _JSONISH)
def test_enum_and_const_agree_with_json_schema_equality(member: Any, value: Any) -> None:
    from jsonschema._utils import equal

    expected = equal(member, value)
    assert (ArgumentValidator({"enum": [member]}).issues(value) == []) is expected
    assert (ArgumentValidator({"const": member}).issues(value) == []) is expected


@pytest.mark.parametrize(
    ("schema", "value", "valid"),
    [
        ({"maximum": 1e308}, 10**400, False),
        ({"minimum": -1e308}, -(10**400), False),
        ({"maximum": 10**400}, 1e308, True),
        ({"exclusiveMaximum": 2**53 + 1}, float(2**53), True),
        ({"exclusiveMaximum": 2**53 + 1}, 2**53 + 1, False),
        ({"type": "integer", "maximum": 3}, 3.0, True),
        ({"type": "integer"}, 1e308, True),  # a float with no fraction is a JSON Schema integer
        ({"type": "integer"}, True, False),
    ],
)
def test_huge_numbers_are_compared_exactly_by_both_checks(schema: dict[str, Any], value: Any, valid: bool) -> None:
    validator = ArgumentValidator(schema)
    fast = compile_check(schema)
    assert (validator.issues(value) == []) is valid
    assert fast is None or not fast(value) or valid


def test_format_is_an_annotation_not_an_assertion() -> None:
    """As documented (docs/tools.md): a format is for the model; the tool checks what it needs itself."""
    t = make({"type": "object", "properties": {"when": {"type": "string", "format": "date-time"},
                                               "to": {"type": "string", "format": "email"}}})
    assert t.validate({"when": "not a date", "to": "not an email"}) == []


def test_additional_properties_false_with_thousands_of_keys_lists_them_in_linear_time() -> None:
    t = make({"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(2000)},
              "additionalProperties": False})
    issues = quickly(lambda: t.validate({f"k{i}": i for i in range(20_000)}), within=3.0)
    assert len(issues) == 20_000 and issues[0].path == "k0"


# -- the fast check and the validator agree ---------------------------------------------------------------

_LEAVES = st.one_of(
    st.sampled_from([{}, {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}]),
    st.sampled_from(["^a", "a$", "^[ab]+$", "^(a|b)*$", r"\d", "^(a+)+$"]).map(
        lambda p: {"type": "string", "pattern": p}
    ),
    st.sampled_from([1, 2, 0.5, 0.1]).map(lambda d: {"type": "number", "multipleOf": d}),
    st.lists(_JSONISH, min_size=1, max_size=3).map(lambda values: {"enum": values}),
    _JSONISH.map(lambda value: {"const": value}),
    st.sampled_from([{"maximum": 1e308}, {"minimum": 2**63}, {"exclusiveMinimum": 0.5, "maximum": 2}]),
)


def _schema_tree(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    objects = st.builds(
        lambda props, additional, patterns: {
            "type": "object",
            "properties": props,
            **({} if additional is None else {"additionalProperties": additional}),
            **({"patternProperties": patterns} if patterns else {}),
        },
        st.dictionaries(st.sampled_from(["a", "b", "aa"]), children, max_size=2),
        st.none() | st.booleans(),
        st.dictionaries(st.sampled_from(["^a", "b$"]), children, max_size=1),
    )
    arrays = st.builds(
        lambda items, unique: {"type": "array", "items": items, **({"uniqueItems": True} if unique else {})},
        children,
        st.booleans(),
    )
    return objects | arrays | st.lists(children, min_size=1, max_size=2).map(lambda o: {"anyOf": o})


_VALUES = st.recursive(
    _JSONISH | st.sampled_from(["ab", "ba", "aaab", "1", 10**400, 1e308, 0.3, 3, 2**63]),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.sampled_from(["a", "b", "aa", "ab", "c"]), children, max_size=3),
    max_leaves=6,
)


@settings(max_examples=400, deadline=None)
@given(st.recursive(_LEAVES, _schema_tree, max_leaves=5), _VALUES)
def test_the_fast_check_and_the_validator_agree(schema: dict[str, Any], value: Any) -> None:
    validator = ArgumentValidator(schema)
    valid = validator.issues(value) == []
    fast = compile_check(schema)
    if fast is not None and fast(value):
        assert valid, (schema, value)
