"""Per-runtime shared values (``rt.service``) and the shared-provider registry built on it.

``rt.service(key, build, cleanup=...)``: one value per key per runtime, built on first use; the cleanups
run at exit, after every actor stopped, newest first.  ``ProviderActor.shared(rt, provider, **budgets)``:
one ProviderActor per provider object per runtime, budgets checked, the providers closed at exit.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from agentactors.actors import Runtime
from agentactors.gateway import Complete, ProviderActor
from agentactors.messages import LLMRequest, Message
from agentactors.providers.scripted import ScriptedProvider

pytestmark = pytest.mark.anyio

REQUEST = LLMRequest([Message.user("hello")])


async def test_a_service_is_built_once_per_key_and_runtime() -> None:
    built: list[str] = []

    def build(name: str) -> Any:
        def make() -> list[str]:
            built.append(name)
            return [name]

        return make

    async with Runtime() as rt:
        first = rt.service("a", build("a"))
        assert rt.service("a", build("again")) is first
        assert rt.service(("b", 1), build("b")) == ["b"]
        assert built == ["a", "b"]
    async with Runtime() as other:
        assert other.service("a", build("a")) is not first  # per runtime
    assert built == ["a", "b", "a"]


async def test_cleanups_run_at_exit_after_the_actors_stopped_newest_first(caplog: pytest.LogCaptureFixture) -> None:
    order: list[str] = []

    class Stopping:
        async def receive(self, message: Any) -> Any:
            return message

        async def on_stop(self) -> None:
            order.append("on_stop")

    async def cleanup(value: str) -> None:
        order.append(f"cleanup {value}")
        if value == "broken":
            raise RuntimeError("cleanup failed")

    with caplog.at_level(logging.WARNING, logger="agentactors.actors"):
        async with Runtime() as rt:
            ref = rt.spawn(Stopping)
            await ref.ask("start it")
            rt.service("first", lambda: "first", cleanup=cleanup)
            rt.service("broken", lambda: "broken", cleanup=cleanup)
            rt.service("last", lambda: "last", cleanup=cleanup)
            rt.service("last", lambda: "not built", cleanup=cleanup)  # already there: no second cleanup
            assert order == []
    assert order == ["on_stop", "cleanup last", "cleanup broken", "cleanup first"]
    assert any("a runtime cleanup raised RuntimeError: cleanup failed" in r.getMessage() for r in caplog.records)


async def test_a_service_needs_a_running_runtime() -> None:
    rt = Runtime()
    with pytest.raises(RuntimeError, match="not running"):
        rt.service("k", object)
    async with rt:
        pass
    with pytest.raises(RuntimeError, match="not running"):
        rt.service("k", object)


# -- the shared-provider registry -------------------------------------------------------------------


async def test_one_provider_actor_per_provider_object_closed_at_exit() -> None:
    a, b = ScriptedProvider(lambda request: "a"), ScriptedProvider(lambda request: "b")
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, a)
        assert ProviderActor.shared(rt, a) is ref
        other = ProviderActor.shared(rt, b)
        assert other is not ref
        assert (await ref.ask(Complete(REQUEST))).content == "a"
        assert (await other.ask(Complete(REQUEST))).content == "b"
        assert ref.name == "provider:scripted"
        assert not a.closed and not b.closed
    assert a.closed and b.closed  # the runtime's exit closes the providers it shares


async def test_conflicting_budgets_are_a_value_error_and_none_means_the_one_there_is() -> None:
    provider = ScriptedProvider(lambda request: "ok")
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, provider, max_concurrency=4, requests_per_minute=600)
        assert ref.actor.max_concurrency == 4
        assert ProviderActor.shared(rt, provider) is ref
        assert ProviderActor.shared(rt, provider, max_concurrency=4, requests_per_minute=600) is ref
        with pytest.raises(ValueError, match="already has a ProviderActor"):
            ProviderActor.shared(rt, provider, max_concurrency=8)


async def test_a_stopped_shared_actor_is_replaced_on_the_next_call() -> None:
    provider = ScriptedProvider(lambda request: "ok")
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, provider, max_concurrency=2)
        await rt.stop(ref)
        fresh = ProviderActor.shared(rt, provider, max_concurrency=8)  # new budgets are fine now
        assert fresh is not ref and not fresh.stopped
        assert fresh.actor.max_concurrency == 8
        assert (await fresh.ask(Complete(REQUEST))).content == "ok"
    assert provider.closed


async def test_a_provider_whose_close_raises_is_logged_and_the_others_are_closed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Unclosable(ScriptedProvider):
        async def aclose(self) -> None:
            raise OSError("socket gone")

    broken, fine = Unclosable(lambda request: "x", name="broken"), ScriptedProvider(lambda request: "y")
    with caplog.at_level(logging.WARNING, logger="agentactors.actors"):
        async with Runtime() as rt:
            ProviderActor.shared(rt, broken)
            ProviderActor.shared(rt, fine)
    assert fine.closed
    assert any("closing provider" in r.getMessage() and "socket gone" in r.getMessage() for r in caplog.records)
