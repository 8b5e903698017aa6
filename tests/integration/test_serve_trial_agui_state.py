"""agui_app served on 127.0.0.1 (uvicorn on asyncio, hypercorn on trio): a ``state`` that is not a JSON object is a
422 saying so — every ``STATE_SNAPSHOT`` is the client's state with the run's under ``"agentactors"``, which only an
object can hold, and a snapshot without the client's own state would replace it in the frontend."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from agentactors import Agent, ScriptedProvider
from agentactors.serve import agui_app
from tests.support.services import load_example, serving

pytestmark = pytest.mark.anyio


def run_input(state: Any) -> dict[str, Any]:
    user = {"id": "m1", "role": "user", "content": "hi"}
    return {"threadId": "t1", "runId": "r1", "state": state, "messages": [user]}


async def test_a_state_that_is_not_an_object_is_a_422_and_runs_nothing() -> None:
    provider = ScriptedProvider(["hello", "hello"])
    async with serving(agui_app(Agent(provider, name="a")), load_example("serve_all"), probe="/") as base:
        async with httpx.AsyncClient(base_url=base, timeout=20) as client:
            refused: list[Any] = [[1, 2], "units=metric", 5, True]
            for state in refused:
                response = await client.post("/", json=run_input(state))
                assert response.status_code == 422, (state, response.text[:300])
                assert "'state' must be an object" in response.json()["detail"]
            assert provider.calls == 0
            # an object, or none at all, is taken: the snapshot keeps the client's own keys
            taken: list[tuple[Any, dict[str, Any]]] = [({"units": "metric"}, {"units": "metric"}), (None, {})]
            for given, kept in taken:
                response = await client.post("/", json=run_input(given))
                assert response.status_code == 200
                events = [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]
                snapshot = next(e["snapshot"] for e in events if e["type"] == "STATE_SNAPSHOT")
                assert {k: v for k, v in snapshot.items() if k != "agentactors"} == kept
                assert events[-1]["type"] == "RUN_FINISHED"
