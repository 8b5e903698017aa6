"""A worker Ray cannot reach for a moment, and one whose event loop is blocked, on a real local Ray cluster.

``ActorUnavailableError`` (an actor restarting, a network blip on a multi-node cluster: the call may or may
not have run, and the actor may answer again) cannot be made on one machine, so it is injected where the
driver awaits a worker's reply (``RayCluster._reply``), raised as Ray constructs it; the rest is real.  What
is checked: one such error fails only that call (its chunk is sent again with ``retries > 0``, or fails with
``WorkerUnavailableError`` with ``retries=0``) and the worker stays in the cluster with the budgets' roster
untouched; a worker unreachable past ``unresponsive_timeout`` is lost (and killed).  A worker whose event
loop a tool blocks with a sync sleep is found out within the bound (its call fails with
``WorkerUnavailableError``, the worker is lost and killed) instead of hanging the driver — ``stats()``
too — while a chunk that is merely slow, its worker answering, runs to the end.

The factories live in this test module, which the workers cannot import: they travel by value.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.required import missing

try:
    import ray
    import ray.exceptions
except ImportError:  # pragma: no cover - the dev extra installs ray: make test always runs these
    missing("the Ray tests need ray, the [ray] extra: pip install -e '.[dev]' (make test does)", module=True)

from agentactors import Agent, LLMRequest, RunResult, ScriptedProvider, ToolCall, tool
from agentactors.ray import RayCluster, SharedBudget, WorkerLost
from agentactors.ray._refs import RefWaiter
from agentactors.ray.errors import WorkerUnavailableError

pytestmark = pytest.mark.anyio

WORKER = {"num_cpus": 0}


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Iterator[None]:
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield
    finally:
        ray.shutdown()


# --- factories (this module travels by value) ---------------------------------------------------


def echo(request: LLMRequest) -> str:
    return f"echo {request.messages[-1].content}"


def echo_agent() -> Agent:
    return Agent(ScriptedProvider(echo, record=False))


def blocking_agent(directory: str | None = None) -> Agent:
    """The input ``block`` calls a tool that blocks its worker's event loop (a sync sleep in an async tool).

    With ``directory``, the tool first makes the file ``blocked-{pid}`` there.
    """

    @tool
    async def stall() -> str:
        """Stall."""
        if directory is not None:
            _touch(Path(directory, f"blocked-{os.getpid()}"))
        time.sleep(600)  # noqa: ASYNC251 - the point: the worker's event loop stops; the worker is killed
        return "woke"

    def model(request: LLMRequest) -> str | ToolCall:
        last = request.messages[-1]
        if last.role == "user" and last.content == "block":
            return ToolCall("c1", "stall", {})
        return f"echo {last.content}"

    return Agent(ScriptedProvider(model, record=False), tools=[stall])


class SlowAgent:
    """Each run takes 1.5 s of awaiting: three times the test's bound (0.5 s), while its event loop answers."""

    async def run(self, prompt: Any, **_: Any) -> RunResult:
        await anyio.sleep(1.5)
        return RunResult(f"slow {prompt}", ())


def slow_agent() -> SlowAgent:
    return SlowAgent()


# --- helpers --------------------------------------------------------------------------------------


def _touch(path: Path) -> None:
    path.touch()  # one file system call, not worth a thread


def _blocked(directory: Path) -> list[int]:
    """The pids of the workers whose event loop the tool blocked (from their marker files)."""
    return [int(path.name.removeprefix("blocked-")) for path in directory.glob("blocked-*")]


def unavailable(handle: Any) -> ray.exceptions.ActorUnavailableError:
    """The error as Ray raises it for a call to an actor it cannot reach."""
    return ray.exceptions.ActorUnavailableError(
        "The actor is temporarily unavailable: IOError: Connection reset by peer", handle._actor_id.binary()
    )


async def dead(handle: Any) -> None:
    """Once Ray says the actor is dead (``ray.kill`` only asks for it)."""
    with anyio.fail_after(120):
        while True:
            try:
                await RefWaiter().wait(handle.ready.remote())
            except ray.exceptions.RayActorError as exc:
                if not isinstance(exc, ray.exceptions.ActorUnavailableError):
                    return
            await anyio.sleep(0.05)


# --- ActorUnavailableError: a transient failure of one call --------------------------------------


