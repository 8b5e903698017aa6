"""``agui_app``: an agent's runs as AG-UI event streams, for web frontends that speak AG-UI (CopilotKit, ...).

``POST /`` a ``RunAgentInput`` (``threadId``, ``runId``, ``messages``, ...) and the answer is an SSE
stream of AG-UI events (``data: {"type": ...}``): ``RUN_STARTED`` echoing the two ids; for each model
answer ``TEXT_MESSAGE_START`` / ``_CONTENT`` (as the text streams) / ``_END``, then per tool call
``TOOL_CALL_START`` / ``_ARGS`` / ``_END`` and, once the tool ran here in the server, ``TOOL_CALL_RESULT``;
then ``RUN_FINISHED`` (its ``result`` the typed output of an agent with an ``output_type``) or
``RUN_ERROR``.  A client that disconnects cancels the run.

The events are written as plain JSON: the wire format is small and stable, and the app then needs no
dependency; the tests validate every event against the ``ag-ui-protocol`` package's models.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable
from typing import Any

from ..agent.core import Agent
from ..errors import ProviderError, redact
from ..events import Event, LLMRequested, LLMResponded, LLMTextDelta
from ..loop.result import RunResult
from ..messages import Message, ToolCall
from ..tools.results import render_result
from ._agui_input import InvalidInput, RunInput, read_run_input
from ._http import (
    DEFAULT_MAX_BODY,
    AppRuntime,
    BodyError,
    Disconnected,
    EventStream,
    Receive,
    Scope,
    Send,
    cancelled_on_disconnect,
    read_json,
    route_path,
    send_json,
)

__all__ = ["AGUIApp", "agui_app"]


def agui_app(agent: Agent[Any], *, runtime: Any = None, max_body_size: int = DEFAULT_MAX_BODY) -> AGUIApp:
    """An ASGI app streaming ``agent``'s runs as AG-UI events at its root path.

    ``runtime`` as for :func:`~agentactors.serve.openai_app`: given, else the agent's bound runtime, else
    one the app opens in its ASGI lifespan.

    :raises TypeError: ``agent`` is not an :class:`~agentactors.Agent`.
    """
    return AGUIApp(agent, runtime=runtime, max_body_size=max_body_size)


class AGUIApp:
    """The ASGI app :func:`agui_app` returns."""

    def __init__(self, agent: Agent[Any], *, runtime: Any = None, max_body_size: int = DEFAULT_MAX_BODY) -> None:
        if not isinstance(agent, Agent):
            raise TypeError(f"agui_app serves an Agent, not {type(agent).__name__}")
        self.agent = agent
        self._runtime = AppRuntime(runtime, (agent,))
        self._max_body = max_body_size

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._runtime.serve_lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if route_path(scope) != "/":
            await send_json(send, 404, {"detail": "not found: POST a RunAgentInput to the app's root"})
            return
        if scope.get("method") != "POST":
            await send_json(send, 405, {"detail": "POST a RunAgentInput"}, {"allow": "POST"})
            return
        try:
            run_input = read_run_input(await read_json(receive, scope, self._max_body))
        except Disconnected:
            return
        except BodyError as exc:
            await send_json(send, 400, {"detail": str(exc)})
            return
        except InvalidInput as exc:
            await send_json(send, 422, {"detail": str(exc)})
            return
        stream = EventStream(send)
        async with cancelled_on_disconnect(receive):
            await stream.start()
            await _Translation(run_input, stream).run(self.agent, self._runtime.for_agent(self.agent))
            await stream.end()


def _now() -> int:
    return int(time.time() * 1000)


def _new_id() -> str:
    return uuid.uuid4().hex


class _Translation:
    """One run's events as AG-UI events: which text message is open, which tool calls await a result."""

    def __init__(self, run_input: RunInput, stream: EventStream) -> None:
        self.input = run_input
        self.stream = stream
        self.message_id: str | None = None  # the text message being streamed
        self.streamed = False  # whether this model answer's text came as deltas
        self.pending: dict[str, None] = {}  # tool calls shown, their results not yet

    async def emit(self, kind: str, **fields: Any) -> None:
        await self.stream.data({"type": kind, "timestamp": _now(), **fields})

    async def run(self, agent: Agent[Any], runtime: Any) -> None:
        ids = {"threadId": self.input.thread_id, "runId": self.input.run_id}
        await self.emit("RUN_STARTED", **ids)
        try:
            async with agent.stream(self.input.messages, runtime=runtime) as run:
                own: str | None = None
                async for event in run:
                    own = own or event.run_id
                    if event.run_id == own:  # a delegated run's events stay inside its tool call
                        await self.on_event(event)
                result = await run.wait()
        except Exception as exc:
            await self.emit("RUN_ERROR", message=_raised_text(exc), code=type(exc).__name__)
            return
        await self.close_text()
        await self.results(result.messages)
        if result.generation_failed or result.cancelled:
            await self.emit("RUN_ERROR", message=_failure_text(result), code=_failure_code(result))
            return
        finished: dict[str, Any] = dict(ids)
        if agent.output_type is not str and result.ok:
            finished["result"] = json.loads(render_result(result.output))
        await self.emit("RUN_FINISHED", **finished)

    async def on_event(self, event: Event) -> None:
        kind = type(event)
        if kind is LLMTextDelta:
            text: str = event.data["text"]
            if text:
                await self.open_text()
                self.streamed = True
                await self.emit("TEXT_MESSAGE_CONTENT", messageId=self.message_id, delta=text)
        elif kind is LLMResponded:
            response = event.data["response"]
            if not self.streamed and response.content:  # a provider that answered without streaming
                await self.open_text()
                await self.emit("TEXT_MESSAGE_CONTENT", messageId=self.message_id, delta=response.content)
            parent = self.message_id
            await self.close_text()
            for call in response.tool_calls:
                await self.tool_call(call, parent)
        elif kind is LLMRequested:
            await self.results(event.data["request"].messages)

    async def open_text(self) -> None:
        if self.message_id is None:
            self.message_id = _new_id()
            await self.emit("TEXT_MESSAGE_START", messageId=self.message_id, role="assistant")

    async def close_text(self) -> None:
        if self.message_id is not None:
            await self.emit("TEXT_MESSAGE_END", messageId=self.message_id)
        self.message_id = None
        self.streamed = False

    async def tool_call(self, call: ToolCall, parent: str | None) -> None:
        start: dict[str, Any] = {"toolCallId": call.id, "toolCallName": call.name}
        if parent is not None:
            start["parentMessageId"] = parent
        await self.emit("TOOL_CALL_START", **start)
        arguments = call.raw_arguments if call.raw_arguments is not None else json.dumps(call.arguments)
        await self.emit("TOOL_CALL_ARGS", toolCallId=call.id, delta=arguments)
        await self.emit("TOOL_CALL_END", toolCallId=call.id)
        self.pending[call.id] = None

    async def results(self, messages: Iterable[Message]) -> None:
        """``TOOL_CALL_RESULT`` for each shown call whose result is among ``messages``: a tool's result is
        what the next model request carries (or, after the last step, the run's conversation)."""
        if not self.pending:
            return
        for message in messages:
            call_id = message.tool_call_id
            if message.role == "tool" and call_id is not None and call_id in self.pending:
                del self.pending[call_id]
                await self.emit(
                    "TOOL_CALL_RESULT", messageId=_new_id(), toolCallId=call_id, content=message.content, role="tool"
                )


def _failure_text(result: RunResult[Any]) -> str:
    if result.cancelled:
        return "the run was cancelled"
    error = result.error
    if isinstance(error, ProviderError):
        return redact(str(error))
    return result.content or "the model could not answer"


def _failure_code(result: RunResult[Any]) -> str:
    if result.cancelled:
        return "cancelled"
    return type(result.error).__name__ if result.error is not None else "generation_failed"


def _raised_text(exc: Exception) -> str:
    return f"{type(exc).__name__}: {redact(str(exc))}"[:500]
