"""Hostile requests to the served apps on 127.0.0.1 (uvicorn on asyncio, hypercorn on trio), sent with httpx and
the official ``openai`` SDK: a body past the library's JSON policy is a 400 in the app's error shape — not the
server's bare 500 after an exception escaped the app — and a run that ends without an answer is an error the
SDK raises, not an empty completion."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import openai
import pytest

from agentactors import Agent, ScriptedProvider, ToolCall, tool
from agentactors.serve import agui_app, openai_app
from tests.support.services import load_example, serving

# On trio, the openai SDK's client leaves its HTTP library's nested async generators for the collector even
# after a stream was read to its end; trio reports them as ResourceWarnings.  They are the client's, not the app's.
pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore:Async generator 'httpcore2:ResourceWarning"),
    pytest.mark.filterwarnings("ignore:Async generator 'httpx2:ResourceWarning"),
    pytest.mark.filterwarnings("ignore:Async generator 'openai:ResourceWarning"),
]
USER = {"role": "user", "content": "hello"}


@asynccontextmanager
async def served(app: Any, probe: str) -> AsyncIterator[str]:
    async with serving(app, load_example("serve_all"), probe=probe) as base:
        yield base


@tool(requires_approval=True)
def transfer(amount: int) -> str:
    """Move money (a person approves each call)."""
    return "moved"


async def test_bodies_past_the_json_policy_are_400s_in_openais_shape() -> None:
    provider = ScriptedProvider(["never"])
    bodies = [
        b"[" * 100_000 + b"]" * 100_000,
        b'{"model": "a", "messages": [{"role": "user", "content": "x"}], "n": ' + b"7" * 5000 + b"}",
    ]
    async with served(openai_app({"a": Agent(provider, name="a")}), "/v1/models") as base:
        async with httpx.AsyncClient(base_url=base + "/v1", timeout=20) as client:
            for body in bodies:
                response = await client.post("/chat/completions", content=body,
                                             headers={"content-type": "application/json"})
                assert response.status_code == 400, response.text[:200]
                assert response.json()["error"]["type"] == "invalid_request_error"
        async with openai.AsyncOpenAI(base_url=base + "/v1", api_key="none", max_retries=0, timeout=20) as sdk:
            with pytest.raises(openai.BadRequestError) as caught:
                await sdk.chat.completions.create(model="a", messages=[USER], temperature=10**400)  # type: ignore[list-item]
            assert caught.value.param == "temperature"
    assert provider.calls == 0


async def test_an_agui_body_past_the_json_policy_is_a_400() -> None:
    async with served(agui_app(Agent(ScriptedProvider(["never"]), name="a")), "/") as base:
        async with httpx.AsyncClient(base_url=base, timeout=20) as client:
            response = await client.post("/", content=b"[" * 100_000 + b"]" * 100_000,
                                         headers={"content-type": "application/json"})
    assert response.status_code == 400 and "deeper" in response.json()["detail"]


async def test_a_run_paused_for_approval_is_an_error_the_sdk_raises() -> None:
    script: list[Any] = [ToolCall("call-1", "transfer", {"amount": 5})] * 2
    app = openai_app({"bank": Agent(ScriptedProvider(script), tools=[transfer], name="bank")})
    async with served(app, "/v1/models") as base:
        async with openai.AsyncOpenAI(base_url=base + "/v1", api_key="none", max_retries=0, timeout=20) as sdk:
            with pytest.raises(openai.ConflictError) as caught:
                await sdk.chat.completions.create(model="bank", messages=[USER])  # type: ignore[list-item]
            assert caught.value.code == "approval_required"
            stream = await sdk.chat.completions.create(model="bank", messages=[USER], stream=True)  # type: ignore[list-item]
            assert isinstance(stream, openai.AsyncStream)
            with pytest.raises(openai.APIError, match="approval"):
                async for _ in stream:
                    pass
