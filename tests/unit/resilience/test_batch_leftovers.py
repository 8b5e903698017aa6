"""Leftovers of the batch audits (virtual time, both backends): reading a finished batch's results is bounded.

A results file that stops sending part way — a vendor's stalled connection, with a client built with
``timeout=None`` — kept every call of the batch (and :meth:`BatchProvider.collect`) waiting for ever: the read was
bounded only by the HTTP client's read timeout.  It is bounded now by the rest of ``max_wait`` and at least
``RESULTS_BOUND``; the answers read before are kept, the others get a typed, retryable ``BatchError("poll")``.

The vendors are in-memory fakes behind ``httpx.MockTransport`` (no socket, so the autojumping clocks apply).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest

from agentactors import AnthropicProvider, BatchProvider, LLMRequest, LLMResponse, Message, OpenAIProvider
from agentactors.resilience.batch import BatchError
from agentactors.resilience.batch.provider import RESULTS_BOUND

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

KEY = "sk-unit-secret-key-5151"
FOREVER = 30 * 24 * 3600.0


def _chat(text: str, model: str) -> dict[str, Any]:
    return {"id": "c", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": f"Echo: {text}"},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}


class StallingOpenAI:
    """OpenAI's Files + Batch API in memory: the batch ends at once; its output file sends ``sent`` lines, then
    stalls (no more bytes, the connection open) — for ever."""

    def __init__(self, sent: int) -> None:
        self.sent = sent
        self.lines: list[dict[str, Any]] = []
        self.done_at: float | None = None

    def handler(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/v1/files":
            body = request.read().decode()
            self.lines = [json.loads(t) for t in body.splitlines() if t.startswith('{"custom_id"')]
            return httpx.Response(200, json={"id": "file-in"})
        if path == "/v1/batches":
            return httpx.Response(200, json={"id": "batch-1", "status": "validating"})
        if path == "/v1/batches/batch-1":
            self.done_at = anyio.current_time()
            return httpx.Response(200, json={"id": "batch-1", "status": "completed", "output_file_id": "file-out"})
        if path == "/v1/files/file-out/content":
            return httpx.Response(200, content=self._output())
        return httpx.Response(404, json={"error": {"message": "no such endpoint"}})

    async def _output(self) -> AsyncIterator[bytes]:
        for line in self.lines[: self.sent]:
            text = line["body"]["messages"][-1]["content"]
            body = {"status_code": 200, "body": _chat(text, line["body"]["model"])}
            yield (json.dumps({"custom_id": line["custom_id"], "response": body}) + "\n").encode()
        await anyio.sleep(FOREVER)  # the connection stays open, and nothing more comes
        yield b""


def _openai(vendor: StallingOpenAI, **options: Any) -> BatchProvider:
    client = httpx.AsyncClient(transport=httpx.MockTransport(vendor.handler), timeout=None)
    inner = OpenAIProvider("gpt-4o-mini", api_key=KEY, base_url="https://api.openai.com/v1", http_client=client)
    return BatchProvider(inner, **{"window": 1.0, "poll_every": 10.0, **options})


async def _all(p: BatchProvider, texts: list[str]) -> dict[str, LLMResponse | BaseException]:
    got: dict[str, LLMResponse | BaseException] = {}

    async def one(text: str) -> None:
        try:
            got[text] = await p.complete(LLMRequest([Message.user(text)]))
        except Exception as exc:
            got[text] = exc

    with anyio.fail_after(FOREVER / 2):  # (fails the test, rather than hanging it, should the read not be bounded)
        async with anyio.create_task_group() as tg:
            for text in texts:
                tg.start_soon(one, text)
    return got


def _stalled(error: BaseException | LLMResponse) -> bool:
    return (isinstance(error, BatchError) and error.reason == "poll" and error.retryable
            and error.batch_id == "batch-1" and "results" in str(error) and KEY not in str(error))


async def test_a_results_file_that_stalls_is_bounded_and_keeps_the_answers_read(anyio_backend: Any) -> None:
    vendor = StallingOpenAI(sent=2)
    p = _openai(vendor, max_wait=600.0)
    got = await _all(p, ["a", "b", "c", "d"])
    answered = sorted(t for t, answer in got.items() if isinstance(answer, LLMResponse))
    assert len(answered) == 2 and all(got[t].content == f"Echo: {t}" for t in answered)  # type: ignore[union-attr]
    for text in set("abcd") - set(answered):
        assert _stalled(got[text]), got[text]
    # The batch ended at its first poll (10 s in, after the 1 s window): the read had the rest of max_wait, and at
    # least RESULTS_BOUND — never for ever.
    assert vendor.done_at is not None
    assert anyio.current_time() == pytest.approx(vendor.done_at + max(RESULTS_BOUND, 600.0 - vendor.done_at))


async def test_a_results_file_that_stalls_takes_the_rest_of_a_long_max_wait(anyio_backend: Any) -> None:
    vendor = StallingOpenAI(sent=1)
    p = _openai(vendor, max_wait=10 * RESULTS_BOUND)
    got = await _all(p, ["a", "b"])
    assert sum(isinstance(answer, LLMResponse) for answer in got.values()) == 1
    assert vendor.done_at is not None
    assert anyio.current_time() == pytest.approx(1.0 + 10 * RESULTS_BOUND)  # submitted at 1 s: max_wait from then


async def test_collect_of_a_batch_whose_results_file_stalls_is_bounded(anyio_backend: Any) -> None:
    vendor = StallingOpenAI(sent=1)
    vendor.lines = [{"custom_id": f"aa{i}-x", "body": {"model": "gpt-4o-mini", "messages": [{"content": f"q{i}"}]}}
                    for i in range(3)]
    p = _openai(vendor)
    with anyio.fail_after(FOREVER / 2), pytest.raises(BatchError) as failed:
        await p.collect("batch-1", max_wait=60.0)
    assert failed.value.reason == "poll" and failed.value.retryable and "results" in str(failed.value)
    assert anyio.current_time() == pytest.approx(RESULTS_BOUND)


class StallingAnthropic:
    """Anthropic's Message Batches in memory: ended at once; its results send one line, then stall."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/v1/messages/batches":
            self.requests = json.loads(request.read())["requests"]
            return httpx.Response(200, json={"id": "msgbatch_1", "processing_status": "in_progress"})
        if path == "/v1/messages/batches/msgbatch_1":
            return httpx.Response(200, json={
                "id": "msgbatch_1", "processing_status": "ended", "cancel_initiated_at": None,
                "results_url": "https://api.anthropic.com/v1/messages/batches/msgbatch_1/results"})
        if path == "/v1/messages/batches/msgbatch_1/results":
            return httpx.Response(200, content=self._results())
        return httpx.Response(404, json={"type": "error", "error": {"type": "not_found_error", "message": "no"}})

    async def _results(self) -> AsyncIterator[bytes]:
        item = self.requests[0]
        text = item["params"]["messages"][-1]["content"]
        text = text if isinstance(text, str) else text[0]["text"]
        message = {"id": "msg_1", "type": "message", "role": "assistant", "model": item["params"]["model"],
                   "content": [{"type": "text", "text": f"Echo: {text}"}], "stop_reason": "end_turn",
                   "usage": {"input_tokens": 5, "output_tokens": 2}}
        yield (json.dumps({"custom_id": item["custom_id"], "result": {"type": "succeeded", "message": message}})
               + "\n").encode()
        await anyio.sleep(FOREVER)
        yield b""


async def test_an_anthropic_results_file_that_stalls_is_bounded_too(anyio_backend: Any) -> None:
    vendor = StallingAnthropic()
    client = httpx.AsyncClient(transport=httpx.MockTransport(vendor.handler), timeout=None)
    inner = AnthropicProvider("claude-sonnet-4-5", api_key=KEY, base_url="https://api.anthropic.com",
                              http_client=client)
    got = await _all(BatchProvider(inner, window=1.0, poll_every=10.0, max_wait=60.0), ["first", "second"])
    assert sum(isinstance(answer, LLMResponse) for answer in got.values()) == 1
    (error,) = [answer for answer in got.values() if not isinstance(answer, LLMResponse)]
    assert isinstance(error, BatchError) and error.reason == "poll" and error.retryable
    assert anyio.current_time() == pytest.approx(11.0 + RESULTS_BOUND)
