"""Misbehaving tools, end to end over loopback HTTP: every case ends as a result through ``agent.run`` and
``rt.run_many`` on both backends, and the request after the tool's step is one the (strict) vendor accepts.

The model is a FakeVendor on 127.0.0.1 speaking the OpenAI wire in strict mode — it rejects, as the real
API does, a follow-up with two results for one call id.  It calls the tool its prompt names, then quotes
the tool results it was sent; so an answer proves the step after the tool was encoded, sent and accepted.
Issue 10, items 1, 5, 6 and 7; docs/reliability.md, "Tool outcomes".
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from agentactors.actors import Runtime, worker_threads
from agentactors.agent.batch import results_of
from agentactors.agent.core import Agent
from agentactors.providers.openai.provider import OpenAIProvider
from agentactors.testing import FakeReply, FakeToolCall, RecordedRequest
from agentactors.testing.fakevendor import FakeVendor
from agentactors.tools import Tool, ToolStatus, tool
from tests.support.paths import ROOT
from tests.support.signals import default_sigint

pytestmark = pytest.mark.anyio

KEY = "sk-reliability-tools-0c9e4b7a"


class AuthorsOwn(BaseException):
    """A BaseException subclass a tool author defined."""


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no message for you")


def _nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def _leaked() -> BaseException:
    # What a library leaks: asyncio's CancelledError.  On asyncio it is the cancellation class itself,
    # raised while no cancel scope is cancelled; on trio an ordinary BaseException.
    return asyncio.CancelledError("a library let this one out")


@tool
async def leaks_cancellation() -> str:
    """Raises a CancelledError no scope asked for."""
    await anyio.sleep(0.01)
    raise _leaked()


@tool
def wrapped_cli(argv: list[str]) -> str:
    """A CLI wrapped as a tool: argparse exits on bad arguments."""
    import argparse

    parser = argparse.ArgumentParser(prog="report")
    parser.add_argument("--year", type=int, required=True)
    return str(parser.parse_args(argv).year)


@tool
async def raises_its_own() -> str:
    """Raises a BaseException of the author's own."""
    raise AuthorsOwn("the author's own signal")


@tool
async def unprintable_error() -> str:
    """Raises an exception whose __str__ raises."""
    raise Unprintable


@tool
async def deep_result() -> list[Any]:
    """Returns a result nested 100,000 deep."""
    return _nested(100_000)


@tool
async def surrogate_text() -> str:
    """Returns text with a lone surrogate (bytes decoded with surrogateescape)."""
    return b"caf\xe9 au lait".decode("utf-8", "surrogateescape")


@tool
async def echo(text: str) -> str:
    """Echoes its text."""
    return f"echo {text}"


# prompt -> (tool the model calls, its arguments, the status expected, a text the result starts with)
CASES: dict[str, tuple[str, dict[str, Any], ToolStatus, str]] = {
    "stray-cancel": ("leaks_cancellation", {}, ToolStatus.error, "Error: CancelledError: a library let this one out"),
    "sys-exit": ("wrapped_cli", {"argv": ["--month", "3"]}, ToolStatus.error, "Error: SystemExit: 2"),
    "own-base": ("raises_its_own", {}, ToolStatus.error, "Error: AuthorsOwn: the author's own signal"),
    "unprintable": ("unprintable_error", {}, ToolStatus.error, "Error: Unprintable (its message could not be read)"),
    "deep": ("deep_result", {}, ToolStatus.error, "Error: TypeError: the tool returned a list that cannot be sent"),
    "surrogate": ("surrogate_text", {}, ToolStatus.ok, "caf\ufffd au lait"),
}
TOOLS: list[Tool[Any, Any]] = [
    leaks_cancellation, wrapped_cli, raises_its_own, unprintable_error, deep_result, surrogate_text, echo
]


def _model(request: RecordedRequest) -> Any:
    """The fake model: call what the prompt names (twice under one id for "duplicate-ids"), then quote results."""
    conversation = request.conversation
    assert conversation is not None
    prompt = conversation.last_user_text
    if conversation.tool_results:
        return FakeReply(text="results: " + " | ".join(r.content for r in conversation.tool_results))
    if prompt == "duplicate-ids":
        return [FakeToolCall("echo", {"text": "a"}, id="call_dup"), FakeToolCall("echo", {"text": "b"}, id="call_dup")]
    if prompt in CASES:
        name, arguments, _, _ = CASES[prompt]
        return FakeToolCall(name, arguments)
    return FakeReply(text=f"plain answer to {prompt}")


@pytest.fixture(scope="module")
def vendor() -> Iterator[FakeVendor]:
    with FakeVendor(expected_api_key=KEY) as fv:  # strict: rejects what the real API rejects
        fv.on(_model)
        yield fv


