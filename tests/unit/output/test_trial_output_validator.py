"""What an output validator's answer does to a run, found by a trial of ``docs/output.md``.  Both backends.

* A validator that returns ``None`` — one written to check and raise, whose author forgot ``return value`` — made
  the run ``ok`` with ``output=None`` and no error: the value the model gave, validated, silently dropped.  The docs
  say the validator returns the value to keep; ``None`` where the output type cannot hold it is the validator's bug,
  and leaves the run as its exception (as any exception of the validator's other than ``ModelRetry`` does).  Where
  the type holds ``None`` (``int | None``), a validator may still correct the answer to it.
* A ``ModelRetry`` from the validator of a plain ``str`` agent told the model to answer "with the corrected JSON":
  its answer is text, and no JSON was ever asked for.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from agentactors import Agent, ModelRetry, NativeOutput, ScriptedProvider, ToolCall

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


@dataclasses.dataclass
class Total:
    amount: int


def checks_only(value: Any) -> None:  # the bug: refuses a bad value, forgets to return a good one
    if getattr(value, "amount", 0) < 0:
        raise ModelRetry("the amount cannot be negative")


@pytest.mark.parametrize(
    ("output_type", "answer"),
    [
        (Total, ToolCall("c1", "final_result", {"amount": 3})),
        (NativeOutput(Total), '{"amount": 3}'),
        (int, ToolCall("c1", "final_result", {"response": 3})),
        (str, "three"),
    ],
)
async def test_a_validator_returning_none_for_a_type_without_none_is_the_runs_error(
    output_type: Any, answer: Any
) -> None:
    agent = Agent(ScriptedProvider([answer]), output_type=output_type, output_validator=checks_only)
    with pytest.raises(TypeError, match="output_validator returned None") as caught:
        await agent.run("how much?")
    assert "return the value" in str(caught.value)


async def test_a_validator_may_correct_an_optional_answer_to_none() -> None:
    agent = Agent(
        ScriptedProvider([ToolCall("c1", "final_result", {"response": 3})]),
        output_type=int | None,  # type: ignore[arg-type]
        output_validator=lambda value: None,
    )
    result = await agent.run("how much?")
    assert result.error is None and result.output is None


async def test_a_validator_returning_the_value_keeps_it() -> None:
    agent = Agent(ScriptedProvider(['{"amount": 3}']), output_type=NativeOutput(Total), output_validator=lambda v: v)
    result = await agent.run("how much?")
    assert result.output == Total(3)


async def test_a_refused_text_answer_is_not_asked_for_json() -> None:
    def upper(value: str) -> str:
        if not value.isupper():
            raise ModelRetry("answer in capitals")
        return value

    provider = ScriptedProvider(["hello", "HELLO"])
    result = await Agent(provider, output_validator=upper).run("greet")
    assert result.output == "HELLO"
    told = provider.requests[1].messages[-1]
    assert told.role == "user" and "answer in capitals" in told.content
    assert "JSON" not in told.content, told.content


async def test_a_refused_json_answer_is_still_asked_for_its_json() -> None:
    def positive(value: Total) -> Total:
        if value.amount <= 0:
            raise ModelRetry("the amount must be positive")
        return value

    provider = ScriptedProvider(['{"amount": 0}', '{"amount": 2}'])
    result = await Agent(provider, output_type=NativeOutput(Total), output_validator=positive).run("how much?")
    assert result.output == Total(2)
    assert "corrected JSON" in provider.requests[1].messages[-1].content