@pytest.mark.parametrize("retries", [1, 0])
async def test_one_actor_unavailable_error_fails_that_call_only(monkeypatch: pytest.MonkeyPatch, retries: int) -> None:
    """It used to mark the worker lost at once (its slots freed while its calls may still have been running)."""
    original = RayCluster._reply
    injected: list[str] = []

    async def blip_once(self: RayCluster, worker: Any, ref: Any) -> Any:
        value = await original(self, worker, ref)
        if isinstance(value, list) and not injected and worker.handle is target:  # a chunk's reply, once
            injected.append(worker.id)
            raise unavailable(worker.handle)  # the call ran, its reply did not make it: Ray says so this way
        return value

    monkeypatch.setattr(RayCluster, "_reply", blip_once)
    budgets = {"b": SharedBudget(max_concurrency=4)}
    prompts = [f"q{i}" for i in range(40)]
    with anyio.fail_after(120):
        async with RayCluster(
            echo_agent, workers=2, budgets=budgets, worker_options=WORKER, chunk=4, retries=retries
        ) as cluster:
            target = cluster.workers[0]
            roster = cluster._roster
            results = await cluster.run_many(prompts)
            assert injected  # the blip happened
            assert len(cluster.workers) == 2 and cluster.workers[0] is target  # nobody was lost
            assert cluster._roster == roster  # the budgets were never told to free the worker's slots
            after = await cluster.run_many(["after-0", "after-1", "after-2", "after-3", "after-4"])
            assert len(await cluster.stats()) == 2
    assert all(r.ok for r in after)
    failed = {i: r for i, r in enumerate(results) if not r.ok}
    if retries:
        assert not failed, [r.error for r in failed.values()]
        assert [r.content for r in results] == [f"echo {p}" for p in prompts]
    else:
        assert len(failed) == 4  # the one chunk whose reply was lost: at-most-once, reported
        for i, result in failed.items():
            error = result.error
            assert isinstance(error, WorkerUnavailableError) and isinstance(error, WorkerLost), error
            assert error.worker == injected[0] and error.attempts == 1
            assert result.messages[-1].content == f"q{i}"
        assert all(results[i].content == f"echo q{i}" for i in range(40) if i not in failed)


async def test_a_worker_unavailable_past_the_bound_is_lost(monkeypatch: pytest.MonkeyPatch) -> None:
    original_reply, original_give_up, original_lost = RayCluster._reply, RayCluster._give_up, RayCluster._lost
    cut: list[float] = []
    given_up: list[tuple[str, float]] = []
    freed = anyio.Event()

    async def unreachable(self: RayCluster, worker: Any, ref: Any) -> Any:
        if cut and worker.handle is target and worker.alive:  # until the driver gives up on it (and kills it)
            raise unavailable(worker.handle)
        return await original_reply(self, worker, ref)

    def give_up(self: RayCluster, worker: Any, why: str) -> None:
        if worker.alive:
            given_up.append((worker.id, anyio.current_time()))
        original_give_up(self, worker, why)

    def lost(self: RayCluster, worker: Any) -> None:
        original_lost(self, worker)
        if worker.handle is target:
            assert given_up, "its slots were freed before the driver gave up on it"
            freed.set()

    monkeypatch.setattr(RayCluster, "_reply", unreachable)
    monkeypatch.setattr(RayCluster, "_give_up", give_up)
    monkeypatch.setattr(RayCluster, "_lost", lost)
    prompts = [f"q{i}" for i in range(30)]
    with anyio.fail_after(120):
        async with RayCluster(
            echo_agent, workers=2, worker_options=WORKER, chunk=3, unresponsive_timeout=1.5
        ) as cluster:
            target, survivor = cluster.workers
            target_id = cluster._workers[0].id
            cut.append(anyio.current_time())
            results = await cluster.run_many(prompts)  # its calls fail: the survivor runs them
            await dead(target)  # given up past the bound, by its watcher: killed
            assert list(cluster.workers) == [survivor]
            await freed.wait()  # once Ray says it is dead: the budgets are told it left
            assert cluster._roster.workers == {cluster._workers[1].id}
    assert [r.content for r in results] == [f"echo {p}" for p in prompts]  # within their retries
    ((who, when),) = given_up
    assert who == target_id
    assert when - cut[0] >= 1.5  # not lost before the bound


