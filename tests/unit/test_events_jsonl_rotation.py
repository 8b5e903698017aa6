"""A ``JsonlRecorder`` whose file is deleted, or rotated away (``logrotate`` renames it), while it is open.

The recorder kept writing to the file it had opened: once deleted, into an inode no name reaches any more — every
record after that silently lost; once renamed, into the rotated file forever.  Now, as ``logging``'s
``WatchedFileHandler`` does, it opens ``path`` again when the file there is no longer the one it has open —
looked at each time it writes its buffer out (not per record), so what it still held when the file went lands in
the new one, each record whole, in one file.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

import pytest

from agentactors.events import Event, JsonlRecorder, read_jsonl


def _event(n: int, run: str = "r") -> Event:
    return Event("tools.progress", run, n, 0.0, None, {"note": "é" * (n % 50)}, None)


def _seqs(path: Path) -> list[int]:
    return [e.seq for e in read_jsonl(path)] if path.exists() else []


def test_a_record_file_deleted_while_open_is_made_again(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    with JsonlRecorder(path) as recorder:
        recorder.record(_event(1))
        recorder.flush()
        path.unlink()
        recorder.record(_event(2))
        recorder.flush()
        assert _seqs(path) == [2], "the records after the deletion are in a file of that name"
        recorder.record(_event(3))
    assert _seqs(path) == [2, 3]


def test_what_was_buffered_when_the_file_was_deleted_is_not_lost(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    recorder = JsonlRecorder(path)
    recorder.record(_event(1))  # still in the recorder's buffer
    path.unlink()
    recorder.record(_event(2))
    recorder.close()
    assert _seqs(path) == [1, 2]


def test_a_rotated_file_keeps_what_was_written_and_the_new_one_takes_the_rest(tmp_path: Path) -> None:
    path, rotated = tmp_path / "runs.jsonl", tmp_path / "runs.jsonl.1"
    with JsonlRecorder(path) as recorder:
        recorder.record(_event(1))
        recorder.flush()
        path.rename(rotated)  # logrotate's rename, with or without "create"
        recorder.record(_event(2))
        recorder.flush()
        path.unlink()
        path.write_text("")  # another writer (logrotate's "create") made it: appended to, not replaced
        recorder.record(_event(3))
    assert _seqs(rotated) == [1]
    assert _seqs(path) == [3]


def test_a_path_that_cannot_be_opened_again_keeps_the_records_in_the_open_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    path = folder / "runs.jsonl"
    recorder = JsonlRecorder(path)
    recorder.record(_event(1))
    recorder.flush()
    moved = tmp_path / "moved"
    folder.rename(moved)  # the file's folder moved away: the path leads nowhere
    recorder.record(_event(2))
    recorder.flush()  # does not raise: the record went on into the file the recorder has open
    recorder.record(_event(3))
    recorder.close()
    assert _seqs(moved / "runs.jsonl") == [1, 2, 3]
    warned = [r.getMessage() for r in caplog.records if "could not open" in r.getMessage()]
    assert len(warned) == 1, "said once"


THREADS, EVENTS = 4, 3_000


def test_rotation_while_threads_record_loses_and_tears_nothing(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    recorder = JsonlRecorder(path)
    start = threading.Barrier(THREADS + 1)
    done = threading.Event()
    rotated: list[Path] = []

    def run(t: int) -> None:
        start.wait()
        for i in range(EVENTS):
            recorder.record(_event(i + 1, f"run-{t}"))
            if i % 200 == 0:
                recorder.flush()

    def rotate() -> None:
        start.wait()
        while not done.is_set():
            if path.exists():
                target = tmp_path / f"runs.jsonl.{len(rotated) + 1}"
                path.rename(target)
                rotated.append(target)
            recorder.flush()

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=run, args=(t,)) for t in range(THREADS)]
        rotator = threading.Thread(target=rotate)
        for thread in [*threads, rotator]:
            thread.start()
        for thread in threads:
            thread.join()
        done.set()
        rotator.join()
    finally:
        sys.setswitchinterval(interval)
        recorder.close()
    files = [*rotated, path] if path.exists() else rotated
    used = [f for f in files if f.stat().st_size]
    assert len(used) > 1, "the records went on into the new file after each rotation"
    lines = [line for f in files for line in f.read_bytes().decode("utf-8").splitlines()]
    assert len(lines) == THREADS * EVENTS, "no record lost"
    assert all(json.loads(line)["type"] == "tools.progress" for line in lines), "no record torn"
    for t in range(THREADS):
        seqs = [e.seq for f in files for e in read_jsonl(f, run_id=f"run-{t}")]
        assert seqs == list(range(1, EVENTS + 1)), "each run's records in order, across the files"


def test_a_file_replaced_by_another_under_the_same_name_is_followed(tmp_path: Path) -> None:
    path, other = tmp_path / "runs.jsonl", tmp_path / "other.jsonl"
    with JsonlRecorder(path) as recorder:
        recorder.record(_event(1))
        recorder.flush()
        other.write_text(json.dumps({"type": "note", "run_id": None, "seq": 0, "time": 0.0}) + "\n")
        os.replace(other, path)
        recorder.record(_event(2))
    assert [e.type for e in read_jsonl(path)] == ["note", "tools.progress"]
    assert _seqs(path) == [0, 2]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (a device that is always full)")
def test_a_full_disk_raises_and_what_is_held_stays_bounded() -> None:
    import tracemalloc

    recorder = JsonlRecorder("/dev/full")
    big = Event("tools.progress", "r", 1, 0.0, None, {"note": "x" * 1000}, None)
    failures = 0
    tracemalloc.start()
    try:
        for _ in range(10_000):  # 10 MB of records
            try:
                recorder.record(big)
            except OSError:
                failures += 1
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        with pytest.raises(OSError):
            recorder.close()  # what it still holds cannot be written either: said, and the file is closed
    assert failures > 9_000, "each record that cannot be written out says so"
    assert held < 3_000_000, f"held {held:,} bytes: the buffer of a file that takes nothing is bounded"
    with pytest.raises(RuntimeError, match="closed"):
        recorder.record(big)
