"""``OTelRecorder``: a run's events as OpenTelemetry spans and GenAI metrics.

Which event opens and closes which span::

    run.started ───────────────────────── invoke_agent {agent}   (parent: the caller's active span, or the
    │                                                              parent run's, for a delegated run)
    ├── llm.request ── llm.response ───── chat {model}           (retry.*, fallback.*, pool.*, breaker.*,
    │                  (or a failed step)                          hedge.* events on it as span events; the
    │                                                              member that served)
    ├── tools.started ── tools.finished ─ execute_tool {tool}    (status; a refusal or truncation as an event)
    ├── agent.handoff ─────────────────── span event agentactors.handoff on invoke_agent (from, to, call id)
    run.finished

A handoff keeps the run's ``invoke_agent`` span (it is one run): the span keeps the name and
``gen_ai.agent.name`` of the agent invoked — the conventions want that attribute at span creation, where
samplers read it, and the span's name is made of it — and says who answered last in
``agentactors.final_agent`` (with the path in ``agentactors.agent.handoffs``).

Recording is synchronous: a span is started and ended with explicit times, in the task whose run emitted
the event, and ending a span runs the tracer provider's span processors right there.  A
``BatchSpanProcessor`` only queues the span (its thread exports); a ``SimpleSpanProcessor`` exports it on
the spot, so an exporter that talks to a collector would block the event loop — every run of the
runtime — on each span end: the recorder warns once (a ``RuntimeWarning``) when the provider has one
(the SDK's in-memory exporter, which does no I/O, excepted).  A processor that raises in ``on_end`` is
logged once; the span stays ended (once: the recorder forgets a span before ending it) and the run's other
spans are still ended.  Events carry the anyio clock — monotonic, and virtual in tests — so each
run is anchored once, at ``run.started``, to the wall clock (``time.time_ns()``), and every time of the run
is that anchor plus the event's offset: durations are the run's own, even on a virtual clock.  A delegated
run takes its parent's anchor (one clock, one runtime), so its spans nest in its parent's in time.

Content: ``gen_ai.input.messages`` / ``gen_ai.output.messages`` only with ``capture_content=True``, and
passed through :func:`~agentactors.redaction.redact`; spans otherwise carry names, models, sizes, counts,
error types and statuses — never a message, an error's text or a credential.
"""

from __future__ import annotations

import enum
import logging
import sys
import threading
import time
import warnings
from collections.abc import Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

import agentactors.otel._semconv as sc

from .._version import __version__
from ..events import Event, to_jsonable
from ..messages import LLMRequest
from ..redaction import excerpt, redact

__all__ = ["OTelRecorder"]

log = logging.getLogger("agentactors.otel")

_SCOPE = "agentactors"
# A member of the agent's provider stack, as run.started describes it: (name, wire, host, port).
_Member = tuple[str, str | None, str | None, int | None]


class _Run:
    """One run's spans while it runs."""

    __slots__ = (
        "chat", "chat_attrs", "chat_started", "context", "members", "model", "provider", "span", "stream", "t0",
        "tools", "wall0",
    )

    def __init__(self, span: Span, t0: float, members: dict[str, _Member], model: str | None, provider: str) -> None:
        self.span = span
        self.context = trace.set_span_in_context(span)
        self.t0 = t0
        self.wall0 = time.time_ns()
        self.members = members
        self.model = model
        #: ``gen_ai.provider.name`` of the run's first member, as shown (redacted): each chat span starts with it
        #: (a response that names another member sets that span's own attribute).
        self.provider = provider
        self.chat: Span | None = None
        self.chat_attrs: dict[str, Any] = {}
        self.chat_started = 0.0
        self.tools: dict[str, Span] = {}
        #: Every model call of the run takes the stream path (its ``run.started`` says ``stream``): each chat span
        #: starts with ``gen_ai.request.stream`` — a call that streamed only tool calls sends no text delta to tell.
        self.stream = False

    def ns(self, t: float) -> int:
        return self.wall0 + int(max(0.0, t - self.t0) * 1e9)


