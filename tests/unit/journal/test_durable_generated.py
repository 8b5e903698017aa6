"""Generated durable programs (hypothesis): journaled runs crashed at a drawn point, recovered, replayed and forked.

Hypothesis draws a program — what a stateless scripted model answers at each step (parallel tool calls of tools that
charge a ledger with their idempotency key, raise, return a large or odd result, take a moment, are unknown or get
bad arguments, delegate to a child agent that charges too; then a text answer, an empty one or one holding a lone
surrogate included), the agent's ``max_steps`` and tool-result cap, how many runs go at once (one, or two whose
commits meet in the journal's group commit), where each run "crashes", where it is forked.  Each run is made whole
in a SQLite journal.  Then two kinds of crash:

* a dead process: a copy of the journal is cut back to what a crash at the drawn point leaves — the rows the run had
  committed before it (``docs/durability.md``, "What is recorded": a tool step's response before its calls run, its
  results once all are in, the answer with the end), a delegated child of the cut step cut too or left ended, the
  run ``running``, its lease free — and a fresh journal object and runtime (a restarted process) recover it;
* a process that goes on: another connection takes the journal file's write lock at a drawn model call or tool step
  of a live run, so its commits fail from there (its end too) — the run is left ``running`` — and the same runtime's
  ``recover()`` finishes it once the lock is gone ("Recovering in a process that keeps running").

What is checked is what ``docs/durability.md`` promises:

* recovery: the recovered run ends as the run that never crashed did — the same run id, content, messages, tool
  calls, steps, own usage, error — every committed tool call served (never run again), the calls of a tool step the
  crash cut run again with the same idempotency keys; a delegated child of the cut step that had ended served whole,
  one the crash cut going on with its own run id from its committed steps, one that never started run fresh; a
  second ``recover()`` finds nothing;
* replay: a finished run — and a recovered one, committed by two processes — replayed from its journal gives its
  result again (its ``children`` empty: no child runs again), asking no model and running no tool;
* fork at a drawn step: the steps before it served (their tools not run again), the rest live with the fork's
  agent under the fork's run id, its result the original's (the model is stateless), ``forked_from`` the original,
  the recording unchanged;
* storage: every run the journal holds (children too) loads back, ended.

No bug was found in the journal by it (over 2,000 examples a backend in the ``explore`` profile): the file stands as the
layer's regression net.  SQLite files and worker threads: the real clock (no tool sleeps long).  A longer hunt:
``DURABLE_EXAMPLES=500 HYPOTHESIS_PROFILE=explore``.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sqlite3
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agentactors import Agent, LLMResponse, RunResult, Runtime, ToolContext, tool
from agentactors.journal import SqliteJournal, fork, replay
from agentactors.journal.records import RecordedRun
from agentactors.messages import LLMRequest, ToolCall, Usage
from agentactors.providers.scripted import ScriptedProvider
from tests.support.journals import sql

SETTINGS = settings(
    max_examples=int(os.environ.get("DURABLE_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

BIG = 40_000  # characters of the ``big`` tool's result: over the cap when one is drawn

#: Every side-effecting attempt, by idempotency key (``charge``, ``fail`` and the child's ``charge``), per example.
LEDGER: list[str] = []


class Lock:
    """A crash in the process that goes on: at a drawn point (model call ``n`` answering, or a tool of step ``n``
    running) another connection takes the journal file's write lock, so every commit of the run from there fails
    (past ``busy_timeout``) — its end ``"raised"`` too — and nothing after that point is committed, as in a crash."""

    def __init__(self) -> None:
        self.db: str | None = None
        self.at: tuple[str, int] | None = None
        self.holder: sqlite3.Connection | None = None

    def maybe(self, kind: str, step: int | None) -> None:
        if self.db is not None and self.holder is None and self.at == (kind, step):
            self.holder = sqlite3.connect(self.db, isolation_level=None)
            self.holder.execute("BEGIN IMMEDIATE")

    def release(self) -> None:
        if self.holder is not None:
            self.holder.execute("ROLLBACK")
            self.holder.close()
        self.db, self.at, self.holder = None, None, None


LOCK = Lock()


# -- tools ------------------------------------------------------------------------------------------------


@tool
async def charge(ctx: ToolContext, cents: int) -> str:
    """Charge the card (the payment API deduplicates on the key)."""
    LEDGER.append(ctx.idempotency_key)
    if ctx.call_id.startswith("s"):  # the top-level run's calls (the child's is "k1")
        LOCK.maybe("tool", ctx.step)
    return f"charged {cents}"


@tool
async def fail(ctx: ToolContext, n: int) -> str:
    """Fails after its side effect."""
    LEDGER.append(ctx.idempotency_key)
    if ctx.call_id.startswith("s"):  # the top-level run's calls (the child's is "k1")
        LOCK.maybe("tool", ctx.step)
    raise ValueError(f"refused {n}")


@tool
async def big(n: int) -> str:
    """A long result."""
    return f"{n} " + "b" * BIG


ODD: list[Any] = [{"a": [1, {"b": None}], "ü": "✓"}, "lone \ud800 surrogate", math.nan, "", [1.5, "x"], 10**30]


@tool
async def odd(n: int) -> Any:
    """A value JSON may or may not carry as it is."""
    return ODD[n % len(ODD)]


@tool
async def nap(n: int) -> str:
    """Takes a moment (a parallel call finishes after the others)."""
    await anyio.sleep(0.002 * (n % 3))
    return f"rested {n}"


def _child(request: LLMRequest) -> Any:
    """The delegated agent: one charge, then its answer."""
    if not any(m.role == "tool" for m in request.messages):
        return LLMResponse(tool_calls=[ToolCall("k1", "charge", {"cents": 1})], usage=Usage(3, 2))
    return LLMResponse("child done", usage=Usage(3, 2))


CHILD_CALLS: list[int] = [0]


async def _child_counted(request: LLMRequest) -> Any:
    CHILD_CALLS[0] += 1
    return _child(request)


helper = Agent(ScriptedProvider(_child_counted, name="child"), name="helper", tools=[charge]).as_tool()
TOOLS: list[Any] = [charge, fail, big, odd, nap, helper]

def _args(name: str, n: int, bad: bool) -> dict[str, Any]:
    """A call's arguments, from its drawn number (``bad``: arguments its tool's schema refuses)."""
    if bad:
        return {"cents": "lots"} if name == "charge" else {"nope": n}
    if name == "helper":
        return {"input": f"help {n}"}
    if name == "nosuch":
        return {}
    return {"cents": n} if name == "charge" else {"n": n}


# -- the program ------------------------------------------------------------------------------------------

NAMES = ["charge", "charge", "fail", "big", "odd", "nap", "helper", "nosuch"]
calls = st.lists(st.tuples(st.sampled_from(NAMES), st.integers(0, 9), st.just(False)), min_size=1, max_size=3)
bad_calls = st.lists(st.tuples(st.sampled_from(NAMES), st.integers(0, 9), st.booleans()), min_size=1, max_size=3)
ANSWERS = ["Done.", "Fini ✓ é", "lone \ud800 answer", ""]


@dataclass
class Program:
    steps: list[list[tuple[str, int, bool]]]  # each step's parallel calls; then the answer
    answer: str
    max_steps: int
    cap: int | None
    runs: int  # runs at once in one runtime
    crashes: list[tuple[str, float]]  # per run: ("model" | "tool" | "none", where in the run: a fraction)
    child_cut: float  # where a child the crash cut inside its parent's tool step was itself cut
    fork_at: float
    lock: tuple[str, float] | None  # where the run "go 0" is cut in a process that goes on (Lock)


programs = st.builds(
    Program,
    steps=st.lists(st.one_of(calls, bad_calls), max_size=4),
    answer=st.sampled_from(ANSWERS),
    max_steps=st.integers(1, 6),
    cap=st.sampled_from([None, None, 500]),
    runs=st.integers(1, 2),
    crashes=st.lists(st.tuples(st.sampled_from(["model", "tool", "none"]), st.floats(0, 1)), min_size=2,
                     max_size=2),
    child_cut=st.floats(0, 1),
    fork_at=st.floats(0, 1),
    lock=st.none() | st.tuples(st.sampled_from(["model", "tool"]), st.floats(0, 1)),
)


class Model:
    """Stateless: step n (n - 1 assistant messages so far) answers ``program.steps[n - 1]``, then the answer — so a
    recovered run, a replay and a fork meet the same answers as the run that never crashed.  Counts its calls."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.calls = 0

    async def __call__(self, request: LLMRequest) -> Any:
        self.calls += 1
        n = sum(1 for m in request.messages if m.role == "assistant") + 1
        LOCK.maybe("model", self.calls)  # (only the locked run's model: its n-th call, a nudged empty answer's too)
        usage = Usage(10 * n, n)
        if n > len(self.program.steps):
            return LLMResponse(self.program.answer, usage=usage)
        made = [
            ToolCall(f"s{n}c{j}", name, _args(name, k, bad))
            for j, (name, k, bad) in enumerate(self.program.steps[n - 1])
        ]
        return LLMResponse(tool_calls=made, usage=usage)


