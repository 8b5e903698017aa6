"""A resource closed in its own event loop when its owner is collected or the loop ends (``agentactors._run_end``),
and the HTTP providers that rely on it: a provider nobody closes leaves no socket open."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentactors import Agent, OpenAIProvider
from agentactors._run_end import close_at_run_end
from agentactors.testing import FakeVendor

BACKENDS = ["asyncio", "trio"]


class Owner:
    """Something that owns a resource (a provider owns its pool)."""


class Resource:
    def __init__(self) -> None:
        self.closed = 0
        self.event: anyio.Event | None = None  # set when closed, if there is one

    async def aclose(self) -> None:
        await anyio.lowlevel.checkpoint()  # a real close awaits (a socket's shutdown)
        self.closed += 1
        if self.event is not None:
            self.event.set()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_resource_whose_owner_lives_on_is_closed_when_its_run_ends(backend: str) -> None:
    resource, owner = Resource(), Owner()
    kept: list[Any] = []

    async def main() -> None:
        kept.append(await close_at_run_end(owner, resource.aclose))
        await anyio.lowlevel.checkpoint()
        assert resource.closed == 0

    anyio.run(main, backend=backend)
    assert resource.closed == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_resource_whose_owner_is_collected_is_closed_in_its_run(backend: str) -> None:
    resource = Resource()
    seen: list[int] = []

    async def main() -> None:
        resource.event = anyio.Event()
        owner = Owner()
        release = await close_at_run_end(owner, resource.aclose)
        gone = weakref.ref(owner)
        del owner, release  # (the owner keeps release: both go together)
        gc.collect()
        assert gone() is None  # the arrangement does not keep the owner alive
        with anyio.fail_after(5):
            await resource.event.wait()
        seen.append(resource.closed)

    anyio.run(main, backend=backend)
    assert seen == [1] and resource.closed == 1  # closed in the run, not once more at its end


@pytest.mark.parametrize("backend", BACKENDS)
def test_release_closes_at_once_and_ends_the_arrangement(backend: str) -> None:
    resource, owner = Resource(), Owner()
    tasks: list[int] = []

    async def main() -> None:
        if backend == "trio":
            import trio

            tasks.append(trio.lowlevel.current_statistics().tasks_living)
        release = await close_at_run_end(owner, resource.aclose)
        await anyio.lowlevel.checkpoint()
        await release()
        assert resource.closed == 1
        if backend == "trio":
            await trio.sleep(0.01)
            tasks.append(trio.lowlevel.current_statistics().tasks_living)  # its system task has ended

    anyio.run(main, backend=backend)
    assert resource.closed == 1  # not closed again when the run ends
    if backend == "trio":
        assert tasks[0] == tasks[1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_failing_close_at_the_end_of_a_run_does_not_fail_the_run(backend: str) -> None:
    class Failing(Resource):
        async def aclose(self) -> None:
            await super().aclose()
            raise OSError("the socket was already gone")

    resource, owner = Failing(), Owner()
    kept: list[Any] = []

    async def main() -> int:
        kept.append(await close_at_run_end(owner, resource.aclose))
        return 7

    # (asyncio reports a failing finaliser through the loop's exception handler; trio's system task logs it.)
    assert anyio.run(main, backend=backend) == 7
    assert resource.closed == 1


# -- the providers that rely on it ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def vendor() -> Any:
    fv = FakeVendor()
    fv.start()
    yield fv
    fv.stop()


@pytest.mark.parametrize("transport", ["auto", "h11", "httpx"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_provider_nobody_closes_leaves_no_socket_open(
    backend: str, transport: str, vendor: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A script's agent.run inside anyio.run, no Runtime, no `async with provider`: when the run ends, the pool
    # goes with it.  (The suite turns ResourceWarning — "unclosed <socket ...>" — into an error, so a socket
    # collected open fails this test at the gc.collect() below.)
    if transport != "auto":
        monkeypatch.setenv("AGENTACTORS_HTTP_TRANSPORT", transport)
    agents = [Agent(OpenAIProvider("gpt-4.1-mini", base_url=vendor.openai_base_url, api_key="sk-test"))]

    async def main() -> str:
        return (await agents[0].run("hello")).content

    assert anyio.run(main, backend=backend) == "Echo: hello"
    agents.clear()
    gc.collect()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_provider_dropped_mid_run_closes_its_pool_in_the_run(backend: str, vendor: Any) -> None:
    async def main() -> None:
        provider = OpenAIProvider("gpt-4.1-mini", base_url=vendor.openai_base_url, api_key="sk-test")
        assert (await Agent(provider).run("hello")).content == "Echo: hello"
        gone = weakref.ref(provider)
        del provider
        gc.collect()
        assert gone() is None
        await anyio.sleep(0.2)  # its pool is closed in a task of the loop meanwhile

    anyio.run(main, backend=backend)
    gc.collect()