class OTelRecorder:
    """A recorder that turns runs into spans and metrics following the OpenTelemetry GenAI conventions.

    :param tracer_provider: where spans go (default: the global one, ``trace.get_tracer_provider()``).
    :param capture_content: record the messages sent and received (``gen_ai.input.messages`` /
        ``gen_ai.output.messages``); off by default, as the conventions ask — they may hold personal data.
    :param meter_provider: where the ``gen_ai.client.token.usage`` and
        ``gen_ai.client.operation.duration`` histograms go (default: the global one).

    Attach it like any recorder: ``Runtime(recorders=[OTelRecorder()])`` or ``Agent(..., recorders=[...])``.
    Spans: ``invoke_agent {agent}`` (INTERNAL) per run, parented on the span active where the run was
    started; ``chat {model}`` (CLIENT) per model call, with request and response model, provider, server
    address, token usage and finish reasons, ``gen_ai.request.stream`` on every call of a run that streams (its
    ``run.started`` says so: a call that streamed only tool calls too), the retries, failovers and breaker
    transitions as span events,
    ``agentactors.served_by`` naming the member that answered and what the call cost
    (``agentactors.cost.total`` / ``.input`` / ``.output`` / ``.currency``, left out when unpriced — the
    run's total, delegated runs' included, is on ``invoke_agent``); ``execute_tool {tool}`` (INTERNAL) per
    tool call with its status (any status but ``ok`` is an error).  A run whose events carry a
    ``parent_run_id`` (a delegated run, ``agent.as_tool()``) is a child of the parent's ``execute_tool``
    span for the call that started it, in the same trace.  A handoff is an ``agentactors.handoff`` span
    event on the run's ``invoke_agent`` span.  Span-event attributes are plain strings, numbers and
    booleans (an enum is its value).

    Spans end in the run's own task, where the provider's span processors run: give the provider a
    ``BatchSpanProcessor`` (a ``SimpleSpanProcessor`` exports each span on the event loop, blocking it for
    the export's length — the recorder warns once when it finds one at a run's start).
    """

    def __init__(
        self, tracer_provider: Any = None, *, capture_content: bool = False, meter_provider: Any = None
    ) -> None:
        self.capture_content = bool(capture_content)
        self._tracer = trace.get_tracer(_SCOPE, __version__, tracer_provider=tracer_provider)
        meter = metrics.get_meter(_SCOPE, __version__, meter_provider=meter_provider)
        self._tokens = meter.create_histogram(
            sc.TOKEN_USAGE,
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=sc.TOKEN_BUCKETS,
        )
        self._duration = meter.create_histogram(
            sc.OPERATION_DURATION,
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=sc.DURATION_BUCKETS,
        )
        self._runs: dict[str, _Run] = {}
        # Runs of several runtimes (threads) may share one recorder; a run's own events come in order.
        self._lock = threading.Lock()
        self._provider = tracer_provider
        self._checked = False  # the provider's span processors were looked at (_check_processors)
        self._end_failed = False  # a span processor raised when a span ended: logged once

    def __repr__(self) -> str:
        return f"OTelRecorder(capture_content={self.capture_content}, open_runs={len(self._runs)})"

    # -- the recorder protocol -------------------------------------------------------------------------

    def record(self, event: Event) -> None:
        """Open, annotate or close the span ``event`` concerns.  Events outside runs are ignored."""
        run_id = event.run_id
        if run_id is None:
            return
        kind = event.type
        with self._lock:
            if kind == "run.started":
                if not self._checked:
                    self._check_processors()
                self._run_started(run_id, event)
                return
            run = self._runs.get(run_id)
            if run is None:
                return
            handler = _HANDLERS.get(kind)
            if handler is not None:
                handler(self, run, event)
            elif kind.startswith(_RESILIENCE):
                self._resilience(run, event)
            elif kind.startswith("tools."):
                self._tool_note(run, event)

    def _check_processors(self) -> None:
        """Warn, once, when the tracer provider exports spans on the event loop (a ``SimpleSpanProcessor``).

        Looked at when the first run starts, not when the recorder is made: the global provider is often set
        after that (until it is, there is nothing to look at, and the next run looks again).
        """
        provider = self._provider if self._provider is not None else trace.get_tracer_provider()
        if isinstance(provider, trace.ProxyTracerProvider):
            return
        self._checked = True
        exporters = _exporting_in_place(provider)
        if exporters:
            warnings.warn(
                f"OTelRecorder: the tracer provider exports spans with a SimpleSpanProcessor "
                f"({', '.join(exporters)}): every span a run ends is exported there and then, on the event loop, "
                "which stops every run of the runtime for as long as the export takes. Give the provider a "
                "BatchSpanProcessor instead (it exports from a thread of its own). "
                "(This warning is given once per recorder.)",
                RuntimeWarning,
                stacklevel=2,
            )

    def _end(self, span: Span, end: int) -> None:
        """End ``span``: once, whatever its processors do.

        Callers forget the span first (``run.chat = None``, popped from ``run.tools``): ``span.end()`` runs the
        provider's span processors, and if one raised while the span was still referenced, a later event would
        end it again — change it after its end, and count a call that had succeeded as a failed one.  The
        exception stops here: the span is ended all the same (the SDK sets its end before it calls the
        processors), the run's other spans are still ended, and the failure is logged once.
        """
        try:
            span.end(end_time=end)
        except Exception as exc:
            if not self._end_failed:
                self._end_failed = True
                log.warning(
                    "a span processor raised %s when span %r ended; the span is ended and the recorder goes on "
                    "(further failures of span processors are not logged)",
                    _error_text(exc),
                    getattr(span, "name", "?"),
                )

    # -- runs ---------------------------------------------------------------------------------------------

    def _run_started(self, run_id: str, event: Event) -> None:
        data = event.data
        agent = data.get("agent")
        members: dict[str, _Member] = {}
        for member in data.get("providers") or ():
            if isinstance(member, list | tuple) and len(member) == 4:
                name, wire, host, port = member
                members[str(name)] = (str(name), wire, host, port)
        model = data.get("model") if isinstance(data.get("model"), str) else None
        # A delegated run's events carry its parent's id; its run.started names the parent's call when the
        # delegating tool said which (Agent.as_tool does): the child's span hangs under that tool's span.
        parent_id = event.parent_run_id
        parent = self._runs.get(parent_id) if isinstance(parent_id, str) else None
        if parent is not None:
            call_id = data.get("parent_call_id")
            tool_span = parent.tools.get(call_id) if isinstance(call_id, str) else None
            if tool_span is None and parent.tools:
                tool_span = list(parent.tools.values())[-1]
            parent_ctx = trace.set_span_in_context(tool_span) if tool_span is not None else parent.context
        else:
            parent_ctx = otel_context.get_current()  # the caller's: the run is recorded in its task
        attributes: dict[str, Any] = {sc.OPERATION: "invoke_agent", sc.RUN_ID: run_id}
        if agent:
            attributes[sc.AGENT_NAME] = _text(agent)
        first = next(iter(members.values()), None)
        if first is not None:
            # A member's name is the caller's text (a name made from a connection string may hold a key): shown as
            # a provider's chosen name is, redacted and cut — once a run, kept for its chat spans.
            attributes[sc.PROVIDER] = _text(sc.provider_name(first[1], first[0]))
        if model:
            attributes[sc.REQUEST_MODEL] = _text(model)
        # A delegated run shares its parent's clock and anchor: its spans nest in its parent's in time too
        # (anchored on its own, a virtual clock's child would end after the tool call that ran it).
        wall = parent.ns(event.time) if parent is not None else time.time_ns()
        span = self._tracer.start_span(
            _span_name("invoke_agent", agent),
            context=parent_ctx,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=wall,
        )
        run = _Run(span, event.time, members, model, attributes.get(sc.PROVIDER, "agentactors"))
        run.wall0 = wall
        run.stream = data.get("stream") is True
        self._runs[run_id] = run

    def _run_finished(self, run: _Run, event: Event) -> None:
        assert event.run_id is not None
        self._runs.pop(event.run_id, None)
        data = event.data
        end = run.ns(event.time)
        tools, run.tools = list(run.tools.values()), {}
        for tool in tools:
            tool.set_status(Status(StatusCode.ERROR, "cancelled"))
            self._end(tool, end)
        if run.chat is not None:
            self._end_chat(run, event, error="cancelled" if data.get("cancelled") else "run_ended")
        span = run.span
        usage = to_jsonable(data.get("usage"))
        if isinstance(usage, Mapping):
            span.set_attribute(sc.INPUT_TOKENS, int(usage.get("input_tokens") or 0))
            span.set_attribute(sc.OUTPUT_TOKENS, int(usage.get("output_tokens") or 0))
        served = data.get("served_by")
        if isinstance(served, str):
            span.set_attribute(sc.SERVED_BY, _text(served))
        span.set_attributes(sc.cost_attributes(data.get("cost")))
        final = _scalar(data.get("final_agent"))
        if isinstance(final, str):
            span.set_attribute(sc.FINAL_AGENT, _text(final))
            path = _attribute(data.get("handoffs"))
            if isinstance(path, list):
                span.set_attribute(sc.HANDOFFS, _clean(path))
        error = data.get("error")
        if data.get("cancelled"):
            span.set_attribute(sc.ERROR_TYPE, "cancelled")
            span.set_status(Status(StatusCode.ERROR, "cancelled"))
        elif error is not None or data.get("generation_failed"):
            span.set_attribute(sc.ERROR_TYPE, _error_type(error))
            span.set_status(Status(StatusCode.ERROR, _error_type(error)))
        self._end(span, end)

    # -- model calls ----------------------------------------------------------------------------------------

    def _llm_request(self, run: _Run, event: Event) -> None:
        if run.chat is not None:
            self._end_chat(run, event, error="superseded")
        record = _request_record(event.data.get("request"), self.capture_content)
        model = record.get("model") or run.model
        first = next(iter(run.members.values()), None)
        attributes: dict[str, Any] = {sc.OPERATION: "chat", sc.PROVIDER: run.provider, sc.RUN_ID: event.run_id}
        if model:
            attributes[sc.REQUEST_MODEL] = _text(model)
        if first is not None and first[2]:
            attributes[sc.SERVER_ADDRESS] = first[2]
            if first[3]:
                attributes[sc.SERVER_PORT] = first[3]
        if run.stream:
            attributes[sc.REQUEST_STREAM] = True
        for key, name in (("max_tokens", sc.REQUEST_MAX_TOKENS), ("temperature", sc.REQUEST_TEMPERATURE)):
            number = _scalar(record.get(key))
            if isinstance(number, int | float) and not isinstance(number, bool):
                attributes[name] = number
        stop = record.get("stop")
        if stop:
            # One stop string is a sequence of one (a str iterates as its letters).
            attributes[sc.REQUEST_STOP] = _clean([str(s) for s in ([stop] if isinstance(stop, str) else stop)])
        # (The metrics' attributes: the run's id, and the stream flag the histograms never had, left out.)
        run.chat_attrs = {k: v for k, v in attributes.items() if k != sc.RUN_ID and k != sc.REQUEST_STREAM}
        if self.capture_content:
            attributes[sc.INPUT_MESSAGES] = redact(sc.input_messages(record.get("messages") or ()))
        run.chat_started = event.time
        run.chat = self._tracer.start_span(
            _span_name("chat", model),
            context=run.context,
            kind=SpanKind.CLIENT,
            attributes=attributes,
            start_time=run.ns(event.time),
        )

    def _text_delta(self, run: _Run, event: Event) -> None:
        # (A run whose run.started said stream has it from the span's start; this is for events of one that did not
        # say: an older record replayed.)
        if run.chat is not None and not run.stream:
            run.chat.set_attribute(sc.REQUEST_STREAM, True)

    def _llm_response(self, run: _Run, event: Event) -> None:
        chat = run.chat
        if chat is None:
            return
        response = to_jsonable(event.data.get("response"))
        if not isinstance(response, Mapping):
            response = {}
        served = event.data.get("provider") or response.get("provider")
        attributes: dict[str, Any] = {}
        if isinstance(served, str):
            attributes[sc.SERVED_BY] = _text(served)
            member = run.members.get(served)
            attributes[sc.PROVIDER] = _text(sc.provider_name(member[1] if member else None, served))
            if member is not None and member[2]:
                attributes[sc.SERVER_ADDRESS] = member[2]
                if member[3]:
                    attributes[sc.SERVER_PORT] = member[3]
        if response.get("model"):
            attributes[sc.RESPONSE_MODEL] = _text(response["model"])
        if response.get("response_id"):
            attributes[sc.RESPONSE_ID] = _text(response["response_id"])
        attributes[sc.FINISH_REASONS] = [sc.finish_reason(response.get("stop_reason"))]
        usage = response.get("usage") if isinstance(response.get("usage"), Mapping) else {}
        assert isinstance(usage, Mapping)
        tokens = {
            sc.INPUT_TOKENS: usage.get("input_tokens"),
            sc.OUTPUT_TOKENS: usage.get("output_tokens"),
            sc.CACHE_READ_TOKENS: usage.get("cache_read_tokens"),
            sc.CACHE_WRITE_TOKENS: usage.get("cache_write_tokens"),
            sc.REASONING_TOKENS: usage.get("reasoning_tokens"),
        }
        for name, value in tokens.items():
            if isinstance(value, int) and (value or name in (sc.INPUT_TOKENS, sc.OUTPUT_TOKENS)):
                attributes[name] = value
        attributes.update(sc.cost_attributes(event.data.get("cost")))
        if self.capture_content:
            attributes[sc.OUTPUT_MESSAGES] = redact(sc.output_messages(response))
        chat.set_attributes(attributes)
        run.chat_attrs.update({k: attributes[k] for k in (sc.PROVIDER, sc.RESPONSE_MODEL, sc.SERVER_ADDRESS,
                                                          sc.SERVER_PORT) if k in attributes})
        metric_attrs = dict(run.chat_attrs)
        for kind, name in (("input", sc.INPUT_TOKENS), ("output", sc.OUTPUT_TOKENS)):
            value = attributes.get(name)
            if isinstance(value, int):
                self._tokens.record(value, {**metric_attrs, sc.TOKEN_TYPE: kind})
        self._duration.record(max(0.0, event.time - run.chat_started), metric_attrs)
        run.chat = None
        self._end(chat, run.ns(event.time))

    def _step_finished(self, run: _Run, event: Event) -> None:
        if run.chat is not None and event.data.get("failed"):
            self._end_chat(run, event, error=_error_type(event.data.get("error")))

    def _end_chat(self, run: _Run, event: Event, *, error: str) -> None:
        chat = run.chat
        assert chat is not None
        chat.set_attribute(sc.ERROR_TYPE, error)
        chat.set_status(Status(StatusCode.ERROR, error))
        self._duration.record(max(0.0, event.time - run.chat_started), {**run.chat_attrs, sc.ERROR_TYPE: error})
        run.chat = None
        self._end(chat, run.ns(event.time))

    def _resilience(self, run: _Run, event: Event) -> None:
        """A retry, failover (a chain's or a pool's), breaker or hedge decision: a span event on the model call
        it happened in.  An error is its type, kind and status (:func:`_error_attributes`), never its text."""
        span = run.chat if run.chat is not None else run.span
        attributes: dict[str, Any] = {}
        for key, value in event.data.items():
            if key == "error":
                attributes.update(_error_attributes(value))
            elif key == "errors" and isinstance(value, list | tuple):
                attributes["agentactors.errors"] = [_error_type(e) for e in value]
            else:
                plain = _attribute(value)
                if plain is not None:
                    attributes[f"agentactors.{key}"] = _clean(plain)
        span.add_event(event.type, attributes, timestamp=run.ns(event.time))

    def _handoff(self, run: _Run, event: Event) -> None:
        """The run went on with another agent: a span event on its ``invoke_agent`` span."""
        attributes: dict[str, Any] = {}
        for key, name in (("from_agent", sc.HANDOFF_FROM), ("to_agent", sc.HANDOFF_TO), ("call_id", sc.TOOL_CALL_ID)):
            value = _scalar(event.data.get(key))
            if value is not None:
                attributes[name] = _clean(value)
        run.span.add_event(sc.HANDOFF_EVENT, attributes, timestamp=run.ns(event.time))

    # -- tools ------------------------------------------------------------------------------------------------

    def _tool_started(self, run: _Run, event: Event) -> None:
        # The name is the model's (a call to a tool that does not exist still starts one): cut and redacted.
        name = _text(event.data.get("name") or "tool")
        call_id = str(event.data.get("call_id") or "")
        run.tools[call_id] = self._tracer.start_span(
            _span_name("execute_tool", name),
            context=run.context,
            kind=SpanKind.INTERNAL,
            attributes={
                sc.OPERATION: "execute_tool",
                sc.TOOL_NAME: name,
                sc.TOOL_CALL_ID: _text(call_id),
                sc.TOOL_TYPE: "function",
                sc.RUN_ID: event.run_id,
            },
            start_time=run.ns(event.time),
        )

    def _tool_finished(self, run: _Run, event: Event) -> None:
        span = run.tools.pop(str(event.data.get("call_id") or ""), None)
        if span is None:
            return
        status = _scalar(event.data.get("status"))
        span.set_attribute(sc.TOOL_STATUS, str(status))
        size = event.data.get("size")
        if isinstance(size, int):
            span.set_attribute("agentactors.tool.result_chars", size)
        if status != "ok":
            # What the tool raised, when the executor said (an ``error``): error.type names the class of error; else
            # the status (``invalid``, ``timeout``, ``denied``...).
            raised = event.data.get("error_type")
            span.set_attribute(sc.ERROR_TYPE, _clean(raised) if isinstance(raised, str) and raised else str(status))
            span.set_status(Status(StatusCode.ERROR, str(status)))
        self._end(span, run.ns(event.time))

    def _tool_note(self, run: _Run, event: Event) -> None:
        """A tool event other than start and finish (a refusal, a truncation, a tool's own): a span event."""
        span = run.tools.get(str(event.data.get("call_id") or ""))
        if span is None:
            return
        attributes = {
            f"agentactors.{k}": _clean(v)
            for k, v in ((k, _scalar(v)) for k, v in event.data.items() if k not in ("call_id", "name"))
            if v is not None
        }
        span.add_event(event.type, attributes, timestamp=run.ns(event.time))


