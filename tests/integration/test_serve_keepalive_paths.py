"""An unknown path on the OpenAI app is named as the client sent it: with its ``/v1`` and the mount's ``root_path``,
not the app's route inside them (``Unknown path: /nothing`` for a request to ``/v1/nothing`` sent the client looking
for a path it never asked for)."""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from typing import Any

import pytest

from agentactors import Agent, ScriptedProvider
from agentactors.serve import openai_app

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


async def answer(scope: dict[str, Any], method: str = "GET") -> tuple[int, dict[str, Any]]:
    """The app's answer to a GET of ``scope`` (driven in-process: no I/O)."""
    app = openai_app({"a": Agent(ScriptedProvider(["hi"]), name="a")})
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> MutableMapping[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    await app({"type": "http", "method": method, "headers": [], **scope}, receive, send)
    return sent[0]["status"], json.loads(b"".join(m.get("body", b"") for m in sent[1:]))


@pytest.mark.parametrize(
    ("scope", "shown"),
    [
        ({"path": "/v1/nothing", "root_path": ""}, "/v1/nothing"),
        ({"path": "/nothing", "root_path": ""}, "/nothing"),
        # A server that leaves the mount's prefix on the path (uvicorn --root-path, Starlette's Mount) ...
        ({"path": "/openai/v1/nothing", "root_path": "/openai"}, "/openai/v1/nothing"),
        # ... and one that takes it off (the older ASGI reading): the client sent the prefix all the same.
        ({"path": "/v1/nothing", "root_path": "/openai"}, "/openai/v1/nothing"),
    ],
)
async def test_an_unknown_path_is_named_as_the_client_sent_it(scope: dict[str, Any], shown: str) -> None:
    status, body = await answer(scope)
    assert status == 404
    assert body["error"]["message"] == f"Unknown path: {shown}"
    assert body["error"]["code"] == "unknown_url"


async def test_a_long_unknown_path_is_clipped_in_the_message() -> None:
    status, body = await answer({"path": "/v1/" + "x" * 100_000, "root_path": ""})
    assert status == 404
    message = body["error"]["message"]
    assert message.startswith("Unknown path: /v1/xxx") and len(message) < 300


async def test_a_method_not_allowed_names_the_path_as_sent_too() -> None:
    status, body = await answer({"path": "/openai/v1/chat/completions", "root_path": "/openai"}, "GET")
    assert status == 405
    assert body["error"]["message"] == "GET is not allowed on /openai/v1/chat/completions"
