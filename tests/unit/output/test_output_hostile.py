"""Typed output against hostile or unlucky answers: each one refused with issues the model can act on, or
taken whole — never a raw exception out of the run, never a constraint bypassed, never a run that streaming
alone breaks.  Both backends.

* NaN and infinities are not JSON numbers (Python's parser reads them anyway, and ``1e999`` overflows to
  one): a comparison with NaN is always false, so ``jsonschema``'s ``minimum``/``maximum`` let it through;
* a partial value is only a prefix: the output type's own code (a pydantic validator, ``__post_init__``)
  may raise on it what it never raises on the final answer;
* a set's items must be hashable: ``set[Any]`` given lists fails in the conversion after the schema
  passed (an issue), and a set of a type never hashable (a ``TypedDict``, a mutable dataclass) is refused
  when the agent is built;
* OpenAI's strict mode makes every optional property required and nullable, in nested objects too (list
  items, an optional sub-object): the model answers ``null`` there, which means "absent";
* a long list of wrong items has as many issues: the model reads ten, and so do the event and the error;
* arguments that are JSON but not an object, or past the depth policy, are told as such;
* a lone surrogate (``"\\ud800"``) is half a character: the caller's first ``encode`` would fail on it;
* a JSON answer cut off at ``max_tokens`` is told so (asked again the same way, it is cut again);
* prose around the JSON: a code fence before it, braces after it; two values are ambiguous;
* a union member's tool name comes from a class name, which may be long or not ASCII.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Annotated, Any, TypedDict

import pydantic
import pytest

from agentactors import (
    Agent,
    InMemoryRecorder,
    LLMResponse,
    NativeOutput,
    OutputValidationError,
    PromptedOutput,
    ScriptedProvider,
    StopReason,
    ToolCall,
)
from agentactors.events import OutputInvalid
from agentactors.output.config import OutputConfig
from agentactors.output.target import OutputTarget, drop_null_optionals
from tests.support.trickle import Trickle

pytestmark = pytest.mark.anyio


@dataclasses.dataclass
class Probability:
    p: Annotated[float, pydantic.Field(ge=0, le=1)]


def call(arguments: dict[str, Any], call_id: str = "c1") -> ToolCall:
    return ToolCall(call_id, "final_result", arguments)


def feedback(provider: ScriptedProvider, request: int = 1) -> str:
    content = provider.requests[request].messages[-1].content
    assert isinstance(content, str)
    return content


# --- NaN and infinities -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
async def test_a_non_finite_number_in_an_output_call_is_refused_not_passed_through_the_bounds(bad: float) -> None:
    provider = ScriptedProvider([call({"p": bad}), call({"p": 0.25}, call_id="c2")])
    result = await Agent(provider, output_type=Probability).run("p?")
    assert result.output == Probability(0.25) and result.steps == 2
    assert "- p: expected a finite number, got" in feedback(provider)


@pytest.mark.parametrize("text", ['{"p": NaN}', '{"p": Infinity}', '{"p": -Infinity}', '{"p": 1e999}'])
async def test_a_non_finite_number_in_a_json_text_answer_is_refused(text: str) -> None:
    provider = ScriptedProvider([text, '{"p": 1}'], carries_forced_tool_choice=False)
    result = await Agent(provider, output_type=Probability).run("p?")
    assert result.output == Probability(1.0) and result.steps == 2
    assert "- p: expected a finite number, got" in feedback(provider)


async def test_a_bare_float_output_refuses_nan_deep_in_a_list_too() -> None:
    provider = ScriptedProvider([call({"response": [[1.0, math.nan]]})])
    result = await Agent(provider, output_type=list[list[float]], output_retries=0).run("n")
    assert isinstance(result.error, OutputValidationError)
    assert result.error.issues == ("- response[0][1]: expected a finite number, got a NaN",)


# --- lone surrogates: JSON's \\u escapes can spell half a character, which no UTF-8 text can hold -------------


@pytest.mark.parametrize(
    ("answer", "where"),
    [
        (call({"text": "bad \ud800 half"}), "text"),
        ('{"text": "bad \\udc00 half"}', "text"),
        (call({"text": "ok", "tag": "\udfff"}), "tag"),
    ],
)
async def test_a_lone_surrogate_in_a_typed_string_is_refused_before_it_reaches_the_caller(
    answer: Any, where: str
) -> None:
    forced = isinstance(answer, ToolCall)
    second: Any = call({"text": "ok \U0001f600"}, call_id="c2") if forced else '{"text": "ok \\ud83d\\ude00"}'
    provider = ScriptedProvider([answer, second], carries_forced_tool_choice=forced)
    result = await Agent(provider, output_type=Note).run("n")
    assert result.output is not None and result.output.text == "ok \U0001f600"  # a pair of escapes is one character
    assert result.output.text.encode("utf-8") and result.steps == 2
    assert f"- {where}: expected a string of whole Unicode characters, got a string with a lone surrogate" in (
        feedback(provider)
    )


async def test_a_lone_surrogate_in_a_mapping_key_is_refused_too() -> None:
    provider = ScriptedProvider([call({"response": {"k\ud800": 1}}), call({"response": {"k": 1}}, call_id="c2")])
    result = await Agent(provider, output_type=dict[str, int]).run("n")
    assert result.output == {"k": 1} and result.steps == 2
    told = feedback(provider)
    assert "- response: expected keys of whole Unicode characters, got a key with a lone surrogate" in told
    told.encode("utf-8")  # the feedback names the key's place, never the half character itself


# --- partial values: the type's own code on a prefix -------------------------------------------------------------


class Span(pydantic.BaseModel):
    span: str

    @pydantic.model_validator(mode="after")
    def _has_both_ends(self) -> Span:
        self.span.split("-")[1]  # an IndexError on a prefix like "10": not a ValueError pydantic would wrap
        return self


@dataclasses.dataclass
class Firsts:
    items: list[int]

    def __post_init__(self) -> None:
        self.first = {"head": self.items[0]}["head"] if self.items else None
        if self.items and len(self.items) > 1 and self.items[-1] == 0:
            raise KeyError("a zero is never the last item")  # only a prefix ends on it: "[3, 0" of "[3, 0, 4]"


@pytest.mark.parametrize(
    ("output_type", "arguments", "expected"),
    [
        (Span, {"span": "10-20"}, Span(span="10-20")),
        (Firsts, {"items": [3, 0, 4]}, Firsts([3, 0, 4])),
    ],
)
async def test_a_type_whose_own_code_raises_on_a_prefix_streams_to_the_same_result_as_a_plain_run(
    output_type: Any, arguments: dict[str, Any], expected: Any
) -> None:
    plain = await Agent(Trickle([call(arguments)], step=2), output_type=output_type).run("go")
    assert plain.ok and plain.output == expected
    async with Agent(Trickle([call(arguments)], step=2), output_type=output_type).stream("go") as run:
        values = [v async for v in run.partial_output()]
    assert run.result.ok and run.result.error is None
    assert run.result.output == expected == values[-1]


async def test_a_type_whose_own_code_raises_on_a_prefix_of_json_text_streams_too() -> None:
    provider = Trickle([json.dumps({"span": "10-20"})], step=2)
    provider.carries_forced_tool_choice = False  # native: the answer is text
    async with Agent(provider, output_type=Span).stream("go") as run:
        values = [v async for v in run.partial_output()]
    assert run.result.output == Span(span="10-20") == values[-1]


@dataclasses.dataclass(eq=False)
class Keyed:
    key: str
    note: str = ""

    def __eq__(self, other: object) -> bool:
        return bool(self.key == other.key)  # type: ignore[attr-defined]  # no isinstance check: any other raises

    __hash__ = None  # type: ignore[assignment]


async def test_an_output_type_whose_eq_raises_on_other_objects_streams_its_partials_and_its_result() -> None:
    async with Agent(Trickle([call({"key": "k1", "note": "a note"})], step=2), output_type=Keyed).stream("go") as run:
        values = [v async for v in run.partial_output()]
    assert run.result.error is None and isinstance(run.result.output, Keyed)
    assert (run.result.output.key, run.result.output.note) == ("k1", "a note")
    assert len(values) >= 2 and all(isinstance(v, Keyed) for v in values)


# --- sets of items that cannot be hashed -------------------------------------------------------------------------


class Tagged(TypedDict):
    tag: str


async def test_unhashable_items_for_a_set_are_an_issue_the_model_reads_not_a_type_error_out_of_run() -> None:
    provider = ScriptedProvider([call({"response": [[1], [2]]}), call({"response": [1, 2]}, call_id="c2")])
    result = await Agent(provider, output_type=set[Any]).run("n")
    assert result.output == {1, 2} and result.steps == 2
    assert "- response: expected a value that converts into set[Any], got" in feedback(provider)


async def test_objects_for_a_set_of_any_end_in_the_output_validation_error_never_raise() -> None:
    provider = ScriptedProvider([call({"response": [{"tag": "a"}]})])
    result = await Agent(provider, output_type=set[Any], output_retries=0).run("n")
    output: set[Any] | None = result.output  # None when the run did not end on an answer, though typed
    assert output is None and isinstance(result.error, OutputValidationError)
    assert "unhashable" in result.error.issues[0]


async def test_unhashable_set_items_in_a_json_text_answer_are_an_issue_too() -> None:
    provider = ScriptedProvider(['{"response": [{"a": 1}]}', '{"response": ["a"]}'], carries_forced_tool_choice=False)
    result = await Agent(provider, output_type=frozenset[Any]).run("n")
    assert result.output == frozenset({"a"})


# --- strict mode's nulls, nested ----------------------------------------------------------------------------------


@dataclasses.dataclass
class Note:
    text: str
    tag: str = ""


@dataclasses.dataclass
class Box:
    notes: list[Note]
    main: Note | None = None
    pairs: tuple[Note, Note] | None = None


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"notes": [{"text": "a", "tag": None}], "main": None, "pairs": None}, Box([Note("a")])),
        ({"notes": [], "main": {"text": "m", "tag": None}, "pairs": None}, Box([], Note("m"))),
        (
            {"notes": [], "main": None, "pairs": [{"text": "x", "tag": None}, {"text": "y", "tag": "t"}]},
            Box([], None, (Note("x"), Note("y", "t"))),
        ),
    ],
)
async def test_strict_modes_null_for_a_nested_optional_field_reads_as_absent(
    arguments: dict[str, Any], expected: Box
) -> None:
    for answer in (call(arguments), json.dumps(arguments)):
        provider = ScriptedProvider([answer], carries_forced_tool_choice=isinstance(answer, ToolCall))
        result = await Agent(provider, output_type=Box, output_retries=0).run("box")
        assert result.error is None and result.output == expected


def test_a_nested_null_stays_where_the_schema_takes_it_or_requires_the_field() -> None:
    @dataclasses.dataclass
    class Slot:
        at: str | None
        label: str = ""

    schema = OutputTarget(list[Slot]).schema
    value = {"response": [{"at": None, "label": None}, {"at": None}]}
    assert drop_null_optionals(value, schema) == {"response": [{"at": None}, {"at": None}]}
    # Not a list, not an object, or more items than the schema names: the value is kept as it came.
    assert drop_null_optionals({"response": None}, schema) == {"response": None}
    assert drop_null_optionals([None, 1], {"prefixItems": [{"type": "string"}]}) == [None, 1]


# --- many issues: the model reads ten, and so do the event and the error -----------------------------------------


async def test_thousands_of_issues_are_capped_in_the_event_and_the_error_as_in_the_feedback() -> None:
    recorder = InMemoryRecorder()
    provider = ScriptedProvider([call({"response": ["x"] * 5_000})])
    result = await Agent(provider, output_type=list[int], output_retries=0, recorders=[recorder]).run("n")
    assert isinstance(result.error, OutputValidationError)
    (invalid,) = [e for e in recorder.events if isinstance(e, OutputInvalid)]
    assert len(invalid.issues) == 11 and invalid.issues[-1] == "- ... and 4990 more issues"
    assert result.error.issues == invalid.issues
    assert invalid.issues[0] == "- response[0]: expected an integer, got a string"


async def test_an_issue_line_from_a_validator_is_cut_short_for_the_model() -> None:
    class Loud(pydantic.BaseModel):
        name: str

        @pydantic.field_validator("name")
        @classmethod
        def _short(cls, value: str) -> str:
            if len(value) > 10:
                raise ValueError(f"too long: {value}")  # the validator echoes the value, all 200,000 characters
            return value

    provider = ScriptedProvider([call({"name": "n" * 200_000}), call({"name": "ok"}, call_id="c2")])
    result = await Agent(provider, output_type=Loud).run("n")
    assert result.output == Loud(name="ok")
    text = feedback(provider)
    assert "too long" in text and len(text) < 2_000


# --- arguments that are not an object ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "told"),
    [
        ("[1, 2]", "an array where an object was expected"),
        ('"hello"', "a string where an object was expected"),
        ("[" * 100 + "]" * 100, "nests deeper than 64 levels"),
        ('{"name": "A', "does not parse"),
    ],
)
async def test_output_arguments_that_are_not_an_object_say_what_they_are(raw: str, told: str) -> None:
    bad = ToolCall.from_raw("c1", "final_result", raw)
    provider = ScriptedProvider([bad, call({"text": "ok"}, call_id="c2")])
    result = await Agent(provider, output_type=Note).run("n")
    assert result.output == Note("ok")
    assert told in feedback(provider)


# --- a JSON text answer cut off at the token limit ---------------------------------------------------------------


async def test_a_json_answer_cut_off_at_max_tokens_is_told_so_not_just_that_it_does_not_parse() -> None:
    cut = LLMResponse('{"text": "a very long note that goes on and', stop_reason=StopReason.max_tokens)
    recorder = InMemoryRecorder()
    provider = ScriptedProvider([cut, '{"text": "short"}'], carries_forced_tool_choice=False)
    result = await Agent(provider, output_type=Note, recorders=[recorder]).run("n")
    assert result.output == Note("short")
    told = feedback(provider)
    assert "cut off" in told and "max_tokens" in told
    (invalid,) = [e for e in recorder.events if isinstance(e, OutputInvalid)]
    assert "cut off" in invalid.issues[0]
    # A JSON answer that ended just at the limit is whole: taken.
    whole = LLMResponse('{"text": "just fits"}', stop_reason=StopReason.max_tokens)
    provider = ScriptedProvider([whole], carries_forced_tool_choice=False)
    assert (await Agent(provider, output_type=Note).run("n")).output == Note("just fits")


# --- where the JSON is in a text answer ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        'Like this:\n```python\nprint("x")\n```\nThe answer:\n```json\n{"text": "hi"}\n```',
        '{"text": "hi"}\n\nNote: fields are written {like this}.',
        'Sure: {"text": "hi"} (a set {x} is not an answer)',
        '```\n{"text": "hi"}\n```\n```json\n{"text": "other"}\n```',
        'My answer: {"text": "hi"} as the guide says [1].',
    ],
)
async def test_the_json_value_is_found_past_a_code_fence_or_before_prose_with_braces(text: str) -> None:
    provider = ScriptedProvider([text], carries_forced_tool_choice=False, carries_response_format=False)
    result = await Agent(provider, output_type=Note, output_retries=0).run("n")
    assert result.error is None and result.output == Note("hi")


@dataclasses.dataclass
class Mutable:
    name: str


@pytest.mark.parametrize(
    "output_type", [set[Mutable], frozenset[Tagged], list[set[list[int]]], dict[str, set[dict[str, int]]]]
)
def test_a_set_of_a_type_that_is_never_hashable_is_refused_when_the_agent_is_built(output_type: Any) -> None:
    with pytest.raises(TypeError, match="hashable"):
        Agent(ScriptedProvider(["unused"]), output_type=output_type)


async def test_two_json_values_among_prose_are_refused_never_the_first_taken_for_the_answer() -> None:
    text = 'The format is {"text": "..."}; my answer: {"text": "hi"}'
    provider = ScriptedProvider([text, '{"text": "hi"}'], carries_forced_tool_choice=False,
                                carries_response_format=False)
    result = await Agent(provider, output_type=Note).run("n")
    assert result.output == Note("hi") and result.steps == 2
    assert "more than one JSON value" in feedback(provider)


# --- a union member's tool name, from a class name no tool name can hold -----------------------------------------


@dataclasses.dataclass
class CustomerSupportTicketClassificationResultWithAllTheDetails:
    category: str


@dataclasses.dataclass
class Résumé:
    summary: str


async def test_union_members_with_long_or_non_ascii_class_names_get_valid_distinct_tool_names() -> None:
    output_type: Any = CustomerSupportTicketClassificationResultWithAllTheDetails | Résumé | Note
    config = OutputConfig.build(output_type, retries=0, validator=None)
    assert config is not None
    names = [spec.name for spec in config.tool_specs]
    assert len(set(names)) == 3 and all(len(n) <= 64 and n.isascii() for n in names)
    assert names[2] == "final_result_Note"  # a name that fits is kept as it was
    for name, arguments, expected in (
        (names[0], {"category": "billing"}, CustomerSupportTicketClassificationResultWithAllTheDetails("billing")),
        (names[1], {"summary": "s"}, Résumé("s")),
    ):
        provider = ScriptedProvider([ToolCall("c1", name, arguments)])
        result = await Agent(provider, output_type=output_type).run("n")
        assert result.output == expected


# --- a broken JSON answer is never replaced by an object nested inside it -----------------------------------------


class Node(pydantic.BaseModel):
    label: str
    children: list[dict[str, str]] = []


class Reply(pydantic.BaseModel):
    answer: str
    quoted: dict[str, str] | None = None


@pytest.mark.parametrize(
    ("output_type", "answer", "then", "expected"),
    [
        # Cut at max_tokens inside the outer object: its first child validates as a Node on its own.
        (
            NativeOutput(Node),
            LLMResponse('{"label": "root", "children": [{"label": "leaf"}, {"label": "le',
                        stop_reason=StopReason.max_tokens),
            '{"label": "root"}',
            Node(label="root"),
        ),
        (
            PromptedOutput(Node),
            LLMResponse('{"label": "root", "children": [{"label": "leaf"}, {"label": "le',
                        stop_reason=StopReason.max_tokens),
            '{"label": "root"}',
            Node(label="root"),
        ),
        # A missing comma: the quoted object inside says the opposite of the answer.
        (
            NativeOutput(Reply),
            '{"answer": "We will refund you." "quoted": {"answer": "No refunds, ever."}}',
            '{"answer": "We will refund you."}',
            Reply(answer="We will refund you."),
        ),
        # A mapping cut off: any inner object of ints is a dict[str, int].
        (
            NativeOutput(dict[str, int]),
            LLMResponse('{"response": {"totals": {"a": 1}, "b": 2, "c', stop_reason=StopReason.max_tokens),
            '{"response": {"b": 2}}',
            {"b": 2},
        ),
    ],
    ids=["native-cut", "prompted-cut", "native-missing-comma", "native-cut-mapping"],
)
async def test_an_object_nested_in_a_broken_answer_is_never_taken_for_the_answer(
    output_type: Any, answer: Any, then: str, expected: Any
) -> None:
    provider = ScriptedProvider([answer, then], carries_forced_tool_choice=False)
    result = await Agent(provider, output_type=output_type, output_retries=1).run("q")
    assert result.steps == 2 and result.output == expected


async def test_a_cut_off_answer_with_json_among_prose_is_told_it_was_cut_off() -> None:
    cut = LLMResponse('Here it is: {"text": "hi"} and then I went on to say', stop_reason=StopReason.max_tokens)
    provider = ScriptedProvider([cut, '{"text": "hi"}'], carries_forced_tool_choice=False)
    result = await Agent(provider, output_type=Note).run("n")
    assert result.output == Note("hi") and result.steps == 2
    assert "cut off" in feedback(provider)
    # A whole fenced answer that reached the limit exactly is taken.
    fenced = LLMResponse('```json\n{"text": "fits"}\n```', stop_reason=StopReason.max_tokens)
    provider = ScriptedProvider([fenced], carries_forced_tool_choice=False)
    assert (await Agent(provider, output_type=Note).run("n")).output == Note("fits")


@pytest.mark.parametrize("prose", ["Fields look {like this}. ", "A {set {of} sets} and [a, list]. ", ""])
async def test_braces_of_prose_that_close_before_the_json_still_let_it_be_found(prose: str) -> None:
    provider = ScriptedProvider([prose + '{"text": "hi"}'], carries_forced_tool_choice=False,
                                carries_response_format=False)
    result = await Agent(provider, output_type=Note, output_retries=0).run("n")
    assert result.error is None and result.output == Note("hi")


# --- a key named twice in a text answer ---------------------------------------------------------------------------


@pytest.mark.parametrize("output_type", [Note, NativeOutput(Note), PromptedOutput(Note)])
async def test_a_key_named_twice_in_a_json_text_answer_is_refused_as_in_an_output_call(output_type: Any) -> None:
    provider = ScriptedProvider(['Answer: {"text": "a", "text": "b"}', '{"text": "c"}'],
                                carries_forced_tool_choice=False)
    result = await Agent(provider, output_type=output_type).run("n")
    assert result.output == Note("c") and result.steps == 2
    assert "'text'" in feedback(provider)
    provider = ScriptedProvider(['{"text": "a", "text": "b"}', '{"text": "c"}'], carries_forced_tool_choice=False)
    result = await Agent(provider, output_type=output_type).run("n")
    assert result.output == Note("c") and result.steps == 2
