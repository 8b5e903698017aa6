"""Properties of every wire's request encoder: a generated conversation is sent as the vendor's rules want it.

Hypothesis builds conversations the loop produces and a caller may pass — system messages anywhere, consecutive
user messages, assistant turns with 0-4 tool calls (ids of every shape a vendor or the loop makes, renamed ones
included), reasoning and replayed provider data of the same vendor, another model or another wire, empty and
blank texts, content parts (text, images by bytes and URL, documents, audio), tool results with ``is_error``,
with media, consecutive, or ending the conversation, a conversation opening with an assistant's turn — with
tools of various schemas and every tool choice.  Each wire (Chat Completions, Responses, Anthropic Messages and
Claude on Vertex, Gemini and Gemini on Vertex, Bedrock Converse, Azure chat and responses) encodes it, and:

* the body is JSON, the same for the same request, and holds no secret given in the conversation's options;
* a request the wire refuses is refused with a :class:`~agentactors.ProviderError` (request kind), nothing else;
* the body follows the rules the vendor documents (its 400s), checked per wire below:

  - Chat Completions: every ``tool_calls`` id answered by a ``tool`` message before the next other message, and
    a ``tool`` message answers the calls just made;
  - Responses: every ``function_call_output`` has its ``function_call`` earlier, every call is answered;
  - Anthropic: roles alternate, ``tool_result`` blocks open their user turn and answer
    exactly the preceding assistant's ``tool_use`` ids, no blank text block, an error result is not empty,
    thinking blocks only with their signature;
  - Gemini: roles ``user`` / ``model``, each ``functionCall`` turn answered by the next turn's
    ``functionResponse`` parts, as many;
  - Bedrock: roles alternate, each ``toolUse`` answered once by a ``toolResult`` in the
    next (user) message, no blank text block.

Example counts are bounded: the file runs in a few seconds.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentactors import Audio, Document, Image, LLMRequest, Message, Text, ToolCall
from agentactors.errors import ErrorKind, ProviderError
from agentactors.messages import ToolChoice, ToolSpec
from agentactors.providers.anthropic.provider import AnthropicProvider, AnthropicWire
from agentactors.providers.azure import AzureChatWire, AzureResponsesWire
from agentactors.providers.bedrock.provider import BedrockWire
from agentactors.providers.codec import WireCodec
from agentactors.providers.gemini.provider import GeminiProvider, GeminiWire
from agentactors.providers.openai.provider import OpenAIWire
from agentactors.providers.responses.provider import ResponsesWire

SLOW = [HealthCheck.too_slow, HealthCheck.data_too_large]
FEW = settings(max_examples=50, deadline=None, suppress_health_check=SLOW)

SECRET = "sk-SECRET-0123456789abcdef"

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 40
PDF = b"%PDF-1.4\n<< /Type /Pages /Count 1 >>\n"


def _wav() -> bytes:
    data = b"\x00" * 80
    fmt = struct.pack("<IHHIIHH", 16, 1, 1, 8000, 8000, 1, 8)
    size = struct.pack("<I", len(data))
    return b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt " + fmt + b"data" + size + data


WAV = _wav()

# --- the wires ------------------------------------------------------------------------------------------------


def _vertex_gemini() -> WireCodec:
    return GeminiProvider.vertex(project="p", location="us-central1", token_provider=lambda: "t").codec


def _vertex_claude() -> WireCodec:
    return AnthropicProvider.vertex(project="p", region="us-east5", token_provider=lambda: "t").codec


# (name, codec, model, the rule checker's family)
WIRES: list[tuple[str, Callable[[], WireCodec], str, str]] = [
    ("openai", lambda: OpenAIWire(max_tokens_field="max_completion_tokens", official=True), "gpt-4o", "chat"),
    ("openai-compatible", OpenAIWire, "llama-3.3-70b", "chat"),
    ("azure-chat", lambda: AzureChatWire("prod-4o", api_version="2024-10-21", model="gpt-4o"), "prod-4o", "chat"),
    ("responses", ResponsesWire, "o4-mini", "responses"),
    ("azure-responses", lambda: AzureResponsesWire("reasoner", model="o4-mini"), "reasoner", "responses"),
    ("anthropic", AnthropicWire, "claude-sonnet-4-5", "anthropic"),
    ("vertex-claude", _vertex_claude, "claude-sonnet-4-5@20250929", "anthropic"),
    ("gemini", GeminiWire, "gemini-2.5-flash", "gemini"),
    ("gemini-3", GeminiWire, "gemini-3-pro-preview", "gemini"),
    ("vertex-gemini", _vertex_gemini, "gemini-2.5-flash", "gemini"),
    ("bedrock-claude", BedrockWire, "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "bedrock"),
    ("bedrock-nova", BedrockWire, "amazon.nova-pro-v1:0", "bedrock"),
]

# --- the conversations ----------------------------------------------------------------------------------------

# Ids as vendors make them (OpenAI, Anthropic, Bedrock, Gemini's synthesised, Kimi's, Mistral's) and as the loop
# renames a duplicate (``<id>_2``, cut to 40 characters).
CALL_IDS = st.sampled_from([
    "call_abc123", "toolu_01A09q90qw90lq917835lq9", "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "call_1", "g-call-3",
    "functions.get_weather:0", "aB3dE6gH9", "call_abc123_2", "x" * 38 + "_2", "call 7",
])
TEXTS = st.sampled_from(["", " ", "\n\n", "Hello", "it is 3°C in Oslo", "ok\n"])
NAMES = st.sampled_from(["get_weather", "search", "read_file"])

OTHER = {"anthropic": "claude-opus-4-1", "gemini": "gemini-2.5-pro", "bedrock": "us.anthropic.claude-opus-4-1-v1:0"}


def _assistant_data(draw: st.DrawFn, model_of: Callable[[str], str]) -> dict[str, Any] | None:
    """Replay data on an assistant message: none, or one or more wires' (this model's or another's)."""
    data: dict[str, Any] = {}
    for wire in draw(st.sets(st.sampled_from(["anthropic", "gemini", "bedrock", "openai", "openai-responses"]),
                             max_size=2)):
        made_by = draw(st.sampled_from([None, "same", "other"]))
        stamp = {} if made_by is None else {"model": model_of(wire) if made_by == "same" else OTHER.get(wire, "x")}
        if wire == "anthropic":
            blocks: list[dict[str, Any]] = [{"type": "thinking", "thinking": "hm", "signature": "EqQBCgIYAhIM"}]
            if draw(st.booleans()):
                blocks.append({"type": "redacted_thinking", "data": "EmwKAhgBEgy"})
            data[wire] = {"blocks": blocks, **stamp}
        elif wire == "bedrock":
            block = {"reasoningContent": {"reasoningText": {"text": "hm", "signature": "EqQBCgIYAhIM"}}}
            data[wire] = {"blocks": [block], **stamp}
        elif wire == "gemini":
            data[wire] = {"thought_signature": "CiQB+/x0aGluaw==", **stamp}
        elif wire == "openai":
            data[wire] = {"reasoning_details": [{"type": "reasoning.text", "text": "hm"}], **stamp}
    return data or None