def agent_of(program: Program, model: Model) -> Agent[Any]:
    return Agent(
        ScriptedProvider(model, name="scripted"), tools=TOOLS, name="payer", max_steps=program.max_steps,
        max_tool_result_chars=program.cap,
    )


# -- what a crash leaves ----------------------------------------------------------------------------------


def _steps_of(db: str, run_id: str) -> list[tuple[int, bool]]:
    """The run's step rows: (number, whether its results are in)."""
    return [(int(n), r is not None) for n, r in sql(
        db, "SELECT step, results FROM agentactors_steps WHERE run_id = ? ORDER BY step", run_id
    )]


def _children(db: str, run_id: str) -> list[tuple[str, str | None]]:
    """The runs ``run_id`` delegated to, with the parent's call that ran each (from their ``origin``)."""
    rows = sql(db, "SELECT run_id, origin FROM agentactors_runs WHERE parent_run_id = ? ORDER BY started", run_id)
    out = []
    for child, origin in rows:
        call = json.loads(origin).get("parent_call_id") if origin else None
        out.append((str(child), call))
    return out


def _reopen(db: str, run_id: str) -> None:
    sql(db, "UPDATE agentactors_runs SET status = 'running', ended = NULL, content = NULL, owner = NULL,"
            " lease_until = NULL WHERE run_id = ?", run_id)


