"""``openai_app``: agents behind the OpenAI Chat Completions API, so every OpenAI client can call them.

``POST /v1/chat/completions`` runs the agent its ``model`` names on the request's messages and answers
with a ``chat.completion`` — or, with ``stream: true``, ``chat.completion.chunk`` events over SSE, closed
by ``data: [DONE]``, with a last chunk carrying ``usage`` when ``stream_options.include_usage`` asks.
``GET /v1/models`` lists the agents.  The agent's tools run here, in the server: the client sees the
answer, never the calls (a client's ``tools`` are not offered to the agent).

Refusals come in OpenAI's error shape (``{"error": {"message", "type", "param", "code"}}``), so an SDK
raises its usual exception: 401 without an allowed key, 404 for an unknown model or path, 400 for a body
that is too large, not JSON, or of the wrong shape, 429 with ``Retry-After`` when the runtime's admission
(a ``ProviderActor``'s ``max_waiting``/``max_wait``) refused the run's model call, 502 when the provider
failed.  A client that disconnects cancels its run.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from ..agent.core import Agent
from ..errors import OverloadedError, ProviderError, redact
from ..events import LLMResponded, LLMTextDelta
from ..loop.result import RunResult
from ..messages import Usage
from ._http import (
    DEFAULT_MAX_BODY,
    AppRuntime,
    BodyError,
    Disconnected,
    EventStream,
    Receive,
    Scope,
    Send,
    authorized,
    bearer_keys,
    cancelled_on_disconnect,
    read_json,
    route_path,
    send_json,
)
from ._openai_input import BadRequest, ChatRequest, read_chat_request

__all__ = ["OpenAIApp", "openai_app"]


def openai_app(
    agents: Mapping[str, Agent[Any]],
    *,
    runtime: Any = None,
    api_keys: Iterable[str] | None = None,
    max_body_size: int = DEFAULT_MAX_BODY,
) -> OpenAIApp:
    """An ASGI app serving ``agents`` (``{model name: agent}``) as an OpenAI-compatible API.

    ``runtime``: the :class:`~agentactors.Runtime` every run uses; without it, an agent's bound runtime,
    else one the app opens in its ASGI lifespan (so ``uvicorn module:app`` shares one ProviderActor
    across requests).  ``api_keys``: the bearer tokens allowed (``Authorization: Bearer …``), checked on
    every route; ``None`` serves anyone.  ``max_body_size``: bytes a request body may have.

    :raises TypeError, ValueError: ``agents`` is empty or not ``{str: Agent}``; see also ``api_keys``.
    """
    return OpenAIApp(agents, runtime=runtime, api_keys=api_keys, max_body_size=max_body_size)


class OpenAIApp:
    """The ASGI app :func:`openai_app` returns."""

    def __init__(
        self,
        agents: Mapping[str, Agent[Any]],
        *,
        runtime: Any = None,
        api_keys: Iterable[str] | None = None,
        max_body_size: int = DEFAULT_MAX_BODY,
    ) -> None:
        if not isinstance(agents, Mapping) or not agents:
            raise ValueError("openai_app needs a non-empty {model name: Agent} mapping")
        for name, agent in agents.items():
            if not isinstance(name, str) or not name or not isinstance(agent, Agent):
                raise TypeError("openai_app takes {model name (str): Agent}")
        self.agents = dict(agents)
        self._keys = bearer_keys(api_keys)
        self._runtime = AppRuntime(runtime, self.agents.values())
        self._max_body = max_body_size
        self._created = int(time.time())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._runtime.serve_lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if not authorized(scope, self._keys):
            await _error(send, 401, "Incorrect or missing API key: send it as 'Authorization: Bearer <key>'.",
                         "invalid_request_error", code="invalid_api_key")
            return
        path = route_path(scope)
        path = path[3:] if path.startswith("/v1/") else path
        method = scope.get("method", "GET")
        if path == "/models" and method == "GET":
            await send_json(send, 200, {"object": "list", "data": [self._model(n) for n in self.agents]})
        elif path.startswith("/models/") and method == "GET":
            await self._one_model(send, path[len("/models/") :])
        elif path == "/chat/completions" and method == "POST":
            await self._chat(scope, receive, send)
        elif path in ("/models", "/chat/completions"):
            await _error(send, 405, f"{method} is not allowed on {path}", "invalid_request_error")
        else:
            await _error(send, 404, f"Unknown path: {path}", "invalid_request_error", code="unknown_url")

    def _model(self, name: str) -> dict[str, Any]:
        return {"id": name, "object": "model", "created": self._created, "owned_by": "agentactors"}

    async def _one_model(self, send: Send, name: str) -> None:
        if name in self.agents:
            await send_json(send, 200, self._model(name))
        else:
            await _model_not_found(send, name)

    async def _chat(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            request = read_chat_request(await read_json(receive, scope, self._max_body))
        except Disconnected:
            return
        except BodyError as exc:
            await _error(send, 400, str(exc), "invalid_request_error")
            return
        except BadRequest as exc:
            await _error(send, 400, exc.message, "invalid_request_error", param=exc.param, code=exc.code)
            return
        agent = self.agents.get(request.model)
        if agent is None:
            await _model_not_found(send, request.model)
            return
        completion = _Completion(request, agent, self._runtime.for_agent(agent), send)
        async with cancelled_on_disconnect(receive):
            if request.stream:
                await completion.stream()
            else:
                await completion.answer()


class _Completion:
    """One chat completion: the run, and the answer or the chunks it becomes."""

    def __init__(self, request: ChatRequest, agent: Agent[Any], runtime: Any, send: Send) -> None:
        self.request = request
        self.agent = agent
        self.runtime = runtime
        self.send = send
        self.id = f"chatcmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())

    async def answer(self) -> None:
        try:
            result = await self.agent.run(self.request.messages, runtime=self.runtime, settings=self.request.settings)
        except Exception as exc:
            await _run_raised(self.send, exc)
            return
        if await _refused(self.send, result):
            return
        body = {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.request.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": result.content, "refusal": None},
                    "logprobs": None,
                    "finish_reason": _finish_reason(result),
                }
            ],
            "usage": _usage(result.usage),
            "system_fingerprint": None,
        }
        await send_json(self.send, 200, body)

    async def stream(self) -> None:
        """The run as chunks.  The response starts with the run's first model answer, so a run the
        admission refused before that is still a 429, not a stream that fails."""
        events = EventStream(self.send)
        result: RunResult[Any] | None = None
        try:
            async with self.agent.stream(
                self.request.messages, runtime=self.runtime, settings=self.request.settings
            ) as run:
                own: str | None = None
                async for event in run:
                    own = own or event.run_id
                    if event.run_id != own:
                        continue  # a delegated run's event
                    if type(event) is LLMTextDelta:
                        await self._started(events)
                        text = event.data["text"]
                        if text:
                            await events.data(self._chunk({"content": text}))
                    elif type(event) is LLMResponded:
                        await self._started(events)
                result = await run.wait()
        except Exception as exc:
            if not events.started:
                await _run_raised(self.send, exc)
                return
            await events.data({"error": _error_body(_raised_text(exc), "server_error")})
            await events.end()
            return
        assert result is not None
        if not events.started:
            if await _refused(self.send, result):
                return
            await self._started(events)
            if result.content:
                await events.data(self._chunk({"content": result.content}))
        elif result.generation_failed:
            await events.data({"error": _error_body(_failure_text(result), "server_error")})
            await events.end()
            return
        await events.data(self._chunk({}, finish_reason=_finish_reason(result)))
        if self.request.include_usage:
            await events.data(self._envelope([], usage=_usage(result.usage)))
        await events.data("[DONE]")
        await events.end()

    async def _started(self, events: EventStream) -> None:
        if not events.started:
            await events.start()
            await events.data(self._chunk({"role": "assistant", "content": ""}))

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return self._envelope([choice])

    def _envelope(self, choices: list[dict[str, Any]], usage: dict[str, Any] | None = None) -> dict[str, Any]:
        chunk: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.request.model,
            "system_fingerprint": None,
            "choices": choices,
        }
        if self.request.include_usage:
            chunk["usage"] = usage  # null on every chunk but the last, as OpenAI sends it
        return chunk


def _finish_reason(result: RunResult[Any]) -> str:
    return "length" if result.bounded else "stop"


def _usage(usage: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
    }


def _overloaded(error: BaseException | None) -> OverloadedError | None:
    """The admission refusal behind a failed run, if that is what failed it (also inside a fallback's group)."""
    if isinstance(error, OverloadedError):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = _overloaded(inner)
            if found is not None:
                return found
    return None


async def _refused(send: Send, result: RunResult[Any]) -> bool:
    """Answer a run that produced nothing (429 for an admission refusal, else 502); ``True`` if it did."""
    if not result.generation_failed:
        return False
    overloaded = _overloaded(result.error)
    if overloaded is not None:
        wait = overloaded.retry_after if overloaded.retry_after is not None else 1.0
        await _error(send, 429, _failure_text(result), "requests", code="rate_limit_exceeded",
                     headers={"retry-after": str(max(1, math.ceil(wait)))})
    else:
        await _error(send, 502, _failure_text(result), "server_error", code="upstream_error")
    return True


def _failure_text(result: RunResult[Any]) -> str:
    error = result.error
    if isinstance(error, ProviderError):
        return redact(str(error))
    return result.content or "the model could not answer"


def _raised_text(exc: Exception) -> str:
    return f"the run failed: {type(exc).__name__}: {redact(str(exc))}"[:500]


async def _run_raised(send: Send, exc: Exception) -> None:
    await _error(send, 500, _raised_text(exc), "server_error")


async def _model_not_found(send: Send, name: str) -> None:
    await _error(send, 404, f"The model '{name}' does not exist", "invalid_request_error", param="model",
                 code="model_not_found")


def _error_body(message: str, kind: str, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    return {"message": message, "type": kind, "param": param, "code": code}


async def _error(
    send: Send,
    status: int,
    message: str,
    kind: str,
    *,
    param: str | None = None,
    code: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> None:
    await send_json(send, status, {"error": _error_body(message, kind, param, code)}, headers)
