"""examples/serve_all.py: one agent, one runtime, served as an OpenAI API, an MCP server and an AG-UI stream
on one port (uvicorn on asyncio, hypercorn on trio); each protocol's own client gets the agent's answer."""

from __future__ import annotations

import json

import httpx
import openai
import pytest
from ag_ui.core import Event, EventType
from mcp import Client
from pydantic import TypeAdapter

from agentactors import LLMRequest, ScriptedProvider
from tests.support.services import load_example, serving

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore:Async generator 'httpcore2:ResourceWarning"),
    pytest.mark.filterwarnings("ignore:Async generator 'httpx2:ResourceWarning"),
    pytest.mark.filterwarnings("ignore:Async generator 'openai:ResourceWarning"),
]


async def test_one_agent_three_protocols() -> None:
    module = load_example("serve_all")
    provider = ScriptedProvider(lambda request: f"answer to {request.messages[-1].content}")
    app = module.build_app(provider, api_keys=["sk-example"])
    async with serving(app, module, probe="/openai/v1/models") as base:
        async with openai.AsyncOpenAI(base_url=base + "/openai/v1", api_key="sk-example", max_retries=0) as client:
            completion = await client.chat.completions.create(
                model="assistant", messages=[{"role": "user", "content": "via openai"}]
            )
            assert completion.choices[0].message.content == "answer to via openai"
        async with Client(base + "/mcp/") as mcp:
            result = await mcp.call_tool("assistant", {"input": "via mcp"})
            assert result.content[0].text == "answer to via mcp"  # type: ignore[union-attr]
        body = {"threadId": "t", "runId": "r", "messages": [{"id": "1", "role": "user", "content": "via agui"}]}
        async with httpx.AsyncClient(base_url=base, timeout=20) as http:
            response = await http.post("/agui/", json=body)
        events = [TypeAdapter(Event).validate_python(json.loads(line[6:]))
                  for line in response.text.splitlines() if line.startswith("data: ")]
        assert events[-1].type == EventType.RUN_FINISHED
        text = "".join(e.delta for e in events if e.type == EventType.TEXT_MESSAGE_CONTENT)
        assert text == "answer to via agui"
    requests: list[LLMRequest] = provider.requests
    assert len(requests) == 3 and all(r.messages[0].content == "Be brief." for r in requests)
