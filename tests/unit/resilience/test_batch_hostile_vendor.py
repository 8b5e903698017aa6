"""BatchProvider against a hostile vendor (second review of the cost features): on virtual time, both backends.

Each test pins a failure found by the review: a results file larger than the old whole-file read limit lost
every answer; a file that broke part way (or an error file that could not be read) lost the answers already
read; a batch the vendor never ended kept its callers waiting for ever; Anthropic's items missing from an
ended batch were reported expired; ``poll_every=0`` polled in a loop without a pause.

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

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

KEY = "sk-unit-secret-key-4242"


def _echo(line: dict[str, Any], pad: int = 0) -> dict[str, Any]:
    text = line["body"]["messages"][-1]["content"]
    body = {"id": "c", "object": "chat.completion", "model": line["body"]["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": f"Echo: {text}"},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}
    if pad:
        body["system_fingerprint"] = "x" * pad
    return body


class OpenAIVendor:
    """OpenAI's Files + Batch API in memory, with hostile results files.

    :param pad: bytes of padding in each answered line (a big results file, streamed to the client in chunks).
    :param overlong: the texts whose answer line is far longer than any answer may be.
    :param cut_after: the output file breaks (a transport error) after this many lines.
    :param errors: the texts answered in the error file (a 400), which cannot be read when ``error_file_fails``.
    :param done: the batch ever ends; ``ends_on_cancel``: a cancel ends it (``cancelled``, answers kept).
    """

    def __init__(self, *, pad: int = 0, overlong: frozenset[str] = frozenset(), cut_after: int | None = None,
                 errors: frozenset[str] = frozenset(), error_file_fails: bool = False, done: bool = True,
                 ends_on_cancel: bool = False, answered_before_cancel: frozenset[str] = frozenset(),
                 cancel_fails: bool = False) -> None:
        self.pad, self.overlong, self.cut_after = pad, overlong, cut_after
        self.errors, self.error_file_fails = errors, error_file_fails
        self.done, self.ends_on_cancel, self.answered_before_cancel = done, ends_on_cancel, answered_before_cancel
        self.cancel_fails = cancel_fails
        self.lines: list[dict[str, Any]] = []
        self.cancels: list[float] = []
        self.reads: list[float] = []
        self.sent_bytes = 0
        self.largest_chunk = 0

    def handler(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/v1/files":
            body = request.read().decode()
            self.lines = [json.loads(t) for t in body.splitlines() if t.startswith('{"custom_id"')]
            return httpx.Response(200, json={"id": "file-in"})
        if path == "/v1/batches":
            return httpx.Response(200, json={"id": "batch-1", "status": "validating"})
        if path == "/v1/batches/batch-1/cancel":
            self.cancels.append(anyio.current_time())
            if self.cancel_fails:
                return httpx.Response(500, json={"error": {"message": f"down ({KEY})", "type": "server_error"}})
            return httpx.Response(200, json={"id": "batch-1", "status": "cancelling"})
        if path == "/v1/batches/batch-1":
            self.reads.append(anyio.current_time())
            if self.cancels and self.ends_on_cancel:
                return httpx.Response(200, json={"id": "batch-1", "status": "cancelled", "output_file_id": "file-out"})
            if not self.done:
                return httpx.Response(200, json={"id": "batch-1", "status": "in_progress"})
            return httpx.Response(200, json={"id": "batch-1", "status": "completed", "output_file_id": "file-out",
                                             "error_file_id": "file-err" if self.errors else None})
        if path == "/v1/files/file-out/content":
            return httpx.Response(200, content=self._output())
        if path == "/v1/files/file-err/content":
            if self.error_file_fails:
                return httpx.Response(503, json={"error": {"message": "busy", "type": "server_error"}})
            out = [json.dumps({"custom_id": line["custom_id"],
                               "response": {"status_code": 400,
                                            "body": {"error": {"message": "bad", "type": "invalid_request_error"}}}})
                   for line in self.lines if line["body"]["messages"][-1]["content"] in self.errors]
            return httpx.Response(200, content="\n".join(out).encode())
        return httpx.Response(404, json={"error": {"message": "no such endpoint"}})

    async def _output(self) -> AsyncIterator[bytes]:
        for number, line in enumerate(self.lines):
            text = line["body"]["messages"][-1]["content"]
            if text in self.errors:
                continue
            if self.cancels and text not in self.answered_before_cancel:
                continue
            if self.cut_after is not None and number >= self.cut_after:
                raise httpx.ReadError("connection reset by peer")
            pad = 10 * 1024 * 1024 if text in self.overlong else self.pad
            data = (json.dumps({"custom_id": line["custom_id"],
                                "response": {"status_code": 200, "body": _echo(line, pad)}}) + "\n").encode()
            for start in range(0, len(data), 4096):  # as a socket would deliver it
                chunk = data[start:start + 4096]
                self.sent_bytes += len(chunk)
                self.largest_chunk = max(self.largest_chunk, len(chunk))
                yield chunk


def _openai(vendor: OpenAIVendor, **options: Any) -> BatchProvider:
    client = httpx.AsyncClient(transport=httpx.MockTransport(vendor.handler))
    inner = OpenAIProvider("gpt-4o-mini", api_key=KEY, base_url="https://api.openai.com/v1", http_client=client,
                           max_response_bytes=options.pop("max_response_bytes", 64 * 1024 * 1024))
    return BatchProvider(inner, **{"window": 1.0, "poll_every": 10.0, **options})


async def _all(p: BatchProvider, texts: list[str]) -> dict[str, LLMResponse | BaseException]:
    got: dict[str, LLMResponse | BaseException] = {}

    async def one(text: str) -> None:
        try:
            got[text] = await p.complete(LLMRequest([Message.user(text)]))
        except Exception as exc:
            got[text] = exc

    with anyio.fail_after(10 * 24 * 3600):
        async with anyio.create_task_group() as tg:
            for text in texts:
                tg.start_soon(one, text)
    assert set(got) == set(texts)
    return got


def _answered(got: dict[str, LLMResponse | BaseException], text: str) -> bool:
    answer = got[text]
    return isinstance(answer, LLMResponse) and answer.content == f"Echo: {text}"


# --- a results file: huge, with an overlong line, broken part way ---------------------------------------------


async def test_a_results_file_past_the_old_whole_file_limit_is_streamed_and_every_answer_delivered(
    anyio_backend: Any,
) -> None:
    # The whole file was read into memory up to 16 x max_response_bytes, and past it every call of the batch
    # failed with ResponseTooLargeError — every answer, paid for, lost.  Streamed, a line at a time, each call
    # gets its answer however large the file is.
    vendor = OpenAIVendor(pad=2000)
    texts = [f"q{i}" for i in range(60)]
    p = _openai(vendor, max_response_bytes=4096)  # the old limit: 64 KiB for the whole file
    got = await _all(p, texts)
    assert vendor.sent_bytes > 16 * 4096
    assert all(_answered(got, text) for text in texts), [got[t] for t in texts if not _answered(got, t)][:1]


async def test_an_overlong_results_line_fails_only_its_own_call(anyio_backend: Any) -> None:
    # A line longer than any answer may be (2 x max_response_bytes) is skipped, not read whole nor raised.
    vendor = OpenAIVendor(overlong=frozenset({"huge"}))
    p = _openai(vendor, max_response_bytes=64 * 1024)
    got = await _all(p, ["a", "huge", "b"])
    assert _answered(got, "a") and _answered(got, "b")
    huge = got["huge"]
    assert isinstance(huge, BatchError) and huge.reason == "missing" and huge.retryable


async def test_a_results_file_broken_part_way_keeps_the_answers_read_before(anyio_backend: Any) -> None:
    # The connection drops after two lines: those two calls have their (paid) answers; the others get a
    # retryable BatchError('poll') naming the batch — before, every call of the batch got it.
    vendor = OpenAIVendor(cut_after=2)
    p = _openai(vendor)
    got = await _all(p, ["a", "b", "c", "d"])
    answered = [t for t in "abcd" if _answered(got, t)]
    assert len(answered) == 2, got
    for text in set("abcd") - set(answered):
        error = got[text]
        assert isinstance(error, BatchError) and error.reason == "poll" and error.retryable
        assert error.batch_id == "batch-1"


async def test_an_unreadable_error_file_keeps_the_output_files_answers(anyio_backend: Any) -> None:
    vendor = OpenAIVendor(errors=frozenset({"bad"}), error_file_fails=True)
    p = _openai(vendor)
    got = await _all(p, ["a", "bad", "b"])
    assert _answered(got, "a") and _answered(got, "b")
    bad = got["bad"]
    assert isinstance(bad, BatchError) and bad.reason == "poll" and bad.retryable


# --- a batch that never ends ----------------------------------------------------------------------------------


async def test_a_batch_the_vendor_never_ends_fails_its_calls_after_max_wait_and_is_cancelled(
    anyio_backend: Any,
) -> None:
    vendor = OpenAIVendor(done=False)
    p = _openai(vendor, max_wait=3600.0)
    got = await _all(p, ["a", "b"])
    for text in "ab":
        error = got[text]
        assert isinstance(error, BatchError) and error.reason == "timeout" and not error.retryable
        assert error.batch_id == "batch-1" and KEY not in str(error)
    assert vendor.cancels == [3601.0]  # submitted at 1.0 (the window), given up an hour later
    assert vendor.reads[-1] == 3601.0  # read once more after the cancel


async def test_a_batch_that_cannot_be_cancelled_after_max_wait_still_fails_its_calls_at_once(
    anyio_backend: Any, caplog: pytest.LogCaptureFixture,
) -> None:
    vendor = OpenAIVendor(done=False, cancel_fails=True)
    p = _openai(vendor, max_wait=3600.0)
    got = await _all(p, ["a"])
    error = got["a"]
    assert isinstance(error, BatchError) and error.reason == "timeout" and anyio.current_time() == 3601.0
    assert "cancelling it failed" in caplog.text and KEY not in caplog.text


async def test_a_batch_cancelled_after_max_wait_delivers_what_it_answered_before(anyio_backend: Any) -> None:
    vendor = OpenAIVendor(done=False, ends_on_cancel=True, answered_before_cancel=frozenset({"a"}))
    p = _openai(vendor, max_wait=3600.0)
    got = await _all(p, ["a", "b"])
    assert _answered(got, "a")
    b = got["b"]
    assert isinstance(b, BatchError) and b.reason == "cancelled"


async def test_the_default_max_wait_bounds_every_call(anyio_backend: Any) -> None:
    vendor = OpenAIVendor(done=False)
    p = _openai(vendor, poll_every=600.0)  # 288 polls to the bound, not 17,280 (seconds of CPU on virtual time)
    assert p.max_wait == 48 * 3600.0
    got = await _all(p, ["a"])
    assert isinstance(got["a"], BatchError) and got["a"].reason == "timeout"


@pytest.mark.parametrize("options", [
    {"poll_every": 0}, {"poll_every": 0.0}, {"max_wait": 0}, {"max_wait": -1.0}, {"max_wait": float("nan")},
    {"max_wait": float("inf")}, {"max_wait": True}, {"max_wait": "3600"},
])
def test_bad_timings_are_refused_when_made(options: dict[str, Any]) -> None:
    inner = OpenAIProvider("gpt-4o-mini", api_key=KEY, base_url="https://api.openai.com/v1")
    with pytest.raises(ValueError, match=next(iter(options))):
        BatchProvider(inner, **options)


# --- Anthropic: an ended batch without a line for a request ---------------------------------------------------


class AnthropicVendor:
    """Anthropic's Message Batches in memory: the batch ends at once; its results leave out ``dropped``."""

    def __init__(self, dropped: frozenset[str]) -> None:
        self.dropped = dropped
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
            out = []
            for item in self.requests:
                text = item["params"]["messages"][-1]["content"]
                text = text if isinstance(text, str) else text[0]["text"]
                if text in self.dropped:
                    continue
                message = {"id": "msg_1", "type": "message", "role": "assistant", "model": item["params"]["model"],
                           "content": [{"type": "text", "text": f"Echo: {text}"}], "stop_reason": "end_turn",
                           "usage": {"input_tokens": 5, "output_tokens": 2}}
                out.append(json.dumps({"custom_id": item["custom_id"],
                                       "result": {"type": "succeeded", "message": message}}))
            return httpx.Response(200, content="\n".join(out).encode())
        return httpx.Response(404, json={"type": "error", "error": {"type": "not_found_error", "message": "no"}})


