"""The stored format of a session record: one JSON document, with a format version, and its migrations.

A session written today may be read by next year's version of the library, and a database file may be
shared by processes running different versions.  So the document says which format it is in
(``"format"``), and reading follows two rules:

* **older formats migrate.**  Each format ``n`` has a function turning its document into format
  ``n + 1`` (:data:`MIGRATIONS`); reading applies them in order up to :data:`FORMAT`, in memory.  The
  store is rewritten in the current format at the session's next commit — never behind the back of a
  process that may still run the older version.
* **newer or unknown formats are refused** with :class:`~agentactors.errors.SessionFormatError`
  (also a ``ValueError``), naming the format found: guessing at a document written by a later version
  could silently drop what it added (a pause, say) and commit the loss.  So is a document that is not
  one (not JSON, no format, fields that do not decode); nothing in the store is changed.

Formats:

``1``
    ``{"format": 1, "history": [message, ...]}`` — the first layout: the conversation only.
``2``
    ``{"format": 2, "messages": [message, ...], "paused": pause | null, "run_id": str | null}`` —
    the conversation under ``"messages"``, the pending approval pause and the last turn's run id.
``3`` (current)
    format 2, and two ways to keep a document small when the conversation grows:

    * the messages may be kept *beside* the document, in order, in pieces (``"message_count": n``
      instead of ``"messages"``: a store that appends each turn's messages, as
      :class:`~agentactors.sessions.sqlite.SqliteStore` does, keeps only the count here and reads
      the pieces back with it — :func:`load_record`'s ``pieces``);
    * a pause whose messages begin with the session's history stores only the rest, with
      ``"base": k`` (its first ``k`` messages are the history's).

    It may also say ``"origin"``: which creation of the key it descends from
    (:attr:`~agentactors.sessions.store.SessionRecord.origin`; absent: unknown, not checked — a reader that
    does not know the field ignores it, and a session whose commit dropped it is given one again).

    A pause may also hold ``"children"``: the results of the runs the paused turn delegated before it paused
    (:attr:`~agentactors.sessions.store.SessionRecord.children`, encoded by
    :func:`~agentactors.sessions.codec.run_result_to_json`; absent: none, as every pause stored before they
    were kept).  Optional, as ``"origin"``: a reader that does not know it resolves the pause without them —
    what the result reports, never the conversation, so nothing committed is lost.

    Format 2 is format 3 with none of these: its migration only renames the format.

The key and the version are not in the document: a store keeps them beside it (the version is what a
commit compares, so it must be readable without decoding).  Objects are encoded by
:mod:`agentactors.sessions.codec`, under the depth and integer limits of :mod:`agentactors._json`:
a record past them is refused when it is committed (:class:`~agentactors.errors.SessionFormatError`),
so every record a store committed can be read back, in any process.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any, Final

import attrs

from .._json import JsonBoundError
from ..errors import SessionFormatError
from ..loop.pause import PausedRun
from ..loop.result import RunResult
from ..messages import Message
from .codec import (
    messages_from_json,
    messages_to_json,
    paused_from_json,
    paused_to_json,
    run_result_from_json,
    run_result_to_json,
)
from .store import SessionRecord

__all__ = [
    "FORMAT",
    "MIGRATIONS",
    "dump_head",
    "dump_messages",
    "dump_record",
    "load_record",
    "migrate",
    "stored_count",
    "stored_head",
]

log = logging.getLogger("agentactors.sessions")

#: The format this version writes.
FORMAT: Final = 3


def _v1_to_v2(doc: dict[str, Any]) -> dict[str, Any]:
    """Format 1 kept the conversation under ``"history"`` and nothing else."""
    return {"format": 2, "messages": doc.get("history", []), "paused": None, "run_id": None}


def _v2_to_v3(doc: dict[str, Any]) -> dict[str, Any]:
    """Format 3 only adds ways to leave things out: a format 2 document is one, renamed."""
    return {**doc, "format": 3}


#: ``n -> fn(doc in format n) -> doc in format n + 1``, for every format older than :data:`FORMAT`.
MIGRATIONS: Final[dict[int, Callable[[dict[str, Any]], dict[str, Any]]]] = {1: _v1_to_v2, 2: _v2_to_v3}


def dump_record(record: SessionRecord) -> str:
    """The record's whole document in the current format, as compact JSON text (key and version not included).

    :raises TypeError: the record holds a value JSON cannot keep (see :mod:`agentactors.sessions.codec`).
    :raises SessionFormatError: it holds a value past the depth and integer limits of
        :mod:`agentactors._json` (it could not be read back).
    """
    return _dump(record, {"messages": _encoded(record.key, messages_to_json, record.messages)})


def dump_head(record: SessionRecord) -> str:
    """The record's document with its messages left out (``"message_count"``): they are kept beside it.

    :raises TypeError, SessionFormatError: as :func:`dump_record`.
    """
    return _dump(record, {"message_count": len(record.messages)})


def dump_messages(key: str, messages: Sequence[Message]) -> str:
    """A piece of a conversation kept beside its document: a JSON list of messages.

    :raises TypeError, SessionFormatError: as :func:`dump_record`.
    """
    return _text(key, _encoded(key, messages_to_json, tuple(messages)))


def _dump(record: SessionRecord, messages: dict[str, Any]) -> str:
    paused = record.paused
    doc = {
        "format": FORMAT,
        **messages,
        "paused": None if paused is None else _encoded(
            record.key, _pause_to_json, paused, record.messages, record.children
        ),
        "run_id": record.run_id,
    }
    if record.origin is not None:
        doc["origin"] = record.origin
    return _text(record.key, doc)


def _pause_to_json(
    pause: PausedRun, history: tuple[Message, ...], children: tuple[RunResult[Any], ...] = ()
) -> dict[str, Any]:
    """The pause; when its messages begin with the history, only the rest (``"base"``: how many are shared);
    its ``children`` (``"children"``), when it has some."""
    base = len(history)
    if not base or pause.messages[:base] != history:
        doc = paused_to_json(pause)
    else:
        doc = paused_to_json(attrs.evolve(pause, messages=pause.messages[base:]))
        doc["base"] = base
    if children:
        doc["children"] = _children_to_json(children)
    return doc


def _children_to_json(children: tuple[RunResult[Any], ...]) -> list[dict[str, Any]]:
    """The children a pause keeps, each that can be stored.

    A child whose conversation holds what JSON cannot keep (a vendor's opaque ``provider_data`` with a datetime,
    say) is left out, with a warning: the pause it belongs to is the session's state and must be committed; the
    children are only what the result that resolves it reports.
    """
    out: list[dict[str, Any]] = []
    for child in children:
        try:
            out.append(run_result_to_json(child))
        except (TypeError, ValueError, JsonBoundError, RecursionError) as exc:
            log.warning("a delegated run (%s) of a paused turn is not stored with its pause: %s", child.run_id, exc)
    return out


def _encoded(key: str, fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except JsonBoundError as exc:
        raise SessionFormatError(f"session {key!r} cannot be stored: {exc} (nothing was written)", key=key) from None


def _text(key: str, doc: Any) -> str:
    """``doc`` as compact JSON text that any store can keep: valid UTF-8.

    Non-ASCII text is kept as it is (compact), except when the document holds a lone surrogate — half an
    emoji, as a vendor's JSON escape ``"\\ud83d"`` cut short decodes to in Python: no UTF-8 database column
    can hold that (SQLite's and PostgreSQL's drivers raise ``UnicodeEncodeError``), so the whole document is
    then written with ASCII escapes, which JSON reads back to the very same string.  The check is one encode
    of text the driver encodes anyway, and only of text that is not ASCII.
    """
    try:
        text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
        if not text.isascii():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                text = json.dumps(doc, ensure_ascii=True, separators=(",", ":"))
        return text
    except (ValueError, RecursionError) as exc:  # an integer past int_max_str_digits, say
        raise SessionFormatError(f"session {key!r} cannot be stored: {exc} (nothing was written)", key=key) from None


def migrate(doc: Any, *, key: str | None = None) -> dict[str, Any]:
    """``doc`` brought to the current format.

    :raises SessionFormatError: not a session document, or a format newer than :data:`FORMAT` or unknown.
    """
    if not isinstance(doc, dict):
        raise SessionFormatError(
            f"stored session {key!r} is not a session document (a JSON {type(doc).__name__})", key=key
        )
    found = doc.get("format")
    if not isinstance(found, int) or isinstance(found, bool):
        raise SessionFormatError(f"stored session {key!r} declares no format (found {found!r})", key=key, found=found)
    if found > FORMAT:
        raise SessionFormatError(
            f"stored session {key!r} is in format {found}, newer than this agentactors reads ({FORMAT}): "
            "upgrade agentactors to read it (it was left as it is)",
            key=key,
            found=found,
        )
    if found < 1:
        raise SessionFormatError(f"stored session {key!r} declares an unknown format {found}", key=key, found=found)
    current: dict[str, Any] = doc
    while found < FORMAT:
        current = MIGRATIONS[found](current)
        found += 1
    return current


def stored_count(text: str | bytes, *, key: str) -> int | None:
    """How many messages a stored document keeps beside it (``None``: it holds them, or none, itself).

    What a store that appends needs to know before it appends: only a document that keeps its
    messages beside it, that many, can be extended by writing the new ones.
    """
    return stored_head(text, key=key)[0]


def stored_head(text: str | bytes, *, key: str) -> tuple[int | None, str | None]:
    """What a commit checks of the stored document, in one read: :func:`stored_count`, and the session's
    origin (``None``: the document names none).

    :raises SessionFormatError: not a session document (see :func:`migrate`), or an origin that is not text.
    """
    doc = migrate(_parse(text, key), key=key)
    count = doc.get("message_count")
    origin = _origin(doc, key)
    return (count if isinstance(count, int) and not isinstance(count, bool) and count >= 0 else None), origin


def _origin(doc: dict[str, Any], key: str) -> str | None:
    origin = doc.get("origin")
    if origin is None or (isinstance(origin, str) and origin):
        return origin
    raise SessionFormatError(f"stored session {key!r} has a corrupted origin {origin!r}", key=key, found=FORMAT)


def load_record(
    text: str | bytes, *, key: str, version: int, pieces: Sequence[str | bytes] | None = None
) -> SessionRecord:
    """The record a stored document holds (migrated from an older format if need be).

    ``pieces``: the messages kept beside a document that says ``"message_count"`` (each a JSON list,
    in order); ignored for a document that holds its messages.

    :raises SessionFormatError: see :func:`migrate`; also for text that is not JSON, fields that do not
        decode, pieces that do not add up to the count, a value nested past the limits.
    """
    doc = migrate(_parse(text, key), key=key)
    try:
        if "message_count" in doc:
            messages = _joined(key, doc["message_count"], pieces or ())
        elif "messages" in doc:
            messages = messages_from_json(doc["messages"])
        else:  # every format writes one or the other: read as an empty conversation, the next turn would replace it
            raise SessionFormatError(
                f"stored session {key!r} holds neither its messages nor their count: it was left as it is",
                key=key, found=FORMAT,
            )
        paused = doc.get("paused")
        run_id = doc.get("run_id")
        if run_id is not None and not isinstance(run_id, str):
            raise TypeError(f"a stored run_id is a str or null, not {type(run_id).__name__}")
        return SessionRecord(
            key,
            messages,
            version,
            None if paused is None else _pause_from_json(paused, messages),
            run_id,
            origin=_origin(doc, key),
            children=() if paused is None else _children_from_json(paused),
        )
    except SessionFormatError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as exc:
        raise SessionFormatError(
            f"stored session {key!r} does not decode: {type(exc).__name__}: {exc}", key=key, found=FORMAT
        ) from None


def _parse(text: str | bytes, key: str) -> Any:
    try:
        return json.loads(text)
    except RecursionError:
        raise SessionFormatError(f"stored session {key!r} is nested too deep to read", key=key) from None
    except ValueError as exc:
        raise SessionFormatError(f"stored session {key!r} is not JSON: {exc}", key=key) from None


def _joined(key: str, count: Any, pieces: Sequence[str | bytes]) -> tuple[Message, ...]:
    messages: list[Message] = []
    for piece in pieces:
        messages.extend(messages_from_json(_parse(piece, key)))
    if not isinstance(count, int) or isinstance(count, bool) or count != len(messages):
        raise SessionFormatError(
            f"stored session {key!r} has {len(messages)} messages beside it, not the {count!r} it names", key=key
        )
    return tuple(messages)


def _children_from_json(doc: Any) -> tuple[RunResult[Any], ...]:
    """The children stored with a pause (none, for a pause stored before they were kept)."""
    children = doc.get("children", []) if isinstance(doc, dict) else []
    if not isinstance(children, list):
        raise TypeError(f"a stored pause's children are a list, not {type(children).__name__}")
    return tuple(run_result_from_json(c) for c in children)


def _pause_from_json(doc: Any, history: tuple[Message, ...]) -> PausedRun:
    pause = paused_from_json(doc)
    base = doc.get("base", 0)
    if not base:
        return pause
    if not isinstance(base, int) or isinstance(base, bool) or not 0 < base <= len(history):
        raise ValueError(f"a stored pause's base {base!r} is not within the history")
    return attrs.evolve(pause, messages=history[:base] + pause.messages)
