"""``python -m agentactors demo`` as a user runs it: a real process, Ctrl-C, a vendor child killed under it.

Each test watches the process table: the vendor child must never outlive the demo.  Real clocks with
generous bounds (a loaded two-core machine starts Python processes slowly); the interrupt is sent once the
vendor child exists, so the demo is mid-run (1,000 agents take seconds) whatever the machine's speed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads the process table from /proc")

ROOT = Path(__file__).resolve().parents[3]

# ``python -m agentactors`` with Ctrl-C's usual handler.  A process started from a background job of a
# non-interactive shell (a CI script, ``make test &``) inherits SIGINT *ignored*, and Python then keeps it
# ignored: the interrupt these tests send would never arrive, whatever the demo does.  A user's terminal
# gives the default; so does this.
AGENTACTORS = [
    sys.executable, "-c",
    "import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "runpy.run_module('agentactors', run_name='__main__', alter_sys=True)",
]


def _demo(backend: str, tmp_path: Path, *, progress: bool = False) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        env.pop(key, None)
    return subprocess.Popen(
        [*AGENTACTORS, "demo", "--backend", backend, *([] if progress else ["--no-progress"]),
         "--record", str(tmp_path / "record.jsonl")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
    )


def _children(pid: int) -> list[int]:
    """The live (not zombie) processes whose parent is ``pid`` running the vendor child."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z" and b"agentactors._demo.vendor" in cmdline:
            found.append(int(entry.name))
    return found


def _listening(pid: int) -> bool:
    """Whether process ``pid`` holds a listening TCP socket: the vendor child serves once it does."""
    try:
        links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
    except OSError:
        return False
    inodes = {link[len("socket:["):-1] for link in links if link.startswith("socket:[")}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        if any(len(f) > 9 and f[3] == "0A" and f[9] in inodes for f in (row.split() for row in rows)):
            return True
    return False


def _vendor_child(demo: subprocess.Popen[str]) -> int:
    """The demo's vendor child, once it serves (a loaded machine starts Python slowly: killed before it was
    ready, it never started, which is another test's case)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        children = _children(demo.pid)
        if children and _listening(children[0]):
            return children[0]
        if demo.poll() is not None:
            break
        time.sleep(0.02)
    demo.kill()
    out, err = demo.communicate()
    pytest.fail(f"no vendor child appeared; exit {demo.returncode}\n{out[-2000:]}\n{err[-2000:]}")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_ctrl_c_mid_run_exits_130_with_one_line_and_no_vendor_left(backend: str, tmp_path: Path) -> None:
    demo = _demo(backend, tmp_path)
    child = _vendor_child(demo)
    time.sleep(0.5)  # the agents are running now
    demo.send_signal(signal.SIGINT)  # the demo alone, as a process manager would: the child must follow
    try:
        out, err = demo.communicate(timeout=120)
    finally:
        demo.kill()
    assert demo.returncode == 130, (out[-2000:], err[-4000:])
    assert "demo: interrupted" in out
    assert "Traceback" not in err, err[-4000:]
    deadline = time.monotonic() + 60
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "the vendor child outlived the demo"


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_vendor_child_killed_mid_run_ends_the_demo_with_a_message_not_a_traceback(
    backend: str, tmp_path: Path
) -> None:
    demo = _demo(backend, tmp_path)
    child = _vendor_child(demo)
    time.sleep(0.5)
    os.kill(child, signal.SIGKILL)
    try:
        out, err = demo.communicate(timeout=180)  # every run fails fast (connection refused), then the end
    finally:
        demo.kill()
    assert demo.returncode == 1, (out[-2000:], err[-4000:])
    assert "Traceback" not in err, err[-4000:]
    assert "the fake vendor process ended (killed by SIGKILL)" in err


def test_ctrl_c_during_the_batch_demo_exits_130_without_a_traceback(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    demo = subprocess.Popen(
        [*AGENTACTORS, "demo", "--batch", "--agents", "200"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
    )
    assert demo.stdout is not None
    demo.stdout.readline()  # the first line is printed as the job starts: the agents are running soon after
    time.sleep(0.5)
    demo.send_signal(signal.SIGINT)
    try:
        out, err = demo.communicate(timeout=120)
    finally:
        demo.kill()
    assert demo.returncode == 130, (out[-2000:], err[-4000:])
    assert "demo: interrupted" in out
    assert "Traceback" not in err, err[-4000:]


def test_a_terminal_that_cannot_show_unicode_gets_the_summary_not_a_traceback(tmp_path: Path) -> None:
    """An ASCII-only stdout (``PYTHONIOENCODING=ascii``, an old Windows console): the characters it lacks are
    replaced, the demo still ends on its verdict."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": "ascii"}
    done = subprocess.run(
        [*AGENTACTORS, "demo", "--agents", "2", "--no-progress", "--record", str(tmp_path / "record.jsonl")],
        capture_output=True, text=True, encoding="ascii", errors="strict", env=env, cwd=tmp_path, timeout=180,
    )
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-4000:])
    assert "Traceback" not in done.stderr, done.stderr[-4000:]
    assert "goodput 100.0%" in done.stdout


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_output_piped_into_a_reader_that_leaves_ends_the_demo_quietly(backend: str, tmp_path: Path) -> None:
    """``python -m agentactors demo | head -3``: once the reader is gone the demo stops its runs and its vendor,
    and says nothing more (no traceback, no "Exception ignored" at exit)."""
    demo = _demo(backend, tmp_path, progress=True)
    child = _vendor_child(demo)
    assert demo.stdout is not None
    demo.stdout.readline()
    demo.stdout.close()  # the reader leaves: the next progress line (within a second or so) meets a closed pipe
    assert demo.stderr is not None
    try:
        demo.wait(timeout=120)
        err = demo.stderr.read()
    finally:
        demo.kill()
        demo.stderr.close()
    assert demo.returncode == 1
    assert err == "", err[-4000:]
    deadline = time.monotonic() + 60
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "the vendor child outlived the demo"


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_ctrl_c_while_waiting_on_a_hung_vendors_log_takes_effect_at_once(backend: str, tmp_path: Path) -> None:
    """The runs have ended; the demo asks its vendor child (stopped: hung) for the request log.  Ctrl-C then
    took effect only when that wait's bound ran out (63 s) on trio, and after the stop's (10 s) on both."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        env.pop(key, None)
    demo = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "unit" / "_demo" / "_hung_at_log.py"), "demo", "--agents", "3",
         "--backend", backend, "--no-progress", "--record", str(tmp_path / "record.jsonl")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
    )
    assert demo.stderr is not None
    child = None
    try:
        line = demo.stderr.readline()  # the runs take seconds; a demo that ends first closes stderr: ""
        assert line.startswith("hung vendor child "), line
        child = int(line.split()[-1])
        time.sleep(0.5)  # the demo is waiting for the log now
        interrupted = time.monotonic()
        demo.send_signal(signal.SIGINT)
        out, err = demo.communicate(timeout=120)
        elapsed = time.monotonic() - interrupted
        assert demo.returncode == 130, (out[-2000:], err[-4000:])
        assert elapsed < 8, elapsed  # "at once": a second or two, with a loaded machine's margin
        assert "demo: interrupted" in out
        assert "Traceback" not in err, err[-4000:]
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child), "the stopped vendor child outlived the demo"
    finally:
        demo.kill()
        demo.wait()
        if child is not None and _alive(child):
            os.kill(child, signal.SIGKILL)
