"""``JournalStore``: what a step journal is — the loop's port, and what replay, fork and recovery read."""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from types import TracebackType
from typing import Any, Protocol, Self, runtime_checkable

from ..loop.result import RunResult
from ..loop.tape import Tape
from ..messages import Message
from .records import JournalError, RecordedRun

__all__ = ["JournalFormatError", "JournalStore", "LeaseLostError"]


class JournalFormatError(JournalError, ValueError):
    """A value a journal was given or read back is not one it keeps: not JSON, past the JSON depth and size
    policy (:mod:`agentactors._json`), or a stored row that does not decode.  Nothing was written."""


class LeaseLostError(JournalError):
    """This journal's lease on a run was taken over by another recoverer (its own had expired): the run's
    commit was refused, so the run stops here and the other owner finishes it.  ``run_id`` names the run."""

    def __init__(self, message: str, *, run_id: str) -> None:
        super().__init__(message)
        self.run_id = run_id

    def __reduce__(self) -> Any:
        # Exception's own pickling would call __init__ without its keyword (Ray and multiprocessing ship errors);
        # the notes come back with the __dict__.
        return (partial(type(self), run_id=self.run_id), self.args, dict(self.__dict__))


@runtime_checkable
class JournalStore(Protocol):
    """A step journal: ``Runtime(journal=...)`` takes one (:class:`~agentactors.journal.SqliteJournal`,
    :class:`~agentactors.journal.PostgresJournal`).

    ``open_run`` is the loop's port (:class:`~agentactors.loop.tape.Journal`): a tape for each run that
    starts.  ``resume_run`` is the tape a recovered run goes on with; ``load_run`` and ``unfinished``
    read what was committed.

    **Leases.**  Every run a journal object runs (live or recovered) is leased to it: an owner id and an
    expiry, renewed while its process lives.  ``unfinished`` lists only the runs whose lease is free —
    expired, or held by a process known dead — and ``claim`` takes one (atomically: of several recoverers
    on one database, one wins), so two processes calling ``rt.recover()`` never both finish a run.

    **Parking.**  ``park`` / ``parked`` / ``unpark``: a small durable map ``key -> JSON text`` beside the
    runs, for what must outlive a process and is not a step — a run's pending batch request, say.

    **Closing.**  A journal is an async context manager: ``async with SqliteJournal(path) as journal:``
    closes it (``aclose``) on the way out.
    """

    def open_run(
        self,
        run_id: str | None,
        agent: str | None,
        inputs: tuple[Message, ...],
        *,
        parent_run_id: str | None,
        resumed: bool,
    ) -> Tape | None: ...

    def resume_run(self, recorded: RecordedRun) -> Tape: ...

    async def load_run(self, run_id: str) -> RecordedRun:
        """The run ``run_id`` as committed.  :raises RunNotRecordedError: the journal holds no such run.

        Cancellation: a read, nothing changes.  The SQL journals' query is not interrupted once started: a
        cancelled caller waits for it, and the cancellation is delivered at its next checkpoint.
        """
        ...

    async def unfinished(self) -> list[RecordedRun]:
        """The runs nothing said ended whose lease is free (their process died): what ``recover`` may take.  A run
        whose stored rows do not decode is left out (one damaged run does not hide the others).

        Cancellation: a read, nothing changes (as :meth:`load_run`).
        """
        ...

    async def claim(self, run_id: str) -> RecordedRun | None:
        """Lease an unfinished run to this journal and return it as committed; ``None`` if it ended or another
        live owner holds it (a recoverer that lost the race leaves it).

        Cancellation: a caller cancelled before the claim's transaction started has taken nothing.  One that
        started is not interrupted: it ends (the run leased to this journal if it was free) and the cancellation
        is delivered at the caller's next checkpoint; a claimed run nobody opens stays unfinished, for a later
        ``recover()``.
        """
        ...

    async def recover(self, rt: Any, *, agents: Iterable[Any], sessions: Any = None) -> list[RunResult[Any]]:
        """``rt.recover()``'s work: finish the unfinished runs in ``rt`` with ``agents``; a recovered session turn
        is committed to ``sessions`` (a :class:`~agentactors.sessions.SessionStore`) when given.

        Cancellation: the runs it is finishing are cancelled, and each is ended ``"cancelled"`` (the end committed
        shielded): a run cancelled is ended, never recovered again.  A run it had not started yet stays
        unfinished, for a later ``recover()``.
        """
        ...

    async def park(self, key: str, value: str) -> None:
        """Keep ``value`` (JSON text) under ``key``, replacing what was there, durably (committed on return).

        :raises JournalFormatError: ``value`` is not JSON, or is past the JSON depth and size policy.
        :raises ValueError: ``key`` is empty.

        Cancellation: a caller cancelled before the write started has written nothing.  One that started is not
        interrupted (the SQL journals' statement runs in a worker thread): it is committed, and the cancellation
        is delivered at the caller's next checkpoint.
        """
        ...

    async def parked(self, key: str) -> str | None:
        """The value parked under ``key``, or ``None``.  :raises JournalFormatError: the stored text is bad.

        Cancellation: a read, nothing changes (as :meth:`load_run`).
        """
        ...

    async def unpark(self, key: str) -> None:
        """Forget ``key`` (nothing happens if nothing is parked under it).

        Cancellation: as :meth:`park`: a delete that started is committed.
        """
        ...

    async def aclose(self) -> None:
        """Close the journal: stop renewing its leases and release its connections.  Idempotent.

        Cancellation: the SQL journals' close is shielded and bounded: a caller cancelled before or during it
        still stops the lease keeper and closes the connections.  It waits at most 10 s for a statement running
        on them (a renewal, a commit); what is still busy then is closed in the background once its statement
        returns.
        """
        ...

    async def __aenter__(self) -> Self:
        """``async with journal:`` — the journal itself, for the block to use.

        Cancellation: not a cancellation point (it awaits nothing; a connection opens on first use).
        """
        ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
        /,
    ) -> None:
        """Leaving ``async with journal:`` closes it (``aclose``); an exception raised in the block is never
        suppressed (``None``, not a bool: a checker sees the block's exceptions leave it).

        Cancellation: as :meth:`aclose` — shielded and bounded, so a block left by a cancellation still closes
        the journal (then the cancellation goes on).
        """
        ...
