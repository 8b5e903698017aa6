"""The public bases: a ProviderDecorator forwards one capability method; a MultiProvider ANDs its members'."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from agentactors.messages import LLMRequest, LLMResponse
from agentactors.providers.anthropic.provider import AnthropicProvider
from agentactors.providers.port import (
    MEDIA_KINDS,
    Capabilities,
    StreamContext,
    capabilities_of,
    forced_tool_choice_for,
    forced_tool_choice_refusal,
    native_tools_for,
)
from agentactors.providers.scripted import ScriptedProvider
from agentactors.resilience import (
    MultiProvider,
    ProviderDecorator,
    describe_chain,
    resilient_chain,
    with_fallback,
    with_pool,
    with_retry,
)
from agentactors.resilience.streams import stream_of
from agentactors.settings import ModelSettings
from tests.support.resilience import REQ

pytestmark = pytest.mark.anyio

FULL = Capabilities(
    forced_tool_choice=True, response_format=True, thinking=True, media=MEDIA_KINDS, parallel_tool_calls=True
)


def scripted(name: str, *, model: str | None = None, **caps: Any) -> ScriptedProvider:
    return ScriptedProvider(["x"] * 4, name=name, model=model, capabilities=attrs.evolve(FULL, **caps))


class Counting(ProviderDecorator):
    """A decorator written on the base: only the calls, nothing of the port's identity or capabilities."""

    calls = 0

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.calls += 1
        return await self.inner.complete(request)

    def stream(self, request: LLMRequest) -> StreamContext:
        self.calls += 1
        return stream_of(self.inner, request)


async def test_a_decorator_on_the_base_answers_for_its_inner_provider() -> None:
    inner = scripted("a", model="m", thinking=False, streaming=False, media={"image"})
    wrapped = Counting(inner)
    assert wrapped.name == "a" and wrapped.default_model == "m"
    # One value, forwarded; a decorator streams (its stream() adapts an inner that cannot).
    assert wrapped.capabilities("m") == Capabilities(
        forced_tool_choice=True, response_format=True, media={"image"}, parallel_tool_calls=True
    )
    assert inner.capabilities("m").streaming is False
    # The first protocol's members come from the value.
    assert wrapped.carries_tools is True and wrapped.supports_streaming is True
    assert wrapped.supports_forced_tool_choice("m") is True and wrapped.supports_response_format("m") is True
    assert (await wrapped.complete(REQ)).content == "x" and wrapped.calls == 1
    async with wrapped:
        pass
    assert inner.closed


def test_the_reason_giving_questions_pass_through_a_decorator() -> None:
    anthropic = AnthropicProvider("claude-sonnet-4-5", api_key="k")
    thinking = ModelSettings(thinking_budget=2048, max_tokens=4096)
    reason = forced_tool_choice_refusal(anthropic, None, thinking)
    assert reason is not None and "thinking" in reason
    assert forced_tool_choice_refusal(Counting(anthropic), None, thinking) == reason
    assert forced_tool_choice_refusal(Counting(anthropic), None, None) is None


async def test_a_multi_provider_on_the_base_ands_its_members_and_closes_each_once() -> None:
    class FirstOnly(MultiProvider):
        label = "first"

        async def complete(self, request: LLMRequest) -> LLMResponse:
            member = self.members[0]
            model = self.model_for(0, request.model)
            return await member.complete(request.with_model(model))  # type: ignore[no-any-return]

    a = scripted("a", model="ma", media={"image", "audio"})
    b = scripted("b", model="mb", thinking=False, media={"image", "document"})
    b.rejects_forced_tool_choice = frozenset({"asked"})  # never asked for it: b calls its own model
    multi = FirstOnly([a, b, a])
    assert multi.name == "first(a, b, a)" and multi.default_model == "ma"
    assert [multi.model_for(i, "asked") for i in range(3)] == ["ma", "mb", "ma"]
    assert multi.capabilities("asked") == Capabilities.common([a.capabilities("ma"), b.capabilities("mb")])
    assert multi.capabilities("asked").forced_tool_choice is True
    assert multi.capabilities("asked").media == {"image"} and multi.capabilities(None).thinking is False
    assert [n.provider for n in describe_chain(multi).providers()] == [a, b, a]
    assert (await multi.complete(REQ)).model == "ma"
    async with multi as entered:
        assert entered is multi
    assert a.closed and b.closed
    with pytest.raises(ValueError):
        FirstOnly([])
    with pytest.raises(TypeError):
        FirstOnly([object()])


def test_a_chain_is_what_every_member_can_do_for_the_model_it_would_call() -> None:
    a = scripted("a", model="ma", media=MEDIA_KINDS)
    b = scripted("b", model="mb", thinking=False, media={"image"})
    b.rejects_forced_tool_choice = frozenset({"mb"})
    for composite in (with_fallback(a, b), with_pool(a, b), resilient_chain(a, b)):
        value = capabilities_of(composite, "asked")
        assert value.media == {"image"} and value.thinking is False and value.forced_tool_choice is False
        assert value.native_tools and value.response_format and value.parallel_tool_calls and value.streaming
    # A fallback chain that skips incapable members needs one capable member for a forced choice.
    skipping = with_fallback(a, b, skip_incapable=True)
    assert skipping.capabilities("asked").forced_tool_choice is True
    assert skipping.capabilities("asked").media == {"image"}  # the rest is still what every member can do
    assert forced_tool_choice_for(with_retry(skipping), "asked") is True
    # A member that does not call tools natively makes the whole chain use the JSON fallback.
    assert native_tools_for(with_pool(a, scripted("c", native_tools=False))) is False