@st.composite
def tool_call(draw: st.DrawFn, call_id: str) -> ToolCall:
    name = draw(NAMES)
    args: dict[str, Any] = draw(st.sampled_from([{}, {"city": "Oslo"}, {"q": "x", "n": 3}]))
    data = None
    if draw(st.booleans()):
        data = {"gemini": {"thought_signature": "CiQB+/x0aGluaw==", "id": call_id}}
    return ToolCall(id=call_id, name=name, arguments=args, raw_arguments=json.dumps(args), provider_data=data)


def _media(draw: st.DrawFn) -> list[Any]:
    kinds = draw(st.lists(st.sampled_from(["png", "png_url", "pdf", "pdf_url", "txt", "png", "pdf", "wav"]),
                          max_size=2))
    out: list[Any] = []
    for kind in kinds:
        if kind == "png":
            out.append(Image(data=PNG, media_type="image/png"))
        elif kind == "png_url":
            out.append(Image(url="https://example.com/a.png"))
        elif kind == "pdf":
            out.append(Document(data=PDF, title=draw(st.sampled_from([None, "Report Q3", "a.b/c"]))))
        elif kind == "pdf_url":
            out.append(Document(url="https://example.com/a.pdf"))
        elif kind == "txt":
            out.append(Document(data=b"plain text", media_type="text/plain", title="notes"))
        else:
            out.append(Audio(data=WAV, media_type="audio/wav"))
    return out


@st.composite
def user_message(draw: st.DrawFn, media: bool) -> Message:
    text = draw(TEXTS)
    parts = _media(draw) if media and draw(st.booleans()) else []
    if parts:
        return Message.user(([Text(text)] if text else []) + parts)
    return Message.user(text)