async def test_a_watcher_that_lost_sight_of_its_worker_watches_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The watcher's own ref failing with ActorUnavailableError: the worker stays, and its death is still seen."""
    original_reply, original_recover, original_lost = RayCluster._reply, RayCluster._recover, RayCluster._lost
    recovered, freed = anyio.Event(), anyio.Event()

    async def blip_serve(self: RayCluster, worker: Any, ref: Any) -> Any:
        if ref is worker.serve and worker.id.endswith("-w0"):  # the first worker's watcher, from the start
            raise unavailable(worker.handle)
        return await original_reply(self, worker, ref)

    async def recover(self: RayCluster, worker: Any) -> bool:
        answered = await original_recover(self, worker)
        if answered and worker.id.endswith("-w0"):
            recovered.set()
        return answered

    def lost(self: RayCluster, worker: Any) -> None:
        original_lost(self, worker)
        if worker.id.endswith("-w0"):
            freed.set()

    monkeypatch.setattr(RayCluster, "_reply", blip_serve)
    monkeypatch.setattr(RayCluster, "_recover", recover)
    monkeypatch.setattr(RayCluster, "_lost", lost)
    with anyio.fail_after(120):
        async with RayCluster(echo_agent, workers=2, worker_options=WORKER, unresponsive_timeout=30.0) as cluster:
            target = cluster.workers[0]  # the "-w0"
            await recovered.wait()  # it answered a ping: the watcher watches through served() now
            assert len(list(cluster.workers)) == 2 and cluster._roster.version == 1
            assert [r.content for r in await cluster.run_many(["a", "b", "c"])] == ["echo a", "echo b", "echo c"]
            ray.kill(target)  # idle, it dies: only the watcher can notice
            await freed.wait()
            assert list(cluster.workers) == [cluster._workers[1].handle] and cluster._roster.version == 2


# --- a blocked event loop: bounded -----------------------------------------------------------------


async def test_a_worker_whose_event_loop_is_blocked_is_lost_within_the_bound() -> None:
    prompts = ["block"] + [f"q{i}" for i in range(10)]
    with anyio.fail_after(60):  # the tool sleeps 600 s: without the bound the driver waits for it
        async with RayCluster(
            blocking_agent, workers=2, worker_options=WORKER, chunk=1, inflight=1, retries=0, unresponsive_timeout=1.0
        ) as cluster:
            handles = cluster.workers
            results = await cluster.run_many(prompts)
            (survivor,) = cluster.workers
            (blocked,) = [h for h in handles if h is not survivor]
            await dead(blocked)  # killed: when its loop wakes it cannot send anything more
    error = results[0].error
    assert isinstance(error, WorkerUnavailableError) and error.attempts == 1, error
    assert "1.0" in str(error)
    assert [r.content for r in results[1:]] == [f"echo q{i}" for i in range(10)]


async def test_stats_leaves_out_a_worker_whose_event_loop_is_blocked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``stats()`` used to wait for ever for a blocked worker's answer."""

    async def patient(self: RayCluster, worker: Any, ref: Any) -> Any:
        return await self._reply(worker, ref)  # the job's own bound left out: stats() alone must notice

    monkeypatch.setattr(RayCluster, "_chunk_reply", patient)
    factory = functools.partial(blocking_agent, str(tmp_path))
    with anyio.fail_after(60):
        async with RayCluster(
            factory, workers=2, worker_options=WORKER, chunk=1, inflight=1, retries=0, unresponsive_timeout=1.0
        ) as cluster:
            pids = {h: (await RefWaiter().wait(h.ready.remote()))["pid"] for h in cluster.workers}
            async with anyio.create_task_group() as tg:
                tg.start_soon(cluster.run_many, ["block"])
                while not _blocked(tmp_path):  # noqa: ASYNC110 - another process makes it: no event to wait on
                    await anyio.sleep(0.01)
                (blocked_pid,) = _blocked(tmp_path)
                stats = await cluster.stats()
            assert [s["pid"] for s in stats] == [pid for pid in pids.values() if pid != blocked_pid]
            assert [pids[h] for h in cluster.workers] == [s["pid"] for s in stats]


async def test_a_slow_chunk_whose_worker_answers_is_not_cut_short() -> None:
    with anyio.fail_after(60):
        async with RayCluster(
            slow_agent, workers=1, worker_options=WORKER, chunk=2, unresponsive_timeout=0.5
        ) as cluster:
            results = await cluster.run_many(["a", "b", "c"])
            assert len(cluster.workers) == 1
    assert [r.content for r in results] == ["slow a", "slow b", "slow c"]


def test_the_bound_is_checked() -> None:
    for bad in (0, -1.0, True, "5"):
        with pytest.raises(ValueError, match="unresponsive_timeout"):
            RayCluster(echo_agent, workers=1, unresponsive_timeout=bad)  # type: ignore[arg-type]
