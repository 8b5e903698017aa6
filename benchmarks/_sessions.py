"""W11 sessions: many conversations as virtual actors — their memory, and a turn's cost over a plain run.

``run.py`` drives it; the memory measurement runs here as a child process (a clean heap):

    python benchmarks/_sessions.py memory '{"store": "sqlite", "sessions": 100000}'

The turn latency alone (what README.md's W11 figure quotes), on asyncio or trio:

    python benchmarks/_sessions.py latency '{"reps": 5}'
    python benchmarks/_sessions.py latency '{"reps": 5, "backend": "trio"}'

* **Memory** — ``sessions`` sessions are created in one process and each is sent one turn of W1's tool
  loop (model → tool → model → text, scripted, zero latency), 1,000 at a time.  Every session stays
  active until the last one has been sent its turn (their ``idle_timeout`` is calibrated on a first
  batch so that none deactivates early): the peak RSS growth is that of all of them active at once.
  Then they go idle and the sweeper deactivates them; once none is left, the RSS over the baseline
  (taken after a warm-up batch had come and gone) divided by the number of sessions is what a
  deactivated session costs.  RSS is read after ``gc.collect()`` and glibc's ``malloc_trim(0)`` (so
  freed memory the allocator still holds is not counted as the sessions'); Python's own count of
  allocated blocks is reported beside it (allocator-independent).  With ``SqliteStore`` the
  histories live in the file; with ``MemoryStore`` they stay in the store's dict (that is its cost).
* **Turn latency** — sequential turns, each implementation interleaved per repetition in one
  runtime: a plain ``agent.run(prompt)`` (W1's agentactors row), the first turn of a new session
  (activation: spawn, load, run, commit) and the second turn of a session (history of 4 messages)
  against ``agent.run(history + prompt)`` (the same conversation passed by hand), with
  ``MemoryStore`` and ``SqliteStore`` (a file in a temporary directory; WAL, ``synchronous=NORMAL``).
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import anyio  # noqa: E402
from _workloads import EXPECTED, PROMPT, make_agent  # noqa: E402  (W1's run: the turns are W1's tool loop)

from agentactors import Agent, Message, Runtime, ToolCall  # noqa: E402
from agentactors.sessions import MemoryStore, SessionRecord, SqliteStore  # noqa: E402
from agentactors.sessions.registry import Sessions  # noqa: E402

__all__ = ["child_memory", "w11_latency", "w11_long_conversation", "w11_sessions"]

def _store(kind: str, directory: str) -> Any:
    return SqliteStore(Path(directory) / "sessions.db") if kind == "sqlite" else MemoryStore()


# --- memory (a child process) ----------------------------------------------------------------------


def _status(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024.0
    return 0.0


def _trim() -> None:
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: RSS then includes what the allocator keeps
        pass


async def _send_all(rt: Runtime, agent: Agent, store: Any, prefix: str, n: int, idle: float, workers: int) -> None:
    counter = iter(range(n))

    async def worker() -> None:
        for i in counter:
            result = await rt.session(agent, f"{prefix}{i}", store=store, idle_timeout=idle).send(PROMPT)
            if result.content != EXPECTED:
                raise RuntimeError(f"session {prefix}{i} answered {result.content!r}")

    async with anyio.create_task_group() as tg:
        for _ in range(min(workers, n)):
            tg.start_soon(worker)


async def _until_idle(rt: Runtime) -> None:
    registry = Sessions.of(rt)
    # Polled: a recorder to wait on would make every run of the measurement emit its events.
    while registry.stats()["active"]:  # noqa: ASYNC110
        await anyio.sleep(0.05)


def _db_size(directory: str) -> int:
    return sum(p.stat().st_size for p in Path(directory).glob("sessions.db*"))


def child_memory(store: str, sessions: int, workers: int = 1000) -> dict[str, Any]:
    """One store kind, ``sessions`` sessions: see the module docstring.  Prints one JSON line."""
    gc.collect()
    start_rss = _status("VmRSS")

    async def main() -> dict[str, Any]:
        with tempfile.TemporaryDirectory() as tmp:
            async with Runtime() as rt:
                agent = make_agent()
                kept = _store(store, tmp)
                # Warm-up (code paths, the connection, the allocator's arenas) and calibration.
                warm = min(1000, max(10, sessions // 100))
                await _send_all(rt, agent, kept, "cold-", warm, 0.2, workers)
                # Timed on a second batch: the first pays for cold code paths, and a calibration off by 100×
                # made the smoke run wait minutes for its sessions to go idle.
                t0 = time.perf_counter()
                await _send_all(rt, agent, kept, "warm-", warm, 0.2, workers)
                per_session = (time.perf_counter() - t0) / warm
                await _until_idle(rt)
                _trim()
                base_rss = _status("VmRSS")
                base_blocks = sys.getallocatedblocks()
                # None may deactivate before the last is sent its turn: all are active at the peak.
                idle = max(2.0, 1.5 * per_session * sessions + 2.0)
                t0 = time.perf_counter()
                await _send_all(rt, agent, kept, "user-", sessions, idle, workers)
                create_s = time.perf_counter() - t0
                stats = Sessions.of(rt).stats()
                gc.collect()
                active_rss = _status("VmRSS")
                await _until_idle(rt)
                _trim()
                idle_rss = _status("VmRSS")
                idle_blocks = sys.getallocatedblocks()
                db_bytes = _db_size(tmp) if store == "sqlite" else 0
                actors = rt.stats().actors
        return {
            "store": store,
            "sessions": sessions,
            "create_s": create_s,
            "turns_per_s": sessions / create_s,
            "active_at_peak": stats["active"],
            "peak_rss_growth_mb": (_status("VmHWM") - start_rss) / 2**20,
            "active_bytes_per_session": (active_rss - base_rss) / sessions,
            "idle_bytes_per_session": (idle_rss - base_rss) / sessions,
            "idle_blocks_per_session": (idle_blocks - base_blocks) / sessions,
            "actors_left": actors,
            "db_mb": db_bytes / 2**20,
        }

    return anyio.run(main)


def _child(store: str, sessions: int) -> dict[str, Any]:
    import subprocess

    cmd = [sys.executable, str(Path(__file__)), "memory", json.dumps({"store": store, "sessions": sessions})]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, check=False)
    if out.returncode != 0:
        return {"error": (out.stderr or out.stdout).strip().splitlines()[-1:] or ["failed"]}
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


# --- turn latency (in process) ---------------------------------------------------------------------


async def _latency_rep(n_memory: int, n_sqlite: int, rep: int) -> dict[str, float]:
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        async with Runtime() as rt:
            agent = make_agent()
            assert (await agent.run(PROMPT)).content == EXPECTED  # warm up
            first = await agent.run(PROMPT)
            history = first.messages
            stores = {"memory": MemoryStore(), "sqlite": SqliteStore(Path(tmp) / "sessions.db")}

            t0 = time.perf_counter()
            for _ in range(n_memory):
                await agent.run(PROMPT)
            out["agent.run"] = (time.perf_counter() - t0) / n_memory

            follow = (*history, Message.user(PROMPT))
            t0 = time.perf_counter()
            for _ in range(n_memory):
                await agent.run(follow)
            out["agent.run, history by hand"] = (time.perf_counter() - t0) / n_memory

            for kind, n in (("memory", n_memory), ("sqlite", n_sqlite)):
                store = stores[kind]
                sessions = [rt.session(agent, f"r{rep}-{kind}-{i}", store=store) for i in range(n)]
                await rt.session(agent, f"warm-{rep}-{kind}", store=store).send(PROMPT)
                t0 = time.perf_counter()
                for session in sessions:
                    await session.send(PROMPT)
                out[f"session first turn ({kind})"] = (time.perf_counter() - t0) / n
                t0 = time.perf_counter()
                for session in sessions:
                    result = await session.send(PROMPT)
                out[f"session second turn ({kind})"] = (time.perf_counter() - t0) / n
                if result.content != EXPECTED or len(sessions[-1].history) != 8:
                    raise RuntimeError(f"{kind}: a session answered {result.content!r}")
    return out


# --- a long conversation (in process) -----------------------------------------------------------------


def _turn_messages(i: int) -> tuple[Message, ...]:
    """One turn of W1's shape: the question, the tool call, its result, the answer."""
    call = ToolCall(f"c{i}", "lookup", {"order": i, "fields": ["status", "eta"]})
    return (
        Message.user(f"where is order {i}?"),
        Message.assistant("", [call]),
        Message.tool(call.id, f"order {i}: shipped, arrives tomorrow", name="lookup"),
        Message.assistant(f"Order {i} has shipped and arrives tomorrow."),
    )


