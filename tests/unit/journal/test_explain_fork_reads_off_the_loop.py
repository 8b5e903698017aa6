"""``explain_fork`` given a JSONL path reads the file in a worker thread, not on the event loop.

A recording may be large (megabytes of requests): read on the loop, every other task of the process would wait for
it.  Both sides of the comparison are read in one thread hop, and the comparison is what it was.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import agentactors.journal.compare as compare
from agentactors import InMemoryRecorder, fork
from agentactors.events import read_jsonl
from agentactors.journal.compare import explain_fork

from .conftest import Ledger, record
from .test_explain_fork import _frugal

pytestmark = pytest.mark.anyio


async def test_a_jsonl_source_is_read_in_a_worker_thread(
    tmp_path: Path, ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = await record(tmp_path / "events.jsonl", ledger)
    events = InMemoryRecorder()
    forked = await fork(rec.path, rec.result.run_id or "", 2, agent=_frugal(Ledger()), recorders=[events])
    loop_thread = threading.current_thread()
    readers: list[threading.Thread] = []

    def spy(*args: Any, **kwargs: Any) -> Iterator[Any]:
        readers.append(threading.current_thread())
        return read_jsonl(*args, **kwargs)

    monkeypatch.setattr(compare, "read_jsonl", spy)
    cmp = await explain_fork(forked, rec.path, events=events.events)
    assert readers and all(reader is not loop_thread for reader in readers)
    assert (cmp.original_run_id, cmp.fork_run_id, cmp.at_step) == (rec.result.run_id, forked.run_id, 2)
    assert [(s.step, s.reused, s.differs) for s in cmp.steps] == [(1, True, False), (2, False, True), (3, False, True)]
    assert cmp.original_answer == "Charged 250 for sunny Lisbon."
