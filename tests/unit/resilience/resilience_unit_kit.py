"""Small helpers of the resilience unit tests (the scenario tests have their own in tests/reliability)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from agentactors.errors import ProviderError, classify_http_error
from agentactors.events import EventSink, InMemoryRecorder, use_sink
from agentactors.messages import LLMRequest, Message, ToolChoice, ToolSpec

REQ = LLMRequest([Message.user("hello")])
LOOKUP = ToolSpec("lookup", "look something up", {"type": "object", "properties": {}})
FORCED = LLMRequest([Message.user("hello")], tools=[LOOKUP], tool_choice=ToolChoice.tool("lookup"))


def http_error(status: int, headers: dict[str, str] | None = None, *, code: str | None = None) -> ProviderError:
    error: dict[str, Any] = {"message": f"HTTP {status}"}
    if code is not None:
        error["code"] = code
    return classify_http_error(status, headers or {}, json.dumps({"error": error}), provider="vendor")


@contextmanager
def recording(run_id: str = "r1") -> Iterator[InMemoryRecorder]:
    rec = InMemoryRecorder()
    with use_sink(EventSink([rec], run_id=run_id)):
        yield rec
