"""What a worker sends back when the user's code fails in ways the plain ``except Exception`` paths missed — no Ray.

:class:`~agentactors.ray.worker.ClusterWorker` is a plain class (the cluster makes it a Ray actor), so its
``serve`` / ``run_chunk`` run here in-process, on both backends, and what they return is unpickled as the
driver would.  Checked: a factory raising a ``BaseException`` that is not an ``Exception`` (argparse's
``SystemExit`` on a worker whose ``sys.argv`` is Ray's) fails the chunks at once with a ``RemoteError``
naming it, instead of leaving them waiting forever; a run raising one fails alone, its neighbours
untouched, and the worker keeps serving; and :func:`~agentactors.ray._shipping.sendable` replaces a foreign
error that holds a credential anywhere in what it pickles (a header dict, a request object), not only in
its text.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import anyio
import pytest

pytest.importorskip("ray", reason="the [ray] extra: pack_factory and the results go with ray.cloudpickle")

import ray.cloudpickle

from agentactors import Agent, LLMRequest, RunResult, ScriptedProvider
from agentactors.errors import ProviderError
from agentactors.ray import RemoteError
from agentactors.ray._shipping import pack_factory, sendable
from agentactors.ray.worker import ClusterWorker
from agentactors.redaction import register_secret

pytestmark = pytest.mark.anyio

_dumps: Any = ray.cloudpickle.dumps  # untyped

KEY = "wkr-only-7f3a9c2e5b8d1f4a6c0e"  # registered below: a secret only by registration, not by its shape
register_secret(KEY)


class Halt(BaseException):
    """A library's control-flow exception (not an ``Exception``)."""


def argparse_factory() -> Agent:
    import argparse

    parser = argparse.ArgumentParser(prog="make_agent")
    parser.add_argument("--model", required=True)
    parser.parse_args([])  # SystemExit(2): the worker's argv is Ray's, without --model
    raise AssertionError("unreachable")


def halting_factory() -> Agent:
    raise Halt(f"the config server said stop ({KEY})")


def model(request: LLMRequest) -> str:
    prompt = request.messages[-1].content
    if prompt == "halt":
        raise Halt(f"halting with {KEY}")
    if prompt == "exit":
        raise SystemExit(3)
    return f"echo {prompt}"


def echo_factory() -> Agent:
    return Agent(ScriptedProvider(model, record=False))


async def _on_worker(factory: Callable[[], Any], *chunks: list[str]) -> tuple[str | None, list[list[RunResult]]]:
    """Serve ``factory`` on an in-process worker, run each chunk, stop it: what ``serve`` returned, the results."""
    worker = ClusterWorker("w0", pack_factory(factory), {}, drain_timeout=1.0)
    outcome: list[str | None] = []
    results: list[list[RunResult]] = []
    with anyio.fail_after(10):  # the bug: the chunks waited forever for an agent that never came
        async with anyio.create_task_group() as tg:

            async def serve() -> None:
                outcome.append(await worker.serve())

            tg.start_soon(serve)
            for number, chunk in enumerate(chunks):
                blobs = await worker.run_chunk("job", 10 * number, chunk)
                results.append([pickle.loads(blob) for blob in blobs])
            await worker.stop()
    return outcome[0], results


@pytest.mark.parametrize(
    ("factory", "type_name"),
    [(argparse_factory, "builtins.SystemExit"), (halting_factory, "Halt")],
    ids=["argparse-SystemExit", "custom-BaseException"],
)
async def test_a_factory_raising_a_base_exception_fails_every_chunk_at_once(
    factory: Callable[[], Any], type_name: str
) -> None:
    outcome, [results] = await _on_worker(factory, ["a", "b"])
    assert outcome is not None and outcome.endswith(type_name.rpartition(".")[2])
    for result in results:
        error = result.error
        assert isinstance(error, RemoteError), error
        assert error.type_name.endswith(type_name) and "agent_factory" in str(error)
        assert KEY not in f"{error} {error!r}" and KEY.encode() not in _dumps(result)


async def test_a_run_raising_a_base_exception_fails_alone_and_the_worker_serves_on() -> None:
    outcome, [first, second] = await _on_worker(echo_factory, ["a", "halt", "exit", "b"], ["c"])
    assert outcome is None
    assert [r.content for r in first] == ["echo a", "", "", "echo b"]
    assert [r.content for r in second] == ["echo c"]  # the worker's loop survived the SystemExit
    halted, exited = first[1].error, first[2].error
    assert isinstance(halted, RemoteError) and halted.type_name.endswith("Halt"), halted
    assert "halting with [REDACTED]" in str(halted)
    assert isinstance(exited, RemoteError) and exited.type_name == "builtins.SystemExit", exited
    assert first[1].messages[-1].content == "halt"  # what the run started from


# --- sendable: a credential anywhere in what the error pickles ----------------------------------


