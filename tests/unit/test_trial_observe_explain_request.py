"""A trial of tracing an answer to its request: what ``explain`` shows of the request, live and from a record.

An on-call engineer reads the explanation to see what the model was given.  A request it cannot rebuild must say
so (not read as "no request produced an answer" with no reason), and an image, a document or audio the model was
sent must show in the request's messages — from the live events, and from a JSONL record (which keeps a part's
kind and size, never its payload), where the rebuilt request says what it lacks.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentactors import Agent, Explanation, Image, InMemoryRecorder, JsonlRecorder, Runtime, ScriptedProvider, Text
from agentactors import explain as explain_run

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 2040


async def _run_with_an_image(tmp_path: Path) -> tuple[Explanation, Explanation]:
    path = tmp_path / "events.jsonl"
    memory = InMemoryRecorder()
    with JsonlRecorder(path) as jsonl:
        agent = Agent(ScriptedProvider(["A cat."], name="p"), name="vision", recorders=[memory, jsonl])
        async with Runtime():
            prompt: list[Text | Image] = [
                Text("What is this?"), Image(PNG), Image(url="https://u:pw123456@example.com/c.png?sig=1")
            ]
            result = await agent.run(prompt)
    assert result.run_id is not None
    return explain_run(result, memory.events), Explanation.from_jsonl(path, result.run_id)


async def test_the_media_a_message_carried_show_in_the_live_explanation(tmp_path: Path) -> None:
    live, _ = await _run_with_an_image(tmp_path)
    (line,) = [line for line in live.lines() if "user:" in line]
    assert "What is this?" in line
    assert "Image(image/png, 2.0 KB)" in line
    assert "Image(media type unknown at https://example.com/c.png?…)" in line
    assert "pw123456" not in str(live)


async def test_a_record_says_which_media_its_rebuilt_request_lacks(tmp_path: Path) -> None:
    _, recorded = await _run_with_an_image(tmp_path)
    assert recorded.request is not None and not recorded.request.messages[0].media
    (line,) = [line for line in recorded.lines() if "user:" in line]
    assert "Image(image/png, 2.0 KB)" in line, "the record's part shown as the live one is"
    assert "Image(media type unknown at https://example.com/c.png?…)" in line
    assert any("media" in note and "not in the rebuilt request" in note for note in recorded.request_notes)
    assert "pw123456" not in str(recorded)


def _record(tmp_path: Path, request: object) -> Path:
    path = tmp_path / "events.jsonl"
    lines = [
        {"type": "run.started", "run_id": "r", "seq": 1, "time": 0.0, "agent": "a"},
        {"type": "llm.request", "run_id": "r", "seq": 2, "time": 0.1, "step": 1, "request": request},
        {"type": "llm.response", "run_id": "r", "seq": 3, "time": 0.2, "step": 1, "provider": "p",
         "response": {"content": "wrong", "model": "m"}},
        {"type": "run.finished", "run_id": "r", "seq": 4, "time": 0.3, "content": "wrong", "steps": 1},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@pytest.mark.parametrize("request_record", [{"messages": "oops"}, {"messages": []}, {"model": "m"}, "a string"])
def test_a_recorded_request_that_cannot_be_rebuilt_says_why(tmp_path: Path, request_record: object) -> None:
    explanation = Explanation.from_jsonl(_record(tmp_path, request_record), "r")
    assert explanation.request is None
    assert any("could not be rebuilt" in note for note in explanation.notes), explanation.notes