async def test_an_anthropic_item_missing_from_an_ended_batch_is_missing_not_expired(anyio_backend: Any) -> None:
    # Anthropic's results hold a line for every request, an expired one too: a request without one is missing
    # (its line lost), and was reported as expired — "the batch's completion window ended" — which it was not.
    vendor = AnthropicVendor(frozenset({"lost"}))
    client = httpx.AsyncClient(transport=httpx.MockTransport(vendor.handler))
    inner = AnthropicProvider("claude-sonnet-4-5", api_key=KEY, base_url="https://api.anthropic.com",
                              http_client=client)
    got = await _all(BatchProvider(inner, window=1.0, poll_every=10.0), ["kept", "lost"])
    assert _answered(got, "kept")
    lost = got["lost"]
    assert isinstance(lost, BatchError) and lost.reason == "missing" and lost.retryable
    assert "expired" not in str(lost) and "window" not in str(lost)


# --- a redirect: never followed with the credential --------------------------------------------------------


async def test_an_injected_client_that_follows_redirects_never_takes_the_batch_credential_elsewhere(
    anyio_backend: Any,
) -> None:
    """httpx strips only ``Authorization`` on a cross-origin redirect: the batch path's requests carry the provider's
    credential headers (Anthropic's ``x-api-key``), so a client following a vendor's 307 would hand them over."""
    elsewhere: list[httpx.Request] = []

    def respond(request: httpx.Request) -> httpx.Response:
        if request.url.host == "api.anthropic.com":
            return httpx.Response(307, headers={"location": "https://elsewhere.test/collect"})
        elsewhere.append(request)
        return httpx.Response(404)

    client = httpx.AsyncClient(transport=httpx.MockTransport(respond), follow_redirects=True)
    inner = AnthropicProvider("claude-x", api_key=KEY, base_url="https://api.anthropic.com", http_client=client)
    got = await _all(BatchProvider(inner, window=1.0, poll_every=10.0), ["a", "b"])
    assert elsewhere == [], [dict(r.headers) for r in elsewhere]
    for answer in got.values():
        assert isinstance(answer, Exception), answer
        assert KEY not in str(answer) and KEY not in repr(answer)