def _agent(fv: FakeVendor, **options: Any) -> Agent:
    provider = OpenAIProvider("gpt-fake", api_key=KEY, base_url=fv.openai_base_url)
    return Agent(provider, tools=TOOLS, nudges=False, **options)


def _check(prompt: str, content: str, tool_results: list[tuple[bool, str]]) -> None:
    _, _, status, start = CASES[prompt]
    ((is_error, text),) = tool_results
    assert is_error == (status is not ToolStatus.ok), (prompt, text)
    assert text.startswith(start), (prompt, text)
    assert content == f"results: {text}"  # the vendor accepted the next request and saw the result
    content.encode("utf-8")


def _tool_messages(result: Any) -> list[tuple[Any, str]]:
    return [(m.is_error, m.content) for m in result.messages if m.role == "tool"]


@pytest.mark.parametrize("prompt", sorted(CASES))
async def test_each_misbehaving_tool_ends_as_a_result_of_agent_run(vendor: FakeVendor, prompt: str) -> None:
    agent = _agent(vendor)
    async with agent.provider:  # a run without a Runtime leaves closing the provider to its owner
        result = await agent.run(prompt)
    assert result.ok and not result.generation_failed, result.error
    _check(prompt, result.content, _tool_messages(result))


async def test_every_misbehaving_tool_in_one_batch_loses_no_run(vendor: FakeVendor) -> None:
    inputs = [p for prompt in sorted(CASES) for p in (prompt, f"neighbour of {prompt}")] + ["duplicate-ids"]
    agent = _agent(vendor)
    async with Runtime() as rt:
        for concurrency in (1, 4):
            results = await rt.run_many(agent, inputs, concurrency=concurrency)
            assert len(results) == len(inputs)
            for prompt, result in zip(inputs, results, strict=True):
                assert result.messages[0].content == prompt  # results[i] is inputs[i]'s
                assert result.ok, (prompt, result.error)
                if prompt in CASES:
                    _check(prompt, result.content, _tool_messages(result))
                elif prompt != "duplicate-ids":
                    assert result.content == f"plain answer to {prompt}"
            duplicate = results[-1]
            assert [c.id for c in duplicate.tool_calls] == ["call_dup", "call_dup_2"]
            assert duplicate.content == "results: echo a | echo b"
        await rt.wait_idle()
        assert rt.stats().tasks == 0


async def test_duplicate_call_ids_run_once_each_and_the_next_request_is_accepted(vendor: FakeVendor) -> None:
    before = len(vendor.requests)
    agent = _agent(vendor)
    async with agent.provider:
        result = await agent.run("duplicate-ids")
    assert result.ok and result.content == "results: echo a | echo b"
    follow_up = vendor.requests[before + 1]
    assert follow_up.status == 200 and follow_up.conversation is not None
    assert [c.id for c in follow_up.conversation.tool_calls] == ["call_dup", "call_dup_2"]
    assert [r.call_id for r in follow_up.conversation.tool_results] == ["call_dup", "call_dup_2"]


async def test_stuck_sync_tools_do_not_starve_later_runs(vendor: FakeVendor) -> None:
    """More stuck sync calls than anyio's default limiter has threads (40): a later sync tool still runs."""
    release = threading.Event()
    started: list[int] = []

    @tool(timeout=0.3)
    def stuck(n: int) -> str:
        """Blocks past its timeout."""
        started.append(n)
        release.wait(300)  # released by the test: the bound only keeps a failed test from hanging
        return "late"

    @tool(timeout=5)
    def quick() -> str:
        """Returns at once."""
        return "quick"

    def model(request: RecordedRequest) -> Any:
        conversation = request.conversation
        assert conversation is not None
        if conversation.tool_results:
            return FakeReply(text=conversation.tool_results[-1].content[:40])
        prompt = conversation.last_user_text
        return FakeToolCall("quick", {}) if prompt == "quick" else FakeToolCall("stuck", {"n": int(prompt)})

    provider = OpenAIProvider("gpt-stuck", api_key=KEY, base_url=vendor.openai_base_url)
    vendor.on(model, model="gpt-stuck")
    agent = Agent(provider, tools=[stuck, quick], nudges=False)
    before = worker_threads().abandoned
    try:
        async with Runtime() as rt:
            # Forty stuck calls fill the threads the pool runs at once; each is abandoned at its timeout.  (Nearly
            # all start: a slot the pool lends for a moment to something else can make a call wait past its
            # timeout, as in one batch of 48 the last eight would — a slot frees at a timeout, and a call
            # waiting for one times out at about the same moment.)
            results = await rt.run_many(agent, [str(n) for n in range(40)], concurrency=40)
            assert all(r.ok and r.content.startswith("Tool 'stuck' timed out") for r in results)
            first = len(started)
            assert first + 8 > 40
            # Their threads are all still blocked, yet eight more calls start — more stuck threads than the pool
            # runs at once: an abandoned call freed its slot.
            results = await rt.run_many(agent, [str(n) for n in range(40, 48)], concurrency=8)
            assert all(r.ok and r.content.startswith("Tool 'stuck' timed out") for r in results)
            assert sorted(started[first:]) == list(range(40, 48))
            assert rt.stats().abandoned_threads == before + len(started)
            later = await agent.run("quick")
            assert later.ok and later.content == "quick"
    finally:
        release.set()
        vendor.on(None, model="gpt-stuck")
    with anyio.fail_after(60):
        while worker_threads().abandoned > before:  # noqa: ASYNC110 - threads change the count
            await anyio.sleep(0.01)