def _drop(db: str, run_id: str) -> None:
    """The run and everything under it, as if it never started."""
    for child, _ in _children(db, run_id):
        _drop(db, child)
    sql(db, "DELETE FROM agentactors_steps WHERE run_id = ?", run_id)
    sql(db, "DELETE FROM agentactors_runs WHERE run_id = ?", run_id)


@dataclass
class Cut:
    """Where a run was cut: its model call ``step`` never answered (``kind == "model"``), or its tool step ``step``
    ran and its results were never committed (``"tool"``)."""

    kind: str
    step: int


def cut_run(db: str, run_id: str, kind: str, where: float, child_where: float) -> Cut | None:
    """Cut the committed run ``run_id`` back to what a crash at ``(kind, where)`` leaves: ``None`` if it has no such
    point (no tool step to cut, say)."""
    rows = _steps_of(db, run_id)
    if not rows:
        return None
    if kind == "tool":
        tool_steps = [n for n, done in rows if done]
        if not tool_steps:
            return None
        at = Cut("tool", tool_steps[min(int(where * len(tool_steps)), len(tool_steps) - 1)])
    else:
        at = Cut("model", rows[min(int(where * len(rows)), len(rows) - 1)][0])
    keep = at.step if at.kind == "tool" else at.step - 1
    calls_by_step = _calls_by_step(db, run_id)
    for child, call in _children(db, run_id):
        step = calls_by_step.get(call or "", 0)
        if step > keep or (step == keep and at.kind == "model"):
            _drop(db, child)
        elif step == at.step and at.kind == "tool" and child_where < 0.5:
            # The child itself was cut (it was still running when its parent's process died).
            cut_run(db, child, "model" if child_where < 0.25 else "tool", child_where * 4 % 1, 1.0)
    sql(db, "DELETE FROM agentactors_steps WHERE run_id = ? AND step > ?", run_id, keep)
    if at.kind == "tool":
        sql(db, "UPDATE agentactors_steps SET results = NULL WHERE run_id = ? AND step = ?", run_id, at.step)
    _reopen(db, run_id)
    return at


