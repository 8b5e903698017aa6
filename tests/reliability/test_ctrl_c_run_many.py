"""Ctrl-C in the middle of ``run_many``, for real (SIGINT to a child process), wherever the runs are.

Issue 24 reported ``results_of(exc)`` returning ``None`` in 4 of 8 interrupts with tool steps on asyncio
(trio fine): finished results lost.  Each case here interrupts a batch of 8 inputs, two at a time, at a
moment fixed by conditions rather than by the clock: runs 0-2 have finished, runs 3 and 4 hold — in an async
tool, in a sync tool's worker thread, or in a model request over HTTP — and run 4 reaching its hold point
sends the SIGINT.  Through ``rt.run_many`` in the caller's runtime and ``agent.run_many`` in a private one.

On both backends the interrupt must reach the caller of ``anyio.run`` as ``KeyboardInterrupt`` and
:func:`~agentactors.agent.batch.results_of` find all 8 results: the 3 finished ones as they ended (their
answers), the 5 others cancelled, each in its input's slot.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from tests.support.paths import ROOT
from tests.support.signals import default_sigint

_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, threading
    import anyio
    from agentactors import Agent, OpenAIProvider, ScriptedProvider, ToolCall, tool
    from agentactors.actors import Runtime
    from agentactors.agent.batch import results_of
    from agentactors.testing import FakeReply, FakeToolCall, FakeVendor

    backend, hold, entry = sys.argv[1:4]
    release = threading.Event()  # frees a held sync tool's thread once the interrupt is through
    fired = []

    def interrupt_once(n):
        # Run 4 starts only once run 2 has finished (two at a time, run 3 holding): three are done.
        if n == 4 and not fired:
            fired.append(n)
            threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT)).start()

    @tool(timeout=None)
    async def work(n: int) -> str:
        '''Works on n.'''
        if n >= 3 and hold == "async-tool":
            interrupt_once(n)
            await anyio.sleep_forever()
        return f"worked {n}"

    @tool(timeout=None)
    def sync_work(n: int) -> str:
        '''Works on n, blocking its thread.'''
        if n >= 3:
            interrupt_once(n)
            release.wait(120)
        return f"worked {n}"

    def vendor_model(request):
        conversation = request.conversation
        n = int(conversation.last_user_text)
        if not conversation.tool_results:
            return FakeToolCall("work", {"n": n})
        if n >= 3:
            interrupt_once(n)
            return FakeReply(text="too late", latency=600)
        return FakeReply(text=f"done {n}")

    def scripted(request):
        last = request.messages[-1]
        if last.role == "user":
            name = "sync_work" if hold == "sync-tool" else "work"
            return ToolCall(f"c{last.content}", name, {"n": int(last.content)})
        return "done " + request.messages[0].content

    async def main(vendor):
        if vendor is None:
            agent = Agent(ScriptedProvider(scripted), tools=[work, sync_work])
        else:
            provider = OpenAIProvider("gpt-ctrl-c", api_key="sk-ctrl-c", base_url=vendor.openai_base_url)
            agent = Agent(provider, tools=[work])
        inputs = [str(i) for i in range(8)]
        if entry == "agent":
            return await agent.run_many(inputs, concurrency=2)
        async with Runtime() as rt:
            return await rt.run_many(agent, inputs, concurrency=2)

    vendor = None
    if hold == "http-model":
        vendor = FakeVendor(latency=0.0)
        vendor.on(vendor_model)
        vendor.start()
    try:
        anyio.run(main, vendor, backend=backend)
    except KeyboardInterrupt as exc:
        results = results_of(exc)
        if results is None:
            print("lost")
        else:
            print("interrupted", len(results), sum(r.ok for r in results), sum(r.cancelled for r in results))
            print(" ".join(r.content.replace(" ", "_") if r.ok else "-" for r in results))
            print(" ".join(r.messages[0].content for r in results))
    else:
        print("returned")
    finally:
        release.set()
        if vendor is not None:
            vendor.stop()
    """
)


@pytest.mark.parametrize("entry", ["runtime", "agent"])
@pytest.mark.parametrize("hold", ["async-tool", "sync-tool", "http-model"])
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_ctrl_c_keeps_every_finished_result(backend: str, hold: str, entry: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, backend, hold, entry],
        capture_output=True, text=True, timeout=300, env=env, check=False, preexec_fn=default_sigint,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[:1] == ["interrupted 8 3 5"], done.stdout + done.stderr[-3000:]
    assert lines[1].split() == ["done_0", "done_1", "done_2", "-", "-", "-", "-", "-"]
    assert lines[2].split() == [str(i) for i in range(8)]  # each result in its input's slot
