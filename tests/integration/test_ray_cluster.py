"""agentactors on Ray: one local cluster for the module, test workers with num_cpus=0, both driver backends.

What is checked, against real Ray worker processes: order and exactly-once delivery of 2,000 inputs
over 2 workers; the shared budget's concurrency bound at a FakeVendor (in flight counted from the
server's own record); a worker killed mid-job (every index delivered once; with retries=0 the lost ones
are failed results naming WorkerLost; side effects deduplicated on input_key applied exactly once); the
budget actor killed and restarted by Ray (the bound still holds); cancelling the driver reaching the
vendor as disconnects; results and errors that travel (a ProviderError keeps its kind; a typed output
defined beside the factory comes back as the driver's class); what cannot travel failing alone (an input
Ray cannot serialize, a result the driver cannot unpickle, an error the driver cannot unpickle); a secret
registered only on a worker never reaching the driver or Ray's logs; Ray shut down mid-job ending every
input with WorkerLost instead of a hang; the version check; the example; the W10 benchmark's entry point,
smoke-sized.  Without ray the module skips — and fails under ``CI=true``.

The factories live in this test module, which the workers cannot import: they travel by value.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import operator
import os
import pickle
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import pytest

from tests.support.required import missing

try:
    import ray
except ImportError:  # pragma: no cover - the dev extra installs ray: make test always runs these
    missing("the Ray tests need ray, the [ray] extra: pip install -e '.[dev]' (make test does)", module=True)

from agentactors import Agent, LLMRequest, OpenAIProvider, RunResult, ScriptedProvider, ToolCall, ToolContext, tool
from agentactors.errors import ErrorKind, ProviderError, UnsupportedToolChoiceError
from agentactors.ray import RayCluster, RemoteError, SharedBudget, VersionMismatch, WorkerLost, with_shared_budget
from agentactors.ray._shipping import _needs_value
from agentactors.testing import FakeVendor
from agentactors.testing.fakevendor import RecordedRequest
from tests.support.paths import EXAMPLES, ROOT

pytestmark = pytest.mark.anyio

WORKER = {"num_cpus": 0}


def start_local_ray() -> None:
    """The module's local Ray instance (the fixtures'; started again for a test after one that shut it down)."""
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
    )


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Iterator[None]:
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture(autouse=True)
def ray_running(local_ray: None) -> None:
    """Ray, running for each test: started for the first, and again after a test that shut it down — not at
    the end of that test, which runs last: Ray started again (~2-5 s) only for the module's end to stop it."""
    if not ray.is_initialized():
        start_local_ray()


# --- factories (this module travels by value) ---------------------------------------------------


def echo(request: LLMRequest) -> str:
    return f"echo {request.messages[-1].content}"


def echo_agent() -> Agent:
    return Agent(ScriptedProvider(echo, record=False))


def vendor_agent(base_url: str) -> Agent:
    provider = OpenAIProvider("gpt-test", api_key="sk-test", base_url=base_url)
    return Agent(with_shared_budget(provider, "vendor"))


def _append(path: Path, line: str) -> None:
    with open(path, "a") as log:  # one short line: a file system call, not worth a thread
        log.write(f"{line}\n")


