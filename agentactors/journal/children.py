"""Delegated runs a crash left behind, waiting for their parent's recovery to start them again.

A child run (a tool that runs an agent) is journaled like any run, with its parent's run id and the
parent's call that runs it.  It is never recovered on its own — its parent's tool step is what called it,
and waits for its answer.  When the parent is recovered, the tool step the crash cut runs again (same call
ids), so the delegating tool starts the child again; the journal then hands that run the recording of the
child that was cut (:class:`Orphans`), so the child goes on from its last committed step, with its own run
id, and none of its committed tools runs again.  A child that had ended — finished, raised, paused, cancelled or
interrupted — is served whole from its recording, never run again, and needs no lease (nothing of it is committed):
it ends as it did, at the same point — one that raised raises again where its recorded steps make it raise, one that
paused pauses again on its recorded step, one cut short ends so (:attr:`~agentactors.journal.RecordedRun.ending`).
Its recording is all it gets: were it to ask for a model call or a tool step its recording does not hold (it ended
at a point its rows do not keep — a model call that failed, a response the journal refused), that is a
:class:`~agentactors.journal.ReplayDivergedError`, never a model asked or a tool run with nothing committed.
"""

from __future__ import annotations

from ..loop import lineage
from ..loop.tape import Tape
from .records import RecordedRun, ReplayDivergedError

__all__ = ["Orphans", "served_whole"]


def served_whole(child: RecordedRun) -> Tape:
    """The tape of a child that had ended before the crash: every step served from its recording, with its own run
    id, and nothing committed (its rows already say all of it), nothing asked past them.  Cancelled or interrupted,
    it ends so again where it did (its recording's ending).

    Sealed: a model call or a tool step its recording does not hold raises
    :class:`~agentactors.journal.ReplayDivergedError` (:class:`_Past`) instead of asking the model or running the
    tool.  The ended child has no writer (it holds no lease), so anything done past its rows would be done with
    nothing committed — a tool run again at every recovery — and would not be how the child ended.
    """
    tape = child.tape(guard=_Past(child), sealed=True)
    tape.run_id = child.run_id
    return tape


class _Past:
    """The guard of a child served whole: called when it asks for what its recording does not hold, it raises."""

    __slots__ = ("child",)

    def __init__(self, child: RecordedRun) -> None:
        self.child = child

    def __call__(self) -> None:
        child = self.child
        raise ReplayDivergedError(
            f"delegated run {child.run_id!r} ended {child.status!r} before its parent's crash, past its "
            f"{len(child.steps)} recorded steps: served whole from its recording, it is never run again (no model "
            "asked, no tool run), so it ends here"
        )


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
