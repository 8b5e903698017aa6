"""A cluster worker: one Ray async actor hosting one agentactors :class:`~agentactors.Runtime` for its life.

A Ray actor is a whole process (tens of MB, a fraction of a second to start),
so it hosts a runtime, never an agent.  The cluster makes it a Ray actor
(``ray.remote(ClusterWorker)``, ``max_task_retries=0``: the driver re-sends what
a dead worker lost; Ray must not replay it too).  Ray runs an async actor's
methods on its own asyncio event loop, so **workers run agentactors on
asyncio** whatever the driver runs on.

- :meth:`ClusterWorker.serve` is the runtime's home: the driver calls it once;
  it enters ``async with Runtime()``, starts the budgets' lease maintainers,
  builds the agent with the user's factory (inside the runtime, so every run of
  this worker shares its ProviderActor and connection pool), and returns when
  :meth:`ClusterWorker.stop` is called.  The driver learns whether the factory
  worked through :meth:`ClusterWorker.started`, called with it at the
  cluster's start (a factory's failure fails the start, not the runs).  Its object ref failing is how the
  driver learns the process died.  When Ray could not reach the worker for a
  moment (that ref failed with ``ActorUnavailableError``, though the worker
  lives on), the driver watches again through :meth:`ClusterWorker.served`.
- Neither method raises the user's exceptions to Ray: a factory's failure, and
  anything a chunk's runs raise, come back as failed results, their errors made
  safe to send *here* (:func:`~agentactors.ray._shipping.sendable`: this process's
  redaction registry holds the keys its providers registered).  An exception
  raised to Ray would cross as Ray's task-failure text — a traceback with the
  raw message, recorded by Ray and redacted by nobody — and one the driver
  cannot unpickle would take the whole job down.
- :meth:`ClusterWorker.run_chunk` runs in Ray's task for that call, not the
  runtime's: it enters the runtime with :meth:`Runtime.call
  <agentactors.actors.runtime.Runtime.call>`.  All inputs of a chunk run
  concurrently; each gets ``input_key = "{job}:{index}"``.  ``ray.cancel`` of
  the call cancels its runs, and with them their HTTP requests.
"""

from __future__ import annotations

import inspect
import os
import pickle
from collections.abc import Mapping, Sequence
from typing import Any

import anyio

from .._version import __version__
from ..actors.runtime import Runtime
from ..loop.result import RunResult
from ._budget_actor import RayLedgerPort
from ._env import WorkerEnv, use_env
from ._shipping import failed_results, input_messages, pack_results, remote_error, sendable_error, unpack_factory
from .budget import SharedBudget
from .errors import WorkerLostError
from .lease import LeaseClient
from .ledger import Roster

__all__ = ["ClusterWorker"]


