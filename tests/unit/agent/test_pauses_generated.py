"""Generated approval programs (hypothesis): runs that pause for a person's decision, and what is done with the pause.

An agent is drawn with tools that run at once (``lookup``), always need approval (``refund``, which takes a virtual
second), or need it by a policy on their arguments (``transfer`` of 50 or more); the policy denies any call of 13;
the model's steps make drawn calls in parallel (known tools or not, arguments valid or not) and then answer.  At each
pause a drawn operation goes on: first some refused resumes (an unknown id, a missing decision, decisions that are no
mapping or of another type, the decisions of another run's pause, an agent that did not pause), then a resume — by
``agent.resume`` or ``resume_stream``, with a pending call's arguments edited (validly or not), by an agent that lost
``refund`` since, cancelled after some virtual time, and maybe resumed twice.  The same program runs through a
session (``MemoryStore``, ``SqliteStore``) and through a SQLite journal (the pause kept as plain data and resumed in
a fresh runtime on the same file, as after a restart), and is compared with the in-memory path.

What is checked is what docs/agents.md, docs/sessions.md, docs/durability.md and docs/costs.md promise: a pause
lists exactly the calls waiting, with their reasons; the calls that needed no decision ran once and never again; a
refused resume runs nothing and claims nothing; a resume runs each approved call once (with its edited arguments,
checked like the model's), answers each denied one with the person's reason, and feeds every result back in call
order; a second resume of a pause raises ``PauseConsumedError``, as does one after a cancelled resume; the final
result's messages, steps, usage and tool calls count the paused part, its cost only the resumed part; sessions and
journals keep the history the in-memory path makes.
"""

from __future__ import annotations

import math
import os
import pickle
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentactors import Agent, LLMResponse, NeedsApproval, RunResult, Runtime, ScriptedProvider, ToolContext, tool
from agentactors.errors import PauseConsumedError, SessionConflictError, SessionPausedError
from agentactors.journal import SqliteJournal
from agentactors.loop.pause import MAX_REASON_CHARS, PausedRun, bounded_reason, denial_reason
from agentactors.messages import LLMRequest, Message, ToolCall, Usage
from agentactors.pricing import Price, clear_prices, set_price
from agentactors.sessions import MemoryStore, SqliteStore
from agentactors.testing import virtual_backends
from agentactors.tools.approval import decision_denied_text

