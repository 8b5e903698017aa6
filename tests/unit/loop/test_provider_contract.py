"""A user-written provider that breaks the ``LLMProvider`` contract: the run ends with a typed error naming it.

"Every request ends in a response or a typed error — never a hang, never a silently dropped result": a
``complete()`` that returns something other than an ``LLMResponse``, a stream that yields something other than
stream events or ends without its ``StreamEnd``, a ``stream()`` that is no async context manager — each ends the
run ``generation_failed`` with a :class:`MalformedResponseError` naming the provider and what it broke, on every
way a run is asked (``run``, ``run(on_token=...)``, ``agent.stream``) and through the decorators; a
``KeyboardInterrupt`` (or another ``BaseException`` that is no ``Exception``) propagates as it is.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from agentactors import Agent, LLMRequest, LLMResponse, RunResult, Runtime, ScriptedProvider
from agentactors.errors import MalformedResponseError, ProviderError, StreamInterruptedError
from agentactors.gateway import ProviderActor
from agentactors.loop.streamed import generate_streamed
from agentactors.messages import Message, StreamEnd, StreamEvent, TextDelta, ToolCall, Usage
from agentactors.resilience import with_circuit_breaker, with_fallback, with_retry, with_timeout

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

OK = LLMResponse(content="ok")
ANSWER = (TextDelta("ok"), StreamEnd(OK))


class Mine:
    """A duck-typed provider: ``complete`` answers ``answer``; ``stream`` yields ``events`` (in a context manager
    unless ``shape`` says otherwise: ``"iterator"`` a bare async generator, ``"coroutine"`` an ``async def``'s)."""

    name = "mine"
    default_model = "mine-1"

    def __init__(self, answer: Any = OK, events: Any = ANSWER, shape: str = "cm") -> None:
        self.answer = answer
        self.events = events
        self.shape = shape
        self.calls = 0

    async def complete(self, request: LLMRequest) -> Any:
        self.calls += 1
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer

    def stream(self, request: LLMRequest) -> Any:
        self.calls += 1
        events = self.events

        async def gen() -> AsyncIterator[Any]:
            for event in events:
                if isinstance(event, BaseException):
                    raise event
                yield event

        if self.shape == "iterator":
            return gen()
        if self.shape == "coroutine":
            async def opened() -> Any:
                return gen()
            return opened()

        @asynccontextmanager
        async def cm() -> AsyncIterator[AsyncIterator[StreamEvent]]:
            events = gen()
            try:
                yield events
            finally:
                await events.aclose()  # type: ignore[attr-defined]

        return cm()

    async def aclose(self) -> None:
        pass


def _run(how: str) -> Callable[[Any], Any]:
    async def run(provider: Any) -> RunResult[Any]:
        agent = Agent(provider)
        if how == "run":
            return await agent.run("hi")
        if how == "on_token":
            return await agent.run("hi", on_token=lambda text: None)
        async with agent.stream("hi") as handle:
            async for _ in handle:
                pass
        assert handle.result is not None
        return handle.result

    return run


WRAPS: dict[str, Callable[[Any], Any]] = {
    "bare": lambda p: p,
    "retry": lambda p: with_retry(p),
    "breaker": lambda p: with_circuit_breaker(p),
    "timeout": lambda p: with_timeout(p, attempt=30),
}


def _malformed(result: RunResult[Any], *words: str) -> MalformedResponseError:
    assert not result.ok and result.generation_failed, result
    assert result.content == ""
    assert isinstance(result.error, MalformedResponseError), repr(result.error)
    assert result.error.provider == "mine", result.error.provider
    text = str(result.error)
    for word in words:
        assert word in text, text
    assert "AttributeError" not in text and "TypeError" not in text, text
    return result.error


# -- complete() -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("wrap", list(WRAPS))
@pytest.mark.parametrize(("answer", "named"), [(None, "NoneType"), ("hello", "str"), ({"content": "x"}, "dict")])
async def test_complete_answering_no_llmresponse_fails_the_run_with_a_typed_error(
    answer: Any, named: str, wrap: str
) -> None:
    provider = Mine(answer=answer)
    result = await Agent(WRAPS[wrap](provider)).run("hi")
    error = _malformed(result, named, "not an LLMResponse")
    assert error.retryable is False  # the provider's code: asking again answers the same
    assert provider.calls == 1  # not retried


async def test_complete_answering_no_llmresponse_behind_a_fallback_moves_to_the_next_member() -> None:
    # A fallback chain reads the member's answer (its provider name); a non-answer fails the member, not the chain.
    provider = Mine(answer=None)
    result = await Agent(with_fallback(provider, ScriptedProvider(["backup"], name="backup"))).run("hi")
    assert result.ok, result.error
    assert result.content == "backup"


class Sub(LLMResponse):
    pass


@pytest.mark.parametrize("how", ["run", "on_token", "stream"])
async def test_an_llmresponse_subclass_is_an_answer(how: str) -> None:
    answer = Sub(content="sub")
    result = await _run(how)(Mine(answer=answer, events=(TextDelta("sub"), StreamEnd(answer))))
    assert result.ok, result.error
    assert result.content == "sub"


@pytest.mark.parametrize("exc", [StopIteration(), StopAsyncIteration()])
async def test_stop_iteration_raised_by_complete_is_the_providers_failure(exc: BaseException) -> None:
    result = await Agent(Mine(answer=exc)).run("hi")
    assert result.generation_failed
    assert isinstance(result.error, ProviderError)
    assert result.error.provider == "mine"


async def test_junk_usage_and_unknown_tools_are_the_loops_to_handle() -> None:
    calls = [ToolCall(id="c1", name="no_such_tool", arguments={})]
    junk = Usage(input_tokens=None, output_tokens=float("nan"))  # type: ignore[arg-type]
    script = ScriptedProvider([LLMResponse(tool_calls=calls, usage=junk), "done"], name="mine")
    result = await Agent(script).run("hi")
    assert result.ok, result.error
    assert result.content == "done"
    assert result.usage.input_tokens == 0


# -- stream() -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["on_token", "stream"])
@pytest.mark.parametrize("wrap", list(WRAPS))
async def test_a_stream_yielding_a_non_event_fails_the_run(how: str, wrap: str) -> None:
    provider = Mine(events=(TextDelta("o"), "k", StreamEnd(OK)))
    result = await _run(how)(WRAPS[wrap](provider))
    _malformed(result, "str", "not a stream event")
    assert provider.calls == 1


@pytest.mark.parametrize("how", ["on_token", "stream"])
@pytest.mark.parametrize("wrap", list(WRAPS))
async def test_a_stream_ending_without_its_stream_end_fails_the_run(how: str, wrap: str) -> None:
    result = await _run(how)(WRAPS[wrap](Mine(events=(TextDelta("half"),))))
    _malformed(result, "StreamEnd")


@pytest.mark.parametrize("how", ["on_token", "stream"])
async def test_a_stream_with_two_stream_ends_answers_the_first(how: str) -> None:
    second = LLMResponse(content="second")
    events = (TextDelta("ok"), StreamEnd(OK), StreamEnd(second), TextDelta("after"))
    result = await _run(how)(Mine(events=events))
    assert result.ok, result.error
    assert result.content == "ok"


@pytest.mark.parametrize("how", ["on_token", "stream"])
@pytest.mark.parametrize("wrap", [
    "retry",
    "breaker",
    "timeout",
])
@pytest.mark.parametrize("shape", ["iterator", "coroutine"])
async def test_stream_returning_no_context_manager_fails_the_run_behind_a_decorator(
    how: str, wrap: str, shape: str
) -> None:
    provider = Mine(shape=shape)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a coroutine never awaited: closed, not left to warn
        result = await _run(how)(WRAPS[wrap](provider))
    error = _malformed(result, "stream()", "async context manager")
    assert error.retryable is False
    assert provider.calls == 1


@pytest.mark.parametrize("shape", ["iterator", "coroutine"])
async def test_stream_returning_no_context_manager_fails_the_run(shape: str) -> None:
    result = await _run("on_token")(Mine(shape=shape))
    _malformed(result, "stream()", "async context manager")


@pytest.mark.parametrize("how", ["on_token", "stream"])
async def test_a_stream_end_without_a_response_fails_the_run(how: str) -> None:
    result = await _run(how)(Mine(events=(TextDelta("ok"), StreamEnd(None))))  # type: ignore[arg-type]
    _malformed(result, "NoneType", "not an LLMResponse")


async def test_a_failure_after_the_first_event_is_an_interruption_naming_the_provider() -> None:
    result = await _run("on_token")(Mine(events=(TextDelta("ok"), StopAsyncIteration())))
    assert result.generation_failed
    assert isinstance(result.error, StreamInterruptedError)
    assert result.error.provider == "mine"


class CapabilitiesBroken(Mine):
    def __init__(self, caps: Any) -> None:
        super().__init__()
        self.caps = caps

    def capabilities(self, model: str | None) -> Any:
        if isinstance(self.caps, BaseException):
            raise self.caps
        return self.caps


@pytest.mark.parametrize("how", ["run", "on_token", "stream"])
@pytest.mark.parametrize("caps", [RuntimeError("boom"), 42, None])
async def test_capabilities_that_raise_or_answer_junk_read_as_the_defaults(how: str, caps: Any) -> None:
    result = await _run(how)(CapabilitiesBroken(caps))
    assert result.ok, result.error
    assert result.content == "ok"


# -- BaseException ------------------------------------------------------------------------------------------


class Custom(BaseException):
    pass


@pytest.mark.parametrize("how", ["run", "on_token", "stream"])
@pytest.mark.parametrize("wrap", list(WRAPS))
@pytest.mark.parametrize("exc", [KeyboardInterrupt, Custom])
async def test_a_base_exception_from_the_provider_propagates(how: str, wrap: str, exc: type[BaseException]) -> None:
    provider = Mine(answer=exc("stop"), events=(TextDelta("o"), exc("stop")))
    with pytest.raises(exc):
        await _run(how)(WRAPS[wrap](provider))


# -- the stream path itself (generate_streamed), with a stream as a taped run's provider hands it over ------------


class _Events:
    """A stream as the stream path reads it: an async context manager that is its own async iterator."""

    def __init__(self, events: tuple[Any, ...]) -> None:
        self._events = iter(events)

    async def __aenter__(self) -> _Events:
        return self

    async def __aexit__(self, *exc: object) -> None:
        pass

    def __aiter__(self) -> _Events:
        return self

    async def __anext__(self) -> Any:
        try:
            return next(self._events)
        except StopIteration:
            raise StopAsyncIteration from None


class _Hosted:
    def __init__(self, events: tuple[Any, ...]) -> None:
        self.provider = Mine()
        self.events = events


class _Ref:
    """What the stream path asks: a reference whose actor hosts ``Mine``."""

    def __init__(self, *events: Any) -> None:
        self.actor = _Hosted(events)

    async def ask(self, message: Any) -> Any:
        return _Events(self.actor.events)


REQUEST = LLMRequest([Message.user("hi")])


async def test_a_stream_without_its_end_names_the_provider_not_stream() -> None:
    with pytest.raises(MalformedResponseError) as caught:
        await generate_streamed(_Ref(TextDelta("half")), REQUEST, native=False, sink=None, on_text=None)
    assert caught.value.provider == "mine"
    assert "StreamEnd" in str(caught.value)


async def test_a_stream_end_without_a_response_is_handed_to_the_step_to_name() -> None:
    # (returned as it is: the step, which names the provider, fails the run: test_a_stream_end_without_a_response...)
    answer = await generate_streamed(_Ref(TextDelta("ok"), StreamEnd(None)), REQUEST,  # type: ignore[arg-type]
                                     native=False, sink=None, on_text=None)
    assert answer is None


@pytest.mark.parametrize("junk", ["text", {"delta": "x"}, None, 3])
async def test_a_non_event_is_named_whoever_listens(junk: Any) -> None:
    seen: list[str] = []
    with pytest.raises(MalformedResponseError) as caught:
        await generate_streamed(_Ref(TextDelta("o"), junk, StreamEnd(OK)), REQUEST, native=True, sink=None,
                                on_text=seen.append)
    assert caught.value.provider == "mine"
    assert type(junk).__name__ in str(caught.value)
    assert seen == ["o"]


async def test_complete_answering_no_llmresponse_through_a_token_budget() -> None:
    # The actor corrects its token budget by the answer's usage: a non-answer has none, and is the step's to name.
    async with Runtime() as rt:
        ref = rt.spawn(ProviderActor(Mine(answer=None), tokens_per_minute=100_000))
        result = await Agent(ref).run("hi")
    _malformed(result, "NoneType", "not an LLMResponse")


class Manager(Mine):
    """``stream()``'s context manager raises on enter (``enter``), or swallows what fails inside it (``swallow``)."""

    def __init__(self, events: Any, *, enter: bool = False, swallow: bool = False) -> None:
        super().__init__(events=events)
        self.enter = enter
        self.swallow = swallow

    def stream(self, request: LLMRequest) -> Any:
        me = self
        inner = super().stream(request)

        class Swallowing:
            async def __aenter__(self) -> Any:
                if me.enter:
                    raise RuntimeError("the SDK could not connect")
                return await inner.__aenter__()

            async def __aexit__(self, *exc: Any) -> bool:
                await inner.__aexit__(*exc)
                return me.swallow

        return Swallowing()


@pytest.mark.parametrize("how", ["on_token", "stream"])
@pytest.mark.parametrize("wrap", list(WRAPS))
async def test_a_context_manager_that_raises_on_enter_is_the_providers_failure(how: str, wrap: str) -> None:
    result = await _run(how)(WRAPS[wrap](Manager(ANSWER, enter=True)))
    assert result.generation_failed
    assert isinstance(result.error, ProviderError)
    assert result.error.provider == "mine"
    assert "could not connect" in str(result.error)


@pytest.mark.parametrize("how", ["on_token", "stream"])
@pytest.mark.parametrize("wrap", list(WRAPS))
@pytest.mark.parametrize("after", [0, 1])
async def test_a_context_manager_that_swallows_a_failure_does_not_hide_it(how: str, wrap: str, after: int) -> None:
    events = (TextDelta("o"),) * after + (RuntimeError("lost"),)
    result = await _run(how)(WRAPS[wrap](Manager(events, swallow=True)))
    assert result.generation_failed
    assert isinstance(result.error, ProviderError)
    assert result.error.provider == "mine"
    assert result.content == ""


@pytest.mark.parametrize("streaming", [False, True])
async def test_a_journaled_run_names_a_non_answer_and_journals_its_end(tmp_path: Any, streaming: bool) -> None:
    # The tape journaled whatever came back: encoding None raised AttributeError out of Agent.run and the run stayed
    # "running" in the journal (a recover() would run it again); and its error named "provider", not the provider.
    import sqlite3
    from contextlib import closing

    from agentactors.journal import SqliteJournal
    from agentactors.messages import StreamEnd, TextDelta

    path = tmp_path / "j.db"
    async with SqliteJournal(path) as journal, Runtime(journal=journal) as rt:
        broken = Mine(answer=None, events=(TextDelta("x"), StreamEnd(None)))  # type: ignore[arg-type]
        agent = Agent(broken, name="a").bind(rt)
        result = await (agent.run("hi", on_token=lambda t: None) if streaming else agent.run("hi"))
    assert isinstance(result.error, MalformedResponseError) and result.error.provider == "mine"
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT status FROM agentactors_runs").fetchall() == [("finished",)]
