"""The Agent façade: configuration, shared actors, runtimes, run_many and as_completed."""

from __future__ import annotations

from typing import Any

import anyio
import attrs
import pytest

from agentactors.actors.runtime import Runtime
from agentactors.agent.core import Agent, as_completed, run_many
from agentactors.errors import ErrorKind, ProviderError, ToolStatusError
from agentactors.events import InMemoryRecorder
from agentactors.gateway.provider import ProviderActor
from agentactors.messages import LLMRequest, Message, ToolCall, ToolChoice
from agentactors.providers.scripted import ScriptedProvider
from agentactors.tools.registry import tool
from agentactors.tools.results import ToolStatus

pytestmark = pytest.mark.anyio


@tool
def echo(text: str) -> str:
    """Echo."""
    return text


def _last_user(request: LLMRequest) -> str:
    return next(m.content for m in reversed(request.messages) if m.role == "user")


# --- configuration -------------------------------------------------------------------------------


def test_agent_is_immutable_and_validated() -> None:
    provider = ScriptedProvider(["x"])
    agent = Agent(provider, tools=[echo], system="s")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        agent.max_steps = 3  # type: ignore[misc]
    with pytest.raises(ValueError, match="max_steps"):
        Agent(provider, max_steps=0)
    with pytest.raises(ValueError, match="max_empty_steps"):
        Agent(provider, max_empty_steps=0)
    with pytest.raises(ValueError, match="needs at least one tool"):
        Agent(provider, tool_choice=ToolChoice.required())
    with pytest.raises(ValueError, match="not among the tools"):
        Agent(provider, tools=[echo], tool_choice=ToolChoice.tool("other"))
    with pytest.raises(ValueError, match="unique"):
        Agent(provider, tools=[echo, echo])
    with pytest.raises(TypeError, match="provider"):
        Agent(object())
    with pytest.raises(TypeError, match="nudges"):
        Agent(provider, nudges="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="record"):
        Agent(provider, recorders=[object()])  # type: ignore[list-item]
    assert "echo" in repr(agent)


def test_plain_functions_become_tools() -> None:
    def shout(text: str) -> str:
        """Shout."""
        return text.upper()

    agent = Agent(ScriptedProvider(["x"]), tools=[shout])
    assert [t.name for t in agent.tools] == ["shout"]


async def test_forced_tool_choice_applies_to_the_first_step_only() -> None:
    provider = ScriptedProvider([ToolCall("c1", "echo", {"text": "a"}), "done"])
    await Agent(provider, tools=[echo], tool_choice=ToolChoice.tool("echo")).run("q")
    assert provider.requests[0].tool_choice == ToolChoice.tool("echo")
    assert provider.requests[1].tool_choice == ToolChoice.auto()


async def test_system_messages_merge_into_one() -> None:
    provider = ScriptedProvider(["a", "b"])
    result = await Agent(provider, system="Agent rules.").run([Message.system("Caller rules."), Message.user("q")])
    sent = provider.requests[0].messages
    assert [m.role for m in sent] == ["system", "user"]
    assert sent[0].content == "Agent rules.\n\nCaller rules."
    assert result.messages[0] == Message.system("Caller rules.")  # the caller's conversation, as given
    await Agent(provider).run([Message.system("Only caller."), Message.user("q")])
    assert provider.requests[1].messages[0].content == "Only caller."


async def test_continuing_a_conversation() -> None:
    provider = ScriptedProvider(["first", "second"])
    agent = Agent(provider, system="S")
    one = await agent.run("hello")
    two = await agent.run([*one.messages, Message.user("again")])
    assert [m.content for m in two.messages] == ["hello", "first", "again", "second"]
    assert [m.content for m in provider.requests[1].messages] == ["S", "hello", "first", "again"]


# --- runtimes and shared actors ------------------------------------------------------------------


async def test_agents_with_one_provider_share_one_provider_actor() -> None:
    provider = ScriptedProvider(lambda request: "ok")
    async with Runtime() as rt:
        a, b = Agent(provider, system="a"), Agent(provider, system="b", tools=[echo])
        await a.run("1")
        await b.run("2")
        await a.run("3")
        assert ProviderActor.shared(rt, provider) is a._bind(rt).provider is b._bind(rt).provider
        names = [ref.name for ref in rt._actors]
        assert sum(1 for n in names if n.startswith("provider:")) == 1
        assert sum(1 for n in names if n.startswith("tools:")) == 1  # only b has tools


async def test_private_runtime_when_none_runs_and_the_provider_stays_open() -> None:
    assert Runtime.current() is None
    provider = ScriptedProvider(["one", "two"])
    agent = Agent(provider, tools=[echo])
    assert (await agent.run("q")).content == "one"
    assert (await agent.run("q")).content == "two"
    assert not provider.closed
    assert agent._bound == {}  # nothing cached for runtimes that are gone


async def test_provider_actor_ref_with_its_own_budget() -> None:
    provider = ScriptedProvider(lambda request: "budgeted", carries_tools=False)
    rec = InMemoryRecorder()
    async with Runtime(recorders=[rec]) as rt:
        ref = rt.spawn(ProviderActor(provider, max_concurrency=2, requests_per_minute=600), concurrency=2)
        agent = Agent(ref, tools=[echo])
        result = await agent.run("q")
        assert result.content == "budgeted"
        # The hosted provider cannot carry tools: the JSON-fallback contract was sent.
        assert provider.requests[0].tools == ()
        assert "Available tools:" in provider.requests[0].messages[0].content
    # Outside its runtime the ref's runtime is gone: a private runtime cannot use that ref.
    assert rec.for_run(result.run_id or "")


async def test_ref_runtime_hosts_runs_from_outside_it() -> None:
    provider = ScriptedProvider(lambda request: "hosted")
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, provider)
        agent = Agent(ref)
        # A task outside the runtime's context still runs in the ref's runtime.
        assert agent._runtime() is rt
        assert (await agent.run("q")).content == "hosted"


