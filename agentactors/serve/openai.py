"""``openai_app``: agents behind the OpenAI Chat Completions API, so every OpenAI client can call them.

``POST /v1/chat/completions`` runs the agent its ``model`` names on the request's messages and answers
with a ``chat.completion`` — or, with ``stream: true``, ``chat.completion.chunk`` events over SSE, closed
by ``data: [DONE]``, with a last chunk carrying ``usage`` when ``stream_options.include_usage`` asks.
``GET /v1/models`` lists the agents.  The agent's tools run here, in the server: the client sees the
answer, never the calls: a client's ``tools`` are not offered to the agent, and a ``tool_choice`` that requires
one is refused (400).  ``response_format`` ``json_schema`` / ``json_object`` is honoured — the run's answer is
validated JSON of the client's schema (:mod:`~._openai_format`) — or refused with a 400 when the agent cannot
answer in it; ``max_tokens`` past the app's ``max_completion_tokens`` is a 400 before any model call.  The
sampling settings (``temperature``, ``top_p``, ``stop``, ``seed``, ``reasoning_effort``) win over the agent's for
the run, and one the agent's model cannot take is the client's 400 naming it; a field asking for what no run gives
(``logprobs``, audio, ``web_search_options``) or that OpenAI's API does not have is a 400 too
(:mod:`~._openai_input` decides each field; ``docs/serve.md`` has the table).

Refusals come in OpenAI's error shape (``{"error": {"message", "type", "param", "code"}}``), so an SDK raises
its usual exception: 401 without an allowed key, 404 for an unknown model or path, 415 for a body sent as
another type than JSON (``Content-Type``), 400 for a body that is too large, not JSON, naming a key twice, or of
the wrong shape, 429 with ``Retry-After`` when the runtime's admission (a ``ProviderActor``'s
``max_waiting``/``max_wait``) refused the run's model call, 502 when the provider failed (said by its kind,
never by the vendor's text), 409 (``approval_required``) when the run paused for a person's approval of a tool
call, 503 (``run_cancelled``) when the server cancelled the run — never an empty ``200`` for a run that did not
answer.  Every error carries ``x-should-retry: false`` (the OpenAI SDKs' own header: they retry 408, 409, 429 and
5xx by default, re-running the agent and its tools) except the three a retry may mend — the 429, the 503 and a 502
for a transient provider failure — and those too once a tool of the run has been called (:func:`_retry_mends`).
A client that disconnects cancels its run.  A stream silent for the app's ``keepalive`` gets SSE comments, which
every SSE client skips, so a proxy's idle timeout does not cut it (:func:`openai_app`).

Sessions (``sessions=True``, off by default): a request with an ``X-Session-Id: <key>`` header is a turn of
the runtime's session ``key`` — the server keeps the conversation, and the request's messages after its last
assistant or tool message are the turn's new ones (so a client may send only those).  A request without
the header is stateless, as it is when ``sessions`` is off.

Each request is an OpenTelemetry span (:mod:`agentactors.serve._spans`) when ``opentelemetry-api`` is here.
"""

from __future__ import annotations

import json
import logging
import math
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from .._containment import first_in
from ..agent.core import Agent
from ..agent.run import AgentRun
from ..errors import (
    ErrorKind,
    OutputValidationError,
    OverloadedError,
    ProviderError,
    UnsupportedSettingError,
)
from ..events import LLMResponded, LLMTextDelta
from ..loop.result import RunResult
from ..messages import StopReason, Usage
from ..sessions.session import AgentSession, open_session
from ..sessions.store import SessionStore, check_key
from ..tools.results import render_result
from ._http import (
    CANCELLED_TEXT,
    DEFAULT_KEEPALIVE,
    DEFAULT_MAX_BODY,
    AppRuntime,
    BodyError,
    Disconnected,
    EventStream,
    Outbound,
    Receive,
    Scope,
    Send,
    authorized,
    bearer_keys,
    cancelled_on_disconnect,
    client_text,
    header,
    keepalive_interval,
    paused_text,
    read_json,
    route_path,
    send_json,
    sent_path,
    session_refusal,
)
from ._openai_format import for_format
from ._openai_input import CHAT_FIELDS, MAX_OUTPUT_TOKENS, BadRequest, ChatRequest, read_chat_request
from ._spans import RequestSpan, Tracing
from ._turns import streamed_turn

