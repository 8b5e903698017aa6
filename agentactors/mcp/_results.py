"""What an MCP tool call comes back as: the text the model reads, or an :class:`MCPToolError`.

A ``tools/call`` result is a list of content blocks plus, optionally, structured content.  Tool results
here are text (:class:`~agentactors.tools.results.ToolResult` holds a ``str``), so each block becomes
text in order, joined by newlines:

* text blocks as they are — except a text block that is only the JSON of the structured content (the
  spec asks servers to send both, for older clients): that one becomes the compact JSON;
* structured content alone (no text block) as compact JSON; beside text that says something else
  (``"5"`` for ``{"result": 5}``), the text is what the model reads;
* an embedded text resource as its text, a binary one as a one-line placeholder;
* images and audio as a one-line placeholder (media type and size), never their base64 payload;
* a resource link as a one-line reference.

The text passes through :func:`~agentactors.redact` (past :data:`REDACT_LIMIT` characters, through
:func:`~agentactors.redaction.redact_registered`: the registered secrets only): a server that echoes a
credential it was sent (a header) does not hand it to the model.  An ``isError`` result
raises :class:`MCPToolError` with the server's text, so the executor records the call with status
``error`` and that text.

The SDK's own messages (a parse or validation error) pass through :func:`sdk_message` before they are
shown or logged: pydantic quotes the input it refused (``input_value=b'...'``), shortened in the middle, so
a secret echoed there is shown in part — which the exact match of a registered secret cannot catch.
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar

from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from ..errors import AgentActorsError, redact
from ..redaction import redact_registered

__all__ = ["REDACT_LIMIT", "MCPToolError", "result_text", "sdk_message"]

#: Results up to this many characters are scanned for secrets (scanning costs ~0.16 µs a character:
#: a larger result is normally refused by a ceiling or cut by the operator's cap anyway).
REDACT_LIMIT = 1_000_000
# One shared encoder: json.dumps with options builds one per call.
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
#: pydantic's quote of the input it refused: ``, input_value=<repr>`` up to the last ``, input_type=<name>]`` of its
#: line (a repr is one line, and may itself spell ``, input_type=...]``); without that end, the rest of the line.
_QUOTED_INPUT = re.compile(r",? ?input_value=.*(?=, input_type=[^,\]\n]*\])|,? ?input_value=.*")
#: pydantic's pointer to its documentation, one line per error.
_FURTHER = re.compile(r"\n?[ \t]*For further information visit \S*")


class MCPToolError(AgentActorsError):
    """An MCP tool call that failed: its message is what the model reads after ``Error: MCPToolError:``.

    Raised inside the tool's call (never out of a run): an ``isError`` result (the server's text), a
    JSON-RPC error (its message), a protocol error or a dead server (a concise reason).  The text passes
    through :func:`~agentactors.redact`.
    """

    #: It happened in another process (the server): the traceback here shows only this library, so the WARNING a
    #: failed tool call leaves (``agentactors.tools``) carries its text without one.
    remote: ClassVar[bool] = True

    def __init__(self, message: str) -> None:
        super().__init__(redact(message))


def result_text(result: CallToolResult) -> str:
    """The model-facing text of a successful result.  :raises MCPToolError: for an ``isError`` result."""
    structured = result.structured_content
    parts: list[str] = []
    shown = False  # the structured content is written once, compactly, where its JSON text block was
    has_text = False
    for block in result.content:
        if isinstance(block, TextContent):
            has_text = True
            if structured is not None and not shown and _is_json_of(block.text, structured):
                parts.append(_COMPACT.encode(structured))
                shown = True
            else:
                parts.append(block.text)
        else:
            parts.append(_block_text(block))
    if structured is not None and not has_text:
        parts.insert(0, _COMPACT.encode(structured))  # no text said it: the structure is the answer
    text = "\n".join(parts)
    # A server that echoes a registered secret back (a header it received) must not hand it to the model;
    # past REDACT_LIMIT the registered secrets are still removed (a plain search), only the shapes are not looked for.
    text = redact(text) if len(text) <= REDACT_LIMIT else redact_registered(text)
    if result.is_error:
        raise MCPToolError(text.strip() or "the tool reported an error and gave no text")
    return text


def sdk_message(text: str) -> str:
    """``text`` (the SDK's message, a pydantic error's) without the input pydantic quotes or its documentation links.

    What was wrong stays (``Invalid JSON: EOF while parsing ... [type=json_invalid, input_type=bytes]``); the
    input goes whole, however it is spelled: a part of a secret in it would escape redaction.
    """
    if "input_value=" in text:
        text = _QUOTED_INPUT.sub("", text)
    if "For further information" in text:
        text = _FURTHER.sub("", text)
    return text


def _is_json_of(text: str, value: Any) -> bool:
    stripped = text.lstrip()
    if not stripped or stripped[0] not in "{[":
        return False  # cheap: only JSON objects and arrays can repeat structured content
    try:
        return bool(json.loads(text) == value)
    except ValueError:
        return False


def _block_text(block: Any) -> str:
    # TODO(media): Image/Audio content parts are being added to messages (the media area's
    # agentactors.messages parts); once a tool result can carry parts, hand images to the wires
    # that carry them instead of this placeholder.  The seam is here and in ToolResult.content.
    if isinstance(block, ImageContent):
        return f"[image: {block.mime_type}, {_decoded_size(block.data):,} bytes]"
    if isinstance(block, AudioContent):
        return f"[audio: {block.mime_type}, {_decoded_size(block.data):,} bytes]"
    if isinstance(block, EmbeddedResource):
        resource = block.resource
        if isinstance(resource, TextResourceContents):
            return resource.text
        if isinstance(resource, BlobResourceContents):
            kind = resource.mime_type or "application/octet-stream"
            return f"[resource {resource.uri}: {kind}, {_decoded_size(resource.blob):,} bytes]"
    if isinstance(block, ResourceLink):
        about = f" — {block.description}" if block.description else ""
        return f"[resource link {block.uri}: {block.name}{about}]"
    return f"[{getattr(block, 'type', type(block).__name__)} content]"


def _decoded_size(data: str) -> int:
    """The size of base64 ``data`` once decoded, from its length (decoding a large payload to count it is waste)."""
    return len(data.rstrip("=")) * 3 // 4
