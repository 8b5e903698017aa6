"""What both journals do with a run's tape: open one as a run starts, go on with a recorded run, recover.

:class:`~agentactors.journal.SqliteJournal` and :class:`~agentactors.journal.PostgresJournal` differ in
where a commit goes, not in which tape a run gets: a run ``recover()`` is finishing keeps its own (its
committed steps, its id); a child a crash cut, started again by its recovered parent, gets its recording
(served whole when it had ended — finished, raised, paused, cancelled or interrupted — ending as it did, with no
lease and nothing committed: :func:`~agentactors.journal.children.served_whole`; else gone on with under this
journal's lease); any other run a fresh tape whose writer commits into the journal.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

import attrs

from ..loop.result import RunResult
from ..loop.tape import Commit, Tape
from ..messages import LLMResponse, Message
from ._lease import Keeper
from .children import Orphans, served_whole
from .codec import origin_now
from .records import RecordedRun
from .recovery import adopted, recover

if TYPE_CHECKING:
    from .store import JournalStore

__all__ = ["Tapes"]


class Tapes:
    """The loop's port of a journal (``open_run``, ``resume_run``) and ``recover``, over a subclass's ``commit``.

    A subclass sets ``_mine`` (the runs this object opened: recover() leaves them alone), ``_keeper`` (the
    lease keeper, started by the first run) and ``_orphans`` (the recorded children of the runs being
    recovered), and implements :meth:`commit`.
    """

    _mine: set[str]
    _keeper: Keeper
    _orphans: Orphans

    async def commit(
        self, run_id: str, agent: str | None, inputs: tuple[Message, ...], commit: Commit, origin: Any = None
    ) -> None:
        """Apply ``commit`` for ``run_id`` (the subclass's storage)."""
        raise NotImplementedError

    def open_run(
        self,
        run_id: str | None,
        agent: str | None,
        inputs: tuple[Message, ...],
        *,
        parent_run_id: str | None,
        resumed: bool,
    ) -> Tape | None:
        """The tape of a run starting in a runtime with this journal (see the module docstring)."""
        if run_id is None:
            return None
        tape = adopted()
        if tape is not None:  # a run recover() is finishing: its committed steps, its own id
            return tape
        child = self._orphans.take(parent_run_id, agent) if parent_run_id is not None else None
        if child is not None:  # a child a crash cut, started again by its recovered parent
            # Ended (finished, raised, paused, cancelled or interrupted): not run again, served as it ended
            # (children.served_whole).  Only one left running goes on, under this journal's lease.
            return served_whole(child) if child.finished else self.resume_run(child)
        self._mine.add(run_id)
        self._keeper.start()
        return Tape(writer=_Writer(self, run_id, agent, inputs, origin_now(parent_run_id)))

    def resume_run(self, recorded: RecordedRun) -> Tape:
        """The tape of a run :meth:`recover` goes on with: its committed steps served, its next ones committed."""
        self._mine.add(recorded.run_id)
        self._keeper.start()
        self._orphans.offer(recorded)
        writer = _Writer(self, recorded.run_id, recorded.agent, recorded.inputs)
        if recorded.steps:  # its last committed response: where a cut-short end is kept (Commit.ending)
            last = recorded.steps[-1]
            number = len(recorded.steps)  # (the journal counts a run's model calls from 1)
            writer.last = ((number, last.response), ((number, last.steers),) if last.steers else ())
        tape = recorded.tape(writer=writer)
        tape.run_id = recorded.run_id
        return tape

    async def recover(self, rt: Any, *, agents: Iterable[Any], sessions: Any = None) -> list[RunResult[Any]]:
        """``rt.recover()``'s work (:mod:`agentactors.journal.recovery`).

        Cancellation: the runs it is finishing are cancelled, and each is ended ``"cancelled"`` (the end committed
        shielded): a run cancelled is ended, never recovered again.  A run it had not started yet stays
        unfinished, for a later ``recover()``.
        """
        return await recover(cast("JournalStore", self), rt, agents=agents, sessions=sessions)  # a subclass is one


class _Writer:
    """One run's :class:`~agentactors.loop.tape.StepWriter` into a journal.

    It keeps the last response it committed (and the steers committed with it): a run cut short from outside ends
    with a commit whose :class:`~agentactors.loop.tape.Ending` goes in that response's document, written again.
    """

    __slots__ = ("agent", "inputs", "journal", "last", "origin", "run_id")

    def __init__(
        self, journal: Tapes, run_id: str, agent: str | None, inputs: tuple[Message, ...], origin: Any = None
    ) -> None:
        self.journal = journal
        self.run_id = run_id
        self.agent = agent
        self.inputs = inputs
        self.origin = origin  # a recovered run's row has it already (the begin only sets it running again)
        #: The last response committed, by its number, and the steers committed with it (a commit's own ``steers``).
        self.last: tuple[tuple[int, LLMResponse], tuple[tuple[int, tuple[Message, ...]], ...]] | None = None

    async def commit(self, commit: Commit) -> None:
        if commit.responses:
            self.last = (commit.responses[-1], commit.steers)
        if commit.ending is not None or (commit.end is not None and commit.steers and _unanswered(commit)):
            # (rare) a run cut short, or steered before a call that never answered: its last response carries it
            commit = self._ending(commit)
        await self.journal.commit(self.run_id, self.agent, self.inputs, commit, self.origin)

    def _ending(self, commit: Commit) -> Commit:
        """``commit`` with the run's last response (and its steers) in it, to carry its ``ending`` and the steers
        taken before a model call that never answered; without one (no response committed: the run ended before
        its first model call answered, which a replay asks for and diverges at anyway), neither is kept."""
        last = self.last
        if last is None:
            return attrs.evolve(commit, ending=None)
        (number, response), steers = last
        if any(n == number for n, _ in commit.responses):
            return commit
        own = tuple((n, m) for n, m in steers if n == number)
        return attrs.evolve(commit, responses=(*commit.responses, (number, response)), steers=(*commit.steers, *own))


def _unanswered(commit: Commit) -> bool:
    """Whether an end commit holds steers taken before a model call that never answered (no response of theirs)."""
    numbers = {n for n, _ in commit.responses}
    return any(n not in numbers for n, _ in commit.steers)