__all__ = ["SESSION_HEADER", "OpenAIApp", "openai_app"]

log = logging.getLogger("agentactors.serve")

#: The request header naming the conversation a request continues, when the app keeps sessions.
SESSION_HEADER = "X-Session-Id"
_SESSION_KEY = SESSION_HEADER.lower().encode()
_MAX_SESSION_KEY = 256


def openai_app(
    agents: Mapping[str, Agent[Any]],
    *,
    runtime: Any = None,
    api_keys: Iterable[str] | None = None,
    max_body_size: int = DEFAULT_MAX_BODY,
    sessions: bool = False,
    store: SessionStore | None = None,
    tracer_provider: Any = None,
    max_completion_tokens: int | None = None,
    ignored_fields: Iterable[str] = (),
    keepalive: float | None = DEFAULT_KEEPALIVE,
) -> OpenAIApp:
    """An ASGI app serving ``agents`` (``{model name: agent}``) as an OpenAI-compatible API.

    ``runtime``: the :class:`~agentactors.Runtime` every run uses; without it, an agent's bound runtime,
    else one the app opens in its ASGI lifespan (so ``uvicorn module:app`` shares one ProviderActor
    across requests).  ``api_keys``: the bearer tokens allowed (``Authorization: Bearer …``), checked on
    every route; ``None`` serves anyone.  ``max_body_size``: bytes a request body may have.

    ``sessions``: a request carrying ``X-Session-Id: <key>`` continues the runtime's session ``key``
    (kept in ``store``, default the runtime's :class:`~agentactors.sessions.MemoryStore`): the history is
    the server's, the request's messages after its last assistant or tool message are the new turn.  Off
    by default (every request is the whole conversation, as OpenAI's API is).  ``tracer_provider``: where
    each request's OpenTelemetry span goes (default: the global provider; nothing without the API).
    ``max_completion_tokens``: the most output tokens a request may ask for (``max_tokens`` /
    ``max_completion_tokens``) — the served models' own limit, which the library does not know; a request over
    it is a 400 before any model call, rather than the vendor's 400 as a 502.  Default: no limit of the app's own
    (only the 2**31 - 1 no model writes).  ``ignored_fields``: request fields OpenAI's API does not have that
    the app takes and does not read (a compatible server's extensions your clients send, ``"top_k"``); any other
    unknown field is a 400 (``unknown_parameter``), as OpenAI answers it.

    ``keepalive``: seconds a stream may stay silent — a slow model, a long tool call — before the app writes an SSE
    comment (``: keep-alive``), which every SSE client skips (the openai SDKs among them) and a proxy in front counts
    as traffic, so its idle timeout (30 s in some, 60 s in nginx and AWS ALB) does not cut the stream; one every
    ``keepalive`` seconds while the silence lasts.  A stream silent that long before its first chunk starts with the
    comment: its ``200`` is then sent, and a refusal after that (a 429 from the admission, a 502) comes as an error
    event in the stream, as one after text does.  ``None``: no comments (a stream then starts with its first chunk,
    however long that takes).  A JSON answer (``stream`` off) has no keep-alive: nothing can be sent before it.

    :raises TypeError, ValueError: ``agents`` is empty or not ``{str: Agent}``; a ``store`` without
        ``sessions``; a ``max_completion_tokens`` that is not a positive int; ``ignored_fields`` not names, or
        naming one of OpenAI's fields (each is decided: ``docs/serve.md``); a ``keepalive`` that is not a positive,
        finite number of seconds or ``None``; see also ``api_keys``.
    """
    return OpenAIApp(
        agents, runtime=runtime, api_keys=api_keys, max_body_size=max_body_size, sessions=sessions, store=store,
        tracer_provider=tracer_provider,
        max_completion_tokens=max_completion_tokens, ignored_fields=ignored_fields, keepalive=keepalive,
    )


