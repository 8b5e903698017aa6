"""A model call's span costs what the span holds, not the conversation: the request's messages are converted only
when their content is recorded (``capture_content=True``).

Before, ``llm.request`` converted the whole request — every message — to its JSON form on every step to read its
model and settings: 29 ms a step at 4,000 messages, quadratic over a long run.  The count: each message carries a
value whose ``repr`` (its JSON form, as :func:`~agentactors.events.to_jsonable` makes it) counts the conversions.
The recorder is synchronous: its events are fed to it directly, at the times they carry.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentactors import LLMRequest, LLMResponse, Message, Usage
from agentactors.events import Event
from agentactors.otel import OTelRecorder

STEPS = 200


class _Counting:
    """A value JSON has no form for: converting it reads its ``repr``, counted."""

    converted = 0

    def __repr__(self) -> str:
        _Counting.converted += 1
        return "<counted>"


def _message(i: int) -> Message:
    return Message("user", f"message {i}", provider_data={"counted": _Counting()})


def _run(recorder: OTelRecorder, steps: int, **settings: Any) -> list[int]:
    """A run of ``steps`` model calls, each request one message longer; the conversions each step made."""
    per_step: list[int] = []
    recorder.record(Event("run.started", run_id="r", time=0.0, data={"agent": "a", "model": "m"}))
    messages: list[Message] = []
    for step in range(steps):
        messages.append(_message(step))
        request = LLMRequest(tuple(messages), model="the-model", **settings)
        before = _Counting.converted
        recorder.record(Event("llm.request", run_id="r", time=float(step), step=step, data={"request": request}))
        response = LLMResponse("ok", usage=Usage(len(messages), 1), provider="p", model="the-model")
        recorder.record(Event("llm.response", run_id="r", time=step + 0.5, step=step, data={"response": response}))
        per_step.append(_Counting.converted - before)
    recorder.record(Event("run.finished", run_id="r", time=float(steps), data={}))
    return per_step


def _recorder(**kwargs: Any) -> tuple[OTelRecorder, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return OTelRecorder(provider, **kwargs), exporter


def _chats(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    chats = (s for s in exporter.get_finished_spans() if s.name.startswith("chat"))
    return sorted(chats, key=lambda s: s.start_time or 0)


SETTINGS: dict[str, Any] = {"max_tokens": 64, "temperature": 0.5, "stop": ("END", "STOP")}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_request_s_messages_are_not_converted_when_content_is_not_captured() -> None:
    recorder, exporter = _recorder()
    per_step = _run(recorder, STEPS, **SETTINGS)
    assert per_step == [0] * STEPS  # before: step k converted its k messages (STEPS**2 / 2 over the run)
    chats = _chats(exporter)
    assert len(chats) == STEPS
    for chat in chats:  # what the span says of the request is read all the same
        assert chat.name == "chat the-model"
        attrs = dict(chat.attributes or {})
        assert attrs["gen_ai.request.model"] == "the-model"
        assert attrs["gen_ai.request.max_tokens"] == 64
        assert attrs["gen_ai.request.temperature"] == 0.5
        assert attrs["gen_ai.request.stop_sequences"] == ("END", "STOP")
        assert "gen_ai.input.messages" not in attrs


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_captured_content_converts_each_request_s_messages_once() -> None:
    recorder, exporter = _recorder(capture_content=True)
    per_step = _run(recorder, 20)
    assert per_step == list(range(1, 21))  # the step's messages, once each
    last = _chats(exporter)[-1]
    sent = json.loads(str((last.attributes or {})["gen_ai.input.messages"]))
    assert len(sent) == 20 and sent[0]["role"] == "user"


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_request_given_as_its_json_form_is_read_as_before() -> None:
    # A replayed event's request is its JSON form: the same attributes as the request object's.
    recorder, exporter = _recorder()
    recorder.record(Event("run.started", run_id="r", time=0.0, data={"agent": "a", "model": "m"}))
    request = {"messages": [{"role": "user", "content": "hi"}], "model": "x", "max_tokens": 9, "stop": "END"}
    recorder.record(Event("llm.request", run_id="r", time=1.0, step=0, data={"request": request}))
    recorder.record(Event("run.finished", run_id="r", time=2.0, data={}))
    (chat,) = _chats(exporter)
    attrs = dict(chat.attributes or {})
    assert chat.name == "chat x" and attrs["gen_ai.request.max_tokens"] == 9
    assert attrs["gen_ai.request.stop_sequences"] == ("END",)
    assert "gen_ai.request.temperature" not in attrs