#: What a ``chat`` span reads of a request but its messages (:func:`_request_record`).
_REQUEST_FIELDS = ("model", "max_tokens", "temperature", "stop")


def _request_record(request: Any, messages: bool) -> Mapping[str, Any]:
    """What a ``chat`` span reads of an ``llm.request`` event's request, in its JSON form
    (:func:`~agentactors.events.to_jsonable`'s): :data:`_REQUEST_FIELDS`, and its ``messages`` when ``messages``.

    Only those fields are converted: the whole request converted on every step — every message of a conversation
    that grows by a few a step — made a long run quadratic (29 ms a step at 4,000 messages) for a model name and
    three settings.  With ``messages`` (content captured) the whole request is converted, as the messages' JSON
    form is then recorded anyway.  The request is an :class:`~agentactors.messages.LLMRequest`, or its JSON form
    (a replayed event); anything else is converted whole, as before (``{}`` when it has no mapping form).
    """
    if request is None:
        return {}
    if not messages and isinstance(request, LLMRequest):
        return {key: to_jsonable(getattr(request, key)) for key in _REQUEST_FIELDS}
    if not messages and isinstance(request, Mapping):
        try:
            return {key: to_jsonable(request.get(key)) for key in _REQUEST_FIELDS}
        except Exception:  # a mapping that cannot be read: nothing known, as its conversion says
            return {}
    record = to_jsonable(request)
    return record if isinstance(record, Mapping) else {}