class OpenAIApp:
    """The ASGI app :func:`openai_app` returns."""

    def __init__(
        self,
        agents: Mapping[str, Agent[Any]],
        *,
        runtime: Any = None,
        api_keys: Iterable[str] | None = None,
        max_body_size: int = DEFAULT_MAX_BODY,
        sessions: bool = False,
        store: SessionStore | None = None,
        tracer_provider: Any = None,
        max_completion_tokens: int | None = None,
        ignored_fields: Iterable[str] = (),
        keepalive: float | None = DEFAULT_KEEPALIVE,
    ) -> None:
        if max_completion_tokens is not None and (
            isinstance(max_completion_tokens, bool)
            or not isinstance(max_completion_tokens, int)
            or not 1 <= max_completion_tokens <= MAX_OUTPUT_TOKENS
        ):
            raise ValueError(f"max_completion_tokens must be an int from 1 to {MAX_OUTPUT_TOKENS}, or None")
        if store is not None and not sessions:
            raise ValueError("a store keeps sessions: pass sessions=True with it")
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
        self.sessions = bool(sessions)
        self._store = store
        self._tracing = Tracing(tracer_provider)
        self.max_completion_tokens = max_completion_tokens
        self.ignored_fields = _ignored_fields(ignored_fields)
        self.keepalive = keepalive_interval(keepalive)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI app: the lifespan, and each HTTP request (see the module docstring).

        Cancellation: a request cancelled by the server is as a client's disconnect: its run is cancelled (its
        model request and tools with it), nothing more is sent, and a session's turn commits nothing (unless its
        shielded commit had started).  A lifespan cancelled closes the runtime it opened, as a cancelled
        ``async with`` does.
        """
        if scope["type"] == "lifespan":
            await self._runtime.serve_lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        method = str(scope.get("method", "GET"))
        with self._tracing.request(method, _route(route_path(scope))) as span:
            await self._serve(scope, receive, Outbound(span.watch(send)), span)

    async def _serve(self, scope: Scope, receive: Receive, send: Send, span: RequestSpan) -> None:
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
            await self._chat(scope, receive, send, span)
        elif path in ("/models", "/chat/completions"):
            await _error(send, 405, f"{method} is not allowed on {sent_path(scope)}", "invalid_request_error")
        else:
            # The path as the client sent it (its /v1, the mount's prefix): the route inside them is not one it knows.
            await _error(send, 404, f"Unknown path: {sent_path(scope)}", "invalid_request_error", code="unknown_url")

    def _model(self, name: str) -> dict[str, Any]:
        return {"id": name, "object": "model", "created": self._created, "owned_by": "agentactors"}

    async def _one_model(self, send: Send, name: str) -> None:
        if name in self.agents:
            await send_json(send, 200, self._model(name))
        else:
            await _model_not_found(send, name)

    async def _chat(self, scope: Scope, receive: Receive, send: Send, span: RequestSpan) -> None:
        try:
            body = await read_json(receive, scope, self._max_body)
            request = read_chat_request(
                body, max_completion_tokens=self.max_completion_tokens, ignored_fields=self.ignored_fields
            )
        except Disconnected:
            return
        except BodyError as exc:
            await _error(send, exc.status, str(exc), "invalid_request_error")
            return
        except BadRequest as exc:
            await _error(send, 400, exc.message, "invalid_request_error", param=exc.param, code=exc.code)
            return
        agent = self.agents.get(request.model)
        if agent is None:
            await _model_not_found(send, request.model)
            return
        span.set("gen_ai.request.model", request.model)
        span.set("gen_ai.agent.name", agent.name or request.model)
        runtime = self._runtime.for_agent(agent)  # the served agent's: the one answering a format is not bound
        if request.response_format is not None:
            try:
                agent = for_format(agent, request.response_format)
            except BadRequest as exc:
                await _error(send, 400, exc.message, "invalid_request_error", param=exc.param, code=exc.code)
                return
        session = None
        given = header(scope, _SESSION_KEY) if self.sessions else None
        key = given.strip() if given is not None else None
        if key is not None:
            if not key or len(key) > _MAX_SESSION_KEY:
                await _error(send, 400, f"{SESSION_HEADER} must be 1 to {_MAX_SESSION_KEY} characters",
                             "invalid_request_error", param=SESSION_HEADER)
                return
            try:
                check_key(key)  # one no store keeps (a NUL): the client's 400, not the session's ValueError as a 500
            except ValueError as exc:
                await _error(send, 400, f"{SESSION_HEADER}: {exc}", "invalid_request_error", param=SESSION_HEADER)
                return
            if not request.new:
                await _error(send, 400, f"with {SESSION_HEADER}, 'messages' must end with the turn's new user "
                             "message (the server keeps the conversation)", "invalid_request_error", param="messages")
                return
            if runtime is None:
                await _error(send, 500, "sessions need a runtime: bind the agent or pass runtime=", "server_error")
                return
            session = open_session(agent, key, runtime=runtime, store=self._store, idle_timeout=60.0)
        completion = _Completion(request, agent, runtime, send, span, session, self.keepalive)
        async with cancelled_on_disconnect(receive, send):
            if request.stream:
                await completion.stream()
            else:
                await completion.answer()


class _Completion:
    """One chat completion: the run, and the answer or the chunks it becomes."""

    def __init__(
        self,
        request: ChatRequest,
        agent: Agent[Any],
        runtime: Any,
        send: Send,
        span: RequestSpan,
        session: AgentSession[Any] | None = None,
        keepalive: float | None = None,
    ) -> None:
        self.request = request
        self.keepalive = keepalive
        self.agent = agent
        self.runtime = runtime
        self.send = send
        self.span = span
        self.session = session
        self.id = f"chatcmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())
        self.events: EventStream | None = None
        self.opened = False  # the stream's first chunk (the role) was sent
        # A typed answer (the client's response_format, or the agent's own output type) is its output as JSON:
        # under the output-tool strategy the run's text is empty, and a refused answer's text is no answer.
        self.typed = agent.output_type is not str
        self._typed_text: str | None = None  # a typed answer's JSON text, made once (_unmet)

    async def answer(self) -> None:
        try:
            if self.session is None:
                result = await self.agent.run(
                    self.request.messages, runtime=self.runtime, settings=self.request.settings
                )
            else:  # a turn of the session: its history, then the request's new messages
                result = await self.session.send(self.request.new, settings=self.request.settings)
        except Exception as exc:
            await _run_raised(self.send, exc, self.span)
            return
        self.span.run(result.run_id)
        if await _refused(self.send, result, self.span, self.request):
            return
        if (unmet := self._unmet(result)) is not None:
            status, message, kind, code = unmet
            self.span.failed(code)
            await _error(self.send, status, message, kind, code=code)
            return
        body = {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.request.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": self._content(result), "refusal": None},
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
        admission refused before that is still a 429, not a stream that fails — unless the run is silent for the
        app's ``keepalive`` first: its keep-alive then starts the response (headers, a comment), and a refusal or
        failure after that is an error event in the stream, as one after text is.

        The keep-alive runs while the run does (:meth:`EventStream.kept_alive`); what is sent once the run ended —
        a status, the last chunks, ``[DONE]`` — comes after it stopped, so no comment is ever written beside it."""
        events = self.events = EventStream(self.send)
        raised: Exception | None = None
        result: RunResult[Any] | None = None
        async with events.kept_alive(self.keepalive):
            try:
                if self.session is None:
                    async with self.agent.stream(
                        self.request.messages, runtime=self.runtime, settings=self.request.settings
                    ) as run:
                        await self._follow(run)
                        result = await run.wait()
                else:  # a turn of the session, streamed
                    turn = open_session(
                        streamed_turn(self.agent, self._follow), self.session.key, runtime=self.session.runtime,
                        store=self.session.store, idle_timeout=self.session.idle_timeout,
                    )
                    result = await turn.send(self.request.new, settings=self.request.settings)
            except Exception as exc:  # told below, once the keep-alive stopped
                raised = exc
        if raised is not None:
            if not events.started:
                await _run_raised(self.send, raised, self.span)
                return
            self.span.failed(type(raised).__name__)
            await events.data({"error": _error_body(_raised_text(raised), "server_error")})
            await events.end()
            return
        assert result is not None  # the block ran to its end, so the run gave its result
        unmet = self._unmet(result)
        if not events.started:
            if await _refused(self.send, result, self.span, self.request):
                return
            if unmet is not None:
                status, message, kind, code = unmet
                self.span.failed(code)
                await _error(self.send, status, message, kind, code=code)
                return
        elif result.generation_failed:
            self.span.failed(_error_type(result))
            await events.data({"error": _error_body(_failure_text(result), "server_error")})
            await events.end()
            return
        elif (unanswered := _unanswered(result)) is not None:  # after some text: the stream says why it stops
            status, message, kind, code, _ = unanswered
            self.span.failed(code, fault=status >= 500)
            await events.data({"error": _error_body(message, kind, code=code)})
            await events.end()
            return
        elif unmet is not None:
            status, message, kind, code = unmet
            self.span.failed(code)
            await events.data({"error": _error_body(message, kind, code=code)})
            await events.end()
            return
        if not self.opened:  # no chunk yet (a keep-alive may have sent the headers): the answer whole
            await self._started(events)
            if content := self._content(result):
                await events.data(self._chunk({"content": content}))
        elif self.typed:  # the validated answer, whole: the text that streamed (if any) was not sent
            await events.data(self._chunk({"content": self._content(result)}))
        await events.data(self._chunk({}, finish_reason=_finish_reason(result)))
        if self.request.include_usage:
            await events.data(self._envelope([], usage=_usage(result.usage)))
        await events.data("[DONE]")
        await events.end()

    async def _follow(self, run: AgentRun[Any]) -> None:
        """The run's answer text as chunks, as it streams (the response starts with its first model answer).

        Every model answer's text streams as it comes, the words a model writes before it calls a tool included (a
        token sent cannot be taken back once the model goes on to call one).  The chunks are one message's content,
        which a client joins: so an answer's text after an earlier answer's starts with a blank line, rather than
        its first word glued to the last one before ("...add.It is 3.").
        """
        events = self.events
        assert events is not None
        own = run.run_id
        self.span.run(own)
        wrote = False  # the answer under way has sent text
        apart = False  # an earlier answer sent text: the next text starts with a blank line
        async for event in run:
            own = own or event.run_id
            if event.run_id != own:
                continue  # a delegated run's event
            if type(event) is LLMTextDelta:
                await self._started(events)
                text = event.data["text"]
                if text and not self.typed:  # a typed answer is sent once validated (stream())
                    if apart:
                        text, apart = "\n\n" + text, False
                    wrote = True
                    await events.data(self._chunk({"content": text}))
            elif type(event) is LLMResponded:
                await self._started(events)
                apart, wrote = apart or wrote, False

    def _content(self, result: RunResult[Any]) -> str:
        """The answer the client reads: the text, or a typed run's output as JSON text.

        :raises TypeError: a typed output JSON has no form for (a NaN an ``output_validator`` returned) —
            :meth:`_unmet` asks first, and answers such a run with an error.
        """
        if not self.typed:
            return result.content
        if self._typed_text is not None:
            return self._typed_text
        value = result.output
        if isinstance(value, str):  # a string answer of a schema, or a pick: JSON, as every other typed answer
            return json.dumps(value, ensure_ascii=False)
        return render_result(value)

    def _unmet(self, result: RunResult[Any]) -> tuple[int, str, str, str] | None:
        """Why a typed run that did not fail has no answer to send — ``(status, message, type, code)`` — or
        ``None``: its output never validated, or it stopped (step limit, cost limit, deadline) before one did.
        A text run's partial answer is sent as it always was (``finish_reason`` ``length`` when bounded).  A typed
        output JSON has no form for (a NaN, an infinity: an ``output_validator`` may return one) is no answer either:
        ``output_unsendable``."""
        if not self.typed:
            return None
        if not (result.bounded or result.error is not None):
            try:
                self._typed_text = self._content(result)
            except (TypeError, ValueError, RecursionError) as exc:
                log.warning("a served run's typed output cannot be sent as JSON: %s", type(exc).__name__)
                return (
                    502,
                    f"the run's output (a {type(result.output).__name__}) cannot be sent as JSON: it holds a NaN or "
                    "an infinity, or a value JSON has no form for",
                    "server_error",
                    "output_unsendable",
                )
            return None
        error = result.error
        if isinstance(error, OutputValidationError):
            where = "the response_format's schema" if self.request.response_format is not None else "its output type"
            issues = "; ".join(error.issues[:3])
            return (
                502,
                f"the model's answer did not match {where} after {error.attempts} attempt(s)"
                + (f" (last: {issues[:400]})" if issues else ""),
                "server_error",
                "response_format_unmet" if self.request.response_format is not None else "output_invalid",
            )
        reason = _raised_text(error) if error is not None else "the agent reached its step limit"
        return 502, f"the run ended before a valid answer: {reason}", "server_error", "no_answer"

    async def _started(self, events: EventStream) -> None:
        """The stream's first chunk (the assistant's role), after its headers unless a keep-alive sent them."""
        if not self.opened:
            self.opened = True
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
    """OpenAI's finish reason: ``length`` for a run stopped at its bounds or an answer cut at ``max_tokens``,
    ``content_filter`` for an answer a filter stopped part way (``RunResult.stop_reason``), else ``stop``."""
    if result.bounded:
        return "length"
    stop = result.stop_reason
    if stop is StopReason.max_tokens:
        return "length"
    if stop is StopReason.content_filter:
        return "content_filter"
    return "stop"


