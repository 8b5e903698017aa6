"""``Agent.run_sync``: ``agent.run`` from code that is not async, and a clear refusal where that cannot work.

From a plain thread it makes an event loop for the call (asyncio or trio) with the private runtime ``run``
makes; for an agent bound to a runtime running in another thread's loop it hands the run to that loop and
waits; inside a running loop of its own thread it refuses at once (blocking there would stop the loop the
run needs).  Ctrl-C stops the run and reaches the caller as ``KeyboardInterrupt`` (a real SIGINT to a child
process).  Most tests here are sync functions: that is what ``run_sync`` is for.  Real threads and loops: no
virtual time; every wait is bounded generously.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import anyio.from_thread
import attrs
import pytest
import sniffio

from agentactors import Agent, InMemoryRecorder, Runtime, ScriptedProvider, ToolCall, ToolContext, tool
from agentactors.errors import RunDeadlineExceededError, ToolStatusError
from agentactors.gateway.cost_budget import CostBudget
from agentactors.loop.result import RunResult
from agentactors.messages import LLMRequest
from agentactors.settings import ModelSettings
from agentactors.tools.results import ToolStatus
from tests.support.paths import ROOT
from tests.support.signals import default_sigint

BACKENDS = pytest.mark.parametrize("backend", ["asyncio", "trio"])
HOSTS = pytest.mark.parametrize("host", ["asyncio", "trio"])


@tool
async def lookup(city: str) -> str:
    """Weather for a city."""
    return f"{city}: 21 °C"


def _agent() -> Agent[Any]:
    script = [ToolCall("c1", "lookup", {"city": "Lisbon"}), "Sunny in Lisbon."]
    return Agent(ScriptedProvider(script), tools=[lookup], system="Be brief.")


def _where_agent(seen: list[tuple[int, str]]) -> Agent[Any]:
    """An agent whose one tool records the thread and the async library it ran in."""

    @tool
    async def where() -> str:
        """Where this runs."""
        seen.append((threading.get_ident(), sniffio.current_async_library()))
        return "here"

    return Agent(ScriptedProvider([ToolCall("c1", "where", {}), "done"]), tools=[where])


def _same(a: RunResult[Any], b: RunResult[Any]) -> bool:
    """Equal but for the run id (every run has its own)."""
    return attrs.evolve(a, run_id="") == attrs.evolve(b, run_id="")


def _in_thread(fn: Any) -> Any:
    """``fn()`` in a new plain thread (no event loop in it): what it returned, or what it raised."""
    outcome: list[Any] = []

    def body() -> None:
        try:
            outcome.append(fn())
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=body)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "the call never returned"
    return outcome[0]


@contextmanager
def _runtime_in_thread(host: str, **kwargs: Any) -> Iterator[Runtime]:
    """A runtime entered in another thread's event loop (``host``'s), running for the block."""
    with anyio.from_thread.start_blocking_portal(host) as portal, portal.wrap_async_context_manager(
        Runtime(**kwargs)
    ) as rt:
        yield rt


# --- what it returns ------------------------------------------------------------------------------


@BACKENDS
def test_the_result_is_the_one_run_returns(backend: str) -> None:
    synced = _agent().run_sync("Weather in Lisbon?", backend=backend)
    awaited = anyio.run(_agent().run, "Weather in Lisbon?", backend=backend)
    assert synced.ok and synced.content == "Sunny in Lisbon." and synced.steps == 2
    assert _same(synced, awaited), (synced, awaited)


def test_the_default_backend_is_asyncio() -> None:
    seen: list[tuple[int, str]] = []
    result = _where_agent(seen).run_sync("go")
    assert result.content == "done"
    assert seen == [(threading.get_ident(), "asyncio")]


@BACKENDS
def test_it_works_from_a_plain_thread(backend: str) -> None:
    seen: list[tuple[int, str]] = []
    agent = _where_agent(seen)
    result = _in_thread(lambda: agent.run_sync("go", backend=backend))
    assert isinstance(result, RunResult) and result.content == "done", result
    [(thread, library)] = seen
    assert thread != threading.get_ident() and library == backend


def test_one_agent_runs_again_in_each_new_loop() -> None:
    # Each call has a loop and a private runtime of its own: nothing of the last one (its actors) is reused.
    def model(request: LLMRequest) -> Any:
        if request.messages[-1].role == "user":
            return ToolCall("c1", "lookup", {"city": request.messages[-1].content})
        return "seen " + request.messages[-1].content

    provider = ScriptedProvider(model)
    agent = Agent(provider, tools=[lookup])
    for city, backend in [("Oslo", "asyncio"), ("Lisbon", "trio"), ("Rome", "asyncio")]:
        assert agent.run_sync(city, backend=backend).content == f"seen {city}: 21 °C"
    assert not provider.closed  # a private runtime closes no provider: it is the caller's


# --- the options are run's -------------------------------------------------------------------------


def test_every_option_reaches_run(monkeypatch: pytest.MonkeyPatch) -> None:
    received: dict[str, Any] = {}
    answer: RunResult[Any] = RunResult(content="recorded", messages=())

    async def recording_run(self: Agent[Any], prompt: Any, **options: Any) -> RunResult[Any]:
        received.update(options, prompt=prompt, agent=self)
        return answer

    monkeypatch.setattr(Agent, "run", recording_run)
    agent = _agent()
    budget = CostBudget(1.0)
    on_token = print
    deps = object()
    settings = ModelSettings(temperature=0.25)
    result = agent.run_sync(
        "p",
        on_token=on_token,
        deps=deps,
        settings=settings,
        deadline=12.5,
        priority=3,
        input_key="input-7",
        cost_limit=budget,
    )
    assert result is answer
    assert received == {
        "prompt": "p",
        "agent": agent,
        "on_token": on_token,
        "deps": deps,
        "runtime": None,
        "settings": settings,
        "deadline": 12.5,
        "priority": 3,
        "input_key": "input-7",
        "cost_limit": budget,
    }


def test_settings_deps_input_key_and_on_token_reach_the_run() -> None:
    reached: list[Any] = []

    @tool
    async def peek(ctx: ToolContext) -> str:
        """Peek at the context."""
        reached.append((ctx.deps, ctx.input_key))
        return "peeked"

    def model(request: LLMRequest) -> Any:
        reached.append(request.temperature)
        return ToolCall("c1", "peek", {}) if request.messages[-1].role == "user" else "all seen"

    tokens: list[str] = []
    deps = object()
    agent = Agent(ScriptedProvider(model), tools=[peek])
    result = agent.run_sync(
        "go", settings=ModelSettings(temperature=0.25), deps=deps, input_key="k-1", on_token=tokens.append
    )
    assert result.content == "all seen", result.error
    assert reached == [0.25, (deps, "k-1"), 0.25]
    assert "".join(tokens) == "all seen"


@BACKENDS
def test_a_deadline_ends_the_run_as_run_does(backend: str) -> None:
    async def slow(request: LLMRequest) -> str:
        await anyio.sleep(30)
        return "too late"

    started = time.monotonic()
    result = Agent(ScriptedProvider(slow)).run_sync("go", deadline=0.2, backend=backend)
    assert isinstance(result.error, RunDeadlineExceededError), result
    assert time.monotonic() - started < 10


# --- the errors are run's -----------------------------------------------------------------------------


def test_an_empty_prompt_is_runs_value_error_unwrapped() -> None:
    with pytest.raises(ValueError) as raised:
        _agent().run_sync("")
    assert type(raised.value) is ValueError  # not the task group's ExceptionGroup around it


@BACKENDS
def test_what_the_run_raises_is_raised_as_it_is(backend: str) -> None:
    @tool
    def broken() -> str:
        """Broken."""
        raise ValueError("x")

    agent = Agent(
        ScriptedProvider([ToolCall("c", "broken", {}), "x"]), tools=[broken], on_tool_status={ToolStatus.error: "raise"}
    )
    with pytest.raises(ToolStatusError):
        agent.run_sync("q", backend=backend)


def test_an_unknown_backend_is_a_value_error_naming_it() -> None:
    provider = ScriptedProvider("never")
    with pytest.raises(ValueError, match="'curio'"):
        Agent(provider).run_sync("hi", backend="curio")
    assert provider.calls == 0


def test_a_closed_runtime_is_the_error_run_raises() -> None:
    rt = Runtime()

    async def enter_and_leave() -> None:
        async with rt:
            pass

    anyio.run(enter_and_leave)
    agent = _agent()
    with pytest.raises(RuntimeError, match="has closed") as from_sync:
        agent.bind(rt).run_sync("hi")
    with pytest.raises(RuntimeError) as from_run:
        anyio.run(agent.bind(rt).run, "hi")
    assert str(from_sync.value) == str(from_run.value)
    with pytest.raises(RuntimeError, match="has closed"):
        agent.run_sync("hi", runtime=rt)


def test_a_runtime_never_entered_is_the_error_run_raises() -> None:
    with pytest.raises(RuntimeError, match="never entered"):
        _agent().run_sync("hi", runtime=Runtime())


# --- inside a running event loop: refused at once ---------------------------------------------------


@pytest.mark.anyio
async def test_inside_a_running_loop_it_refuses_and_says_to_await_run() -> None:
    provider = ScriptedProvider("never")
    with pytest.raises(RuntimeError, match=r"`await agent\.run\(\.\.\.\)` instead"):
        Agent(provider).run_sync("hi")
    assert provider.calls == 0


def test_in_a_callback_of_asyncios_loop_it_refuses_too() -> None:
    """A plain callback (``loop.call_soon``: no task runs it, so sniffio sees no library) blocks the loop all the
    same: the same refusal, not asyncio's 'Cannot run the event loop while another loop is running'."""
    import asyncio

    provider = ScriptedProvider("never")
    seen: list[BaseException] = []

    def callback() -> None:
        try:
            Agent(provider).run_sync("hi")
        except BaseException as exc:  # what it raised is the test's to look at
            seen.append(exc)

    async def main() -> None:
        asyncio.get_running_loop().call_soon(callback)
        await asyncio.sleep(0)
        await asyncio.sleep(0)

    asyncio.run(main())
    assert len(seen) == 1 and isinstance(seen[0], RuntimeError), seen
    assert "await agent.run(...)" in str(seen[0]) and provider.calls == 0


