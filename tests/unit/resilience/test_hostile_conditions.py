"""The resilience decorators and the cost features under hostile conditions: on virtual time, both backends.

Each test here pins a failure found by an adversarial review (a request error of the hedge copy that left
the first copy running, a hedge sent to a member that cannot carry the request, a NaN that silently
disables a retry deadline).  The cost side is in ``tests/unit/test_cost_hostile_values.py``.
"""

from __future__ import annotations

import json
import math
from typing import Any

import anyio
import anyio.lowlevel
import httpx
import pytest

from agentactors import BatchProvider, LLMResponse, Message, OpenAIProvider
from agentactors.errors import (
    CircuitOpenError,
    ErrorKind,
    ProviderError,
    StreamInterruptedError,
    UnsupportedToolChoiceError,
)
from agentactors.events import HedgeSent
from agentactors.messages import LLMRequest, TextDelta
from agentactors.providers.scripted import ScriptedProvider, StreamCut
from agentactors.resilience import CircuitState, with_circuit_breaker, with_fallback, with_hedge, with_retry
from agentactors.resilience.batch import BatchError
from tests.support.resilience import FORCED_TOOL, REQ, http_error, recording

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class _Timed:
    """A script item factory: each call answers (or fails with) the next outcome after its delay, and says
    whether it was cancelled (its request closed) instead."""

    def __init__(self, plan: list[tuple[float, Any]]) -> None:
        self.plan = list(plan)
        self.cancelled: list[float] = []

    def __call__(self, request: LLMRequest) -> Any:
        delay, outcome = self.plan.pop(0)

        async def answer() -> Any:
            try:
                await anyio.sleep(delay)
            except anyio.get_cancelled_exc_class():
                self.cancelled.append(delay)
                raise
            if isinstance(outcome, BaseException):
                raise outcome
            return outcome

        return answer()


# --- hedging ----------------------------------------------------------------------------------------


async def test_a_request_error_of_the_hedge_copy_ends_the_call_at_once_and_closes_the_first_copy() -> None:
    # The mirror of test_hedge's first-copy case: the first copy runs in the caller's task, so a request
    # error of the hedge must cancel it rather than wait for it (and then raise anyway).
    refused = ProviderError("bad request", provider="scripted", kind=ErrorKind.request)
    timed = _Timed([(100.0, "late"), (2.0, refused)])
    hedged = with_hedge(ScriptedProvider(timed), after=1.0, max_extra=1.0)
    with anyio.fail_after(500):
        start = anyio.current_time()
        with pytest.raises(ProviderError) as caught:
            await hedged.complete(REQ)
        took = anyio.current_time() - start
    assert caught.value.kind is ErrorKind.request
    assert took == pytest.approx(3.0)  # 1 s before the hedge, then its 2 s: not the first copy's 100 s
    assert timed.cancelled == [100.0]  # the first copy's request was closed: it would have failed alike


async def test_a_hedge_is_never_sent_to_a_member_that_rejects_the_forced_tool_choice() -> None:
    # The hedge target `to` cannot carry the forced choice: sending it there raises UnsupportedToolChoiceError,
    # which would end (or fail) a call the first copy serves fine.  No hedge may be sent at all.
    primary = ScriptedProvider(_Timed([(5.0, "from primary")]), name="primary")
    incapable = ScriptedProvider(["never"], name="other", carries_forced_tool_choice=False)
    hedged = with_hedge(primary, after=1.0, max_extra=1.0, to=incapable)
    with anyio.fail_after(500), recording() as recorder:
        response = await hedged.complete(FORCED_TOOL)
    assert response.content == "from primary"
    assert hedged.hedged == 0 and incapable.calls == 0
    assert not [e for e in recorder.events if isinstance(e, HedgeSent)]


async def test_a_streamed_hedge_is_never_sent_to_a_member_that_rejects_the_forced_tool_choice() -> None:
    primary = ScriptedProvider(_Timed([(5.0, "from primary")]), name="primary")
    incapable = ScriptedProvider(["never"], name="other", carries_forced_tool_choice=False)
    hedged = with_hedge(primary, after=1.0, max_extra=1.0, to=incapable)
    with anyio.fail_after(500):
        async with hedged.stream(FORCED_TOOL) as events:
            got = [event async for event in events]
    assert got  # the primary's stream, whole
    assert hedged.hedged == 0 and incapable.calls == 0


