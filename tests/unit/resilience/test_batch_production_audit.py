"""BatchProvider audited as a production job of thousands of prompts would use it (virtual time, both backends).

Each test pins a finding of the audit: a vendor whose status endpoint failed for a few minutes made every call of a
batch that was still running (and billing) give up — polled at ``poll_every`` without backing off, a ``Retry-After``
ignored; a status read that never answered kept its callers waiting past ``max_wait``; a call cancelled while its
batch was being uploaded counted as withdrawn (billed nothing) though its line had been sent; a request larger than
the vendor's limit on a batch was sent anyway, and the lines' envelopes were not counted against that limit.

The vendor is an in-memory fake of OpenAI's Files + Batch API (and Gemini's batch create) behind
``httpx.MockTransport`` (no socket, so the autojumping clocks apply).
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest

from agentactors import BatchProvider, GeminiProvider, LLMRequest, LLMResponse, Message, OpenAIProvider
from agentactors.pricing import take_cut_short
from agentactors.resilience.batch import BatchError

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

KEY = "sk-unit-secret-key-7777"


class Vendor:
    """OpenAI's Files + Batch API in memory; the batch ends on its ``polls + 1``-th good status read.

    :param failing: the status answers to give before the good ones: ``(status code, headers)`` each.
    :param hang_status: a status read never answers.  ``create_takes``: seconds the create request takes.
    """

    def __init__(self, *, polls: int = 0, failing: list[tuple[int, dict[str, str]]] | None = None,
                 hang_status: bool = False, create_takes: float = 0.0, fail: dict[str, Any] | None = None) -> None:
        self.polls, self.failing, self.fail = polls, list(failing or []), fail
        self.hang_status, self.create_takes = hang_status, create_takes
        self.lines: list[dict[str, Any]] = []
        self.reads: list[float] = []
        self.good_reads = 0
        self.uploads: list[int] = []  # bytes of each uploaded input file
        self.cancels: list[float] = []

    async def handler(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        assert request.headers.get("authorization") == f"Bearer {KEY}"
        if path == "/v1/files":
            body = await request.aread()
            self.uploads.append(len(body))
            self.lines = [json.loads(t) for t in body.decode().splitlines() if t.startswith('{"custom_id"')]
            return httpx.Response(200, json={"id": "file-in"})
        if path == "/v1/batches":
            await anyio.sleep(self.create_takes)
            return httpx.Response(200, json={"id": "batch-1", "status": "validating"})
        if path == "/v1/batches/batch-1/cancel":
            self.cancels.append(anyio.current_time())
            return httpx.Response(200, json={"id": "batch-1", "status": "cancelling"})
        if path == "/v1/batches/batch-1":
            self.reads.append(anyio.current_time())
            if self.hang_status:
                await anyio.sleep(10 * 24 * 3600)
            if self.failing:
                code, headers = self.failing.pop(0)
                return httpx.Response(code, headers=headers,
                                      json={"error": {"message": "busy", "type": "server_error"}})
            self.good_reads += 1
            if self.fail is not None:
                return httpx.Response(200, json={"id": "batch-1", "status": "failed", "errors": {
                    "object": "list", "data": [{**self.fail, "line": None, "param": None}]}})
            if self.good_reads <= self.polls:
                return httpx.Response(200, json={"id": "batch-1", "status": "in_progress"})
            return httpx.Response(200, json={"id": "batch-1", "status": "completed", "output_file_id": "file-out"})
        if path == "/v1/files/file-out/content":
            out = [json.dumps({"custom_id": line["custom_id"], "response": {"status_code": 200, "body": _echo(line)}})
                   for line in self.lines]
            return httpx.Response(200, content="\n".join(out).encode())
        return httpx.Response(404, json={"error": {"message": "no such endpoint"}})


def _echo(line: dict[str, Any]) -> dict[str, Any]:
    text = line["body"]["messages"][-1]["content"]
    return {"id": "c", "object": "chat.completion", "model": line["body"]["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": f"Echo: {text[:20]}"},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}


def _openai(vendor: Vendor, **options: Any) -> BatchProvider:
    client = httpx.AsyncClient(transport=httpx.MockTransport(vendor.handler))
    inner = OpenAIProvider("gpt-4o-mini", api_key=KEY, base_url="https://api.openai.com/v1", http_client=client)
    return BatchProvider(inner, **{"window": 0.0, "poll_every": 10.0, **options})


def _ask(text: str) -> LLMRequest:
    return LLMRequest([Message.user(text)])


# --- polling a vendor that is failing --------------------------------------------------------------------------


async def test_failed_polls_back_off_instead_of_giving_up_on_a_running_batch_within_minutes(
    anyio_backend: Any,
) -> None:
    # Five 503s in a row: the first two are retried at poll_every, then the wait doubles each time.  Before, ten
    # failures at poll_every (5 minutes at 30 s) failed every call of a batch still running — and billing.
    vendor = Vendor(failing=[(503, {})] * 5)
    p = _openai(vendor)
    answer = await p.complete(_ask("q"))
    assert isinstance(answer, LLMResponse) and answer.content == "Echo: q"
    assert vendor.reads == [10.0, 20.0, 30.0, 50.0, 90.0, 170.0]


async def test_a_vendors_retry_after_on_a_failed_poll_is_honoured(anyio_backend: Any) -> None:
    vendor = Vendor(failing=[(429, {"retry-after": "120"})])
    p = _openai(vendor)
    answer = await p.complete(_ask("q"))
    assert isinstance(answer, LLMResponse)
    assert vendor.reads == [10.0, 130.0]  # not 20.0: the vendor asked for two minutes


async def test_giving_up_on_an_unreadable_batch_takes_hours_of_backing_off_not_ten_polls_in_a_row(
    anyio_backend: Any,
) -> None:
    vendor = Vendor(failing=[(503, {})] * 1_000)
    p = _openai(vendor, poll_every=30.0)
    with pytest.raises(BatchError) as failed:
        await p.complete(_ask("q"))
    assert failed.value.reason == "poll" and failed.value.retryable and KEY not in str(failed.value)
    assert len(vendor.reads) == 10  # still MAX_POLL_FAILURES reads in a row...
    assert anyio.current_time() > 3600.0  # ...but spread over hours of backing off


async def test_collect_backs_off_and_honours_retry_after_too(anyio_backend: Any) -> None:
    vendor = Vendor(failing=[(503, {}), (503, {}), (503, {}), (429, {"retry-after": "300"})])
    p = _openai(vendor)
    vendor.lines = [{"custom_id": "aa0-x", "body": {"model": "gpt-4o-mini", "messages": [{"content": "q"}]}}]
    got = await p.collect("batch-1")
    assert isinstance(got["aa0-x"], LLMResponse)
    assert vendor.reads == [0.0, 10.0, 20.0, 40.0, 340.0]


# --- a batch the vendor failed ------------------------------------------------------------------------------


async def test_a_batch_failed_for_the_accounts_enqueued_token_limit_is_retryable(anyio_backend: Any) -> None:
    # OpenAI fails a batch whole when the organisation's enqueued-token limit is reached ("try again once some
    # in_progress batches have been completed"): nothing ran, nothing is billed, and a retry later is answered.
    # Before, every call of it — thousands — got a non-retryable request error.
    vendor = Vendor(fail={"code": "token_limit_exceeded",
                          "message": "Enqueued token limit reached for gpt-4o-mini in organization org-x."})
    p = _openai(vendor)
    with pytest.raises(BatchError) as failed:
        await p.complete(_ask("q"))
    error = failed.value
    assert error.reason == "failed" and error.retryable and error.kind == "transient"
    assert "Enqueued token limit" in str(error)


async def test_a_batch_failed_for_its_input_is_still_a_request_error(anyio_backend: Any) -> None:
    vendor = Vendor(fail={"code": "invalid_json_line", "message": "line 3 is not valid JSON"})
    p = _openai(vendor)
    with pytest.raises(BatchError) as failed:
        await p.complete(_ask("q"))
    assert failed.value.reason == "failed" and not failed.value.retryable and failed.value.kind == "request"


# --- a status read that never answers --------------------------------------------------------------------------


async def test_a_status_read_that_never_answers_does_not_outlast_max_wait(anyio_backend: Any) -> None:
    vendor = Vendor(hang_status=True)
    p = _openai(vendor, max_wait=600.0)
    with anyio.fail_after(5 * 24 * 3600):
        with pytest.raises(BatchError) as failed:
            await p.complete(_ask("q"))
    assert failed.value.reason == "timeout" and not failed.value.retryable
    assert vendor.cancels == [600.0]  # given up at max_wait, and cancelled at the vendor
    assert anyio.current_time() <= 600.0 + 60.0  # (the status read after the cancel hangs too: bounded)


# --- a call cancelled while its batch is being submitted --------------------------------------------------------


async def test_a_call_cancelled_while_its_batch_is_uploaded_is_billed_not_withdrawn(anyio_backend: Any) -> None:
    # The create request takes 20 s; "left" is cancelled 5 s into it.  Its line is in the batch the vendor makes
    # (and bills), so it is charged its prompt at the batch price — not counted as withdrawn for free.
    vendor = Vendor(create_takes=20.0)
    p = _openai(vendor, window=1.0)
    kept, left = _ask("kept"), _ask("left")
    answers: list[LLMResponse] = []

    async def keep() -> None:
        answers.append(await p.complete(kept))

    async with anyio.create_task_group() as tg:
        tg.start_soon(keep)
        with anyio.move_on_after(6.0):
            await anyio.sleep(0.5)  # "kept" drives the batch: "left" only waits on it
            await p.complete(left)
    assert sorted(line["body"]["messages"][-1]["content"] for line in vendor.lines) == ["kept", "left"]
    (billed,) = take_cut_short(left)
    assert billed.batch and billed.model == "gpt-4o-mini" and billed.input_tokens > 0
    assert [a.content for a in answers] == ["Echo: kept"]


# --- the vendors' limits on a batch's size ---------------------------------------------------------------------


class GeminiVendor:
    """Gemini's batch create, noting each create request's size (the batch then runs for ever: not needed)."""

    def __init__(self) -> None:
        self.creates: list[int] = []

    async def handler(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith(":batchGenerateContent"):
            self.creates.append(len(await request.aread()))
            return httpx.Response(200, json={"name": f"batches/b{len(self.creates)}", "done": False})
        return httpx.Response(200, json={"name": "batches/b", "done": False})


def _gemini(vendor: GeminiVendor, **options: Any) -> BatchProvider:
    client = httpx.AsyncClient(transport=httpx.MockTransport(vendor.handler))
    inner = GeminiProvider("gemini-2.0-flash", api_key=KEY, http_client=client)
    return BatchProvider(inner, **{"window": 1.0, "poll_every": 10.0, "max_wait": 60.0, **options})


async def test_a_request_larger_than_the_vendors_batch_limit_is_refused_before_anything_is_sent(
    anyio_backend: Any,
) -> None:
    vendor = GeminiVendor()
    p = _gemini(vendor)
    with pytest.raises(BatchError) as refused:
        await p.complete(_ask("x" * 21_000_000))  # Gemini's inline batches: 20 MB in all
    error = refused.value
    assert error.reason == "too_large" and not error.retryable and error.kind == "request"
    assert KEY not in str(error) and vendor.creates == []


async def test_the_lines_envelopes_count_against_the_vendors_limit_on_a_batch(anyio_backend: Any) -> None:
    # 600 requests of 33,300 bytes each: 19.98 MB of bodies, which fit in Gemini's 20 MB, but not with each line's
    # envelope ({"request": …, "metadata": {"key": …}}) around them — the batch is split in two, each under 20 MB.
    vendor = GeminiVendor()
    p = _gemini(vendor)
    with anyio.move_on_after(30.0):
        async with anyio.create_task_group() as tg:
            for i in range(600):
                tg.start_soon(p.complete, _ask(f"{i:04d}" + "y" * 33_244))
    assert len(vendor.creates) == 2 and max(vendor.creates) <= 20_000_000, vendor.creates