@pytest.mark.anyio
async def test_inside_a_runtime_of_this_loop_it_refuses_too() -> None:
    provider = ScriptedProvider("never")
    with anyio.fail_after(10):
        async with Runtime() as rt:
            for agent in (Agent(provider), Agent(provider).bind(rt)):
                with pytest.raises(RuntimeError, match=r"await agent\.run"):
                    agent.run_sync("hi")
            with pytest.raises(RuntimeError, match=r"await agent\.run"):
                Agent(provider).run_sync("hi", runtime=rt)
    assert provider.calls == 0


@pytest.mark.anyio
async def test_a_sync_function_called_from_a_task_is_refused(anyio_backend: Any) -> None:
    backend = anyio_backend if isinstance(anyio_backend, str) else anyio_backend[0]

    def view() -> str:  # a sync helper an async view calls: the loop is this thread's all the same
        return Agent(ScriptedProvider("never")).run_sync("hi").content

    with pytest.raises(RuntimeError, match=f"{backend}'s event loop is running"):
        view()


# --- handed to a runtime in another thread's loop ---------------------------------------------------


@HOSTS
@BACKENDS
def test_a_bound_agent_hands_the_run_to_its_runtimes_loop(host: str, backend: str) -> None:
    seen: list[tuple[int, str]] = []
    recorder = InMemoryRecorder()
    agent = _where_agent(seen)
    with _runtime_in_thread(host, recorders=[recorder]) as rt:
        result = agent.bind(rt).run_sync("go", backend=backend)
        home = rt.thread
    assert result.ok and result.content == "done", result
    assert seen == [(home, host)] and home != threading.get_ident()  # the tool ran in the runtime's loop
    assert any(e.type == "run.finished" for e in recorder.events)  # and the runtime's recorders saw the run


