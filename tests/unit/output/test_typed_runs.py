"""Typed results end to end on the scripted provider: every type family, every strategy, auto's choice per
model, the re-ask with the issues the model saw, exhaustion, ModelRetry, the constrained pick, and the
step re-issued with the next strategy when a skip_incapable chain skipped members for the forced choice.
Both backends."""

from __future__ import annotations

import dataclasses
import enum
from typing import Annotated, Any, Literal, TypedDict

import attrs
import pydantic
import pytest

from agentactors import (
    Agent,
    AllProvidersFailedError,
    InMemoryRecorder,
    LLMRequest,
    ModelRetry,
    NativeOutput,
    OutputContext,
    OutputValidationError,
    PromptedOutput,
    ProviderError,
    ScriptedProvider,
    ToolCall,
    ToolChoice,
    ToolOutput,
    UnsupportedToolChoiceError,
    tool,
    with_fallback,
)
from agentactors.events import OutputEvent, OutputInvalid, OutputStrategyChosen

pytestmark = pytest.mark.anyio


@dataclasses.dataclass
class Person:
    name: str
    age: int


class Movie(pydantic.BaseModel):
    """A film."""

    title: str
    year: int = pydantic.Field(ge=1888)

    @pydantic.field_validator("title")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the title must not be blank")
        return value


class City(TypedDict):
    name: str
    population: int


@attrs.define
class Point:
    x: float
    y: float


class Colour(enum.Enum):
    red = "red"
    green = "green"


@dataclasses.dataclass
class Cat:
    name: str
    lives: int


@dataclasses.dataclass
class Dog:
    name: str
    good: bool


def call(arguments: dict[str, Any], name: str = "final_result", call_id: str = "c1") -> ToolCall:
    return ToolCall(call_id, name, arguments)


def forced(provider: ScriptedProvider) -> list[str]:
    return [r.tool_choice.mode for r in provider.requests]


def output_events(recorder: InMemoryRecorder) -> list[Any]:
    return [e for e in recorder.events if isinstance(e, OutputEvent)]


# --- every type family, through the tool strategy (auto on a model that carries a forced choice) ------------


@pytest.mark.parametrize(
    ("output_type", "arguments", "expected"),
    [
        (Person, {"name": "Ada", "age": 36}, Person("Ada", 36)),
        (Movie, {"title": "Metropolis", "year": 1927}, Movie(title="Metropolis", year=1927)),
        (City, {"name": "Lisbon", "population": 545_000}, {"name": "Lisbon", "population": 545_000}),
        (Point, {"x": 1, "y": 2.5}, Point(1.0, 2.5)),
        (int, {"response": 42}, 42),
        (float, {"response": 2}, 2.0),
        (bool, {"response": True}, True),
        (list[int], {"response": [1, 2, 3]}, [1, 2, 3]),
        (dict[str, int], {"response": {"a": 1}}, {"a": 1}),
        (Literal["refund", "replace", "escalate"], {"response": "replace"}, "replace"),
        (Colour, {"response": "green"}, Colour.green),
        (int | None, {"response": None}, None),
        (list[Person], {"response": [{"name": "A", "age": 1}]}, [Person("A", 1)]),
    ],
)
async def test_every_type_family_comes_back_typed(output_type: Any, arguments: dict[str, Any], expected: Any) -> None:
    provider = ScriptedProvider([call(arguments)])
    result = await Agent(provider, output_type=output_type).run("go")
    assert result.ok and result.error is None
    assert result.output == expected
    assert type(result.output) is type(expected)
    (request,) = provider.requests
    assert [t.name for t in request.tools] == ["final_result"]
    assert request.tool_choice == ToolChoice.tool("final_result")
    assert request.tools[0].parameters["type"] == "object"


async def test_a_union_of_classes_offers_one_output_tool_per_member_named_after_it() -> None:
    provider = ScriptedProvider([call({"name": "Rex", "good": True}, name="final_result_Dog")])
    agent: Agent[Cat | Dog] = Agent(provider, output_type=Cat | Dog)  # type: ignore[arg-type]  # docs/output.md
    result = await agent.run("a pet")
    assert result.output == Dog("Rex", True)
    (request,) = provider.requests
    assert [t.name for t in request.tools] == ["final_result_Cat", "final_result_Dog"]
    assert request.tool_choice == ToolChoice.required()  # several output tools: the model picks one


