"""Where a request waiting on a batch is kept across a restart: the runtime's journal, keyed by the request.

With a journal (``Runtime(journal=...)``), a request's batch id and custom id are parked in it
(``journal.park(key, value)``) as soon as its batch is submitted.  After a crash, ``rt.recover()`` runs the
run again from its last committed step; the step asks the same request again, the key is found
(``journal.parked(key)``), and the BatchProvider polls that batch instead of submitting the request again.
The entry is removed (``journal.unpark``) once the request has its answer, or when its run is cancelled
(a cancelled run is not recovered).

**The key is the request itself**: a digest of what would be sent (the provider's name and base URL, the
model, the wire's encoded body).  A recovered run's step sends exactly what it sent before — its
conversation is rebuilt from the journal — so it finds its entry with nothing else to go by; a request that
changed (a system prompt with the time in it) finds none and is submitted again, never given another
question's answer.  Runs that ask the very same question are told apart by the value: a list of entries,
each taken by one waiting request of this process (:meth:`Parking.find` claims it).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import attrs

from ...actors.runtime import Runtime
from ...redaction import redact

__all__ = ["Entry", "Parking", "journal_of_runtime"]

log = logging.getLogger("agentactors.resilience.batch")

PREFIX = "agentactors.batch/"


@attrs.frozen(slots=True)
class Entry:
    """One parked request: the batch it was submitted in and its id there."""

    batch_id: str
    custom_id: str


def journal_of_runtime() -> Any | None:
    """The journal of the runtime this call runs in, when it can park (``park``, ``parked``, ``unpark``)."""
    journal = getattr(Runtime.current(), "journal", None)
    if journal is None or not all(callable(getattr(journal, m, None)) for m in ("park", "parked", "unpark")):
        return None
    return journal


def _entries(text: str | None) -> list[Entry]:
    if not text:
        return []
    try:
        value = json.loads(text)
        return [Entry(str(e["batch"]), str(e["custom_id"])) for e in value["items"]]
    except (ValueError, KeyError, TypeError):
        log.warning("a parked batch entry is not one this version reads; it is ignored")
        return []


def _text(entries: list[Entry]) -> str:
    return json.dumps({"items": [{"batch": e.batch_id, "custom_id": e.custom_id} for e in entries]})


class Parking:
    """The parked entries of one BatchProvider's requests (see the module docstring).

    Journal failures are logged, never raised: parking is what makes a restart cheaper, and a request whose
    entry could not be written is still answered (after a crash it would be submitted again).
    """

    def __init__(self) -> None:
        self._claimed: set[tuple[str, Entry]] = set()
        self._lock: anyio.Lock | None = None

    def _guard(self) -> anyio.Lock:
        if self._lock is None:
            self._lock = anyio.Lock()
        return self._lock

    async def find(self, journal: Any, key: str) -> Entry | None:
        """An entry parked under ``key`` that no waiting request of this process took yet (taken now)."""
        try:
            text = await journal.parked(PREFIX + key)
        except Exception as exc:
            log.warning("batch: reading the journal's parked entries failed: %s", redact(str(exc)))
            return None
        for entry in _entries(text):
            if (key, entry) not in self._claimed:
                self._claimed.add((key, entry))
                return entry
        return None

    async def park(self, journal: Any, key: str, entry: Entry) -> bool:
        """Add ``entry`` under ``key`` (committed on return); ``False`` when the journal failed."""
        self._claimed.add((key, entry))
        async with self._guard():
            try:
                entries = _entries(await journal.parked(PREFIX + key))
                if entry not in entries:
                    await journal.park(PREFIX + key, _text([*entries, entry]))
            except Exception as exc:
                log.warning("batch: parking a request in the journal failed: %s", redact(str(exc)))
                return False
        return True

    async def unpark(self, journal: Any, key: str, entry: Entry) -> None:
        """Remove ``entry`` from ``key`` (the key itself when it was the last)."""
        self._claimed.discard((key, entry))
        async with self._guard():
            try:
                entries = [e for e in _entries(await journal.parked(PREFIX + key)) if e != entry]
                if entries:
                    await journal.park(PREFIX + key, _text(entries))
                else:
                    await journal.unpark(PREFIX + key)
            except Exception as exc:
                log.warning("batch: removing a parked request from the journal failed: %s", redact(str(exc)))

    def release(self, key: str, entry: Entry) -> None:
        """Give a claimed entry back (its request left before parking or unparking it)."""
        self._claimed.discard((key, entry))