@HOSTS
def test_runtime_given_hands_the_run_over_too(host: str) -> None:
    seen: list[tuple[int, str]] = []
    with _runtime_in_thread(host) as rt:
        result = _where_agent(seen).run_sync("go", runtime=rt)
        home = rt.thread
    assert result.content == "done" and seen == [(home, host)]


@HOSTS
def test_from_several_worker_threads_at_once(host: str) -> None:
    def model(request: LLMRequest) -> str:
        return "echo " + request.messages[-1].content

    with _runtime_in_thread(host) as rt:
        agent = Agent(ScriptedProvider(model)).bind(rt)
        results: dict[int, str] = {}

        def worker(i: int) -> None:
            results[i] = agent.run_sync(f"request {i}").content

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert results == {i: f"echo request {i}" for i in range(8)}


@HOSTS
def test_an_unbound_agent_beside_a_running_runtime_warns_at_the_callers_line(host: str) -> None:
    with _runtime_in_thread(host), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = _agent().run_sync("go")
    assert result.content == "Sunny in Lisbon."
    [warning] = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert "found no Runtime" in str(warning.message) and warning.filename == __file__


@pytest.mark.anyio
async def test_a_sync_tool_may_call_run_sync_and_the_run_goes_to_the_runtime() -> None:
    seen: list[tuple[int, str]] = []
    child = _where_agent(seen)

    @tool
    def ask_child() -> str:
        """Blocking code in a worker thread that runs an agent."""
        return child.run_sync("go").content

    parent = Agent(ScriptedProvider([ToolCall("c1", "ask_child", {}), "parent done"]), tools=[ask_child])
    with anyio.fail_after(30):
        async with Runtime() as rt:
            result = await parent.run("go")
    assert result.content == "parent done", result
    assert result.messages[2].content == "done"  # the child's answer, as the tool's result
    assert seen == [(rt.thread, sniffio.current_async_library())]  # the child ran in the runtime's loop


