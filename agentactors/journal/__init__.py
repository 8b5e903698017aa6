"""Durable runs, replay and fork (``docs/durability.md``).

* :class:`SqliteJournal` — ``Runtime(journal=SqliteJournal("runs.db"))`` commits each step of each run as it
  completes; ``await rt.recover()`` finishes the runs a crashed process left.
* :class:`PostgresJournal` — the same in PostgreSQL, shared by processes on many hosts (the ``[postgres]`` extra;
  psycopg is imported when it first connects, not with this package).
* :func:`replay` — a recorded run again, from a JSONL event record or a journal: no vendor call, no tool call.
* :func:`fork` — a recorded run again up to a step, then live with another agent or settings;
  :func:`explain_fork` — the fork beside its original (what changed, which answer differs).
"""

from __future__ import annotations

import typing as _typing

from .._served import on_first_use
from .compare import ForkComparison, explain_fork
from .records import (
    ForkAgentMissingError,
    JournalError,
    RecordedRun,
    RecordedStep,
    RecoveryError,
    ReplayDivergedError,
    RunNotRecordedError,
    StepOutOfRangeError,
)
from .replay import ReplayProvider, fork, load_run, replay
from .store import JournalFormatError, JournalStore, LeaseLostError

__all__ = [
    "ForkAgentMissingError",
    "ForkComparison",
    "JournalError",
    "JournalFormatError",
    "JournalStore",
    "LeaseLostError",
    "PostgresJournal",
    "RecordedRun",
    "RecordedStep",
    "RecoveryError",
    "ReplayDivergedError",
    "ReplayProvider",
    "RunNotRecordedError",
    "SqliteJournal",
    "StepOutOfRangeError",
    "explain_fork",
    "fork",
    "load_run",
    "replay",
]


if _typing.TYPE_CHECKING:
    from .postgres import PostgresJournal
    from .sqlite import SqliteJournal

# The journals are served on first use (PEP 562): `import agentactors` does not import their SQL, lease and
# driver modules for a program that never journals (tests/unit/test_import_cost.py).
# Served through the package root, which imports the defining module and relabels the class as it relabels every
# name it exports (agentactors.X in reprs and tracebacks, whichever import reached it first).
_ON_FIRST_USE = {
    "PostgresJournal": "agentactors",
    "SqliteJournal": "agentactors",
}

if not _typing.TYPE_CHECKING:  # for the interpreter only: a checker that saw it would accept any misspelt name
    __getattr__, __dir__ = on_first_use(globals(), _ON_FIRST_USE)
