"""A caller's history with a call left without its result, or a result apart from its call, is repaired before the
run sends it (agentactors/loop/_history_repair.py, docs/loop.md): every wire refuses it as it is, and every later
run over it failed the same way.

The repair itself on its own (plain functions), then through a run: what the provider is sent, what the result
keeps, the event and the log line that record it, and that nothing is done for a well-formed history.  Virtual time
on both backends for the runs.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from agentactors import Agent, InMemoryRecorder, LLMResponse, Message, RunResult, ScriptedProvider, ToolCall, tool
from agentactors.loop._history_repair import NO_RESULT, repair_history

SECRET_ARGUMENT = "4111-1111-1111-1111"  # an argument of a call: never in a record of the repair
SECRET_OUTPUT = "the vault code is 0000"  # a tool's output: never in a record of the repair


def _call(call_id: str, name: str = "lookup") -> ToolCall:
    return ToolCall(call_id, name, {"card": SECRET_ARGUMENT})


def _calls(*ids: str) -> Message:
    return Message.assistant("", [_call(i) for i in ids])


def _result(call_id: str, text: str = "found") -> Message:
    return Message.tool(call_id, text, "lookup")


def _no_result(call_id: str, name: str = "lookup") -> Message:
    return Message.tool(call_id, NO_RESULT, name, is_error=True)


# --- the repair on its own -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "history",
    [
        (),
        (Message.user("hi"), Message.assistant("hello")),
        (Message.system("be brief"), Message.user("q"), _calls("a"), _result("a"), Message.assistant("done")),
        (Message.user("q"), _calls("a", "b"), _result("b"), _result("a"), Message.user("more")),  # any order
        (Message.user("q"), _calls("a"), _result("a"), _calls("b"), _result("b")),
    ],
)
def test_a_well_formed_history_is_left_alone(history: tuple[Message, ...]) -> None:
    assert repair_history(history) is None


def test_a_call_without_its_result_gets_an_error_result_right_after_its_message() -> None:
    history = (Message.user("q"), _calls("a"), Message.user("and now?"))
    repair = repair_history(history)
    assert repair is not None
    assert repair.messages == (Message.user("q"), _calls("a"), _no_result("a"), Message.user("and now?"))
    assert repair.answered == (_call("a"),) and repair.moved == () and repair.dropped == ()
    answer = repair.messages[2]
    assert answer.is_error and answer.name == "lookup" and "No result" in answer.content
    assert history == (Message.user("q"), _calls("a"), Message.user("and now?"))  # the caller's, unchanged


def test_the_missing_results_come_after_the_ones_that_exist_in_call_order() -> None:
    history = [Message.user("q"), _calls("a", "b", "c"), _result("b")]
    repair = repair_history(history)
    assert repair is not None
    assert repair.messages == (Message.user("q"), _calls("a", "b", "c"), _result("b"), _no_result("a"),
                               _no_result("c"))
    assert [c.id for c in repair.answered] == ["a", "c"]


def test_a_history_ending_with_calls_gets_their_results() -> None:
    repair = repair_history((Message.user("q"), _calls("a", "b")))
    assert repair is not None
    assert repair.messages[-2:] == (_no_result("a"), _no_result("b"))


@pytest.mark.parametrize(
    ("history", "kept"),
    [
        # Trimmed in the middle: the result's call is gone.
        ((Message.user("q"), _result("gone", SECRET_OUTPUT), Message.assistant("it is so")),
         (Message.user("q"), Message.assistant("it is so"))),
        # A second result of one call.
        ((Message.user("q"), _calls("a"), _result("a"), _result("a", "again")),
         (Message.user("q"), _calls("a"), _result("a"))),
        # A result of another call, in a step's block.
        ((_calls("a"), _result("a"), _result("z")), (_calls("a"), _result("a"))),
        # A result before its call.
        ((Message.user("q"), _result("a"), _calls("a"), _result("a")), (Message.user("q"), _calls("a"), _result("a"))),
    ],
)
def test_a_result_whose_call_is_not_right_before_it_is_dropped(
    history: tuple[Message, ...], kept: tuple[Message, ...]
) -> None:
    repair = repair_history(history)
    assert repair is not None
    assert repair.messages == kept
    assert len(repair.dropped) == 1 and repair.answered == ()


def test_a_result_cut_off_from_its_step_is_moved_up_to_it() -> None:
    """A framework that put the step's text between its calls and its results: the real result is kept, moved."""
    history = (Message.user("q"), _calls("a", "b"), Message.assistant("checking"), _result("b"), _result("a"))
    repair = repair_history(history)
    assert repair is not None
    assert repair.messages == (Message.user("q"), _calls("a", "b"), _result("a"), _result("b"),
                               Message.assistant("checking"))
    assert [m.tool_call_id for m in repair.moved] == ["a", "b"]
    assert repair.answered == () and repair.dropped == ()