# --- Ctrl-C -----------------------------------------------------------------------------------------

_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, threading, time
    signal.signal(signal.SIGINT, signal.default_int_handler)  # an xdist worker's children ignore SIGINT
    import anyio, anyio.from_thread
    from agentactors import Agent, Runtime, ScriptedProvider, ToolCall, tool

    backend, where = sys.argv[1:3]
    state = []

    @tool(timeout=None)
    async def hold() -> str:
        '''Holds until cancelled.'''
        threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGINT)).start()
        try:
            await anyio.sleep(60)
        except BaseException:
            state.append("tool cancelled")
            raise
        return "held"

    agent = Agent(ScriptedProvider([ToolCall("c1", "hold", {}), "done"]), tools=[hold])
    started = time.monotonic()
    try:
        if where == "private":
            result = agent.run_sync("go", backend=backend)
        else:
            with anyio.from_thread.start_blocking_portal(backend) as portal:
                with portal.wrap_async_context_manager(Runtime()) as rt:
                    try:
                        result = agent.bind(rt).run_sync("go", backend=backend)
                    finally:
                        print("state at the interrupt", state, flush=True)
    except KeyboardInterrupt:
        print("interrupted", state, time.monotonic() - started < 30)
    except BaseException as exc:
        print("raised", repr(exc))
    else:
        print("returned", result.content)
    """
)


@pytest.mark.parametrize("where", ["private", "bound"])
@BACKENDS
def test_ctrl_c_stops_the_run_and_raises_keyboard_interrupt(backend: str, where: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, backend, where],
        capture_output=True, text=True, timeout=120, env=env, check=False, preexec_fn=default_sigint,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    if where == "bound":  # the run handed to the other loop had ended there before the interrupt came back
        assert lines[:1] == ["state at the interrupt ['tool cancelled']"], done.stdout + done.stderr[-3000:]
        lines = lines[1:]
    assert lines == ["interrupted ['tool cancelled'] True"], done.stdout + done.stderr[-3000:]


_MID_CODE = textwrap.dedent(
    """
    import os, signal, sys
    signal.signal(signal.SIGINT, signal.default_int_handler)  # an xdist worker's children ignore SIGINT
    import anyio
    from agentactors import Agent, ScriptedProvider, ToolCall, tool

    state = []

    @tool(timeout=None)
    async def bookkeeping() -> str:
        '''Ctrl-C comes while it is in the middle of plain code.'''
        os.kill(os.getpid(), signal.SIGINT)  # (its Python handler runs at the next bytecode)
        state.append("the statement after the signal ran")
        try:
            await anyio.sleep(60)
        except BaseException:
            state.append("cancelled at its await")
            raise
        return "held"

    agent = Agent(ScriptedProvider([ToolCall("c1", "bookkeeping", {}), "done"]), tools=[bookkeeping])
    try:
        agent.run_sync("go", backend=sys.argv[1])
    except KeyboardInterrupt:
        print("interrupted", state)
    """
)


@BACKENDS
def test_ctrl_c_arrives_at_an_await_never_in_the_middle_of_code(backend: str) -> None:
    # trio's default raises KeyboardInterrupt in whatever code runs when the signal comes: in a finaliser it is
    # lost (Python prints "Exception ignored"), between a cancel scope's entry and its `with` it corrupts trio's
    # scope stack.  run_sync's loop takes it at the main task's next checkpoint, as asyncio's Runner does.
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _MID_CODE, backend],
        capture_output=True, text=True, timeout=120, env=env, check=False, preexec_fn=default_sigint,
    )
    assert done.stdout.splitlines() == [
        "interrupted ['the statement after the signal ran', 'cancelled at its await']"
    ], done.stdout + done.stderr[-3000:]
