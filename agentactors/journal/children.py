"""Delegated runs a crash left behind, waiting for their parent's recovery to start them again.

A child run (a tool that runs an agent) is journaled like any run, with its parent's run id and the
parent's call that runs it.  It is never recovered on its own — its parent's tool step is what called it,
and waits for its answer.  When the parent is recovered, the tool step the crash cut runs again (same call
ids), so the delegating tool starts the child again; the journal then hands that run the recording of the
child that was cut (:class:`Orphans`), so the child goes on from its last committed step, with its own run
id, and none of its committed tools runs again.  A child that had finished — or was cancelled or interrupted — is
served whole from its recording, never run again: one cut short ends so again, at the same point
(:attr:`~agentactors.journal.RecordedRun.ending`).
"""

from __future__ import annotations

from ..loop import lineage
from ..loop.tape import Tape
from .records import RecordedRun

__all__ = ["Orphans", "served_whole"]


def served_whole(child: RecordedRun) -> Tape:
    """The tape of a child that had ended before the crash: every step served from its recording, with its own run
    id, and nothing committed (its rows already say all of it).  Cancelled or interrupted, it ends so again where it
    did (its recording's ending)."""
    tape = child.tape()
    tape.run_id = child.run_id
    return tape


class Orphans:
    """The recorded children of the runs being recovered, by ``(parent run id, parent call id)``.

    Offered when their parent is resumed (:meth:`offer`), taken by the child run that opens under the same
    parent and call, with the same agent (:meth:`take`: several children of one call are taken in the order
    they first started), forgotten when the parent ends (:meth:`forget`).
    """

    __slots__ = ("_waiting",)

    def __init__(self) -> None:
        self._waiting: dict[tuple[str | None, str | None], list[RecordedRun]] = {}

    def offer(self, parent: RecordedRun) -> None:
        """The children ``parent`` recorded, to be taken by the runs its recovered tool steps start."""
        for child in parent.children:
            self._waiting.setdefault((parent.run_id, child.parent_call_id), []).append(child)

    def take(self, parent_run_id: str, agent: str | None) -> RecordedRun | None:
        """The recording of the child of ``parent_run_id`` opening now (its call: the current lineage), if any."""
        origin = lineage.current()
        key = (parent_run_id, origin.call_id if origin is not None else None)
        waiting = self._waiting.get(key)
        if not waiting:
            return None
        for index, child in enumerate(waiting):
            if child.agent == agent:
                del waiting[index]
                if not waiting:
                    del self._waiting[key]
                return child
        return None

    def forget(self, parent_run_id: str) -> None:
        """``parent_run_id`` ended: the children it did not start again will not be asked for."""
        for key in [k for k in self._waiting if k[0] == parent_run_id]:
            del self._waiting[key]

    def __len__(self) -> int:
        return sum(len(v) for v in self._waiting.values())