def test_a_result_is_never_taken_from_a_later_step_that_reuses_the_call_id() -> None:
    """A foreign history whose ids repeat across steps (the tool's name as its id): step 1's call was cut off, step
    2 called again with the same id and got its answer.  That answer is step 2's — not moved up to step 1 (the model
    would read that the call it interrupted returned it), and not sent twice."""
    history = (Message.user("q"), _calls("lookup"), Message.user("retry"), _calls("lookup"),
               _result("lookup", "REAL-2"), Message.assistant("done"))
    repair = repair_history(history)
    assert repair is not None
    assert repair.messages == (Message.user("q"), _calls("lookup"), _no_result("lookup"), Message.user("retry"),
                               _calls("lookup"), _result("lookup", "REAL-2"), Message.assistant("done"))
    assert [c.id for c in repair.answered] == ["lookup"] and repair.moved == () and repair.dropped == ()


def test_a_result_in_another_steps_block_is_counted_once() -> None:
    """A stray result of call ``a`` inside step 2's block: dropped there (it answers no call of that step), and ``a``
    answered with the error result — one repair each, not the same message counted moved and dropped."""
    history = (Message.user("q"), _calls("a"), Message.user("x"), _calls("b"), _result("b"), _result("a"))
    repair = repair_history(history)
    assert repair is not None
    assert repair.messages == (Message.user("q"), _calls("a"), _no_result("a"), Message.user("x"), _calls("b"),
                               _result("b"))
    assert [c.id for c in repair.answered] == ["a"] and repair.moved == ()
    assert [m.tool_call_id for m in repair.dropped] == ["a"]
    data = repair.event_data()
    assert (data["answered"], data["moved"], data["dropped"]) == (1, 0, 1)


def test_a_call_with_an_empty_id_is_left_as_it_is() -> None:
    """No result can name it (a tool message needs an id): nothing to answer it with, and no crash."""
    history = (Message.user("q"), Message.assistant("", [ToolCall("", "lookup"), _call("a")]), Message.user("x"))
    repair = repair_history(history)
    assert repair is not None
    assert repair.messages == (history[0], history[1], _no_result("a"), history[2])


def test_the_event_data_counts_everything_lists_at_most_fifty_and_holds_no_content() -> None:
    ids = [f"call_{n}" for n in range(60)]
    history = (Message.user("q"), _calls(*ids), Message.user("x"), _result("stray", SECRET_OUTPUT))
    repair = repair_history(history)
    assert repair is not None
    data = repair.event_data()
    assert (data["answered"], data["moved"], data["dropped"]) == (60, 0, 1)
    assert len(data["calls"]) == 50
    assert data["calls"][0] == {"call_id": "call_0", "name": "lookup", "repair": "answered"}
    assert SECRET_ARGUMENT not in repr(data) and SECRET_OUTPUT not in repr(data)


def test_a_long_history_is_repaired_in_linear_time() -> None:
    """Every step of a long stored conversation lost its results: each is answered, and no step rescans the rest."""
    history: list[Message] = [Message.user("q")]
    for n in range(20_000):
        history.append(_calls(f"c{n}"))
        history.append(Message.assistant("next"))
    repair = repair_history(history)
    assert repair is not None
    assert len(repair.answered) == 20_000 and len(repair.messages) == 60_001


# --- through a run ---------------------------------------------------------------------------------

@tool
async def lookup(card: str) -> str:
    """Look a card up."""
    return "ok"