class WithHeaders(Exception):
    def __init__(self, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.headers = headers


class Request:
    def __init__(self, headers: dict[str, str]) -> None:
        self.headers = headers


class WithRequest(Exception):
    def __init__(self, message: str, request: Request | None = None) -> None:  # it round-trips: args are (message,)
        super().__init__(message)
        self.request = request


def _shipped(error: BaseException) -> BaseException | None:
    return sendable(RunResult("", (), error=error)).error


@pytest.mark.parametrize(
    "error",
    [
        WithHeaders("the vendor said no", headers={"Authorization": f"Bearer {KEY}"}),
        WithRequest("401 Client Error", Request({"Authorization": f"Bearer {KEY}"})),
        WithHeaders("key-shaped", headers={"x-api-key": "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"}),
        WithHeaders("long", headers={"pad": "x" * 300_000 + KEY}),
    ],
    ids=["header-dict", "request-object", "key-shaped-unregistered", "past-the-scan-limit"],
)
def test_a_foreign_error_holding_a_credential_in_what_it_pickles_is_replaced(error: Exception) -> None:
    shipped = _shipped(error)
    assert isinstance(shipped, RemoteError), shipped
    assert shipped.type_name.endswith(type(error).__qualname__)
    blob = _dumps(shipped)
    assert KEY.encode() not in blob and b"sk-proj-abcdefghij" not in blob


def test_a_requests_http_error_holding_its_authorization_header_is_replaced() -> None:
    requests = pytest.importorskip("requests")
    request = requests.Request("GET", "http://127.0.0.1:9/v1/models", headers={"Authorization": f"Bearer {KEY}"})
    shipped = _shipped(requests.HTTPError("401 Client Error", request=request.prepare()))
    assert isinstance(shipped, RemoteError) and shipped.type_name == "requests.exceptions.HTTPError", shipped
    assert KEY.encode() not in _dumps(shipped)


def test_a_clean_foreign_error_and_the_librarys_own_travel_as_they_are() -> None:
    clean = WithHeaders("the vendor said no", headers={"Accept": "application/json"})
    assert _shipped(clean) is clean
    ours = ProviderError("slow down", provider="vendor", model="m1", kind="transient", status=429)
    assert _shipped(ours) is ours


# --- a worker's exit gives its budgets' slots back --------------------------------------------------------


class _Method:
    def __init__(self, call: Callable[..., Any]) -> None:
        self._call = call

    def remote(self, *args: Any) -> Any:
        return self._call(*args)


class _Handle:
    """A BudgetActor handle in process: ``handle.method.remote(...)`` is the ledger service's call."""

    def __init__(self, service: Any) -> None:
        self._service = service

    def __getattr__(self, name: str) -> _Method:
        return _Method(getattr(self._service, name))



def slow_factory() -> Agent:
    from agentactors.ray import with_shared_budget

    async def slow(request: LLMRequest) -> str:
        await anyio.sleep(0.3)
        return "done"

    return Agent(with_shared_budget(ScriptedProvider(slow, record=False), "b"))


@pytest.mark.parametrize("how", ["stop", "cancel"])
async def test_a_worker_leaving_gives_its_budgets_slots_back_after_its_runs_ended(how: str) -> None:
    """A run in flight when the worker stops holds a slot: it is given back once the drain ended it, and a
    cancelled serve() gives its slots back too — not left booked until the driver drops the worker."""
    from agentactors.ray import SharedBudget
    from agentactors.ray.ledger import BudgetLedger, LedgerService

    budget = SharedBudget(max_concurrency=4)
    ledger = BudgetLedger(budget)
    worker = ClusterWorker("w0", pack_factory(slow_factory), {"b": (budget, _Handle(LedgerService(ledger)))},
                           drain_timeout=2.0)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(worker.serve)
            tg.start_soon(worker.run_chunk, "job", 0, ["a", "b"])  # (it waits for the agent to be built)
            for _ in range(500):  # until the runs are in flight, holding slots
                if ledger.held.get("w0"):
                    break
                await anyio.sleep(0.01)
            assert ledger.held.get("w0"), "the runs never took a slot"
            if how == "stop":
                await worker.stop()
            else:
                tg.cancel_scope.cancel()
    assert ledger.held.get("w0", 0) == 0, ledger.held


async def test_the_runs_in_flight_when_the_worker_stops_finish_within_its_drain() -> None:
    """One slot for the cluster, two runs of a chunk: the second waits for the first's slot.  Told to stop, the worker
    lets the chunk finish (its ``drain_timeout``), its lease maintainers still running — before, the runtime's exit
    cut both runs at once (the chunk's runs run in its caller's task, which the runtime's drain does not wait for)
    and each input failed with "the cluster closed while ... ran this input"."""
    from agentactors.ray import SharedBudget
    from agentactors.ray.ledger import BudgetLedger, LedgerService

    budget = SharedBudget(max_concurrency=1)
    ledger = BudgetLedger(budget)
    worker = ClusterWorker("w0", pack_factory(slow_factory), {"b": (budget, _Handle(LedgerService(ledger)))},
                           drain_timeout=10.0)
    blobs: list[bytes] = []
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(worker.serve)

            async def chunk() -> None:
                blobs.extend(await worker.run_chunk("job", 0, ["a", "b"]))

            tg.start_soon(chunk)
            for _ in range(500):  # until the first run holds the cluster's one slot
                if ledger.held.get("w0"):
                    break
                await anyio.sleep(0.01)
            await worker.stop()
    results = [pickle.loads(blob) for blob in blobs]
    assert [r.content for r in results] == ["done", "done"], [(r.content, r.error) for r in results]
    assert ledger.held.get("w0", 0) == 0, ledger.held
