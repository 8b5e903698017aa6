"""A BatchProvider call cancelled while its batch's status is being read is billed alike on asyncio and trio.

Seen before: on trio, a ``run_many`` over a ``BatchProvider`` cancelled while a run's call waited in a submitted
vendor batch at times charged nothing for the call that *drove* the batch — neither its run's slot nor the
``CostBudget`` counted its estimate.  The driver was cancelled mid status read, while its HTTP client was opening a
connection: trio's ``open_tcp_stream`` connects in a nursery (happy eyeballs), and a nursery cancelled from outside
raises a ``BaseExceptionGroup`` of ``Cancelled`` — not the ``Cancelled`` every layer's ``isinstance`` test looked
for (the batch's own, the ``ProviderActor``'s), so nobody noted the call as cut short.  The rule: a call whose
batch was submitted is billed by the vendor, however the cancellation reached it — noted at its estimate (its prompt
at the batch price), and what leaves the call is anyio's cancellation exception itself, as on asyncio.

The vendor is an in-memory OpenAI Batch API behind ``httpx.MockTransport`` (virtual time): its status read, once
``connecting`` is set, hangs as a connection being opened does — on trio inside a nursery, as ``open_tcp_stream``
does; on asyncio in a task group, whose cancellation is a plain ``CancelledError`` (as asyncio's own connect's is).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest

from agentactors import Agent, BatchProvider, CostBudget, InMemoryRecorder, LLMRequest, Message, OpenAIProvider, Runtime
from agentactors.agent.batch import results_of
from agentactors.gateway.provider import estimate_tokens
from agentactors.loop.result import RunResult
from agentactors.pricing import CutShort, Price, set_price, take_cut_short
from tests.support.prices import gpt_4o_priced  # noqa: F401  (an autouse fixture)

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

KEY = "sk-unit-batch-key-0000"
MODEL = "gpt-4o-mini"
WINDOW, POLL_EVERY = 1.0, 10.0
CANCEL_AT = 15.0  # submitted at WINDOW, first status read at WINDOW + POLL_EVERY: it is still connecting


@asynccontextmanager
async def _connecting(backend: str) -> AsyncIterator[None]:
    """A connection being opened, as the HTTP client's backend does it: in a nursery on trio."""
    if backend == "trio":
        import trio

        async with trio.open_nursery() as nursery:  # trio.open_tcp_stream's attempts run in one
            nursery.start_soon(trio.sleep_forever)
            yield
    else:
        yield


class Vendor:
    """OpenAI's Files + Batch API, in memory; its batches never end, and a status read hangs once ``connecting``."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.lines: dict[str, int] = {}
        self.reads = 0
        self.connecting = True

    async def handler(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/v1/files":
            body = (await request.aread()).decode()
            file_id = f"file-{len(self.lines)}"
            self.lines[file_id] = sum(1 for t in body.splitlines() if t.startswith('{"custom_id"'))
            return httpx.Response(200, json={"id": file_id})
        if path == "/v1/batches":
            file_id = json.loads(await request.aread())["input_file_id"]
            return httpx.Response(200, json={"id": f"batch-{file_id}", "status": "validating"})
        if path.startswith("/v1/batches/"):
            self.reads += 1
            if self.connecting:
                async with _connecting(self.backend):
                    await anyio.sleep_forever()
            return httpx.Response(200, json={"id": path.rsplit("/", 1)[1], "status": "in_progress"})
        return httpx.Response(404, json={"error": {"message": "no such endpoint"}})


def _provider(vendor: Vendor, **options: Any) -> BatchProvider:
    client = httpx.AsyncClient(transport=httpx.MockTransport(vendor.handler))
    inner = OpenAIProvider(MODEL, api_key=KEY, base_url="https://api.openai.com/v1", http_client=client)
    return BatchProvider(inner, window=WINDOW, poll_every=POLL_EVERY, **options)


def _billed(p: BatchProvider, request: LLMRequest) -> CutShort:
    """What a call of ``request`` left in a submitted batch is billed: its prompt, at the batch price."""
    return CutShort(p.name, MODEL, estimate_tokens(request, max_output=0), batch=True)


async def test_calls_cancelled_while_their_batch_status_is_read_are_noted_as_cut_short(anyio_backend_name: str) -> None:
    # Two calls in one batch: the first drives it (its status read is connecting), the other waits on it.
    vendor = Vendor(anyio_backend_name)
    p = _provider(vendor)
    requests = [LLMRequest([Message.user(f"question {i}")], model=MODEL) for i in range(2)]
    left: list[BaseException] = []

    async def call(request: LLMRequest) -> None:
        try:
            await p.complete(request)
        except BaseException as exc:
            left.append(exc)
            raise

    with anyio.move_on_after(CANCEL_AT) as scope:
        async with anyio.create_task_group() as tg:
            for request in requests:
                tg.start_soon(call, request)
    assert scope.cancelled_caught and vendor.reads == 1 and p.submitted == 1
    # What leaves each call is the cancellation itself (not a group of them): the layers around test for it.
    assert [type(exc) for exc in left] == [anyio.get_cancelled_exc_class()] * 2
    for request in requests:
        assert take_cut_short(request) == (_billed(p, request),)


def _expected(p: BatchProvider, text: str) -> float:
    """The estimate a run's call of ``text`` is charged at (its prompt at the batch price), as the run sends it."""
    cost = _billed(p, LLMRequest([Message.user(text)], model=MODEL)).cost()
    assert cost is not None and cost.estimated == cost.total > 0
    return cost.total


