"""How a run reads its model's stop reason (``LLMResponse.stop_reason``): a content filter, a malformed
answer, an answer cut at ``max_tokens`` and a paused server-tool turn each end (or go on) visibly — never as
a silent think-only loop or a clean success with nothing saying why.

Every test runs on asyncio and trio (the repo's conftest).
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from agentactors import Agent
from agentactors.errors import ErrorKind, MalformedResponseError, ProviderError
from agentactors.messages import LLMResponse, StopReason
from agentactors.providers.scripted import ScriptedProvider

pytestmark = pytest.mark.anyio


def _reply(
    content: str = "", stop: StopReason = StopReason.end_turn, raw: str | None = None, data: Any = None
) -> LLMResponse:
    return LLMResponse(content=content, stop_reason=stop, raw_stop_reason=raw, provider_data=data)


@attrs.frozen
class City:
    city: str


@pytest.mark.parametrize("typed", [False, True], ids=["text", "typed"])
@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
async def test_an_empty_content_filter_stop_ends_the_run_at_once_with_a_content_policy_error(
    typed: bool, stream: bool
) -> None:
    provider = ScriptedProvider([_reply(stop=StopReason.content_filter, raw="SAFETY")] * 5)
    agent: Agent[Any] = Agent(provider, name="a", output_type=City if typed else str)
    if stream:
        async with agent.stream("hi") as run:
            async for _ in run:
                pass
        result = await run.wait()
    else:
        result = await agent.run("hi")
    assert provider.calls == 1  # the same request is not sent again
    assert result.generation_failed and not result.ok and result.content == ""
    assert isinstance(result.error, ProviderError) and result.error.kind is ErrorKind.content_policy
    assert "SAFETY" in str(result.error)
    assert result.stop_reason is StopReason.content_filter
    with pytest.raises(ProviderError):
        result.raise_for_error()


@pytest.mark.parametrize("typed", [False, True], ids=["text", "typed"])
async def test_an_empty_other_stop_is_asked_once_more_then_ends_saying_why(typed: bool) -> None:
    provider = ScriptedProvider([_reply(stop=StopReason.other, raw="MALFORMED_FUNCTION_CALL")] * 5)
    agent: Agent[Any] = Agent(provider, name="a", output_type=City if typed else str)
    result = await agent.run("hi")
    assert provider.calls == 2
    assert result.bounded and not result.ok
    assert isinstance(result.error, MalformedResponseError)
    assert "MALFORMED_FUNCTION_CALL" in str(result.error)
    with pytest.raises(MalformedResponseError):
        result.raise_for_error()


async def test_an_empty_other_stop_then_an_answer_is_the_answer() -> None:
    provider = ScriptedProvider([_reply(stop=StopReason.other, raw="MALFORMED_FUNCTION_CALL"), "fine"])
    result = await Agent(provider, name="a").run("hi")
    assert result.ok and result.content == "fine" and result.error is None
    assert result.stop_reason is StopReason.end_turn


@pytest.mark.parametrize(
    ("stop", "raw"),
    [(StopReason.max_tokens, "max_tokens"), (StopReason.content_filter, "content_filter"),
     (StopReason.end_turn, "stop"), (StopReason.stop_sequence, "stop_sequence")],
)
async def test_the_result_says_why_the_last_answer_stopped(stop: StopReason, raw: str) -> None:
    provider = ScriptedProvider([_reply("The first three steps are 1) open the", stop=stop, raw=raw)])
    result = await Agent(provider, name="a").run("hi")
    assert result.ok and result.content == "The first three steps are 1) open the"  # ok is unchanged
    assert result.stop_reason is stop


async def test_a_typed_answer_cut_at_max_tokens_that_validates_says_so() -> None:
    provider = ScriptedProvider([_reply('{"city": "Paris"}', stop=StopReason.max_tokens)])
    result = await Agent(provider, name="a", output_type=City).run("hi")
    assert result.ok and result.output == City("Paris")
    assert result.stop_reason is StopReason.max_tokens


async def test_no_answer_no_stop_reason() -> None:
    provider = ScriptedProvider([RuntimeError("down")])
    result = await Agent(provider, name="a").run("hi")
    assert result.generation_failed and result.stop_reason is None


async def test_a_stored_result_keeps_its_stop_reason_and_an_old_record_loads() -> None:
    from agentactors.sessions.codec import run_result_from_json, run_result_to_json

    provider = ScriptedProvider([_reply("cut", stop=StopReason.max_tokens)])
    result = await Agent(provider, name="a").run("hi")
    doc = run_result_to_json(result)
    assert run_result_from_json(doc).stop_reason is StopReason.max_tokens
    doc.pop("stop_reason", None)
    assert run_result_from_json(doc).stop_reason is None


ANTHROPIC_SERVER_BLOCKS = {
    "anthropic": {
        "blocks": [
            {"type": "server_tool_use", "id": "srv1", "name": "web_search", "input": {"query": "x"}},
            {"type": "web_search_tool_result", "tool_use_id": "srv1", "content": []},
        ]
    }
}


@pytest.mark.parametrize("typed", [False, True], ids=["text", "typed"])
@pytest.mark.parametrize("text", ["I'll search the web for that.", ""], ids=["with-text", "no-text"])
async def test_a_paused_turn_is_sent_back_and_the_run_goes_on(typed: bool, text: str) -> None:
    final = '{"city": "Paris"}' if typed else "Paris"
    provider = ScriptedProvider(
        [_reply(text, stop=StopReason.pause_turn, raw="pause_turn", data=ANTHROPIC_SERVER_BLOCKS), final]
    )
    agent: Agent[Any] = Agent(provider, name="a", output_type=City if typed else str)
    result = await agent.run("hi")
    assert result.ok and result.steps == 2 and provider.calls == 2
    assert result.output == (City("Paris") if typed else "Paris")
    assert result.stop_reason is StopReason.end_turn
    second = provider.requests[1]
    replayed = [m for m in second.messages if m.role == "assistant"]
    assert len(replayed) == 1 and replayed[0].content == text
    assert replayed[0].provider_data == ANTHROPIC_SERVER_BLOCKS


async def test_paused_turns_count_toward_max_steps() -> None:
    paused = _reply("searching", stop=StopReason.pause_turn, raw="pause_turn", data=ANTHROPIC_SERVER_BLOCKS)
    provider = ScriptedProvider([paused] * 5)
    result = await Agent(provider, name="a", max_steps=3).run("hi")
    assert provider.calls == 3 and result.bounded and result.steps == 3
    assert result.stop_reason is StopReason.pause_turn


async def test_a_typed_content_filter_refusal_ends_at_once_with_a_content_policy_error() -> None:
    provider = ScriptedProvider([_reply("I can't help with that.", stop=StopReason.content_filter, raw="refusal")] * 6)
    agent: Agent[Any] = Agent(provider, name="a", output_type=City)
    result = await agent.run("hi")
    assert provider.calls == 1
    assert not result.ok and result.output is None
    assert isinstance(result.error, ProviderError) and result.error.kind is ErrorKind.content_policy
    assert "refusal" in str(result.error)
