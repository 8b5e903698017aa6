"""A JSON ``response_format`` is answered by the served agent evolved for the client's schema — once per schema.

A request per schema must not leave an agent's worth of actors behind in the app's runtime (its tool executor
and what the tools close over), nor build and bind a new agent each time: the evolved agent is kept per served
agent and (name, schema), a bounded number of them, and goes with the served agent.
"""

from __future__ import annotations

import gc
import json
import weakref
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentactors import Agent, Runtime, ScriptedProvider, ToolCall, tool
from agentactors.serve import openai_app
from agentactors.serve._openai_format import for_format
from agentactors.serve._openai_input import JsonFormat
from tests.unit.serve.test_hostile_requests import USER, request

pytestmark = pytest.mark.anyio

CITY = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}


@tool
async def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def _answer(request: Any) -> Any:
    names = [t.name for t in request.tools or ()]
    if request.messages[-1].role == "user" and "weather" in names:
        return [ToolCall("w", "weather", {"city": "Oslo"})]
    out = [n for n in names if n != "weather"]
    return [ToolCall("o", out[0], {"city": "Oslo"})] if out else json.dumps({"city": "Oslo"})


async def _settle() -> None:
    gc.collect()
    for _ in range(5):
        await anyio.lowlevel.checkpoint()


async def test_requests_with_a_json_schema_leave_no_actors_behind() -> None:
    async with Runtime() as rt:
        app = openai_app({"a": Agent(ScriptedProvider(_answer, record=False), tools=[weather], name="a")}, runtime=rt)
        body: dict[str, Any] = {"model": "a", "messages": [USER]}
        await request(app, body)
        await _settle()
        baseline = rt.stats().actors
        for i in range(12):  # one schema over and over, then a schema per request
            schema = CITY if i < 6 else {**CITY, "description": f"request {i}"}
            fmt = {"type": "json_schema", "json_schema": {"name": "city", "schema": schema}}
            answer = await request(app, {**body, "response_format": fmt})
            assert answer.status == 200, answer.body[:300]
            assert json.loads(answer.json()["choices"][0]["message"]["content"]) == {"city": "Oslo"}
        await _settle()
        assert rt.stats().actors <= baseline + 7  # the served agent's, and one per schema kept: no more


async def test_the_agent_for_a_schema_is_made_once_per_served_agent_and_schema() -> None:
    served = Agent(ScriptedProvider("{}"), tools=[weather], name="a")
    first = for_format(served, JsonFormat("city", CITY))
    assert for_format(served, JsonFormat("city", json.loads(json.dumps(CITY)))) is first  # equal, not the same
    assert for_format(served, JsonFormat("town", CITY)) is not first  # the name is the type's
    assert for_format(served, JsonFormat("city", {**CITY, "required": []})) is not first
    other = Agent(ScriptedProvider("{}"), name="a")
    assert for_format(other, JsonFormat("city", CITY)) is not first


async def test_the_agents_kept_are_bounded_and_go_with_the_served_agent() -> None:
    served = Agent(ScriptedProvider("{}"), tools=[weather], name="a")
    first = for_format(served, JsonFormat("city", CITY))
    kept = weakref.ref(first)
    del first
    for i in range(100):
        for_format(served, JsonFormat("city", {**CITY, "description": str(i)}))
    gc.collect()
    assert kept() is None  # the least recently used went first
    last = weakref.ref(for_format(served, JsonFormat("city", CITY)))
    del served
    gc.collect()
    assert last() is None