def _record(key: str, history: tuple[Message, ...], i: int) -> SessionRecord:
    """The record a session's turn commits: the history plus the turn (``kept``: the history is unchanged)."""
    return SessionRecord(key, history + _turn_messages(i), 0, None, f"run-{i}", len(history))


async def _long_conversation(turns: int, samples: int) -> dict[str, float]:
    """A ``SqliteStore`` commit at turn ``turns`` beside the first commit of a new session, interleaved.

    The long session is grown to ``turns`` turns first; then ``samples`` pairs are timed, a commit of a new
    session (turn 1) and one more turn of the long one, one after the other — so a shared machine's load
    weighs on both alike and the ratio is the store's.
    """
    with tempfile.TemporaryDirectory() as tmp:
        async with SqliteStore(Path(tmp) / "sessions.db") as store:
            history: tuple[Message, ...] = ()
            version: int | None = None
            t0 = time.perf_counter()
            for i in range(turns):
                stored = await store.commit(_record("long", history, i), expected_version=version)
                history, version = stored.messages, stored.version
            grow_s = time.perf_counter() - t0
            first: list[float] = []
            late: list[float] = []
            for j in range(samples):
                record = _record(f"new-{j}", (), 0)
                t0 = time.perf_counter()
                await store.commit(record, expected_version=None)
                first.append(time.perf_counter() - t0)
                record = _record("long", history, turns + j)
                t0 = time.perf_counter()
                stored = await store.commit(record, expected_version=version)
                late.append(time.perf_counter() - t0)
                history, version = stored.messages, stored.version
            t0 = time.perf_counter()
            loaded = await store.load("long")
            load_s = time.perf_counter() - t0
            if loaded is None or loaded.messages != history:
                raise RuntimeError("the long session did not load back as committed")
    first_ms, late_ms = statistics.median(first) * 1e3, statistics.median(late) * 1e3
    return {"turns": turns, "messages": len(history), "grow_s": grow_s, "commit_turn_1_ms": first_ms,
            f"commit_turn_{turns}_ms": late_ms, "ratio": late_ms / first_ms, "load_ms": load_s * 1e3}