async def test_an_unsupported_tool_choice_of_the_first_copy_is_raised_at_once_and_never_hedged() -> None:
    provider = ScriptedProvider(["never", "never"], carries_forced_tool_choice=False)
    hedged = with_hedge(provider, after=0.0, max_extra=1.0)
    with anyio.fail_after(500), pytest.raises(UnsupportedToolChoiceError):
        await hedged.complete(FORCED_TOOL)
    assert provider.calls == 0 and hedged.hedged == 0


# --- fallback: a stream never mixes two members' deltas -------------------------------------------------


async def test_a_fallback_stream_cut_after_its_first_delta_is_interrupted_never_continued_by_another_member(
) -> None:
    primary = ScriptedProvider([StreamCut("alpha beta gamma", http_error(503))], name="primary")
    backup = ScriptedProvider(["from backup"], name="backup")
    chain = with_fallback(primary, with_retry(backup, max_attempts=3, base_delay=0.1))
    seen: list[str] = []
    with anyio.fail_after(500):
        with pytest.raises(StreamInterruptedError):
            async with with_retry(chain, max_attempts=3, base_delay=0.1).stream(REQ) as events:
                async for event in events:
                    if isinstance(event, TextDelta):
                        seen.append(event.text)
    assert "".join(seen) == "alpha beta gamma"[: len("".join(seen))] and seen  # the primary's deltas only
    assert backup.calls == 0 and primary.calls == 1  # nothing replayed, nothing moved after the first delta


# --- retry ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["deadline", "base_delay", "max_delay", "multiplier"])
def test_a_nan_retry_setting_is_refused_not_silently_ignored(field: str) -> None:
    # A NaN deadline compared false with every time: it would never stop a retry.
    with pytest.raises(ValueError):
        options: dict[str, Any] = {field: math.nan}
        with_retry(ScriptedProvider(["x"]), **options)


# --- the batch API: a results file with malformed lines, duplicates, missing and unknown ids --------


