"""A factory that cannot be shipped to the Ray workers: a TypeError naming the agent_factory and, when it can be
found, the module global or closed-over variable to blame — not cloudpickle's bare ``cannot pickle '_thread.lock'``.

The shipping function alone (``pack_factory``): no Ray cluster, only ``ray.cloudpickle``.
"""

from __future__ import annotations

import pickle
import threading
from collections.abc import Callable
from typing import Any

import anyio
import pytest

pytest.importorskip("ray")

from agentactors import Agent, OpenAIProvider, RunResult, ScriptedProvider, tool
from agentactors.ray import RemoteError
from agentactors.ray._shipping import pack_factory, unpack_factory, unpack_results
from agentactors.ray.worker import ClusterWorker

LOCK = threading.Lock()


@tool
async def locked(item: str) -> str:
    """Uses a lock held by the driver's module."""
    with LOCK:
        return item


def make_locked_agent() -> Agent:
    return Agent(ScriptedProvider(["x"]), tools=[locked])


def helper() -> object:
    return LOCK


def make_via_helper() -> Agent:
    helper()
    return Agent(ScriptedProvider(["x"]))


def test_a_module_global_that_does_not_pickle_is_named_with_the_way_to_it() -> None:
    with pytest.raises(TypeError) as caught:
        pack_factory(make_locked_agent)
    text = str(caught.value)
    assert "agent_factory 'make_locked_agent'" in text
    assert "module global 'LOCK'" in text and "used by 'locked'" in text
    assert "inside the factory" in text
    assert isinstance(caught.value.__cause__, TypeError)  # cloudpickle's own error, kept as the cause
    with pytest.raises(TypeError, match=r"'LOCK' \(used by 'helper'\)"):
        pack_factory(make_via_helper)


def test_a_closed_over_variable_that_does_not_pickle_is_named() -> None:
    lock = threading.Lock()

    def factory() -> Agent:
        assert lock is not None
        return Agent(ScriptedProvider(["x"]))

    with pytest.raises(TypeError, match=r"agent_factory '.*factory'.*the variable 'lock' cannot be pickled"):
        pack_factory(factory)


def test_an_unpicklable_callable_object_still_gets_a_typed_error_naming_the_factory() -> None:
    class Factory:
        def __init__(self) -> None:
            self.lock = threading.Lock()

        def __call__(self) -> Any:
            return None

    with pytest.raises(TypeError, match=r"agent_factory '[^']*Factory' cannot be shipped.*inside the factory"):
        pack_factory(Factory())


def test_a_factory_that_pickles_still_round_trips() -> None:
    def factory() -> str:
        return "ok"

    assert unpack_factory(pack_factory(factory))() == "ok"


# --- a factory's failure names the agent_factory, credential masked or not --------------------------------------

KEY = "sk-ray-fix-secret-ABC123xyz"


class VendorSDKError(Exception):
    """An SDK's error that keeps the request's headers (the credential in its pickled form)."""

    def __init__(self, message: str, headers: dict[str, str]) -> None:
        super().__init__(message)
        self.headers = headers


def leaky_factory() -> Agent:
    OpenAIProvider("gpt-test", api_key=KEY, base_url="http://127.0.0.1:9/v1")  # registers the key, as on a worker
    raise VendorSDKError("factory failed", {"Authorization": f"Bearer {KEY}"})


def exiting_factory() -> Agent:
    raise SystemExit(2)  # argparse on a worker whose sys.argv is Ray's


async def failed_chunk(factory: Callable[[], Any]) -> RunResult[Any]:
    """The result of one input sent to a worker (hosted here, in-process: no Ray) whose factory fails."""
    worker = ClusterWorker("w0", pack_factory(factory), {})
    async with anyio.create_task_group() as tg:
        tg.start_soon(worker.serve)
        blobs = await worker.run_chunk("job", 0, ["hello"])
        await worker.stop()
    (result,) = unpack_results(blobs, ["hello"])
    return result


@pytest.mark.anyio
async def test_a_masked_factory_failure_names_the_agent_factory() -> None:
    result = await failed_chunk(leaky_factory)
    error = result.error
    assert isinstance(error, RemoteError)
    assert error.type_name.endswith("VendorSDKError")
    assert "while running its agent_factory" in str(error) and "factory failed" in str(error)
    assert KEY not in repr(error) and KEY.encode() not in pickle.dumps(error)


@pytest.mark.anyio
async def test_a_factorys_system_exit_names_the_agent_factory() -> None:
    error = (await failed_chunk(exiting_factory)).error
    assert isinstance(error, RemoteError) and "SystemExit while running its agent_factory" in str(error)