async def test_str_stays_text_and_output_is_the_content() -> None:
    provider = ScriptedProvider(["plain words"])
    result = await Agent(provider).run("go")
    assert result.output == result.content == "plain words"
    assert provider.requests[0].tools == () and provider.requests[0].response_format is None


# --- strategies ----------------------------------------------------------------------------------------------


async def test_native_output_sends_the_response_format_and_parses_the_json_text() -> None:
    provider = ScriptedProvider(['{"name": "Ada", "age": 36}'])
    result = await Agent(provider, output_type=NativeOutput(Person, name="person")).run("who")
    assert result.output == Person("Ada", 36)
    (request,) = provider.requests
    fmt = request.response_format
    assert fmt is not None and (fmt.name, fmt.strict) == ("person", True)
    assert fmt.schema["properties"] == {"name": {"type": "string"}, "age": {"type": "integer"}}
    assert request.tools == ()


async def test_native_output_refused_before_sending_by_a_provider_that_cannot_carry_it() -> None:
    provider = ScriptedProvider(["unused"], carries_response_format=False)
    result = await Agent(provider, output_type=NativeOutput(Person)).run("who")
    assert isinstance(result.error, ProviderError) and result.error.kind.value == "request"
    output: Person | None = result.output  # None when the run did not end on an answer, though typed Person
    assert result.generation_failed and output is None
    assert provider.requests == []  # nothing was sent


async def test_prompted_output_puts_the_schema_in_the_system_prompt_and_reads_fenced_json() -> None:
    provider = ScriptedProvider(['Here it is:\n```json\n{"name": "Ada", "age": 36}\n```'])
    agent = Agent(provider, system="You are terse.", output_type=PromptedOutput(Person))
    result = await agent.run("who")
    assert result.output == Person("Ada", 36)
    system = provider.requests[0].messages[0]
    assert system.role == "system" and system.content.startswith("You are terse.")
    assert '"age":{"type":"integer"}' in system.content
    assert provider.requests[0].response_format is None and provider.requests[0].tools == ()


async def test_a_prompted_template_replaces_the_instruction() -> None:
    provider = ScriptedProvider(['{"response": 7}'])
    agent = Agent(provider, output_type=PromptedOutput(int, template="Reply as JSON per {schema}!"))
    assert (await agent.run("n")).output == 7
    assert provider.requests[0].messages[0].content.startswith("Reply as JSON per {")


async def test_explicit_tool_output_keeps_todays_rule_unsupported_before_anything_is_sent() -> None:
    provider = ScriptedProvider(["unused"], carries_forced_tool_choice=False)
    result = await Agent(provider, output_type=ToolOutput(Person)).run("who")
    assert isinstance(result.error, UnsupportedToolChoiceError)
    assert provider.requests == []


async def test_tool_output_beside_the_agents_tools_forces_required_on_every_step() -> None:
    @tool
    def lookup(name: str) -> str:
        """Look a person up."""
        return f"{name} is 36"

    provider = ScriptedProvider(
        [call({"name": "Ada"}, name="lookup"), call({"name": "Ada", "age": 36}, call_id="c2")]
    )
    result = await Agent(provider, tools=[lookup], output_type=Person).run("who")
    assert result.output == Person("Ada", 36)
    assert forced(provider) == ["required", "required"]  # not dropped after the first step
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "assistant", "tool"]


async def test_an_output_call_beside_other_calls_runs_them_first_and_keeps_their_results() -> None:
    ran: list[str] = []

    @tool
    def log_it(text: str) -> str:
        """Log a line."""
        ran.append(text)
        return "logged"

    provider = ScriptedProvider([[call({"text": "hi"}, name="log_it"), call({"name": "A", "age": 1}, call_id="c2")]])
    result = await Agent(provider, tools=[log_it], output_type=Person).run("go")
    assert result.output == Person("A", 1) and ran == ["hi"]
    tool_messages = [m for m in result.messages if m.role == "tool"]
    assert [(m.name, m.content) for m in tool_messages] == [
        ("log_it", "logged"), ("final_result", "Final result received.")]


