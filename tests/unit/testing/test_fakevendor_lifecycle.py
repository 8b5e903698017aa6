"""FakeVendor lifecycle: async (asyncio and trio) and sync use, clean shutdown, concurrency, the fixture."""

from __future__ import annotations

import threading
import time

import anyio
import httpx
import pytest

from agentactors.testing.fakevendor import FakeReply, FakeVendor
from tests.support.fakevendor import auth_headers, post, url

pytestmark = pytest.mark.anyio


def _server_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "fakevendor" and t.is_alive()]


async def test_async_context_serves_then_closes_the_port() -> None:
    before = len(_server_threads())
    async with FakeVendor() as fv:
        running = fv.running  # a local: mypy would hold fv.running True past the block's exit
        assert running
        assert fv.base_url.startswith("http://127.0.0.1:")
        assert fv.openai_base_url == fv.base_url + "/v1"
        assert len(_server_threads()) == before + 1
        async with httpx.AsyncClient() as client:
            health = await client.get(f"{fv.base_url}/health")
            assert health.status_code == 200
            assert health.json()["wires"] == ["openai", "responses", "anthropic", "gemini", "bedrock"]
            answer = await post(client, fv, "openai")
            assert answer.status_code == 200
        base = fv.base_url
    assert not fv.running
    assert len(_server_threads()) == before  # the server thread was joined
    async with httpx.AsyncClient() as client:
        with pytest.raises(httpx.ConnectError):
            await client.get(f"{base}/health")


def test_sync_start_stop() -> None:
    fv = FakeVendor()
    with pytest.raises(RuntimeError, match="not started"):
        _ = fv.base_url
    fv.start()
    try:
        with pytest.raises(RuntimeError, match="already started"):
            fv.start()
        response = httpx.post(url(fv, "anthropic"), json={"model": "m", "max_tokens": 5, "messages": [
            {"role": "user", "content": "hi"}]}, headers=auth_headers("anthropic"))
        assert response.status_code == 200
        assert response.json()["content"][0]["text"] == "Echo: hi"
    finally:
        fv.stop()
    fv.stop()  # idempotent
    assert not fv.running
    with FakeVendor() as again:  # and usable as a sync context manager
        assert httpx.get(f"{again.base_url}/health").status_code == 200


async def test_stopping_ends_pending_answers_at_once() -> None:
    results: list[object] = []
    async with httpx.AsyncClient(timeout=30) as client:
        async with anyio.create_task_group() as tg:
            fv = FakeVendor()
            await fv.__aenter__()
            # One answer waits before its headers, the other in the middle of its stream.
            fv.on(lambda r: FakeReply(text="a b c", chunk_latency=60) if r.stream else FakeReply(latency=60))

            async def call(stream: bool) -> None:
                try:
                    response = await post(client, fv, "openai", stream=stream)
                    results.append(response.status_code if not stream else await response.aread())
                except httpx.HTTPError as exc:
                    results.append(type(exc))

            tg.start_soon(call, False)
            tg.start_soon(call, True)
            await fv.wait_for(lambda rs: len(rs) == 2)
            started = time.monotonic()
            await fv.__aexit__(None, None, None)
            elapsed = time.monotonic() - started
    assert elapsed < 30.0  # not the 60 s the answers would take (generous for a loaded machine)
    assert len(results) == 2
    assert sorted(r.outcome for r in fv.requests) == ["aborted", "aborted"]


async def test_cancelled_while_starting_leaves_no_server() -> None:
    fv = FakeVendor()
    entered = False
    with anyio.CancelScope() as scope:
        scope.cancel()
        async with fv:
            entered = True
    assert not entered
    assert not fv.running


async def test_many_concurrent_requests_are_all_answered_and_recorded() -> None:
    async with FakeVendor(latency=0.01) as fv, httpx.AsyncClient(
        limits=httpx.Limits(max_connections=64)
    ) as client:
        statuses: list[int] = []

        async def one(i: int) -> None:
            wire = ("openai", "anthropic", "gemini")[i % 3]
            statuses.append((await post(client, fv, wire)).status_code)

        async with anyio.create_task_group() as tg:
            for i in range(60):
                tg.start_soon(one, i)
        assert statuses == [200] * 60
        records = fv.requests
        assert sorted(r.index for r in records) == list(range(1, 61))
        assert {r.wire for r in records} == {"openai", "anthropic", "gemini"}
        assert all(r.outcome == "ok" for r in records)
        assert fv.stats["outcomes"] == {"ok": 60}


def test_the_fixture_yields_a_started_vendor(fake_vendor: FakeVendor) -> None:
    assert fake_vendor.running
    assert fake_vendor.requests == ()
    assert httpx.get(f"{fake_vendor.base_url}/health").status_code == 200


async def test_the_fixture_works_from_async_tests(fake_vendor: FakeVendor) -> None:
    async with httpx.AsyncClient() as client:
        response = await post(client, fake_vendor, "gemini")
    assert response.status_code == 200
    assert fake_vendor.requests[0].wire == "gemini"


async def test_wait_for_times_out_with_a_clear_error(fake_vendor: FakeVendor) -> None:
    with pytest.raises(TimeoutError, match="condition not met"):
        await fake_vendor.wait_for(lambda rs: len(rs) > 0, within=0.05)


def test_stopping_does_not_wait_for_idle_keep_alive_connections() -> None:
    with httpx.Client() as client:
        fv = FakeVendor()
        fv.start()
        try:
            response = client.post(url(fv, "openai"), headers=auth_headers("openai"),
                                   json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
            assert response.status_code == 200
        finally:
            started = time.monotonic()
            fv.stop()  # the client still holds its pooled connection open
        assert time.monotonic() - started < 30.0  # not the 120 s keep-alive timer