def _calls_by_step(db: str, run_id: str) -> dict[str, int]:
    """The run's tool calls' ids, by the step whose response asked for them."""
    out: dict[str, int] = {}
    for n, response in sql(db, "SELECT step, response FROM agentactors_steps WHERE run_id = ?", run_id):
        for call in json.loads(response).get("tool_calls") or ():
            out[call["id"]] = int(n)
    return out


# -- the checks -------------------------------------------------------------------------------------------


def same_result(got: RunResult[Any], want: RunResult[Any], what: str) -> None:
    """What the docs promise a recovered run (or a replay) gives back: the run that never crashed's result."""
    assert got.content == want.content, what
    assert got.messages == want.messages, what
    assert (got.tool_calls, got.steps, got.bounded, got.cancelled) == (
        want.tool_calls, want.steps, want.bounded, want.cancelled,
    ), what
    assert repr(got.error) == repr(want.error), what


def own_usage(result: RunResult[Any]) -> Usage:
    """The usage of the run's own model calls: its ``usage`` less its children's (``docs/loop.md``: summed, children's
    included) — a replay runs no child again (its ``children`` is empty), a recovery only those it re-ran."""
    children = sum((c.usage for c in result.children), Usage())
    return Usage(result.usage.input_tokens - children.input_tokens, result.usage.output_tokens - children.output_tokens)


def _top_keys(run_id: str) -> Counter[str]:
    return Counter(k for k in LEDGER if k.startswith(f"{run_id}:"))


def _step_of_key(key: str) -> int:
    return int(key.rsplit(":", 1)[1].split("c")[0][1:])


async def run_all(program: Program, agent: Agent[Any]) -> list[RunResult[Any]]:
    results: list[RunResult[Any] | None] = [None] * program.runs

    async def one(i: int) -> None:
        results[i] = await agent.run(f"go {i}")

    async with anyio.create_task_group() as tg:
        for i in range(program.runs):
            tg.start_soon(one, i)
    return [r for r in results if r is not None]


async def check_stored(journal: SqliteJournal, db: str) -> dict[str, RecordedRun]:
    """Every run the journal holds loads back, ended; by run id."""
    loaded = {}
    for (run_id,) in sql(db, "SELECT run_id FROM agentactors_runs"):
        recorded = await journal.load_run(str(run_id))
        assert recorded.finished, recorded
        loaded[str(run_id)] = recorded
    return loaded


async def check_replay(journal: SqliteJournal, program: Program, result: RunResult[Any]) -> None:
    model = Model(program)
    calls_before, ledger_before = CHILD_CALLS[0], list(LEDGER)
    again = await replay(journal, result.run_id or "", agent=agent_of(program, model))
    assert model.calls == 0 and CHILD_CALLS[0] == calls_before and ledger_before == LEDGER
    same_result(again, result, "replay")
    assert again.children == () and again.usage == own_usage(result)


async def check_fork(journal: SqliteJournal, db: str, program: Program, result: RunResult[Any]) -> None:
    recorded = await journal.load_run(result.run_id or "")
    at = 1 + min(int(program.fork_at * len(recorded.steps)), len(recorded.steps) - 1)
    rows_before = sql(db, "SELECT * FROM agentactors_steps ORDER BY run_id, step")
    model = Model(program)
    LEDGER.clear()
    forked = await fork(journal, result.run_id or "", at, agent=agent_of(program, model))
    assert forked.forked_from == result.run_id and forked.run_id != result.run_id
    assert model.calls == len(recorded.steps) - at + 1  # the steps from ``at`` on, live; none before
    same_result(forked, result, f"fork at {at}")
    # The reused steps' tools did not run again; the live ones ran under the fork's own run id.
    want = Counter(
        f"{forked.run_id}:s{n}c{j}"
        for n, step in enumerate(program.steps[: recorded.steps[-1].number], 1) if n >= at
        for j, (name, _, bad) in enumerate(step) if name in ("charge", "fail") and not bad
    )
    assert _top_keys(forked.run_id or "") == want
    assert not [k for k in LEDGER if k.startswith(f"{result.run_id}:")]
    assert sql(db, "SELECT * FROM agentactors_steps ORDER BY run_id, step") == rows_before  # never changed


