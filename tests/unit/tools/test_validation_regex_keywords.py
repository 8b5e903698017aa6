"""Every regex ``jsonschema`` applies to the model's data is matched in bounded time, with ``re``'s verdict.

A schema's regexes are someone else's (an MCP server's, a user's model's); the keys and strings they are applied
to are the model's — or a prompt-injected model's.  Beyond ``pattern`` (test_validation_hostile_schemas.py):

* ``patternProperties`` names as ``unevaluatedProperties`` looks them up (jsonschema's walk calls ``re.search``
  on every key), through ``allOf``, ``dependentSchemas``, ``$ref``, ``if`` / ``then``;
* a subschema declaring another draft (``$schema``): jsonschema would validate it with its stock class;
* lookarounds, which the linear matcher now takes (a polynomial ``(?=a*a*a*a*b)`` held the loop for minutes);
* a backreference pattern on a string longer than it can be checked on: an issue of the call — never a hang,
  never a pass, not even under ``not``.
"""

from __future__ import annotations

import re
import time
from typing import Annotated, Any

import anyio
import jsonschema
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentactors import ToolCall
from agentactors.messages import ToolSpec
from agentactors.output.target import OutputTarget
from agentactors.tools import ToolStatus
from agentactors.tools.executor import ToolExecutorActor
from agentactors.tools.fastcheck import pattern_limit, pattern_search
from agentactors.tools.registry import Tool
from agentactors.tools.validation import ArgumentValidator

CATASTROPHIC = "^(a+)+$"
EVIL = "a" * 40 + "!"  # minutes for re.search(CATASTROPHIC, EVIL): no match, found by re in the end
CLIPPED = "a" * 39 + "…"  # how an issue's path shows EVIL
BACKREF = r"(a)a*a*a*a*b\1"  # polynomial (n^6 bound), and beyond the linear matcher


def take(**arguments: Any) -> str:
    return "ran"


def make(schema: dict[str, Any], name: str = "hostile") -> Tool[Any, Any]:
    return Tool.from_spec(ToolSpec(name, "A tool.", schema), take)


def quickly(check: Any, within: float = 2.0) -> Any:
    started = time.monotonic()
    value = check()
    assert time.monotonic() - started < within
    return value


# -- unevaluatedProperties ------------------------------------------------------------------------------------

_PATTERNED: dict[str, Any] = {"patternProperties": {CATASTROPHIC: {"type": "integer"}}}

UNEVALUATED: list[dict[str, Any]] = [
    {"type": "object", **_PATTERNED, "unevaluatedProperties": False},
    {"type": "object", "allOf": [_PATTERNED], "unevaluatedProperties": False},
    {"type": "object", "$defs": {"p": _PATTERNED}, "$ref": "#/$defs/p", "unevaluatedProperties": False},
    {"type": "object", "properties": {"k": {}}, "dependentSchemas": {"k": _PATTERNED}, "unevaluatedProperties": False},
    {"type": "object", "if": {"type": "object"}, "then": _PATTERNED, "unevaluatedProperties": False},
    {"type": "object", **_PATTERNED, "unevaluatedProperties": {"type": "string"}},
]


@pytest.mark.parametrize("schema", UNEVALUATED)
def test_a_model_chosen_key_against_a_catastrophic_pattern_property_is_judged_at_once(schema: dict[str, Any]) -> None:
    t = make(schema)
    arguments = {EVIL: 1, "k": "x"} if "dependentSchemas" in schema else {EVIL: 1}
    issues = quickly(lambda: t.validate(arguments))
    # re's verdict: the pattern does not match EVIL, so no keyword evaluates it and it is one too many
    assert [(i.path, i.got) for i in issues] == [(CLIPPED, "an integer")]
    assert "does not evaluate" in issues[0].expected or "none the schema evaluates" in issues[0].expected
    # a name the pattern matches is evaluated (and its value checked), however long
    good = {"a" * 5000: 1, "k": "x"} if "dependentSchemas" in schema else {"a" * 5000: 1}
    assert quickly(lambda: t.validate(good)) == []


@pytest.mark.anyio
async def test_a_call_with_a_catastrophic_key_is_an_invalid_result_at_once() -> None:
    executor = ToolExecutorActor([make(UNEVALUATED[0])])
    with anyio.fail_after(10):
        started = time.monotonic()
        bad = await executor.execute_one(ToolCall("1", "hostile", {EVIL: 1}))
        good = await executor.execute_one(ToolCall("2", "hostile", {"a" * 40: 1}))
        assert time.monotonic() - started < 2.0
    assert bad.status is ToolStatus.invalid and "no such property" in bad.content
    assert good.content == "ran"


