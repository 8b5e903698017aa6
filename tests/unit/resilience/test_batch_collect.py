"""``BatchProvider.collect(batch_id)``: a submitted vendor batch read back by its id, with no journal (virtual time).

Before, a batch whose calls were gone — a process that died without a journal, callers that were cancelled, a
submission that ended ``BatchError("unconfirmed")`` and was then found in the vendor's list — could not be read by
``BatchProvider`` at all: its answers, paid for, were lost.  Now ``collect`` polls it (bounded by ``max_wait``), reads
its results as a waiting call would (streamed, the same bounds, the wire's own decoder) and returns each item's answer
or typed error by its custom id; the ids a user needs are in the events and errors.

The vendor is an in-memory fake of OpenAI's Files + Batch API behind ``httpx.MockTransport`` (no socket, so the
autojumping clocks apply).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest

from agentactors import (
    BatchProvider,
    LLMRequest,
    LLMResponse,
    Message,
    OpenAIProvider,
    ProviderError,
    pricing,
    with_timeout,
)
from agentactors.errors import ProviderTimeout
from agentactors.events import EventSink, FanOut, InMemoryRecorder, use_sink
from agentactors.pricing import take_cut_short
from agentactors.resilience.batch import BatchError

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

KEY = "sk-unit-secret-key-4242"


class Vendor:
    """OpenAI's Files + Batch API in memory: batch ``batch-N`` runs until ``finish()`` (or ``done_after`` reads).

    :param errors: texts answered with a 400 in the error file.  ``cut_after``: the output file breaks after this
    many lines.  ``fail``: the batch fails whole.  ``create``: ``"ok"`` or ``"drop"`` (created, then the connection
    drops before the id comes back).  ``pad``: bytes of padding in each answer (a big file, sent in chunks).
    """

    def __init__(self, *, done_after: int | None = None, errors: frozenset[str] = frozenset(),
                 cut_after: int | None = None, fail: bool = False, create: str = "ok", pad: int = 0,
                 overlong: frozenset[str] = frozenset()) -> None:
        self.done_after, self.errors, self.cut_after, self.fail = done_after, errors, cut_after, fail
        self.create, self.pad, self.overlong = create, pad, overlong
        self.lines: dict[str, list[dict[str, Any]]] = {}  # batch id -> its lines
        self.files: dict[str, list[dict[str, Any]]] = {}
        self.done: set[str] = set()
        self.reads: list[float] = []
        self.requests: list[str] = []  # "METHOD path" of each request

    def finish(self, batch_id: str) -> None:
        self.done.add(batch_id)

    def handler(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        self.requests.append(f"{request.method} {path}")
        assert request.headers.get("authorization") == f"Bearer {KEY}"
        if path == "/v1/files":
            body = request.read().decode()
            file_id = f"file-in-{len(self.files) + 1}"
            self.files[file_id] = [json.loads(t) for t in body.splitlines() if t.startswith('{"custom_id"')]
            return httpx.Response(200, json={"id": file_id})
        if path == "/v1/batches":
            batch_id = f"batch-{len(self.lines) + 1}"
            self.lines[batch_id] = self.files[json.loads(request.read())["input_file_id"]]
            if self.create == "drop":
                raise httpx.RemoteProtocolError("server disconnected without sending a response")
            return httpx.Response(200, json={"id": batch_id, "status": "validating"})
        if path.startswith("/v1/batches/"):
            batch_id = path.rsplit("/", 1)[-1]
            if batch_id not in self.lines:
                error = {"message": "No batch found", "type": "invalid_request_error"}
                return httpx.Response(404, json={"error": error})
            self.reads.append(anyio.current_time())
            if self.done_after is not None and len(self.reads) > self.done_after:
                self.done.add(batch_id)
            if batch_id not in self.done:
                return httpx.Response(200, json={"id": batch_id, "status": "in_progress"})
            if self.fail:
                return httpx.Response(200, json={"id": batch_id, "status": "failed", "errors": {
                    "data": [{"code": "invalid_file", "message": "the input file is not valid"}]}})
            return httpx.Response(200, json={"id": batch_id, "status": "completed", "output_file_id": f"out-{batch_id}",
                                             "error_file_id": f"err-{batch_id}" if self.errors else None})
        if path.startswith("/v1/files/out-"):
            return httpx.Response(200, content=self._output(path.split("/")[3].removeprefix("out-")))
        if path.startswith("/v1/files/err-"):
            batch_id = path.split("/")[3].removeprefix("err-")
            out = [json.dumps({"custom_id": line["custom_id"], "response": {"status_code": 400, "body": {
                "error": {"message": "bad", "type": "invalid_request_error"}}}})
                   for line in self.lines[batch_id] if _text(line) in self.errors]
            return httpx.Response(200, content="\n".join(out).encode())
        return httpx.Response(404, json={"error": {"message": "no such endpoint"}})

    async def _output(self, batch_id: str) -> AsyncIterator[bytes]:
        for number, line in enumerate(self.lines[batch_id]):
            if _text(line) in self.errors:
                continue
            if self.cut_after is not None and number >= self.cut_after:
                raise httpx.ReadError("connection reset by peer")
            pad = 10 * 1024 * 1024 if _text(line) in self.overlong else self.pad
            data = (json.dumps({"custom_id": line["custom_id"],
                                "response": {"status_code": 200, "body": _echo(line, pad)}}) + "\n").encode()
            for start in range(0, len(data), 4096):
                yield data[start:start + 4096]


def _text(line: dict[str, Any]) -> str:
    return str(line["body"]["messages"][-1]["content"])


def _echo(line: dict[str, Any], pad: int = 0) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "c", "object": "chat.completion", "model": line["body"]["model"],
        "choices": [{"index": 0, "message": {"role": "assistant", "content": f"Echo: {_text(line)}"},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}
    if pad:
        body["system_fingerprint"] = "x" * pad
    return body


def _batched(vendor: Vendor, **options: Any) -> BatchProvider:
    """A fresh BatchProvider (a fresh process, as far as the batch is concerned)."""
    client = httpx.AsyncClient(transport=httpx.MockTransport(vendor.handler))
    inner = OpenAIProvider("gpt-4o-mini", api_key=KEY, base_url="https://api.openai.com/v1", http_client=client,
                           max_response_bytes=options.pop("max_response_bytes", 64 * 1024 * 1024))
    return BatchProvider(inner, **{"window": 1.0, "poll_every": 10.0, **options})


def _ask(text: str) -> LLMRequest:
    return LLMRequest([Message.user(text)])


async def _submitted_then_abandoned(vendor: Vendor, texts: list[str]) -> tuple[list[Any], BatchProvider]:
    """Each text asked through one BatchProvider, every call cancelled once its batch was submitted (the process
    that asked is gone); the events they emitted, and the provider."""
    recorder = InMemoryRecorder()
    p = _batched(vendor)
    with use_sink(EventSink(FanOut([recorder]), run_id="r")):
        async with anyio.create_task_group() as tg:
            for text in texts:
                tg.start_soon(p.complete, _ask(text))
            await anyio.sleep(5.0)  # past the window: submitted, and polled in vain
            tg.cancel_scope.cancel()
    return recorder.events, p


async def test_a_batch_whose_callers_left_is_collected_by_its_id_each_answer_under_its_custom_id(
    anyio_backend: Any,
) -> None:
    vendor = Vendor(errors=frozenset({"bad"}))
    events, first = await _submitted_then_abandoned(vendor, ["a", "b", "bad"])
    left = [e for e in events if e.type == "batch.left"]
    assert {e.data["batch_id"] for e in left} == {"batch-1"} and len(left) == 3  # where each answer is
    vendor.finish("batch-1")

    collector = _batched(vendor)  # another BatchProvider: nothing of the first one's state
    got = await collector.collect("batch-1")
    assert {e.data["custom_id"] for e in left} == set(got)
    answers = {key: value for key, value in got.items() if isinstance(value, LLMResponse)}
    assert sorted(a.content for a in answers.values()) == ["Echo: a", "Echo: b"]
    for key, answer in answers.items():
        assert answer.provider_data is not None and answer.provider_data["batch"] == {"id": "batch-1", "custom_id": key}
        assert answer.usage.input_tokens == 5 and answer.model == "gpt-4o-mini"
    (bad,) = [value for value in got.values() if not isinstance(value, LLMResponse)]
    assert isinstance(bad, ProviderError) and bad.status == 400  # as the wire classifies the item's error
    # The answers map back to the requests that asked them; at the batch price.
    for text in ("a", "b"):
        (key,) = [key for key in answers if collector.is_item_of(key, _ask(text))]
        assert answers[key].content == f"Echo: {text}"
    pricing.set_price("openai", "gpt-4o-mini", pricing.Price(1.0, 1.0))
    try:
        cost = pricing.response_cost(next(iter(answers.values())))
        assert cost is not None and cost.total == pytest.approx(7 * 0.5 / 1e6)
    finally:
        pricing.clear_prices()
    assert [r for r in vendor.requests if r.startswith("POST")] == ["POST /v1/files", "POST /v1/batches"]  # no resend
    assert not first.is_item_of(next(iter(answers)), _ask("another question"))


async def test_collect_polls_a_running_batch_every_poll_every_until_it_ends(anyio_backend: Any) -> None:
    vendor = Vendor()
    await _submitted_then_abandoned(vendor, ["a"])
    vendor.reads.clear()
    vendor.done_after = 3  # the 4th read finds it done
    start = anyio.current_time()
    got = await _batched(vendor, poll_every=60.0).collect("batch-1")
    assert [t - start for t in vendor.reads] == [0.0, 60.0, 120.0, 180.0]  # read at once, then every poll_every
    assert [a.content for a in got.values() if isinstance(a, LLMResponse)] == ["Echo: a"]


async def test_collect_gives_up_after_max_wait_and_leaves_the_batch_running(anyio_backend: Any) -> None:
    vendor = Vendor()
    await _submitted_then_abandoned(vendor, ["a"])
    start = anyio.current_time()
    with pytest.raises(BatchError) as failed:
        await _batched(vendor, poll_every=60.0).collect("batch-1", max_wait=150.0)
    error = failed.value
    assert error.reason == "timeout" and not error.retryable and error.batch_id == "batch-1"
    assert anyio.current_time() - start == 150.0  # read once more at the deadline
    assert not any(r.endswith("/cancel") for r in vendor.requests)  # a collector never cancels it
    vendor.finish("batch-1")
    assert len(await _batched(vendor).collect("batch-1")) == 1  # collected later


async def test_collect_streams_the_results_file_within_the_same_bounds(anyio_backend: Any) -> None:
    # Larger than 16 x max_response_bytes as a whole, read a line at a time; an overlong line is skipped (its item
    # is not in the answers) and the others are kept.
    vendor = Vendor(pad=2000, overlong=frozenset({"huge"}))
    texts = [f"q{i}" for i in range(40)] + ["huge"]
    await _submitted_then_abandoned(vendor, texts)
    vendor.finish("batch-1")
    got = await _batched(vendor, max_response_bytes=4096).collect("batch-1")
    assert sorted(a.content for a in got.values() if isinstance(a, LLMResponse)) == sorted(f"Echo: {t}" for t in texts
                                                                                          if t != "huge")
    assert len(got) == 40


async def test_a_results_file_broken_part_way_fails_the_collection_retryably(anyio_backend: Any) -> None:
    vendor = Vendor(cut_after=1)
    await _submitted_then_abandoned(vendor, ["a", "b", "c"])
    vendor.finish("batch-1")
    with pytest.raises(BatchError) as failed:
        await _batched(vendor).collect("batch-1")
    assert failed.value.reason == "poll" and failed.value.retryable and failed.value.batch_id == "batch-1"
    assert KEY not in str(failed.value)


async def test_a_failed_batch_and_an_unknown_one_are_typed_errors(anyio_backend: Any) -> None:
    vendor = Vendor(fail=True)
    await _submitted_then_abandoned(vendor, ["a"])
    vendor.finish("batch-1")
    with pytest.raises(BatchError) as failed:
        await _batched(vendor).collect("batch-1")
    assert failed.value.reason == "failed" and "input file is not valid" in str(failed.value)
    with pytest.raises(ProviderError) as unknown:
        await _batched(vendor).collect("batch-404")
    assert unknown.value.status == 404 and not isinstance(unknown.value, BatchError)
    assert KEY not in str(unknown.value)


@pytest.mark.parametrize("batch_id", ["", "../files/file-1/content", "batch-1?x=1", "a/b", "batch 1", None, 7])
async def test_a_batch_id_that_is_not_one_is_refused_before_anything_is_sent(anyio_backend: Any, batch_id: Any) -> None:
    vendor = Vendor()
    with pytest.raises(ValueError, match="batch_id"):
        await _batched(vendor).collect(batch_id)
    assert vendor.requests == []


@pytest.mark.parametrize("max_wait", [0, -1.0, float("nan"), float("inf"), True, "60"])
async def test_a_bad_max_wait_is_refused(anyio_backend: Any, max_wait: Any) -> None:
    with pytest.raises(ValueError, match="max_wait"):
        await _batched(Vendor()).collect("batch-1", max_wait=max_wait)


async def test_an_unconfirmed_submission_says_how_to_find_and_collect_its_batch(anyio_backend: Any) -> None:
    # The create request reached the vendor (it made batch-1), but its answer was lost: the error names the input
    # file the vendor's batch list shows, and the item of this request; collect then reads its answer.
    vendor = Vendor(create="drop")
    p = _batched(vendor)
    with pytest.raises(BatchError) as failed:
        await p.complete(_ask("hi"))
    error = failed.value
    assert error.reason == "unconfirmed" and error.batch_id is None and error.custom_id is not None
    assert "file-in-1" in str(error) and error.custom_id in str(error) and "collect" in str(error)
    vendor.finish("batch-1")
    got = await p.collect("batch-1")
    answer = got[error.custom_id]
    assert isinstance(answer, LLMResponse) and answer.content == "Echo: hi"


async def test_a_timeout_above_a_batch_keeps_the_batch_providers_word_on_what_is_billed(anyio_backend: Any) -> None:
    # Timed out after its batch was submitted: its item is billed at the batch price, as the BatchProvider noted —
    # not the timeout's own live-price estimate.  Timed out inside the window: withdrawn, nothing is billed.
    submitted, withdrawn = _ask("late"), _ask("early")
    with pytest.raises(ProviderTimeout):
        await with_timeout(_batched(Vendor()), attempt=3.0).complete(submitted)
    (billed,) = take_cut_short(submitted)
    assert billed.batch and billed.provider == "openai" and billed.model == "gpt-4o-mini" and billed.input_tokens > 0
    vendor = Vendor()
    with pytest.raises(ProviderTimeout):
        await with_timeout(_batched(vendor, window=5.0), attempt=2.0).complete(withdrawn)
    assert take_cut_short(withdrawn) == () and vendor.requests == []