# --- auto's choice, per model ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "strategy"),
    [
        ({}, "tool"),
        ({"carries_forced_tool_choice": False}, "native"),
        ({"carries_forced_tool_choice": False, "carries_response_format": False}, "prompted"),
        ({"rejects_forced_tool_choice": {"m1"}, "rejects_response_format": {"m1"}}, "prompted"),
    ],
)
async def test_auto_picks_per_model_and_records_why(options: dict[str, Any], strategy: str) -> None:
    answers = {"tool": call({"response": 5}), "native": '{"response": 5}', "prompted": "5"}
    provider = ScriptedProvider([answers[strategy]], model="m1", **options)
    recorder = InMemoryRecorder()
    result = await Agent(provider, output_type=int, recorders=[recorder]).run("n")
    assert result.output == 5
    (chosen,) = [e for e in recorder.events if isinstance(e, OutputStrategyChosen)]
    assert chosen.strategy == strategy and "m1" in chosen.reason


async def test_auto_asks_for_the_model_about_to_be_called() -> None:
    provider = ScriptedProvider(['{"response": 1}'], rejects_forced_tool_choice={"weak"})
    assert (await Agent(provider, model="weak", output_type=int).run("n")).output == 1
    assert provider.requests[0].response_format is not None and provider.requests[0].tools == ()


async def test_a_default_chain_whose_second_member_rejects_forced_choices_gets_a_non_forced_strategy_up_front() -> None:
    primary = ScriptedProvider(['{"response": 3}'], name="a")
    second = ScriptedProvider(["unused"], name="b", rejects_forced_tool_choice={"scripted-model"})
    recorder = InMemoryRecorder()
    result = await Agent(with_fallback(primary, second), output_type=int, recorders=[recorder]).run("n")
    assert result.output == 3
    assert [e.strategy for e in output_events(recorder)] == ["native"]
    assert forced(primary) == ["auto"] and second.requests == []


async def test_skip_incapable_with_the_primary_down_reissues_the_step_with_the_next_strategy() -> None:
    down = ProviderError("overloaded", provider="a", kind="transient", status=503)
    primary = ScriptedProvider([down, down], name="a")
    second = ScriptedProvider(['{"response": 3}'], name="b", rejects_forced_tool_choice={"scripted-model"})
    recorder = InMemoryRecorder()
    chain = with_fallback(primary, second, skip_incapable=True)
    result = await Agent(chain, output_type=int, recorders=[recorder]).run("n")
    assert result.output == 3 and result.ok
    # Zero requests with a forced choice reached the member that rejects it.
    assert [r.tool_choice.forced for r in second.requests] == [False]
    assert second.requests[0].response_format is not None
    assert forced(primary) == ["tool", "auto"]  # the forced step, then the same step re-issued
    types = [e.type for e in recorder.events if e.type.startswith(("output.", "fallback."))]
    assert types == ["output.strategy", "fallback.skipped", "fallback.exhausted", "output.strategy_degraded",
                     "fallback.moved"]
    degraded = next(e for e in recorder.events if e.type == "output.strategy_degraded")
    assert (degraded.from_strategy, degraded.strategy) == ("tool", "native")
    assert isinstance(degraded.error, AllProvidersFailedError) and degraded.error.skipped == ("b",)


async def test_every_member_skipped_degrades_too_never_a_forced_request_to_an_incapable_member() -> None:
    only = ScriptedProvider(["7"], name="b", rejects_forced_tool_choice={"scripted-model"},
                            carries_response_format=False)
    chain = with_fallback(only, skip_incapable=True)
    # Alone, a skip_incapable chain with no capable member says no to a forced choice: prompted up front.
    assert (await Agent(chain, output_type=int).run("n")).output == 7
    assert [r.tool_choice.forced for r in only.requests] == [False]


# --- validation, re-ask, exhaustion ------------------------------------------------------------------------------


async def test_an_invalid_answer_goes_back_with_every_issue_and_the_model_fixes_it() -> None:
    provider = ScriptedProvider([call({"name": 5}), call({"name": "Ada", "age": 36}, call_id="c2")])
    recorder = InMemoryRecorder()
    result = await Agent(provider, output_type=Person, recorders=[recorder]).run("who")
    assert result.output == Person("Ada", 36) and result.steps == 2
    seen = provider.requests[1].messages[-1]
    assert seen.role == "tool" and seen.is_error
    assert "- name: expected a string, got an integer" in seen.content
    assert "- age: expected integer (required), got nothing" in seen.content
    (invalid,) = [e for e in recorder.events if isinstance(e, OutputInvalid)]
    assert invalid.attempt == 1 and invalid.retries_left == 2
    assert invalid.issues == (
        "- name: expected a string, got an integer", "- age: expected integer (required), got nothing")


