"""``RayCluster``: one agent over many inputs, spread over Ray workers that each host a Runtime.

The driver (this module) shards the inputs into chunks and keeps, for each job
(one ``run_many`` / ``as_completed``), ``inflight`` chunks running on every live
worker (:class:`~agentactors.ray.worker.ClusterWorker`; jobs side by side add up);
each chunk's results come back in one reply (a pickled blob per result), and each input index is
delivered exactly once — in input order by :meth:`RayCluster.run_many`, as
they finish by :meth:`RayCluster.as_completed`.

**Chunks.**  ``chunk=None`` sizes them from what is left (several chunks per
lane, so the tail balances) and from the measured size of a result, so that a
chunk's results stay under Ray's inline object limit (100 KiB: an object that
small travels with the reply instead of through the object store).

**Failures.**  A worker that dies loses the chunks it was running.  With
``retries > 0`` they run again on another worker (at-least-once execution: a
run may have done part of its work, tools included, before its process died —
tools deduplicate on ``ToolContext.input_key``, ``"{job}:{index}"``, which is
the same on every attempt).  With ``retries=0`` they come back as failed
:class:`~agentactors.RunResult` s whose ``error`` is
:class:`~agentactors.ray.WorkerLost` (at-most-once).  Ray's own task retries are
off for workers (``max_task_retries=0``): stacked on the driver's they would
run a lost chunk twice over.  A dead worker is not replaced; when none is left,
what was not run comes back failed with ``WorkerLost``.

**A worker that does not answer.**  Ray's ``ActorUnavailableError`` (the
worker could not be reached: a network blip, a node under strain) fails that
call only — the call may or may not have run — so its chunk is handled as one
lost with a dead worker (sent again, or failed with
:class:`~agentactors.ray.errors.WorkerUnavailableError`), but the worker stays:
it is sent nothing more until it answers a ping, and it is lost (killed) only
if it stays unreachable for ``unresponsive_timeout`` seconds.  A worker whose
event loop is blocked (async code calling something blocking, such as
``time.sleep`` in an async tool) answers nothing either: a chunk's reply that
has not come for ``unresponsive_timeout`` seconds makes the driver ping the
worker, and a worker that does not answer that ping within
``unresponsive_timeout`` more is lost and killed, its chunk failed (or sent
again) with ``WorkerUnavailableError``.  A slow chunk whose worker answers runs
as long as it takes.  A worker the driver gave up on gets its budget slots
freed only once Ray confirms that it is dead: until then its runs could still
be sending requests.

**What cannot travel** fails alone, as a result of its own input: an input Ray
cannot serialize (a ``TypeError`` naming its index; its neighbours run), a
result the driver cannot unpickle (a ``RemoteError`` saying why).  A Ray error
the driver does not expect fails its chunk's inputs with a ``RemoteError``:
nothing a worker sends back takes the whole job down.

**Ray going away.**  When the driver's Ray is shut down during a job, every
worker is lost at once: what was running and what was never sent come back
failed with ``WorkerLost`` within about a second (the waits look at Ray's
liveness: :mod:`agentactors.ray._refs`).

**Cancellation.**  Cancelling the driver (or leaving ``as_completed`` early)
``ray.cancel`` s every chunk in flight: Ray cancels the worker's asyncio task,
which cancels the chunk's runs and their HTTP requests.

The driver runs on asyncio or trio: it waits on object refs through
:class:`~agentactors.ray._refs.RefWaiter` (a callback per ref, no thread per wait).
"""

from __future__ import annotations

import functools
import logging
import math
import os
import pickle
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, Final

import anyio
import anyio.to_thread
import attrs
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .._extras import needs_extra
from .._version import __version__
from ..errors import redact
from ..gateway.cost_budget import CostBudget, check_cost_limit
from ..gateway.ticket import check_deadline, check_priority
from ..loop.result import RunResult
from ..settings import ModelSettings
from ._budget_actor import BudgetActor
from ._refs import RefWaiter, ray_gone_error
from ._shipping import input_messages, pack_factory, remote_error, unpack_results
from .budget import SharedBudget
from .errors import VersionMismatch, WorkerLost, WorkerUnavailableError
from .ledger import Roster
from .worker import ClusterWorker

__all__ = ["ClusterCompletions", "RayCluster"]

log = logging.getLogger("agentactors.ray")

#: Ray's ``max_direct_call_object_size`` default: results under it travel inline with the reply.
INLINE_LIMIT: Final = 100 * 1024
_MAX_CHUNK: Final = 256
_FORBIDDEN_OPTIONS: Final = frozenset({"max_task_retries", "max_restarts"})
#: The first and the longest pause between pings of a worker Ray could not reach.
_PING_BACKOFF: Final = (0.05, 1.0)


@attrs.define(slots=True, eq=False)
class _Worker:
    id: str
    handle: Any
    serve: Any = None
    #: The driver sends it work.  False once Ray said it died, or the driver gave up on it.
    alive: bool = True
    #: Its slots were given back: the budgets were told it left the roster (only once Ray said it died).
    freed: bool = False
    #: When Ray first failed to reach it (``ActorUnavailableError``) with no reply from it since; else None.
    unavailable_since: float | None = None


class _Unresponsive(Exception):
    """A chunk's reply was late and its worker did not answer a ping in time (its event loop is blocked)."""


@attrs.define(slots=True, eq=False)
class _Chunk:
    start: int
    items: list[Any]
    attempts: int = 0


