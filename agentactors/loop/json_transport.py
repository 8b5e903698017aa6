"""The JSON-fallback tool transport, for providers that cannot carry tools natively.

When ``provider.carries_tools`` is ``False`` the loop does not send tool specs on
the wire.  Instead the system prompt gains a contract (:func:`contract_text`):
after its prose the model writes one JSON block per call,
``{"tool": "<name>", "arguments": {...}}``.  The reply is scanned with
string-aware brace matching (:func:`parse_reply`): quotes, escapes and nested
objects are honoured, fenced ```` ```json ```` blocks are accepted, several blocks
may follow each other.  Parsed blocks are removed from the text; a block that is
not valid JSON, or valid JSON that is not a call, stays in the text and is not
executed (running a guess is worse than showing the model's text).

:class:`StreamFilter` applies the same rules to a stream of text deltas: prose
is released as it arrives and only the text from a possible block start (a
``{`` or a code fence) is held until that block is resolved, so a user watching
the stream never sees the JSON of a call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import attrs

from ..messages import Message, ToolCall, ToolSpec
from ..parts import MediaPart, Text

__all__ = ["ParsedReply", "StreamFilter", "contract_text", "parse_reply", "render_block", "to_wire_messages"]

_FENCE = "```"
# A fence's info string: a language word such as ``json`` on the fence's own line.
_INFO = re.compile(r"[A-Za-z0-9_+\-]*[ \t]*\n")
_MANY_BLANKS = re.compile(r"\n{3,}")


def contract_text(tools: Sequence[ToolSpec]) -> str:
    """The system-prompt section that teaches a model without native tools how to call them.

    Lists every tool with its description and JSON Schema, then the block format.
    """
    lines = [
        "You can call tools. To call one, finish your reply with one JSON block per call, "
        "each on its own lines after your text, exactly in this form:",
        '{"tool": "<tool name>", "arguments": {<arguments as a JSON object>}}',
        "Write nothing after the blocks. The results arrive in the next message; then answer "
        "or call more tools. When you need no tool, answer in plain text without any such block.",
        "",
        "Available tools:",
    ]
    for spec in tools:
        desc = spec.description.strip().replace("\n", " ")
        schema = json.dumps(spec.parameters, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
        lines.append(f"- {spec.name}: {desc}" if desc else f"- {spec.name}")
        lines.append(f"  arguments schema: {schema}")
    return "\n".join(lines)


@attrs.frozen(slots=True)
class ParsedReply:
    """A reply split into the text the user reads and the calls the model asked for."""

    text: str
    calls: tuple[ToolCall, ...] = ()


def match_brace(text: str, start: int) -> int | None:
    """The index of the ``}`` closing the ``{`` at ``start``, or ``None`` if it never closes.

    String-aware: braces inside JSON strings (with ``\\"`` and ``\\\\`` escapes)
    do not count.
    """
    depth = 0
    in_string = False
    escaped = False
    i = start
    n = len(text)
    while i < n:
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def _as_call(block: str) -> tuple[str, dict[str, Any], str | None] | None:
    """``(name, arguments, raw_arguments)`` if ``block`` is a valid call object, else ``None``."""
    try:
        value = json.loads(block)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    name = value.get("tool")
    if not isinstance(name, str) or not name.strip():
        return None
    args = value.get("arguments", {})
    if args is None:
        return name.strip(), {}, None
    if isinstance(args, dict):
        return name.strip(), args, None
    if isinstance(args, str):
        # Some models double-encode the arguments; accept them when the string is an object.
        try:
            decoded = json.loads(args)
        except (ValueError, RecursionError):
            return None
        return (name.strip(), decoded, args) if isinstance(decoded, dict) else None
    return None


def _fence_body(text: str, start: int) -> tuple[int, int]:
    """For a fence opening at ``start``: ``(body_start, close_index)``; ``close_index`` is
    ``len(text)`` when the fence is never closed."""
    pos = start + len(_FENCE)
    info = _INFO.match(text, pos)
    body_start = info.end() if info else pos
    close = text.find(_FENCE, body_start)
    return body_start, (close if close >= 0 else len(text))


class _Scanner:
    """Walks a text once, splitting it into kept text and parsed calls."""

    __slots__ = ("_counter", "_prefix", "calls")

    def __init__(self, id_prefix: str, first_index: int) -> None:
        self._prefix = id_prefix
        self._counter = first_index
        self.calls: list[ToolCall] = []

    def _add(self, found: tuple[str, dict[str, Any], str | None]) -> None:
        name, args, raw = found
        self._counter += 1
        self.calls.append(ToolCall(id=f"{self._prefix}{self._counter}", name=name, arguments=args, raw_arguments=raw))

    def scan(self, text: str, *, fences: bool = True) -> str:
        kept: list[str] = []
        i = 0
        n = len(text)
        while i < n:
            brace = text.find("{", i)
            fence = text.find(_FENCE, i) if fences else -1
            if brace < 0 and fence < 0:
                kept.append(text[i:])
                break
            if fence >= 0 and (brace < 0 or fence < brace):
                kept.append(text[i:fence])
                body_start, close = _fence_body(text, fence)
                # An unclosed fence (a forgotten or cut-off closing line) runs to the end of the text.
                closing = _FENCE if close < n else ""
                before = len(self.calls)
                inner = self.scan(text[body_start:close], fences=False)
                if len(self.calls) > before and not inner.strip():
                    pass  # a fence holding only calls disappears with them
                elif len(self.calls) > before:
                    kept.append(text[fence:body_start] + inner + closing)
                else:
                    kept.append(text[fence : close + len(closing)])
                i = close + len(closing)
                continue
            kept.append(text[i:brace])
            end = match_brace(text, brace)
            if end is None:
                # Never closes: not a block.  Go on after the brace so a later block still counts.
                kept.append("{")
                i = brace + 1
                continue
            found = _as_call(text[brace : end + 1])
            if found is None:
                # Invalid JSON, or JSON that is not a call: left in the text as a whole, never run.
                kept.append(text[brace : end + 1])
            else:
                self._add(found)
            i = end + 1
        return "".join(kept)


def _tidy(text: str) -> str:
    return _MANY_BLANKS.sub("\n\n", text).strip()


def parse_reply(text: str, *, id_prefix: str = "call_", first_index: int = 0) -> ParsedReply:
    """Split a JSON-fallback reply into prose and calls.

    Call ids are ``f"{id_prefix}{k}"`` for ``k = first_index + 1, ...`` (give each
    step its own prefix so ids stay unique in a run).  Whitespace left where a
    block was removed is tidied: no more than one blank line, no leading or
    trailing whitespace.  Never raises on any input.
    """
    if "{" not in text:
        return ParsedReply(text.strip())
    scanner = _Scanner(id_prefix, first_index)
    kept = scanner.scan(text)
    if not scanner.calls:
        return ParsedReply(text.strip())
    return ParsedReply(_tidy(kept), tuple(scanner.calls))


class StreamFilter:
    """Holds back streamed JSON-fallback text from a possible block start until the block resolves.

    ``feed(delta)`` returns the text that may be shown now; ``finish()`` returns
    whatever was still held (text that turned out not to be a call) at the end.
    Whitespace before a held block is held with it, so the shown text matches
    :func:`parse_reply`'s tidied text as closely as a stream allows.
    """

    __slots__ = ("_held", "_pending_ws", "_started")

    def __init__(self) -> None:
        self._held = ""  # text from a possible block start on, unresolved
        self._pending_ws = ""  # whitespace shown only if prose follows it
        self._started = False

    def feed(self, delta: str) -> str:
        if not delta:
            return ""
        text = self._held + delta
        self._held = ""
        return self._release(text, final=False)

    def finish(self) -> str:
        text = self._held
        self._held = ""
        out = self._release(text, final=True) if text else ""
        self._pending_ws = ""
        return out

    def _show(self, prose: str, out: list[str]) -> None:
        if not self._started:
            prose = prose.lstrip()
        if not prose:
            return
        body = prose.rstrip()
        if not body:
            self._pending_ws += prose
            return
        out.append(self._pending_ws + body)
        self._pending_ws = prose[len(body) :]
        self._started = True

    def _release(self, text: str, *, final: bool) -> str:
        out: list[str] = []
        i = 0
        n = len(text)
        while i < n:
            brace = text.find("{", i)
            tick = text.find("`", i)
            if brace < 0 and tick < 0:
                self._show(text[i:], out)
                break
            start = brace if tick < 0 or (0 <= brace < tick) else tick
            self._show(text[i:start], out)
            if start == tick:
                if not final and n - tick < len(_FENCE) and _FENCE.startswith(text[tick:]):
                    self._held = text[tick:]  # maybe the start of a fence: wait for more
                    break
                if not text.startswith(_FENCE, tick):
                    self._show("`", out)  # inline code, not a fence
                    i = tick + 1
                    continue
                fence_close = _fence_body(text, tick)[1]
                if fence_close == n and not final:
                    self._held = text[tick:]
                    break
                end = min(n, fence_close + len(_FENCE))
            else:
                close = match_brace(text, brace)
                if close is None:
                    if final:
                        # It never closed: it was text.  Blocks after it are still calls.
                        self._show("{", out)
                        i = brace + 1
                        continue
                    self._held = text[brace:]
                    break
                end = close + 1
            block = text[start:end]
            scanner = _Scanner("", 0)
            kept = scanner.scan(block)
            self._show(kept if scanner.calls else block, out)
            i = end
        return "".join(out)


def render_block(call: ToolCall) -> str:
    """The contract block of ``call``, as the model would have written it."""
    return json.dumps({"tool": call.name, "arguments": call.arguments}, ensure_ascii=False)


def _results_message(text: str, media: tuple[MediaPart, ...]) -> Message:
    # Media a tool returned (an image) travel with the results, after their text.
    return Message.user([Text(text), *media]) if media else Message.user(text)


def to_wire_messages(messages: Sequence[Message]) -> list[Message]:
    """The conversation as a provider without native tools can carry it.

    The run keeps its conversation in the canonical shape (assistant messages
    with ``tool_calls``, ``tool`` messages with results) so its record reads the
    same on both transports.  On the wire, a call becomes its contract block
    after the assistant's text, and consecutive results become one user message
    (with the media parts the tools returned, after the text).
    """
    out: list[Message] = []
    results_open = False  # the last message out is a results message that more results may join
    for m in messages:
        if m.role == "assistant" and m.tool_calls:
            blocks = "\n".join(render_block(c) for c in m.tool_calls)
            text = f"{m.content}\n{blocks}" if m.content else blocks
            out.append(Message.assistant(text, reasoning=m.reasoning, provider_data=m.provider_data))
            results_open = False
        elif m.role == "tool":
            status = "error" if m.is_error else "ok"
            entry = f"[{m.name or 'tool'} · call {m.tool_call_id} · {status}]\n{m.content}"
            if results_open:
                out[-1] = _results_message(f"{out[-1].content}\n\n{entry}", out[-1].media + m.media)
            else:
                out.append(_results_message(f"Tool results:\n\n{entry}", m.media))
                results_open = True
        else:
            out.append(m)
            results_open = False
    return out