def _usage(usage: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens, "audio_tokens": usage.input_audio_tokens},
        "completion_tokens_details": {
            "reasoning_tokens": usage.reasoning_tokens, "audio_tokens": usage.output_audio_tokens,
        },
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


def _unanswered(result: RunResult[Any]) -> tuple[int, str, str, str, bool] | None:
    """Why a run that ended without failing still has no answer to send — ``(status, message, type, code,
    retry)`` — or ``None`` when it has one.

    A run cancelled through its handle (``rt.run_ref(run_id).cancel()``, a runtime draining at shutdown) and
    one paused for a person's approval both end with empty ``content``: sent as a completion, that would be a
    ``200`` whose ``""`` the client takes for the model's answer.
    """
    if result.cancelled:
        return 503, CANCELLED_TEXT, "server_error", "run_cancelled", _retry_mends(result)
    if result.paused:
        return (
            409,
            paused_text(result.pending_approvals, result.run_id),
            "invalid_request_error",
            "approval_required",
            False,  # a retry is a new run: its tools run again, and it pauses again
        )
    return None


async def _refused(send: Send, result: RunResult[Any], span: RequestSpan, request: ChatRequest) -> bool:
    """Answer a run that produced nothing (429 for an admission refusal, 400 for a setting of the request's the
    model cannot take, else 502; 503 for a cancelled run, 409 for one paused for approval); ``True`` if it did."""
    unanswered = _unanswered(result)
    if unanswered is not None:
        status, message, kind, code, retry = unanswered
        span.failed(code, fault=status >= 500)
        await _error(send, status, message, kind, code=code, retry=retry)
        return True
    if not result.generation_failed:
        return False
    refused = _setting_refused(result.error)
    field = request.field_of(refused.setting) if refused is not None else None
    if refused is not None and field is not None:
        span.failed("unsupported_value", fault=False)
        await _error(send, 400, _setting_text(refused, field), "invalid_request_error", param=field,
                     code="unsupported_value")
        return True
    overloaded = _overloaded(result.error)
    span.failed(_error_type(result), fault=overloaded is None)
    if overloaded is not None:
        wait = overloaded.retry_after if overloaded.retry_after is not None else 1.0
        await _error(send, 429, client_text(overloaded), "requests", code="rate_limit_exceeded",
                     headers={"retry-after": str(max(1, math.ceil(wait)))}, retry=_retry_mends(result))
    else:
        transient = isinstance(result.error, ProviderError) and result.error.kind in _TRANSIENT
        await _error(send, 502, _failure_text(result), "server_error", code="upstream_error",
                     retry=transient and _retry_mends(result))
    return True


