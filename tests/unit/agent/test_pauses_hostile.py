"""Approvals that pause, as a hostile user drives them: a reason to deny of megabytes or holding control characters,
two threads (each with its own event loop) resuming one pause, a decision table of a million unknown ids, a paused
run logged with ``%r``.  What a user relies on: a person's reason reaches the model bounded and printable, a pause
goes on once however the resumes race, errors stay short, and a pause's repr shows no tool argument nor vendor
signature.  Both backends, virtual time."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from agentactors import Agent, Message, Runtime, ScriptedProvider, ToolCall, tool
from agentactors.agent import pauses
from agentactors.errors import PauseConsumedError
from agentactors.loop.pause import MAX_REASON_CHARS, PausedRun, check_decisions, denial_reason

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

PAID: list[int] = []
SECRET = "sk-live-0123456789abcdefghijklmnopqrstuv"
SIGNATURE = "EqQBCkYIBxgCKkA-signature-bytes"


@tool(requires_approval=True)
async def refund(amount: int, card: str = "") -> str:
    """Refund an amount."""
    PAID.append(amount)
    return f"refunded {amount}"


@pytest.fixture(autouse=True)
def _clear() -> None:
    PAID.clear()


def _agent(*answers: Any) -> Agent[str]:
    script = [[ToolCall("r1", "refund", {"amount": 5})], *answers]
    return Agent(ScriptedProvider(script), name="desk", tools=[refund])


def _tool_text(messages: tuple[Message, ...], call_id: str) -> str:
    return next(m.content for m in messages if m.role == "tool" and m.tool_call_id == call_id)


async def test_a_huge_reason_to_deny_reaches_the_model_cut_and_without_control_characters() -> None:
    agent = _agent("understood")
    reason = "\x00\x1b[31mnot this card\r\n\tcall the bank\x07 " + "A" * 5_000_000
    async with Runtime():
        paused = await agent.run("refund 5")
        started = time.perf_counter()  # a reason of megabytes held the loop in redaction for a second
        result = await agent.resume(paused, {"r1": reason})
        took = time.perf_counter() - started
    assert result.ok and PAID == []
    text = _tool_text(result.messages, "r1")
    assert "not this card\n\tcall the bank" in text
    assert not any(ch in text for ch in "\x00\x1b\x07\r")
    assert len(text) < MAX_REASON_CHARS + 400 and "cut" in text
    assert took < 0.25


def test_a_reason_is_kept_as_given_when_it_is_short_and_printable() -> None:
    assert denial_reason("  wrong amount  ") == "wrong amount"
    assert denial_reason("line one\nline\ttwo") == "line one\nline\ttwo"
    assert denial_reason("\x00\x01 \x7f") == "denied by a person"
    assert denial_reason("é" * MAX_REASON_CHARS) == "é" * MAX_REASON_CHARS
    cut = denial_reason("x" * (MAX_REASON_CHARS + 1))
    assert cut.startswith("x" * MAX_REASON_CHARS) and "cut" in cut and len(cut) < MAX_REASON_CHARS + 100


def _paused(run_id: str = "run-1") -> PausedRun:
    call = ToolCall("r1", "refund", {"amount": 5, "card": SECRET})
    signed = Message.assistant("", [call], provider_data={"anthropic": {"signature": SIGNATURE}})
    return PausedRun(
        run_id,
        (Message.user("refund 5"), signed),
        (call,),
        (),
        (call,),
        {"r1": "the tool requires approval"},
        step=1,
        agent="desk",
    )


def test_checked_decisions_hold_the_bounded_reason() -> None:
    checked = check_decisions(_paused(), {"r1": "\x1b" + "no" * MAX_REASON_CHARS})
    reason = checked["r1"]
    assert isinstance(reason, str) and "\x1b" not in reason and len(reason) < MAX_REASON_CHARS + 100


def test_errors_about_decisions_stay_short_however_many_ids_are_given() -> None:
    decisions: dict[str, bool | str] = {f"call-{i}": True for i in range(200_000)}
    decisions["r1"] = True
    started = time.perf_counter()
    with pytest.raises(ValueError, match="not pending") as caught:
        check_decisions(_paused(), decisions)
    assert time.perf_counter() - started < 1.0
    assert len(str(caught.value)) < 1_000


def test_a_paused_runs_repr_shows_no_argument_nor_signature() -> None:
    state = _paused()
    shown = repr(state)
    assert SECRET not in shown and SIGNATURE not in shown
    assert "run-1" in shown and "refund" in shown and "r1" in shown and "desk" in shown


class _SlowHash(str):
    """A run id whose hash gives the GIL away: another thread runs between a claim's look-up and its write."""

    __slots__ = ()

    def __hash__(self) -> int:
        time.sleep(0.05)
        return str.__hash__(self)

    def __eq__(self, other: object) -> bool:
        return str.__eq__(self, other)


def test_two_threads_claiming_one_pause_at_once_claim_it_once() -> None:
    """Two request threads each with its own event loop (a WSGI server calling ``anyio.run(agent.resume, ...)``)
    race on one pause: one claim alone passes."""
    state = _paused(_SlowHash("run-threads"))
    outcomes: list[str] = []
    keys: list[pauses.PauseKey | None] = []
    barrier = threading.Barrier(2)

    def resume() -> None:
        barrier.wait()
        try:
            keys.append(pauses.claim(state))
            outcomes.append("claimed")
        except PauseConsumedError:
            outcomes.append("refused")

    threads = [threading.Thread(target=resume) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert sorted(outcomes) == ["claimed", "refused"]
    finally:
        for key in keys:
            pauses.release(key)


async def test_a_pause_of_an_unnamed_agent_is_not_resumed_by_another_agent() -> None:
    unnamed = Agent(ScriptedProvider([[ToolCall("r1", "refund", {"amount": 5})]]), tools=[refund])
    other = Agent(
        ScriptedProvider(["other answered"]),
        name="other",
        tools=[refund],
        handoffs=[Agent(ScriptedProvider([]), name="billing")],
    )
    async with Runtime():
        paused = await unnamed.run("refund 5")
        assert paused.paused and paused.resume_state is not None and paused.resume_state.agent is None
        with pytest.raises(ValueError, match="resume it with that agent"):
            await other.resume(paused, {"r1": True})
    assert PAID == []
