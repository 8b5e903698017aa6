"""One ``JsonlRecorder`` shared by runs on several threads (a runtime per thread, one record file) keeps every
line whole.

The recorder wrote through a text file object, which is not thread-safe: two threads' ``record`` calls
interleaved inside its encoder buffer and the file held torn lines, lost lines, even bytes that are not UTF-8,
so ``read_jsonl`` (replay, fork, explain) refused the whole record.  Writes now hold a lock.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

from agentactors.events import Event, JsonlRecorder, read_jsonl

THREADS, EVENTS = 4, 5_000


def test_records_from_several_threads_are_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    recorder = JsonlRecorder(path)
    start = threading.Barrier(THREADS)

    def run(t: int) -> None:
        start.wait()
        for i in range(EVENTS):
            recorder.record(Event("tools.progress", f"run-{t}", i + 1, 0.0, None, {"note": "é" * (i % 60)}, None))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can: the interleaving is the test
    try:
        threads = [threading.Thread(target=run, args=(t,)) for t in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
        recorder.close()
    lines = path.read_bytes().decode("utf-8").splitlines()
    assert len(lines) == THREADS * EVENTS
    assert all(json.loads(line)["type"] == "tools.progress" for line in lines)
    events = list(read_jsonl(path))
    for t in range(THREADS):
        assert [e.seq for e in events if e.run_id == f"run-{t}"] == list(range(1, EVENTS + 1)), "each run in order"