#: The provider failures a client's retry may mend: the vendor was down or overloaded, or the server's circuit
#: breaker stopped calling it for a while.  A request, account, context or content-policy refusal is refused again.
_TRANSIENT = frozenset({ErrorKind.transient, ErrorKind.circuit_open})


def _retry_mends(result: RunResult[Any]) -> bool:
    """Whether a client may retry a run that could not answer for a reason a retry may mend (an admission
    refusal, a transient provider failure, a cancellation in the server): only when no tool was called.

    A retry is a new run from the request's messages: a tool the failed run called — a side effect, a payment,
    a message sent — would be called again, and the client cannot tell.  Such a run's error says
    ``x-should-retry: false``; the client decides, knowing the run got that far.
    """
    return not result.tool_calls


def _setting_refused(error: BaseException | None) -> UnsupportedSettingError | None:
    """The per-model refusal of a setting behind a failed run (also inside a fallback's group), if that failed it.

    The library refuses before sending (``docs/settings.md``): a setting the request set is then the client's
    400; one of the agent's own (``field_of`` finds no request field) stays the server's 502."""
    return first_in(error, UnsupportedSettingError)


def _setting_text(error: UnsupportedSettingError, field: str) -> str:
    """Why the model refused the client's ``field``: the library's own words (made before sending, never the
    vendor's), without the model's name — a served model is an agent's name, and what it runs on is the server's."""
    why = error.message
    if error.model:
        why = why.replace(f" (model {error.model!r})", "")
    why = why.removesuffix("; nothing was sent").removeprefix(f"{error.setting}: ")
    return f"Unsupported value: '{field}': the model this agent runs on cannot take it: {why[:300]}"