def test_typed_output_judges_a_catastrophic_key_at_once() -> None:
    """Typed output validates the model's answer with the same validator (output/target.py)."""

    class Answer(pydantic.BaseModel):
        counts: Annotated[dict[str, int], pydantic.WithJsonSchema({"type": "object", **_PATTERNED,
                                                                   "unevaluatedProperties": False})]

    member = OutputTarget(Answer).members[0]
    checked = quickly(lambda: member.check({"counts": {EVIL: 1}}))
    assert not checked.ok and [i.path for i in checked.issues] == [f"counts.{CLIPPED}"]
    assert quickly(lambda: member.check({"counts": {"aaa": 1}})).ok


# -- a subschema of another draft ---------------------------------------------------------------------------

DRAFT7 = "http://json-schema.org/draft-07/schema#"


@pytest.mark.parametrize(
    ("schema", "arguments", "path"),
    [
        # jsonschema enters "s" with its stock Draft7Validator (validator_for obeys the subschema's $schema)
        ({"type": "object", "properties": {"s": {"$schema": DRAFT7, "type": "string", "pattern": CATASTROPHIC}}},
         {"s": EVIL}, "s"),
        ({"type": "object", "properties": {"o": {"$schema": DRAFT7, **_PATTERNED, "additionalProperties": False}}},
         {"o": {EVIL: 1}}, f"o.{CLIPPED}"),
        # the 2020-12 $schema at the root of a schema that refers to itself: the stock 2020-12 class at "#"
        ({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
          "properties": {"s": {"type": "string", "pattern": CATASTROPHIC}, "next": {"$ref": "#"}}},
         {"next": {"s": EVIL}}, "next.s"),
    ],
)
def test_a_subschema_declaring_a_draft_is_still_checked_in_bounded_time(
    schema: dict[str, Any], arguments: dict[str, Any], path: str
) -> None:
    t = make(schema)
    assert [i.path for i in quickly(lambda: t.validate(arguments))] == [path]


def test_a_subschema_declaring_a_draft_keeps_the_exact_multiple_of() -> None:
    t = make({"type": "object", "properties": {"n": {"$schema": DRAFT7, "multipleOf": 0.5}}})
    assert t.validate({"n": 10**400}) == []  # the stock keyword raises OverflowError out of the executor


def test_a_const_holding_a_dialect_beside_a_ref_is_refused_when_the_tool_is_made() -> None:
    """A $ref into the const value would have it taken for a schema (of the draft it names)."""
    with pytest.raises(ValueError, match=r"tool 'hostile'.*const or enum value holds a \"\$schema\""):
        make({"type": "object", "const": {"$schema": DRAFT7, "pattern": CATASTROPHIC},
              "properties": {"x": {"$ref": "#/const"}}})
    # the same const without a $ref anywhere is plain data
    t = make({"type": "object", "properties": {"x": {"const": {"$schema": DRAFT7}}}})
    assert t.validate({"x": {"$schema": DRAFT7}}) == []


# -- lookarounds, backreferences ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        ("(?=a*a*a*a*b)", "a" * 3000),  # n^5 for re: minutes
        ("(?=a*a*a*a*b)", "a" * 3000 + "b"),
        ("(?!a*a*a*a*b)", "a" * 3000),
        (r"^(?=.*[A-Z])(?=.*\d).{8,}$", "x" * 20_000 + "A1"),
        (r"^(?=.*[A-Z])(?=.*\d).{8,}$", "x" * 20_000),
        ("(?=(a+)+$)", EVIL),  # exponential inside a lookahead: once refused, now linear
        ("(?<=ab)c", "ab" * 10_000 + "c"),
        ("(?<!ab)c", "ab" * 10_000 + "c"),
    ],
)
def test_lookarounds_are_matched_in_linear_time_with_re_s_verdict(pattern: str, text: str) -> None:
    expected = {  # what re says (worked out: re itself would take minutes on some)
        ("(?=a*a*a*a*b)", False), ("(?!a*a*a*a*b)", True), ("(?=(a+)+$)", False),
    }
    verdict = quickly(lambda: pattern_search(pattern)(text))
    if len(text) < 5000 and pattern != "(?=(a+)+$)" and "a*a*" not in pattern:
        assert verdict == (re.search(pattern, text) is not None)
    elif (pattern, False) in expected or (pattern, True) in expected:
        assert verdict == (text.endswith("b") if "?=a" in pattern else (pattern, True) in expected)
    else:
        assert verdict == (re.search(pattern, text[-50:]) is not None)  # what decides it is at the end


