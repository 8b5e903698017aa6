"""Server-side encoding of the vendor wires: JSON bodies, SSE events and error bodies.

Written from the vendors' documented and recorded shapes (``tests/corpus`` in the repository),
independently of the client codecs in :mod:`agentactors.providers` — sharing
code with them would let a codec bug pass its own integration tests.
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Iterator
from typing import Any

import attrs

from ._fake_bedrock import EVENT_STREAM, bedrock_frame_bytes, bedrock_frames, bedrock_json
from ._fake_script import FakeReply, FakeToolCall

__all__ = [
    "Frame",
    "WireContext",
    "content_type",
    "dumps",
    "frame_bytes",
    "malformed_frame",
    "reply_frames",
    "reply_json",
    "request_id_headers",
]


@attrs.frozen(slots=True)
class WireContext:
    """What an answer needs to know about its request."""

    wire: str
    index: int
    model: str
    input_tokens: int = 1
    include_usage: bool = False
    #: The request asked Claude for manual thinking (Anthropic, Bedrock): a reply calling tools begins with a
    #: thinking block, as the real model's does — a ``redacted_thinking`` one when the script gave no reasoning —
    #: so that a client replaying it meets the rule strict mode checks on the next request.
    manual_thinking: bool = False


@attrs.frozen(slots=True)
class Frame:
    """One stream event before framing.  ``content`` marks text/reasoning/argument deltas (what
    ``cut_after`` and ``stream_error_after`` count)."""

    payload: Any
    event: str | None = None
    content: bool = False


# --- small helpers ------------------------------------------------------------------------------


def dumps(value: Any, *, compact: bool = True) -> str:
    if compact:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(value, ensure_ascii=False)


def _word_chunks(text: str, words: int) -> list[str]:
    """Split ``text`` into pieces of ``words`` words each; joined, they give back ``text`` exactly."""
    if not text:
        return []
    tokens = re.findall(r"\s*\S+", text)
    tail = text[len("".join(tokens)) :]
    if not tokens:
        return [text]
    tokens[-1] += tail
    return ["".join(tokens[i : i + words]) for i in range(0, len(tokens), words)]


def _fragments(text: str, size: int = 7) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _args_text(call: FakeToolCall, *, compact: bool) -> str:
    return call.arguments if isinstance(call.arguments, str) else dumps(call.arguments, compact=compact)


def _args_object(call: FakeToolCall) -> Any:
    """The arguments as an object for object-carrying wires (a string that does not parse stays a string)."""
    if not isinstance(call.arguments, str):
        return dict(call.arguments)
    try:
        value = json.loads(call.arguments)
    except ValueError:
        return call.arguments
    return value if isinstance(value, dict) else call.arguments


def _output_tokens(reply: FakeReply) -> int:
    if reply.output_tokens is not None:
        return reply.output_tokens
    size = len(reply.text) + len(reply.reasoning) + sum(len(_args_text(c, compact=True)) for c in reply.tool_calls)
    return max(1, size // 4)


def _input_tokens(reply: FakeReply, ctx: WireContext) -> int:
    return reply.input_tokens if reply.input_tokens is not None else ctx.input_tokens


def _signature(ctx: WireContext, n: int) -> str:
    # Standard base64 with '+' and '/' in it: the corpus shows responses in base64 and replays in
    # base64url, so a client that re-encodes must meet both alphabets.
    raw = f"fake-signature:{ctx.index}:{n}:".encode() + bytes([0xFB, 0xEF, 0xFF, 0xFE, 0x3E, 0x3F])
    return base64.b64encode(raw).decode("ascii")


def _redacted(ctx: WireContext, reply: FakeReply) -> str | None:
    """The ``data`` of the redacted thinking block a reply begins with (``None``: it begins with none)."""
    if not ctx.manual_thinking or reply.reasoning or not reply.tool_calls:
        return None
    return base64.b64encode(f"fake-redacted-thinking:{ctx.index}:".encode() + bytes([0xFB, 0xEF])).decode("ascii")


def _call_id(ctx: WireContext, call: FakeToolCall, i: int) -> str:
    if call.id is not None:
        return call.id
    prefix = "toolu_fake" if ctx.wire == "anthropic" else "call_fake"
    return f"{prefix}{ctx.index:05d}x{i}"


_OPENAI_FINISH = {
    "end_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "stop_sequence": "stop",
    "content_filter": "content_filter",
}
_ANTHROPIC_STOP = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "content_filter": "refusal",
}
_GEMINI_FINISH = {
    "end_turn": "STOP",
    "tool_use": "STOP",  # Gemini says STOP even when it called functions
    "max_tokens": "MAX_TOKENS",
    "stop_sequence": "STOP",
    "content_filter": "SAFETY",
}


def content_type(wire: str, *, sse: bool) -> str:
    if wire == "bedrock":
        return EVENT_STREAM if sse else "application/json"
    if not sse:
        return "application/json; charset=UTF-8" if wire == "gemini" else "application/json"
    return "text/event-stream" if wire == "gemini" else "text/event-stream; charset=utf-8"


def request_id_headers(ctx: WireContext) -> list[tuple[str, str]]:
    if ctx.wire == "openai":
        return [("x-request-id", f"req_fake{ctx.index:05d}")]
    if ctx.wire == "anthropic":
        return [("request-id", f"req_fake{ctx.index:05d}")]
    return []


# --- JSON answers -------------------------------------------------------------------------------


def reply_json(reply: FakeReply, ctx: WireContext) -> dict[str, Any]:
    """The complete (non-streaming) answer body for ``reply``."""
    if ctx.wire == "openai":
        return _openai_json(reply, ctx)
    if ctx.wire == "anthropic":
        return _anthropic_json(reply, ctx)
    if ctx.wire == "bedrock":
        return bedrock_json(reply, index=ctx.index, input_tokens=_input_tokens(reply, ctx),
                            output_tokens=_output_tokens(reply), redacted=_redacted(ctx, reply))
    return _gemini_chunk(reply, ctx, _gemini_parts(reply, ctx, text=reply.text, reasoning=reply.reasoning,
                                                   calls=True), finish=True, output=_output_tokens(reply))


def _openai_usage(reply: FakeReply, ctx: WireContext) -> dict[str, Any]:
    inp, out = _input_tokens(reply, ctx), _output_tokens(reply)
    return {
        "prompt_tokens": inp,
        "completion_tokens": out,
        "total_tokens": inp + out,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }


def _openai_json(reply: FakeReply, ctx: WireContext) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": reply.text if (reply.text or not reply.tool_calls) else None,
        "refusal": None,
        "annotations": [],
    }
    if reply.reasoning:
        message["reasoning"] = reply.reasoning  # as OpenAI-compatible servers (Groq, OpenRouter) send it
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": _call_id(ctx, c, i), "type": "function",
             "function": {"name": c.name, "arguments": _args_text(c, compact=True)}}
            for i, c in enumerate(reply.tool_calls)
        ]
    return {
        "id": f"chatcmpl-fake{ctx.index:05d}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": ctx.model,
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": _OPENAI_FINISH[reply.stop_reason]}
        ],
        "usage": _openai_usage(reply, ctx),
        "service_tier": "default",
        "system_fingerprint": "fp_fakevendor",
    }


def _anthropic_usage(inp: int, out: int) -> dict[str, Any]:
    return {
        "input_tokens": inp,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": out,
        "service_tier": "standard",
    }


def _anthropic_json(reply: FakeReply, ctx: WireContext) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    redacted = _redacted(ctx, reply)
    if redacted is not None:
        content.append({"type": "redacted_thinking", "data": redacted})
    if reply.reasoning:
        content.append({"type": "thinking", "thinking": reply.reasoning, "signature": _signature(ctx, 0)})
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for i, c in enumerate(reply.tool_calls):
        content.append({"type": "tool_use", "id": _call_id(ctx, c, i), "name": c.name, "input": _args_object(c)})
    return {
        "id": f"msg_fake{ctx.index:05d}",
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": content,
        "stop_reason": _ANTHROPIC_STOP[reply.stop_reason],
        "stop_sequence": None,
        "usage": _anthropic_usage(_input_tokens(reply, ctx), _output_tokens(reply)),
    }


def _gemini_parts(reply: FakeReply, ctx: WireContext, *, text: str, reasoning: str, calls: bool) -> list[Any]:
    parts: list[dict[str, Any]] = []
    if reasoning:
        parts.append({"text": reasoning, "thought": True})
    if text:
        parts.append({"text": text})
    if calls:
        for i, c in enumerate(reply.tool_calls):
            call: dict[str, Any] = {"name": c.name, "args": _args_object(c)}
            if c.id is not None:
                call["id"] = c.id
            part: dict[str, Any] = {"functionCall": call}
            if i == 0:  # across parallel calls only the first part carries the signature
                part["thoughtSignature"] = _signature(ctx, 0)
            parts.append(part)
    return parts


def _gemini_chunk(
    reply: FakeReply, ctx: WireContext, parts: list[Any], *, finish: bool, output: int
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = _GEMINI_FINISH[reply.stop_reason]
        if reply.tool_calls:
            candidate["finishMessage"] = "Model generated function call(s)."
    inp = _input_tokens(reply, ctx)
    usage: dict[str, Any] = {"promptTokenCount": inp, "candidatesTokenCount": output, "totalTokenCount": inp + output}
    if reply.reasoning:
        usage["thoughtsTokenCount"] = max(1, len(reply.reasoning) // 4)
    return {
        "candidates": [candidate],
        "usageMetadata": usage,
        "modelVersion": ctx.model,
        "responseId": f"fake{ctx.index:05d}",
    }


# --- streams ------------------------------------------------------------------------------------


def reply_frames(reply: FakeReply, ctx: WireContext) -> list[Frame]:
    """The stream events that deliver ``reply``, terminal event included."""
    if ctx.wire == "openai":
        return list(_openai_frames(reply, ctx))
    if ctx.wire == "anthropic":
        return list(_anthropic_frames(reply, ctx))
    if ctx.wire == "bedrock":
        raw = bedrock_frames(reply, index=ctx.index, input_tokens=_input_tokens(reply, ctx),
                             output_tokens=_output_tokens(reply), redacted=_redacted(ctx, reply))
        return [Frame(payload, event, content) for payload, event, content in raw]
    return list(_gemini_frames(reply, ctx))


def _openai_frames(reply: FakeReply, ctx: WireContext) -> Iterator[Frame]:
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": f"chatcmpl-fake{ctx.index:05d}",
            "object": "chat.completion.chunk",
            "created": created,
            "model": ctx.model,
            "system_fingerprint": "fp_fakevendor",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if ctx.include_usage:
            body["usage"] = None
        return body

    yield Frame(chunk({"role": "assistant", "content": "", "refusal": None}))
    for piece in _word_chunks(reply.reasoning, reply.words_per_chunk):
        yield Frame(chunk({"reasoning": piece}), content=True)
    for piece in _word_chunks(reply.text, reply.words_per_chunk):
        yield Frame(chunk({"content": piece}), content=True)
    for i, c in enumerate(reply.tool_calls):
        head = {"index": i, "id": _call_id(ctx, c, i), "type": "function",
                "function": {"name": c.name, "arguments": ""}}
        yield Frame(chunk({"tool_calls": [head]}), content=True)
        for frag in _fragments(_args_text(c, compact=True)):
            yield Frame(chunk({"tool_calls": [{"index": i, "function": {"arguments": frag}}]}), content=True)
    yield Frame(chunk({}, _OPENAI_FINISH[reply.stop_reason]))
    if ctx.include_usage:
        final = chunk({})
        final["choices"] = []
        final["usage"] = _openai_usage(reply, ctx)
        yield Frame(final)
    yield Frame("[DONE]")


def _anthropic_frames(reply: FakeReply, ctx: WireContext) -> Iterator[Frame]:
    inp = _input_tokens(reply, ctx)
    message = _anthropic_json(FakeReply(input_tokens=inp, output_tokens=1), ctx)
    message.update(content=[], stop_reason=None)
    yield Frame({"type": "message_start", "message": message}, "message_start")
    index = 0
    pinged = False

    def start(block: dict[str, Any]) -> Iterator[Frame]:
        nonlocal pinged
        yield Frame({"type": "content_block_start", "index": index, "content_block": block}, "content_block_start")
        if not pinged:  # the real service sends a ping after the first block starts
            pinged = True
            yield Frame({"type": "ping"}, "ping")

    def delta(d: dict[str, Any]) -> Frame:
        return Frame({"type": "content_block_delta", "index": index, "delta": d}, "content_block_delta", True)

    def stop() -> Frame:
        return Frame({"type": "content_block_stop", "index": index}, "content_block_stop")

    redacted = _redacted(ctx, reply)
    if redacted is not None:  # a redacted block arrives whole in its start event
        yield from start({"type": "redacted_thinking", "data": redacted})
        yield stop()
        index += 1
    if reply.reasoning:
        yield from start({"type": "thinking", "thinking": "", "signature": ""})
        for piece in _word_chunks(reply.reasoning, reply.words_per_chunk):
            yield delta({"type": "thinking_delta", "thinking": piece})
        # The signature arrives as the last delta of a thinking block.
        yield Frame({"type": "content_block_delta", "index": index,
                     "delta": {"type": "signature_delta", "signature": _signature(ctx, 0)}}, "content_block_delta")
        yield stop()
        index += 1
    if reply.text:
        yield from start({"type": "text", "text": ""})
        for piece in _word_chunks(reply.text, reply.words_per_chunk):
            yield delta({"type": "text_delta", "text": piece})
        yield stop()
        index += 1
    for i, c in enumerate(reply.tool_calls):
        yield from start({"type": "tool_use", "id": _call_id(ctx, c, i), "name": c.name, "input": {}})
        yield delta({"type": "input_json_delta", "partial_json": ""})  # the first fragment is empty
        for frag in _fragments(_args_text(c, compact=False)):
            yield delta({"type": "input_json_delta", "partial_json": frag})
        yield stop()
        index += 1
    yield Frame(
        {
            "type": "message_delta",
            "delta": {"stop_reason": _ANTHROPIC_STOP[reply.stop_reason], "stop_sequence": None},
            "usage": {"output_tokens": _output_tokens(reply)},
        },
        "message_delta",
    )
    yield Frame({"type": "message_stop"}, "message_stop")


def _gemini_frames(reply: FakeReply, ctx: WireContext) -> Iterator[Frame]:
    total = _output_tokens(reply)
    pieces: list[tuple[str, str]] = [("r", p) for p in _word_chunks(reply.reasoning, reply.words_per_chunk)]
    pieces += [("t", p) for p in _word_chunks(reply.text, reply.words_per_chunk)]
    sent = 0
    # Usage arrives on every chunk as running totals.
    for n, (kind, piece) in enumerate(pieces):
        sent += len(piece)
        last = n == len(pieces) - 1 and not reply.tool_calls
        parts = [{"text": piece, "thought": True}] if kind == "r" else [{"text": piece}]
        output = total if last else max(1, min(total, sent // 4))
        yield Frame(_gemini_chunk(reply, ctx, parts, finish=last, output=output), content=True)
    if reply.tool_calls:
        # Function calls arrive whole, in one chunk.
        parts = _gemini_parts(reply, ctx, text="", reasoning="", calls=True)
        yield Frame(_gemini_chunk(reply, ctx, parts, finish=False, output=total), content=True)
    if reply.tool_calls or not pieces:
        yield Frame(_gemini_chunk(reply, ctx, [{"text": ""}], finish=True, output=total))


def frame_bytes(wire: str, frame: Frame, n: int = 0) -> bytes:
    """One framed SSE event, with each wire's real separators and quirks (Bedrock: one event-stream message)."""
    if wire == "bedrock":
        return bedrock_frame_bytes(frame.payload, frame.event, n)
    data = frame.payload if isinstance(frame.payload, str) else dumps(frame.payload, compact=wire != "gemini")
    lines = data.split("\n")
    if wire == "anthropic":
        # The real service pads JSON data lines with trailing spaces.
        lines[-1] += " " * (n % 5)
    body = "".join(f"data: {line}\n" for line in lines)
    if frame.event is not None:
        body = f"event: {frame.event}\n{body}"
    if wire == "gemini":
        return (body.rstrip("\n").replace("\n", "\r\n") + "\r\n\r\n").encode("utf-8")
    return (body + "\n").encode("utf-8")


def malformed_frame(wire: str, body: str) -> Frame:
    return Frame(body, "message_start" if wire == "anthropic" else None)
