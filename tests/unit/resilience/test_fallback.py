"""with_fallback: models per member, when it moves, forced tool choice, adaptation, identity, events."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors.errors import AllProvidersFailedError, ErrorKind, ProviderError, UnsupportedToolChoiceError
from agentactors.messages import LLMRequest, LLMResponse, Message, StreamEnd, TextDelta
from agentactors.providers.port import LLMProvider, forced_tool_choice_for
from agentactors.providers.scripted import ScriptedProvider
from agentactors.resilience import with_circuit_breaker, with_fallback
from tests.support.resilience import FORCED_TOOL as FORCED
from tests.support.resilience import REQ, http_error, recording

pytestmark = pytest.mark.anyio


def member(name: str, script: Any, **kw: Any) -> ScriptedProvider:
    return ScriptedProvider(script, name=name, **kw)


async def test_the_primary_calls_the_requested_model_and_fallbacks_their_own() -> None:
    a = member("a", [http_error(503)], model="a-default")
    b = member("b", [http_error(503)], model="b-own")
    c = ScriptedProvider(["ok"], name="c")
    c._model = None  # type: ignore[assignment]  # a member bound to no model: it calls what was asked for
    chain = with_fallback(a, b, c)
    request = LLMRequest([Message.user("x")], model="asked")
    response = await chain.complete(request)
    assert [r.model for r in a.requests] == ["asked"]
    assert [r.model for r in b.requests] == ["b-own"]
    assert [r.model for r in c.requests] == ["asked"]
    assert response.provider == "c"


async def test_without_a_requested_model_the_primary_uses_its_default() -> None:
    a = member("a", ["ok"], model="a-default")
    await with_fallback(a, member("b", ["unused"])).complete(REQ)
    assert a.requests[0].model is None  # the primary resolves its own default
    assert (await with_fallback(member("a2", ["ok"], model="a-default")).complete(REQ)).model == "a-default"


async def test_fallback_on_accepts_strings_kinds_or_a_predicate() -> None:
    b = member("b", ["b1", "b2", "b3"])
    assert (await with_fallback(member("a", [http_error(404)]), b, fallback_on="account").complete(REQ)).content == "b1"
    chain = with_fallback(member("a", [http_error(429)]), b, fallback_on=lambda e: e.status == 429)
    assert (await chain.complete(REQ)).content == "b2"
    # A predicate replaces the default: a 503 it rejects is raised.
    chain = with_fallback(member("a", [http_error(503)]), b, fallback_on=lambda e: e.status == 429)
    with pytest.raises(ProviderError) as info:
        await chain.complete(REQ)
    assert info.value.status == 503
    # Kinds replace the default too: only context moves here.
    chain = with_fallback(member("a", [http_error(400, code="context_length_exceeded")]), b, fallback_on=["context"])
    assert (await chain.complete(REQ)).content == "b3"


async def test_a_predicate_can_never_move_a_request_error() -> None:
    b = member("b", ["unused"])
    with pytest.raises(ProviderError):
        await with_fallback(member("a", [http_error(400)]), b, fallback_on=lambda e: True).complete(REQ)
    assert b.calls == 0


@pytest.mark.parametrize("bad", [["request"], [ErrorKind.request, "transient"], ["cancelled"], "nonsense"])
async def test_fallback_on_rejects_request_and_unknown_kinds(bad: Any) -> None:
    with pytest.raises(ValueError):
        with_fallback(member("a", ["x"]), member("b", ["x"]), fallback_on=bad)


async def test_a_non_movable_error_after_earlier_failures_notes_them() -> None:
    a = member("a", [http_error(503)])
    b = member("b", [http_error(401)])
    c = member("c", ["unused"])
    with pytest.raises(ProviderError) as info:
        await with_fallback(a, b, c).complete(REQ)
    assert info.value.status == 401
    assert c.calls == 0
    assert "HTTP 503" in info.value.__notes__[0]


async def test_a_chain_with_one_incapable_member_rejects_a_forced_choice_before_any_call() -> None:
    a = member("a", ["unused"], model="ma")
    b = member("b", ["unused"], model="mb", rejects_forced_tool_choice={"mb"})
    chain = with_fallback(a, b)
    assert chain.supports_forced_tool_choice(None) is False
    assert forced_tool_choice_for(chain, "ma") is False
    with pytest.raises(UnsupportedToolChoiceError) as info:
        await chain.complete(FORCED)
    assert info.value.provider == "b"
    assert (a.calls, b.calls) == (0, 0)
    # Not forced: the chain serves as usual.
    assert (await chain.complete(REQ)).content == "unused"


async def test_skip_incapable_skips_with_an_event_and_the_next_capable_member_serves() -> None:
    a = member("a", ["unused"], model="ma", rejects_forced_tool_choice={"ma"})
    b = member("b", ["from b"], model="mb")
    chain = with_fallback(a, b, skip_incapable=True)
    assert chain.supports_forced_tool_choice(None) is True
    with recording() as rec:
        response = await chain.complete(FORCED)
    assert response.provider == "b" and a.calls == 0
    [skipped] = rec.of_type("fallback.skipped")
    assert (skipped.member, skipped.reason) == ("a", "forced_tool_choice")
    assert rec.of_type("fallback.moved") == []


async def test_skip_incapable_moves_past_a_failure_then_a_skip() -> None:
    a = member("a", [http_error(503)], model="ma")
    b = member("b", ["unused"], model="mb", carries_forced_tool_choice=False)
    c = member("c", ["from c"], model="mc")
    with recording() as rec:
        response = await with_fallback(a, b, c, skip_incapable=True).complete(FORCED)
    assert response.provider == "c"
    assert rec.types == ["fallback.skipped", "fallback.moved"]
    assert (rec.events[1].from_member, rec.events[1].to_member) == ("a", "c")


async def test_when_every_member_is_skipped_the_error_names_the_chain() -> None:
    a = member("a", ["x"], carries_forced_tool_choice=False)
    b = member("b", ["x"], carries_forced_tool_choice=False)
    chain = with_fallback(a, b, skip_incapable=True)
    with pytest.raises(UnsupportedToolChoiceError) as info:
        await chain.complete(FORCED)
    assert info.value.provider == chain.name == "fallback(a, b)"
    assert "a, b" in str(info.value)


class CompleteOnly:
    name = "plain"
    default_model = "plain-1"
    carries_tools = True
    carries_forced_tool_choice = True

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.calls += 1
        return LLMResponse("plain answer")  # does not name itself

    async def aclose(self) -> None:
        pass


async def test_a_member_without_streaming_is_adapted_and_named() -> None:
    plain = CompleteOnly()
    chain = with_fallback(member("a", [http_error(503), http_error(503)]), plain)
    async with chain.stream(REQ) as events:
        got = [e async for e in events]
    assert plain.calls == 1
    assert got[0] == TextDelta("plain answer")
    end = got[-1]
    assert isinstance(end, StreamEnd) and end.response.provider == "plain"
    assert (await chain.complete(REQ)).provider == "plain"


async def test_a_member_that_named_itself_keeps_its_name() -> None:
    b = member("b", [LLMResponse("x", provider="b-vendor-name")])
    assert (await with_fallback(member("a", [http_error(503)]), b).complete(REQ)).provider == "b-vendor-name"


async def test_capabilities_are_the_and_of_the_members() -> None:
    a = member("a", ["x"], model="ma")
    b = member("b", ["x"], model="mb", carries_tools=False)
    chain = with_fallback(a, b)
    assert isinstance(chain, LLMProvider)
    assert chain.carries_tools is False
    assert chain.carries_forced_tool_choice is True
    assert with_fallback(a, member("c", ["x"], carries_forced_tool_choice=False)).carries_forced_tool_choice is False
    assert chain.default_model == "ma"
    assert with_fallback(a, b, name="main-chain").name == "main-chain"


async def test_aclose_closes_every_member_once_even_if_one_fails() -> None:
    class Broken(CompleteOnly):
        async def aclose(self) -> None:
            raise RuntimeError("close failed")

    a, c = member("a", ["x"]), member("c", ["x"])
    chain = with_fallback(a, Broken(), c, a)
    with pytest.raises(RuntimeError):
        await chain.aclose()
    assert a.closed and c.closed


async def test_events_moved_and_exhausted() -> None:
    errors = [http_error(503), http_error(529)]
    with recording() as rec:
        with pytest.raises(AllProvidersFailedError) as info:
            await with_fallback(member("a", [errors[0]]), member("b", [errors[1]])).complete(REQ)
    assert rec.types == ["fallback.moved", "fallback.exhausted"]
    moved, exhausted = rec.events
    assert (moved.from_member, moved.to_member, moved.reason, moved.error) == ("a", "b", ErrorKind.transient, errors[0])
    assert list(exhausted.errors) == errors
    assert info.value.provider == "fallback(a, b)"
    assert info.value.kind is ErrorKind.transient


async def test_cancellation_does_not_move() -> None:
    entered = anyio.Event()

    async def hang(request: LLMRequest) -> str:
        entered.set()
        await anyio.sleep_forever()
        raise AssertionError

    b = member("b", ["unused"])
    chain = with_fallback(member("a", [hang]), b)
    async with anyio.create_task_group() as tg:
        tg.start_soon(chain.complete, REQ)
        await entered.wait()
        tg.cancel_scope.cancel()
    assert b.calls == 0


async def test_a_fallback_over_breakers_serves_from_the_second_when_the_first_is_open() -> None:
    a = with_circuit_breaker(member("a", ["unused"]))
    a.force_open()
    b = member("b", ["from b"])
    assert (await with_fallback(a, b).complete(REQ)).content == "from b"


async def test_needs_a_provider() -> None:
    with pytest.raises(TypeError):
        with_fallback(object())
