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
``2`` (current)
    ``{"format": 2, "messages": [message, ...], "paused": pause | null, "run_id": str | null}`` —
    the conversation under ``"messages"``, the pending approval pause and the last turn's run id.

The key and the version are not in the document: a store keeps them beside it (the version is what a
commit compares, so it must be readable without decoding).  Objects are encoded by
:mod:`agentactors.sessions.codec`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

from ..errors import SessionFormatError
from .codec import messages_from_json, messages_to_json, paused_from_json, paused_to_json
from .store import SessionRecord

__all__ = ["FORMAT", "MIGRATIONS", "dump_record", "load_record", "migrate"]

#: The format this version writes.
FORMAT: Final = 2


def _v1_to_v2(doc: dict[str, Any]) -> dict[str, Any]:
    """Format 1 kept the conversation under ``"history"`` and nothing else."""
    return {"format": 2, "messages": doc.get("history", []), "paused": None, "run_id": None}


#: ``n -> fn(doc in format n) -> doc in format n + 1``, for every format older than :data:`FORMAT`.
MIGRATIONS: Final[dict[int, Callable[[dict[str, Any]], dict[str, Any]]]] = {1: _v1_to_v2}


def dump_record(record: SessionRecord) -> str:
    """The record's document in the current format, as compact JSON text (key and version not included).

    :raises TypeError: the record holds a value JSON cannot keep (see :mod:`agentactors.sessions.codec`).
    """
    doc = {
        "format": FORMAT,
        "messages": messages_to_json(record.messages),
        "paused": None if record.paused is None else paused_to_json(record.paused),
        "run_id": record.run_id,
    }
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))


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


def load_record(text: str | bytes, *, key: str, version: int) -> SessionRecord:
    """The record a stored document holds (migrated from an older format if need be).

    :raises SessionFormatError: see :func:`migrate`; also for text that is not JSON or fields that do not decode.
    """
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise SessionFormatError(f"stored session {key!r} is not JSON: {exc}", key=key) from None
    doc = migrate(doc, key=key)
    try:
        paused = doc.get("paused")
        return SessionRecord(
            key,
            messages_from_json(doc.get("messages", [])),
            version,
            None if paused is None else paused_from_json(paused),
            doc.get("run_id"),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise SessionFormatError(
            f"stored session {key!r} does not decode: {type(exc).__name__}: {exc}", key=key, found=FORMAT
        ) from None
