"""A part's payload never appears in an event, a log line, an error text, a repr or the JSONL record.

Only its media type and size do.  (The loopback version, with the FakeVendor, is in
tests/integration/test_media_exchanges.py.)
"""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentactors import (
    Agent,
    Audio,
    Document,
    Image,
    InMemoryRecorder,
    JsonlRecorder,
    Message,
    OpenAIProvider,
    Runtime,
    ScriptedProvider,
    Text,
    ToolCall,
    tool,
)
from agentactors.events import event_to_dict

pytestmark = pytest.mark.anyio

PNG = b"\x89PNG\r\n\x1a\n" + b"SECRET-PIXELS-0042" * 20
PDF = b"%PDF-1.4\n" + b"SECRET-PAGES-0042" * 20
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + b"SECRET-SOUND-0042" * 20
PAYLOADS = (PNG, PDF, WAV)


def leaks(text: str) -> list[str]:
    found = []
    for payload in PAYLOADS:
        encoded = base64.b64encode(payload).decode()
        if encoded[16:48] in text:
            found.append("base64")
        if b"SECRET-" in payload and "SECRET-" in text:
            found.append("raw")
    return found


async def test_nothing_of_a_payload_in_events_logs_reprs_or_the_jsonl_record(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    @tool
    async def snapshot() -> list[Any]:
        """Take a snapshot."""
        return [Text("snapshot"), Image(data=PNG)]

    provider = ScriptedProvider([[ToolCall("c1", "snapshot", {})], "seen"])
    recorder = InMemoryRecorder()
    path = tmp_path / "run.jsonl"
    caplog.set_level(logging.DEBUG)
    with JsonlRecorder(path) as jsonl:
        async with Runtime(recorders=[recorder, jsonl]):
            result = await Agent(provider, tools=[snapshot]).run(
                Message.user([Text("look"), Document(data=PDF), Audio(WAV)]))
    assert result.content == "seen"
    texts = {
        "jsonl": path.read_text(),
        "events": repr(recorder.events),
        "event dicts": json.dumps([event_to_dict(e) for e in recorder.events], default=str),
        "logs": caplog.text,
        "result": repr(result),
        "requests": repr(provider.requests),
    }
    for name, text in texts.items():
        assert leaks(text) == [], name
    # what the record does say: the media type and the size
    request = next(json.loads(line) for line in texts["jsonl"].splitlines() if '"llm.request"' in line)
    document = request["request"]["messages"][0]["_parts"][1]
    assert document["media_type"] == "application/pdf" and document["data"] == {"omitted_bytes": len(PDF)}


async def test_nothing_of_a_payload_in_an_http_providers_logs_or_errors(caplog: pytest.LogCaptureFixture) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, json={"error": {"message": "Invalid image", "type": "invalid_request_error"}})

    caplog.set_level(logging.DEBUG)
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        p = OpenAIProvider("gpt-4.1", api_key="sk-redaction-test-0123456789", http_client=client)
        result = await Agent(p).run(Message.user([Text("look"), Image(data=PNG)]))
        refused = await Agent(p).run(Message.user([Text("listen"), Audio(WAV)]))
    assert result.generation_failed and refused.generation_failed
    for text in (caplog.text, str(result.error), repr(result.error), str(refused.error), repr(refused.error)):
        assert leaks(text) == []
    assert "Audio(audio/wav, " in str(refused.error)