@pytest.mark.anyio
@pytest.mark.virtual_time
async def test_a_run_sends_the_repaired_history_keeps_it_and_records_the_repair(
    caplog: pytest.LogCaptureFixture,
) -> None:
    history = [Message.user("q"), _calls("a", "b"), _result("b"), Message.user("and now?"),
               _result("gone", SECRET_OUTPUT)]
    before = list(history)
    provider = ScriptedProvider(["fine"])
    recorder = InMemoryRecorder()
    with caplog.at_level(logging.WARNING, logger="agentactors.loop"):
        result = await Agent(provider, tools=[lookup], recorders=[recorder]).run(history)
    assert result.ok and result.content == "fine"
    repaired = (Message.user("q"), _calls("a", "b"), _result("b"), _no_result("a"), Message.user("and now?"))
    (request,) = provider.requests
    assert request.messages == repaired
    assert result.messages == (*repaired, Message.assistant("fine"))  # the next turn starts from a sound history
    assert history == before  # the caller's list, unchanged
    types = [e.type for e in recorder.events]
    assert types.index("run.history_repaired") == types.index("run.started") + 1
    (event,) = recorder.of_type("run.history_repaired")
    assert (event.answered, event.moved, event.dropped) == (1, 0, 1)
    assert [(c["call_id"], c["repair"]) for c in event.calls] == [("a", "answered"), ("gone", "dropped")]
    (line,) = [r for r in caplog.records if "repaired" in r.getMessage()]
    assert line.levelno == logging.WARNING
    text = line.getMessage()
    assert ": a" in text and ": gone" in text and str(result.run_id) in text
    assert SECRET_ARGUMENT not in text and SECRET_OUTPUT not in text
    assert all(SECRET_OUTPUT not in repr(e.data) for e in recorder.events)  # the stray result was never sent


@pytest.mark.anyio
@pytest.mark.virtual_time
async def test_a_paused_runs_messages_taken_as_the_next_history_are_answered() -> None:
    """Instead of resuming, the caller sends a new prompt after a paused run: its pending call gets a result."""

    @tool(requires_approval=True)
    async def pay(amount: int) -> str:
        """Pay."""
        return "paid"

    provider = ScriptedProvider([LLMResponse("", (ToolCall("p1", "pay", {"amount": 5}),)), "ok then"])
    agent = Agent(provider, tools=[pay])
    paused = await agent.run("pay 5")
    assert paused.paused and paused.messages[-1].tool_calls  # the call waits: no result after it
    result = await agent.run([*paused.messages, Message.user("never mind")])
    assert result.ok and result.content == "ok then"
    sent = provider.requests[-1].messages
    assert sent[-2:] == (_no_result("p1", "pay"), Message.user("never mind"))


@pytest.mark.anyio
@pytest.mark.virtual_time
async def test_a_resumed_run_answers_its_paused_calls_itself() -> None:
    """A paused run's last message holds the calls the resumed run answers: not repaired, the decision runs."""
    ran: list[int] = []

    @tool(requires_approval=True)
    async def pay(amount: int) -> str:
        """Pay."""
        ran.append(amount)
        return "paid"

    provider = ScriptedProvider([LLMResponse("", (ToolCall("p1", "pay", {"amount": 5}),)), "paid it"])
    recorder = InMemoryRecorder()
    agent = Agent(provider, tools=[pay], recorders=[recorder])
    paused = await agent.run("pay 5")
    result = await agent.resume(paused, {"p1": True})
    assert result.ok and ran == [5]
    assert [m.content for m in result.messages if m.role == "tool"] == ["paid"]
    assert recorder.of_type("run.history_repaired") == []


@pytest.mark.anyio
@pytest.mark.virtual_time
async def test_a_well_formed_history_costs_no_repair(monkeypatch: pytest.MonkeyPatch) -> None:
    """The common path: a history without tool messages is not even checked; one whose calls are answered is
    checked and left as it is (the caller's very tuple is the run's input)."""
    checked: list[int] = []

    def spy(messages: Any, run_id: str | None = None) -> Any:
        checked.append(len(messages))
        return repair_history(messages, run_id)

    monkeypatch.setattr("agentactors.loop.state.repair_history", spy)
    recorder = InMemoryRecorder()
    agent = Agent(ScriptedProvider(["a", "b"]), tools=[lookup], recorders=[recorder])
    plain = await agent.run([Message.user("q")])
    assert plain.ok and checked == []
    history = (Message.user("q"), _calls("a"), _result("a"), Message.user("more"))
    answered: RunResult[Any] = await agent.run(history)
    assert answered.ok and checked == [4]
    assert answered.messages[:4] == history
    assert recorder.of_type("run.history_repaired") == []
