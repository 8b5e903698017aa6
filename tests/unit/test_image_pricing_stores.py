"""What stores a usage keeps its image counts: a session store, a journal, an event log (JSONL) — and a record
written before the counts existed still loads, with none.  A count a store dropped would be a cost that shrinks
when a run is read back (a resumed run's budget, a session's total)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentactors import Agent, InMemoryRecorder, JsonlRecorder, LLMResponse, ScriptedProvider, Usage
from agentactors.events import read_jsonl
from agentactors.journal.codec import response_from_event, response_from_json, response_to_json
from agentactors.sessions.codec import usage_from_json, usage_to_json

pytestmark = pytest.mark.anyio  # (the async tests, on asyncio and trio)

IMAGES = Usage(2_000, 1_500, cache_read_tokens=600, input_audio_tokens=7, input_image_tokens=1_350,
               cache_image_read_tokens=516, output_image_tokens=1_290)


def test_a_session_store_keeps_the_image_counts() -> None:
    assert usage_from_json(json.loads(json.dumps(usage_to_json(IMAGES)))) == IMAGES
    # A record an older version wrote (no image keys) still loads, with none.
    assert usage_from_json({"input_tokens": 3, "output_tokens": 4, "input_audio_tokens": 1}) == Usage(
        3, 4, input_audio_tokens=1)


def test_a_journal_keeps_the_image_counts() -> None:
    response = LLMResponse("drawn", usage=IMAGES, provider="gemini", model="gemini-2.5-flash-image")
    assert response_from_json(json.loads(json.dumps(response_to_json(response)))).usage == IMAGES


async def test_an_event_log_keeps_the_image_counts(tmp_path: Any) -> None:
    reply = LLMResponse("drawn", usage=IMAGES, provider="gemini", model="gemini-2.5-flash-image")
    path = tmp_path / "events.jsonl"
    with JsonlRecorder(path) as jsonl:
        await Agent(ScriptedProvider([reply]), recorders=[InMemoryRecorder(), jsonl]).run("draw")
    logged = [e for e in read_jsonl(path) if e.type == "llm.response"]
    assert logged[0].data["usage"]["output_image_tokens"] == 1_290  # the log says what was charged
    # ... and the response read back from the event has them (an old event, without them, has none)
    doc = logged[0].data["response"]
    assert response_from_event(doc).usage == IMAGES
    old = dict(doc, usage={k: v for k, v in doc["usage"].items() if "image" not in k})
    assert response_from_event(old).usage == Usage(2_000, 1_500, cache_read_tokens=600, input_audio_tokens=7)