def effects_agent(directory: str, latency: float, gate_from: int) -> Agent:
    """A tool with a side effect, deduplicated on input_key: applied exactly once per input.

    From input ``gate_from`` on, it applies its effect, says so in ``held.log`` (its worker's pid and
    the key) and then holds until the file ``gate`` exists: a worker killed while holding dies with
    effects applied whose results were never delivered, however fast or slow the machine is.
    """

    @tool
    async def charge(ctx: ToolContext) -> str:
        """Charge the customer."""
        assert ctx.input_key is not None
        root = Path(directory)
        _append(root / "attempts.log", ctx.input_key)
        try:
            fd = os.open(root / f"done-{ctx.input_key.replace(':', '_')}", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return "already charged"
        os.close(fd)  # the effect, applied atomically: the file exists or it does not
        if int(ctx.input_key.rpartition(":")[2]) >= gate_from:
            _append(root / "held.log", f"{os.getpid()} {ctx.input_key}")
            while not (root / "gate").exists():  # noqa: ASYNC110 - another process opens it: no event to wait on
                await anyio.sleep(0.01)
        return "charged"

    def model(request: LLMRequest) -> str | ToolCall:
        if request.messages[-1].role == "tool":
            return "done"
        return ToolCall("c1", "charge", {})

    return Agent(ScriptedProvider(model, latency=latency, record=False), tools=[charge])


class Unpicklable(Exception):
    """An exception whose pickled form cannot be loaded (its __init__ takes two arguments)."""

    def __init__(self, a: str, b: str) -> None:
        super().__init__(f"{a}/{b}")


class FailingAgent:
    async def run(self, prompt: Any, **_: Any) -> RunResult:
        raise Unpicklable("bad", prompt)


def failing_agent() -> FailingAgent:
    return FailingAgent()


# --- helpers --------------------------------------------------------------------------------------


def peak_in_flight(requests: Sequence[RecordedRequest]) -> int:
    """The most requests the vendor was answering at once, from its own record."""
    edges: list[tuple[float, int]] = []
    for r in requests:
        edges.append((r.received_at, 1))
        edges.append((r.completed_at if r.completed_at is not None else float("inf"), -1))
    peak = now = 0
    for _, step in sorted(edges, key=lambda e: (e[0], e[1])):  # an end before a start at the same time
        now += step
        peak = max(peak, now)
    return peak


# --- tests ----------------------------------------------------------------------------------------


@pytest.mark.soak  # a load test (its 2,000 is its point): `make soak`, which CI runs
async def test_2000_inputs_over_2_workers_in_order_and_exactly_once() -> None:
    prompts = [f"q{i}" for i in range(2000)]
    seen: list[int] = []
    progress: list[tuple[int, int, int]] = []
    with anyio.fail_after(300):
        async with RayCluster(echo_agent, workers=2, worker_options=WORKER) as cluster:
            results = await cluster.run_many(prompts, progress=lambda *p: progress.append(p))
            async with cluster.as_completed(prompts[:300]) as completions:
                async for index, result in completions:
                    assert result.content == f"echo q{index}"
                    seen.append(index)
            stats = await cluster.stats()
    assert [r.content for r in results] == [f"echo q{i}" for i in range(2000)]
    assert all(r.ok for r in results)
    assert sorted(seen) == list(range(300))  # each index once
    assert progress[-1] == (2000, 0, 2000) and len(progress) == 2000
    assert len(stats) == 2 and len({s["pid"] for s in stats}) == 2


async def test_the_shared_budget_bounds_requests_in_flight_across_workers() -> None:
    async with FakeVendor(latency=0.05) as fv:
        budgets = {"vendor": SharedBudget(max_concurrency=6)}
        factory = functools.partial(vendor_agent, fv.openai_base_url)
        with anyio.fail_after(300):
            async with RayCluster(factory, workers=2, budgets=budgets, worker_options=WORKER) as cluster:
                results = await cluster.run_many([f"q{i}" for i in range(160)])
                stats = await cluster.stats()
        requests = await fv.wait_until_settled(within=60)
    assert all(r.ok for r in results), [r.error for r in results if not r.ok][:3]
    assert len(requests) == 160
    assert peak_in_flight(requests) == 6  # reached, never exceeded
    permits = sum(s["budgets"]["vendor"]["permits"] for s in stats)
    calls = sum(s["budgets"]["vendor"]["ledger_calls"] for s in stats)
    assert permits == 160
    # Most permits are taken from a worker's local lease, without a Ray call (idle ~0.2-0.3 of them pay one;
    # with both cores busy, leases expire between a starved worker's requests more often: 0.38 seen).
    assert calls / permits < 0.5, (calls, permits)


@pytest.mark.parametrize("retries", [1, 0])
async def test_a_worker_killed_mid_job(tmp_path: Path, retries: int) -> None:
    # Inputs from 40 on hold in their tool (effect applied) until the gate opens, so the kill lands while
    # the victim holds runs, on a loaded machine too: the job cannot finish before it.
    total, gate_from = 200, 40
    factory = functools.partial(effects_agent, str(tmp_path), 0.01, gate_from)
    delivered: list[int] = []
    results: dict[int, RunResult] = {}
    with anyio.fail_after(300):
        async with RayCluster(factory, workers=2, worker_options=WORKER, chunk=10, retries=retries) as cluster:
            victim = cluster.workers[0]
            victim_pid = (await cluster_call(victim.ready.remote()))["pid"]
            try:
                async with cluster.as_completed([f"customer {i}" for i in range(total)]) as completions:
                    async for index, result in completions:
                        delivered.append(index)
                        results[index] = result
                        if len(delivered) == gate_from:
                            assert sorted(delivered) == list(range(gate_from))  # nothing past the gate yet
                            await held_by(tmp_path / "held.log", victim_pid)
                            ray.kill(victim)
                            await dead(victim)  # before the gate opens: the victim never finishes what it holds
                            (tmp_path / "gate").touch()
            finally:
                (tmp_path / "gate").touch()  # a failed test must not leave the workers holding
            assert len(cluster.workers) == 1
    assert sorted(delivered) == list(range(total))  # every index delivered exactly once
    applied = effects_applied(tmp_path)
    attempts = (tmp_path / "attempts.log").read_text().split()
    # The effect is deduplicated on input_key; a key that changed on a retry would apply it twice.
    indices = [int(key.rpartition(":")[2]) for key in applied]
    assert len(indices) == len(set(indices)), sorted(indices)
    lost = [i for i, r in results.items() if not r.ok]
    if retries:
        assert not lost
        assert sorted(indices) == list(range(total))  # ... and every input's effect applied exactly once
        assert len(attempts) > total  # at-least-once: some inputs really ran twice
    else:
        assert lost, "the killed worker was running something"
        for i in lost:
            error = results[i].error
            assert isinstance(error, WorkerLost) and error.attempts == 1, error
            assert results[i].messages[-1].content == f"customer {i}"
        assert len(applied) <= total
        keys = {key.rpartition(":")[2] for key in applied}
        assert all(str(i) in keys for i in results if results[i].ok)


async def test_stats_leaves_out_a_worker_that_died_before_the_watcher_noticed(monkeypatch: pytest.MonkeyPatch) -> None:
    """``stats()`` used to raise Ray's ``RayActorError`` for a worker the watcher had not yet marked lost."""

    async def never_notices(self: RayCluster, worker: Any) -> None:
        """The watcher, late for ever: the race made certain (it may lose it to ``stats()`` in real runs)."""

    monkeypatch.setattr(RayCluster, "_watch", never_notices)
    with anyio.fail_after(120):
        async with RayCluster(echo_agent, workers=2, worker_options=WORKER) as cluster:
            victim, survivor = cluster.workers
            survivor_pid = (await cluster_call(survivor.ready.remote()))["pid"]
            ray.kill(victim)
            await dead(victim)
            assert len(cluster.workers) == 2  # nobody noticed yet
            stats = await cluster.stats()
            assert [s["pid"] for s in stats] == [survivor_pid]
            assert list(cluster.workers) == [survivor]  # marked lost, as the watcher would have
            (result,) = await cluster.run_many(["after"])  # the survivor takes the work
            assert result.ok and result.content == "echo after"


def effects_applied(directory: Path) -> list[str]:
    """The input keys whose effect was applied: one ``done-`` file each, made atomically (O_EXCL).

    A worker killed just after making one applied the effect, though no log line may say so yet; its
    retry finds the file and does not apply it again.
    """
    return [path.name.removeprefix("done-").replace("_", ":") for path in directory.glob("done-*")]


async def held_by(log: Path, pid: int) -> None:
    """Once a run of the worker ``pid`` holds in its tool, its effect applied (polling another process's file)."""
    with anyio.fail_after(300):
        while not _holds(log, pid):  # noqa: ASYNC110 - another process writes it: no event to wait on
            await anyio.sleep(0.02)


def _holds(log: Path, pid: int) -> bool:
    return log.exists() and any(line.split()[0] == str(pid) for line in log.read_text().splitlines())


async def dead(worker: Any) -> None:
    """Once Ray says ``worker`` is dead (``ray.kill`` only asks for it)."""
    with anyio.fail_after(300):
        while True:
            try:
                await cluster_call(worker.ready.remote())
            except ray.exceptions.RayActorError:
                return
            await anyio.sleep(0.05)


async def test_the_budget_actor_killed_and_restarted_keeps_the_bound() -> None:
    async with FakeVendor(latency=0.03) as fv:
        budgets = {"vendor": SharedBudget(max_concurrency=4, refresh=0.1)}
        factory = functools.partial(vendor_agent, fv.openai_base_url)
        with anyio.fail_after(300):
            async with RayCluster(factory, workers=2, budgets=budgets, worker_options=WORKER, chunk=8) as cluster:
                ledger = cluster.budget_actors["vendor"]
                first = await cluster_call(ledger.stats.remote())
                async with anyio.create_task_group() as tg:

                    async def kill_soon() -> None:
                        await fv.wait_for(lambda rs: len(rs) >= 40, within=120)
                        ray.kill(ledger, no_restart=False)  # Ray restarts it: a new, empty incarnation

                    tg.start_soon(kill_soon)
                    during = await cluster.run_many([f"q{i}" for i in range(100)])
                second = await restarted_stats(ledger, first["epoch"])
                # What the workers held came back to them; new grants come from the new incarnation.
                after = await cluster.run_many([f"r{i}" for i in range(40)])
                with anyio.fail_after(60):  # every worker, busy or idle, re-registers within a few check-ins
                    third = await recovered_stats(ledger)
        requests = await fv.wait_until_settled(within=60)
    assert second["pid"] != first["pid"]  # it really was a new process
    assert third["epoch"] == second["epoch"] and not third["recovering"]
    assert all(r.ok for r in during + after)
    assert len(requests) == 140
    assert peak_in_flight(requests) <= 4


async def cluster_call(ref: Any) -> Any:
    from agentactors.ray._refs import RefWaiter

    return await RefWaiter().wait(ref)


async def recovered_stats(ledger: Any) -> dict[str, Any]:
    """The ledger's stats once it no longer recovers (polling another process: no event to wait on)."""
    stats: dict[str, Any] = await cluster_call(ledger.stats.remote())
    for _ in range(1000):
        if not stats["recovering"]:
            break
        await anyio.sleep(0.1)
        stats = await cluster_call(ledger.stats.remote())
    return stats


async def restarted_stats(ledger: Any, old_epoch: str) -> dict[str, Any]:
    """The ledger's stats once its new incarnation answers."""
    while True:
        try:
            stats: dict[str, Any] = await cluster_call(ledger.stats.remote())
        except ray.exceptions.RayActorError:
            await anyio.sleep(0.1)
            continue
        if stats["epoch"] != old_epoch:
            return stats
        await anyio.sleep(0.1)


async def test_cancelling_the_driver_reaches_the_vendor_as_disconnects() -> None:
    async with FakeVendor(latency=300.0) as fv:  # answers that never come in time: each ends as a disconnect
        factory = functools.partial(vendor_agent, fv.openai_base_url)
        budgets = {"vendor": SharedBudget(max_concurrency=100)}
        with anyio.fail_after(300):
            async with RayCluster(factory, workers=1, budgets=budgets, worker_options=WORKER, chunk=6) as cluster:
                with anyio.move_on_after(200) as scope:
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(cluster.run_many, [f"q{i}" for i in range(12)])
                        await fv.wait_for(lambda rs: len(rs) >= 12, within=150)
                        tg.cancel_scope.cancel()  # the driver gives up
                assert not scope.cancelled_caught
                disconnected = await fv.wait_for_disconnects(12, within=60)
    assert len(disconnected) == 12


async def test_an_error_that_does_not_pickle_comes_back_as_a_remote_error() -> None:
    with anyio.fail_after(300):
        async with RayCluster(failing_agent, workers=1, worker_options=WORKER) as cluster:
            results = await cluster.run_many(["a", "b"])
    for result in results:
        assert isinstance(result.error, RemoteError)
        assert result.error.type_name.endswith("Unpicklable")
        assert "bad/" in str(result.error)


async def test_a_worker_on_another_version_stops_the_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    import agentactors.ray.cluster as cluster_module

    monkeypatch.setattr(cluster_module, "__version__", "0.0.0-driver")
    with anyio.fail_after(300), pytest.raises(VersionMismatch, match=r"0\.0\.0-driver"):
        async with RayCluster(echo_agent, workers=1, worker_options=WORKER):
            pass


def test_this_module_travels_by_value_and_agentactors_by_reference() -> None:
    assert _needs_value(__name__)
    assert not _needs_value("agentactors.agent.core")
    assert not _needs_value("json")
    assert not _needs_value("httpx")


def _load_example() -> ModuleType:
    path = EXAMPLES / "ray_cluster.py"
    spec = importlib.util.spec_from_file_location("examples_ray_cluster", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


async def test_the_example_runs_on_the_running_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    with anyio.fail_after(300):
        results = await _load_example().main(count=40, workers=1)
    assert ray.is_initialized()  # a running cluster is used as is, and left running
    assert results[0].content.startswith('It is sunny: {"city": "City0", "celsius": 15, "key": "')
    assert results[0].content.endswith(':0"}')  # the input key: "{job}:{index}"
    assert all(r.ok for r in results) and len(results) == 40
    assert "40/40 runs ok" in capsys.readouterr().out


def _load_benchmark() -> ModuleType:
    path = ROOT / "benchmarks" / "ray_cluster.py"
    spec = importlib.util.spec_from_file_location("benchmarks_ray_cluster", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.soak  # the W10 benchmark's load run, smoke-sized: `make soak`, which CI runs
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_w10_benchmark_runs_smoke_sized_on_the_running_cluster(
    backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Its own driver loop (main() calls anyio.run): a sync test, run once per driver backend.
    bench = _load_benchmark()
    out = tmp_path / "ray.json"
    assert bench.main(["--smoke", "--workers", "1", "--backend", backend, "--out", str(out)]) == 0
    assert ray.is_initialized()  # the running cluster was used as is, and left running
    data = json.loads(out.read_text())
    assert data["backend"] == backend and data["fixed"]["ray_init_s"] is None
    for name, runs in (("scripted", 50), ("http", 20)):
        workload = data["workloads"][name]
        assert workload["runs"] == runs and set(workload["results"]) == {"in-process", "ray 1 worker"}
        assert all(r["runs_per_s"] > 0 and r["cpu_per_run_us"] > 0 for r in workload["results"].values())
    report = capsys.readouterr().out
    assert "| scripted (50 runs) | ray 1 worker |" in report and "| http (20 runs) | ray 1 worker |" in report
    assert "ray.init already running" in report


# --- what cannot travel, secrets, and Ray going away ------------------------------------------------

# A key that matches no key shape: only the registry of the process that built the provider knows it.
WORKER_KEY = "tenant42-4f9a8b7c6d5e4f3a2b1c"


class Unsendable:
    """An input Ray cannot serialize: it holds a lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()


async def test_an_input_that_cannot_be_sent_fails_alone_naming_it() -> None:
    with anyio.fail_after(300):
        async with RayCluster(echo_agent, workers=1, worker_options=WORKER, chunk=3) as cluster:
            results = await cluster.run_many(["a", Unsendable(), "c", "d"])
    assert [r.content for r in results] == ["echo a", "", "echo c", "echo d"]  # its neighbours ran
    error = results[1].error
    assert isinstance(error, TypeError), error
    assert "input 1" in str(error) and "lock" in str(error)


class Undeliverable:
    """Pickles on the worker; unpickling it (on the driver) raises ZeroDivisionError."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (operator.truediv, (1, 0))


class UndeliverableAgent:
    async def run(self, prompt: Any, **_: Any) -> RunResult:
        return RunResult(f"fine {prompt}", (), output=Undeliverable() if prompt == "bad" else "x")


def undeliverable_agent() -> UndeliverableAgent:
    return UndeliverableAgent()


async def test_a_result_the_driver_cannot_unpickle_fails_alone_naming_why() -> None:
    with anyio.fail_after(300):
        async with RayCluster(undeliverable_agent, workers=1, worker_options=WORKER, chunk=3) as cluster:
            results = await cluster.run_many(["a", "bad", "c"])
    assert [r.content for r in results] == ["fine a", "", "fine c"]
    error = results[1].error
    assert isinstance(error, RemoteError), error
    assert error.type_name == "builtins.ZeroDivisionError" and "unpickling its result" in str(error)
    assert results[1].messages[-1].content == "bad"  # what the run would have started from


class Boom(Exception):
    """Pickles on the worker; unpickling it raises ZeroDivisionError."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (operator.truediv, (1, 0))


def booming_factory() -> Agent:
    OpenAIProvider("gpt-test", api_key=WORKER_KEY, base_url="http://127.0.0.1:9/v1")  # registers the key
    raise Boom(f"the vendor refused {WORKER_KEY}")


class LeakyAgent:
    async def run(self, prompt: Any, **_: Any) -> RunResult:
        raise ValueError(f"the vendor refused {WORKER_KEY}")


def leaky_agent() -> LeakyAgent:
    OpenAIProvider("gpt-test", api_key=WORKER_KEY, base_url="http://127.0.0.1:9/v1")  # registers the key
    return LeakyAgent()


@pytest.mark.parametrize("factory", [booming_factory, leaky_agent], ids=["factory", "run"])
async def test_a_failure_holding_a_worker_side_secret_comes_back_redacted(factory: Callable[[], Any]) -> None:
    # The driver never registered the key: only the worker (where the provider was built) can redact it.
    with anyio.fail_after(300):
        if factory is booming_factory:  # the factory's failure fails the start (tests/integration/test_ray_enter.py)
            with pytest.raises(RemoteError) as caught:
                async with RayCluster(factory, workers=1, worker_options=WORKER):
                    pass
            results = [RunResult("", (), error=caught.value)]
        else:
            async with RayCluster(factory, workers=1, worker_options=WORKER) as cluster:
                results = await cluster.run_many(["a", "b"])
    for result in results:
        error = result.error
        assert isinstance(error, RemoteError), error
        assert error.type_name.endswith("Boom" if factory is booming_factory else "ValueError")
        assert "the vendor refused [REDACTED]" in str(error)
        assert WORKER_KEY not in f"{error} {error!r} {error.args} {result!r}"
    node: Any = ray._private.worker._global_node  # this test's own Ray instance: its session's logs
    assert node is not None
    logs = Path(node.get_session_dir_path()) / "logs"
    leaked = [p.name for p in logs.iterdir() if p.is_file() and WORKER_KEY in p.read_text(errors="replace")]
    assert not leaked  # nor in Ray's logs


class Halt(BaseException):
    """A library's control-flow exception: a BaseException, not an Exception."""


class WithHeaders(Exception):
    """A vendor SDK's error: a clean message, the request's headers (the key among them) kept beside it."""

    def __init__(self, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.headers = headers


class HostileAgent:
    async def run(self, prompt: Any, **_: Any) -> RunResult:
        if prompt == "halt":
            raise Halt(f"halting with {WORKER_KEY}")
        if prompt == "exit":
            raise SystemExit(3)  # a tool's sys.exit: it used to stop the worker's event loop
        if prompt == "headers":
            raise WithHeaders("the vendor said no", headers={"Authorization": f"Bearer {WORKER_KEY}"})
        return RunResult(f"fine {prompt}", ())


def hostile_agent() -> HostileAgent:
    OpenAIProvider("gpt-test", api_key=WORKER_KEY, base_url="http://127.0.0.1:9/v1")  # registers the key
    return HostileAgent()


def argparse_factory() -> Agent:
    import argparse

    parser = argparse.ArgumentParser(prog="make_agent")
    parser.add_argument("--model", required=True)
    parser.parse_args()  # SystemExit(2): the worker's sys.argv is Ray's default_worker.py's
    raise AssertionError("unreachable")


def _ray_logs_holding(secret: str) -> list[str]:
    node: Any = ray._private.worker._global_node  # this test's own Ray instance: its session's logs
    assert node is not None
    logs = Path(node.get_session_dir_path()) / "logs"
    return [p.name for p in logs.iterdir() if p.is_file() and secret in p.read_text(errors="replace")]


async def test_runs_raising_base_exceptions_or_holding_keys_in_attributes_fail_alone_and_redacted() -> None:
    # Each used to fail its whole chunk with Ray's raw task-failure text (a BaseException), stop the worker's
    # event loop for good (SystemExit: the worker lost only after 2x unresponsive_timeout, and retried into
    # the next worker), or bring the worker-only key to the driver inside the error's attributes.
    prompts = ["a", "halt", "exit", "headers", "b"]
    with anyio.fail_after(60):
        async with RayCluster(hostile_agent, workers=1, worker_options=WORKER, chunk=5, retries=1) as cluster:
            results = await cluster.run_many(prompts)
            again = await cluster.run_many(["c"])  # the same worker, still serving
            assert len(cluster.workers) == 1
    assert [r.content for r in results] == ["fine a", "", "", "", "fine b"] and again[0].content == "fine c"
    for result, type_name in zip(results[1:4], ("Halt", "builtins.SystemExit", "WithHeaders"), strict=True):
        error = result.error
        assert isinstance(error, RemoteError) and error.type_name.endswith(type_name), error
        assert WORKER_KEY.encode() not in pickle.dumps(result)
    assert "halting with [REDACTED]" in str(results[1].error)
    assert not _ray_logs_holding(WORKER_KEY)


async def test_a_factory_that_exits_fails_the_start_naming_it() -> None:
    # It hung: the chunks waited forever for an agent that never came; then it failed every input; now the start.
    with anyio.fail_after(60), pytest.raises(RemoteError) as caught:
        async with RayCluster(argparse_factory, workers=1, worker_options=WORKER, unresponsive_timeout=5):
            pass
    error = caught.value
    assert error.type_name == "builtins.SystemExit", error
    assert "agent_factory" in str(error)


USER_SCRIPT = '''
"""A user's script: the workers cannot import it (as a __main__ is not)."""

import dataclasses

from agentactors import Agent, ScriptedProvider


@dataclasses.dataclass
class Weather:
    city: str
    celsius: int


def make_agent():
    return Agent(ScriptedProvider(lambda request: '{"city": "Oslo", "celsius": 3}', record=False), output_type=Weather)
'''


async def test_a_typed_output_defined_beside_the_factory_comes_back_as_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "ray_user_script.py"
    path.write_text(USER_SCRIPT)
    spec = importlib.util.spec_from_file_location("ray_user_script", path)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, script)
    spec.loader.exec_module(script)
    with anyio.fail_after(300):
        async with RayCluster(script.make_agent, workers=1, worker_options=WORKER) as cluster:
            results = await cluster.run_many(["Weather in Oslo?", "And now?"])
    for result in results:
        assert result.ok, result.error
        output: Any = result.output
        assert type(output) is script.Weather and output == script.Weather("Oslo", 3)


def refusing_model(request: LLMRequest) -> str:
    if request.messages[-1].content == "tool":
        raise UnsupportedToolChoiceError(provider="vendor", model="m1")
    raise ProviderError("slow down", provider="vendor", model="m1", kind="transient", status=429, retry_after=7.0)


def refusing_agent() -> Agent:
    return Agent(ScriptedProvider(refusing_model, record=False))


async def test_provider_errors_keep_their_type_and_kind_across_ray() -> None:
    # What with_retry / with_fallback (and a caller) classify on: the type, kind, retryable, retry_after.
    with anyio.fail_after(300):
        async with RayCluster(refusing_agent, workers=1, worker_options=WORKER) as cluster:
            tool_choice, transient = await cluster.run_many(["tool", "busy"])
    assert isinstance(tool_choice.error, UnsupportedToolChoiceError), tool_choice.error
    assert tool_choice.error.kind == ErrorKind.request and not tool_choice.error.retryable
    assert isinstance(transient.error, ProviderError) and type(transient.error) is ProviderError
    error = transient.error
    assert (error.kind, error.retryable, error.status, error.retry_after) == (ErrorKind.transient, True, 429, 7.0)


class SlowAgent:
    """Each run says it started (the file ``started-{prompt}`` in ``directory``), then takes 600 s."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    async def run(self, prompt: Any, **_: Any) -> RunResult:
        _append(Path(self.directory, f"started-{prompt}"), "")
        await anyio.sleep(600)
        return RunResult("late", ())


def slow_agent(directory: str) -> SlowAgent:
    return SlowAgent(directory)


async def running(directory: Path) -> None:
    """Once a worker runs an input (polling another process's files: no event to wait on)."""
    with anyio.fail_after(120):
        while not _any_started(directory):  # noqa: ASYNC110 - another process writes it: no event to wait on
            await anyio.sleep(0.02)


def _any_started(directory: Path) -> bool:
    return any(directory.glob("started-*"))


async def test_a_job_outliving_its_cluster_ends_with_one_typed_error(tmp_path: Path) -> None:
    # It ended with a mix: WorkerLost "died while running this input" (it was stopped, not dead), and on the
    # worker's side a plain RuntimeError "the runtime closed while Runtime.call() was running".
    box: dict[str, list[RunResult]] = {}
    factory = functools.partial(slow_agent, str(tmp_path))
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            async with RayCluster(factory, workers=1, worker_options=WORKER, chunk=2, drain_timeout=0.5) as cluster:

                async def job() -> None:
                    box["results"] = await cluster.run_many([f"q{i}" for i in range(6)])

                tg.start_soon(job)
                await running(tmp_path)  # the chunks are running
    results = box["results"]
    assert len(results) == 6
    for result in results:
        assert isinstance(result.error, WorkerLost), result.error
        assert "the cluster closed" in str(result.error), result.error


async def test_ray_shut_down_during_a_run_ends_every_input_with_worker_lost(tmp_path: Path) -> None:
    # Ray's replies never come once the driver's Ray is shut down: the cluster must notice, not wait forever
    # (ray_running starts it again for the next test that needs it).  Kept last in the module: its second
    # backend's run is then the only one that pays for Ray started again (~3 s).
    factory = functools.partial(slow_agent, str(tmp_path))
    with anyio.fail_after(60):
        async with RayCluster(factory, workers=1, worker_options=WORKER, chunk=2) as cluster:
            async with anyio.create_task_group() as tg:

                async def shut_down_soon() -> None:
                    await running(tmp_path)  # the chunks are running: they are lost
                    await anyio.to_thread.run_sync(ray.shutdown)

                tg.start_soon(shut_down_soon)
                results = await cluster.run_many([f"q{i}" for i in range(6)])
    assert len(results) == 6
    for result in results:
        assert isinstance(result.error, WorkerLost), result.error
    assert any(r.error.attempts == 1 for r in results if isinstance(r.error, WorkerLost))  # sent, then lost
