"""One OpenTelemetry span per served request, the parent of the runs it starts.

Each request an app serves is a ``SERVER`` span named ``{method} {route}`` (HTTP semantic conventions):
``http.request.method``, ``http.route``, ``http.response.status_code``, ``gen_ai.agent.name``,
``gen_ai.request.model``, ``agentactors.run_id`` once the run started, ``error.type`` when it failed.  The
span is the current one while the request's run starts, so an :class:`~agentactors.otel.OTelRecorder` on the
runtime hangs the run's ``invoke_agent`` span (and its ``chat`` and ``execute_tool`` spans) under it: one
trace per request.

Only what is listed above is recorded: never a header (the bearer token is one), a body, a message or an
error's text.  Without ``opentelemetry-api`` installed (the ``[otel]`` extra) nothing here runs.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any

from .._version import __version__
from ._http import Send

__all__ = ["RequestSpan", "Tracing"]

_SCOPE = "agentactors.serve"


class RequestSpan:
    """The span of one request (or nothing, when tracing is off): its attributes as the request goes."""

    __slots__ = ("_span", "error", "status")

    def __init__(self, span: Any) -> None:
        self._span = span
        self.status: int | None = None
        self.error: str | None = None

    def set(self, key: str, value: str | int | None) -> None:
        if self._span is not None and value is not None:
            self._span.set_attribute(key, value)

    def run(self, run_id: str | None) -> None:
        """The request's run started (``agentactors.run_id``)."""
        self.set("agentactors.run_id", run_id)

    def failed(self, error_type: str, *, fault: bool = True) -> None:
        """The request failed: ``error.type`` (the first reason given wins) and, when it is the server's
        ``fault`` (not a client's 4xx, as the HTTP conventions say), an error status."""
        if self._span is None or self.error is not None:
            return
        self.error = error_type
        self._span.set_attribute("error.type", error_type)
        if fault:
            from opentelemetry.trace import Status, StatusCode

            self._span.set_status(Status(StatusCode.ERROR))

    def watch(self, send: Send) -> Send:
        """``send``, noting the response's status code for the span."""
        if self._span is None:
            return send

        async def noted(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                self.status = int(message["status"])
            await send(message)

        return noted


class Tracing:
    """Where an app's request spans go: ``tracer_provider`` (default: the global one), if OpenTelemetry is here."""

    __slots__ = ("_tracer",)

    def __init__(self, tracer_provider: Any = None) -> None:
        try:
            from opentelemetry import trace
        except ImportError:  # the [otel] extra is not installed: no spans
            self._tracer: Any = None
            return
        self._tracer = trace.get_tracer(_SCOPE, __version__, tracer_provider=tracer_provider)

    @contextmanager
    def request(self, method: str, route: str | None, **attributes: str | None) -> Iterator[RequestSpan]:
        """A span for a request to ``route`` (``None``: no route matched), current inside the block; ended
        (with its status) after it."""
        if self._tracer is None:
            yield RequestSpan(None)
            return
        from opentelemetry.trace import SpanKind

        initial = {"http.request.method": method}
        if route is not None:
            initial["http.route"] = route
        initial.update({k: v for k, v in attributes.items() if v is not None})
        name = f"{method} {route}" if route is not None else method
        with self._tracer.start_as_current_span(
            name, kind=SpanKind.SERVER, attributes=initial, record_exception=False, set_status_on_exception=False
        ) as span:
            noted = RequestSpan(span)
            try:
                yield noted
            except BaseException as exc:
                noted.failed(type(exc).__name__)
                raise
            finally:
                if noted.status is not None:
                    span.set_attribute("http.response.status_code", noted.status)
                    if noted.status >= 400:
                        noted.failed(str(noted.status), fault=noted.status >= 500)