async def test_stream_handle_api() -> None:
    gate = anyio.Event()

    async def answer(request: LLMRequest) -> str:
        await gate.wait()
        return "streamed"

    async with Runtime():
        async with Agent(ScriptedProvider(answer)).stream("q") as run:
            done = run.done  # a local: mypy would hold run.done False past the wait below
            assert not done
            with pytest.raises(RuntimeError, match="not finished"):
                _ = run.result
            gate.set()
            result = await run.wait()
        assert result.content == "streamed" and run.done
        run.cancel()  # no effect once finished
        assert run.result is result


async def test_stream_reraises_what_the_run_raised() -> None:
    @tool
    def broken() -> str:
        """Broken."""
        raise ValueError("x")

    agent = Agent(
        ScriptedProvider([ToolCall("c", "broken", {}), "x"]), tools=[broken], on_tool_status={ToolStatus.error: "raise"}
    )
    with pytest.raises(ToolStatusError):
        async with agent.stream("q") as run:
            async for _ in run:
                pass


# --- run_many and as_completed -------------------------------------------------------------------


def _failing_script() -> Any:
    def answer(request: LLMRequest) -> Any:
        prompt = _last_user(request)
        if prompt == "fail":
            return ProviderError("vendor down", provider="scripted", kind=ErrorKind.transient)
        if prompt == "tool" and not any(m.role == "tool" for m in request.messages):
            return ToolCall("c1", "broken", {})
        return f"answer to {prompt}"

    return answer


@tool
def broken() -> str:
    """Always raises."""
    raise RuntimeError("tool exploded")


async def test_run_many_keeps_input_order_reports_progress_and_isolates_failures() -> None:
    inputs = ["a", "fail", "b", "tool", "c", "raise"]
    progress: list[tuple[int, int, int]] = []

    @tool
    def strict() -> str:
        """Raises, routed to raise."""
        raise ValueError("no")

    def answer(request: LLMRequest) -> Any:
        if _last_user(request) == "raise" and not any(m.role == "tool" for m in request.messages):
            return ToolCall("s", "strict", {})
        return _failing_script()(request)

    provider = ScriptedProvider(answer)
    agent = Agent(provider, tools=[broken, strict], on_tool_status={ToolStatus.error: "continue"})
    raising = Agent(provider, tools=[broken, strict], on_tool_status={ToolStatus.error: "raise"})
    async with Runtime() as rt:
        results = await rt.run_many(agent, inputs, concurrency=3, progress=lambda *a: progress.append(a))
        mixed = await run_many(rt, raising, ["a", "raise", "b"], concurrency=2)
    assert [r.content for r in results] == [
        "answer to a", "", "answer to b", "answer to tool", "answer to c", "answer to raise"
    ]
    assert results[1].generation_failed and isinstance(results[1].error, ProviderError)
    assert results[3].tool_calls[0].name == "broken" and not results[3].generation_failed
    assert [p[0] for p in progress] == [1, 2, 3, 4, 5, 6]
    assert progress[-1] == (6, 1, 6)
    assert all(total == 6 for _, _, total in progress)
    assert [r.content for r in mixed][::2] == ["answer to a", "answer to b"]
    assert isinstance(mixed[1].error, ToolStatusError)
    assert mixed[1].messages == (Message.user("raise"),)


@pytest.mark.virtual_time
async def test_run_many_respects_the_concurrency_bound() -> None:
    live = [0, 0]

    async def answer(request: LLMRequest) -> str:
        live[0] += 1
        live[1] = max(live[1], live[0])
        await anyio.sleep(1)
        live[0] -= 1
        return _last_user(request)

    agent = Agent(ScriptedProvider(answer))
    async with Runtime() as rt:
        start = anyio.current_time()
        results = await rt.run_many(agent, [str(i) for i in range(20)], concurrency=4)
        assert anyio.current_time() - start == pytest.approx(5, abs=0.01)
    assert live[1] == 4
    assert [r.content for r in results] == [str(i) for i in range(20)]