async def test_a_run_cancelled_while_its_batch_status_is_read_is_charged_the_estimate(anyio_backend_name: str) -> None:
    # agent.run (through the ProviderActor): its call drives the batch, cancelled mid status read.
    set_price("openai", MODEL, Price(1.0, 4.0))
    vendor = Vendor(anyio_backend_name)
    p = _provider(vendor)
    budget = CostBudget()
    async with Runtime() as rt:
        with anyio.move_on_after(CANCEL_AT) as scope, budget:
            await Agent(p).run("job", runtime=rt)
    assert scope.cancelled_caught and vendor.reads == 1
    assert budget.estimated == pytest.approx(_expected(p, "job"))
    assert budget.spent == pytest.approx(budget.estimated)


async def test_a_cancelled_run_many_charges_every_run_its_call_left_in_the_batch(anyio_backend_name: str) -> None:
    # run_many: three runs' calls in one batch, the driving run's included — each slot and the budget charge each.
    set_price("openai", MODEL, Price(1.0, 4.0))
    vendor = Vendor(anyio_backend_name)
    p = _provider(vendor, max_requests=3)
    budget = CostBudget()
    found: list[list[RunResult[Any]] | None] = []
    texts = [f"job {i}" for i in range(3)]
    async with Runtime() as rt:
        with anyio.move_on_after(CANCEL_AT) as scope, budget:
            try:
                await Agent(p).run_many(texts, runtime=rt)
            except anyio.get_cancelled_exc_class() as exc:
                found.append(results_of(exc))
                raise
    assert scope.cancelled_caught and vendor.reads == 1 and p.submitted == 1
    (results,) = found
    assert results is not None and len(results) == 3
    for text, result in zip(texts, results, strict=True):
        assert result.cancelled and result.cost is not None
        assert result.cost.estimated == pytest.approx(_expected(p, text))
        assert result.cost.total == pytest.approx(result.cost.estimated)
    assert budget.estimated == pytest.approx(sum(_expected(p, text) for text in texts))
    assert budget.spent == pytest.approx(budget.estimated)


@pytest.mark.parametrize("streamed", [False, True], ids=["call", "stream"])
async def test_a_single_call_cancelled_while_connecting_is_charged_alike(
    anyio_backend_name: str, streamed: bool
) -> None:
    # The same cancellation without a batch: a plain provider's call (or stream: a run with on_token), through the
    # ProviderActor, cancelled while its connection is being opened — charged at the full price's estimate on both
    # backends (docs/costs.md: conservative, a call cancelled mid-connect is charged too).
    set_price("openai", MODEL, Price(1.0, 4.0))
    backend = anyio_backend_name

    async def handler(request: httpx.Request) -> httpx.Response:
        async with _connecting(backend):
            await anyio.sleep_forever()
        raise AssertionError("never answered")

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    provider = OpenAIProvider(MODEL, api_key=KEY, base_url="https://api.openai.com/v1", http_client=client)
    budget = CostBudget()
    async with Runtime() as rt:
        with anyio.move_on_after(CANCEL_AT) as scope, budget:
            if streamed:
                await Agent(provider).run("job", runtime=rt, on_token=lambda text: None)
            else:
                await Agent(provider).run("job", runtime=rt)
    assert scope.cancelled_caught
    cost = CutShort(provider.name, MODEL, estimate_tokens(LLMRequest([Message.user("job")], model=MODEL),
                                                          max_output=0)).cost()
    assert cost is not None and cost.total > 0
    assert budget.estimated == pytest.approx(cost.total)
    assert budget.spent == pytest.approx(budget.estimated)


async def test_a_run_cancelled_while_its_call_connects_is_recorded_cancelled(anyio_backend_name: str) -> None:
    # What leaves the provider is the cancellation itself on both backends (HTTPProvider takes trio's group of
    # Cancelled for the cancellation it is): the run is recorded cancelled, not raised with a BaseExceptionGroup.
    backend = anyio_backend_name
    seen: list[BaseException] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        async with _connecting(backend):
            await anyio.sleep_forever()
        raise AssertionError("never answered")

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    provider = OpenAIProvider(MODEL, api_key=KEY, base_url="https://api.openai.com/v1", http_client=client)
    request = LLMRequest([Message.user("job")], model=MODEL)
    with anyio.move_on_after(CANCEL_AT):
        try:
            await provider.complete(request)
        except BaseException as exc:
            seen.append(exc)
            raise
    assert len(seen) == 1 and isinstance(seen[0], anyio.get_cancelled_exc_class()), repr(seen[0])
    recorder = InMemoryRecorder()
    async with Runtime() as rt:
        with anyio.move_on_after(CANCEL_AT):
            await Agent(provider, recorders=[recorder]).run("job", runtime=rt)
    (finished,) = recorder.of_type("run.finished")
    assert finished.data.get("cancelled") is True, finished.data
    await provider.aclose()
