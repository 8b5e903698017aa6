"""Helpers of the resilience tests: requests, realistic vendor errors, call logs, recording."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio

from agentactors.errors import ProviderError
from agentactors.events import EventSink, InMemoryRecorder, to_jsonable, use_sink
from agentactors.messages import LLMRequest, LLMResponse, Message, ToolChoice, ToolSpec
from agentactors.providers import classify_http_error
from agentactors.providers.port import StreamContext

REQ = LLMRequest([Message.user("hello")])
LOOKUP = ToolSpec("lookup", "look something up", {"type": "object", "properties": {"q": {"type": "string"}}})
FORCED = LLMRequest([Message.user("hello")], tools=[LOOKUP], tool_choice=ToolChoice.required())
#: A request forcing one named tool (``ToolChoice.tool``), for the decorators' unit tests.
FORCED_TOOL = LLMRequest([Message.user("hello")], tools=[LOOKUP], tool_choice=ToolChoice.tool("lookup"))


def http_error(
    status: int, headers: dict[str, str] | None = None, *, code: str | None = None, provider: str = "vendor"
) -> ProviderError:
    """An error as a vendor adapter would raise it for this HTTP answer."""
    error: dict[str, Any] = {"message": f"HTTP {status} from the vendor"}
    if code is not None:
        error["code"] = code
        error["type"] = code
    return classify_http_error(status, headers or {}, json.dumps({"error": error}).encode(), provider=provider)


class CallLog:
    """Records, per provider, the virtual time of every call it received."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, float]] = []

    def times(self, name: str) -> list[float]:
        return [t for n, t in self.entries if n == name]

    def item(self, name: str, outcome: Any) -> Callable[[LLMRequest], Any]:
        """A ScriptedProvider item that logs the call, then answers ``outcome`` (an exception is raised)."""

        def answer(request: LLMRequest) -> Any:
            self.entries.append((name, anyio.current_time()))
            if isinstance(outcome, BaseException):
                raise outcome
            return outcome

        return answer


class Counting:
    """Wraps a provider and counts complete() and stream() invocations (even ones that fail at once)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0

    @property
    def name(self) -> str:
        return str(self.inner.name)

    @property
    def default_model(self) -> str | None:
        return self.inner.default_model  # type: ignore[no-any-return]

    carries_tools = True

    @property
    def carries_forced_tool_choice(self) -> bool:
        return bool(self.inner.carries_forced_tool_choice)

    def supports_forced_tool_choice(self, model: str | None) -> bool:
        return bool(self.inner.supports_forced_tool_choice(model))

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.calls += 1
        return await self.inner.complete(request)  # type: ignore[no-any-return]

    def stream(self, request: LLMRequest) -> StreamContext:
        self.calls += 1
        return self.inner.stream(request)  # type: ignore[no-any-return]

    async def aclose(self) -> None:
        await self.inner.aclose()


@contextmanager
def recording(run_id: str = "r1") -> Iterator[InMemoryRecorder]:
    """Install a recorder as the current run's sink for the block."""
    rec = InMemoryRecorder()
    with use_sink(EventSink([rec], run_id=run_id)):
        yield rec


def event_trace(rec: InMemoryRecorder) -> list[tuple[str, float, Any]]:
    """Comparable view of the recorded events: type, time and the JSON-able payload."""
    return [(e.type, round(e.time, 9), to_jsonable(dict(e.data))) for e in rec.events]
