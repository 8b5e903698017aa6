"""The FakeVendor's strict request checks reject nothing a real vendor accepted: every request of the
recorded corpus that got an HTTP 200 passes them, and reads as the conversation it carries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from agentactors.testing._fake_responses import parse_request, route  # the shared ones, plus Responses
from tests.support.paths import CORPUS

_WIRE = {"openai": "openai", "groq": "openai", "openrouter": "openai", "anthropic": "anthropic", "gemini": "gemini",
         "openai-responses": "responses"}


def _accepted() -> list[Path]:
    files = sorted(CORPUS.glob("*__*.json")) if CORPUS.is_dir() else []
    return [f for f in files if json.loads(f.read_text())["response"]["status"] == 200]


def _route(path: str, vendor: str) -> tuple[str, str | None, bool | None]:
    bare = urlsplit(path).path
    if vendor not in ("gemini", "bedrock"):  # these two name the model in the path
        return _WIRE[vendor], None, None
    routed = route("POST", bare)
    assert routed is not None, path
    return routed


@pytest.mark.parametrize("case", _accepted(), ids=lambda p: p.stem)
def test_every_accepted_corpus_request_passes_strict_checks(case: Path) -> None:
    recorded: dict[str, Any] = json.loads(case.read_text())
    wire, model, stream = _route(recorded["request"]["path"], recorded["vendor"])
    headers = {"anthropic-version": "2023-06-01"} if wire == "anthropic" else {}
    parsed = parse_request(wire, recorded["request"]["body"], headers, path_model=model, path_stream=stream,
                           strict=True)
    conv = parsed.conversation
    assert parsed.wire == wire
    assert conv.message_count > 0
    body = recorded["request"]["body"]
    declared = body.get("tools") or body.get("toolConfig", {}).get("tools") or []
    if wire != "gemini":
        offered = [t for t in declared if "function" in t or "input_schema" in t or t.get("type") == "function"
                   or "toolSpec" in t]
        assert len(conv.tools) == len(offered)
    assert len(conv.tool_results) >= sum(1 for m in body.get("messages", []) if m.get("role") == "tool")


def test_the_corpus_is_there() -> None:
    assert len(_accepted()) >= 50, f"expected the recorded corpus at {CORPUS}"


def test_gemini_routes() -> None:
    assert route("POST", "/v1beta/models/gemini-2.5-flash:generateContent") == ("gemini", "gemini-2.5-flash", False)
    assert route("POST", "/v1beta/models/g:streamGenerateContent") == ("gemini", "g", True)
    assert route("POST", "/v1beta/models/g:countTokens") is None
    assert route("GET", "/v1/messages") is None
    assert route("POST", "/chat/completions") == ("openai", None, None)
