"""Every ``bedrock__*`` corpus file through the Bedrock codec and provider.

For each recorded interaction:

* the conversation is rebuilt as an ``LLMRequest`` from the recorded body by a reader written here, in the
  test (independent of the codec: recorded Converse blocks → messages, tools, choices and settings), sent
  through ``BedrockProvider`` to an ``httpx.MockTransport`` answering with the recorded response, and the
  body the provider sent must equal the recorded body as a JSON value — after removing what pydantic-ai
  sends by habit and carries no meaning (``system: []``, ``inferenceConfig: {}``, ``toolChoice: {auto: {}}``,
  the default), a ``cachePoint`` it placed mid-message (ours go at the end of the newest message) and the
  split of one user text into several text blocks;
* the follow-up that replays Claude's reasoning is built from the DECODED previous response
  (``response.to_message()``), so the signature is proven to replay verbatim;
* the request path is the recorded one (the model id percent-encoded whole) and carries a SigV4
  ``Authorization`` header;
* the decoded response, the stream's events (the binary event stream fed in chunks of several sizes) or the
  typed error is checked.
"""

from __future__ import annotations

import base64
import json
from typing import Any, cast

import httpx
import pytest

from agentactors.errors import ErrorKind, ProviderError
from agentactors.messages import (
    LLMRequest,
    LLMResponse,
    Message,
    ReasoningDelta,
    ResponseFormat,
    StopReason,
    StreamEnd,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallEnd,
    ToolCallStart,
    ToolChoice,
    ToolSpec,
)
from agentactors.providers.bedrock import BedrockProvider, BedrockWire, iter_messages
from agentactors.settings import CachePolicy
from tests.support.corpus import CORPUS
from tests.support.corpus import load as load_recording

pytestmark = pytest.mark.anyio

NAMES = sorted(p.stem for p in CORPUS.glob("bedrock__*.json"))
COVERED: frozenset[str] = frozenset(NAMES)
KEY_ID = "AKIDEXAMPLECONFORMANCE"
SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYCONFORMANCE"


def load(name: str) -> dict[str, Any]:
    return load_recording(CORPUS, f"{name}.json")


def model_of(data: dict[str, Any]) -> str:
    from urllib.parse import unquote

    return unquote(data["request"]["path"].split("/")[2])


# --- the recorded body read back as a request (the test's own reader) ----------------------------


def _user_message(blocks: list[dict[str, Any]]) -> list[Message]:
    results = [b["toolResult"] for b in blocks if "toolResult" in b]
    out = [
        Message.tool(r["toolUseId"], "".join(c["text"] for c in r["content"]), is_error=r.get("status") == "error")
        for r in results
    ]
    texts = [b["text"] for b in blocks if "text" in b]
    if texts:
        out.append(Message.user("".join(texts)))
    return out


def _assistant_message(blocks: list[dict[str, Any]]) -> Message:
    text = "".join(b["text"] for b in blocks if "text" in b)
    calls = [ToolCall(b["toolUse"]["toolUseId"], b["toolUse"]["name"], b["toolUse"]["input"])
             for b in blocks if "toolUse" in b]
    replay = [b for b in blocks if "reasoningContent" in b]
    return Message.assistant(text, calls, provider_data={"bedrock": {"blocks": replay}} if replay else None)