def _exporting_in_place(provider: Any) -> list[str]:
    """The names of the exporters ``provider`` calls in ``span.end()`` itself: those behind a
    ``SimpleSpanProcessor`` (the SDK's in-memory exporter, which does no I/O, left out).

    The SDK has no public way to list a provider's processors: they are read where its ``TracerProvider``
    keeps them, and a provider that keeps them elsewhere (another SDK, a later version) shows none — no warning,
    never an error.  The SDK is not imported here: if it was never imported, no provider of it exists.
    """
    export = sys.modules.get("opentelemetry.sdk.trace.export")
    simple = getattr(export, "SimpleSpanProcessor", None)
    if simple is None:
        return []
    memory = getattr(
        sys.modules.get("opentelemetry.sdk.trace.export.in_memory_span_exporter"), "InMemorySpanExporter", ()
    )
    try:
        active = provider._active_span_processor
        processors = tuple(active._span_processors)
        return [
            type(p.span_exporter).__name__
            for p in processors
            if isinstance(p, simple) and not isinstance(getattr(p, "span_exporter", None), memory)
        ]
    except Exception:  # not the SDK's layout: nothing known
        return []


def _error_text(exc: BaseException) -> str:
    """``Type: message``, redacted; the type alone when the message cannot be read (a log line must not raise)."""
    try:
        return redact(f"{type(exc).__name__}: {exc}")
    except Exception:
        return f"{type(exc).__name__} (its message could not be read)"


