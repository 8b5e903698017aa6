"""examples/service_trio.py refuses a request it cannot take as written, rather than reading something else into it.

A new user's first requests by hand (``{"prompt": null}``, a number, ``"timeout": true``, a line too long) used
to be answered as if they had asked something else: ``str(None)`` sent the model the prompt ``"None"``,
``float(True)`` made a one-second timeout, and a line past the limit closed the connection without a word.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from agentactors import Agent, LLMRequest, ScriptedProvider
from tests.support.services import load_example

pytestmark = pytest.mark.anyio


def echo(request: LLMRequest) -> str:
    last = request.messages[-1].content
    return f"echo {last}"


@pytest.mark.parametrize("prompt", [None, 5, ["hi"], {"text": "hi"}, True, ""])
async def test_a_prompt_that_is_not_a_non_empty_string_is_refused_and_nothing_is_asked(prompt: object) -> None:
    module = load_example("service_trio")
    provider = ScriptedProvider(echo)
    reply = await module.answer(Agent(provider), json.dumps({"prompt": prompt}).encode(), 5.0)
    assert "answer" not in reply, reply
    assert reply == {"error": module.BAD_REQUEST}
    assert provider.requests == [], "the model is never asked"


@pytest.mark.parametrize("given", [True, False, "5", None, [5]])
async def test_a_timeout_that_is_not_a_json_number_is_refused(given: object) -> None:
    module = load_example("service_trio")
    provider = ScriptedProvider(echo)
    reply = await module.answer(Agent(provider), json.dumps({"prompt": "hi", "timeout": given}).encode(), 5.0)
    assert "answer" not in reply, reply
    assert reply == {"error": module.BAD_TIMEOUT}
    assert provider.requests == []


async def test_a_string_prompt_and_a_number_timeout_are_answered() -> None:
    module = load_example("service_trio")
    agent = Agent(ScriptedProvider(echo))
    for request in ({"prompt": "hi"}, {"prompt": "hi", "timeout": 5}, {"prompt": "hi", "timeout": 2.5}):
        reply = await module.answer(agent, json.dumps(request).encode(), 5.0)
        assert reply["answer"] == "echo hi", reply


async def test_a_line_over_the_limit_gets_an_error_line_before_the_connection_closes() -> None:
    module = load_example("service_trio")
    async with anyio.create_task_group() as server:
        port = await server.start(partial(module.serve, ScriptedProvider(echo), port=0))
        with anyio.fail_after(20):
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                await stream.send(b'{"prompt": "' + b"x" * module.MAX_LINE + b'"}\n')
                received = await BufferedByteReceiveStream(stream).receive(4096)
        server.cancel_scope.cancel()
    assert received.endswith(b"\n"), "a reply line, not a connection closed without a word"
    reply: dict[str, Any] = json.loads(received)
    assert reply == {"error": module.LINE_TOO_LONG}