class RayCluster:
    """Runs one agent over many inputs on Ray workers (an async context manager; asyncio or trio).

    :param agent_factory: builds the agent, once per worker, inside that worker's runtime, while the
        cluster starts: its failure on a worker fails ``async with`` (picklable; shipped by value when its
        module is not importable on the workers). It may call :func:`~agentactors.ray.with_shared_budget`;
        it may be async.
    :param workers: how many workers (Ray actors, one process and one Runtime each).
    :param budgets: ``{name: SharedBudget(...)}``: one Ray actor per budget, shared by all workers.
    :param worker_options: Ray actor options for the workers (``num_cpus``, ``resources``,
        ``runtime_env``, ...); ``max_task_retries`` and ``max_restarts`` are the cluster's own.
    :param chunk: inputs per chunk (``None``: sized automatically, see the module docstring).
    :param inflight: chunks running at once on each worker, per job: ``run_many`` / ``as_completed``
        calls running side by side each keep this many on every worker (what bounds the requests is
        the budgets: ``SharedBudget(max_concurrency=...)``).
    :param retries: how many times a chunk lost with its worker is sent again.
    :param init: ``ray.init`` keyword arguments, used when Ray is not initialized yet (the
        cluster then shuts Ray down at its exit).  Without it, Ray must be initialized already.
    :param drain_timeout: seconds a worker's runs may finish in when the cluster exits.
    :param start_timeout: seconds the workers may take to start, their ``agent_factory`` calls included.
    :param unresponsive_timeout: seconds a worker may go without answering before it is lost (and killed):
        Ray unable to reach it (``ActorUnavailableError`` each time), or its event loop blocked (a chunk's
        reply late by this much, then no answer to a ping within as much again).  A slow chunk whose
        worker answers is never cut short.
    :raises ValueError: invalid numbers (a negative ``drain_timeout``, a ``start_timeout`` not above 0, ...),
        options Ray's retries would stack on, an empty budget name.
    :raises TypeError: a factory that is not callable; a number, mapping or budget of the wrong type.
    """

    def __init__(
        self,
        agent_factory: Callable[[], Any],
        *,
        workers: int,
        budgets: Mapping[str, SharedBudget] | None = None,
        worker_options: Mapping[str, Any] | None = None,
        chunk: int | None = None,
        inflight: int = 2,
        retries: int = 1,
        init: Mapping[str, Any] | None = None,
        drain_timeout: float = 5.0,
        start_timeout: float = 120.0,
        unresponsive_timeout: float = 60.0,
    ) -> None:
        if not callable(agent_factory):
            raise TypeError("agent_factory must be callable: () -> Agent")
        for label, value, low in (("workers", workers, 1), ("inflight", inflight, 1), ("retries", retries, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{label} must be an int >= {low}, not {value!r}")
        if (
            isinstance(unresponsive_timeout, bool)
            or not isinstance(unresponsive_timeout, int | float)
            or not 0 < unresponsive_timeout < math.inf
        ):
            raise ValueError(f"unresponsive_timeout must be a positive number of seconds, not {unresponsive_timeout!r}")
        if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1):
            raise ValueError(f"chunk must be a positive int or None, not {chunk!r}")
        # Checked here, not where they are used: a bad drain_timeout otherwise fails every worker's runtime
        # (every input failing) and then the cluster's exit before it killed its workers.
        drain_timeout = _seconds(drain_timeout, "drain_timeout", zero=True)
        start_timeout = _seconds(start_timeout, "start_timeout", zero=False)
        for label, mapping in (("worker_options", worker_options), ("init", init), ("budgets", budgets)):
            if mapping is not None and not isinstance(mapping, Mapping):
                raise TypeError(f"{label} must be a mapping (a dict) or None, not {type(mapping).__name__}")
        options = dict(worker_options or {})
        clash = _FORBIDDEN_OPTIONS & options.keys()
        if clash:
            raise ValueError(
                f"worker_options may not set {sorted(clash)}: the cluster re-sends what a lost worker was "
                "running itself, and Ray's retries stacked on it would run lost work twice over"
            )
        for name, budget in (budgets or {}).items():
            if not isinstance(name, str):
                raise TypeError(f"budgets are named by a str (with_shared_budget's name), not {name!r}")
            if not name:
                raise ValueError("budgets are named by a non-empty str (with_shared_budget's name), not ''")
            if not isinstance(budget, SharedBudget):
                raise TypeError(f"budgets[{name!r}] must be a SharedBudget, not {type(budget).__name__}")
        self._factory = agent_factory
        self._size = workers
        self._budgets = dict(budgets or {})
        self._options = options
        self._chunk = chunk
        self.inflight = inflight
        self.retries = retries
        self._init = dict(init) if init is not None else None
        self._drain_timeout = drain_timeout
        self._start_timeout = start_timeout
        self.unresponsive_timeout = float(unresponsive_timeout)
        self._workers: list[_Worker] = []
        self._budget_actors: dict[str, Any] = {}
        self._roster = Roster(0, frozenset())
        self._waiter: RefWaiter | None = None
        self._tg: TaskGroup | None = None
        self._started_ray = False
        self._result_bytes = 0.0
        self._entered = False
        #: What the start was waiting for (said by the TimeoutError of a start past ``start_timeout``).
        self._phase = "Ray's workers were being created"
        #: The block is exiting: a job still running ends its inputs with "the cluster closed".
        self._closing = False

    def __repr__(self) -> str:
        live = sum(w.alive for w in self._workers)
        return f"RayCluster(workers={live}/{self._size}, budgets={sorted(self._budgets)})"

    # -- lifecycle ---------------------------------------------------------------------------------

    async def __aenter__(self) -> RayCluster:
        """Start the workers (and the budget actors; Ray itself when ``init=`` was given), within ``start_timeout``.

        The start ends once every worker has built its agent with the ``agent_factory``: a factory that fails
        on the workers (a budget name missing from ``budgets``, a missing environment variable, argparse's
        ``SystemExit``, a provider refusing its arguments) fails the entry, once, with the error its runs would
        have carried — what was started is shut down first.

        :raises RuntimeError: the cluster was entered before, or Ray is not initialized and no ``init=`` was given.
        :raises Exception: the ``agent_factory``'s own exception when it failed on a worker and travels (a
            ``KeyError``, ...; a note names the worker), else a :class:`~agentactors.ray.errors.RemoteError`
            naming its type and saying it was raised "while running its agent_factory" (a ``SystemExit``, an
            error that does not pickle or holds a credential).
        :raises WorkerLostError: a worker's process died while it built its agent (a factory ending its process).
        :raises VersionMismatchError: a worker runs another agentactors version.
        :raises TimeoutError: the start took longer than ``start_timeout`` (saying whether the factory had not
            returned yet).

        Cancellation: a ``ray.init`` running in its worker thread is not interrupted; once it ended, the start
        stops where it waits, and what it started — workers, budget actors, a Ray it started — is shut down
        (shielded, bounded by ``drain_timeout`` plus a few seconds) before the cancellation propagates.  A
        cluster is entered once, even when its entry was cancelled.
        """
        if self._entered:
            raise RuntimeError("a RayCluster can be entered only once")
        self._entered = True
        with needs_extra("ray", "RayCluster"):  # the first use of ray: without it, an ImportError naming the extra
            import ray

        if not ray.is_initialized():
            if self._init is None:
                raise RuntimeError(
                    "Ray is not initialized: call ray.init(...) first (a running cluster is used as is), "
                    "or pass RayCluster(..., init=dict(...)) to start a local one"
                )
            await anyio.to_thread.run_sync(functools.partial(ray.init, **self._init))
            self._started_ray = True
        waiter = self._waiter = RefWaiter()
        try:
            with anyio.move_on_after(self._start_timeout) as bound:
                await self._start(ray, waiter)
            if bound.cancelled_caught:  # (a TimeoutError of the factory's own, raised above, is left as it is)
                raise TimeoutError(
                    f"the cluster did not start within start_timeout={self._start_timeout:g} s: {self._phase}"
                )
            tg = self._tg = anyio.create_task_group()
            await tg.__aenter__()
            for worker in self._workers:
                tg.start_soon(self._watch, worker)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._shutdown()
            raise
        return self

    async def _start(self, ray: Any, waiter: RefWaiter) -> None:
        cluster_id = os.urandom(4).hex()
        ids = [f"{cluster_id}-w{i}" for i in range(self._size)]
        roster = self._roster = Roster(1, frozenset(ids))
        budget_cls = ray.remote(BudgetActor)
        for name, budget in self._budgets.items():
            self._budget_actors[name] = budget_cls.options(
                name=f"agentactors-budget-{cluster_id}-{name}",
                max_restarts=-1,
                max_task_retries=0,
                num_cpus=0,
            ).remote(budget)
        shared = {name: (self._budgets[name], handle) for name, handle in self._budget_actors.items()}
        blob = pack_factory(self._factory)
        worker_cls = ray.remote(ClusterWorker)
        options = {**self._options, "max_task_retries": 0, "max_restarts": 0}
        for worker_id in ids:
            handle = worker_cls.options(**options).remote(worker_id, blob, shared, roster, self._drain_timeout)
            self._workers.append(_Worker(worker_id, handle))
        self._phase = "the workers had not all started (Ray had not placed or started their processes)"
        pings = [w.handle.ready.remote() for w in self._workers]  # all sent first: the workers start side by side
        infos = [await waiter.wait(ref) for ref in pings]
        for info in infos:
            if info["version"] != __version__:
                raise VersionMismatch(
                    f"worker {info['worker']} runs agentactors {info['version']}, the driver {__version__}: "
                    "install the same version on every node"
                )
        for handle in self._budget_actors.values():
            await waiter.wait(handle.set_roster.remote(roster))
        for worker in self._workers:
            worker.serve = worker.handle.serve.remote()
        self._phase = "the agent_factory had not returned on every worker"
        await self._built(waiter)

    async def _built(self, waiter: RefWaiter) -> None:
        """Wait until every worker built its agent (its :meth:`ClusterWorker.started`); raise the first failure.

        Each ``started`` call is sent with ``serve`` and answers as soon as the factory returned: a factory
        that works adds one small call per worker, sent side by side, and no wait beyond the factory itself
        (the first chunk used to wait for it instead).  The first failure ends the wait (the other workers'
        factories are not waited for: the cluster is shut down).

        :raises Exception: see :meth:`__aenter__`.
        """
        import ray.exceptions

        failure: BaseException | None = None

        async def built(worker: _Worker, ref: Any) -> None:
            nonlocal failure
            error: BaseException | None
            try:
                blobs = await waiter.wait(ref)
                error = unpack_results(blobs, [None])[0].error if blobs else None
                if error is not None:
                    error.add_note(f"(from Ray worker {worker.id}, building its agent at the cluster's start)")
            except ray.exceptions.ActorUnavailableError as exc:  # not its death: Ray's word, as the ping's
                error = exc
            except ray.exceptions.RayActorError:
                error = WorkerLost(
                    f"worker {worker.id} died while building its agent (running its agent_factory)",
                    worker=worker.id,
                    attempts=0,
                )
            except Exception as exc:  # Ray shut down under the start (WorkerLost), another Ray error
                error = exc
            if error is not None and failure is None:
                failure = error
                tg.cancel_scope.cancel()

        async with anyio.create_task_group() as tg:
            for worker in self._workers:
                tg.start_soon(built, worker, worker.handle.started.remote())
        if failure is not None:
            raise failure

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        """Stop the workers (their runs may finish for ``drain_timeout``), then the budget actors.

        Cancellation: the shutdown runs shielded (bounded by ``drain_timeout`` plus a few seconds).
        """
        self._closing = True
        tg, self._tg = self._tg, None
        try:
            if tg is not None:
                tg.cancel_scope.cancel()
                await tg.__aexit__(None, None, None)
        finally:
            with anyio.CancelScope(shield=True):
                await self._shutdown()
        return None

    async def _watch(self, worker: _Worker) -> None:
        """Learn of a worker's death even while it runs nothing (the budgets' roster depends on it).

        Ray unable to reach the worker is not its death: the watcher waits for it to answer again
        (then watches through :meth:`ClusterWorker.served`) or for the bound (then the worker is lost).
        """
        import ray
        import ray.exceptions

        ref = worker.serve
        while True:
            try:
                failure = await self._reply(worker, ref)
            except ray.exceptions.ActorUnavailableError:
                if self._unavailable(worker) and await self._recover(worker):
                    try:
                        ref = worker.handle.served.remote()
                    except Exception as exc:
                        if not ray.is_initialized():  # Ray is going away
                            self._ray_gone()
                        else:
                            log.warning("cannot watch worker %s any more: %s", worker.id, type(exc).__name__)
                        return
                    continue
                await self._confirm_death(worker)
            except ray.exceptions.RayActorError:
                self._lost(worker)
            except WorkerLost:  # Ray itself is gone
                self._ray_gone()
            except Exception as exc:  # serve raised to Ray (it should not): its runtime is gone; so is the worker
                self._give_up(worker, f"it stopped serving ({type(exc).__name__})")
                await self._confirm_death(worker)
            else:
                if failure is not None:  # the factory failed: its chunks say so
                    log.warning("worker %s stopped serving: its agent_factory raised %s", worker.id, failure)
            return

    async def _shutdown(self) -> None:
        import ray

        waiter = self._waiter
        if not ray.is_initialized():  # shut down under us: nothing is left to stop
            self._workers = [attrs.evolve(w, alive=False) for w in self._workers]
            self._budget_actors.clear()
            self._started_ray = False
            return
        live = [w for w in self._workers if w.alive]
        if waiter is not None and live:
            with anyio.move_on_after(self._drain_timeout + 5.0):
                for w in live:
                    try:
                        await waiter.wait(w.handle.stop.remote())
                    except Exception:
                        pass
                for w in live:
                    if w.serve is not None:
                        try:
                            await waiter.wait(w.serve)
                        except Exception:
                            pass
        for w in self._workers:
            try:
                ray.kill(w.handle)
            except Exception:
                pass
        for handle in self._budget_actors.values():
            try:
                ray.kill(handle, no_restart=True)
            except Exception:
                pass
        self._workers = [attrs.evolve(w, alive=False) for w in self._workers]
        if self._started_ray:
            self._started_ray = False
            await anyio.to_thread.run_sync(ray.shutdown)

    # -- what the cluster is -----------------------------------------------------------------------

    @property
    def workers(self) -> tuple[Any, ...]:
        """The Ray actor handles of the live workers (for operations, e.g. ``ray.kill`` in a drill)."""
        return tuple(w.handle for w in self._workers if w.alive)

    @property
    def budget_actors(self) -> Mapping[str, Any]:
        """The Ray actor handle of each budget's ledger, by name."""
        return dict(self._budget_actors)

    async def stats(self) -> list[dict[str, Any]]:
        """Each live worker's accounting: per budget, requests served and ledger calls made.

        A worker found dead here (it died before its watcher noticed: Ray answers ``RayActorError``) is
        marked lost as the watcher would have (the budgets get the new roster) and left out: the list is
        the workers alive when asked, possibly fewer than :attr:`workers` held before the call.  A worker
        Ray cannot reach (``ActorUnavailableError``) is left out too, but not lost for it (see
        ``unresponsive_timeout``); one that does not answer within ``unresponsive_timeout`` (its event
        loop blocked) is lost, killed, and left out.

        :raises WorkerLostError: the driver's Ray was shut down (before the call or during it; whether or not
            the cluster had noticed already: then every worker is lost).
        :raises RuntimeError: outside ``async with``.

        Cancellation: the waits for the workers' replies are cancelled; nothing else changes.
        """
        import ray
        import ray.exceptions

        self._check()
        if not ray.is_initialized():  # whether or not the watchers noticed yet: the same answer
            self._ray_gone()
            raise ray_gone_error()
        found: list[dict[str, Any]] = []
        for worker in list(self._workers):  # (a copy: the shutdown replaces the list)
            if not worker.alive:
                continue
            try:
                with anyio.move_on_after(self.unresponsive_timeout):
                    found.append(await self._reply(worker, worker.handle.stats.remote()))
                    continue
                self._give_up(worker, f"its event loop did not answer for {self.unresponsive_timeout} s")
            except ray.exceptions.ActorUnavailableError:
                self._unavailable(worker)  # not (yet) lost: left out of this list
            except ray.exceptions.RayActorError:
                self._lost(worker)
            except WorkerLost:  # the waiter's word: Ray was shut down while it waited
                self._ray_gone()
                raise
        return found

    async def _reply(self, worker: _Worker, ref: Any) -> Any:
        """The reply to a call made to ``worker``: where the driver awaits every worker's replies.

        A reply is a sign of life: a worker Ray could not reach a moment ago is reachable again.

        :raises ray.exceptions.RayActorError: Ray's word on the call (``ActorUnavailableError``: it could
            not reach the worker, which may answer again; another one: the worker is dead).
        :raises WorkerLostError: the driver's Ray was shut down.
        """
        assert self._waiter is not None
        value = await self._waiter.wait(ref)
        worker.unavailable_since = None
        return value

    async def _chunk_reply(self, worker: _Worker, ref: Any) -> Any:
        """A chunk's reply, waited for as long as its worker shows it is alive (a blocked one does not).

        Every ``unresponsive_timeout`` seconds without the reply, the worker is pinged: its event loop
        answers the ping unless something blocks it.

        :raises _Unresponsive: the ping was not answered within ``unresponsive_timeout`` either.
        :raises ray.exceptions.RayActorError: as :meth:`_reply` (for the chunk or for the ping).
        """
        bound = self.unresponsive_timeout
        while True:
            with anyio.move_on_after(bound):
                return await self._reply(worker, ref)
            if not await self._ping(worker, bound):
                raise _Unresponsive

    async def _ping(self, worker: _Worker, within: float) -> bool:
        """Whether ``worker`` answers a call (its event loop runs) within ``within`` seconds.

        :raises ray.exceptions.RayActorError: as :meth:`_reply`.
        :raises WorkerLostError: the driver's Ray was shut down.
        """
        import ray

        try:
            ref = worker.handle.ready.remote()
        except Exception:
            if not ray.is_initialized():
                raise ray_gone_error() from None
            raise
        try:
            with anyio.move_on_after(within):
                await self._reply(worker, ref)
                return True
        except anyio.get_cancelled_exc_class():
            _cancel(ref)
            raise
        _cancel(ref)
        return False

    def _unavailable(self, worker: _Worker) -> bool:
        """Ray could not reach ``worker`` (``ActorUnavailableError``): whether it may still answer.

        The first such error starts the clock; one past ``unresponsive_timeout`` without a reply in
        between makes the worker lost (:meth:`_give_up`).
        """
        if not worker.alive:
            return False
        now = anyio.current_time()
        if worker.unavailable_since is None:
            worker.unavailable_since = now
            log.warning(
                "Ray could not reach worker %s; it is lost unless it answers within %s s",
                worker.id,
                self.unresponsive_timeout,
            )
        elif now - worker.unavailable_since >= self.unresponsive_timeout:
            self._give_up(worker, f"Ray could not reach it for {self.unresponsive_timeout} s")
        return worker.alive

    async def _recover(self, worker: _Worker) -> bool:
        """Ping ``worker``, which Ray could not reach, until it answers (True) or is lost (False).

        Pings back off (:data:`_PING_BACKOFF`); the worker is given up once it has been unreachable
        for ``unresponsive_timeout`` seconds.

        Cancellation: the ping in flight is cancelled; the worker stays as it is.
        """
        import ray.exceptions

        delay, longest = _PING_BACKOFF
        while worker.alive:
            since = worker.unavailable_since
            if since is None:
                return True  # a reply came meanwhile
            left = since + self.unresponsive_timeout - anyio.current_time()
            if left <= 0:
                self._give_up(worker, f"Ray could not reach it for {self.unresponsive_timeout} s")
                break
            await anyio.sleep(min(delay, left))  # a pause between pings, not a synchronisation
            delay = min(2 * delay, longest)
            try:
                await self._ping(worker, max(0.0, since + self.unresponsive_timeout - anyio.current_time()))
            except ray.exceptions.ActorUnavailableError:
                continue
            except ray.exceptions.RayActorError:
                self._lost(worker)
            except WorkerLost:
                self._ray_gone()
            except Exception as exc:  # Ray's other errors: still not an answer; the bound decides
                log.debug("ping of worker %s failed: %s", worker.id, type(exc).__name__)
        return False

    async def _confirm_death(self, worker: _Worker) -> None:
        """Free a worker the driver gave up on once Ray says it is dead (until then it could still spend)."""
        import ray.exceptions

        delay, longest = _PING_BACKOFF
        while not worker.freed:
            try:
                await self._reply(worker, worker.handle.ready.remote())
            except ray.exceptions.ActorUnavailableError:
                pass
            except ray.exceptions.RayActorError:
                self._lost(worker)
                return
            except Exception:  # WorkerLost, or Ray going away under the call
                import ray

                if not ray.is_initialized():
                    self._ray_gone()
                    return
                log.debug("could not learn whether worker %s died", worker.id, exc_info=True)
            await anyio.sleep(delay)  # a pause between asks, not a synchronisation
            delay = min(2 * delay, longest)

    def _is_closing(self) -> bool:
        """Whether the block is exiting (a method: it changes under a job's awaits)."""
        return self._closing

    def _check(self) -> RefWaiter:
        if self._waiter is None or self._tg is None:
            raise RuntimeError("use the cluster inside `async with RayCluster(...) as cluster:`")
        return self._waiter

    def _give_up(self, worker: _Worker, why: str) -> None:
        """Stop using a worker that does not answer, and kill it.

        Its budget slots stay booked to it until Ray confirms the death (the watcher then calls
        :meth:`_lost`): a worker only unreachable from here, or whose blocked loop wakes, could still
        be sending requests on them.
        """
        import ray

        if not worker.alive:
            return
        worker.alive = False
        log.warning("worker %s was lost: %s; it is killed", worker.id, why)
        try:
            ray.kill(worker.handle, no_restart=True)
        except Exception:  # Ray is going away: so is the worker
            log.debug("could not kill worker %s", worker.id, exc_info=True)

    def _lost(self, worker: _Worker) -> None:
        """Ray says ``worker`` is dead: send it nothing more, and free its slots (the budgets get the new roster)."""
        if worker.alive:
            worker.alive = False
            log.warning("worker %s was lost", worker.id)
        if worker.freed:
            return
        worker.freed = True
        # A worker given up on but not yet confirmed dead keeps its place (and its slots).
        live = frozenset(w.id for w in self._workers if not w.freed)
        roster = self._roster = Roster(self._roster.version + 1, live)
        # Fire and forget: a budget that restarts later gets the roster back from the workers.
        handles = [w.handle.update_roster for w in self._workers if w.alive]
        handles += [handle.set_roster for handle in self._budget_actors.values()]
        for method in handles:
            try:
                method.remote(roster)
            except Exception:  # Ray is going away: nobody is left to tell
                log.debug("could not send the roster", exc_info=True)

    def _ray_gone(self) -> None:
        """The driver's Ray was shut down: every worker is lost, and nobody can be told."""
        for worker in self._workers:
            worker.freed = True
            if worker.alive:
                worker.alive = False
                log.warning("worker %s was lost: Ray was shut down", worker.id)

    # -- running -----------------------------------------------------------------------------------

    async def run_many(
        self,
        inputs: Iterable[Any],
        *,
        progress: Callable[[int, int, int], Any] | None = None,
        deps: Any = None,
        settings: ModelSettings | None = None,
        deadline: float | None = None,
        priority: int | None = None,
        cost_limit: float | None = None,
        input_key: str | None = None,
    ) -> list[RunResult[Any]]:
        """Run the agent on every input; one :class:`~agentactors.RunResult` per input, in input order.

        ``progress(done, failed, total)`` is called on the driver as results arrive (a callback
        that raises is logged once and ignored).  Failed runs (the run's own failure, a
        ``WorkerLost``, a ``RemoteError``) are results like the others.  The run options are
        :meth:`as_completed`'s (``rt.run_many``'s, as far as they can cross processes).

        :raises TypeError, ValueError: an option a run would refuse, or one that cannot be sent to the workers
            (see :meth:`as_completed`); nothing was sent.

        Cancellation: cancels the chunks in flight (``ray.cancel``) and propagates.
        """
        items = list(inputs)
        results: list[RunResult[Any] | None] = [None] * len(items)
        done = failed = 0
        warned = False
        completions_of = self.as_completed(
            items,
            deps=deps,
            settings=settings,
            deadline=deadline,
            priority=priority,
            cost_limit=cost_limit,
            input_key=input_key,
        )
        async with completions_of as completions:
            async for index, result in completions:
                results[index] = result
                done += 1
                failed += bool(result.generation_failed or result.error is not None)
                if progress is not None:
                    try:
                        progress(done, failed, len(items))
                    except Exception:
                        if not warned:
                            warned = True
                            log.exception("the run_many progress callback raised; it is ignored from now on")
        missing = [i for i, r in enumerate(results) if r is None]
        assert not missing, f"inputs {missing[:5]} were never delivered"
        return [r for r in results if r is not None]

    def as_completed(
        self,
        inputs: Iterable[Any],
        *,
        deps: Any = None,
        settings: ModelSettings | None = None,
        deadline: float | None = None,
        priority: int | None = None,
        cost_limit: float | None = None,
        input_key: str | None = None,
    ) -> ClusterCompletions:
        """``async with cluster.as_completed(inputs) as results: async for index, result in results:``.

        Yields ``(index, RunResult)`` pairs as chunks finish, each index exactly once.  Leaving
        the block early cancels the chunks still running.

        Every run of the job gets ``agent.run``'s options, with their local meaning: ``deps`` (reaches
        tools as ``ToolContext.deps``), ``settings``, ``deadline`` (seconds, each run's own, from its start
        on its worker), ``priority`` (its class at the worker's ProviderActor) and ``cost_limit`` (a number:
        each run's own limit).  ``input_key`` names the job: each run's ``ToolContext.input_key`` is
        ``"{input_key}:{index}"`` (default: a random job id, :attr:`ClusterCompletions.job`).  The options
        are pickled once for the job (``ray.cloudpickle``), stored once in Ray's object store, and unpickled
        on a worker for each chunk: ``deps`` must be data that travels (no locks, clients, open files — build
        those in the ``agent_factory``), and a chunk's runs share one copy of it.

        :raises TypeError: ``deps`` (or another option) cannot be pickled — the message names it; a
            :class:`~agentactors.CostBudget` as ``cost_limit`` (a budget shared by runs lives in one process:
            give each run a number, or bound the cluster's spend with its budgets' rates); ``settings`` that
            are not ``ModelSettings``; a ``priority`` or ``input_key`` of the wrong type.
        :raises ValueError: a ``deadline`` or ``cost_limit`` out of range.
        :raises RuntimeError: outside ``async with``.
        """
        self._check()
        options = _job_options(deps, settings, deadline, priority, cost_limit)
        if input_key is not None and not isinstance(input_key, str):
            raise TypeError(f"input_key must be a str (it names the job), not {type(input_key).__name__}")
        ref = None
        if options is not None:
            import ray

            try:
                ref = ray.put(options)  # once for the job: each chunk's call passes the reference
            except Exception:
                if ray.is_initialized():
                    raise
                # Ray was shut down: the job sends nothing, and fails every input with WorkerLost (as without
                # options), so nothing runs without its options.
                ref = None
        return ClusterCompletions(self, list(inputs), job=input_key, options=ref)

    def _chunk_size(self, remaining: int) -> int:
        if self._chunk is not None:
            return self._chunk
        live = max(1, sum(w.alive for w in self._workers))
        size = max(1, min(_MAX_CHUNK, math.ceil(remaining / (live * self.inflight * 2))))
        if self._result_bytes > 0:
            size = min(size, max(1, int(INLINE_LIMIT * 0.8 / self._result_bytes)))
        else:
            size = min(size, 16)  # nothing measured yet: start small
        return size

    def _measured(self, blob_size: int, count: int) -> None:
        if count:
            self._result_bytes = max(self._result_bytes * 0.8, blob_size / count)


class ClusterCompletions:
    """Results of :meth:`RayCluster.as_completed` as ``(index, RunResult)`` (see there)."""

    def __init__(self, cluster: RayCluster, items: list[Any], *, job: str | None = None, options: Any = None) -> None:
        self._cluster = cluster
        self._items = items
        self._total = len(items)
        self._job = job if job is not None else os.urandom(4).hex()
        self._options = options  # the object ref of the job's run options (pickled), or None
        self._cursor = 0
        self._requeued: deque[_Chunk] = deque()
        self._in_flight = 0
        self._delivered = bytearray(self._total)
        self._changed = anyio.Event()
        self._tg: TaskGroup | None = None
        self._closed = False
        # Made when the block is entered: a handle never entered holds no stream to leave unclosed.
        self._send: MemoryObjectSendStream[tuple[int, RunResult[Any]]]
        self._receive: MemoryObjectReceiveStream[tuple[int, RunResult[Any]]]

    @property
    def job(self) -> str:
        """This job's id: the ``{job}`` of each run's ``input_key`` (``"{job}:{index}"``)."""
        return self._job

    async def __aenter__(self) -> ClusterCompletions:
        """Start the job in the background (its chunks sent to the workers) and return the handle.

        Cancellation: it waits for nothing; cancelling the block later is :meth:`__aexit__`'s.
        """
        self._send, self._receive = anyio.create_memory_object_stream[tuple[int, RunResult[Any]]](math.inf)
        tg = self._tg = anyio.create_task_group()
        await tg.__aenter__()
        tg.start_soon(self._run)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        """Leave the job: the chunks still running are cancelled (their Ray tasks too), results not taken are
        dropped.

        Cancellation: not shielded, and needs no shield: the job's tasks are cancelled first, and the exit
        only waits for them to end (at once: each cancels its Ray task and returns).
        """
        tg, self._tg = self._tg, None
        self._closed = True
        self._receive.close()
        if tg is None:
            return None
        tg.cancel_scope.cancel()
        return await tg.__aexit__(exc_type, exc, tb)

    def __aiter__(self) -> ClusterCompletions:
        return self

    async def __anext__(self) -> tuple[int, RunResult[Any]]:
        """The next ``(index, RunResult)`` to finish; ``StopAsyncIteration`` once every index was delivered.

        Cancellation: a cancelled consumer leaves its wait and loses no result (the next call gets it); the job
        goes on until the block is left.
        """
        if self._tg is None and not self._receive_closed():
            raise RuntimeError("iterate it inside `async with cluster.as_completed(inputs) as results:`")
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    def _receive_closed(self) -> bool:
        return self._closed

    # -- the job ---------------------------------------------------------------------------------

    def _notify(self) -> None:
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    def _next_chunk(self) -> _Chunk | None:
        if self._requeued:
            return self._requeued.popleft()
        if self._cursor >= self._total:
            return None
        size = self._cluster._chunk_size(self._total - self._cursor)
        start = self._cursor
        self._cursor = min(self._total, start + size)
        return _Chunk(start, self._items[start : self._cursor])

    def _deliver(self, index: int, result: RunResult[Any]) -> None:
        if self._delivered[index]:
            return  # exactly once, whatever happened on the way
        self._delivered[index] = 1
        try:
            self._send.send_nowait((index, result))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the consumer left: the exit cancels the rest

    def _fail_chunk(self, chunk: _Chunk, error: BaseException) -> None:
        for offset, prompt in enumerate(chunk.items):
            self._deliver(chunk.start + offset, RunResult("", input_messages(prompt), error=error))

    async def _run(self) -> None:
        cluster = self._cluster
        with self._send:
            async with anyio.create_task_group() as tg:
                for worker in cluster._workers:
                    if worker.alive:
                        for _ in range(cluster.inflight):
                            tg.start_soon(self._lane, worker)
            # No live worker is left for what was never run (or was to be sent again).
            if cluster._is_closing():
                why = "the cluster closed before this input ran"
            else:
                why = "no live worker was left to run this input"
            while True:
                chunk = self._next_chunk()
                if chunk is None:
                    break
                self._fail_chunk(chunk, WorkerLost(why, attempts=chunk.attempts))

    def _finished(self) -> bool:
        """Nothing is left to send and nothing is in flight."""
        return not self._requeued and self._cursor >= self._total and self._in_flight == 0

    async def _lane(self, worker: _Worker) -> None:
        import ray
        import ray.exceptions

        cluster = self._cluster
        cluster._check()
        while worker.alive and not cluster._is_closing():
            if worker.unavailable_since is not None and not await self._reachable(worker):
                return
            chunk = self._next_chunk()
            if chunk is None:
                if self._in_flight == 0:
                    return
                await self._changed.wait()
                continue
            try:
                ref = worker.handle.run_chunk.remote(self._job, chunk.start, chunk.items, self._options)
            except Exception as exc:
                if not ray.is_initialized():  # Ray is gone: so is every worker
                    cluster._ray_gone()
                    self._requeued.appendleft(chunk)  # never sent: it fails with what was never run
                    return
                self._unsendable(chunk, exc)
                continue
            chunk.attempts += 1
            self._in_flight += 1
            of = f"attempt {chunk.attempts} of {cluster.retries + 1}"
            try:
                try:
                    blobs = await cluster._chunk_reply(worker, ref)
                except (ray.exceptions.RayActorError, _Unresponsive):
                    if not cluster._is_closing():
                        raise
                    # The cluster stopped, then killed, its workers under this job: no worker died.
                    _cancel(ref)
                    self._fail_chunk(chunk, self._closed_error(worker, chunk))
                    return
            except anyio.get_cancelled_exc_class():
                _cancel(ref)
                raise
            except ray.exceptions.ActorUnavailableError:
                # Ray could not reach the worker: this call failed (it may or may not have run), not the
                # worker, which may answer again.  The next pass waits for it to (or for the bound).
                _cancel(ref)
                cluster._unavailable(worker)
                self._lost_call(
                    chunk,
                    WorkerUnavailableError(
                        f"Ray could not reach worker {worker.id} for the call running this input "
                        f"(ActorUnavailableError; {of}): it may or may not have run",
                        worker=worker.id,
                        attempts=chunk.attempts,
                    ),
                )
            except _Unresponsive:
                _cancel(ref)
                bound = cluster.unresponsive_timeout
                cluster._give_up(worker, f"its event loop did not answer for {bound} s")
                self._lost_call(
                    chunk,
                    WorkerUnavailableError(
                        f"worker {worker.id} stopped answering while running this input (no reply, then no "
                        f"answer to a ping, for {bound} s each: its event loop is blocked?) and was lost ({of})",
                        worker=worker.id,
                        attempts=chunk.attempts,
                    ),
                )
                return
            except ray.exceptions.RayActorError:
                cluster._lost(worker)
                self._lost_call(
                    chunk,
                    WorkerLost(
                        f"worker {worker.id} died while running this input ({of})",
                        worker=worker.id,
                        attempts=chunk.attempts,
                    ),
                )
                return
            except WorkerLost:  # the waiter's word: the driver's Ray was shut down
                cluster._ray_gone()
                self._fail_chunk(
                    chunk,
                    WorkerLost(
                        f"Ray was shut down while worker {worker.id} ran this input",
                        worker=worker.id,
                        attempts=chunk.attempts,
                    ),
                )
                return
            except Exception as exc:  # a Ray error the chunk cannot recover from: its inputs fail, not the job
                self._fail_chunk(chunk, _chunk_error(exc))
            else:
                results = unpack_results(blobs, chunk.items)
                cluster._measured(sum(len(blob) for blob in blobs), len(results))
                for offset, result in enumerate(results):
                    self._deliver(chunk.start + offset, result)
            finally:
                self._in_flight -= 1
                self._notify()

    def _closed_error(self, worker: _Worker, chunk: _Chunk) -> WorkerLost:
        return WorkerLost(
            f"the cluster closed while worker {worker.id} ran this input (attempt {chunk.attempts})",
            worker=worker.id,
            attempts=chunk.attempts,
        )

    def _lost_call(self, chunk: _Chunk, error: WorkerLost) -> None:
        """A chunk whose call came to nothing: sent again while its retries last, else failed with ``error``."""
        cluster = self._cluster
        if chunk.attempts <= cluster.retries and any(w.alive for w in cluster._workers):
            self._requeued.append(chunk)
        else:
            self._fail_chunk(chunk, error)

    async def _reachable(self, worker: _Worker) -> bool:
        """Before sending more to a worker Ray could not reach: whether it answers again (False: lost).

        False too once the job needs nothing more (nothing to send, nothing in flight): the job does not
        wait for a worker's recovery it has no use for.  The worker stays as it is; its clock runs on.
        """
        answered = False
        async with anyio.create_task_group() as tg:

            async def recover() -> None:
                nonlocal answered
                answered = await self._cluster._recover(worker)
                tg.cancel_scope.cancel()

            tg.start_soon(recover)
            while not self._finished():
                await self._changed.wait()
            tg.cancel_scope.cancel()
        return answered

    def _unsendable(self, chunk: _Chunk, exc: Exception) -> None:
        """Ray could not serialize the chunk: its inputs that do not pickle fail, the others go one by one."""
        import ray.cloudpickle

        cloudpickle: Any = ray.cloudpickle  # untyped
        bad: dict[int, BaseException] = {}
        for offset, item in enumerate(chunk.items):
            try:
                cloudpickle.dumps(item)
            except Exception as item_exc:
                bad[offset] = item_exc
        if not bad:  # no input alone is the cause: retrying them would fail the same way
            bad = dict.fromkeys(range(len(chunk.items)), exc)
        for offset, item in enumerate(chunk.items):
            index = chunk.start + offset
            why = bad.get(offset)
            if why is None:
                self._requeued.append(_Chunk(index, [item], chunk.attempts))
                continue
            error = TypeError(
                redact(f"input {index} cannot be sent to a Ray worker: {type(why).__name__}: {why}")[:2000]
            )
            self._deliver(index, RunResult("", input_messages(item), error=error))
        self._notify()


def _job_options(
    deps: Any, settings: Any, deadline: Any, priority: Any, cost_limit: Any
) -> bytes | None:
    """A job's run options, checked as ``agent.run`` checks them and pickled for the workers (``None``: none).

    :raises TypeError, ValueError: see :meth:`RayCluster.as_completed`.
    """
    if settings is not None and not isinstance(settings, ModelSettings):
        raise TypeError(f"settings must be a ModelSettings or None, not {type(settings).__name__}")
    check_deadline(deadline)
    check_priority(priority)
    if isinstance(cost_limit, CostBudget):
        raise TypeError(
            "cost_limit: a CostBudget is shared by the runs of one process, and a cluster's runs are in its "
            "workers' processes: give a number (each run's own limit), and bound the cluster's spend with its "
            "budgets' rates"
        )
    cost_limit = check_cost_limit(cost_limit)
    given = {
        name: value
        for name, value in (
            ("deps", deps),
            ("settings", settings),
            ("deadline", deadline),
            ("priority", priority),
            ("cost_limit", cost_limit),
        )
        if value is not None
    }
    if not given:
        return None
    import ray.cloudpickle

    cloudpickle: Any = ray.cloudpickle  # untyped
    try:
        return bytes(cloudpickle.dumps(given, protocol=pickle.HIGHEST_PROTOCOL))
    except Exception as exc:
        culprit = "the run options"
        for name, value in given.items():
            try:
                cloudpickle.dumps(value)
            except Exception:
                culprit = name
                break
        raise TypeError(
            redact(
                f"{culprit} cannot be sent to the Ray workers: {type(exc).__name__}: {exc} — pass data that "
                "pickles; build what holds locks, clients or open files in the agent_factory (once per worker)"
            )[:2000]
        ) from exc


def _seconds(value: Any, label: str, *, zero: bool) -> float:
    """``value`` as seconds (``math.inf`` allowed; 0 only with ``zero``), or a typed error naming ``label``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{label} must be a number of seconds, not {type(value).__name__} {value!r}")
    if not (value >= 0 if zero else value > 0):  # (NaN too)
        bound = ">= 0" if zero else "> 0"
        raise ValueError(f"{label} must be a number of seconds {bound}, not {value!r}")
    return float(value)


def _cancel(ref: Any) -> None:
    """``ray.cancel(ref)``, which raises once Ray is shut down (then nothing runs that could be cancelled)."""
    import ray

    try:
        ray.cancel(ref)
    except Exception:
        log.debug("could not cancel a chunk", exc_info=True)


def _chunk_error(exc: BaseException) -> BaseException:
    """What a chunk's inputs carry when its call failed on Ray's side: ours as it is, else a RemoteError."""
    import ray.exceptions

    if isinstance(exc, ray.exceptions.RayTaskError) and isinstance(getattr(exc, "cause", None), BaseException):
        exc = exc.cause
    return exc if _is_ours(exc) else remote_error(exc)


def _is_ours(exc: BaseException) -> bool:
    from ..errors import AgentActorsError, Signal

    return isinstance(exc, AgentActorsError | Signal)
