"""Ctrl-C in a thread whose loop waits on a run handed to another thread's runtime (a bound agent): the run there
is cancelled and waited for, on every pairing of backends — "a call never outlives its caller".

asyncio turns Ctrl-C into a cancellation of its main task; trio raises ``KeyboardInterrupt`` itself at the
waiting checkpoint, which the caller's side used not to answer: the run went on in the other loop, its model
call and its spending, its result thrown away.  A real SIGINT, so a subprocess (its main thread is the one a
signal reaches); real clocks, generous bounds.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = r'''
import os, signal, sys, threading, time
import anyio
from agentactors import Agent, Runtime, ScriptedProvider

HOST, CALLER = sys.argv[1], sys.argv[2]
# A test runner's workers ignore SIGINT, and a child inherits that: Python then installs no handler of its own.
signal.signal(signal.SIGINT, signal.default_int_handler)
seen = []
ended = threading.Event()

async def answer(request):
    try:
        await anyio.sleep(10)
        seen.append("finished")
        return "late"
    except BaseException as exc:
        seen.append("cancelled:" + type(exc).__name__)
        raise
    finally:
        ended.set()

ready, stop, box = threading.Event(), threading.Event(), {}

def host():
    async def main():
        async with Runtime(drain_timeout=5) as rt:
            box["agent"] = Agent(ScriptedProvider(answer)).bind(rt)
            ready.set()
            while not stop.is_set():
                await anyio.sleep(0.02)
    anyio.run(main, backend=HOST)

thread = threading.Thread(target=host)
thread.start()
ready.wait()
threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
try:
    anyio.run(box["agent"].run, "x", backend=CALLER)
    seen.append("caller-returned")
except KeyboardInterrupt:
    seen.append("caller-interrupted")
ended.wait(5)
seen.append("runtime-closing")  # a run left going would be cancelled only now, by the runtime's exit
stop.set()
thread.join()
print(" ".join(seen))
'''


@pytest.mark.parametrize("caller", ["asyncio", "trio"])
@pytest.mark.parametrize("host", ["asyncio", "trio"])
def test_ctrl_c_in_the_caller_cancels_the_run_in_the_other_loop(host: str, caller: str, tmp_path: Path) -> None:
    script = tmp_path / "interrupted.py"
    script.write_text(SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), host, caller], capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    events = done.stdout.split()
    assert "caller-interrupted" in events, done.stdout
    assert events[-1] == "runtime-closing" and any(e.startswith("cancelled:") for e in events), done.stdout