def w11_long_conversation(*, turns: int = 10_000, samples: int = 200) -> dict[str, Any]:
    """A commit's cost at turn 1 and at turn ``turns`` of one session (``SqliteStore``): flat, the goal ≤ 2×."""
    return anyio.run(_long_conversation, turns, samples)


def _summ(samples: list[float]) -> dict[str, float]:
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples), "n": len(samples)}


def w11_latency(*, reps: int, smoke: bool = False, backend: str = "asyncio") -> dict[str, Any]:
    """Turn latency alone (the module docstring), ``reps`` repetitions, each a runtime of its own on ``backend``."""
    n_memory, n_sqlite = (50, 20) if smoke else (2000, 500)
    samples: dict[str, list[float]] = {}
    for rep in range(reps):
        for name, value in anyio.run(_latency_rep, n_memory, n_sqlite, rep, backend=backend).items():
            samples.setdefault(name, []).append(value)
    latency = {name: _summ(values) for name, values in samples.items()}
    plain = latency["agent.run"]["median"]
    by_hand = latency["agent.run, history by hand"]["median"]
    for name, row in latency.items():
        row["vs_agent_run"] = row["median"] / plain
        if "second turn" in name:
            row["vs_history_by_hand"] = row["median"] / by_hand
    return {"turns": {"memory": n_memory, "sqlite": n_sqlite}, "latency": latency}


def w11_sessions(*, reps: int, smoke: bool) -> dict[str, Any]:
    sessions = 100 if smoke else 100_000
    timed = w11_latency(reps=reps, smoke=smoke)
    n_memory, n_sqlite, latency = timed["turns"]["memory"], timed["turns"]["sqlite"], timed["latency"]
    memory = {kind: _child(kind, sessions) for kind in ("sqlite", "memory")}
    long = w11_long_conversation(turns=200 if smoke else 10_000, samples=10 if smoke else 200)
    return {"sessions": sessions, "turns": {"memory": n_memory, "sqlite": n_sqlite}, "latency": latency,
            "memory": memory, "long_conversation": long}


if __name__ == "__main__":
    which, raw = sys.argv[1], json.loads(sys.argv[2])
    if which == "long":  # python benchmarks/_sessions.py long '{"turns": 10000}'
        print(json.dumps(w11_long_conversation(**raw)))
        raise SystemExit(0)
    if which == "latency":  # python benchmarks/_sessions.py latency '{"reps": 5, "backend": "trio"}'
        print(json.dumps(w11_latency(**raw)))
        raise SystemExit(0)
    if which != "memory":
        raise SystemExit(f"unknown measurement {which!r}")
    print(json.dumps(child_memory(**raw)))
    sys.stdout.flush()
    os._exit(0)  # skip the interpreter's teardown of what is left
