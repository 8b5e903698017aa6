"""Durable runs, replay and fork (``docs/durability.md``).

* :class:`SqliteJournal` — ``Runtime(journal=SqliteJournal("runs.db"))`` commits each step of each run as it
  completes; ``await rt.recover()`` finishes the runs a crashed process left.
* :func:`replay` — a recorded run again, from a JSONL event record or a journal: no vendor call, no tool call.
* :func:`fork` — a recorded run again up to a step, then live with another agent or settings.
"""

from __future__ import annotations

from .records import (
    JournalError,
    RecordedRun,
    RecordedStep,
    ReplayDivergedError,
    RunNotRecordedError,
    StepOutOfRangeError,
)
from .replay import ReplayProvider, fork, load_run, replay
from .sqlite import SqliteJournal
from .store import JournalStore

__all__ = [
    "JournalError",
    "JournalStore",
    "RecordedRun",
    "RecordedStep",
    "ReplayDivergedError",
    "ReplayProvider",
    "RunNotRecordedError",
    "SqliteJournal",
    "StepOutOfRangeError",
    "fork",
    "load_run",
    "replay",
]