async def test_a_pydantic_validator_refusal_is_re_asked_with_its_message() -> None:
    provider = ScriptedProvider(
        [call({"title": " ", "year": 1800}), call({"title": "Nosferatu", "year": 1922}, call_id="c2")]
    )
    result = await Agent(provider, output_type=Movie).run("a film")
    assert result.output == Movie(title="Nosferatu", year=1922)
    feedback = provider.requests[1].messages[-1].content
    assert "year: expected a number ≥ 1888" in feedback


async def test_retries_run_out_into_an_output_validation_error_with_every_attempt_recorded() -> None:
    provider = ScriptedProvider(["no", "still no", "never"], carries_forced_tool_choice=False,
                                carries_response_format=False)
    recorder = InMemoryRecorder()
    result = await Agent(provider, output_type=int, output_retries=2, recorders=[recorder]).run("n")
    output: int | None = result.output  # None when the run did not end on an answer, though typed int
    assert output is None and not result.ok
    assert isinstance(result.error, OutputValidationError) and result.error.attempts == 3
    assert not result.generation_failed and result.steps == 3
    invalid = [e for e in recorder.events if isinstance(e, OutputInvalid)]
    assert [e.attempt for e in invalid] == [1, 2, 3]
    assert [e.retries_left for e in invalid] == [2, 1, 0]
    assert all(e.issues == ("- answer: the answer holds no JSON value",) for e in invalid)
    # Each re-ask told the model why, in a user message after its answer.
    assert [m.role for m in provider.requests[2].messages][-4:] == ["assistant", "user", "assistant", "user"]


async def test_output_retries_zero_ends_at_the_first_invalid_answer() -> None:
    provider = ScriptedProvider([call({"response": "x"})])
    result = await Agent(provider, output_type=int, output_retries=0).run("n")
    assert isinstance(result.error, OutputValidationError) and result.error.attempts == 1
    assert "- response: expected an integer, got a string" in result.error.issues


async def test_a_text_answer_under_the_tool_strategy_is_asked_to_call_the_tool() -> None:
    provider = ScriptedProvider(["It is 5.", call({"response": 5})])
    result = await Agent(provider, output_type=int).run("n")
    assert result.output == 5
    assert "calling 'final_result'" in provider.requests[1].messages[-1].content
    assert forced(provider) == ["tool", "tool"]


async def test_a_valid_json_text_answer_under_the_tool_strategy_is_taken_all_the_same() -> None:
    provider = ScriptedProvider(['{"name": "Ada", "age": 36}'])
    result = await Agent(provider, output_type=Person).run("who")
    assert result.output == Person("Ada", 36) and result.steps == 1


# --- the constrained pick ----------------------------------------------------------------------------------------


async def test_the_pick_sends_an_enum_and_re_asks_an_answer_outside_the_set_never_coerces_it() -> None:
    Pick = Literal["refund", "replace", "escalate"]
    provider = ScriptedProvider([call({"response": "Refund"}), call({"response": "refund"}, call_id="c2")])
    result = await Agent(provider, output_type=Pick).run("what now?")  # type: ignore[arg-type]
    assert result.output == "refund"
    schema = provider.requests[0].tools[0].parameters["properties"]["response"]
    assert schema == {"type": "string", "enum": ["refund", "replace", "escalate"]}
    assert 'expected one of "refund", "replace", "escalate", got a string that is not one of them' in (
        provider.requests[1].messages[-1].content)


async def test_an_enum_pick_on_a_model_that_rejects_forced_choices_degrades_to_another_strategy() -> None:
    provider = ScriptedProvider(['"purple"', '"red"'], carries_forced_tool_choice=False)
    result = await Agent(provider, output_type=Colour).run("colour?")
    assert result.output is Colour.red and result.steps == 2
    assert provider.requests[0].response_format is not None


# --- the output validator hook ----------------------------------------------------------------------------------


