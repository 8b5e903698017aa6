"""``agent.stream(...)`` called where no event loop runs says so, in the library's words.

It failed deep inside anyio (``NoEventLoopError`` from the handle's cancel scope), naming nothing a user of
``agent.stream`` wrote (found writing programs from the docs alone).
"""

from __future__ import annotations

import pytest

from agentactors import Agent, ScriptedProvider


def test_stream_outside_an_event_loop_is_a_clear_runtime_error() -> None:
    provider = ScriptedProvider(["x"])
    with pytest.raises(RuntimeError, match=r"agent\.stream\(\) makes a handle for async code.*run_sync") as raised:
        Agent(provider).stream("hi")
    assert raised.value.__cause__ is None and raised.value.__suppress_context__
    assert provider.calls == 0