@st.composite
def conversations(draw: st.DrawFn, media: bool = True) -> tuple[list[Message], set[str]]:
    """A conversation and the set of ids of its calls (unique, as the loop keeps them)."""
    messages: list[Message] = []
    used: set[str] = set()

    def model_of(wire: str) -> str:
        return MODEL_OF.get(wire, "m")

    def fresh(call_id: str) -> str:
        n = 2
        out = call_id
        while out in used:
            suffix = f"_{n}"
            out = call_id[: 40 - len(suffix)] + suffix
            n += 1
        used.add(out)
        return out

    if draw(st.booleans()):
        messages.append(Message.system(draw(st.sampled_from(["You are terse.", "", " "]))))
    if draw(st.integers(0, 5)) == 0:
        messages.append(Message.assistant(draw(st.sampled_from(["Hi! How can I help?", ""]))))
    for _turn in range(draw(st.integers(1, 3))):
        for _ in range(draw(st.integers(1, 2))):
            messages.append(draw(user_message(media)))
        if draw(st.integers(0, 6)) == 0:
            messages.append(Message.system("Be brief."))
        steps = draw(st.integers(0, 3))
        ended = False
        for step in range(steps):
            n = draw(st.integers(0 if step else 1, 4))
            calls = [draw(tool_call(fresh(draw(CALL_IDS)))) for _ in range(n)]
            messages.append(Message.assistant(draw(TEXTS), calls, reasoning=draw(st.sampled_from(["", "thinking"])),
                                              provider_data=_assistant_data(draw, model_of)))
            order = draw(st.permutations(range(n))) if n > 1 and draw(st.booleans()) else range(n)
            for i in order:
                call = calls[i]
                content: Any = draw(TEXTS)
                if media and draw(st.integers(0, 4)) == 0:
                    content = ([Text(content)] if content else []) + _media(draw)
                    if not content:
                        content = ""
                messages.append(Message.tool(call.id, content, call.name, is_error=draw(st.booleans())))
            if n == 0:
                ended = True
                break
        if not ended and draw(st.booleans()):
            messages.append(Message.assistant(draw(TEXTS), provider_data=_assistant_data(draw, model_of)))
    return messages, used


MODEL_OF = {"anthropic": "claude-sonnet-4-5", "gemini": "gemini-2.5-flash", "bedrock": "us.anthropic.claude-sonnet-4-5"}

SCHEMAS = st.sampled_from([
    {"type": "object", "properties": {}},
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    {"type": "object", "properties": {"n": {"type": ["integer", "null"], "default": None},
                                      "tags": {"type": "array", "items": {"type": "string"}}}},
    {"type": "object", "properties": {"mode": {"enum": ["a", "b"]}, "opt": {"anyOf": [{"type": "string"},
                                                                                      {"type": "null"}]}}},
])


@st.composite
def requests(draw: st.DrawFn, media: bool = True) -> LLMRequest:
    messages, _ = draw(conversations(media))
    names = sorted({c.name for m in messages for c in m.tool_calls} | set(draw(st.sets(NAMES, max_size=2))))
    tools = [ToolSpec(name=n, description=draw(st.sampled_from(["", "Look it up."])), parameters=draw(SCHEMAS))
             for n in names]
    choice = draw(st.sampled_from([ToolChoice.auto(), ToolChoice.none(), ToolChoice.required(),
                                   ToolChoice.tool(names[0]) if names else ToolChoice.auto()]))
    if not tools:
        choice = ToolChoice.auto()
    budget = draw(st.sampled_from([None, None, 2048]))
    return LLMRequest(messages, tools=tools, tool_choice=choice, thinking_budget=budget,
                      max_tokens=8192 if budget else None, cache=draw(st.sampled_from([None, True])))


# --- the vendors' rules ----------------------------------------------------------------------------------------


def _blank(text: Any) -> bool:
    return not isinstance(text, str) or not text.strip()