def _ignored_fields(fields: Iterable[str]) -> frozenset[str]:
    """``openai_app(ignored_fields=)`` checked: names, none of them one of OpenAI's (those are decided)."""
    if isinstance(fields, str) or not isinstance(fields, Iterable):
        raise TypeError("ignored_fields must be an iterable of field names (a list of str), not a str")
    names = frozenset(fields)
    for name in names:
        if not isinstance(name, str) or not name:
            raise TypeError(f"ignored_fields must hold non-empty field names, not {name!r}")
        if name in CHAT_FIELDS:
            raise ValueError(
                f"ignored_fields names {name!r}, one of OpenAI's own fields: the app decides each of those "
                "(docs/serve.md)"
            )
    return names


def _failure_text(result: RunResult[Any]) -> str:
    """What the client is told of a failed run: never the provider's own text (:func:`~._http.client_text`)."""
    error = result.error
    return client_text(error) if error is not None else "the model could not answer"


def _raised_text(exc: BaseException) -> str:
    return client_text(exc)


def _error_type(result: RunResult[Any]) -> str:
    return type(result.error).__name__ if result.error is not None else "generation_failed"


async def _run_raised(send: Send, exc: Exception, span: RequestSpan) -> None:
    refused = session_refusal(exc)
    span.failed(type(exc).__name__, fault=not refused)
    # Neither is retried (x-should-retry: false): a paused session refuses every turn until a person resolves it;
    # after another turn committed first, a retry would run this turn — and its tools — again on top of it; and an
    # exception out of the run is the server's, which a retry a second later meets again.
    if refused:  # a session paused for approval, or another process committed first
        await _error(send, 409, _raised_text(exc), "invalid_request_error", code="session_conflict")
        return
    await _error(send, 500, _raised_text(exc), "server_error")


