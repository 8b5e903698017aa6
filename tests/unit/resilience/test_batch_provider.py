"""BatchProvider's timing on virtual time: the window, max_requests, the poll cadence, a driver handing over.

The vendor is an in-memory fake of OpenAI's Batch API behind ``httpx.MockTransport`` (no socket, so the
autojumping clocks apply): it notes the virtual time of each submission and status read.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest

from agentactors import BatchProvider, LLMRequest, LLMResponse, Message, OpenAIProvider
from agentactors.resilience.batch import BatchError

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class FakeBatches:
    """OpenAI's Files + Batch API, in memory; each batch completes on its ``polls + 1``-th status read."""

    def __init__(self, polls: int = 0, failing_reads: int = 0) -> None:
        self.polls = polls
        self.failing_reads = failing_reads
        self.lines: dict[str, list[dict[str, Any]]] = {}
        self.submitted: list[tuple[float, int]] = []  # (time, lines)
        self.reads: list[float] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/v1/files":
            body = request.read().decode()
            lines = [json.loads(t) for t in body.splitlines() if t.startswith('{"custom_id"')]
            self.lines[f"file-{len(self.lines)}"] = lines
            return httpx.Response(200, json={"id": f"file-{len(self.lines) - 1}"})
        if path == "/v1/batches":
            file_id = json.loads(request.read())["input_file_id"]
            self.submitted.append((anyio.current_time(), len(self.lines[file_id])))
            return httpx.Response(200, json={"id": f"batch-{file_id}", "status": "validating"})
        if path.startswith("/v1/batches/"):
            self.reads.append(anyio.current_time())
            if self.failing_reads:
                self.failing_reads -= 1
                return httpx.Response(503, json={"error": {"message": "busy", "type": "server_error"}})
            batch_id = path.rsplit("/", 1)[1]
            done = sum(1 for _ in self.reads) > self.polls
            return httpx.Response(200, json={"id": batch_id, "status": "completed" if done else "in_progress",
                                             "output_file_id": batch_id.removeprefix("batch-") if done else None})
        if path.endswith("/content"):
            file_id = path.split("/")[3]
            out = [json.dumps({"custom_id": line["custom_id"], "response": {"status_code": 200, "body": _answer(line)}})
                   for line in self.lines[file_id]]
            return httpx.Response(200, content="\n".join(out).encode())
        return httpx.Response(404, json={"error": {"message": "no such endpoint"}})


def _answer(line: dict[str, Any]) -> dict[str, Any]:
    text = line["body"]["messages"][-1]["content"]
    return {"id": "c", "object": "chat.completion", "model": line["body"]["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": f"Echo: {text}"},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}


def provider(fake: FakeBatches, **options: Any) -> BatchProvider:
    client = httpx.AsyncClient(transport=httpx.MockTransport(fake.handler))
    inner = OpenAIProvider("gpt-4o-mini", api_key="sk-unit-key-000", base_url="https://api.openai.com/v1",
                           http_client=client)
    return BatchProvider(inner, **options)


async def ask(p: BatchProvider, text: str, after: float = 0.0, into: list[Any] | None = None) -> None:
    await anyio.sleep(after)
    answer = await p.complete(LLMRequest([Message.user(text)]))
    if into is not None:
        into.append((anyio.current_time(), answer))


async def test_calls_wait_out_the_window_then_go_as_one_batch_polled_every_poll_every(anyio_backend: Any) -> None:
    fake = FakeBatches(polls=2)
    p = provider(fake, window=5.0, poll_every=30.0)
    answers: list[Any] = []
    async with anyio.create_task_group() as tg:
        for i, after in enumerate((0.0, 1.0, 4.5)):
            tg.start_soon(ask, p, f"q{i}", after, answers)
    assert fake.submitted == [(5.0, 3)]  # the window starts with the first call
    assert fake.reads == [35.0, 65.0, 95.0]  # one poll_every after submitting, then every poll_every
    assert sorted(a.content for _, a in answers) == ["Echo: q0", "Echo: q1", "Echo: q2"]
    assert {t for t, _ in answers} == {95.0}


async def test_max_requests_submits_a_full_batch_at_once(anyio_backend: Any) -> None:
    fake = FakeBatches()
    p = provider(fake, window=60.0, max_requests=2, poll_every=10.0)
    async with anyio.create_task_group() as tg:
        for i in range(3):
            tg.start_soon(ask, p, f"q{i}")
    assert fake.submitted == [(0.0, 2), (60.0, 1)]  # the full one at once, the rest after its window


async def test_a_call_arriving_after_a_submission_opens_the_next_window(anyio_backend: Any) -> None:
    fake = FakeBatches()
    p = provider(fake, window=5.0, poll_every=10.0)
    async with anyio.create_task_group() as tg:
        tg.start_soon(ask, p, "a", 0.0)
        tg.start_soon(ask, p, "b", 6.0)
    assert fake.submitted == [(5.0, 1), (11.0, 1)]


async def test_a_cancelled_driver_hands_the_batch_to_another_waiter(anyio_backend: Any) -> None:
    fake = FakeBatches(polls=3)
    p = provider(fake, window=1.0, poll_every=10.0)
    answers: list[Any] = []
    async with anyio.create_task_group() as tg:
        with anyio.move_on_after(15.0):  # the first caller drives: cancelled after submitting, mid-poll
            tg.start_soon(ask, p, "other", 0.5, answers)
            await ask(p, "driver")
    assert fake.submitted == [(1.0, 2)]
    assert fake.reads == [11.0, 21.0, 31.0, 41.0]  # the other waiter went on polling at the same cadence
    assert [a.content for _, a in answers] == ["Echo: other"]


async def test_a_call_cancelled_in_the_window_withdraws_its_line(anyio_backend: Any) -> None:
    fake = FakeBatches()
    p = provider(fake, window=5.0, poll_every=10.0)
    async with anyio.create_task_group() as tg:
        tg.start_soon(ask, p, "kept")
        with anyio.move_on_after(2.0):
            await ask(p, "withdrawn")
    assert fake.submitted == [(5.0, 1)]


async def test_transient_poll_failures_are_polled_through(anyio_backend: Any) -> None:
    fake = FakeBatches(failing_reads=2)
    p = provider(fake, window=0.0, poll_every=10.0)
    answers: list[Any] = []
    await ask(p, "q", into=answers)
    assert [a.content for _, a in answers] == ["Echo: q"]
    assert fake.reads == [10.0, 20.0, 30.0]


async def test_a_batch_that_cannot_be_read_fails_its_calls_with_a_retryable_batch_error(anyio_backend: Any) -> None:
    fake = FakeBatches(failing_reads=1_000)
    p = provider(fake, window=0.0, poll_every=10.0)
    with pytest.raises(BatchError) as failed:
        await p.complete(LLMRequest([Message.user("q")]))
    assert failed.value.reason == "poll" and failed.value.retryable
    assert len(fake.reads) == 10  # MAX_POLL_FAILURES reads, then it gave up


async def test_a_bad_request_is_refused_before_anything_is_queued(anyio_backend: Any) -> None:
    fake = FakeBatches()
    p = provider(fake, window=5.0)
    bare = BatchProvider(OpenAIProvider(api_key="k-123456", base_url="https://api.openai.com/v1"))
    with pytest.raises(Exception) as refused:
        await bare.complete(LLMRequest([Message.user("no model")]))
    assert "model" in str(refused.value)
    assert fake.submitted == [] and isinstance(await _one(p), LLMResponse)


async def _one(p: BatchProvider) -> LLMResponse:
    return await p.complete(LLMRequest([Message.user("fine")]))