async def test_run_many_edge_cases() -> None:
    agent = Agent(ScriptedProvider(lambda r: "x"))
    async with Runtime() as rt:
        assert await rt.run_many(agent, []) == []
        with pytest.raises(ValueError, match="concurrency"):
            await rt.run_many(agent, ["a"], concurrency=0)
        bad = await rt.run_many(agent, ["ok", []], progress=lambda *a: 1 / 0)
        assert bad[0].content == "x"
        assert isinstance(bad[1].error, ValueError)


@pytest.mark.virtual_time
async def test_as_completed_yields_in_finish_order() -> None:
    async def answer(request: LLMRequest) -> str:
        delay = float(_last_user(request))
        await anyio.sleep(delay)
        return f"after {delay:g}"

    agent = Agent(ScriptedProvider(answer))
    async with Runtime() as rt:
        got = [r.content async for r in rt.as_completed(agent, ["3", "1", "2"], concurrency=3)]
        assert got == ["after 1", "after 2", "after 3"]
        await rt.wait_idle()
        assert rt.stats().tasks == 0


@pytest.mark.virtual_time
async def test_as_completed_closed_early_cancels_the_rest() -> None:
    cancelled: list[str] = []

    async def answer(request: LLMRequest) -> str:
        delay = float(_last_user(request))
        try:
            await anyio.sleep(delay)
        except anyio.get_cancelled_exc_class():
            cancelled.append(_last_user(request))
            raise
        return "done"

    agent = Agent(ScriptedProvider(answer))
    async with Runtime() as rt:
        async with as_completed(rt, agent, ["1", "50", "60"], concurrency=3) as results:
            async for result in results:
                assert result.content == "done"
                break
        await rt.wait_idle()
        assert sorted(cancelled) == ["50", "60"]
        assert rt.stats().tasks == 0


# --- run_many and as_completed as the agent's own methods ------------------------------------------------


@pytest.mark.virtual_time
async def test_the_agents_methods_and_the_runtimes_are_the_same_runs() -> None:
    async def answer(request: LLMRequest) -> str:
        delay = float(_last_user(request))
        await anyio.sleep(delay)
        return f"after {delay:g}"

    agent = Agent(ScriptedProvider(answer))
    progress: list[tuple[int, int, int]] = []
    async with Runtime() as rt:
        by_agent = await agent.run_many(["2", "1"], concurrency=2, progress=lambda *a: progress.append(a))
        by_runtime = await rt.run_many(agent, ["2", "1"], concurrency=2)
        assert [r.content for r in by_agent] == [r.content for r in by_runtime] == ["after 2", "after 1"]
        assert progress == [(1, 0, 2), (2, 0, 2)]
        got = [r.content async for r in agent.as_completed(["3", "1"], concurrency=2)]
        assert got == ["after 1", "after 3"]
        async with rt.as_completed(agent, ["2", "1"], concurrency=2) as results:
            assert [r.content async for r in results] == ["after 1", "after 2"]
        async with Runtime() as other:
            # runtime= chooses where the runs live, whichever runtime is current.
            assert [r.content for r in await agent.run_many(["1"], runtime=rt)] == ["after 1"]
            assert other.stats().actors == 0
        await rt.wait_idle()
        assert rt.stats().tasks == 0


async def test_run_many_without_a_runtime_makes_a_private_one_and_keeps_the_provider_open() -> None:
    provider = ScriptedProvider(lambda request: f"answer to {_last_user(request)}")
    agent = Agent(provider, tools=[echo])
    assert Runtime.current() is None
    results = await agent.run_many(["a", "b", "c"], concurrency=2)
    assert [r.content for r in results] == ["answer to a", "answer to b", "answer to c"]
    assert not provider.closed  # the private runtime does not close the caller's provider
    assert agent._bound == {}
    assert await agent.run_many([]) == []
    with pytest.raises(ValueError, match="concurrency"):
        await agent.run_many(["a"], concurrency=0)


def test_as_completed_needs_a_running_runtime() -> None:
    agent = Agent(ScriptedProvider(lambda request: "x"))
    with pytest.raises(RuntimeError, match="needs a running Runtime"):
        agent.as_completed(["a"])


async def test_the_runtime_delegates_many_runs_to_anything_that_runs_many() -> None:
    """The kernel knows no agent: rt.run_many / rt.as_completed hand themselves to the object's methods."""
    calls: list[tuple[str, Any, int]] = []

    class Fake:
        async def run_many(
            self, inputs: Any, *, runtime: Runtime | None = None, concurrency: int = 100, progress: Any = None
        ) -> list[str]:
            calls.append(("run_many", runtime, concurrency))
            return [f"ran {i}" for i in inputs]

        def as_completed(self, inputs: Any, *, runtime: Runtime | None = None, concurrency: int = 100) -> Any:
            calls.append(("as_completed", runtime, concurrency))
            return ["completions"]

    async with Runtime() as rt:
        assert await rt.run_many(Fake(), [1, 2], concurrency=7) == ["ran 1", "ran 2"]
        assert rt.as_completed(Fake(), [1], concurrency=3) == ["completions"]  # type: ignore[comparison-overlap]
    assert calls == [("run_many", rt, 7), ("as_completed", rt, 3)]