@dataclass
class ChildLeft:
    """A delegated run the crash left in the journal: its id, whether it had ended, its step rows."""

    run_id: str
    ended: bool
    rows: list[tuple[int, bool]]


def _children_left(db: str, run_id: str, at: Cut) -> list[ChildLeft]:
    """The children of the step the crash cut (those of the steps before it are served as their tool results)."""
    status = dict(sql(db, "SELECT run_id, status FROM agentactors_runs"))
    steps = _calls_by_step(db, run_id)
    return [
        ChildLeft(c, status[c] != "running", _steps_of(db, c))
        for c, call in _children(db, run_id) if steps.get(call or "") == at.step
    ]


def check_children(
    program: Program, run_id: str, at: Cut, left: list[ChildLeft], got: RunResult[Any], want: RunResult[Any]
) -> None:
    """The recovered run's delegated children (docs/durability.md, "A delegated run"): one that had ended is served
    whole (nothing runs), one the crash cut goes on with its own run id from its committed steps (its cut charge again
    with the same key, a committed one never), and one that never started runs fresh."""
    ran = {c.run_id for c in got.children} - {c.run_id for c in left}  # the children that started fresh
    child_keys = Counter(k for k in LEDGER if k.split(":")[0] in ran)
    again = Counter(k for k in LEDGER if k.split(":")[0] in {c.run_id for c in left})
    want_again = Counter(f"{c.run_id}:k1" for c in left if not c.ended and not (c.rows and c.rows[0][1]))
    assert again == want_again, (at, again, want_again, left)
    helpers = sum(
        1 for n, step in enumerate(program.steps[: len(want.messages)], 1) if n >= at.step and n <= want.steps
        for name, _, bad in step if name == "helper" and not bad
    )
    fresh = helpers - len(left)
    assert child_keys == Counter(f"{c}:k1" for c in ran) and len(ran) == fresh, (at, child_keys, fresh)
    assert len(got.children) == helpers and all(c.content == "child done" for c in got.children), got.children
    assert {c.run_id for c in left} <= {c.run_id for c in got.children}  # the cut ones kept their run ids


async def program_main(program: Program, folder: Path) -> None:
    LEDGER.clear()
    CHILD_CALLS[0] = 0
    db = str(folder / "runs.db")
    async with SqliteJournal(db) as journal, Runtime(journal=journal) as rt:
        results = await run_all(program, agent_of(program, Model(program)).bind(rt))
        whole = Counter(LEDGER)
        assert all(n == 1 for n in whole.values()), whole  # a live run runs each call once
        stored = await check_stored(journal, db)
        for result in results:
            recorded = stored[result.run_id or ""]
            assert recorded.status == "finished" and recorded.agent == "payer"
            await check_replay(journal, program, result)
            await check_fork(journal, db, program, result)
    # -- crash each run at its drawn point, in a copy, and recover it in a fresh process ------------------
    crashed = str(folder / "crashed.db")
    shutil.copyfile(db, crashed)
    cuts: dict[str, Cut] = {}
    children_before = {r.run_id or "": _children(crashed, r.run_id or "") for r in results}
    for result, (kind, where) in zip(results, program.crashes, strict=False):
        if kind != "none":
            at = cut_run(crashed, result.run_id or "", kind, where, program.child_cut)
            if at is not None:
                cuts[result.run_id or ""] = at
    for at in cuts.values():
        event(f"cut: {at.kind}")
    left = {run_id: _children_left(crashed, run_id, at) for run_id, at in cuts.items()}
    event(f"children: {sum(len(c) for c in children_before.values())}")
    LEDGER.clear()
    model = Model(program)
    async with SqliteJournal(crashed) as journal, Runtime(journal=journal) as rt:
        agent = agent_of(program, model).bind(rt)
        assert sorted(r.run_id for r in await journal.unfinished()) == sorted(cuts)
        recovered = {r.run_id or "": r for r in await rt.recover()}
        assert sorted(recovered) == sorted(cuts)
        assert await rt.recover() == [] and await journal.unfinished() == []
        await check_stored(journal, crashed)
        assert agent.name == "payer"
        recovered_keys = list(LEDGER)
        for result in recovered.values():  # a run committed by two processes reads back as one
            await check_replay(journal, program, result)
            await check_fork(journal, crashed, program, result)
        LEDGER[:] = recovered_keys
    by_id = {r.run_id or "": r for r in results}
    for run_id, at in cuts.items():
        want, got = by_id[run_id], recovered[run_id]
        same_result(got, want, f"recovered after a crash at {at}")
        assert own_usage(got) == own_usage(want), (at, got.usage, want.usage)
        # Its tools: every committed call served; the calls from the cut step on run (again), with the same keys.
        want_keys = Counter(k for k in whole if k.startswith(f"{run_id}:") and _step_of_key(k) >= at.step)
        assert _top_keys(run_id) == want_keys, (at, _top_keys(run_id), want_keys)
        check_children(program, run_id, at, left[run_id], got, want)
    if program.lock is not None:
        await check_locked(program, folder, by_id[results[0].run_id or ""], whole)


