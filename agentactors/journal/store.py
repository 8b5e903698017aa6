"""``JournalStore``: what a step journal is — the loop's port, and what replay, fork and recovery read."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable

from ..loop.result import RunResult
from ..loop.tape import Tape
from ..messages import Message
from .records import RecordedRun

__all__ = ["JournalStore"]


@runtime_checkable
class JournalStore(Protocol):
    """A step journal: ``Runtime(journal=...)`` takes one (:class:`~agentactors.journal.SqliteJournal`).

    ``open_run`` is the loop's port (:class:`~agentactors.loop.tape.Journal`): a tape for each run that
    starts.  ``resume_run`` is the tape a recovered run goes on with; ``load_run`` and ``unfinished``
    read what was committed.
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

    async def load_run(self, run_id: str) -> RecordedRun: ...

    async def unfinished(self) -> list[RecordedRun]: ...

    async def recover(self, rt: Any, *, agents: Iterable[Any]) -> list[RunResult[Any]]: ...

    async def aclose(self) -> None: ...
