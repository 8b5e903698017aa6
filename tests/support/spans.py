"""OpenTelemetry spans kept in memory for a test, and everything they say as one text to search for a secret."""

from __future__ import annotations

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

__all__ = ["everything", "in_memory_spans"]


def in_memory_spans() -> tuple[InMemorySpanExporter, TracerProvider]:
    """A tracer provider whose spans end in the returned in-memory exporter (exported as each span ends)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter, provider


def everything(spans: list[ReadableSpan]) -> str:
    """Every name, attribute, span event and status description of ``spans``, as one text to search."""
    out: list[str] = []
    for span in spans:
        out += [span.name, repr(dict(span.attributes or {})), str(span.status.description)]
        for event in span.events:
            out += [event.name, repr(dict(event.attributes or {}))]
    return "\n".join(out)