def _route(path: str) -> str | None:
    """The route a path is served by (``http.route``: a template, not the path: the model is no label)."""
    bare = path[3:] if path.startswith("/v1/") else path
    if bare.startswith("/models/"):
        return "/v1/models/{model}"
    if bare in ("/models", "/chat/completions"):
        return "/v1" + bare
    return None


async def _model_not_found(send: Send, name: str) -> None:
    # Echoed as OpenAI echoes it, but not whole: a name of megabytes (the body's limit) would make an error as large.
    shown = name if len(name) <= 200 else name[:199] + "…"
    await _error(send, 404, f"The model '{shown}' does not exist", "invalid_request_error", param="model",
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
    retry: bool = False,
) -> None:
    """Answer with an error in OpenAI's shape.

    ``retry``: whether the client may retry on its own.  Unless it may, the answer says ``x-should-retry:
    false``, the header the OpenAI SDKs obey before their status rules (which retry 408, 409, 429 and every 5xx,
    twice by default): a retry starts a new run, so it repeats the model calls and tool calls of one that paused
    or failed, and meets the same refusal.  Said on every error, the 4xx the SDKs would not retry included, so a
    client with other rules reads it too.  With ``retry``, nothing is added: the client's own rules apply.
    """
    extra = dict(headers or {})
    if not retry:
        extra[_SHOULD_RETRY] = "false"
    await send_json(send, status, {"error": _error_body(message, kind, param, code)}, extra)


#: The OpenAI SDKs' retry header (``openai._base_client.BaseClient._should_retry``): ``false`` stops their retry.
_SHOULD_RETRY = "x-should-retry"