SETTINGS = settings(
    max_examples=int(os.environ.get("GENERATED_PAUSES_EXAMPLES", "80")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

PRICE = Price(2.5, 10.0)
REFUND_SECONDS = 1.0  # virtual: a resume can be cancelled while an approved refund runs
UNLUCKY = 13  # the policy denies any call of it
BIG = 50  # a transfer of this much or more needs approval

#: Whether refunds take their virtual second: not on the real clock (the programs over SQLite files).
SLOW_REFUNDS = True

#: Every tool call that ran: (tool, call id, n) — cleared per example.
RAN: list[tuple[str, str, Any]] = []


# -- the agent -------------------------------------------------------------------------------------------


@tool
async def lookup(n: int, ctx: ToolContext) -> str:
    """Look a number up."""
    RAN.append(("lookup", ctx.call_id, n))
    return f"looked {n}"


@tool(requires_approval=True)
async def refund(n: int, ctx: ToolContext) -> str:
    """Refund an amount, once a person said yes."""
    await anyio.sleep(REFUND_SECONDS if SLOW_REFUNDS else 0)
    RAN.append(("refund", ctx.call_id, n))
    return f"refunded {n}"


@tool
async def transfer(n: int, ctx: ToolContext) -> str:
    """Move an amount; a big one needs a person's yes."""
    RAN.append(("transfer", ctx.call_id, n))
    return f"moved {n}"


def policy(call: ToolCall, ctx: ToolContext) -> str | NeedsApproval | None:
    n = call.arguments.get("n")
    if n == UNLUCKY:
        return f"unlucky {UNLUCKY}"
    if call.name == "transfer" and isinstance(n, int) and n >= BIG:
        return NeedsApproval(f"transfer of {n}")
    return None


@dataclass(frozen=True)
class CallSpec:
    tool: str  # lookup | refund | transfer | ghost (no such tool)
    n: int
    bad: bool  # arguments that do not fit (n a string)

    def arguments(self) -> dict[str, Any]:
        return {"n": "many" if self.bad else self.n}


def usage_at(k: int) -> Usage:
    """What the model's step ``k`` (0-based) used."""
    return Usage(100 + k, 10 + k)


def price_of(usage: Usage) -> float:
    return (usage.input_tokens * PRICE.input + usage.output_tokens * PRICE.output) / 1_000_000


def call_id(tag: str, k: int, j: int) -> str:
    return f"{tag}-{k}-{j}"


def model_of(steps: list[list[CallSpec]]) -> Any:
    def model(request: LLMRequest) -> LLMResponse:
        tag = next(m.content for m in request.messages if m.role == "user")
        k = sum(1 for m in request.messages if m.role == "assistant")
        calls = tuple(
            ToolCall(call_id(tag, k, j), c.tool, c.arguments()) for j, c in enumerate(steps[k])
        ) if k < len(steps) else ()
        text = "" if calls else f"done after {k} steps"
        return LLMResponse(text, tool_calls=calls, usage=usage_at(k), provider="openai", model="gpt-4o")

    return model


def agent_of(plan: Plan, *, name: str = "desk", without_refund: bool = False) -> Agent[str]:
    tools = [lookup, transfer] if without_refund else [lookup, refund, transfer]
    return Agent(ScriptedProvider(model_of(plan.steps)), name=name, tools=tools, tool_policy=policy)


# -- the plan --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Op:
    """What is done with one pause."""

    refusals: tuple[str, ...]
    decisions: tuple[tuple[str, str], ...]  # per pending call, cycled: ("approve" | "deny" | "false", reason)
    via: str  # resume | stream | changed (an agent without refund)
    edit: str | None  # None | "valid" | "invalid": the first approved call's arguments edited
    cancel_after: float | None
    twice: bool


@dataclass(frozen=True)
class Plan:
    steps: list[list[CallSpec]]
    ops: list[Op]
    mode: str  # memory | session-memory | session-sqlite | journal


call_specs = st.builds(
    CallSpec,
    tool=st.sampled_from(["lookup", "refund", "transfer", "transfer", "refund", "ghost"]),
    n=st.sampled_from([1, 2, UNLUCKY, BIG, 70]),
    bad=st.sampled_from([False, False, False, True]),
)
decisions = st.one_of(
    st.just(("approve", "")),
    st.tuples(st.just("deny"), st.sampled_from(["too much", "", "  no\x07 way\n", "x" * 2100])),
    st.just(("false", "")),
)
REFUSALS = ["unknown", "missing", "not-a-mapping", "bad-value", "other-agent", "other-run"]


@st.composite
def ops(draw: st.DrawFn, mode: str) -> Op:
    plain = mode == "memory"
    return Op(
        refusals=tuple(draw(st.lists(st.sampled_from(REFUSALS if plain else REFUSALS[:4]), max_size=2))),
        decisions=tuple(draw(st.lists(decisions, min_size=1, max_size=4))),
        via=draw(st.sampled_from(["resume", "stream", "changed"])) if plain else "resume",
        edit=draw(st.sampled_from([None, None, "valid", "invalid"])) if plain else None,
        cancel_after=draw(st.sampled_from([None, None, None, 0.0, 0.5, 1.5])) if mode in VIRTUAL else None,
        twice=draw(st.booleans()),
    )


#: The modes with no real I/O, run on virtual time; the others keep SQLite files (worker threads): the real clock.
VIRTUAL = ("memory", "session-memory")


@st.composite
def plans(draw: st.DrawFn, modes: tuple[str, ...]) -> Plan:
    mode = draw(st.sampled_from(modes))
    steps = draw(st.lists(st.lists(call_specs, min_size=1, max_size=4), min_size=1, max_size=3))
    return Plan(steps, draw(st.lists(ops(mode), min_size=1, max_size=3)), mode)


# -- what a pause must be --------------------------------------------------------------------------------


def known(spec: CallSpec, tools: set[str]) -> bool:
    return spec.tool in tools and not spec.bad and spec.n != UNLUCKY


def waits(spec: CallSpec, tools: set[str]) -> bool:
    """Whether a call of ``spec`` waits for a person, with the agent's ``tools``."""
    return known(spec, tools) and (spec.tool == "refund" or (spec.tool == "transfer" and spec.n >= BIG))


def runs_at_once(spec: CallSpec, tools: set[str]) -> bool:
    return known(spec, tools) and not waits(spec, tools)


def reason_of(spec: CallSpec) -> str:
    return "the tool requires approval" if spec.tool == "refund" else f"transfer of {spec.n}"


def output_of(name: str, n: Any) -> str:
    return {"lookup": f"looked {n}", "refund": f"refunded {n}", "transfer": f"moved {n}"}[name]


def ran_ids(tag: str) -> Counter[str]:
    return Counter(cid for _, cid, _ in RAN if cid.startswith(f"{tag}-"))


def check_pause(plan: Plan, tag: str, paused: RunResult[Any], tools: set[str]) -> int:
    """The pause lists exactly the calls waiting, with their reasons; the step's other runnable calls ran once.
    Returns the paused step (0-based)."""
    assert paused.paused and not paused.ok
    state = paused.resume_state
    assert isinstance(state, PausedRun)
    k = sum(1 for m in state.messages if m.role == "assistant") - 1
    specs = plan.steps[k]
    assert [c.id for c in state.calls] == [call_id(tag, k, j) for j in range(len(specs))]
    expected = [call_id(tag, k, j) for j, s in enumerate(specs) if waits(s, tools)]
    assert [c.id for c in state.pending] == [c.id for c in paused.pending_approvals] == expected
    assert dict(state.reasons) == {call_id(tag, k, j): reason_of(s) for j, s in enumerate(specs) if waits(s, tools)}
    ran = ran_ids(tag)
    for j, s in enumerate(specs):
        assert ran[call_id(tag, k, j)] == (1 if runs_at_once(s, tools) else 0), (s, RAN)
    assert paused.messages == state.messages and paused.messages[-1].role == "assistant"
    assert paused.steps == k + 1 and state.step == k + 1
    assert paused.usage == sum((usage_at(i) for i in range(k + 1)), Usage())
    return k


def decided(op: Op, state: PausedRun) -> dict[str, bool | str]:
    out: dict[str, bool | str] = {}
    for i, call in enumerate(state.pending):
        kind, reason = op.decisions[i % len(op.decisions)]
        out[call.id] = True if kind == "approve" else False if kind == "false" else reason
    return out


def edited(state: PausedRun, cid: str, arguments: dict[str, Any]) -> PausedRun:
    """``state`` with the call ``cid`` made with ``arguments`` wherever the pause holds it."""

    def one(call: ToolCall) -> ToolCall:
        return attrs.evolve(call, arguments=arguments) if call.id == cid else call

    last = state.messages[-1]
    messages = (*state.messages[:-1], attrs.evolve(last, tool_calls=tuple(one(c) for c in last.tool_calls)))
    return attrs.evolve(
        state, messages=messages, calls=tuple(one(c) for c in state.calls),
        pending=tuple(one(c) for c in state.pending), tool_calls=tuple(one(c) for c in state.tool_calls),
    )


def check_resumed_step(
    state: PausedRun, decisions: dict[str, bool | str], result: RunResult[Any], tools: set[str],
    edits: dict[str, Any], before: Counter[str], tag: str,
) -> None:
    """The paused step's results went back in call order: the ones that ran before, the approved calls' outputs
    (edited arguments checked as the model's), the person's reasons for the denied ones; each approved call ran
    once, nothing of the step ran again."""
    base = len(state.messages)
    assert result.messages[:base] == state.messages
    fed = result.messages[base:base + len(state.calls)]
    assert [m.role for m in fed] == ["tool"] * len(state.calls)
    assert [m.tool_call_id for m in fed] == [c.id for c in state.calls]
    earlier = {r.call_id: r.content for r in state.results}
    after = ran_ids(tag)
    for call, message in zip(state.calls, fed, strict=True):
        if call.id in earlier:  # answered before the pause: not run again
            assert same_output(message.content, earlier[call.id])
            assert after[call.id] == before[call.id]
            continue
        decision = decisions[call.id]
        n = edits.get(call.id, call.arguments.get("n"))
        if call.name not in tools:  # a tool gone since the pause: answered as the model's call of it would be
            assert message.content.startswith(f"Invalid call: there is no tool named '{call.name}'")
            assert after[call.id] == 0
        elif decision is not True:
            reason = denial_reason("" if decision is False else decision)
            assert same_output(message.content, decision_denied_text(call.name, reason))
            assert after[call.id] == 0
        elif not isinstance(n, int):
            assert message.content.startswith(f"Invalid arguments for tool '{call.name}'")
            assert after[call.id] == 0
        else:
            assert same_output(message.content, output_of(call.name, n))
            assert after[call.id] == 1
            assert (call.name, call.id, n) in RAN


def same_output(content: str, output: str) -> bool:
    """``content`` is the tool's ``output`` (with the loop's note on a call repeated with the same arguments)."""
    return content == output or content.startswith(f"{output}\n\nNote: this is the same result as an earlier call")


def check_totals(prefix: tuple[Message, ...], result: RunResult[Any], resumed_from_step: int) -> None:
    """Steps, usage and calls count the paused part; the cost counts from the resume (docs/costs.md)."""
    assert result.messages[:len(prefix)] == prefix
    made = [m for m in result.messages if m.role == "assistant"]
    assert result.steps == len(made)
    assert list(result.tool_calls) == [c for m in made for c in m.tool_calls]
    assert result.usage == sum((usage_at(i) for i in range(result.steps)), Usage())
    assert result.cost is not None
    own = sum(price_of(usage_at(i)) for i in range(resumed_from_step, result.steps))
    assert math.isclose(result.cost.total, own, rel_tol=1e-9, abs_tol=1e-12), (result.cost, own)


# -- the drives ------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What a program ended with, to compare the paths."""

    messages: tuple[Message, ...]
    paused: bool
    steps: int


async def refused(kind: str, agent: Agent[str], state: PausedRun, good: dict[str, bool | str], other: PausedRun | None,
                  plan: Plan) -> None:
    """A refused resume: the documented typed error, nothing ran, nothing claimed."""
    before = list(RAN)
    bad: Any
    error: type[Exception] = ValueError
    who = agent
    if kind == "unknown":
        bad = {**good, "no-such-call": True}
    elif kind == "missing":
        bad = dict(list(good.items())[1:])
    elif kind == "not-a-mapping":
        bad, error = [*good.items(), *good.items()], TypeError  # pairs, each twice
    elif kind == "bad-value":
        bad, error = {k: 1 for k in good}, TypeError
    elif kind == "other-agent":
        bad, who = good, agent_of(plan, name="elsewhere")
    else:
        assert other is not None
        bad = {c.id: True for c in other.pending}
    with pytest.raises(error):
        await who.resume(state, bad)
    assert before == RAN


async def drive_memory(plan: Plan, tag: str) -> Outcome:
    agent = agent_of(plan)
    tools = {"lookup", "refund", "transfer"}
    other: PausedRun | None = None
    async with Runtime():
        result = await agent.run(tag)
        prefix = result.messages
        if any(r in op.refusals for op in plan.ops for r in ("other-run",)):
            mirror = await agent.run(f"{tag}x")
            other = mirror.resume_state
        for op in plan.ops:
            if not result.paused:
                break
            check_pause(plan, tag, result, tools)
            state = result.resume_state
            assert state is not None
            good = decided(op, state)
            for kind in op.refusals:
                if kind == "other-run" and other is None:
                    continue
                await refused(kind, agent, state, good, other, plan)
            edits: dict[str, Any] = {}
            used = state
            approved = [c for c in state.pending if good[c.id] is True]
            if op.edit is not None and approved:
                n: Any = approved[0].arguments["n"] + 1 if op.edit == "valid" else "many"
                edits[approved[0].id] = n
                used = edited(state, approved[0].id, {"n": n})
                prefix = used.messages[:len(prefix)]
            if op.via == "changed":
                agent = agent_of(plan, without_refund=True)
                tools = {"lookup", "transfer"}
            before = ran_ids(tag)
            resumed: RunResult[Any] | None = None
            with anyio.move_on_after(math.inf if op.cancel_after is None else op.cancel_after):
                if op.via == "stream":
                    async with agent.resume_stream(used, good) as run:
                        async for _ in run:
                            pass
                    resumed = await run.wait()
                else:
                    resumed = await agent.resume(used, good)
            again = list(RAN)
            if resumed is None:
                # Cancelled: before its run started (the pause given back, nothing ran) or after (consumed: an
                # approved call ran at most once).
                try:
                    resumed = await agent.resume(used, good)
                except PauseConsumedError:
                    assert again == RAN and all(v == 1 for v in ran_ids(tag).values())
                    return Outcome(result.messages, True, -1)
                assert again == [r for r in RAN if r in again][:len(again)] and ran_ids(tag) - before == Counter(
                    c.id for c in used.pending if good[c.id] is True and c.name in tools
                    and isinstance(edits.get(c.id, c.arguments.get("n")), int)
                ), "a pause given back after a cancelled resume, but calls had run"
                again = list(RAN)
            if op.twice:  # a pause goes on once
                with pytest.raises(PauseConsumedError):
                    await agent.resume(state, {c.id: True for c in state.pending})
                assert again == RAN
            check_resumed_step(used, good, resumed, tools, edits, before, tag)
            result = resumed
            check_totals(prefix, result, state.step)
        if result.paused:
            check_pause(plan, tag, result, tools)
        assert all(v == 1 for v in ran_ids(tag).values()), RAN
        return Outcome(result.messages, result.paused, result.steps)
    raise AssertionError("unreachable: the runtime's block returns")  # (its exit could swallow, for mypy)


async def drive_session(plan: Plan, tag: str, store: Any) -> Outcome:
    agent = agent_of(plan)
    tools = {"lookup", "refund", "transfer"}
    async with Runtime() as rt:
        session = rt.session(agent, "k", store=store)
        result = await session.send(tag)
        first = result
        for op in plan.ops:
            if not result.paused:
                break
            check_pause(plan, tag, result, tools)
            state = result.resume_state
            assert state is not None and session.paused
            assert session.pending_approvals == result.pending_approvals
            with pytest.raises(SessionPausedError):
                await session.send("anything")
            good = decided(op, state)
            version = session.version
            for kind in op.refusals:
                before = list(RAN)
                bad: Any = {
                    "unknown": {**good, "no-such-call": True},
                    "missing": dict(list(good.items())[1:]),
                    "not-a-mapping": [*good.items(), *good.items()],
                    "bad-value": {k: 1 for k in good},
                }[kind]
                with pytest.raises(ValueError if kind in ("unknown", "missing") else TypeError):
                    await session.resolve(bad)
                assert before == RAN and session.paused and session.version == version
            before_ids = ran_ids(tag)
            history = session.history
            resumed: RunResult[Any] | None = None
            with anyio.move_on_after(math.inf if op.cancel_after is None else op.cancel_after):
                resumed = await session.resolve(good)
            after = list(RAN)
            if resumed is None and not still_paused(session):
                # Cancelled after the claim: consumed, the history as before the paused turn.
                assert session.history == history and all(v == 1 for v in ran_ids(tag).values())
                with pytest.raises(SessionConflictError):
                    await session.resolve({c.id: True for c in state.pending})
                assert after == RAN
                return Outcome((), True, -1)
            if resumed is None:  # cancelled before the claim: nothing ran, the pause is there to resolve
                assert ran_ids(tag) == before_ids and session.version == version
                resumed = await session.resolve(good)
                after = list(RAN)
            if op.twice:  # the pause it resolved is gone (a new one's calls are others)
                with pytest.raises(ValueError if resumed.paused else SessionConflictError):
                    await session.resolve({c.id: True for c in state.pending})
                assert after == RAN
            check_resumed_step(state, good, resumed, tools, {}, before_ids, tag)
            check_totals(first.messages, resumed, state.step)
            result = resumed
        assert all(v == 1 for v in ran_ids(tag).values()), RAN
        if result.paused:
            check_pause(plan, tag, result, tools)
            assert session.paused and session.history == history_before_pause(result)
            return Outcome(result.messages, True, result.steps)
        assert session.history == result.messages and not session.paused
        return Outcome(result.messages, False, result.steps)
    raise AssertionError("unreachable: the runtime's block returns")  # (its exit could swallow, for mypy)


def still_paused(session: Any) -> bool:
    """Whether ``session`` shows a pause now (read afresh: not the value an earlier ``assert`` narrowed)."""
    return bool(session.paused)


def history_before_pause(paused: RunResult[Any]) -> tuple[Message, ...]:
    """A session's history while a turn is paused: the conversation before the turn's prompt."""
    first_user = next(i for i, m in enumerate(paused.messages) if m.role == "user")
    return paused.messages[:first_user]


async def drive_journal(plan: Plan, tag: str, where: Path) -> Outcome:
    agent = agent_of(plan)
    tools = {"lookup", "refund", "transfer"}
    path = where / "runs.db"
    async with SqliteJournal(path) as journal, Runtime(journal=journal):
        result = await agent.run(tag)
    first = result
    for op in plan.ops:
        if not result.paused:
            break
        check_pause(plan, tag, result, tools)
        parked = pickle.dumps(result.resume_state)  # kept as plain data across the restart
        state = pickle.loads(parked)
        good = decided(op, state)
        before = ran_ids(tag)
        async with SqliteJournal(path) as journal, Runtime(journal=journal):  # a fresh runtime, the same file
            for kind in op.refusals:
                await refused(kind, agent, state, good, None, plan)
            resumed = await agent.resume(state, good)
            if op.twice:
                with pytest.raises(PauseConsumedError):
                    await agent.resume(pickle.loads(parked), good)
            paused_run = await journal.load_run(state.run_id or "")
            recorded = await journal.load_run(resumed.run_id or "")
        check_resumed_step(state, good, resumed, tools, {}, before, tag)
        check_totals(first.messages, resumed, state.step)
        assert paused_run.status == "paused"
        assert recorded.resume is not None and recorded.resume[0].run_id == state.run_id
        assert dict(recorded.resume[1]) == {
            k: v if v is True else denial_reason("" if v is False else v) for k, v in good.items()
        }
        assert recorded.status == ("paused" if resumed.paused else "finished")
        fed = resumed.messages[len(state.messages):len(state.messages) + len(state.calls)]
        waited = {c.id for c in state.pending}  # the paused step's results the resume made
        made = [m for m in fed if m.tool_call_id in waited]
        assert [r.call_id for r in recorded.resumed_results or ()] == [m.tool_call_id for m in made]
        for r, m in zip(recorded.resumed_results or (), [m for m in fed if m.tool_call_id in waited], strict=True):
            assert same_output(m.content, r.content)
        result = resumed
    if result.paused:
        check_pause(plan, tag, result, tools)
    assert all(v == 1 for v in ran_ids(tag).values()), RAN
    return Outcome(result.messages, result.paused, result.steps)


def straight(plan: Plan) -> Plan:
    """``plan`` as the in-memory path takes it, to compare: the same decisions, resumed plainly."""
    return Plan(plan.steps, [Op((), op.decisions, "resume", None, None, False) for op in plan.ops], "memory")


async def main(plan: Plan) -> None:
    RAN.clear()
    if plan.mode == "memory":
        await drive_memory(plan, "go")
        return
    with tempfile.TemporaryDirectory(prefix="genpauses-") as where:
        if plan.mode == "journal":
            got = await drive_journal(plan, "go", Path(where))
        else:
            if plan.mode == "session-memory":
                got = await drive_session(plan, "go", MemoryStore())
            else:
                async with SqliteStore(Path(where) / "s.db") as store:
                    got = await drive_session(plan, "go", store)
    if got.steps < 0:
        return  # cancelled: nothing to compare
    RAN.clear()
    want = await drive_memory(straight(plan), "go")
    assert (got.messages, got.paused, got.steps) == (want.messages, want.paused, want.steps)


def run_program(plan: Plan, backend: str, *, virtual: bool) -> None:
    global SLOW_REFUNDS
    clear_prices()
    set_price("openai", "gpt-4o", PRICE)
    SLOW_REFUNDS = virtual
    try:
        if virtual:
            name, options = dict(enumerate(virtual_backends()))[0 if backend == "asyncio" else 1]
            anyio.run(main, plan, backend=name, backend_options=options)
        else:
            anyio.run(main, plan, backend=backend)
    finally:
        clear_prices()
        SLOW_REFUNDS = True


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@SETTINGS
@given(plan=plans(("memory", "memory", "memory", "session-memory")))
def test_a_generated_approval_program_keeps_the_documented_promises(backend: str, plan: Plan) -> None:
    run_program(plan, backend, virtual=True)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(SETTINGS, max_examples=max(1, SETTINGS.max_examples // 4))
@given(plan=plans(("session-sqlite", "journal")))
def test_a_generated_approval_program_over_sqlite_keeps_the_history_of_the_memory_path(
    backend: str, plan: Plan
) -> None:
    """Sessions in a SQLite store and a SQLite journal, resumed in a fresh runtime: worker threads, the real clock."""
    run_program(plan, backend, virtual=False)


# -- what it found ---------------------------------------------------------------------------------------


def test_a_reason_kept_once_is_kept_as_it_is() -> None:
    """A reason cut to MAX_REASON_CHARS and checked again (a session checks decisions, then ``agent.resume`` does; a
    journal keeps the checked ones, and a recovered resume checks them again) was cut a second time, its note then
    saying the reason was 2,043 characters — the length of the first cut, not of what the person wrote."""
    long = "x" * (MAX_REASON_CHARS + 100)
    once = denial_reason(long)
    assert once.endswith(f"[... cut: the reason was {len(long):,} characters]")
    assert denial_reason(once) == bounded_reason(once) == once


@pytest.mark.anyio
@pytest.mark.virtual_time
async def test_a_long_reason_given_to_a_session_reaches_the_model_cut_once() -> None:
    plan = Plan([[CallSpec("refund", 1, False)]], [], "session-memory")
    long = "x" * (MAX_REASON_CHARS + 100)
    async with Runtime() as rt:
        session = rt.session(agent_of(plan), "k")
        paused = await session.send("go")
        result = await session.resolve({"go-0-0": long})
    fed = result.messages[len(paused.messages)]
    assert fed.content == decision_denied_text("refund", denial_reason(long))
    assert f"the reason was {len(long):,} characters" in fed.content
