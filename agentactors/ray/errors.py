"""The errors of ``agentactors.ray`` (drawn in :mod:`agentactors.errors`'s tree).

:class:`WorkerLostError` is what a run that was lost with its worker carries in
``RunResult.error`` (with ``retries=0``, or once its retries are spent), and
:class:`WorkerUnavailableError`, a kind of it, what a run carries whose call the
worker did not answer (Ray could not reach it, or its event loop stopped);
:class:`RemoteError` stands in for a worker-side exception that could not
travel back to the driver; :class:`VersionMismatchError` stops a cluster whose
workers run another agentactors than its driver.  ``WorkerLost`` and
``VersionMismatch`` are their old names (the same classes).
"""

from __future__ import annotations

from ..errors import AgentActorsError

__all__ = [
    "RemoteError",
    "VersionMismatch",
    "VersionMismatchError",
    "WorkerLost",
    "WorkerLostError",
    "WorkerUnavailableError",
]


class WorkerLostError(AgentActorsError):
    """The worker running this input died before it returned the result.

    ``worker`` is its id, ``attempts`` how many times the input was sent (1 with
    ``retries=0``).  Whether the run's side effects happened is unknown: the
    run may have been anywhere when its process died.
    """

    def __init__(self, message: str, *, worker: str | None = None, attempts: int = 1) -> None:
        super().__init__(message)
        self.worker = worker
        self.attempts = attempts

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_worker_lost, (str(self), self.worker, self.attempts), dict(self.__dict__))  # notes too


def _rebuild_worker_lost(message: str, worker: str | None, attempts: int) -> WorkerLostError:
    return WorkerLostError(message, worker=worker, attempts=attempts)


class WorkerUnavailableError(WorkerLostError):
    """The worker did not answer this input's call: whether (and how far) the run went is unknown.

    Either Ray could not reach the worker (its ``ActorUnavailableError``: a network blip, a node under
    strain; the worker may answer again, and is not lost for one such error), or the worker's event
    loop did not answer for ``RayCluster(unresponsive_timeout=...)`` seconds (a tool or model blocking
    it), and the worker was lost and killed.  A kind of :class:`WorkerLostError`: what handles a run
    lost with its worker (its side effects unknown; ``input_key`` deduplicates them) handles this one.
    """

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_worker_unavailable, (str(self), self.worker, self.attempts), dict(self.__dict__))


def _rebuild_worker_unavailable(message: str, worker: str | None, attempts: int) -> WorkerUnavailableError:
    return WorkerUnavailableError(message, worker=worker, attempts=attempts)


class RemoteError(AgentActorsError):
    """An exception raised on a worker that cannot be pickled (or unpickled) on its way back.

    ``type_name`` is the original's qualified type name; the message keeps its
    text (redacted, as every library error).
    """

    def __init__(self, message: str, *, type_name: str) -> None:
        super().__init__(message)
        self.type_name = type_name

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_remote_error, (str(self), self.type_name), dict(self.__dict__))


def _rebuild_remote_error(message: str, type_name: str) -> RemoteError:
    return RemoteError(message, type_name=type_name)


class VersionMismatchError(AgentActorsError):
    """A worker runs another agentactors version than the driver (install the same one on every node)."""


# The old names: the same classes, so ``except WorkerLost`` still catches them.
WorkerLost = WorkerLostError
VersionMismatch = VersionMismatchError
