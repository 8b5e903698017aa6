"""An MCP call's result as the text the model reads (pure: no server)."""

from __future__ import annotations

import base64

import pytest
from mcp.types import (
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from agentactors.mcp import MCPToolError
from agentactors.mcp._results import REDACT_LIMIT, result_text
from agentactors.redaction import register_secret


def _text(text: str) -> TextContent:
    return TextContent(type="text", text=text)


def test_text_blocks_are_joined_and_structured_content_is_written_once_compactly() -> None:
    assert result_text(CallToolResult(content=[_text("one"), _text("two")])) == "one\ntwo"
    structured = {"hits": ["a", "b"], "n": 2}
    both = CallToolResult(content=[_text('{\n  "hits": ["a", "b"],\n  "n": 2\n}')], structured_content=structured)
    assert result_text(both) == '{"hits":["a","b"],"n":2}'
    alone = CallToolResult(content=[], structured_content=structured)
    assert result_text(alone) == '{"hits":["a","b"],"n":2}'
    # Text that says something else than the structure (FastMCP's {"result": 5} beside "5"): the text.
    assert result_text(CallToolResult(content=[_text("5")], structured_content={"result": 5})) == "5"


def test_images_resources_and_links_become_one_line_each() -> None:
    png = base64.b64encode(b"\x89PNG" + b"\x00" * 20).decode()
    result = CallToolResult(
        content=[
            ImageContent(type="image", data=png, mime_type="image/png"),
            EmbeddedResource(type="resource", resource=TextResourceContents(uri="file:///a.txt", text="the file")),
            EmbeddedResource(
                type="resource",
                resource=BlobResourceContents(uri="file:///b.bin", blob=base64.b64encode(b"12345678").decode()),
            ),
            ResourceLink(type="resource_link", uri="file:///c.md", name="c.md", description="notes"),
        ]
    )
    assert result_text(result).splitlines() == [
        "[image: image/png, 24 bytes]",
        "the file",
        "[resource file:///b.bin: application/octet-stream, 8 bytes]",
        "[resource link file:///c.md: c.md — notes]",
    ]


def test_an_is_error_result_raises_with_the_servers_text() -> None:
    with pytest.raises(MCPToolError, match=r"^repository not found$"):
        result_text(CallToolResult(content=[_text("repository not found")], is_error=True))
    with pytest.raises(MCPToolError, match="gave no text"):
        result_text(CallToolResult(content=[], is_error=True))


def test_a_secret_the_server_echoes_is_redacted() -> None:
    register_secret("mcp-unit-secret-88a1c2d3e4f5")
    echoed = CallToolResult(content=[_text("you sent mcp-unit-secret-88a1c2d3e4f5")])
    assert result_text(echoed) == "you sent [REDACTED]"
    assert "88a1" not in str(MCPToolError("bad key mcp-unit-secret-88a1c2d3e4f5"))


def test_a_secret_in_a_result_past_the_scanning_limit_is_still_redacted() -> None:
    """Past REDACT_LIMIT the shapes are not looked for, but a registered secret is removed wherever it stands."""
    register_secret("mcp-unit-secret-7f00beefcafe")
    filler = "x" * (REDACT_LIMIT + 10)
    secret = "mcp-unit-secret-7f00beefcafe"
    echoed = CallToolResult(content=[_text(f"Bearer {secret} {filler} {secret}")])
    text = result_text(echoed)
    assert "7f00beef" not in text
    assert text.startswith("Bearer [REDACTED] xxx") and text.endswith("xxx [REDACTED]")
    assert len(text) == len(filler) + len("Bearer [REDACTED]  [REDACTED]")