def check_chat(body: dict[str, Any]) -> None:
    pending: set[str] = set()  # ids of the calls of the assistant message just sent, not yet answered
    for m in body["messages"]:
        role = m["role"]
        if role == "tool":
            assert m["tool_call_id"] in pending, f"a tool message answers no pending call: {m['tool_call_id']!r}"
            pending.discard(m["tool_call_id"])
            assert isinstance(m["content"], str)
            continue
        assert not pending, f"calls {pending} unanswered before a {role} message"
        if role == "assistant":
            assert m.get("content") is not None or m.get("tool_calls"), "an assistant message with neither"
            ids = [c["id"] for c in m.get("tool_calls", [])]
            assert len(set(ids)) == len(ids)
            for c in m.get("tool_calls", []):
                assert isinstance(c["function"]["arguments"], str)
                json.loads(c["function"]["arguments"])
            pending = set(ids)
    # A conversation may end with results; with calls unanswered it may not.
    assert not pending, f"calls {pending} unanswered at the end"


def check_responses(body: dict[str, Any]) -> None:
    called: set[str] = set()
    answered: set[str] = set()
    for item in body["input"]:
        kind = item.get("type")
        if kind == "function_call":
            assert item["call_id"] not in called, "a call_id sent twice"
            called.add(item["call_id"])
        elif kind == "function_call_output":
            assert item["call_id"] in called, f"an output for no earlier call: {item['call_id']!r}"
            assert item["call_id"] not in answered
            answered.add(item["call_id"])
    assert called == answered, f"calls without output: {called - answered}"
    ids = [i["id"] for i in body["input"] if "id" in i]
    assert len(ids) == len(set(ids)), f"duplicate item ids: {ids}"


_ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]+$")


def check_anthropic(body: dict[str, Any], model: str) -> None:
    messages = body["messages"]
    assert messages, "no messages"
    # (The first message may be the assistant's: sent as it is, docs/wire.md.)
    previous_uses: list[str] = []
    for i, m in enumerate(messages):
        assert m["role"] in ("user", "assistant")
        if i:
            assert m["role"] != messages[i - 1]["role"], "roles must alternate"
        blocks = m["content"]
        assert isinstance(blocks, list) and blocks, "a message without content"
        for b in blocks:
            if b["type"] == "text":
                assert not _blank(b["text"]), "text content blocks must contain non-whitespace text"
            if b["type"] in ("thinking", "redacted_thinking"):
                assert m["role"] == "assistant"
                assert b.get("signature") or b.get("data"), "a thinking block without its signature"
        if m["role"] == "assistant":
            uses = [b["id"] for b in blocks if b["type"] == "tool_use"]
            for u in uses:
                assert _ANTHROPIC_ID.fullmatch(u), f"tool_use.id {u!r} does not match ^[a-zA-Z0-9_-]+$"
            previous_uses = uses
            continue
        results = [b for b in blocks if b["type"] == "tool_result"]
        kinds = [b["type"] == "tool_result" for b in blocks]
        assert kinds == sorted(kinds, reverse=True), "tool_result blocks must come first"
        answered = sorted(r["tool_use_id"] for r in results)
        assert answered == sorted(previous_uses), f"results {answered} do not answer the tool_use ids {previous_uses}"
        for r in results:
            content = r["content"]
            if r.get("is_error"):
                assert content and (not isinstance(content, str) or content.strip()), (
                    "content cannot be empty if is_error is true")
            if isinstance(content, list):
                for b in content:
                    if b["type"] == "text":
                        assert not _blank(b["text"])
        previous_uses = []
    assert not previous_uses or messages[-1]["role"] == "assistant"


def check_gemini(body: dict[str, Any]) -> None:
    contents = body["contents"]
    assert contents, "no contents"
    expected: list[str] | None = None  # the names of the calls the model's turn just made
    for c in contents:
        assert c["role"] in ("user", "model")
        assert c["parts"], "a content without parts"
        for p in c["parts"]:
            # (An empty text part is taken: the corpus' gemini__parallel_function_calls__1 request opens with one.)
            assert isinstance(p.get("text", ""), str)
        calls = [p["functionCall"] for p in c["parts"] if "functionCall" in p]
        responses = [p["functionResponse"] for p in c["parts"] if "functionResponse" in p]
        if expected is not None:
            assert c["role"] == "user", "the function calls' turn must be answered by the user's"
            assert sorted(r["id"] for r in responses) == sorted(expected), (
                f"responses {[r['id'] for r in responses]} for calls {expected}")
            expected = None
        else:
            assert not responses, "a functionResponse answering no functionCall turn"
        if calls:
            assert c["role"] == "model"
            ids = [f["id"] for f in calls]
            assert len(set(ids)) == len(ids), f"duplicate functionCall ids {ids}"
            expected = ids


