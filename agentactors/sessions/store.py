"""The session store port: what a session needs of the place that keeps it, and the record it keeps.

A session is a conversation that outlives any one actor holding it (and, with a database, any one
process), so its truth lives in a store; the actor only holds a copy while it is active.  The store
gives the one guarantee that makes that safe without locks across processes — **optimistic
versioning**: every record carries a version, and a commit names the version it was computed from
(``expected_version``).  The store applies it only if the stored version is still that one, atomically,
and bumps it; otherwise it raises :class:`~agentactors.errors.SessionConflictError` and changes
nothing.  Two actors (two runtimes, two processes) that both think they hold a session can therefore
never overwrite each other's turn: the second to commit learns it lost, and reloads.

The port is small on purpose — load, commit, delete, close — so a store for another database (Redis,
Postgres) is a page of code: :class:`~agentactors.sessions.memory.MemoryStore` and
:class:`~agentactors.sessions.sqlite.SqliteStore` and :class:`~agentactors.sessions.postgres.PostgresStore` are the
three this package ships.  One optional
attribute, ``address`` (where the records live), lets a runtime tell that two store objects hold the
same sessions — a store made per request then reaches the session an earlier one activated, instead of
a second actor for it whose commits conflict (:class:`SessionStore`, :func:`store_address`).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Hashable, Iterable, Mapping
from typing import Any, Final, Protocol, runtime_checkable

import attrs

from ..loop.pause import PausedRun
from ..loop.result import RunResult
from ..messages import Message

__all__ = [
    "MAX_KEY_BYTES",
    "SessionRecord",
    "SessionStore",
    "StoreIdentity",
    "awaited",
    "check_expected",
    "check_key",
    "check_store",
    "conflict_message",
    "new_origin",
    "origin_conflict",
    "store_address",
    "stored_record",
]

_SURROGATE: Final = re.compile("[\ud800-\udfff]")  # a str may hold one; a UTF-8 database column cannot

#: The longest session key, in bytes of UTF-8: what PostgreSQL's primary-key index keeps whatever the key
#: (a btree row holds at most 2,704 bytes, the key's and the message pieces' ``start`` included, and only a key
#: that compresses well fits past that: a digest or a token does not).
MAX_KEY_BYTES: Final = 2048


def check_key(key: str) -> str:
    """``key`` if every store keeps it as it is: a non-empty ``str``, valid Unicode (no lone surrogate: no UTF-8
    column takes one), without NUL (PostgreSQL's ``TEXT`` refuses it; SQLite and a dict would keep it) and at
    most :data:`MAX_KEY_BYTES` bytes of UTF-8 (PostgreSQL's index refuses a longer one that does not compress).

    Refused here, in every store alike, rather than by one database's driver halfway through a call: a key that
    works with a ``MemoryStore`` or a SQLite file in tests would otherwise be an untyped driver error at the first
    turn in production.  A NUL in a conversation is another matter: it is in the JSON document, escaped, and
    kept whole by every store.

    :raises TypeError: not a ``str``.
    :raises ValueError: empty, holding a lone surrogate or a NUL, or longer than :data:`MAX_KEY_BYTES`.
    """
    if not isinstance(key, str):
        raise TypeError(f"a session key is a str, not {type(key).__name__}")
    if not key:
        raise ValueError("a session key must not be empty")
    if "\x00" in key:
        raise ValueError(f"a session key must not hold a NUL character (PostgreSQL's text cannot keep it): {key!r}")
    if not key.isascii() and _SURROGATE.search(key) is not None:
        raise ValueError(f"a session key must be valid Unicode text (UTF-8), not {key!r}")
    if len(key) > MAX_KEY_BYTES // 4 and len(key.encode("utf-8")) > MAX_KEY_BYTES:  # (a char is 1 to 4 bytes)
        raise ValueError(
            f"a session key is at most {MAX_KEY_BYTES} bytes of UTF-8 (PostgreSQL's index cannot keep a longer "
            f"one), not {len(key.encode('utf-8'))}: {key[:40]!r}…"
        )
    return key


def check_expected(expected_version: int | None) -> int | None:
    """``expected_version`` if it is one a store can compare: ``None`` (a session that must not exist yet) or an
    ``int >= 0`` (``0`` is no stored version: a conflict, as any stale one).

    Refused here, in every store alike and before any I/O: a ``1.0`` passed a database's comparison and committed,
    then failed building the record returned (version ``2.0``) — the caller told a commit that happened had not;
    a ``"1"`` was a driver's error; ``True`` equalled version 1 in a dict.

    :raises TypeError: not ``None`` nor an ``int`` (a bool is not one).
    :raises ValueError: a negative int.
    """
    if expected_version is None:
        return None
    if not isinstance(expected_version, int) or isinstance(expected_version, bool):
        raise TypeError(f"expected_version is None or an int, not {type(expected_version).__name__}")
    if expected_version < 0:
        raise ValueError(f"expected_version is None or an int >= 0, not {expected_version!r}")
    return expected_version


def _messages(value: tuple[Message, ...] | list[Message]) -> tuple[Message, ...]:
    """The messages as a tuple.  A str, bytes or a mapping is refused: ``tuple()`` would take its characters or
    keys.  (Each message's type is checked where it is written — a store's commit — not here: a record is built
    several times per commit, and a check of every message each time would cost a long conversation's commit
    what its append-only write saves.)"""
    if isinstance(value, str | bytes | bytearray | Mapping):
        raise TypeError(f"a session's messages are a sequence of Message objects, not {type(value).__name__}")
    return tuple(value)


def _results(value: Iterable[RunResult[Any]]) -> tuple[RunResult[Any], ...]:
    """The children as a tuple (each one's type is checked by the validator)."""
    return tuple(value)


@attrs.frozen(slots=True)
class SessionRecord:
    """One session as a store keeps it: its committed conversation, its pause, its version.

    Immutable (stores may hand the same object to many readers).  Never holds a run's ``deps``.

    :ivar key: the session's key (:func:`check_key`: a NUL or a lone surrogate is a ``ValueError``).
    :ivar messages: the committed conversation (what ``session.history`` shows), oldest first.
    :ivar version: ``1`` after the first commit, one more after each; ``0`` on a record not stored yet
        (the store sets it when it commits).
    :ivar paused: the pending pause of the last turn (:class:`~agentactors.loop.pause.PausedRun`), or ``None``.
    :ivar run_id: the run whose outcome this commit holds (the turn's, or the paused run's for a claim).
    :ivar kept: on a record given to :meth:`SessionStore.commit`: how many of its first messages are,
        unchanged, those of the version it names (``expected_version``) — what a store that appends
        needs, to write only the rest (a turn, not the whole history).  ``0`` (the default): unknown,
        the store writes them all.  A hint, not state: not stored, not compared (``==`` ignores it).
    :ivar origin: which creation of the key the record descends from (keyword only): an opaque id the store
        gives a session when it creates it and keeps through its commits.  Versions restart at 1 when a
        deleted key is created again, so a version alone cannot tell the new conversation from the old one
        another runtime still holds; a commit that names an origin is refused when the stored one is another
        (:meth:`SessionStore.commit`).  ``None``: not known (a record made by hand, one stored by an older
        version) — not checked.  Identity, not content: ``==`` ignores it.
    :ivar children: with a pause (keyword only): the results of the runs the paused turn delegated before it
        paused (``RunResult.children``), which the result that resolves it keeps ahead of its own, as
        :meth:`agentactors.Agent.resume` keeps a paused result's.  ``()`` without a pause, and for a pause stored
        by an older version (it kept none).
    """

    key: str = attrs.field()
    messages: tuple[Message, ...] = attrs.field(default=(), converter=_messages)
    version: int = attrs.field(default=0)
    paused: PausedRun | None = attrs.field(default=None)
    run_id: str | None = attrs.field(default=None)
    kept: int = attrs.field(default=0, eq=False, repr=False)
    origin: str | None = attrs.field(default=None, eq=False, repr=False, kw_only=True)
    children: tuple[RunResult[Any], ...] = attrs.field(default=(), converter=_results, repr=False, kw_only=True)

    @key.validator
    def _check_key(self, _: attrs.Attribute[str], value: str) -> None:
        if not isinstance(value, str) or not value:
            raise ValueError(f"a session key is a non-empty str, not {value!r}")
        check_key(value)  # no NUL, no lone surrogate: what every store keeps, so a commit never reaches a driver

    @run_id.validator
    def _check_run_id(self, _: attrs.Attribute[str | None], value: str | None) -> None:
        if value is not None and not isinstance(value, str):
            raise TypeError(f"a session's run_id is a str or None, not {type(value).__name__}")

    @paused.validator
    def _check_paused(self, _: attrs.Attribute[PausedRun | None], value: PausedRun | None) -> None:
        if value is not None and not isinstance(value, PausedRun):
            raise TypeError(f"a session's pause is a PausedRun or None, not {type(value).__name__}")

    @version.validator
    def _check_version(self, _: attrs.Attribute[int], value: int) -> None:
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"a session version is an int >= 0, not {value!r}")

    @kept.validator
    def _check_kept(self, _: attrs.Attribute[int], value: int) -> None:
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= len(self.messages):
            raise ValueError(f"kept is an int from 0 to the number of messages, not {value!r}")

    @children.validator
    def _check_children(self, _: attrs.Attribute[Any], value: tuple[RunResult[Any], ...]) -> None:
        if not value:
            return
        if self.paused is None:
            raise ValueError("a session record's children are those of its pause: a record without one has none")
        for child in value:
            if not isinstance(child, RunResult):
                raise TypeError(f"a session record's children are RunResult objects, not {type(child).__name__}")

    @origin.validator
    def _check_origin(self, _: attrs.Attribute[str | None], value: str | None) -> None:
        if value is not None and (not isinstance(value, str) or not value):
            raise ValueError(f"a session's origin is a non-empty str or None, not {value!r}")


def stored_record(record: SessionRecord, version: int, origin: str) -> SessionRecord:
    """``record`` as a store stored it: its key, messages, pause, run id and children, at ``version``, from
    ``origin`` (``kept`` back to ``0``: a hint of the commit, not state) — what a store that keeps the records
    themselves (:class:`~agentactors.sessions.memory.MemoryStore`) returns from a commit.

    Equal to ``SessionRecord(record.key, record.messages, version, record.paused, record.run_id, origin=origin,
    children=record.children)``, without running the validators again on what ``record``'s own construction
    validated (a frozen record cannot have changed since): only ``version`` and ``origin`` are new, and checked
    here.  A session's commit builds its record once, and a second full construction here was a good part of a
    ``MemoryStore`` turn's own cost.

    :raises TypeError: ``record`` is not a :class:`SessionRecord`.
    :raises ValueError: a ``version`` that is not an int >= 1, an ``origin`` that is not a non-empty str.
    """
    if not isinstance(record, SessionRecord):
        raise TypeError(f"a stored record is made from a SessionRecord, not {type(record).__name__}")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError(f"a stored record's version is an int >= 1, not {version!r}")
    if not isinstance(origin, str) or not origin:
        raise ValueError(f"a stored record's origin is a non-empty str, not {origin!r}")
    stored: SessionRecord = _new(SessionRecord)
    _set(stored, "key", record.key)  # (attrs' own __init__ sets a frozen record's slots so)
    _set(stored, "messages", record.messages)
    _set(stored, "version", version)
    _set(stored, "paused", record.paused)
    _set(stored, "run_id", record.run_id)
    _set(stored, "kept", 0)
    _set(stored, "origin", origin)
    _set(stored, "children", record.children)
    return stored


_new: Final = object.__new__
_set: Final = object.__setattr__


@runtime_checkable
class SessionStore(Protocol):
    """Where sessions are kept between turns: a map ``key -> SessionRecord`` with optimistic versions.

    Every method is a coroutine function; implementations must be safe to call from many tasks of one
    event loop at once.  Nothing the store returns may change afterwards (records are immutable).

    **Optional:** ``address``, an attribute or property naming *where* the store keeps its records — a hashable
    value, the same for the object's life, equal for two store objects exactly when they hold the same sessions
    (``SqliteStore``: ``("sqlite", its resolved path)``; ``PostgresStore``: ``("postgres", its DSN without the
    password)``).  A runtime addresses a session by its store's address and key (:func:`store_address`), so a
    store object made per request reaches the session, its actor and its budget that an earlier object of the
    same file or database activated.  A store without one, or whose ``address`` is ``None`` (``MemoryStore``: each
    object is its own data), is addressed by the object itself.  Not a member of the protocol (``isinstance`` and
    :func:`check_store` do not ask for it): a store written without it works unchanged.  Never put a secret in it.
    """

    async def load(self, key: str) -> SessionRecord | None:
        """The stored record for ``key``, or ``None`` if there is none.

        Reading an older stored format migrates it (in memory: the store is not rewritten until the
        next commit); a newer or unknown one raises.

        :raises ~agentactors.errors.SessionFormatError: the stored record is in a format this
            version cannot read.
        :raises ValueError: a key no store keeps (:func:`check_key`); the stores of this package refuse it
            alike, before any I/O (so should yours).

        Cancellation: a read; a store may let a cancelled caller leave at once or finish it first.
        """
        ...

    async def commit(self, record: SessionRecord, *, expected_version: int | None) -> SessionRecord:
        """Store ``record`` (its ``messages``, ``paused`` and ``run_id``) as the session's new state.

        Atomic: either the whole record is stored or nothing is.  ``expected_version`` is the version
        the record was computed from — ``None`` for a session that must not exist yet.  Returns the
        record as stored, with its new version (``expected_version + 1``, or ``1``).  A store may use
        ``record.kept`` to write only the messages after the first ``kept`` (they are the stored ones).

        A store keeps the session's ``origin``: a new one at its creation (``record.origin`` if it names
        one), then the stored one (or, for a session stored without one, ``record.origin`` or a new one);
        the record returned carries it.

        :raises ~agentactors.errors.SessionConflictError: the stored version is not
            ``expected_version`` (another commit came first, or the session was deleted), or the
            session exists and ``expected_version`` is ``None``, or ``record.origin`` and the stored
            origin are both known and differ (the key was deleted and created again since the record's
            version was read: another conversation, whatever its version).  Nothing was stored.
        :raises TypeError: the record holds a value the store cannot keep; ``expected_version`` is neither
            ``None`` nor an int (:func:`check_expected`: before any I/O, in the stores of this package alike).
        :raises ValueError: a negative ``expected_version``.
        :raises ~agentactors.errors.SessionFormatError: the record holds a value past the JSON depth and
            integer limits (``agentactors._json``): a store that encodes refuses what it could not read back.

        Cancellation: all or nothing still — a commit that was cancelled either happened entirely or
        not at all (a session shields its commits, so it always learns which).
        """
        ...

    async def delete(self, key: str, *, expected_version: int | None = None) -> bool:
        """Forget ``key``; ``True`` if there was a record to delete.

        With ``expected_version``, only if the stored version is that one (else nothing is deleted and
        ``False`` is returned).

        :raises TypeError, ValueError: a key no store keeps (:func:`check_key`), an ``expected_version`` that is
            not one (:func:`check_expected`).

        Cancellation: as :meth:`commit`.
        """
        ...

    async def aclose(self) -> None:
        """Release what the store holds open (connections, threads).  Idempotent.

        A store may be used again after ``aclose()``: it opens what it needs anew (so one store object
        can serve several runtimes one after the other; each closes it on its exit).

        Cancellation: a store finishes what is running before it closes.  The SQL stores' close is shielded
        and bounded: a caller already cancelled, or cancelled while it waits behind a running statement, still
        closes the connection — waiting at most 10 s for that statement; past that, the connection is closed in
        the background once the statement returns.
        """
        ...


def check_store(store: object) -> SessionStore:
    """``store`` if it has the :class:`SessionStore` methods.  :raises TypeError: it does not.

    Each method is only asked to be callable: a plain ``def`` that returns an awaitable (a store forwarding to
    another, an ``async def`` under a sync decorator) is as good as an ``async def``.  One that returns no
    awaitable is named where it is awaited (:func:`awaited`).
    """
    missing = [name for name in ("load", "commit", "delete", "aclose") if not callable(getattr(store, name, None))]
    if missing:
        raise TypeError(f"a session store needs {', '.join(missing)}(): {type(store).__name__} is not a SessionStore")
    return store  # type: ignore[return-value]


def awaited(store: object, method: str, answer: Any) -> Any:
    """``answer`` — what ``store.<method>(...)`` returned — when it can be awaited.

    :raises TypeError: it cannot (a plain ``def load`` of a sync database, wrapped as it is): naming the store and
        the method, where Python's own "object NoneType can't be used in 'await' expression" named neither.
    """
    if not inspect.isawaitable(answer):
        raise TypeError(
            f"{type(store).__name__}.{method}() returned {type(answer).__name__!r}, not an awaitable: a session "
            "store's methods are awaited (define them with `async def`)"
        )
    return answer


#: What a :class:`StoreIdentity` holds first: no value of anyone else's, so no store's ``address`` equals one.
_IDENTITY: Final = object()


class StoreIdentity(tuple[object, int]):
    """The address of a store that names none (:func:`store_address`): the object itself, by ``id()``.

    A tuple (hashed and compared in C: a session's slot is looked up on every call of its handle) whose first item
    is private to this module, so no store's ``address`` can equal it by chance.  The object must outlive the use
    of its identity (an ``id`` is reused once an object is gone): what keeps an identity for longer than its store
    is active keeps the store too (:class:`~agentactors.sessions.spending.Ledger`).
    """

    __slots__ = ()

    def __new__(cls, store: object) -> StoreIdentity:
        return super().__new__(cls, (_IDENTITY, id(store)))

    def __repr__(self) -> str:
        return f"StoreIdentity(id={self[1]:#x})"


def store_address(store: object) -> Hashable:
    """Where ``store`` keeps its records, as a runtime addresses sessions by: its ``address`` (see
    :class:`SessionStore`), or — without one, or ``None`` — :class:`StoreIdentity` (the object itself).

    :raises TypeError: an ``address`` that is not hashable.
    """
    address = getattr(store, "address", None)
    if address is None:
        return StoreIdentity(store)
    try:
        hash(address)
    except TypeError:
        raise TypeError(
            f"a session store's address names where it keeps its records and is hashable (a tuple of str, say): "
            f"{type(store).__name__}.address is a {type(address).__name__}"
        ) from None
    found: Hashable = address
    return found


def new_origin() -> str:
    """A new session's origin: 96 random bits, text (see :attr:`SessionRecord.origin`)."""
    import secrets  # (here, once a session is created: it brings hmac and hashlib, which the package's import skips)

    return secrets.token_urlsafe(12)


def origin_conflict(stored: str | None, given: str | None) -> bool:
    """Whether a commit naming origin ``given`` meets a session created anew (``stored``): both known, not equal."""
    return stored is not None and given is not None and stored != given


def conflict_message(key: str, found: int | None, expected: int | None, *, recreated: bool = False) -> str:
    """The text of a store's :class:`~agentactors.errors.SessionConflictError`: what it found, what was expected."""
    if recreated:
        return (
            f"session {key!r} was deleted and created again since version {expected} was read: it is another "
            f"conversation now (at version {found}), and this turn was not committed to it"
        )
    if expected is None:
        return f"session {key!r} already exists (version {found}): another turn created it first"
    if found is None:
        return f"session {key!r} is no longer stored (expected version {expected}): it was deleted"
    return f"session {key!r} is at version {found}, not {expected}: another turn committed first"