def _scalar(value: Any) -> str | bool | int | float | None:
    """``value`` as an attribute value OpenTelemetry takes — a plain ``str``, ``bool``, ``int`` or ``float``
    — or ``None``.  An enum is its value (``CircuitState.open`` is ``"open"``), never the enum object: a
    ``StrEnum`` passes an ``isinstance(v, str)`` check, but exporters and backends want the plain type."""
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str.__str__(value)
    return None


_AttributeValue = str | bool | int | float | list[str]


def _attribute(value: Any) -> _AttributeValue | None:
    """An event's value as a span-event attribute: a plain scalar (:func:`_scalar`), a list of scalars as
    strings, or ``None`` for what has no attribute form (a mapping, an object)."""
    plain = _scalar(value)
    if plain is not None or value is None:
        return plain
    items = to_jsonable(value)
    if isinstance(items, list):
        scalars = [_scalar(v) for v in items]
        if all(v is not None for v in scalars):
            return [str(v) for v in scalars]
    return None


#: The longest text a span-event attribute copied from an event's payload keeps (``…`` marks a cut).
_MAX_TEXT = 1024


def _clean(value: _AttributeValue) -> _AttributeValue:
    """A payload's value as a span-event attribute holds it: text without credentials, and not unbounded.

    The events these attributes come from carry whatever their emitter put in them — a tool's own
    ``ctx.emit("tools.progress", detail=...)``, a decision's ``reason`` — so each string is passed through
    :func:`~agentactors.redaction.excerpt` (cut, then redacted: O(the cut) however long the text).
    """
    if isinstance(value, str):
        return excerpt(value, _MAX_TEXT)
    if isinstance(value, list):
        return [excerpt(v, _MAX_TEXT) for v in value]
    return value