_BEDROCK_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def check_bedrock(body: dict[str, Any]) -> None:
    messages = body["messages"]
    assert messages, "no messages"
    # (The first message may be the assistant's: sent as it is, docs/wire.md.)
    for block in body.get("system", []):
        if "text" in block:
            assert not _blank(block["text"])
    expected: list[str] = []
    for i, m in enumerate(messages):
        if i:
            assert m["role"] != messages[i - 1]["role"], "A conversation must alternate between user and assistant"
        assert m["content"], "a message without content"
        for b in m["content"]:
            if "text" in b:
                assert not _blank(b["text"]), "a blank text content block"
        results = [b["toolResult"] for b in m["content"] if "toolResult" in b]
        for r in results:
            for b in r["content"]:
                if "text" in b:
                    assert not _blank(b["text"])
        if m["role"] == "user":
            assert sorted(r["toolUseId"] for r in results) == sorted(expected), (
                f"results {[r['toolUseId'] for r in results]} for the toolUse ids {expected}")
            expected = []
        else:
            assert not expected
            expected = [b["toolUse"]["toolUseId"] for b in m["content"] if "toolUse" in b]
            for u in expected:
                assert _BEDROCK_ID.fullmatch(u), f"toolUseId {u!r} does not match [a-zA-Z0-9_-]+"
            assert len(set(expected)) == len(expected)


CHECKS: dict[str, Callable[[dict[str, Any], str], None]] = {
    "chat": lambda body, model: check_chat(body),
    "responses": lambda body, model: check_responses(body),
    "anthropic": check_anthropic,
    "gemini": lambda body, model: check_gemini(body),
    "bedrock": lambda body, model: check_bedrock(body),
}


def encoded(codec: WireCodec, request: LLMRequest, model: str) -> dict[str, Any] | None:
    """The body, or ``None`` when the wire refused the request as it should (a request-kind ProviderError)."""
    refusal: ProviderError | None = None
    try:
        body = codec.encode_request(request, model, stream=False)
    except ProviderError as exc:
        refusal = exc
    if refusal is None:
        return body
    assert refusal.kind is ErrorKind.request, refusal
    assert SECRET not in str(refusal)
    return None


@pytest.mark.parametrize(("name", "make", "model", "family"), WIRES, ids=[w[0] for w in WIRES])
@FEW
@given(request=requests())
def test_a_generated_conversation_is_encoded_by_the_vendors_rules(
    name: str, make: Callable[[], WireCodec], model: str, family: str, request: LLMRequest
) -> None:
    codec = make()
    codec.headers(SECRET)  # as a provider asks for them: the key goes there, and nowhere else
    body = encoded(codec, request, model)
    if body is None:
        return
    text = json.dumps(body, allow_nan=False)  # JSON, nothing else
    assert encoded(make(), request, model) == body, "the same request encodes to the same body"
    assert SECRET not in text
    CHECKS[family](body, model)


@pytest.mark.parametrize(("name", "make", "model", "family"), WIRES, ids=[w[0] for w in WIRES])
@FEW
@given(request=requests(media=False))
def test_a_text_conversation_the_user_opens_is_never_refused(
    name: str, make: Callable[[], WireCodec], model: str, family: str, request: LLMRequest
) -> None:
    """Without media, a conversation whose first message is the user's (after any system message) is one every wire
    can send: it is sent, by the vendor's rules.  (One that holds nothing but empty messages is refused by the
    Messages API and Converse: before sending, with a request-kind error; the test above lets such a refusal pass.)"""
    messages = list(request.messages)
    opening = next((i for i, m in enumerate(messages) if m.role != "system"), len(messages))
    messages.insert(opening, Message.user("What is the weather in Oslo?"))
    plain = attrs.evolve(request, messages=messages, thinking_budget=None, max_tokens=None)  # settings aside
    body = make().encode_request(plain, model, stream=False)
    json.dumps(body, allow_nan=False)
    CHECKS[family](body, model)


@pytest.mark.parametrize(("name", "make", "model", "family"), WIRES, ids=[w[0] for w in WIRES])
def test_a_conversation_opening_with_the_assistant_is_sent_as_it_is(
    name: str, make: Callable[[], WireCodec], model: str, family: str
) -> None:
    request = LLMRequest([Message.system("Be brief."), Message.assistant("Hi! How can I help?"), Message.user("Hi")])
    CHECKS[family](make().encode_request(request, model, stream=False), model)