def test_a_string_too_long_for_a_backreference_pattern_is_an_issue_never_a_pass() -> None:
    limit = pattern_limit(BACKREF)
    assert limit is not None and limit >= 1
    miss, hit = "a" * (limit - 1) + "b", "aaba"  # within the limit: re's own verdicts, no and yes
    assert re.search(BACKREF, miss) is None and re.search(BACKREF, hit) is not None
    for schema, negated in (
        ({"type": "object", "properties": {"s": {"type": "string", "pattern": BACKREF}}}, False),
        ({"type": "object", "properties": {"s": {"not": {"pattern": BACKREF}}}}, True),  # an error there: a pass
        ({"type": "object", "properties": {"s": {"anyOf": [{"pattern": BACKREF}, {"maxLength": 1}]}}}, False),
    ):
        t = make(schema)
        issues = quickly(lambda t=t: t.validate({"s": "a" * 3000}))
        assert [(i.path, i.expected, i.got) for i in issues] == [
            ("s", f"a string of at most {limit} chars (the longest the pattern {BACKREF} is checked on)",
             "a string of 3000 chars")
        ]
        assert (t.validate({"s": miss}) == []) is negated
        assert (t.validate({"s": hit}) == []) is not negated


def test_a_key_too_long_for_a_backreference_pattern_property_is_an_issue_at_the_key() -> None:
    t = make({"type": "object", "patternProperties": {BACKREF: {"type": "integer"}}, "additionalProperties": False})
    issues = quickly(lambda: t.validate({"ok": 1, "b" * 100: 1}))
    assert [(i.path, i.got) for i in issues] == [("b" * 39 + "…", "a string of 100 chars")]


def test_a_pattern_with_a_backreference_that_can_backtrack_exponentially_is_refused() -> None:
    with pytest.raises(ValueError, match=r"tool 'hostile'.*can take time exponential"):
        make({"type": "object", "properties": {"s": {"type": "string", "pattern": r"((a+)+)\1"}}})


# -- the validator agrees with jsonschema on every regex keyword --------------------------------------------

_REGEXES = st.sampled_from(["^a", "b$", "^[ab]+$", "^(a|b)*$", "a(?=b)", "(?<!a)b", "^(?!aa)", r"(a)\1", ""])
_KEYS = st.sampled_from(["a", "b", "aa", "ab", "ba", "c", ""])
_LEAVES = st.sampled_from([True, False, {}, {"type": "integer"}, {"type": "string"}]) | _REGEXES.map(
    lambda p: {"type": "string", "pattern": p}
)


def _keyword_tree(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    def obj(patterns: dict[str, Any], unevaluated: Any, names: Any, extra: dict[str, Any]) -> dict[str, Any]:
        if list(patterns) == [""]:
            # The oracle's blind spot: jsonschema 4.26 joins the patterns with "|" for additionalProperties and skips
            # the match when the join is empty, so a lone "" (which matches every name) matches none there.
            # "(?:)" is the same regex, spelt so the join is not empty (the "" case: the test below).
            patterns = {"(?:)": patterns[""]}
        schema: dict[str, Any] = {"patternProperties": patterns, **extra}
        if unevaluated is not None:
            schema["unevaluatedProperties"] = unevaluated
        if names is not None:
            schema["propertyNames"] = {"pattern": names}
        return schema

    return st.builds(
        obj,
        st.dictionaries(_REGEXES, children, max_size=2),
        st.none() | children,
        st.none() | _REGEXES,
        st.fixed_dictionaries(
            {},
            optional={
                "allOf": st.lists(children, min_size=1, max_size=2),
                "anyOf": st.lists(children, min_size=1, max_size=2),
                "dependentSchemas": st.dictionaries(_KEYS, children, max_size=1),
                "if": children,
                "then": children,
                "else": children,
                "properties": st.dictionaries(_KEYS, children, max_size=1),
                "additionalProperties": children,
                "not": children,
            },
        ),
    )


_ARGUMENTS = st.recursive(
    st.sampled_from([1, "a", "ab", "b", None]),
    lambda inner: st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=5,
)


@settings(max_examples=500, deadline=None)
@given(st.recursive(_LEAVES, _keyword_tree, max_leaves=6), st.dictionaries(_KEYS, _ARGUMENTS, max_size=3))
def test_the_regex_keywords_say_what_jsonschema_says(schema: Any, arguments: dict[str, Any]) -> None:
    expected = jsonschema.Draft202012Validator(schema).is_valid(arguments)
    assert (ArgumentValidator({"$defs": {"x": schema}, "$ref": "#/$defs/x"}).issues(arguments) == []) is expected
    if isinstance(schema, dict):
        assert (ArgumentValidator(schema).issues(arguments) == []) is expected


def test_a_lone_empty_pattern_matches_every_name_as_the_spec_says() -> None:
    """``patternProperties: {"": ...}`` covers every name (an empty regex matches anywhere), so
    ``additionalProperties: false`` refuses none: what the validator does, where jsonschema 4.26 refuses them."""
    schema = {"type": "object", "patternProperties": {"": True}, "additionalProperties": False}
    assert ArgumentValidator(schema).issues({"a": 1}) == []
