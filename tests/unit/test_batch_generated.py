"""Property: generated programs of batch-backed calls against a scripted vendor keep BatchProvider's promises.

A program (drawn by hypothesis) picks a wire (OpenAI's Batch API, Anthropic's Message Batches, Gemini's Batch
Mode), the provider's timings (``window``, ``max_requests``, ``poll_every``, ``max_wait``), a few calls — each
with its arrival time, model, and what the vendor does with its item (an answer, a 400 / 429 / 500 item error, a
garbled or missing results line, an answer its decoder refuses, a line given twice) and maybe a cancellation
some time after it arrives — and what each submitted batch does in turn (its upload or create request refused,
failed with a 5xx, dropped after sending, or never connected; status reads that fail with 5xx / 429 +
Retry-After / a dropped connection, or answer slowly, or fail ten times in a row; the batch completing, expiring
or being cancelled part way, failing whole — for its input or the account's limit —, or stuck in progress past
``max_wait``; its results file breaking part way, slow, or its error file unreadable; its upload or create request
slow, or past the 300 s bound).  The control may also close the HTTP client under the waiting calls, or kill the
process: its journal keeps what was parked, and the next process asks the waiting runs' requests again, each at
its own time.  Then (``docs/costs.md``, "Batch"):

* every call ends — no hang (a virtual ``fail_after``) — in its own answer (``Echo: <its text>``, carrying
  ``provider_data["batch"]`` with the vendor's batch id and the custom id its line was sent under) or in the
  typed error the docs' failure table gives for what the vendor did (a ``ProviderError``: the item's error as
  the wire classifies it, or ``BatchError`` with its ``reason``, ``batch_id`` and ``custom_id``); a call is
  cancelled only when the program cancelled it; no two calls get the same exception object;
* a call is sent at most once (no line in two batches, no custom id twice), a batch holds one model and at most
  ``max_requests`` lines, and is submitted once its window ends (or at once when full);
* a call cancelled before its batch is sent is withdrawn (never sent; noted as billing nothing), one cancelled
  after is noted as cut short at the batch price — and the vendor batch is not cancelled for it: only a batch
  past ``max_wait`` is;
* a batch's status reads are ``poll_every`` apart at least; the key never shows in an error; ``unconfirmed`` only
  when a create request reached the vendor;
* after a restart, a parked request polls its batch (never submitted again) and gets its item's outcome, any other
  is submitted anew; nothing is left parked;
* after the program, the same provider still answers a fresh call, and ``collect(batch_id)`` reads each batch the
  vendor made (an unconfirmed one too) back: each item under its custom id, as its waiting call's outcome.

Runs on virtual time on both backends, 120 programs each (a few seconds).  Hunt longer with
``BATCH_PROGRAM_EXAMPLES=2000 pytest -p no:timeout -n 0 tests/unit/test_batch_generated.py``.  What it found is
pinned as plain examples in ``test_batch_generated_findings.py``.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.lowlevel
import attrs
import httpx
import pytest
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from agentactors import (
    AnthropicProvider,
    BatchProvider,
    GeminiProvider,
    LLMRequest,
    LLMResponse,
    Message,
    OpenAIProvider,
    Runtime,
)
from agentactors.errors import ProviderError
from agentactors.pricing import take_cut_short
from agentactors.resilience.batch import BatchError
from agentactors.testing import VirtualTimeLoop

EXAMPLES = int(os.environ.get("BATCH_PROGRAM_EXAMPLES", "120"))
KEY = "sk-generated-secret-key-7777"
HANG = 12 * 24 * 3600.0  # virtual seconds: a program that has not ended by then hangs
MODELS = {"openai": ("gpt-4o-mini", "gpt-4o"), "anthropic": ("claude-sonnet-4-5", "claude-haiku-4-5"),
          "gemini": ("gemini-2.5-flash", "gemini-2.5-pro")}
BASE = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com",
        "gemini": "https://generativelanguage.googleapis.com"}


# -- programs --------------------------------------------------------------------------------------------------


@attrs.frozen
class Call:
    text: str
    model: int  # 0 or 1
    arrive: float
    cancel_after: float | None  # seconds after it arrives
    item: str  # ok | e400 | e429 | e500 | garbled | absent | undecodable | dup


@attrs.frozen
class Script:
    """What one submission (and the batch it makes) does."""

    upload: str = "ok"  # ok | 400 | 500 | slow (40 s late) | hang (past SUBMIT_BOUND) (OpenAI's file upload)
    create: str = "ok"  # ok | 400 | 429 | 500 | drop | connect | slow (made, 40 s late) | hang (past SUBMIT_BOUND)
    running: int = 0  # status reads "in progress" before it ends
    faults: tuple[str, ...] = ()  # failed status reads first: 503 | 429 | drop | slow (answers, 100 s late)
    end: str = "completed"  # completed | expired | cancelled | failed | token_limit | stuck | stuck_nocancel
    answered: int = 99  # expired / cancelled / stuck: the first this many items are answered
    results: str = "ok"  # ok | cut (the file breaks after `cut` lines) | errfile (the error file: a 503) | slow
    # (slow: the results file starts 50 s late)
    cut: int = 0


@attrs.frozen
class Program:
    wire: str
    window: float
    max_requests: int
    poll_every: float
    max_wait: float
    calls: tuple[Call, ...]
    scripts: tuple[Script, ...]
    close_client_at: float | None
    crash_at: float | None = None  # the process dies then: its journal keeps what was parked; a new one asks again


ITEMS = ["ok", "ok", "ok", "e400", "e429", "e500", "garbled", "absent", "undecodable", "dup"]
scripts = st.builds(
    Script,
    upload=st.sampled_from(["ok"] * 6 + ["400", "500", "slow", "hang"]),
    create=st.sampled_from(["ok"] * 8 + ["400", "429", "500", "drop", "connect", "slow", "hang"]),
    running=st.integers(0, 3),
    faults=st.one_of(st.just(()), st.lists(st.sampled_from(["503", "429", "drop", "slow"]), max_size=3).map(tuple),
                     st.just(("503",) * 10)),
    end=st.sampled_from(["completed"] * 4 + ["expired", "cancelled", "failed", "token_limit", "stuck",
                                             "stuck_nocancel"]),
    answered=st.integers(0, 4),
    results=st.sampled_from(["ok"] * 4 + ["cut", "errfile", "slow"]),
    cut=st.integers(0, 3),
)


@st.composite
def programs(draw: st.DrawFn) -> Program:
    wire = draw(st.sampled_from(["openai", "anthropic", "gemini"]))
    n = draw(st.integers(1, 7))
    calls = tuple(
        Call(f"q{i}", draw(st.integers(0, 1)), draw(st.sampled_from([0.0, 0.5, 2.0, 7.0, 80.0])),
             draw(st.sampled_from([None, None, None, 0.3, 3.3, 41.3, 5000.3, 200_000.3])), draw(st.sampled_from(ITEMS)))
        for i in range(n)
    )
    return Program(
        wire=wire,
        window=draw(st.sampled_from([0.0, 5.0])),
        max_requests=draw(st.sampled_from([1, 2, 3, 100])),
        poll_every=draw(st.sampled_from([10.0, 30.0])),
        max_wait=draw(st.sampled_from([3600.0, 4 * 3600.0])),
        calls=calls,
        scripts=tuple(draw(st.lists(scripts, max_size=4))),
        close_client_at=draw(st.sampled_from([None] * 6 + [1.0, 60.0])),
        crash_at=draw(st.sampled_from([None, None, 3.1, 20.1, 95.1, 4000.1])),
    )


# -- the vendor ------------------------------------------------------------------------------------------------


@attrs.define
class Attempt:
    """One submission: its script, when it began, its lines (text -> custom id, in order), the batch it made."""

    script: Script
    at: float
    model: str | None = None
    texts: list[str] = attrs.Factory(list)
    custom: dict[str, str] = attrs.Factory(dict)
    lines: list[tuple[str, str]] = attrs.Factory(list)  # (custom id, text), as sent (texts may repeat)
    batch_id: str | None = None
    reads: list[float] = attrs.Factory(list)  # the waiting calls' status reads (collect()'s are not timed)
    status_reads: int = 0
    cancels: list[float] = attrs.Factory(list)
    done: bool = False
    create_seen: bool = False  # the create request reached the vendor
    ended_at: float | None = None  # the status read that first said it ended


class Vendor:
    """The three vendors' batch APIs in memory, each submission doing what its script says."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.wire = program.wire
        self.items = {c.text: c.item for c in program.calls}
        self.scripts = list(program.scripts)
        self.attempts: list[Attempt] = []
        self.files: dict[str, Attempt] = {}
        self.batches: dict[str, Attempt] = {}
        self.problems: list[str] = []
        self.collecting = False
        self.ids = itertools.count(1)

    def _next(self) -> Attempt:
        script = self.scripts.pop(0) if self.scripts else Script()
        attempt = Attempt(script, anyio.current_time())
        self.attempts.append(attempt)
        return attempt

    def _record(self, attempt: Attempt, lines: list[tuple[str, str, str]]) -> None:
        for custom, text, model in lines:
            attempt.texts.append(text)
            if custom in attempt.custom.values():
                self.problems.append(f"custom id {custom} twice in one submission")
            attempt.custom[text] = custom
            attempt.lines.append((custom, text))
            attempt.model = attempt.model or model
            if model != attempt.model:
                self.problems.append(f"a submission holds two models: {attempt.model}, {model}")

    async def handler(self, request: httpx.Request) -> httpx.Response:
        path, method = request.url.path, request.method
        body = await request.aread()
        if self.wire == "openai":
            return await self._openai(method, path, body)
        if self.wire == "anthropic":
            return await self._anthropic(method, path, body)
        return await self._gemini(method, path, body)

    # creating ------------------------------------------------------------------------------------------------

    async def _create_fault(self, attempt: Attempt, request_made: bool) -> httpx.Response | None:
        attempt.create_seen = True
        fault = attempt.script.create
        if fault in ("slow", "hang"):
            await anyio.sleep(40.0 if fault == "slow" else 400.0)
            return None
        if fault == "ok":
            return None
        if fault == "connect":
            raise httpx.ConnectError("connection refused")
        if fault == "drop":
            raise httpx.ReadError("connection reset by peer")
        return self._error(int(fault), retry_after=fault == "429")

    def _error(self, status: int, *, retry_after: bool = False) -> httpx.Response:
        kind = {400: "invalid_request_error", 429: "rate_limit_error", 404: "not_found_error"}.get(status, "api_error")
        headers = {"retry-after": "40"} if retry_after else {}
        if self.wire == "gemini":
            word = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED"}.get(status, "UNAVAILABLE")
            return httpx.Response(status, headers=headers, json={"error": {"code": status, "message": f"no ({KEY})",
                                                                           "status": word}})
        if self.wire == "anthropic":
            return httpx.Response(status, headers=headers, json={"type": "error",
                                                                 "error": {"type": kind, "message": f"no ({KEY})"}})
        return httpx.Response(status, headers=headers, json={"error": {"message": f"no ({KEY})", "type": kind}})

    # status --------------------------------------------------------------------------------------------------

    async def _status(self, attempt: Attempt) -> httpx.Response | None:
        """A status read: a fault, or ``None`` (then the batch's state is described by the caller)."""
        if not self.collecting:
            attempt.reads.append(anyio.current_time())
        attempt.status_reads += 1
        script = attempt.script
        reads = attempt.status_reads
        if reads <= len(script.faults):
            fault = script.faults[reads - 1]
            if fault == "drop":
                raise httpx.ReadError("connection reset by peer")
            if fault == "slow":
                await anyio.sleep(100.0)
            else:
                return self._error(int(fault), retry_after=fault == "429")
        running = script.end in ("stuck", "stuck_nocancel") or reads <= len(script.faults) + script.running
        if not running or (attempt.cancels and script.end == "stuck"):
            attempt.done = True
            if attempt.ended_at is None and not self.collecting:
                attempt.ended_at = anyio.current_time()
        return None

    def _end(self, attempt: Attempt) -> str:
        end = attempt.script.end
        if self.wire == "anthropic" and end in ("failed", "token_limit"):
            return "completed"  # Anthropic's batches do not fail whole
        return "cancelled" if end == "stuck" else end

    def _answered(self, attempt: Attempt, position: int) -> bool:
        return self._end(attempt) not in ("expired", "cancelled") or position < attempt.script.answered

    # OpenAI --------------------------------------------------------------------------------------------------

    async def _openai(self, method: str, path: str, body: bytes) -> httpx.Response:
        if path == "/v1/files" and method == "POST":
            attempt = self._next()
            lines = [json.loads(t) for t in body.decode().splitlines() if t.startswith('{"custom_id"')]
            self._record(attempt, [(x["custom_id"], x["body"]["messages"][-1]["content"], x["body"]["model"])
                                   for x in lines])
            if attempt.script.upload in ("slow", "hang"):
                await anyio.sleep(40.0 if attempt.script.upload == "slow" else 400.0)
            elif attempt.script.upload != "ok":
                return self._error(int(attempt.script.upload))
            file_id = f"file-in{next(self.ids)}"
            self.files[file_id] = attempt
            return httpx.Response(200, json={"id": file_id})
        if path == "/v1/batches" and method == "POST":
            attempt = self.files[json.loads(body)["input_file_id"]]
            batch_id = f"batch_{next(self.ids)}"
            if attempt.script.create in ("500", "drop", "hang"):
                attempt.batch_id = batch_id  # made, though its id never came back
                self.batches[batch_id] = attempt
            fault = await self._create_fault(attempt, True)
            if fault is not None:
                return fault
            attempt.batch_id = batch_id
            self.batches[batch_id] = attempt
            return httpx.Response(200, json={"id": batch_id, "status": "validating"})
        m = re.fullmatch(r"/v1/batches/([^/]+)(/cancel)?", path)
        if m:
            attempt = self.batches[m.group(1)]
            if m.group(2):
                attempt.cancels.append(anyio.current_time())
                if attempt.script.end == "stuck_nocancel":
                    return self._error(500)
                return httpx.Response(200, json={"id": m.group(1), "status": "cancelling"})
            fault = await self._status(attempt)
            if fault is not None:
                return fault
            return httpx.Response(200, json=self._openai_batch(m.group(1), attempt))
        m = re.fullmatch(r"/v1/files/(out|err)-([^/]+)/content", path)
        if m:
            attempt = self.batches[m.group(2)]
            if m.group(1) == "err" and attempt.script.results == "errfile":
                return self._error(503)
            return httpx.Response(200, content=self._openai_file(attempt, m.group(1) == "out"))
        return self._error(404)

    def _openai_batch(self, batch_id: str, attempt: Attempt) -> dict[str, Any]:
        if not attempt.done:
            return {"id": batch_id, "status": "in_progress"}
        end = self._end(attempt)
        if end in ("failed", "token_limit"):
            code = "token_limit_exceeded" if end == "token_limit" else "invalid_input"
            return {"id": batch_id, "status": "failed", "errors": {"data": [{"code": code, "message": "refused"}]}}
        state = {"completed": "completed", "expired": "expired", "cancelled": "cancelled"}[end]
        return {"id": batch_id, "status": state, "output_file_id": f"out-{batch_id}",
                "error_file_id": f"err-{batch_id}"}

    async def _openai_file(self, attempt: Attempt, output: bool) -> AsyncIterator[bytes]:
        sent = 0
        if attempt.script.results == "slow" and output:
            await anyio.sleep(50.0)
        for position, (custom, text) in enumerate(attempt.lines):
            item = self.items[text]
            if not self._answered(attempt, position):
                if not output:
                    code = "batch_expired" if self._end(attempt) == "expired" else "batch_cancelled"
                    yield _jsonl({"custom_id": custom, "response": None,
                                  "error": {"code": code, "message": "gone"}})
                continue
            if item in ("e400", "e429", "e500"):
                if not output:
                    status = int(item[1:])
                    yield _jsonl({"custom_id": custom, "response": {"status_code": status, "body": {
                        "error": {"message": "item refused", "type": "invalid_request_error"}}}})
                continue
            if not output or item == "absent":
                continue
            if attempt.script.results == "cut" and sent >= attempt.script.cut:
                raise httpx.ReadError("connection reset by peer")
            sent += 1
            if item == "garbled":
                yield b'{"custom_id": "' + custom.encode() + b'", "resp\n'
                continue
            answer = {"choices": "nope"} if item == "undecodable" else _openai_answer(text, attempt.model)
            if item == "dup":
                yield _jsonl({"custom_id": custom, "response": {"status_code": 500, "body": {
                    "error": {"message": "x", "type": "server_error"}}}})
            yield _jsonl({"custom_id": custom, "response": {"status_code": 200, "body": answer}})

    # Anthropic -----------------------------------------------------------------------------------------------

    async def _anthropic(self, method: str, path: str, body: bytes) -> httpx.Response:
        if path == "/v1/messages/batches" and method == "POST":
            attempt = self._next()
            requests = json.loads(body)["requests"]
            self._record(attempt, [(r["custom_id"], _anthropic_text(r["params"]), r["params"]["model"])
                                   for r in requests])
            batch_id = f"msgbatch_{next(self.ids)}"
            if attempt.script.create in ("500", "drop", "hang"):
                attempt.batch_id = batch_id
                self.batches[batch_id] = attempt
            fault = await self._create_fault(attempt, True)
            if fault is not None:
                return fault
            attempt.batch_id = batch_id
            self.batches[batch_id] = attempt
            return httpx.Response(200, json={"id": batch_id, "processing_status": "in_progress"})
        m = re.fullmatch(r"/v1/messages/batches/([^/]+)(/cancel|/results)?", path)
        if not m:
            return self._error(404)
        batch_id, tail = m.group(1), m.group(2)
        attempt = self.batches[batch_id]
        if tail == "/cancel":
            attempt.cancels.append(anyio.current_time())
            if attempt.script.end == "stuck_nocancel":
                return self._error(500)
            return httpx.Response(200, json={"id": batch_id, "processing_status": "canceling"})
        if tail == "/results":
            return httpx.Response(200, content=self._anthropic_results(attempt))
        fault = await self._status(attempt)
        if fault is not None:
            return fault
        cancelled = attempt.done and self._end(attempt) == "cancelled"
        return httpx.Response(200, json={
            "id": batch_id, "processing_status": "ended" if attempt.done else "in_progress",
            "cancel_initiated_at": "2026-01-01T00:00:00Z" if cancelled else None,
            "results_url": f"{BASE['anthropic']}/v1/messages/batches/{batch_id}/results"})

    async def _anthropic_results(self, attempt: Attempt) -> AsyncIterator[bytes]:
        sent = 0
        if attempt.script.results == "slow":
            await anyio.sleep(50.0)
        for position, (custom, text) in enumerate(attempt.lines):
            item = self.items[text]
            if item == "absent":
                continue
            if attempt.script.results == "cut" and sent >= attempt.script.cut:
                raise httpx.ReadError("connection reset by peer")
            sent += 1
            if not self._answered(attempt, position):
                kind = "expired" if self._end(attempt) == "expired" else "canceled"
                yield _jsonl({"custom_id": custom, "result": {"type": kind}})
            elif item == "garbled":
                yield b'{"custom_id": "' + custom.encode() + b'", "resu\n'
            elif item in ("e400", "e429", "e500"):
                kind = {"e400": "invalid_request_error", "e429": "rate_limit_error", "e500": "api_error"}[item]
                yield _jsonl({"custom_id": custom, "result": {"type": "errored", "error": {
                    "type": "error", "error": {"type": kind, "message": "item refused"}}}})
            else:
                message = {"content": 5} if item == "undecodable" else _anthropic_answer(text, attempt.model)
                if item == "dup":
                    yield _jsonl({"custom_id": custom, "result": {"type": "errored", "error": {
                        "type": "error", "error": {"type": "api_error", "message": "x"}}}})
                yield _jsonl({"custom_id": custom, "result": {"type": "succeeded", "message": message}})

    # Gemini --------------------------------------------------------------------------------------------------

    async def _gemini(self, method: str, path: str, body: bytes) -> httpx.Response:
        m = re.fullmatch(r"/v1beta/models/([^:/]+):batchGenerateContent", path)
        if m and method == "POST":
            attempt = self._next()
            requests = json.loads(body)["batch"]["input_config"]["requests"]["requests"]
            self._record(attempt, [(r["metadata"]["key"], r["request"]["contents"][-1]["parts"][0]["text"],
                                    m.group(1)) for r in requests])
            batch_id = f"b{next(self.ids)}"
            if attempt.script.create in ("500", "drop", "hang"):
                attempt.batch_id = batch_id
                self.batches[batch_id] = attempt
            fault = await self._create_fault(attempt, True)
            if fault is not None:
                return fault
            attempt.batch_id = batch_id
            self.batches[batch_id] = attempt
            return httpx.Response(200, json={"name": f"batches/{batch_id}",
                                             "metadata": {"state": "BATCH_STATE_PENDING"}})
        m = re.fullmatch(r"/v1beta/batches/([^/:]+)(:cancel)?", path)
        if not m:
            return self._error(404)
        batch_id = m.group(1)
        attempt = self.batches[batch_id]
        if m.group(2):
            attempt.cancels.append(anyio.current_time())
            if attempt.script.end == "stuck_nocancel":
                return self._error(500)
            return httpx.Response(200, json={})
        fault = await self._status(attempt)
        if fault is not None:
            return fault
        if not attempt.done:
            return httpx.Response(200, json={"name": f"batches/{batch_id}",
                                             "metadata": {"state": "BATCH_STATE_RUNNING"}})
        end = self._end(attempt)
        if end in ("failed", "token_limit"):
            return httpx.Response(200, json={"name": f"batches/{batch_id}", "done": True,
                                             "metadata": {"state": "BATCH_STATE_FAILED"},
                                             "error": {"code": 400, "message": "refused"}})
        state = {"completed": "SUCCEEDED", "expired": "EXPIRED", "cancelled": "CANCELLED"}[end]
        answers = []
        for position, (custom, text) in enumerate(attempt.lines):
            item = self.items[text]
            if not self._answered(attempt, position) or item in ("absent", "garbled"):
                continue
            key = {"key": custom}
            if item in ("e400", "e429", "e500"):
                answers.append({"error": {"code": int(item[1:]), "message": "item refused"}, "metadata": key})
            elif item == "undecodable":
                answers.append({"response": {"candidates": 7}, "metadata": key})
            else:
                answers.append({"response": _gemini_answer(text), "metadata": key})
        return httpx.Response(200, json={"name": f"batches/{batch_id}", "done": True,
                                         "metadata": {"state": f"BATCH_STATE_{state}"},
                                         "response": {"inlinedResponses": {"inlinedResponses": answers}}})