class _HostileBatches:
    """OpenAI's Files + Batch API in memory (``httpx.MockTransport``: no socket, virtual time applies), whose
    results file is rewritten by ``mangle`` (each answered line's JSON text, by the request's text)."""

    def __init__(self, mangle: dict[str, list[str]] | None = None, *, done: bool = True) -> None:
        self.mangle = mangle or {}
        self.done = done
        self.lines: dict[str, list[dict[str, Any]]] = {}
        self.reads = 0

    def handler(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/v1/files":
            body = request.read().decode()
            self.lines[f"file-{len(self.lines)}"] = [
                json.loads(t) for t in body.splitlines() if t.startswith('{"custom_id"')
            ]
            return httpx.Response(200, json={"id": f"file-{len(self.lines) - 1}"})
        if path == "/v1/batches":
            file_id = json.loads(request.read())["input_file_id"]
            return httpx.Response(200, json={"id": f"batch-{file_id}", "status": "validating"})
        if path.startswith("/v1/batches/"):
            self.reads += 1
            batch_id = path.rsplit("/", 1)[1]
            status = "completed" if self.done else "in_progress"
            output = batch_id.removeprefix("batch-") if self.done else None
            return httpx.Response(200, json={"id": batch_id, "status": status, "output_file_id": output})
        if path.endswith("/content"):
            out: list[str] = []
            for line in self.lines[path.split("/")[3]]:
                text = line["body"]["messages"][-1]["content"]
                good = json.dumps({"custom_id": line["custom_id"],
                                   "response": {"status_code": 200, "body": _echo(line, text)}})
                bad = json.dumps({"custom_id": line["custom_id"],
                                  "response": {"status_code": 500, "body": {"error": {"message": "dup"}}}})
                for shape in self.mangle.get(text, ["good"]):
                    out.append({"good": good, "error": bad, "malformed": '{"custom_id": "' + line["custom_id"],
                                "unknown": good.replace(line["custom_id"], "not-ours")}.get(shape, ""))
            return httpx.Response(200, content="\n".join(out).encode())
        return httpx.Response(404, json={"error": {"message": "no such endpoint"}})


def _echo(line: dict[str, Any], text: str) -> dict[str, Any]:
    return {"id": "c", "object": "chat.completion", "model": line["body"]["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": f"Echo: {text}"},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}


def _batch_provider(fake: _HostileBatches) -> BatchProvider:
    client = httpx.AsyncClient(transport=httpx.MockTransport(fake.handler))
    inner = OpenAIProvider("gpt-4o-mini", api_key="sk-unit-key-000", base_url="https://api.openai.com/v1",
                           http_client=client)
    return BatchProvider(inner, window=1.0, poll_every=10.0)


async def _outcome(p: BatchProvider, text: str, into: dict[str, LLMResponse | BaseException]) -> None:
    try:
        into[text] = await p.complete(LLMRequest([Message.user(text)]))
    except Exception as exc:
        into[text] = exc


async def test_a_malformed_results_line_fails_only_its_own_call_and_a_duplicate_never_replaces_an_answer(
    anyio_backend: Any,
) -> None:
    # One malformed line must not throw away the other (paid) answers of the batch: they are delivered, and
    # the call whose line could not be read gets a typed, retryable BatchError.  A duplicate line for an
    # answered item (here an error after the answer) does not replace the answer; a line with an id that is
    # not ours is ignored.
    fake = _HostileBatches({"broken": ["malformed"], "twice": ["good", "error"], "stray": ["unknown", "good"]})
    p = _batch_provider(fake)
    got: dict[str, LLMResponse | BaseException] = {}
    with anyio.fail_after(500):
        async with anyio.create_task_group() as tg:
            for text in ("fine", "broken", "twice", "stray"):
                tg.start_soon(_outcome, p, text, got)
    assert set(got) == {"fine", "broken", "twice", "stray"}  # every call got an outcome: nothing dropped
    for text in ("fine", "twice", "stray"):
        answer = got[text]
        assert isinstance(answer, LLMResponse) and answer.content == f"Echo: {text}", (text, answer)
    broken = got["broken"]
    assert isinstance(broken, BatchError) and broken.reason == "missing" and broken.retryable


async def test_a_call_on_a_batch_that_never_finishes_leaves_when_cancelled_and_leaves_nothing_behind(
    anyio_backend: Any,
) -> None:
    fake = _HostileBatches(done=False)
    p = _batch_provider(fake)
    got: dict[str, LLMResponse | BaseException] = {}
    with anyio.fail_after(5_000):
        with anyio.move_on_after(600.0) as gave_up:
            await _outcome(p, "forever", got)
        assert gave_up.cancelled_caught and not got
        reads = fake.reads
        await anyio.sleep(100.0)
    assert reads > 0 and fake.reads == reads  # nobody polls once the only waiter left: no task behind


# --- circuit breaker: probes under concurrency and cancellation ------------------------------------------


async def test_half_open_admits_exactly_its_probes_and_a_cancelled_probe_gives_its_permit_back() -> None:
    # Five callers at once against a half-open circuit with two probe permits: two reach the vendor, three
    # are refused without a call.  Cancelling one probe (its caller gave up) neither wedges the circuit
    # half-open nor counts as a failure: its permit goes to the next caller, and successes close it.
    sent: list[float] = []

    async def slow(request: LLMRequest) -> str:
        sent.append(anyio.current_time())
        await anyio.sleep(10.0)
        return "ok"

    outcomes: list[Any] = [http_error(503), slow, slow, slow, "ok"]
    breaker = with_circuit_breaker(
        ScriptedProvider(outcomes, model="m"), consecutive_failures=1, half_open_max_calls=2, open_duration=30.0
    )
    refused: list[CircuitOpenError] = []
    answered: list[str] = []

    async def caller(scope: anyio.CancelScope | None = None) -> None:
        try:
            if scope is None:
                answered.append((await breaker.complete(REQ)).content)
            else:
                with scope:
                    answered.append((await breaker.complete(REQ)).content)
        except CircuitOpenError as exc:
            refused.append(exc)

    with anyio.fail_after(500):
        with pytest.raises(ProviderError):
            await breaker.complete(REQ)
        await anyio.sleep(30.0)
        doomed = anyio.CancelScope()
        async with anyio.create_task_group() as tg:
            tg.start_soon(caller, doomed)  # the first probe, cancelled below
            await anyio.lowlevel.checkpoint()
            for _ in range(4):
                tg.start_soon(caller)
            await anyio.sleep(1.0)
            assert len(sent) == 2 and len(refused) == 3  # exactly the two probes were sent
            assert breaker.stats_for().probes_in_flight == 2
            doomed.cancel()
            await anyio.sleep(0.5)
            assert breaker.stats_for().probes_in_flight == 1  # the cancelled probe's permit is free again
            assert breaker.state is CircuitState.half_open
            tg.start_soon(caller)  # takes the freed permit
            await anyio.sleep(0.5)
            assert len(sent) == 3
        assert answered == ["ok", "ok"]
        assert breaker.state is CircuitState.closed
        assert (await breaker.complete(REQ)).content == "ok"
