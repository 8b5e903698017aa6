"""BatchProvider against the FakeVendor's batch APIs, on the three wires that have one.

Runs go through the batch endpoints (one submission, no single request), each answered exactly as the same
request sent alone is (text and usage); batches are grouped by window and ``max_requests``; partial failures,
expiry, a failed batch and a cancelled one are typed errors; a cancelled call withdraws its request; the key
stays in its header.  Real clocks (a real server): short windows and poll intervals, conditions waited for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

from agentactors import (
    Agent,
    AnthropicProvider,
    BatchProvider,
    GeminiProvider,
    LLMRequest,
    LLMResponse,
    Message,
    OpenAIProvider,
    OpenAIResponsesProvider,
    ProviderError,
    Runtime,
    with_retry,
)
from agentactors.errors import ErrorKind
from agentactors.resilience.batch import BatchError, BatchUnsupportedError
from agentactors.testing import FakeError, FakeVendor

pytestmark = pytest.mark.anyio

KEY = "sk-fake-batch-key-0123456789"
WIRES = ["openai", "anthropic", "gemini"]


def make(fv: FakeVendor, wire: str) -> Any:
    if wire == "openai":
        return OpenAIProvider("gpt-4o-mini", api_key=KEY, base_url=fv.openai_base_url)
    if wire == "anthropic":
        return AnthropicProvider("claude-sonnet-4-5", api_key=KEY, base_url=fv.base_url)
    return GeminiProvider("gemini-2.5-flash", api_key=KEY, base_url=fv.base_url)


def batched(fv: FakeVendor, wire: str, **options: Any) -> BatchProvider:
    options = {"window": 0.1, "poll_every": 0.02, **options}
    return BatchProvider(make(fv, wire), **options)


def ask(text: str) -> LLMRequest:
    return LLMRequest([Message.user(text)], max_tokens=200)


async def gather(provider: BatchProvider, texts: list[str]) -> list[LLMResponse | BaseException]:
    """Each text asked at once, in its own task: its response, or what it raised."""
    out: list[LLMResponse | BaseException] = [RuntimeError("not answered")] * len(texts)

    async def one(i: int) -> None:
        try:
            out[i] = await provider.complete(ask(texts[i]))
        except ProviderError as exc:
            out[i] = exc

    async with anyio.create_task_group() as tg:
        for i in range(len(texts)):
            tg.start_soon(one, i)
    return out


@pytest.mark.parametrize("wire", WIRES)
async def test_runs_go_through_the_batch_endpoint_and_are_answered_as_single_requests(
    wire: str, anyio_backend: Any
) -> None:
    async with FakeVendor(expected_api_key=KEY) as fv:
        async with make(fv, wire) as alone:
            single = await alone.complete(ask("What is 2+2?"))
        fv.clear()
        (line,) = await gather(batched(fv, wire), ["What is 2+2?"])
        assert isinstance(line, LLMResponse)
        assert line.content == single.content == "Echo: What is 2+2?"
        assert line.usage == single.usage  # the same code path answered the line: the same usage
        assert line.stop_reason == single.stop_reason and line.provider == single.provider
        fv.clear()
        agent = Agent(batched(fv, wire))
        results: dict[int, Any] = {}
        async with Runtime() as rt:

            async def run(i: int) -> None:
                results[i] = await agent.run(f"question {i}", runtime=rt)

            async with anyio.create_task_group() as tg:
                for i in range(4):
                    tg.start_soon(run, i)
        assert fv.batches.count == 1 and fv.batches.submissions[0].size == 4
        assert fv.batches.single_requests == ()
        assert [results[i].content for i in range(4)] == [f"Echo: question {i}" for i in range(4)]
        assert all(results[i].error is None for i in range(4))
        assert all(not r.key_leaks and r.api_key_present for r in fv.requests)


@pytest.mark.parametrize("wire", WIRES)
async def test_an_item_the_vendor_fails_is_that_error_and_the_others_are_answered(
    wire: str, anyio_backend: Any
) -> None:
    async with FakeVendor(expected_api_key=KEY) as fv:
        fv.script("first", FakeError(400, message="bad request for this one"), "third")
        out = await gather(batched(fv, wire, max_requests=3), ["a", "b", "c"])
        answers = {r.content for r in out if isinstance(r, LLMResponse)}
        errors = [r for r in out if isinstance(r, ProviderError)]
        assert answers == {"first", "third"}
        (error,) = errors
        assert error.kind is ErrorKind.request and not error.retryable and error.status == 400
        assert not isinstance(error, BatchError)


@pytest.mark.parametrize("wire", WIRES)
async def test_expired_items_are_retryable_batch_errors(wire: str, anyio_backend: Any) -> None:
    async with FakeVendor(expected_api_key=KEY) as fv:
        fv.batches.plan(polls=1, expire_after=1)
        out = await gather(batched(fv, wire, max_requests=3), ["a", "b", "c"])
        assert sum(isinstance(r, LLMResponse) for r in out) == 1
        expired = [r for r in out if isinstance(r, BatchError)]
        assert len(expired) == 2
        assert all(e.reason == "expired" and e.retryable and e.kind is ErrorKind.transient for e in expired)
        assert {e.batch_id for e in expired} == {fv.batches.submissions[0].id}


@pytest.mark.parametrize("wire", WIRES)
async def test_a_failed_batch_fails_every_waiting_call(wire: str, anyio_backend: Any) -> None:
    async with FakeVendor(expected_api_key=KEY) as fv:
        fv.batches.plan(fail="the input could not be validated")
        out = await gather(batched(fv, wire), ["a", "b"])
        assert all(isinstance(r, ProviderError) for r in out)
        assert all("could not be validated" in str(r) for r in out)
        if wire == "anthropic":  # Anthropic has no failed batch: each of its items errors (an api_error)
            assert all(r.status == 500 and r.kind is ErrorKind.transient for r in out if isinstance(r, ProviderError))
        else:
            assert all(isinstance(r, BatchError) and r.reason == "failed" and not r.retryable for r in out)


@pytest.mark.parametrize("wire", WIRES)
async def test_a_batch_cancelled_at_the_vendor_gives_retryable_errors(wire: str, anyio_backend: Any) -> None:
    async with FakeVendor(expected_api_key=KEY) as fv:
        fv.batches.plan(polls=1_000_000)
        provider = batched(fv, wire)
        out: list[Any] = []

        async def call() -> None:
            try:
                await provider.complete(ask("a"))
            except ProviderError as exc:
                out.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await fv.wait_for(lambda _: fv.batches.count == 1 and fv.batches.submissions[0].polls >= 2, within=10)
            fv.batches.cancel(fv.batches.submissions[0].id)
        (error,) = out
        assert isinstance(error, BatchError) and error.reason == "cancelled" and error.retryable


async def test_max_requests_splits_the_calls_into_batches(anyio_backend: Any) -> None:
    async with FakeVendor(expected_api_key=KEY) as fv:
        out = await gather(batched(fv, "openai", window=5.0, max_requests=2), ["a", "b", "c", "d"])
        assert all(isinstance(r, LLMResponse) for r in out)
        # Four calls, two a batch: both batches full at once, so neither waited out its 5 s window.
        assert sorted(b.size for b in fv.batches.submissions) == [2, 2]


async def test_the_window_groups_calls_and_a_later_call_opens_a_new_batch(anyio_backend: Any) -> None:
    async with FakeVendor(expected_api_key=KEY) as fv:
        fv.batches.plan(polls=2)
        provider = batched(fv, "anthropic", window=0.3)
        answered: list[str] = []

        async def call(text: str, after: float) -> None:
            await anyio.sleep(after)
            answered.append((await provider.complete(ask(text))).content)

        async with anyio.create_task_group() as tg:
            tg.start_soon(call, "a", 0.0)
            tg.start_soon(call, "b", 0.05)  # inside a's window
            await fv.wait_for(lambda _: fv.batches.count == 1, within=10)
            tg.start_soon(call, "c", 0.0)  # after a's batch went: a batch of its own
        assert sorted(answered) == ["Echo: a", "Echo: b", "Echo: c"]
        assert [b.size for b in fv.batches.submissions] == [2, 1]


async def test_a_batch_is_polled_every_poll_every_until_it_ends(anyio_backend: Any) -> None:
    async with FakeVendor(expected_api_key=KEY) as fv:
        fv.batches.plan(polls=3)
        provider = batched(fv, "gemini", window=0.0, poll_every=0.1)
        started = anyio.current_time()
        await provider.complete(ask("a"))
        took = anyio.current_time() - started
        (batch,) = fv.batches.submissions
        assert batch.polls == 4 and batch.status == "completed"  # three "in progress", then the end
        assert took >= 0.4  # the first read one poll_every after submitting, then three more
        reads = [r for r in fv.requests if r.method == "GET" and r.path == f"/v1beta/batches/{batch.id}"]
        assert len(reads) == 4


@pytest.mark.parametrize("wire", WIRES)
async def test_a_cancelled_call_withdraws_its_request_before_the_batch_is_submitted(
    wire: str, anyio_backend: Any
) -> None:
    async with FakeVendor(expected_api_key=KEY) as fv:
        provider = batched(fv, wire, window=0.5)
        answered: list[str] = []

        async def call(text: str) -> None:
            answered.append((await provider.complete(ask(text))).content)

        async with anyio.create_task_group() as tg:
            tg.start_soon(call, "kept 1")
            with anyio.move_on_after(0.1):
                await call("withdrawn")  # the first caller: it drives the window, and hands it on when cancelled
            tg.start_soon(call, "kept 2")
        assert sorted(answered) == ["Echo: kept 1", "Echo: kept 2"]
        (batch,) = fv.batches.submissions
        assert batch.size == 2  # and each kept call got its own answer, though the first line was withdrawn


async def test_stream_delivers_the_batch_answer_whole(anyio_backend: Any) -> None:
    async with FakeVendor(expected_api_key=KEY) as fv:
        provider = batched(fv, "openai", window=0.0)
        assert provider.capabilities(None).streaming is False
        async with Runtime() as rt, Agent(provider).stream("streamed?", runtime=rt) as run:
            text = "".join([piece async for piece in run.text_stream()])
        assert text == "Echo: streamed?"
        assert fv.batches.count == 1 and fv.batches.single_requests == ()


async def test_the_key_never_leaves_its_header_nor_shows_in_errors(anyio_backend: Any) -> None:
    async with FakeVendor(expected_api_key=KEY) as fv:
        fv.script(FakeError(401, message=f"Incorrect API key provided: {KEY}"))
        provider = batched(fv, "anthropic", window=0.0)
        with pytest.raises(ProviderError) as raised:
            await provider.complete(ask("a"))
        assert KEY not in str(raised.value) and KEY not in repr(raised.value)
        assert KEY not in repr(provider)
        assert all(not r.key_leaks for r in fv.requests)
        assert all(KEY not in str(r.headers) and KEY not in r.path for r in fv.requests)
        other = AnthropicProvider("claude-sonnet-4-5", api_key="sk-wrong-key-99999", base_url=fv.base_url)
        wrong = BatchProvider(other, window=0.0)
        with pytest.raises(ProviderError) as refused:
            await wrong.complete(ask("a"))
        assert refused.value.status == 401 and refused.value.kind is ErrorKind.account


async def test_credentials_go_only_to_the_providers_own_origin(anyio_backend: Any) -> None:
    provider = OpenAIProvider("gpt-4o-mini", api_key=KEY, base_url="http://127.0.0.1:9/v1")
    headers = await provider.credential_headers("http://127.0.0.1:9/v1/batches")
    assert headers["authorization"] == f"Bearer {KEY}"
    with pytest.raises(ValueError) as refused:
        await provider.credential_headers("http://elsewhere.example/v1/batches/x/results")
    assert KEY not in str(refused.value)


@pytest.mark.parametrize(
    "build",
    [
        lambda url: OpenAIResponsesProvider("gpt-4o", api_key=KEY, base_url=url),
        lambda url: with_retry(OpenAIProvider("gpt-4o", api_key=KEY, base_url=url)),
        lambda url: GeminiProvider.vertex("gemini-2.5-flash", project="p", token_provider=lambda: "t"),
    ],
    ids=["responses", "decorated", "vertex"],
)
def test_a_wire_without_a_batch_api_is_refused_when_made(build: Callable[[str], Any]) -> None:
    with pytest.raises(BatchUnsupportedError) as refused:
        BatchProvider(build("http://127.0.0.1:9/v1"))
    assert refused.value.kind is ErrorKind.request and not refused.value.retryable


def test_bad_settings_are_refused() -> None:
    provider = OpenAIProvider("gpt-4o-mini", api_key=KEY, base_url="http://127.0.0.1:9/v1")
    for bad in ({"window": -1}, {"poll_every": float("nan")}, {"max_requests": 0}, {"max_requests": True}):
        with pytest.raises(ValueError):
            BatchProvider(provider, **bad)


async def test_a_batch_run_costs_the_vendors_batch_price(anyio_backend: Any) -> None:
    from agentactors import pricing

    async with FakeVendor(expected_api_key=KEY) as fv, Runtime() as rt:
        live = await Agent(make(fv, "openai")).run("the same job", runtime=rt)
        batch = await Agent(batched(fv, "openai", window=0.0)).run("the same job", runtime=rt)
        assert live.usage == batch.usage
        assert live.cost is not None and batch.cost is not None and live.cost.total > 0
        # genai-prices knows gpt-4o-mini's batch price: half the live one.
        assert batch.cost.total == pytest.approx(live.cost.total / 2)
        try:
            pricing.set_price("openai", "gpt-4o-mini", pricing.Price(input=1.0, output=3.0))
            pricing.set_batch_factor(0.4)  # a price of your own is scaled by the factor
            again = await Agent(batched(fv, "openai", window=0.0)).run("the same job", runtime=rt)
            assert again.cost is not None
            expected = (batch.usage.input_tokens * 1.0 + batch.usage.output_tokens * 3.0) / 1e6 * 0.4
            assert again.cost.total == pytest.approx(expected)
        finally:
            pricing.clear_prices()
            pricing.set_batch_factor(pricing.BATCH_FACTOR)


@pytest.mark.parametrize("wire", WIRES)
async def test_a_scripted_line_is_answered_as_the_script_says_tool_calls_and_usage_included(
    wire: str, anyio_backend: Any
) -> None:
    from agentactors import ToolSpec
    from agentactors.testing import FakeReply, FakeToolCall

    async with FakeVendor(expected_api_key=KEY) as fv:
        fv.script(FakeReply(tool_calls=[FakeToolCall("lookup", {"city": "Oslo"})], input_tokens=11, output_tokens=7))
        spec = ToolSpec("lookup", "Look a city up.", {"type": "object", "properties": {"city": {"type": "string"}},
                                                      "required": ["city"]})
        request = LLMRequest([Message.user("weather?")], tools=[spec], max_tokens=100)
        answer = await batched(fv, wire, window=0.0).complete(request)
        (call,) = answer.tool_calls
        assert (call.name, call.arguments) == ("lookup", {"city": "Oslo"})
        assert (answer.usage.input_tokens, answer.usage.output_tokens) == (11, 7)
        assert fv.pending_script == 0 and fv.batches.single_requests == ()


@pytest.mark.parametrize("wire", WIRES)
async def test_a_batch_its_callers_left_is_collected_by_its_id_in_another_provider(
    wire: str, anyio_backend: Any
) -> None:
    # The calls were cancelled once their batch was submitted (a process gone, without a journal): a fresh
    # BatchProvider reads the batch back by its id — each answer decoded as a waiting call's, by its custom id
    # (Gemini's by position: the vendor answers in order, without ids) — and nothing is submitted again.
    async with FakeVendor(expected_api_key=KEY) as fv:
        fv.batches.plan(polls=1_000_000)
        first = batched(fv, wire)
        texts = ["What is 2+2?", "Name a colour."]
        async with anyio.create_task_group() as tg:
            for text in texts:
                tg.start_soon(first.complete, ask(text))
            await fv.wait_for(lambda _: fv.batches.count == 1 and fv.batches.submissions[0].polls >= 1, within=10)
            tg.cancel_scope.cancel()
        (batch,) = fv.batches.submissions
        collector = batched(fv, wire)
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                collected: list[dict[str, Any]] = []

                async def collect() -> None:
                    collected.append(await collector.collect(batch.id if wire != "gemini" else f"batches/{batch.id}"))

                tg.start_soon(collect)
                await fv.wait_for(lambda _: fv.batches.submissions[0].polls >= 3, within=10)  # still running: polled
                fv.batches.finish(batch.id)
        (got,) = collected
        async with make(fv, wire) as alone:
            singles = [await alone.complete(ask(text)) for text in texts]
        if wire == "gemini":
            assert sorted(got) == ["0", "1"]
        else:
            assert set(got) == set(batch.custom_ids)
            for text in texts:
                assert [key for key in got if collector.is_item_of(key, ask(text))] != []
        assert sorted(a.content for a in got.values() if isinstance(a, LLMResponse)) == sorted(
            s.content for s in singles)
        by_text = {single.content: single for single in singles}
        for answer in got.values():
            assert isinstance(answer, LLMResponse) and answer.usage == by_text[answer.content].usage
            assert answer.provider_data is not None and answer.provider_data["batch"]["id"] == batch.id
        assert fv.batches.count == 1