def _settings(body: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    config = body.get("inferenceConfig", {})
    for ours, theirs in (("max_tokens", "maxTokens"), ("temperature", "temperature"), ("top_p", "topP")):
        if theirs in config:
            out[ours] = config[theirs]
    extra = body.get("additionalModelRequestFields", {})
    if "thinking" in extra:
        out["thinking_budget"] = extra["thinking"]["budget_tokens"]
    for field in ("reasoning_effort", "reasoning_config"):
        if field in extra:
            out["reasoning_effort"] = extra[field]
    fmt = body.get("outputConfig", {}).get("textFormat")
    if fmt:
        spec = fmt["structure"]["jsonSchema"]
        out["response_format"] = ResponseFormat(spec["name"], json.loads(spec["schema"]),
                                                description=spec.get("description"))
    if any("cachePoint" in b for b in body.get("system", [])):
        out["cache"] = CachePolicy(tools=False, conversation=False)
    return out


def _tools(body: dict[str, Any]) -> dict[str, Any]:
    config = body.get("toolConfig")
    if not config:
        return {}
    specs = [t["toolSpec"] for t in config["tools"] if "toolSpec" in t]
    tools = [ToolSpec(s["name"], s.get("description", ""), s["inputSchema"]["json"]) for s in specs]
    choice = config.get("toolChoice", {"auto": {}})
    tool_choice = (ToolChoice.required() if "any" in choice else
                   ToolChoice.tool(choice["tool"]["name"]) if "tool" in choice else ToolChoice.auto())
    out: dict[str, Any] = {"tools": tools, "tool_choice": tool_choice}
    strict = {s["name"]: {"strict": True} for s in specs if s.get("strict")}
    if strict:
        out["vendor_options"] = {"bedrock": {"tool_extras": strict}}
    return out


def request_for(data: dict[str, Any]) -> LLMRequest:
    body = data["request"]["body"]
    messages = [Message.system(b["text"]) for b in body.get("system", []) if "text" in b]
    for entry in body["messages"]:
        if entry["role"] == "user":
            messages.extend(_user_message(entry["content"]))
        else:
            messages.append(_assistant_message(entry["content"]))
    return LLMRequest(messages, model=model_of(data), **_settings(body), **_tools(body))


def meaningful(body: dict[str, Any]) -> dict[str, Any]:
    """The recorded body without what carries no meaning (see the module docstring)."""
    out: dict[str, Any] = json.loads(json.dumps(body))
    if out.get("system") == []:
        del out["system"]
    if out.get("inferenceConfig") == {}:
        del out["inferenceConfig"]
    config = out.get("toolConfig")
    if config and config.get("toolChoice") == {"auto": {}}:
        del config["toolChoice"]
    last = len(out["messages"]) - 1
    for i, message in enumerate(out["messages"]):
        blocks = message["content"]
        if i != last or (blocks and "cachePoint" not in blocks[-1]):
            message["content"] = blocks = [b for b in blocks if "cachePoint" not in b]
        if all("text" in b for b in blocks) and len(blocks) > 1:
            # A user turn's text parts are one text in the data model (the vendor reads them as one).
            message["content"] = [{"text": "".join(b["text"] for b in blocks)}]
    if "outputConfig" in out:
        spec = out["outputConfig"]["textFormat"]["structure"]["jsonSchema"]
        spec["schema"] = json.loads(spec["schema"])
    return out


def sent_meaning(body: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(body))
    if "outputConfig" in out:
        spec = out["outputConfig"]["textFormat"]["structure"]["jsonSchema"]
        spec["schema"] = json.loads(spec["schema"])
    return out


# --- the provider against the recording -----------------------------------------------------------


class Recorded:
    """A MockTransport handler answering with one recorded response; it keeps what was sent."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.sent: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(request)
        response = self.data["response"]
        if "eventstream_base64" in response:
            return httpx.Response(200, headers={"content-type": "application/vnd.amazon.eventstream"},
                                  content=base64.b64decode(response["eventstream_base64"]))
        headers = dict(response["headers"])
        if response["status"] == 400:
            headers["x-amzn-ErrorType"] = "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/"
        return httpx.Response(response["status"], headers=headers, json=response["json"])


def provider_for(handler: Recorded, region: str) -> tuple[BedrockProvider, httpx.AsyncClient]:
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return BedrockProvider(region=region, access_key_id=KEY_ID, secret_access_key=SECRET, http_client=client), client


def region_of(data: dict[str, Any]) -> str:
    return str(data["request"]["host"]).split(".")[1]


def previous_response(name: str) -> LLMResponse:
    data = load(name)
    return BedrockWire().decode_response(data["response"]["json"], request=None, model=model_of(data),
                                         provider="bedrock")


def request_of(name: str) -> LLMRequest:
    data = load(name)
    request = request_for(data)
    if name == "bedrock__reasoning_replayed_followup__1":
        # The assistant turn is the decoded previous answer: its reasoning replays verbatim.
        turn = previous_response("bedrock__reasoning_text_tool_use__1").to_message()
        messages = list(request.messages)
        messages[1] = turn
        request = LLMRequest(messages, model=request.model, tools=request.tools, tool_choice=request.tool_choice,
                             thinking_budget=request.thinking_budget)
    return request


def test_every_bedrock_corpus_file_is_here() -> None:
    assert len(NAMES) == 25


@pytest.mark.parametrize("name", NAMES)
async def test_corpus_interaction(name: str) -> None:
    data = load(name)
    handler = Recorded(data)
    provider, client = provider_for(handler, region_of(data))
    request = request_of(name)
    streaming = "eventstream_base64" in data["response"]
    try:
        if data["response"]["status"] != 200:
            with pytest.raises(ProviderError) as caught:
                await provider.complete(request)
            assert caught.value.kind is ErrorKind.request
            assert caught.value.status == 400
            assert "model identifier is invalid" in str(caught.value)
            result = None
        elif streaming:
            async with provider.stream(request) as events:
                seen = [e async for e in events]
            assert isinstance(seen[-1], StreamEnd)
            result = seen[-1].response
            check_stream(name, seen)
        else:
            result = await provider.complete(request)
    finally:
        await client.aclose()
    (sent,) = handler.sent
    assert sent.url.raw_path.decode() == data["request"]["path"]
    assert sent.url.host == data["request"]["host"]
    assert sent.headers["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={KEY_ID}/")
    assert f"/{region_of(data)}/bedrock/aws4_request" in sent.headers["authorization"]
    assert SECRET not in str(sent.headers)
    assert sent_meaning(json.loads(sent.content)) == meaningful(data["request"]["body"])
    if result is not None:
        check_response(name, data, result)


def check_response(name: str, data: dict[str, Any], result: LLMResponse) -> None:
    assert result.provider == "bedrock"
    if "json" in data["response"]:
        recorded = data["response"]["json"]
        blocks = recorded["output"]["message"]["content"]
        usage = recorded["usage"]
        stop = recorded["stopReason"]
    else:
        payloads = [m["payload"] for m in data["response"]["eventstream_decoded"]]
        text_parts = [p["delta"]["text"] for p in payloads if "delta" in p and "text" in p["delta"]]
        blocks = [{"text": "".join(text_parts)}] if text_parts else []
        for start in (p["start"]["toolUse"] for p in payloads if "toolUse" in p.get("start", {})):
            index = next(p["contentBlockIndex"] for p in payloads if p.get("start", {}).get("toolUse") == start)
            raw = "".join(p["delta"]["toolUse"]["input"] for p in payloads
                          if p.get("contentBlockIndex") == index and "toolUse" in p.get("delta", {}))
            blocks.append({"toolUse": {**start, "input": json.loads(raw)}})
        usage = next(p["usage"] for p in payloads if "usage" in p)
        stop = next(p["stopReason"] for p in payloads if "stopReason" in p)
    assert result.content == "".join(b["text"] for b in blocks if "text" in b)
    assert result.raw_stop_reason == stop
    assert result.usage.input_tokens == usage["inputTokens"]  # cached tokens excluded, as Bedrock counts
    assert result.usage.output_tokens == usage["outputTokens"]
    assert result.usage.cache_read_tokens == usage.get("cacheReadInputTokens", 0)
    assert result.usage.cache_write_tokens == usage.get("cacheWriteInputTokens", 0)
    uses = [b["toolUse"] for b in blocks if "toolUse" in b]
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [
        (u["toolUseId"], u["name"], u["input"]) for u in uses
    ]
    if uses:
        assert result.stop_reason is StopReason.tool_use
    reasoning = [b["reasoningContent"] for b in blocks if "reasoningContent" in b]
    said = "".join(r["reasoningText"]["text"] for r in reasoning if "reasoningText" in r)
    assert result.reasoning == said or "eventstream_base64" in data["response"]


EXPECTED_STOPS = {
    "bedrock__stop_max_tokens__1": StopReason.max_tokens,
    "bedrock__stream_text_and_tool_use__1": StopReason.tool_use,
}


@pytest.mark.parametrize("name", sorted(EXPECTED_STOPS))
def test_stop_reasons_map(name: str) -> None:
    data = load(name)
    if "json" in data["response"]:
        result = BedrockWire().decode_response(data["response"]["json"], request=None, model="m", provider="bedrock")
    else:
        result = cast(StreamEnd, decode_stream(name, chunk=64)[-1]).response  # decode_stream ends on one
    assert result.stop_reason is EXPECTED_STOPS[name]


def decode_stream(name: str, *, chunk: int) -> list[StreamEvent]:
    data = load(name)
    decoder = BedrockWire().stream_decoder(request=None, model=model_of(data), provider="bedrock")
    events: list[StreamEvent] = []
    for event, payload in iter_messages(base64.b64decode(data["response"]["eventstream_base64"]), chunk=chunk):
        events.extend(decoder.feed(event, payload))
    return [*events, StreamEnd(decoder.finish())]


def check_stream(name: str, seen: list[StreamEvent]) -> None:
    data = load(name)
    payloads = [m["payload"] for m in data["response"]["eventstream_decoded"]]
    texts = [p["delta"]["text"] for p in payloads if "text" in p.get("delta", {})]
    assert [e.text for e in seen if isinstance(e, TextDelta)] == [t for t in texts if t]
    reasoning = [p["delta"]["reasoningContent"]["text"] for p in payloads
                 if "text" in p.get("delta", {}).get("reasoningContent", {})]
    assert [e.text for e in seen if isinstance(e, ReasoningDelta)] == [t for t in reasoning if t]
    starts = [e for e in seen if isinstance(e, ToolCallStart)]
    ends = [e for e in seen if isinstance(e, ToolCallEnd)]
    assert len(starts) == len(ends)


STREAMS = [n for n in NAMES if "eventstream_base64" in load(n)["response"]]


@pytest.mark.parametrize("name", STREAMS)
@pytest.mark.parametrize("chunk", [1, 7, 100, 1 << 20])
def test_recorded_stream_decodes_alike_in_any_chunking(name: str, chunk: int) -> None:
    assert decode_stream(name, chunk=chunk) == decode_stream(name, chunk=1 << 20)


@pytest.mark.parametrize("name", STREAMS)
def test_recorded_stream_cut_short_is_not_an_answer(name: str) -> None:
    raw = base64.b64decode(load(name)["response"]["eventstream_base64"])
    messages = list(iter_messages(raw))
    decoder = BedrockWire().stream_decoder(request=None, model="m", provider="bedrock")
    for event, payload in messages[:-1]:  # everything but the final metadata (the usage)
        decoder.feed(event, payload)
    with pytest.raises(ProviderError, match="truncated") as caught:
        decoder.finish()
    assert caught.value.kind is ErrorKind.transient
    with pytest.raises(ProviderError, match="inside a message"):
        list(iter_messages(raw[:-3]))


def test_streamed_reasoning_replays_verbatim_on_the_next_turn() -> None:
    (end,) = [e for e in decode_stream("bedrock__stream_reasoning_signature__1", chunk=13) if isinstance(e, StreamEnd)]
    turn = end.response.to_message()
    request = LLMRequest([Message.user("Hello"), turn, Message.user("again")],
                         model="us.anthropic.claude-sonnet-4-20250514-v1:0", thinking_budget=1024)
    body = BedrockWire().encode_request(request, request.model or "", stream=True)
    payloads = [m["payload"] for m in load("bedrock__stream_reasoning_signature__1")["response"]["eventstream_decoded"]]
    signature = next(p["delta"]["reasoningContent"]["signature"] for p in payloads
                     if "signature" in p.get("delta", {}).get("reasoningContent", {}))
    first = body["messages"][1]["content"][0]["reasoningContent"]["reasoningText"]
    assert first["signature"] == signature
    assert first["text"] == end.response.reasoning