#: The longest name a span name keeps of the agent, model or tool it is made of (``…`` marks a cut).
_MAX_NAME = 128


def _text(value: Any) -> str:
    """A name or an identifier a model or a provider chose (a tool's name, a response's id and model), as an
    attribute holds it: redacted and cut like a payload's text (:func:`_clean`) — the SDK bounds neither."""
    return excerpt(str(value), _MAX_TEXT)


def _span_name(operation: str, name: Any) -> str:
    """``{operation} {name}``, as the conventions name spans, with ``name`` redacted and cut short: a span
    name is indexed and grouped on by every backend, and the SDK takes any length."""
    if not name:
        return operation
    return f"{operation} {excerpt(str(name), _MAX_NAME)}"


def _error_attributes(error: Any) -> dict[str, Any]:
    """An error as span-event attributes: its type, kind and HTTP status — never its text."""
    out: dict[str, Any] = {sc.ERROR_TYPE: _error_type(error)}
    kind = getattr(error, "kind", None)
    if kind is not None:
        out["agentactors.error.kind"] = str(getattr(kind, "value", kind))
    status = getattr(error, "status", None)
    if isinstance(status, int):
        out["agentactors.error.status"] = status
    return out


def _error_type(error: Any) -> str:
    """A low-cardinality name for an error, as ``error.type`` wants: its class name (``_OTHER`` if none)."""
    if error is None:
        return "_OTHER"
    if isinstance(error, Mapping):
        return str(error.get("error") or "_OTHER")
    if isinstance(error, BaseException):
        return type(error).__name__
    return "_OTHER"


#: The families of resilience events that become span events on the model call (:meth:`OTelRecorder._resilience`).
_RESILIENCE = ("retry.", "fallback.", "pool.", "breaker.", "hedge.")

_HANDLERS = {
    "run.finished": OTelRecorder._run_finished,
    "llm.request": OTelRecorder._llm_request,
    "llm.response": OTelRecorder._llm_response,
    "llm.text_delta": OTelRecorder._text_delta,
    "step.finished": OTelRecorder._step_finished,
    "tools.started": OTelRecorder._tool_started,
    "tools.finished": OTelRecorder._tool_finished,
    "agent.handoff": OTelRecorder._handoff,
}