async def test_a_keyboard_interrupt_in_a_tool_keeps_its_meaning_and_leaves_no_half_batch(vendor: FakeVendor) -> None:
    """In-process, on both backends: the interrupt leaves agent.run; run_many re-raises it with every result."""

    fast_done: anyio.Event | None = None  # in the batch, the interrupt waits for "fast 1" to finish

    @tool
    async def interrupting() -> str:
        """Raises KeyboardInterrupt (a signal handler raising it in the tool's frame)."""
        if fast_done is not None:
            # Without this the two first runs race: on a busy machine the interrupt could land while
            # "fast 1" is still in flight, and it would (rightly) come back cancelled.
            await fast_done.wait()
        raise KeyboardInterrupt

    def model(request: RecordedRequest) -> Any:
        conversation = request.conversation
        assert conversation is not None
        prompt = conversation.last_user_text
        if prompt == "interrupt" and not conversation.tool_results:
            return FakeToolCall("interrupting", {})
        return FakeReply(text=f"done {prompt}", latency=0.3 if prompt.startswith("slow") else 0.0)

    vendor.on(model, model="gpt-interrupt")
    try:
        provider = OpenAIProvider("gpt-interrupt", api_key=KEY, base_url=vendor.openai_base_url)
        agent = Agent(provider, tools=[interrupting], nudges=False)
        with pytest.raises(KeyboardInterrupt):
            await agent.run("interrupt")
        inputs = ["fast 1", "interrupt", "slow 1", "slow 2"]
        fast_done = anyio.Event()
        done_event = fast_done

        def progress(done: int, failed: int, total: int) -> None:
            if done >= 1:
                done_event.set()

        async with Runtime() as rt:
            with pytest.raises(KeyboardInterrupt) as info:
                await rt.run_many(agent, inputs, concurrency=2, progress=progress)
            await rt.wait_idle()
            assert rt.stats().tasks == 0
        results = results_of(info.value)
        assert results is not None and len(results) == len(inputs)
        assert results[0].content == "done fast 1"
        assert all(r.cancelled for r in results[1:])
        assert [r.messages[0].content for r in results] == inputs
    finally:
        vendor.on(None, model="gpt-interrupt")


# --- Ctrl-C, for real, per backend ---------------------------------------------------------------

_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, threading
    import anyio
    from agentactors import Agent, ScriptedProvider, ToolCall, tool
    from agentactors.actors import Runtime
    from agentactors.agent.batch import results_of

    calls = []

    @tool(timeout=None)
    async def work(n: int) -> str:
        calls.append(n)
        # Runs 3 and 4 hold (as long as it takes): run 4 starts only once run 2 has finished (two at a
        # time), so when it is called, three runs are done and two hold, however slow the machine is.
        if n == 4:  # Ctrl-C from outside, while the batch waits
            threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT)).start()
        if n >= 3:
            await anyio.sleep_forever()
        return f"worked {n}"

    def model(request):
        last = request.messages[-1]
        if last.role == "user":
            return ToolCall(f"c{last.content}", "work", {"n": int(last.content)})
        return "done " + last.content

    async def main():
        agent = Agent(ScriptedProvider(model), tools=[work])
        async with Runtime() as rt:
            return await rt.run_many(agent, [str(i) for i in range(8)], concurrency=2)

    try:
        anyio.run(main, backend=sys.argv[1])
    except KeyboardInterrupt as exc:
        results = results_of(exc)
        print("interrupted", len(results), sum(r.ok for r in results), sum(r.cancelled for r in results))
    else:
        print("returned")
    """
)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_ctrl_c_during_run_many_raises_keyboard_interrupt_with_every_result(backend: str) -> None:
    """trio delivers Ctrl-C to the batch's task itself; on asyncio anyio.run cancels the main task and raises
    KeyboardInterrupt once it has unwound.  Either way the interrupt reaches the caller of anyio.run, and
    results_of() finds one result per input: 3 finished, 5 cancelled."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, backend],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
        preexec_fn=default_sigint,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["interrupted", "8", "3", "5"], done.stdout + done.stderr
