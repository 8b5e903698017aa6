"""The FakeVendor's Responses stream sends the event family the real service sends, in its order.

A client in another language (a Go or Node SDK, a hand-written SSE reader) may wait for
``response.content_part.done`` or ``response.reasoning_summary_part.done`` to close a part: the fake
left them out, so such a client never saw its text part (or reasoning summary) end.  The order of a
message's events is checked against the recorded streams in ``tests/corpus/``; the reasoning summary's,
which no recording streams, against the Responses API reference.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentactors.messages import ReasoningDelta, TextDelta
from agentactors.providers.responses import OpenAIResponsesProvider
from agentactors.testing.fakevendor import FakeReply, FakeToolCall, FakeVendor
from tests.support.fakevendor import CANARY
from tests.support.providers import ask, collect

pytestmark = pytest.mark.anyio

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
RECORDED = ("openai-responses__stream_text_after_function_call_output__1.json",
            "openai-responses__stream_reasoning_text_function_call__1.json")


async def _events(fv: FakeVendor, reply: FakeReply) -> list[dict[str, Any]]:
    """The data of each event of a streamed Responses answer to ``reply`` (each checked against its name)."""
    fv.script(reply)
    out: list[dict[str, Any]] = []
    async with httpx.AsyncClient(timeout=60) as client:
        async with client.stream("POST", f"{fv.openai_base_url}/responses",
                                 headers={"authorization": f"Bearer {CANARY}"},
                                 json={"model": "gpt-5-mini", "input": "hi", "stream": True}) as response:
            assert response.status_code == 200
            name = None
            async for line in response.aiter_lines():
                if line.startswith("event:"):
                    name = line.removeprefix("event:").strip()
                elif line.startswith("data:"):
                    data = json.loads(line.removeprefix("data:"))
                    assert data["type"] == name
                    out.append(data)
    assert [e["sequence_number"] for e in out] == list(range(len(out)))
    return out


def _recorded(name: str) -> list[dict[str, Any]]:
    sse = json.loads((CORPUS / name).read_text())["response"]["sse"]
    return [json.loads(line.removeprefix("data:")) for line in sse.splitlines() if line.startswith("data:")]


def _message_kinds(events: list[dict[str, Any]]) -> list[str]:
    """The event types of the stream's message item, deltas counted once."""
    index = next(e["output_index"] for e in events
                 if e["type"] == "response.output_item.added" and e["item"]["type"] == "message")
    kinds: list[str] = []
    for e in events:
        if e.get("output_index") == index and (not kinds or kinds[-1] != e["type"]):
            kinds.append(e["type"])
    return kinds


@pytest.mark.parametrize("recording", RECORDED)
async def test_a_message_streams_its_parts_events_as_recorded(fake_vendor: FakeVendor, recording: str) -> None:
    events = await _events(fake_vendor, FakeReply(text="The capital of France is Paris."))
    assert _message_kinds(events) == _message_kinds(_recorded(recording)) == [
        "response.output_item.added", "response.content_part.added", "response.output_text.delta",
        "response.output_text.done", "response.content_part.done", "response.output_item.done",
    ]
    done = next(e for e in events if e["type"] == "response.content_part.done")
    item = next(e for e in events if e["type"] == "response.output_item.done")["item"]
    # The part as it ended is the item's content part, as in the recordings.
    assert done["part"] == item["content"][0]
    assert done["part"]["text"] == "The capital of France is Paris."
    assert (done["item_id"], done["content_index"]) == (item["id"], 0)


async def test_a_reasoning_summary_streams_its_done_events(fake_vendor: FakeVendor) -> None:
    events = await _events(fake_vendor, FakeReply(text="Paris.", reasoning="The capital is asked for."))
    index = next(e["output_index"] for e in events
                 if e["type"] == "response.output_item.added" and e["item"]["type"] == "reasoning")
    kinds: list[str] = []
    for e in events:
        if e.get("output_index") == index and (not kinds or kinds[-1] != e["type"]):
            kinds.append(e["type"])
    assert kinds == [
        "response.output_item.added", "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta", "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done", "response.output_item.done",
    ]
    text_done = next(e for e in events if e["type"] == "response.reasoning_summary_text.done")
    part_done = next(e for e in events if e["type"] == "response.reasoning_summary_part.done")
    item = next(e for e in events if e["type"] == "response.output_item.done" and e["output_index"] == index)
    assert text_done["text"] == "The capital is asked for." and text_done["summary_index"] == 0
    assert part_done["part"] == {"type": "summary_text", "text": "The capital is asked for."}
    assert part_done["part"] == item["item"]["summary"][0]


async def test_the_provider_decodes_the_stream_with_every_event(fake_vendor: FakeVendor) -> None:
    """agentactors' own decoder reads the fuller stream as it read the shorter one."""
    fake_vendor.script(FakeReply(text="Paris it is.", reasoning="Asked for a capital.", words_per_chunk=1,
                                 tool_calls=FakeToolCall("lookup", {"q": "Paris"})))
    async with OpenAIResponsesProvider("gpt-5-mini", api_key=CANARY, base_url=fake_vendor.openai_base_url) as p:
        events, response = await collect(p, ask())
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Paris it is." == response.content
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "Asked for a capital."
    assert [(c.name, c.arguments) for c in response.tool_calls] == [("lookup", {"q": "Paris"})]


async def test_a_stream_cut_after_n_chunks_still_counts_only_content(fake_vendor: FakeVendor) -> None:
    """The new ``done`` events carry no content: a cut after two chunks still lets exactly two deltas through."""
    fake_vendor.script(FakeReply(text="one two three four", words_per_chunk=1, cut_after=2))
    deltas: list[str] = []
    async with httpx.AsyncClient(timeout=60) as client:
        async with client.stream("POST", f"{fake_vendor.openai_base_url}/responses",
                                 headers={"authorization": f"Bearer {CANARY}"},
                                 json={"model": "gpt-5-mini", "input": "hi", "stream": True}) as response:
            with pytest.raises(httpx.RemoteProtocolError):
                async for line in response.aiter_lines():
                    if line.startswith("data:"):
                        data = json.loads(line.removeprefix("data:"))
                        if data["type"] == "response.output_text.delta":
                            deltas.append(data["delta"])
    assert deltas == ["one ", "two "]
