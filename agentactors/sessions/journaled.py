"""What a journal records of a session's turn, so that ``rt.recover()`` can commit it when it finishes the run.

A turn's run is journaled like any run (``docs/durability.md``).  If the process dies in the middle of
it, ``rt.recover()`` finishes the run in another process — but the turn was to be committed to the
session's store by the session's actor, in the process that died.  Without that commit the
conversation loses the turn: the user's message and the answer the recovered run gave are missing from
the history, and a user who asks again gets a model that never saw the first attempt — its tools run
again, with new idempotency keys.

So the journal records, with the run's origin, *which* turn the run is (:class:`SessionTurn`: the
session's key, the version the turn started from, how many of the run's inputs are that version's
history), read while the journal opens the run (:func:`current_turn`; the session's actor sets it
around the run, :func:`turn_running`).  ``rt.recover(sessions=store)`` then commits a recovered turn as
the session would have (:func:`~agentactors.sessions.actor.commit_recovered`): the same commit rule, over
the version the turn started from.  If the
session moved on meanwhile (a replica committed another turn), the store refuses the commit — nothing
is overwritten — and a warning names the run and the session; the run's result is still
``recover()``'s.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any

import attrs

__all__ = ["SessionTurn", "current_turn", "turn_running"]


@attrs.frozen(slots=True)
class SessionTurn:
    """Which session's turn a run is: what a journal records so that a recovered turn can be committed.

    :ivar key: the session's key.
    :ivar version: the session's committed version the turn started from (``None``: never committed).
    :ivar kept: how many of the run's first input messages are that version's history (the rest are the
        turn's own messages).
    :ivar origin: the session's origin the turn started on (``SessionRecord.origin``; ``None``: unknown), so a
        recovered turn is not committed onto another conversation created under the key since.
    """

    key: str
    version: int | None
    kept: int
    origin: str | None = attrs.field(default=None, eq=False)  # identity, as SessionRecord.origin: == ignores it

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"key": self.key, "version": self.version, "kept": self.kept}
        if self.origin is not None:  # absent when unknown: what a journal of an older version wrote
            doc["origin"] = self.origin
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> SessionTurn:
        """:raises TypeError, ValueError: not what :meth:`to_json` wrote."""
        key, version, kept = doc["key"], doc.get("version"), doc.get("kept", 0)
        if not isinstance(key, str) or not key:
            raise ValueError(f"a session turn's key is a non-empty str, not {key!r}")
        for name, value in (("version", version), ("kept", kept)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise ValueError(f"a session turn's {name} is an int >= 0, not {value!r}")
        origin = doc.get("origin")
        if origin is not None and (not isinstance(origin, str) or not origin):
            raise ValueError(f"a session turn's origin is a non-empty str, not {origin!r}")
        return cls(key, version, int(kept or 0), origin)


_TURN: contextvars.ContextVar[SessionTurn | None] = contextvars.ContextVar("agentactors_session_turn", default=None)


def turn_running(turn: SessionTurn) -> AbstractContextManager[None]:
    """While the block runs, a run started here is ``turn`` (the session's actor wraps the turn's run in it)."""
    return _TurnRunning(turn)


class _TurnRunning:
    """:func:`turn_running`'s block: a class, not a ``@contextmanager`` generator — every session turn enters one,
    and the generator's frame, its wrapper and their calls cost four times the contextvar's set and reset."""

    __slots__ = ("token", "turn")

    def __init__(self, turn: SessionTurn) -> None:
        self.turn = turn
        self.token: contextvars.Token[SessionTurn | None] | None = None

    def __enter__(self) -> None:
        self.token = _TURN.set(self.turn)

    def __exit__(self, *exc: object) -> None:
        if self.token is not None:
            _TURN.reset(self.token)
            self.token = None


def current_turn() -> SessionTurn | None:
    """The session turn being started here, else ``None`` (a journal asks while it opens a top-level run).

    Runs a turn's tools start inherit it: only a run with no parent is the turn.
    """
    return _TURN.get()