class ClusterWorker:
    """The worker actor (see the module docstring).

    :param worker: its id in the cluster's roster.
    :param factory: the agent factory, packed by :func:`~agentactors.ray._shipping.pack_factory`.
    :param budgets: ``{name: (SharedBudget, budget actor handle)}``.
    :param roster: the cluster's workers when this one was made.
    :param drain_timeout: the runtime's (seconds runs may finish in when the worker stops).
    """

    def __init__(
        self,
        worker: str,
        factory: bytes,
        budgets: Mapping[str, tuple[SharedBudget, Any]],
        roster: Roster | None = None,
        drain_timeout: float = 5.0,
    ) -> None:
        self._id = worker
        self._factory_blob = factory
        self._budgets = dict(budgets)
        self._drain_timeout = drain_timeout
        self._leases: dict[str, LeaseClient] = {}
        self._roster = roster
        self._rt: Runtime | None = None
        self._agent: Any = None
        self._ready: anyio.Event | None = None
        self._stopping: anyio.Event | None = None
        self._failure: BaseException | None = None
        self._served: anyio.Event | None = None
        self._outcome: str | None = None
        self._chunks = 0  # chunks whose runs are in the runtime now (:meth:`run_chunk`)
        self._chunks_done: anyio.Event | None = None  # set when that falls to 0 (waited for by the stop's drain)

    def _events(self) -> tuple[anyio.Event, anyio.Event]:
        # Made in the actor's event loop: __init__ runs outside it.
        if self._ready is None or self._stopping is None:
            self._ready, self._stopping = anyio.Event(), anyio.Event()
        return self._ready, self._stopping

    def _served_event(self) -> anyio.Event:
        if self._served is None:  # made in the actor's event loop, as _events
            self._served = anyio.Event()
        return self._served

    async def ready(self) -> dict[str, Any]:
        """The worker's agentactors version and pid (the driver checks the version).

        Cancellation: not a cancellation point (it awaits nothing).
        """
        return {"version": __version__, "pid": os.getpid(), "worker": self._id}

    async def started(self) -> list[bytes]:
        """Wait until :meth:`serve` built the agent (or gave up); ``[]``, or its failure packed as a failed result.

        The driver calls it with :meth:`serve`, at the cluster's start, so that a factory that fails on the
        workers (a budget name the cluster lacks, a missing environment variable, argparse's ``SystemExit``)
        fails ``async with RayCluster(...)`` once, instead of every input of every job.  The failure travels
        as a chunk's would (:func:`~agentactors.ray._shipping.pack_results`, already made sendable here): the
        driver raises the very error the runs would have carried.

        Cancellation: a wait, nothing changes.
        """
        await self._events()[0].wait()
        failure = self._failure
        return [] if failure is None else pack_results(failed_results([None], failure))

    async def serve(self) -> str | None:
        """Host the runtime until :meth:`stop` (see the module docstring); ``None``, or why it stopped early.

        A factory that raises — anything, ``SystemExit`` from argparse on a worker whose ``sys.argv`` is
        Ray's included — is what :meth:`started` answers (the cluster's start fails with it), and makes every
        chunk fail with that error at once; this call then returns the
        error's type name (never the error itself: see the module docstring).  However it ends, the
        chunks stop waiting for the agent: a chunk never waits for an agent that will not come.

        Cancellation: the cancellation propagates (to Ray) after the runtime is left as a cancelled ``async with
        Runtime`` leaves it (its runs cancelled), the lease maintainers stopped and the budgets' leases given back
        to their ledgers (shielded, at most 1 s each; a ledger that cannot be reached frees them when the roster
        drops the worker).  The chunks waiting for the agent are released, and fail (the worker stopped serving).
        """
        try:
            await self._serve()
        except anyio.get_cancelled_exc_class():
            raise
        except BaseException as exc:  # not raised to Ray: its text would land in Ray's task-failure records
            if self._failure is None:
                self._failure = _failure(exc, doing="serving")
            self._outcome = self._outcome or _type_name(exc)
        finally:
            if self._agent is None and self._failure is None:  # cancelled before the agent was built
                self._failure = RuntimeError(f"worker {self._id} stopped serving before its agent was built")
            self._events()[0].set()
            self._served_event().set()
        return self._outcome

    async def served(self) -> str | None:
        """Return what :meth:`serve` returns, once it has: the driver's second way to watch the worker.

        Its object ref failing tells the driver the worker died, as :meth:`serve`'s does; the driver
        calls it when Ray failed :meth:`serve`'s ref for being unable to reach the worker for a moment.

        Cancellation: a wait, nothing changes.
        """
        await self._served_event().wait()
        return self._outcome

    async def _serve(self) -> None:
        ready, stopping = self._events()
        leases: dict[str, LeaseClient] = {}
        try:
            async with Runtime(drain_timeout=self._drain_timeout) as rt:
                self._rt = rt
                leases = self._leases = {
                    name: LeaseClient(self._id, budget, RayLedgerPort(handle))
                    for name, (budget, handle) in self._budgets.items()
                }
                if self._roster is not None:
                    for lease in leases.values():
                        lease.set_roster(self._roster)
                async with anyio.create_task_group() as tg:
                    for lease in leases.values():
                        tg.start_soon(lease.maintain)
                    try:
                        with use_env(WorkerEnv(self._id, leases)):
                            agent = unpack_factory(self._factory_blob)()
                            if inspect.isawaitable(agent):
                                agent = await agent
                    except anyio.get_cancelled_exc_class():
                        raise
                    except BaseException as exc:  # SystemExit (argparse), a library's BaseException: all alike
                        self._failure = _failure(exc, doing="running its agent_factory")
                        self._outcome = _type_name(exc)
                    else:
                        self._agent = agent
                        ready.set()
                        await stopping.wait()
                        await self._drain_chunks()
                    ready.set()
                    tg.cancel_scope.cancel()
        finally:
            self._rt = None
            # After the runtime's exit: the runs it drained (or cancelled) gave their slots back to the clients
            # first, so nothing stays booked at the ledger for this worker.  Shielded, each close bounded (1 s),
            # so a cancelled serve() gives them back too; its cancellation propagates after.
            with anyio.CancelScope(shield=True):
                for lease in leases.values():
                    await lease.close()

    async def _drain_chunks(self) -> None:
        """Let the chunks in flight when the worker was told to stop finish, for at most ``drain_timeout``.

        Their runs run in the callers' tasks (:meth:`Runtime.call <agentactors.actors.runtime.Runtime.call>`), which
        the runtime's own drain does not wait for: without this, the exit cut them at once, and every input in
        flight failed (the cluster's "closed while ... ran this input") instead of finishing.  The lease maintainers
        still run meanwhile: a run waiting for a slot gets one.  What is still running at the bound is cut as before.
        """
        with anyio.move_on_after(self._drain_timeout):
            while self._chunks:
                done = self._chunks_done = anyio.Event()
                await done.wait()

    async def stop(self) -> None:
        """Let :meth:`serve` return (after the runs in flight, at most ``drain_timeout`` seconds).

        Cancellation: not a cancellation point (it awaits nothing): a call made has asked :meth:`serve` to return.
        """
        self._events()[1].set()

    async def update_roster(self, roster: Roster) -> None:
        """The cluster's roster, as the driver last said (sent to the ledger after its restart).

        Cancellation: not a cancellation point (it awaits nothing): a call made is adopted.
        """
        self._roster = roster
        for lease in self._leases.values():
            lease.set_roster(roster)

    async def run_chunk(self, job: str, start: int, inputs: Sequence[Any], options: bytes | None = None) -> list[bytes]:
        """Run ``inputs`` (indexes ``start``, ``start + 1``, ...) concurrently; their results, packed one by one.

        ``options``: the job's run options (``deps``, ``settings``, ...; a pickled dict, Ray resolves the
        driver's object ref to it), unpickled here for this chunk: its runs share one ``deps``.

        It raises nothing of the user's to Ray: a factory that failed, a runtime that is gone, or options
        that do not unpickle here make every input a failed result (see the module docstring).

        Cancellation: ``ray.cancel`` of this call cancels every run of the chunk (their provider
        requests and tools included) and the call ends with Ray's ``TaskCancelledError``.
        """
        ready, _ = self._events()
        await ready.wait()
        items = list(inputs)
        rt = self._rt
        run_options: dict[str, Any] = {}
        unpacked: BaseException | None = None
        if options is not None:
            try:
                run_options = pickle.loads(options)
            except Exception as exc:  # a class of the deps the worker lacks: every input says so
                unpacked = sendable_error(exc, doing="unpickling the job's run options (deps, settings, ...)")
        if self._failure is not None:
            results = failed_results(items, self._failure)
        elif rt is None:
            results = failed_results(items, RuntimeError(f"worker {self._id} is not serving"))
        elif unpacked is not None:
            results = failed_results(items, unpacked)
        else:
            self._chunks += 1
            try:
                results = await rt.call(self._run_all, job, start, items, run_options)
            except anyio.get_cancelled_exc_class():
                raise
            except BaseException as exc:  # the runtime refused the call, or closed under it: nothing goes to Ray
                failure = _failure(exc)
                if self._events()[1].is_set():  # the cluster is stopping this worker: say so, typed
                    why = f"the cluster closed while worker {self._id} ran this input"
                    failure = WorkerLostError(why, worker=self._id)
                results = failed_results(items, failure)
            finally:
                self._chunks -= 1
                if not self._chunks and self._chunks_done is not None:
                    self._chunks_done.set()
        return pack_results(results)

    async def _run_all(
        self, job: str, start: int, inputs: list[Any], options: dict[str, Any]
    ) -> list[RunResult[Any]]:
        results: list[RunResult[Any] | None] = [None] * len(inputs)
        agent = self._agent

        async def one(i: int) -> None:
            prompt = inputs[i]
            try:
                results[i] = await agent.run(prompt, input_key=f"{job}:{start + i}", **options)
            except anyio.get_cancelled_exc_class():
                raise
            except BaseException as exc:
                # A BaseException too (SystemExit from a tool's sys.exit, a library's control flow): it
                # fails this run alone.  Let through, it would fail the whole chunk, reach Ray's records
                # raw, and a SystemExit would stop the actor's event loop (asyncio re-raises it out of
                # the loop) while the process lives on: the driver would find out only by timeouts, and
                # re-send the input that did it to the next worker.
                results[i] = RunResult("", input_messages(prompt), error=_failure(exc))

        async with anyio.create_task_group() as tg:
            for i in range(len(inputs)):
                tg.start_soon(one, i)
        return [r if r is not None else RunResult("", ()) for r in results]

    async def stats(self) -> dict[str, Any]:
        """Per budget: requests served and ledger calls made; the runtime's accounting.

        Cancellation: not a cancellation point (it awaits nothing).
        """
        rt = self._rt
        return {
            "worker": self._id,
            "pid": os.getpid(),
            "budgets": {
                name: {
                    "permits": lease.stats.permits,
                    "ledger_calls": lease.stats.ledger_calls,
                    "held": lease.held,
                    "busy": lease.busy,
                }
                for name, lease in self._leases.items()
            },
            "runtime": None if rt is None else rt.stats().actors,
        }


def _type_name(exc: BaseException) -> str:
    return type(exc).__qualname__


def _failure(exc: BaseException, *, doing: str | None = None) -> BaseException:
    """What a result carries for ``exc``: an ``Exception`` as it is (``sendable`` ships it), else a RemoteError.

    A ``SystemExit`` or ``KeyboardInterrupt`` in the driver's ``RunResult.error`` would end the driver
    wherever someone re-raises it, and ``except Exception`` would not catch it: it travels as a
    :class:`~agentactors.ray.errors.RemoteError` naming its type.  With ``doing`` (the step that raised
    it when that is not the run itself: the factory), an ``Exception`` is made sendable here
    (:func:`~agentactors.ray._shipping.sendable_error`), so a stand-in for one that does not travel — a
    credential masked — names that step too, as a ``BaseException``'s does.
    """
    if doing is not None:
        return sendable_error(exc, doing=doing)
    return exc if isinstance(exc, Exception) else remote_error(exc)
