"""``MemoryStore``: sessions kept in a dict of this process — for tests, scripts and single-process services.

The default store of :meth:`Runtime.session <agentactors.actors.runtime.Runtime.session>` (one per
runtime) and a stand-in for a database in tests: it keeps the same promises as
:class:`~agentactors.sessions.sqlite.SqliteStore` — versions, atomic commits, conflicts — within one
process.  It stores the immutable :class:`~agentactors.sessions.store.SessionRecord` objects
themselves (no encoding: a commit costs a dict write), so nothing a reader gets can change under it;
the free-form dicts inside (a call's ``arguments``, ``provider_data``) are the caller's to leave alone.

What it costs: every session's history stays in memory for the life of the store, active or not — the
memory a deactivated session gives back is its actor's, not its conversation's.  Use
:class:`~agentactors.sessions.sqlite.SqliteStore` to keep many idle conversations out of memory.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import SessionConflictError
from ..messages import Message
from .store import (
    SessionRecord,
    check_expected,
    check_key,
    conflict_message,
    new_origin,
    origin_conflict,
    stored_record,
)

__all__ = ["MemoryStore"]


class MemoryStore:
    """A :class:`~agentactors.sessions.store.SessionStore` in a dict: ``MemoryStore()``.

    Usable from any number of runtimes of one event loop at once (their sessions conflict as they
    would on a database).  ``len(store)`` and ``key in store`` inspect it; :meth:`aclose` keeps the
    records (a later runtime can use the same store).
    """

    __slots__ = ("_records",)

    def __init__(self) -> None:
        self._records: dict[str, SessionRecord] = {}

    def __repr__(self) -> str:
        return f"MemoryStore({len(self._records)} sessions)"

    @property
    def address(self) -> None:
        """``None``: each ``MemoryStore`` object is its own data, so a runtime addresses its sessions by the object
        (:class:`~agentactors.sessions.store.SessionStore`'s optional ``address``)."""
        return None

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, key: object) -> bool:
        return key in self._records

    def keys(self) -> Iterator[str]:
        """The stored keys (a snapshot)."""
        return iter(list(self._records))

    async def load(self, key: str) -> SessionRecord | None:
        """The record for ``key`` or ``None``.

        :raises ValueError: a key no database store keeps (:func:`~agentactors.sessions.store.check_key`: a NUL
            or a lone surrogate), refused here too, so what works on this store works on theirs.

        Cancellation: never waits (not a cancellation point).
        """
        return self._records.get(check_key(key))

    async def commit(self, record: SessionRecord, *, expected_version: int | None) -> SessionRecord:
        """Store ``record`` if the stored version is ``expected_version`` (see ``SessionStore.commit``).

        :raises SessionConflictError: the stored version is another, or the stored origin (the key was
            deleted and created again since ``record.origin`` was read).
        :raises TypeError: not a record, or one holding a message that is not a ``Message`` (as a database store's
            encoder refuses it): nothing stored.  Also an ``expected_version`` that is not ``None`` nor an int.
        :raises ValueError: a negative ``expected_version``.

        Cancellation: never waits (not a cancellation point): a commit that was called happened.
        """
        if not isinstance(record, SessionRecord):
            raise TypeError(f"commit() takes a SessionRecord, not {type(record).__name__}")
        check_expected(expected_version)
        # What the database stores refuse when they encode, refused here too (only the messages past ``kept``:
        # the others are the stored version's, checked when it was committed).
        for given in record.messages[record.kept if expected_version is not None else 0 :]:
            if not isinstance(given, Message):
                raise TypeError(f"a session's messages are Message objects, not {type(given).__name__}")
        current = self._records.get(record.key)
        found = None if current is None else current.version
        if found != expected_version:
            raise SessionConflictError(conflict_message(record.key, found, expected_version), key=record.key)
        kept = None if current is None else current.origin
        if origin_conflict(kept, record.origin):
            message = conflict_message(record.key, found, expected_version, recreated=True)
            raise SessionConflictError(message, key=record.key)
        origin = kept or record.origin or new_origin()
        version = (found or 0) + 1
        stored = stored_record(record, version, origin)  # the record's data as it was validated, at its version
        self._records[record.key] = stored
        return stored

    async def delete(self, key: str, *, expected_version: int | None = None) -> bool:
        """Forget ``key`` (only at ``expected_version``, if given).

        :raises ValueError: a key no database store keeps, as :meth:`load`; a negative ``expected_version``.
        :raises TypeError: an ``expected_version`` that is not ``None`` nor an int.

        Cancellation: never waits (not a cancellation point).
        """
        current = self._records.get(check_key(key))
        check_expected(expected_version)
        if current is None or (expected_version is not None and current.version != expected_version):
            return False
        del self._records[key]
        return True

    async def aclose(self) -> None:
        """Nothing to release: the records stay (the store may be used again).

        Cancellation: never waits (not a cancellation point).
        """