def _jsonl(value: Any) -> bytes:
    return (json.dumps(value) + "\n").encode()


def _anthropic_text(params: dict[str, Any]) -> str:
    content = params["messages"][-1]["content"]
    return content if isinstance(content, str) else str(content[0]["text"])


def _openai_answer(text: str, model: str | None) -> dict[str, Any]:
    return {"id": "c", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": f"Echo: {text}"},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}


def _anthropic_answer(text: str, model: str | None) -> dict[str, Any]:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": f"Echo: {text}"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 5, "output_tokens": 2}}


def _gemini_answer(text: str) -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": [{"text": f"Echo: {text}"}]},
                            "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 2, "totalTokenCount": 7}}


def make_provider(program: Program, vendor: Vendor, client: httpx.AsyncClient) -> BatchProvider:
    wire = program.wire
    cls: Any = {"openai": OpenAIProvider, "anthropic": AnthropicProvider, "gemini": GeminiProvider}[wire]
    inner = cls(MODELS[wire][0], api_key=KEY, base_url=BASE[wire], http_client=client)
    return BatchProvider(inner, window=program.window, max_requests=program.max_requests,
                         poll_every=program.poll_every, max_wait=program.max_wait)


# -- running ---------------------------------------------------------------------------------------------------


class Journal:
    """A journal's parking (``park``, ``parked``, ``unpark``) in memory; once ``dead`` (its process died), every
    write fails, and what it holds is what the next process finds."""

    def __init__(self) -> None:
        self.data: dict[str, str] = {}
        self.dead = False

    def open_run(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - no run is journaled here
        raise NotImplementedError

    async def park(self, key: str, value: str) -> None:
        await anyio.lowlevel.checkpoint()
        if self.dead:
            raise OSError("the process is gone")
        self.data[key] = value

    async def parked(self, key: str) -> str | None:
        await anyio.lowlevel.checkpoint()
        return self.data.get(key)

    async def unpark(self, key: str) -> None:
        await anyio.lowlevel.checkpoint()
        if self.dead:
            raise OSError("the process is gone")
        self.data.pop(key, None)

    def entries(self) -> set[tuple[str, str]]:
        return {(e["batch"], e["custom_id"]) for v in self.data.values() for e in json.loads(v)["items"]}


@attrs.define
class Record:
    outcomes: dict[str, Any] = attrs.Factory(dict)  # text -> LLMResponse | exception | "cancelled"
    ended_at: dict[str, float] = attrs.Factory(dict)
    cancelled_at: dict[str, float] = attrs.Factory(dict)
    cut_short: dict[str, Any] = attrs.Factory(dict)
    problems: list[str] = attrs.Factory(list)
    after: Any = None
    parked_at_crash: set[tuple[str, str]] = attrs.Factory(set)
    attempts_at_crash: int = 0
    waiting_at_crash: list[str] = attrs.Factory(list)
    recovered: dict[str, Any] = attrs.Factory(dict)  # text -> the outcome of its request asked again
    left_parked: set[tuple[str, str]] = attrs.Factory(set)
    collected: dict[str, Any] = attrs.Factory(dict)  # batch id -> collect()'s mapping, or what it raised
    unspent: dict[str, bool] = attrs.Factory(dict)  # batch id -> failing status reads were left for collect()


async def run_program(program: Program) -> tuple[Vendor, Record]:
    vendor = Vendor(program)
    client = httpx.AsyncClient(transport=httpx.MockTransport(vendor.handler))
    p = make_provider(program, vendor, client)
    rec = Record()

    async def one(call: Call) -> None:
        await anyio.sleep(call.arrive)
        model = MODELS[program.wire][call.model]
        request = LLMRequest([Message.user(call.text)], model=model)
        with anyio.CancelScope() as scope:
            if call.cancel_after is not None:
                scope.deadline = anyio.current_time() + call.cancel_after
            try:
                rec.outcomes[call.text] = await p.complete(request)
            except Exception as exc:
                rec.outcomes[call.text] = exc
            rec.ended_at[call.text] = anyio.current_time()
        if scope.cancelled_caught:
            rec.outcomes[call.text] = "cancelled"
            rec.cancelled_at[call.text] = anyio.current_time()
            rec.cut_short[call.text] = take_cut_short(request)

    async def close_client(at: float) -> None:
        await anyio.sleep(at)
        await client.aclose()

    journal = Journal() if program.crash_at is not None else None

    async def crash(at: float, scope: anyio.CancelScope) -> None:
        await anyio.sleep(at)
        assert journal is not None
        journal.dead = True
        rec.parked_at_crash = journal.entries()
        rec.attempts_at_crash = len(vendor.attempts)
        rec.waiting_at_crash = [c.text for c in program.calls if c.text not in rec.outcomes]
        scope.cancel()

    try:
        with anyio.fail_after(HANG):
            async with Runtime(journal=journal), anyio.create_task_group() as tg:
                for call in program.calls:
                    tg.start_soon(one, call)
                if program.close_client_at is not None:
                    tg.start_soon(close_client, program.close_client_at)
                if program.crash_at is not None:
                    tg.start_soon(crash, program.crash_at, tg.cancel_scope)
    except TimeoutError:
        rec.problems.append(f"the program hung: calls without an outcome: "
                            f"{[c.text for c in program.calls if c.text not in rec.outcomes]}")
        return vendor, rec
    if journal is not None and program.close_client_at is None:
        # The next process: the same journal (as the crash left it), a new BatchProvider; the runs that were
        # waiting ask their requests again (a recovered run's step sends exactly what it sent before).
        journal.dead = False
        p = make_provider(program, vendor, client)

        async def again(call: Call) -> None:
            await anyio.sleep(call.arrive * 10)  # the recovered runs reach their step at different times
            request = LLMRequest([Message.user(call.text)], model=MODELS[program.wire][call.model])
            try:
                rec.recovered[call.text] = await p.complete(request)
            except Exception as exc:
                rec.recovered[call.text] = exc

        try:
            with anyio.fail_after(HANG):
                async with Runtime(journal=journal), anyio.create_task_group() as tg:
                    for call in program.calls:
                        if call.text in rec.waiting_at_crash:
                            tg.start_soon(again, call)
        except TimeoutError:
            rec.problems.append("the recovered calls hung")
        rec.left_parked = journal.entries()
    if program.close_client_at is None:
        # The provider still works: a fresh call (a fresh script) is answered.
        vendor.scripts = []
        vendor.items["fresh"] = "ok"
        try:
            with anyio.fail_after(HANG):
                rec.after = await p.complete(LLMRequest([Message.user("fresh")], model=MODELS[program.wire][0]))
        except BaseException as exc:  # recorded, then checked
            rec.after = exc
        # Every batch the vendor made, read back by its id (an unconfirmed one too: it was made).
        vendor.collecting = True
        for attempt in list(vendor.attempts):
            if attempt.batch_id is None or "fresh" in attempt.texts:
                continue
            rec.unspent[attempt.batch_id] = len(attempt.script.faults) > attempt.status_reads
            try:
                with anyio.fail_after(HANG):
                    rec.collected[attempt.batch_id] = await p.collect(attempt.batch_id, model=attempt.model,
                                                                      max_wait=100.0)
            except Exception as exc:
                rec.collected[attempt.batch_id] = exc
    await client.aclose()
    return vendor, rec


# -- expectations ----------------------------------------------------------------------------------------------


def item_outcome(wire: str, item: str, ended: str) -> set[str]:
    """What a call whose item the vendor handled as ``item`` gets, in a batch that ended ``ended``."""
    if item in ("ok", "dup"):
        return {"ok"}
    if item in ("e400", "e429", "e500"):
        return {f"status:{item[1:]}"}
    if item == "undecodable":
        return {"malformed"}
    # garbled or absent: no result for it
    if ended == "expired":
        return {"batch:missing" if wire == "anthropic" else "batch:expired"}
    if ended == "cancelled":
        return {"batch:cancelled"}
    return {"batch:missing"}


def expected(program: Program, vendor: Vendor, attempt: Attempt, text: str) -> set[str]:
    script, wire = attempt.script, program.wire
    if wire == "openai" and script.upload == "hang":
        return {"batch:missing"}  # past SUBMIT_BOUND during the upload: nothing was created, safe to retry
    if wire == "openai" and script.upload not in ("ok", "slow"):
        return {f"status:{script.upload}"}
    if script.create in ("400", "429"):
        return {f"status:{script.create}"}
    if script.create in ("500", "drop", "hang"):
        return {"batch:unconfirmed"}
    if script.create == "connect":
        return {"transport"}
    if len(script.faults) >= 10:
        return {"batch:poll", "batch:timeout"}  # max_wait may pass while the failed reads back off
    end = script.end
    if end == "stuck_nocancel":
        return {"batch:timeout"}
    if end in ("failed", "token_limit") and wire != "anthropic":
        return {"batch:failed" if end == "failed" or wire != "openai" else "batch:failed:retryable"}
    ended = vendor._end(attempt)
    position = attempt.texts.index(text)
    got = item_outcome(wire, vendor.items[text], ended) if vendor._answered(attempt, position) else (
        {"batch:expired"} if ended == "expired" else {"batch:cancelled"})
    if wire == "anthropic" and not vendor._answered(attempt, position) and vendor.items[text] == "absent":
        got = item_outcome(wire, vendor.items[text], ended)
    if script.results in ("cut", "errfile") and wire != "gemini":
        got = got | {"batch:poll"}
    return got


def read_anew(attempt: Attempt) -> Attempt:
    """The batch as a later reader finds it: made, its failing status reads spent."""
    return attrs.evolve(attempt, script=attrs.evolve(attempt.script, upload="ok", create="ok", faults=()))


def label(outcome: Any) -> str:
    if isinstance(outcome, LLMResponse):
        return "ok"
    if isinstance(outcome, BatchError):
        if outcome.reason == "failed" and outcome.retryable:
            return "batch:failed:retryable"
        return f"batch:{outcome.reason}"
    if isinstance(outcome, ProviderError):
        if outcome.status is not None:
            return f"status:{outcome.status}"
        if type(outcome).__name__ == "MalformedResponseError":
            return "malformed"
        return "transport" if outcome.retryable else f"provider:{type(outcome).__name__}"
    return f"untyped:{type(outcome).__name__}"


def check(program: Program, vendor: Vendor, rec: Record) -> None:
    problems = list(rec.problems) + list(vendor.problems)
    calls = {c.text: c for c in program.calls}
    where: dict[str, Attempt] = {}
    crashed = program.crash_at is not None
    before = vendor.attempts[:rec.attempts_at_crash] if crashed else vendor.attempts
    for attempt in vendor.attempts:
        if attempt not in before:
            continue
        if len(attempt.texts) > program.max_requests:
            problems.append(f"a submission of {len(attempt.texts)} lines, max_requests={program.max_requests}")
        for text in attempt.texts:
            if text in where:
                problems.append(f"{text} was sent twice (in submissions at {where[text].at} and {attempt.at})")
            where[text] = attempt
        past_max_wait = attempt.script.end in ("stuck", "stuck_nocancel") or len(attempt.script.faults) >= 10
        if attempt.cancels and attempt.cancels[0] < attempt.at + program.max_wait - 1e-6:
            problems.append(f"batch {attempt.batch_id} was cancelled at {attempt.cancels[0]}, before max_wait passed "
                            f"(sent at {attempt.at})")
        if attempt.cancels and not past_max_wait:
            problems.append(f"batch {attempt.batch_id} was cancelled at the vendor at {attempt.cancels}, "
                            "though it did not run past max_wait")
        reads = [t for t in attempt.reads if not attempt.cancels or t < attempt.cancels[0]]
        if attempt.ended_at is not None:  # a request resumed after the batch ended reads it again, at once
            reads = [t for t in reads if t <= attempt.ended_at]
        for a, b in itertools.pairwise(reads):
            if crashed and a < program.crash_at <= b:  # type: ignore[operator]
                continue  # the next process reads a resumed batch at once
            if b - a < program.poll_every - 1e-6:
                problems.append(f"batch {attempt.batch_id}: status reads {b - a:g} s apart (poll_every "
                                f"{program.poll_every:g})")
    seen_errors: dict[int, str] = {}
    for text, call in calls.items():
        outcome = rec.outcomes.get(text)
        if outcome is None:
            if text not in rec.waiting_at_crash:  # (those died with their process: asked again below)
                problems.append(f"{text} never ended")
            continue
        if isinstance(outcome, BaseException):
            if id(outcome) in seen_errors:
                problems.append(f"{text} and {seen_errors[id(outcome)]} got the same exception object {outcome!r}")
            seen_errors[id(outcome)] = text
            if KEY in str(outcome) or KEY in repr(outcome):
                problems.append(f"{text}: the key shows in its error {outcome!r}")
        if outcome == "cancelled":
            if call.cancel_after is None and text not in rec.waiting_at_crash:
                problems.append(f"{text} was cancelled, though nobody cancelled it")
            cut = rec.cut_short[text]
            sent = where.get(text)
            cancelled_at = rec.cancelled_at[text]
            if sent is None:
                if cut != ():
                    problems.append(f"{text} was never sent, yet it was noted as cut short: {cut}")
            elif sent.at > cancelled_at:
                problems.append(f"{text} was cancelled at {cancelled_at}, then sent at {sent.at}")
            elif sent.batch_id is not None and sent.script.create in ("ok", "slow") and (
                    len(cut) != 1 or not cut[0].batch):
                problems.append(f"{text} left its submitted batch, but was noted as {cut}")
            continue
        got = label(outcome)
        if got.startswith("untyped"):
            problems.append(f"{text} ended in an untyped {outcome!r}")
            continue
        sent = where.get(text)
        if got == "batch:unconfirmed" and (sent is None or not sent.create_seen):
            problems.append(f"{text}: unconfirmed {outcome!r}, though no create request reached the vendor")
        if program.close_client_at is not None:
            continue  # a closed client: any typed outcome
        sent = where.get(text)
        if sent is None:
            problems.append(f"{text} ended in {outcome!r}, but was never sent")
            continue
        attempt = sent
        want = expected(program, vendor, attempt, text)
        if got not in want:
            problems.append(f"{text} (item {call.item}, script {attempt.script}) ended in {got} {outcome!r}, "
                            f"expected {want}")
        if isinstance(outcome, LLMResponse):
            if outcome.content != f"Echo: {text}":
                problems.append(f"{text} got another's answer: {outcome.content!r}")
            mark = (outcome.provider_data or {}).get("batch")
            if mark != {"id": attempt.batch_id, "custom_id": attempt.custom[text]}:
                problems.append(f"{text}: provider_data batch {mark}, sent as {attempt.batch_id}/"
                                f"{attempt.custom[text]}")
        if isinstance(outcome, BatchError):
            if outcome.custom_id is not None and outcome.custom_id != attempt.custom[text]:
                problems.append(f"{text}: its error names custom id {outcome.custom_id}, sent as "
                                f"{attempt.custom[text]}")
            if outcome.reason not in ("unconfirmed",) and outcome.batch_id not in (None, attempt.batch_id):
                problems.append(f"{text}: its error names batch {outcome.batch_id}, sent in {attempt.batch_id}")
    if crashed and program.close_client_at is None and not rec.problems:
        check_recovery(program, vendor, rec, where, problems)
    if program.close_client_at is None and not rec.problems and not crashed:
        check_collected(program, vendor, rec, problems)
        if not (isinstance(rec.after, LLMResponse) and rec.after.content == "Echo: fresh"):
            problems.append(f"after the program, a fresh call got {rec.after!r}")
    assert not problems, "\n".join(problems)


def check_recovery(program: Program, vendor: Vendor, rec: Record, where: dict[str, Attempt],
                   problems: list[str]) -> None:
    """The runs waiting at the crash asked again in the next process: a parked request polls its batch (never
    submitted again), any other is submitted anew; each ends as its batch says; nothing is left parked."""
    later = vendor.attempts[rec.attempts_at_crash:]
    for text in rec.waiting_at_crash:
        outcome = rec.recovered.get(text)
        if outcome is None:
            problems.append(f"{text}, asked again after the crash, never ended")
            continue
        got = label(outcome)
        first = where.get(text)
        parked = first is not None and first.batch_id is not None and (
            first.batch_id, first.custom[text]) in rec.parked_at_crash
        again = [a for a in later if text in a.texts]
        if parked:
            assert first is not None
            if again:
                problems.append(f"{text} was parked in batch {first.batch_id}, and submitted again after the crash")
            want = expected(program, vendor, first, text) | expected(program, vendor, read_anew(first), text)
            if got not in want:
                problems.append(f"{text}, resumed in {first.batch_id}, ended in {got} {outcome!r}, expected {want}")
            if isinstance(outcome, LLMResponse):
                mark = (outcome.provider_data or {}).get("batch")
                if outcome.content != f"Echo: {text}" or mark != {"id": first.batch_id,
                                                                   "custom_id": first.custom[text]}:
                    problems.append(f"{text}, resumed, got {outcome.content!r} marked {mark}")
        else:
            if len(again) != 1:
                problems.append(f"{text} was not parked at the crash, and was submitted {len(again)} times after")
                continue
            want = expected(program, vendor, again[0], text)
            if got not in want:
                problems.append(f"{text}, submitted again, ended in {got} {outcome!r}, expected {want}")
    if rec.left_parked:
        problems.append(f"entries left parked after every call ended: {rec.left_parked}")


def check_collected(program: Program, vendor: Vendor, rec: Record, problems: list[str]) -> None:
    """``collect(batch_id)``: each item's outcome under its custom id, as its waiting call's would be."""
    for attempt in vendor.attempts:
        if attempt.batch_id not in rec.collected:
            continue
        got = rec.collected[attempt.batch_id]
        script, wire = attempt.script, program.wire
        if rec.unspent[attempt.batch_id] and label(got) in ("batch:poll", "batch:timeout"):
            continue  # its failing status reads were left for collect() to meet
        end = vendor._end(attempt)
        if end in ("failed", "token_limit"):
            whole = "batch:failed:retryable" if end == "token_limit" and wire == "openai" else "batch:failed"
            if label(got) != whole:
                problems.append(f"collect({attempt.batch_id}) of a failed batch: {got!r}")
            continue
        if script.end == "stuck_nocancel" or (script.end == "stuck" and not attempt.cancels):
            if label(got) != "batch:timeout":
                problems.append(f"collect({attempt.batch_id}) of a batch still running: {got!r}")
            continue
        if script.results in ("cut", "errfile") and wire != "gemini":
            if label(got) != "batch:poll" and not isinstance(got, dict):
                problems.append(f"collect({attempt.batch_id}) of a batch whose results broke: {got!r}")
            continue
        if not isinstance(got, dict):
            if not (rec.unspent[attempt.batch_id] and label(got) in ("batch:poll", "batch:timeout")):
                problems.append(f"collect({attempt.batch_id}) raised {got!r}")
            continue
        customs = {attempt.custom[t]: t for t in attempt.texts}
        for key in got:
            if key not in customs:
                problems.append(f"collect({attempt.batch_id}) gave an item under {key!r}, not one of its ids")
        for custom, text in customs.items():
            want = expected(program, vendor, read_anew(attempt), text) - {"batch:poll"}
            if custom not in got:
                if not want & {"batch:missing", "batch:expired", "batch:cancelled"}:
                    problems.append(f"collect({attempt.batch_id}) left out {text}, expected {want}")
                continue
            outcome = got[custom]
            if label(outcome) not in want:
                problems.append(f"collect({attempt.batch_id}): {text} is {label(outcome)} {outcome!r}, expected {want}")
            if isinstance(outcome, LLMResponse) and (outcome.content != f"Echo: {text}" or (
                    outcome.provider_data or {}).get("batch") != {"id": attempt.batch_id, "custom_id": custom}):
                problems.append(f"collect({attempt.batch_id}): {text} answered {outcome!r}")


def run_on(backend: str, program: Program) -> None:
    options: dict[str, Any] = (
        {"loop_factory": VirtualTimeLoop} if backend == "asyncio"
        else {"clock": trio.testing.MockClock(autojump_threshold=0)}
    )
    vendor, rec = anyio.run(run_program, program, backend=backend, backend_options=options)
    check(program, vendor, rec)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=EXAMPLES, deadline=None)
@given(program=programs())
def test_batch_programs_keep_the_documented_promises(backend: str, program: Program) -> None:
    run_on(backend, program)