def _by_call(keys: Counter[str], run_id: str) -> Counter[str]:
    return Counter({k.split(":", 1)[1]: n for k, n in keys.items() if k.startswith(f"{run_id}:")})


async def check_locked(program: Program, folder: Path, whole: RunResult[Any], whole_keys: Counter[str]) -> None:
    """The run "go 0" cut in a process that goes on (:class:`Lock`), then recovered by that process's journal."""
    assert program.lock is not None
    kind, where = program.lock
    ran = [n for n in range(1, whole.steps + 1)]
    if kind == "tool":
        ran = [n for n in ran if n <= len(program.steps)
               and any(name in ("charge", "fail") and not bad for name, _, bad in program.steps[n - 1])]
    if not ran:
        return
    step = ran[min(int(where * len(ran)), len(ran) - 1)]
    db = str(folder / "locked.db")
    LEDGER.clear()
    LOCK.db, LOCK.at = db, (kind, step)
    async with SqliteJournal(db, busy_timeout=0.02) as journal, Runtime(journal=journal) as rt:
        agent = agent_of(program, Model(program)).bind(rt)
        failure: Exception | None = None
        try:
            try:
                await agent.run("go 0")
            except Exception as exc:  # its commit failed: SqliteJournalError, "database is locked"
                failure = exc
            assert LOCK.holder is not None, (kind, step)
        finally:
            LOCK.release()
        assert failure is None or "locked" in repr(failure) + repr(failure.__cause__), failure
        event(f"locked run: {'returned' if failure is None else 'raised'}")
        (run_id,) = (r for (r,) in sql(db, "SELECT run_id FROM agentactors_runs WHERE parent_run_id IS NULL"))
        assert sql(db, "SELECT status FROM agentactors_runs WHERE run_id = ?", run_id) == [("running",)]
        (got,) = await rt.recover()
        assert await rt.recover() == []
        await check_stored(journal, db)
        keys = list(LEDGER)
        await check_replay(journal, program, got)
        await check_fork(journal, db, program, got)
        LEDGER[:] = keys
    same_result(got, whole, f"recovered after a lock at {kind}:{step}")
    assert own_usage(got) == own_usage(whole)
    want = _by_call(whole_keys, whole.run_id or "")
    if kind == "tool":
        want.update(k for k in list(want) if _step_of_key(f"x:{k}") == step)
    assert _by_call(Counter(LEDGER), run_id) == want, (kind, step)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@SETTINGS
@given(program=programs)
def test_a_generated_durable_program_keeps_the_documented_promises(backend: str, program: Program) -> None:
    with tempfile.TemporaryDirectory(prefix="durable-") as folder:
        anyio.run(program_main, program, Path(folder), backend=backend)