async def test_model_retry_from_the_validator_re_asks_and_its_value_is_kept() -> None:
    seen: list[OutputContext] = []

    async def check(value: Person, ctx: OutputContext) -> Person:
        seen.append(ctx)
        if value.age < 18:
            raise ModelRetry("the person must be an adult")
        return Person(value.name.upper(), value.age)

    provider = ScriptedProvider([call({"name": "Kid", "age": 9}), call({"name": "Ada", "age": 36}, call_id="c2")])
    result = await Agent(provider, output_type=Person, output_validator=check, name="hr").run("who", deps="db")
    assert result.output == Person("ADA", 36)
    assert "Final result refused: the person must be an adult" in provider.requests[1].messages[-1].content
    assert [(c.attempt, c.step, c.strategy, c.agent, c.deps) for c in seen] == [(0, 1, "tool", "hr", "db"),
                                                                               (1, 2, "tool", "hr", "db")]


async def test_a_sync_one_argument_validator_checks_a_plain_text_answer() -> None:
    def shout(value: str) -> str:
        if not value.isupper():
            raise ModelRetry("answer in capitals")
        return value

    provider = ScriptedProvider(["quiet", "LOUD"])
    result = await Agent(provider, output_validator=shout).run("say it")
    assert result.output == result.content == "LOUD" and result.steps == 2
    assert provider.requests[0].tools == ()  # a str answer: the request is unchanged


async def test_a_validator_whose_context_parameter_is_optional_still_gets_the_context() -> None:
    seen: list[object] = []

    def check(value: str, ctx: OutputContext | None = None) -> str:
        seen.append(ctx)
        return value

    def own_default(value: str, strict: bool = False) -> str:  # a parameter of its own: never given the context
        seen.append(strict)
        return value

    await Agent(ScriptedProvider(["hi"]), output_validator=check, name="a").run("x", deps="d")
    await Agent(ScriptedProvider(["hi"]), output_validator=own_default).run("x")
    assert isinstance(seen[0], OutputContext) and seen[0].deps == "d"
    assert seen[1] is False


async def test_a_tool_raising_model_retry_tells_the_model_the_message() -> None:
    @tool
    def book(day: str) -> str:
        """Book a day."""
        raise ModelRetry("that day is full; pick another")

    provider = ScriptedProvider([call({"day": "mon"}, name="book"), "done"])
    result = await Agent(provider, tools=[book]).run("book")
    assert result.messages[2].content == "Retry: that day is full; pick another"


# --- configuration -----------------------------------------------------------------------------------------------


def test_configuration_errors_are_raised_when_the_agent_is_built() -> None:
    provider = ScriptedProvider(["x"])

    @tool
    def final_result(x: int) -> int:
        """Clash."""
        return x

    with pytest.raises(ValueError, match="output tool name 'final_result' is also one of the agent's tools"):
        Agent(provider, tools=[final_result], output_type=int)
    with pytest.raises(ValueError, match="output_retries"):
        Agent(provider, output_type=int, output_retries=-1)
    with pytest.raises(TypeError, match="cannot describe"):
        Agent(provider, output_type=ToolOutput(type))
    with pytest.raises(TypeError, match="output_validator"):
        Agent(provider, output_type=int, output_validator=42)  # type: ignore[arg-type]


async def test_an_annotated_field_constraint_in_the_output_is_enforced() -> None:
    @dataclasses.dataclass
    class Rating:
        stars: Annotated[int, pydantic.Field(ge=1, le=5)]

    provider = ScriptedProvider([call({"stars": 9}), call({"stars": 4}, call_id="c2")])
    result = await Agent(provider, output_type=Rating).run("rate")
    assert result.output == Rating(4)
    assert "stars: expected a number ≤ 5" in provider.requests[1].messages[-1].content


async def test_strict_modes_null_for_an_optional_field_reads_as_absent() -> None:
    @dataclasses.dataclass
    class Note:
        text: str
        tag: str = "none"

    provider = ScriptedProvider(['{"text": "hi", "tag": null}'], carries_forced_tool_choice=False)
    assert (await Agent(provider, output_type=Note).run("n")).output == Note("hi")


async def test_requests_with_an_output_are_still_exactly_what_llmrequest_builds() -> None:
    provider = ScriptedProvider([call({"response": 1})])
    await Agent(provider, output_type=int, model="m").run("n")
    (request,) = provider.requests
    assert request == LLMRequest(request.messages, model="m", tools=request.tools, tool_choice=request.tool_choice)
