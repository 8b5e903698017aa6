"""agui_app served on 127.0.0.1 (uvicorn on asyncio, hypercorn on trio): every event it streams is an event of
the ``ag-ui-protocol`` package's models, carrying no field they do not define, in the protocol's order."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import attrs
import httpx
import pytest
from ag_ui.core import Event, EventType, ResumeEntry, RunAgentInput
from pydantic import TypeAdapter

from agentactors import Agent, LLMRequest, ScriptedProvider, ToolCall, tool
from agentactors.errors import ErrorKind, ProviderError
from agentactors.messages import TextDelta
from agentactors.serve import agui_app
from tests.support.services import load_example, serving

pytestmark = [
    pytest.mark.anyio,
    # httpx's nested async generators, left half-read by a client that goes away (trio reports them).
    pytest.mark.filterwarnings("ignore:Async generator 'httpx:ResourceWarning"),
    pytest.mark.filterwarnings("ignore:Async generator 'httpcore:ResourceWarning"),
]
EVENTS: TypeAdapter[Any] = TypeAdapter(Event)


@tool
def lookup(city: str) -> dict[str, Any]:
    """The weather in a city."""
    return {"city": city, "sky": "clear"}


@attrs.frozen
class Forecast:
    city: str
    sky: str


def run_input(text: str = "Weather in Oslo?", **extra: Any) -> dict[str, Any]:
    body = {"threadId": "thread-1", "runId": "run-7", "state": {}, "tools": [], "context": [], "forwardedProps": {},
            "messages": [{"id": "m1", "role": "user", "content": text}], **extra}
    RunAgentInput.model_validate(body)  # what the test sends is a RunAgentInput
    return body


def checked(raw: dict[str, Any]) -> Any:
    """``raw`` as the package's model; it must carry no field the model does not define."""
    event = EVENTS.validate_python(raw)
    known = {field.alias or name for name, field in type(event).model_fields.items()}
    assert set(raw) <= known, f"fields AG-UI does not define: {set(raw) - known}"
    return event


@asynccontextmanager
async def served(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    async with serving(app, load_example("serve_all")) as base, httpx.AsyncClient(base_url=base, timeout=20) as c:
        yield c


async def events_of(client: httpx.AsyncClient, body: dict[str, Any]) -> list[Any]:
    async with client.stream("POST", "/", json=body, headers={"accept": "text/event-stream"}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        return [checked(json.loads(line[6:])) async for line in response.aiter_lines() if line.startswith("data: ")]


def shape(events: list[Any]) -> list[EventType]:
    """The events' types, each run of ``TEXT_MESSAGE_CONTENT`` as one (how many deltas a text comes in varies)."""
    types: list[EventType] = []
    for event in events:
        if not (event.type == EventType.TEXT_MESSAGE_CONTENT and types and types[-1] == event.type):
            types.append(event.type)
    return types


async def test_a_run_with_a_tool_call_is_the_protocols_event_sequence() -> None:
    provider = ScriptedProvider([[ToolCall("call-1", "lookup", {"city": "Oslo"})], "Clear skies in Oslo."])
    agent = Agent(provider, tools=[lookup], name="weather")
    async with served(agui_app(agent)) as client:
        events = await events_of(client, run_input())
    assert shape(events) == [
        EventType.RUN_STARTED,
        EventType.STATE_SNAPSHOT,  # the run's state as it starts
        EventType.TOOL_CALL_START, EventType.TOOL_CALL_ARGS, EventType.TOOL_CALL_END,
        EventType.TOOL_CALL_RESULT,
        EventType.STATE_SNAPSHOT,  # after the tool step: once its results are shown
        EventType.TEXT_MESSAGE_START, EventType.TEXT_MESSAGE_CONTENT, EventType.TEXT_MESSAGE_END,
        EventType.STATE_SNAPSHOT,  # the run's final state, right before RUN_FINISHED
        EventType.RUN_FINISHED,
    ]
    snapshots = [e for e in events if e.type == EventType.STATE_SNAPSHOT]
    assert [s.snapshot["agentactors"]["step"] for s in snapshots] == [1, 2, 2]
    events = [e for e in events if e.type != EventType.STATE_SNAPSHOT]
    started, finished = events[0], events[-1]
    assert (started.thread_id, started.run_id) == ("thread-1", "run-7")
    assert (finished.thread_id, finished.run_id) == ("thread-1", "run-7")
    call_start, args, call_end, result = events[1:5]
    assert (call_start.tool_call_id, call_start.tool_call_name) == ("call-1", "lookup")
    assert json.loads(args.delta) == {"city": "Oslo"} and call_end.tool_call_id == "call-1"
    assert result.tool_call_id == "call-1" and json.loads(result.content) == {"city": "Oslo", "sky": "clear"}
    text_start = events[5]
    contents = [e for e in events if e.type == EventType.TEXT_MESSAGE_CONTENT]
    assert {e.message_id for e in contents} == {text_start.message_id} == {events[-2].message_id}
    assert "".join(e.delta for e in contents) == "Clear skies in Oslo."
    assert len(contents) > 1, "the text streamed as it came"


async def test_a_run_ends_with_its_final_state_right_before_run_finished_with_or_without_sessions() -> None:
    """A UI shows the run's state: the last STATE_SNAPSHOT must be the run's end state, right before RUN_FINISHED.
    A run whose state had not changed since its start (no usage counted) ended with its text and no snapshot."""
    from agentactors import Runtime

    for sessions in (False, True):
        agent = Agent(ScriptedProvider(["Hello there."]), name="greeter")
        async with Runtime() as rt, served(agui_app(agent, runtime=rt, sessions=sessions)) as client:
            events = await events_of(client, thread_body("run-1", ("user", "Hi."), state={"units": "metric"}))
        assert shape(events) == [
            EventType.RUN_STARTED, EventType.STATE_SNAPSHOT,
            EventType.TEXT_MESSAGE_START, EventType.TEXT_MESSAGE_CONTENT, EventType.TEXT_MESSAGE_END,
            EventType.STATE_SNAPSHOT, EventType.RUN_FINISHED,
        ], sessions
        last = events[-2].snapshot
        assert last["units"] == "metric" and last["agentactors"]["pending"] == [] and last["agentactors"]["step"] == 1


async def test_the_threads_messages_become_the_conversation() -> None:
    provider = ScriptedProvider(["noted"])
    agent = Agent(provider, system="Be brief.", name="a")
    body = run_input(messages=[
        {"id": "s", "role": "system", "content": "Use metric units."},
        {"id": "u1", "role": "user", "content": "hi"},
        {"id": "a1", "role": "assistant", "content": "hello"},
        {"id": "u2", "role": "user", "content": [{"type": "text", "text": "and now?"}]},
    ])
    async with served(agui_app(agent)) as client:
        await events_of(client, body)
    messages = provider.requests[0].messages
    assert [(m.role, m.content) for m in messages] == [
        ("system", "Be brief.\n\nUse metric units."), ("user", "hi"), ("assistant", "hello"), ("user", "and now?")
    ]


async def test_a_typed_answer_is_the_finished_runs_result() -> None:
    provider = ScriptedProvider(['{"city": "Oslo", "sky": "clear"}'])
    agent = Agent(provider, output_type=Forecast, name="typed")
    async with served(agui_app(agent)) as client:
        events = await events_of(client, run_input())
    assert events[-1].type == EventType.RUN_FINISHED
    assert events[-1].result == {"city": "Oslo", "sky": "clear"}


async def test_a_failed_run_ends_with_run_error() -> None:
    failure = ProviderError("the vendor is down", provider="p", kind=ErrorKind.request)
    agent = Agent(ScriptedProvider([failure]), name="down")
    async with served(agui_app(agent)) as client:
        events = await events_of(client, run_input())
    types = [e.type for e in events if e.type != EventType.STATE_SNAPSHOT]
    assert types == [EventType.RUN_STARTED, EventType.RUN_ERROR]
    assert "refused the request" in events[-1].message and "the vendor is down" not in events[-1].message


async def test_a_bad_input_is_refused_before_any_event() -> None:
    agent = Agent(ScriptedProvider(["never"]), name="a")
    async with served(agui_app(agent)) as client:
        for body in ({"runId": "r", "messages": []}, {"threadId": "t", "runId": "r", "messages": "hi"},
                     {"threadId": "t", "runId": "r", "messages": []}):
            response = await client.post("/", json=body)
            assert response.status_code == 422 and response.json()["detail"]
        typed = {"content-type": "application/json"}
        assert (await client.post("/", content=b"{nope", headers=typed)).status_code == 400
        assert (await client.get("/")).status_code == 405
        assert (await client.post("/elsewhere", json=run_input())).status_code == 404


async def test_a_client_that_leaves_cancels_the_run() -> None:
    started, cancelled = anyio.Event(), anyio.Event()

    async def hang(request: LLMRequest) -> str:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        return "never"  # pragma: no cover

    agent = Agent(ScriptedProvider(hang), name="slow")
    async with served(agui_app(agent)) as client:
        async with client.stream("POST", "/", json=run_input()) as response:
            async for line in response.aiter_lines():
                if line.startswith("data: "):
                    assert json.loads(line[6:])["type"] == "RUN_STARTED"
                    break
            with anyio.fail_after(10):
                await started.wait()
        with anyio.fail_after(10):
            await cancelled.wait()


# --- live threads: a request for a thread whose run is live steers it ---------------------------------------


class Gated:
    """A model whose first answer waits for ``gate``: the thread's run is live while the test posts again."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.gate = anyio.Event()
        self.seen: list[list[str]] = []

    async def __call__(self, request: LLMRequest) -> str:
        self.seen.append([m.content for m in request.messages if m.role == "user"])
        if len(self.seen) == 1:
            self.started.set()
            await self.gate.wait()
            return "Looking at Bergen."
        return "Bergen and Oslo: clear."


def thread_body(
    run_id: str, *turns: tuple[str, str], thread: str = "thread-1", state: Any = None, **extra: Any
) -> dict[str, Any]:
    # an id per message, the same each time a client posts it again (AG-UI clients keep their messages' ids)
    messages = [{"id": f"{role}:{text}", "role": role, "content": text} for role, text in turns]
    return run_input(
        threadId=thread, runId=run_id, messages=messages, state=state if state is not None else {}, **extra
    )


async def test_a_post_to_a_live_thread_steers_its_run() -> None:
    model = Gated()
    agent = Agent(ScriptedProvider(model), name="weather")
    async with served(agui_app(agent)) as client:
        first: list[Any] = []

        async def live_run() -> None:
            first.extend(await events_of(client, thread_body("run-1", ("user", "Weather in Bergen?"))))

        async with anyio.create_task_group() as tg:
            tg.start_soon(live_run)
            with anyio.fail_after(10):
                await model.started.wait()
            steer = await events_of(client, thread_body(
                "run-2", ("user", "Weather in Bergen?"), ("user", "Also Oslo, please.")))
            model.gate.set()
        # the steering request ends at once, saying where its message went
        assert [e.type for e in steer] == [EventType.RUN_STARTED, EventType.RUN_FINISHED]
        assert steer[-1].run_id == "run-2" and steer[-1].result == {"steered": "run-1"}
        # the live run read it at its next step boundary, once, and answered it in its own stream
        assert model.seen == [["Weather in Bergen?"], ["Weather in Bergen?", "Also Oslo, please."]]
        finished = first[-1]
        assert finished.type == EventType.RUN_FINISHED and finished.run_id == "run-1"
        text = "".join(e.delta for e in first if e.type == EventType.TEXT_MESSAGE_CONTENT)
        assert text.endswith("Bergen and Oslo: clear.")
        # the thread's run has ended: the next post is a new run on the same thread
        again = await events_of(client, thread_body("run-3", ("user", "And tomorrow?")))
        assert again[-1].type == EventType.RUN_FINISHED and again[-1].run_id == "run-3"
        assert "result" not in again[-1].model_fields_set or again[-1].result is None


async def test_a_post_to_a_live_thread_with_nothing_new_is_refused_not_run_twice() -> None:
    model = Gated()
    agent = Agent(ScriptedProvider(model), name="weather")
    async with served(agui_app(agent)) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(events_of, client, thread_body("run-1", ("user", "Bergen?")))
            with anyio.fail_after(10):
                await model.started.wait()
            again = await events_of(client, thread_body("run-2", ("user", "Bergen?")))  # the same input, again
            model.gate.set()
    assert [e.type for e in again] == [EventType.RUN_STARTED, EventType.RUN_ERROR]
    assert again[-1].code == "ThreadBusy" and "run-1" in again[-1].message
    assert model.seen == [["Bergen?"]], "no second run"


async def test_a_steer_reaches_only_its_own_thread() -> None:
    model = Gated()
    agent = Agent(ScriptedProvider(model), name="weather")
    async with served(agui_app(agent)) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(events_of, client, thread_body("run-1", ("user", "Bergen?")))
            with anyio.fail_after(10):
                await model.started.wait()
            other = await events_of(client, thread_body("run-9", ("user", "Oslo?"), thread="thread-2"))
            model.gate.set()
    assert other[-1].type == EventType.RUN_FINISHED and other[-1].result is None, "thread-2 got a run of its own"
    assert ["Oslo?"] in model.seen and ["Bergen?", "Oslo?"] not in model.seen


# --- threads kept by the server (sessions=True) ---------------------------------------------------------------


async def test_with_sessions_a_thread_keeps_its_history_and_takes_only_new_messages() -> None:
    provider = ScriptedProvider(lambda request: f"answer {len(request.messages)}")
    agent = Agent(provider, name="chat")
    async with served(agui_app(agent, sessions=True)) as client:
        await events_of(client, thread_body("run-1", ("user", "one")))
        # a client that posts only its new message
        await events_of(client, thread_body("run-2", ("user", "two")))
        # a client that posts the whole thread as it knows it: only what follows the last answer is new
        await events_of(client, thread_body(
            "run-3", ("user", "one"), ("assistant", "answer 1"), ("user", "two"), ("assistant", "answer 3"),
            ("user", "three")))
        # another thread starts from nothing
        await events_of(client, thread_body("run-4", ("user", "elsewhere"), thread="thread-2"))
        # a post with nothing new is refused before any event
        stale = await client.post("/", json=thread_body("run-5", ("user", "one"), ("assistant", "answer 1")))
        assert stale.status_code == 422
    conversations = [[(m.role, m.content) for m in r.messages] for r in provider.requests]
    assert conversations == [
        [("user", "one")],
        [("user", "one"), ("assistant", "answer 1"), ("user", "two")],
        [("user", "one"), ("assistant", "answer 1"), ("user", "two"), ("assistant", "answer 3"), ("user", "three")],
        [("user", "elsewhere")],
    ]


async def test_with_sessions_a_steer_joins_the_committed_thread() -> None:
    model = Gated()
    agent = Agent(ScriptedProvider(model), name="weather")
    async with served(agui_app(agent, sessions=True)) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(events_of, client, thread_body("run-1", ("user", "Bergen?")))
            with anyio.fail_after(10):
                await model.started.wait()
            steer = await events_of(client, thread_body("run-2", ("user", "Oslo too.")))
            model.gate.set()
        assert steer[-1].result == {"steered": "run-1"}
        model.seen.clear()
        await events_of(client, thread_body("run-3", ("user", "Thanks.")))
    assert model.seen == [["Bergen?", "Oslo too.", "Thanks."]], "the steer is part of the thread's history"


async def test_sessions_keep_threads_in_the_given_store() -> None:
    from agentactors.sessions import MemoryStore

    store = MemoryStore()
    agent = Agent(ScriptedProvider(lambda request: "ok"), name="chat")
    async with served(agui_app(agent, sessions=True, store=store)) as client:
        await events_of(client, thread_body("run-1", ("user", "hello"), thread="kept"))
    record = await store.load("kept")
    assert record is not None and [m.content for m in record.messages] == ["hello", "ok"]
    with pytest.raises(ValueError, match="sessions=True"):
        agui_app(agent, store=store)


# --- STATE_SNAPSHOT -----------------------------------------------------------------------------------------


async def test_state_snapshots_carry_the_clients_state_and_the_runs() -> None:
    provider = ScriptedProvider([[ToolCall("call-1", "lookup", {"city": "Oslo"})], "Clear."])
    agent = Agent(provider, tools=[lookup], name="weather")
    async with served(agui_app(agent)) as client:
        events = await events_of(client, thread_body("run-1", ("user", "Oslo?"), state={"units": "metric"}))
    snapshots = [e.snapshot for e in events if e.type == EventType.STATE_SNAPSHOT]
    assert snapshots and all(s["units"] == "metric" for s in snapshots), "the client's state is kept"
    run = snapshots[0]["agentactors"]
    assert run["agent"] == "weather" and run["step"] == 1 and run["pending"] == []
    assert run["runId"] and set(run["usage"]) == {"inputTokens", "outputTokens"}


async def test_a_call_waiting_for_approval_shows_in_the_state() -> None:
    @tool(requires_approval=True, approval="wait", approval_timeout=0.5)
    def transfer(amount: int) -> str:
        """Move money."""
        return "moved"

    provider = ScriptedProvider([[ToolCall("call-9", "transfer", {"amount": 5})], "Not moved."])
    agent = Agent(provider, tools=[transfer], name="bank")
    async with served(agui_app(agent)) as client:
        events = await events_of(client, thread_body("run-1", ("user", "Move 5.")))
    pending = [e.snapshot["agentactors"]["pending"] for e in events if e.type == EventType.STATE_SNAPSHOT]
    assert [{"toolCallId": "call-9", "toolCallName": "transfer"}] in pending
    assert pending[-1] == [], "no longer pending once the timeout denied it"
    assert events[-1].type == EventType.RUN_FINISHED


@tool(requires_approval=True)
def transfer(amount: int) -> str:
    """Move money (a person approves each call)."""
    return f"moved {amount}"


def interrupted(events: list[Any]) -> list[Any]:
    """The interrupts of the run's last event, which must be a RUN_FINISHED with an interrupt outcome."""
    finished = events[-1]
    assert finished.type == EventType.RUN_FINISHED
    assert finished.outcome is not None and finished.outcome.type == "interrupt", "not a completed run"
    interrupts: list[Any] = finished.outcome.interrupts
    return interrupts


async def test_a_run_paused_for_approval_finishes_with_an_interrupt_not_as_completed() -> None:
    """A run that pauses for a person's approval ended with a bare RUN_FINISHED: to a client, a completed run with
    no answer.  It ends with RUN_FINISHED still (the protocol's end of a run that did not fail), its ``outcome`` an
    interrupt naming each call awaiting a decision — as the OpenAI endpoint answers 409 ``approval_required``."""
    calls = [ToolCall("call-9", "transfer", {"amount": 5}), ToolCall("call-10", "lookup", {"city": "Oslo"})]
    provider = ScriptedProvider([calls, "Hi."])
    agent = Agent(provider, tools=[transfer, lookup], name="bank")
    async with served(agui_app(agent)) as client:
        events = await events_of(client, thread_body("run-1", ("user", "Move 5.")))
        (interrupt,) = interrupted(events)
        assert (interrupt.id, interrupt.reason, interrupt.tool_call_id) == ("call-9", "tool_call", "call-9")
        assert "transfer" in (interrupt.message or "") and interrupt.metadata["agentactors"]["toolCallName"] == (
            "transfer"
        )
        assert interrupt.metadata["agentactors"]["runId"], "the run the server's code decides"
        shown = [e.tool_call_id for e in events if e.type == EventType.TOOL_CALL_END]
        assert "call-9" in shown, "the interrupt is bound to a call the stream showed"
        assert events[-1].result is None
        done = await events_of(client, thread_body("run-2", ("user", "Hello")))  # a completed run: no outcome
    assert done[-1].type == EventType.RUN_FINISHED and done[-1].outcome is None


def answer(call_id: str, approved: bool | None = None, reason: str | None = None) -> dict[str, Any]:
    """A resume entry (``approved=None``: the person dismissed it — status ``cancelled``), as the protocol's model."""
    if approved is None:
        entry: dict[str, Any] = {"interruptId": call_id, "status": "cancelled"}
    else:
        payload: dict[str, Any] = {"approved": approved} if reason is None else {"approved": approved, "reason": reason}
        entry = {"interruptId": call_id, "status": "resolved", "payload": payload}
    ResumeEntry.model_validate(entry)
    return entry


async def test_with_sessions_resume_answers_decide_the_pause_and_the_stream_is_the_resumed_runs() -> None:
    """The thread's next input answers the interrupt (AG-UI ``resume``): the session's pause is decided by it and
    the request's stream is the resumed run's — the decided call's result against the id the interrupted run
    showed (not its START/ARGS/END again), then the answer — and the thread goes on from the resolved turn."""
    from agentactors import Runtime

    provider = ScriptedProvider([[ToolCall("call-9", "transfer", {"amount": 5})], "Moved 5.", "You are welcome."])
    agent = Agent(provider, tools=[transfer], name="bank")
    async with Runtime() as rt:
        async with served(agui_app(agent, runtime=rt, sessions=True)) as client:
            events = await events_of(client, thread_body("run-1", ("user", "Move 5.")))
            (interrupt,) = interrupted(events)
            assert interrupt.tool_call_id == "call-9"
            assert interrupt.response_schema["required"] == ["approved"], "it says the answer it takes"
            # the protocol: a post to a thread with open interrupts must carry a resume, else RUN_ERROR
            refused = await events_of(client, thread_body("run-2", ("user", "Well?")))
            assert refused[-1].type == EventType.RUN_ERROR and refused[-1].code == "SessionPausedError"
            assert "resume" in refused[-1].message
            approve = [answer("call-9", True)]
            resumed = await events_of(client, thread_body("run-3", ("user", "Move 5."), resume=approve))
            assert not rt.session(agent, "thread-1").paused
            after = await events_of(client, thread_body("run-4", ("user", "Move 5."), ("assistant", "Moved 5."),
                                                        ("user", "Thanks.")))
    assert (resumed[0].type, resumed[0].run_id) == (EventType.RUN_STARTED, "run-3")
    assert shape(resumed) == [
        EventType.RUN_STARTED,
        EventType.STATE_SNAPSHOT,  # the resumed run's state as it starts: nothing waits for a decision now
        EventType.TOOL_CALL_RESULT,  # the decided call's, with the run's first model request
        EventType.STATE_SNAPSHOT,  # after the step the pause was in
        EventType.TEXT_MESSAGE_START, EventType.TEXT_MESSAGE_CONTENT, EventType.TEXT_MESSAGE_END,
        EventType.STATE_SNAPSHOT,  # the run's final state, right before RUN_FINISHED
        EventType.RUN_FINISHED,
    ]
    assert len([e for e in resumed if e.type == EventType.TEXT_MESSAGE_CONTENT]) > 1, "streamed as it came"
    (result,) = [e for e in resumed if e.type == EventType.TOOL_CALL_RESULT]
    assert (result.tool_call_id, result.content) == ("call-9", "moved 5"), "the approved call ran"
    assert "".join(e.delta for e in resumed if e.type == EventType.TEXT_MESSAGE_CONTENT) == "Moved 5."
    assert resumed[-1].outcome is None
    snapshots = [e.snapshot["agentactors"] for e in resumed if e.type == EventType.STATE_SNAPSHOT]
    assert snapshots and snapshots[-1]["pending"] == [], "the run's state: nothing waits for a decision"
    assert after[-1].type == EventType.RUN_FINISHED and after[-1].outcome is None
    history = [(m.role, m.content) for m in provider.requests[-1].messages]
    assert ("tool", "moved 5") in history and history[-1] == ("user", "Thanks."), "continued from the resolved turn"


async def test_a_denial_and_a_dismissal_reach_the_model_and_run_nothing() -> None:
    from agentactors import Runtime

    ran: list[int] = []

    @tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pay (a person approves each call)."""
        ran.append(amount)
        return "paid"

    calls = [ToolCall("call-1", "pay", {"amount": 1}), ToolCall("call-2", "pay", {"amount": 2})]
    provider = ScriptedProvider([calls, "Not paid."])
    agent = Agent(provider, tools=[pay], name="bank")
    async with Runtime() as rt:
        async with served(agui_app(agent, runtime=rt, sessions=True)) as client:
            events = await events_of(client, thread_body("run-1", ("user", "Pay twice.")))
            assert [i.id for i in interrupted(events)] == ["call-1", "call-2"]
            resume = [answer("call-1", False, "too much"), answer("call-2")]
            resumed = await events_of(client, thread_body("run-2", ("user", "Pay twice."), resume=resume))
    assert ran == [], "a denied call and a dismissed one do not run"
    results = {e.tool_call_id: e.content for e in resumed if e.type == EventType.TOOL_CALL_RESULT}
    assert set(results) == {"call-1", "call-2"} and "too much" in results["call-1"]
    assert "dismissed" in results["call-2"], "a dismissed interrupt is a denial the model reads"
    assert resumed[-1].type == EventType.RUN_FINISHED and resumed[-1].outcome is None


async def test_answers_that_do_not_decide_the_pause_are_refused_and_decide_nothing() -> None:
    """Each refusal has its own code, leaves the pause as it was, and the right answers still decide it."""
    from agentactors import Runtime

    calls = [ToolCall("call-1", "transfer", {"amount": 1}), ToolCall("call-2", "transfer", {"amount": 2})]
    provider = ScriptedProvider([calls, "Done."])
    agent = Agent(provider, tools=[transfer], name="bank")
    wrong = {
        "InterruptsNotCovered": [answer("call-1", True)],
        "InvalidResumePayload": [answer("call-1", True), {"interruptId": "call-2", "status": "resolved",
                                                         "payload": {"approved": True, "editedArgs": {"amount": "9"}}}],
    }
    async with Runtime() as rt:
        async with served(agui_app(agent, runtime=rt, sessions=True)) as client:
            none = await events_of(client, thread_body("run-0", ("user", "Hi."), resume=[answer("call-1", True)]))
            assert none[-1].type == EventType.RUN_ERROR and none[-1].code == "NoOpenInterrupts", "never paused"
            await events_of(client, thread_body("run-1", ("user", "Move twice.")))
            for n, (code, resume) in enumerate(wrong.items()):
                refused = await events_of(client, thread_body(f"run-r{n}", ("user", "x"), resume=resume))
                assert [e.type for e in refused] == [EventType.RUN_STARTED, EventType.RUN_ERROR]
                assert refused[-1].code == code, refused[-1].message
                assert rt.session(agent, "thread-1").paused, "nothing was decided"
            bare = {"interruptId": "call-1", "status": "resolved", "payload": True}
            for payload in ({"interruptId": "call-1", "status": "resolved"}, bare):
                resume = [payload, answer("call-2")]
                refused = await events_of(client, thread_body("run-p", ("user", "x"), resume=resume))
                assert refused[-1].code == "InvalidResumePayload"
            no_status = {**thread_body("run-m", ("user", "x")), "resume": [{"interruptId": "call-1"}]}
            malformed = await client.post("/", json=no_status)
            assert malformed.status_code == 422 and "status" in malformed.json()["detail"]
            assert len(provider.requests) == 1, "no model call for any of them"
            resume = [answer("call-1", True), answer("call-2", True)]
            done = await events_of(client, thread_body("run-2", ("user", "x"), resume=resume))
            assert done[-1].type == EventType.RUN_FINISHED and done[-1].outcome is None
            other = [answer("call-1", False), answer("call-2", True)]
            again = await events_of(client, thread_body("run-3", ("user", "x"), resume=other))
    assert again[-1].code == "NoOpenInterrupts", "other answers to decided interrupts decide nothing twice"
    assert len(provider.requests) == 2


async def test_answers_naming_no_open_interrupt_are_skipped_and_alone_decide_or_start_nothing() -> None:
    """AG-UI 1.0: a resume entry matching no open interrupt SHOULD be ignored.  It was refused, so a client still
    holding an interrupt answered elsewhere (or a stale one) could not decide the thread's open ones.  Skipped, it
    decides nothing, and a resume left answering nothing that is open neither decides the pause (the open
    interrupts are not covered) nor starts a run on the input's messages."""
    from agentactors import Runtime

    calls = [ToolCall("call-1", "transfer", {"amount": 1}), ToolCall("call-2", "transfer", {"amount": 2})]
    provider = ScriptedProvider([calls, "Done."])
    agent = Agent(provider, tools=[transfer], name="bank")
    async with Runtime() as rt:
        async with served(agui_app(agent, runtime=rt, sessions=True)) as client:
            stale = [answer("call-7", True)]
            never = await events_of(client, thread_body("run-0", ("user", "Hi."), resume=stale))
            assert [e.type for e in never] == [EventType.RUN_STARTED, EventType.RUN_ERROR]
            assert never[-1].code == "NoOpenInterrupts" and provider.requests == [], "no run on its messages"
            assert rt.session(agent, "thread-1").history == ()
            await events_of(client, thread_body("run-1", ("user", "Move twice.")))
            alone = await events_of(client, thread_body("run-2", ("user", "x"), resume=stale))
            assert alone[-1].code == "InterruptsNotCovered" and rt.session(agent, "thread-1").paused
            resume = [answer("call-7", False), answer("call-1", True), answer("call-2", True)]
            done = await events_of(client, thread_body("run-3", ("user", "x"), resume=resume))
            assert not rt.session(agent, "thread-1").paused
    assert done[-1].type == EventType.RUN_FINISHED and done[-1].outcome is None, done[-1]
    assert [e.content for e in done if e.type == EventType.TOOL_CALL_RESULT] == ["moved 1", "moved 2"]


async def test_a_resumed_run_that_pauses_again_ends_with_its_new_interrupts() -> None:
    from agentactors import Runtime

    provider = ScriptedProvider([
        [ToolCall("call-1", "transfer", {"amount": 1})],
        [ToolCall("call-2", "transfer", {"amount": 2}), ToolCall("call-3", "lookup", {"city": "Oslo"})],
        "Done.",
    ])
    agent = Agent(provider, tools=[transfer, lookup], name="bank")
    async with Runtime() as rt:
        async with served(agui_app(agent, runtime=rt, sessions=True)) as client:
            await events_of(client, thread_body("run-1", ("user", "Move.")))
            resumed = await events_of(client, thread_body("run-2", ("user", "Move."), resume=[answer("call-1", True)]))
            assert [i.id for i in interrupted(resumed)] == ["call-2"]
            ends = [e.tool_call_id for e in resumed if e.type == EventType.TOOL_CALL_END]
            results = [e.tool_call_id for e in resumed if e.type == EventType.TOOL_CALL_RESULT]
            assert ends == ["call-2", "call-3"] and results == ["call-1", "call-3"]
            assert resumed[-2].snapshot["agentactors"]["pending"] == [
                {"toolCallId": "call-2", "toolCallName": "transfer"}]
            done = await events_of(client, thread_body("run-3", ("user", "Move."), resume=[answer("call-2", True)]))
    assert [e.tool_call_id for e in done if e.type == EventType.TOOL_CALL_RESULT] == ["call-2"], "call-3's shown once"
    assert done[-1].type == EventType.RUN_FINISHED and done[-1].outcome is None


async def test_a_pause_is_answered_after_the_server_restarted() -> None:
    """A person may take longer than the session stays active, or than the process lives: the pause is read from
    the store when the answers come."""
    from agentactors import Runtime
    from agentactors.sessions import MemoryStore

    store = MemoryStore()
    provider = ScriptedProvider([[ToolCall("call-9", "transfer", {"amount": 5})], "Moved 5."])
    agent = Agent(provider, tools=[transfer], name="bank")
    async with Runtime() as rt, served(agui_app(agent, runtime=rt, sessions=True, store=store)) as client:
        await events_of(client, thread_body("run-1", ("user", "Move 5.")))
    async with Runtime() as rt, served(agui_app(agent, runtime=rt, sessions=True, store=store)) as client:
        resumed = await events_of(client, thread_body("run-2", ("user", "Move 5."), resume=[answer("call-9", True)]))
    assert [e.content for e in resumed if e.type == EventType.TOOL_CALL_RESULT] == ["moved 5"]
    assert resumed[-1].type == EventType.RUN_FINISHED and resumed[-1].outcome is None


async def test_without_sessions_resume_answers_are_refused_and_interrupts_offer_no_answer() -> None:
    provider = ScriptedProvider([[ToolCall("call-9", "transfer", {"amount": 5})]])
    agent = Agent(provider, tools=[transfer], name="bank")
    async with served(agui_app(agent)) as client:
        (interrupt,) = interrupted(await events_of(client, thread_body("run-1", ("user", "Move 5."))))
        answered = await events_of(client, thread_body("run-2", ("user", "Move 5."), resume=[answer("call-9", True)]))
    assert interrupt.response_schema is None, "nothing here takes an answer"
    assert [e.type for e in answered] == [EventType.RUN_STARTED, EventType.RUN_ERROR]
    assert answered[-1].code == "ResumeNotSupported" and "sessions=True" in answered[-1].message


async def test_answers_posted_while_the_thread_runs_are_refused() -> None:
    from agentactors import Runtime

    model = Gated()
    agent = Agent(ScriptedProvider(model), name="weather")
    async with Runtime() as rt:
        async with served(agui_app(agent, runtime=rt, sessions=True)) as client:
            async with anyio.create_task_group() as tg:
                tg.start_soon(events_of, client, thread_body("run-1", ("user", "Bergen?")))
                with anyio.fail_after(10):
                    await model.started.wait()
                busy = await events_of(client, thread_body("run-2", ("user", "Bergen?"), resume=[answer("c", True)]))
                model.gate.set()
    assert busy[-1].type == EventType.RUN_ERROR and busy[-1].code == "ThreadBusy"
    assert len(model.seen) == 1, "nothing steered into the live run"


async def test_the_servers_code_steers_a_thread_through_its_session() -> None:
    from agentactors import Runtime

    model = Gated()
    agent = Agent(ScriptedProvider(model), name="weather")
    async with Runtime() as rt:
        async with served(agui_app(agent, runtime=rt, sessions=True)) as client:
            events: list[Any] = []

            async def live_run() -> None:
                events.extend(await events_of(client, thread_body("run-1", ("user", "Bergen?"))))

            async with anyio.create_task_group() as tg:
                tg.start_soon(live_run)
                with anyio.fail_after(10):
                    await model.started.wait()
                await rt.session(agent, "thread-1").steer("From the server: Oslo too.")
                model.gate.set()
        history = rt.session(agent, "thread-1").history
    assert model.seen[-1] == ["Bergen?", "From the server: Oslo too."]
    assert events[-1].type == EventType.RUN_FINISHED
    assert [m.content for m in history if m.role == "user"] == ["Bergen?", "From the server: Oslo too."]


async def test_a_paused_runs_call_that_ran_shows_its_result() -> None:
    """Of a paused step's calls, the one needing no approval ran: the stream showed its START/ARGS/END and then
    never its result, as if it had not run (its result is the pause's, not yet in the run's messages)."""
    calls = [ToolCall("call-9", "transfer", {"amount": 5}), ToolCall("call-10", "lookup", {"city": "Oslo"})]
    agent = Agent(ScriptedProvider([calls, "Hi."]), tools=[transfer, lookup], name="bank")
    async with served(agui_app(agent)) as client:
        events = await events_of(client, thread_body("run-1", ("user", "Move 5.")))
    results = {e.tool_call_id: e for e in events if e.type == EventType.TOOL_CALL_RESULT}
    assert set(results) == {"call-10"}, "the call that ran has its result; the one awaiting approval has none"
    assert json.loads(results["call-10"].content) == {"city": "Oslo", "sky": "clear"}
    assert [i.tool_call_id for i in interrupted(events)] == ["call-9"]


async def test_a_paused_runs_last_state_names_the_calls_awaiting_a_decision() -> None:
    """AG-UI asks for the state before an interrupt: the last STATE_SNAPSHOT said ``pending: []`` while the run
    ended waiting for exactly those calls."""
    calls = [ToolCall("call-9", "transfer", {"amount": 5}), ToolCall("call-10", "lookup", {"city": "Oslo"})]
    agent = Agent(ScriptedProvider([calls, "Hi."]), tools=[transfer, lookup], name="bank")
    async with served(agui_app(agent)) as client:
        events = await events_of(client, thread_body("run-1", ("user", "Move 5."), state={"units": "metric"}))
    assert events[-2].type == EventType.STATE_SNAPSHOT, "the state right before the interrupt"
    last = events[-2].snapshot
    assert last["units"] == "metric"
    assert last["agentactors"]["pending"] == [{"toolCallId": "call-9", "toolCallName": "transfer"}]


class Watched:
    """The app, with an event set once it has read the client's disconnect (the server told it the client left)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.disconnected = anyio.Event()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def watched() -> Any:
            message = await receive()
            if message["type"] == "http.disconnect":
                self.disconnected.set()
            return message

        await self.app(scope, watched, send)


async def test_a_client_that_leaves_a_resumed_run_does_not_lose_the_persons_decision() -> None:
    """A client that left while its resumed run ran cancelled it, and the pause — claimed as the run started — was
    gone: the person's approval used up, the call cut off, nothing to answer on reconnect.  A resumed run now goes
    on to its end without its client (the decision was made; the pause is consumed once the run has it), commits
    to the thread, and the same answers posted again get its outcome instead of a second run."""
    from agentactors import Runtime

    entered, gate = anyio.Event(), anyio.Event()
    ran: list[int] = []
    cancelled: list[int] = []

    @tool(requires_approval=True)
    async def wire(amount: int) -> str:
        """Move money, slowly (a person approves each call)."""
        entered.set()
        try:
            await gate.wait()
        except BaseException:
            cancelled.append(amount)
            raise
        ran.append(amount)
        return f"wired {amount}"

    provider = ScriptedProvider([[ToolCall("call-9", "wire", {"amount": 5})], "Wired 5."])
    agent = Agent(provider, tools=[wire], name="bank")
    resume = [answer("call-9", True)]
    async with Runtime() as rt:
        app = Watched(agui_app(agent, runtime=rt, sessions=True))
        async with served(app) as client:
            await events_of(client, thread_body("run-1", ("user", "Wire 5.")))
            async with client.stream("POST", "/", json=thread_body("run-2", ("user", "Wire 5."), resume=resume)) as r:
                async for line in r.aiter_lines():
                    if line.startswith("data: "):
                        assert json.loads(line[6:])["type"] == "RUN_STARTED"
                        break
                with anyio.fail_after(10):
                    await entered.wait()
            with anyio.fail_after(10):
                await app.disconnected.wait()  # the client has left mid-stream, the call still running
            # a client back on line posts the same answers again, while the call still runs: it gets RUN_STARTED, then
            # that run's events so far and the rest as they come, to its end
            retried: list[Any] = []
            body = thread_body("run-3", ("user", "Wire 5."), resume=resume)
            async with client.stream("POST", "/", json=body) as r:
                async for line in r.aiter_lines():
                    if line.startswith("data: "):
                        retried.append(checked(json.loads(line[6:])))
                        if len(retried) == 1:
                            assert retried[0].type == EventType.RUN_STARTED and entered.is_set() and not ran
                            gate.set()
            later = await events_of(client, thread_body("run-4", ("user", "Wire 5."), resume=resume))
            session = rt.session(agent, "thread-1")
            await session.refresh()
            history = [(m.role, m.content) for m in session.history]
    assert cancelled == [] and ran == [5], "the approved call ran to its end, once"
    assert not session.paused and ("tool", "wired 5") in history and history[-1] == ("assistant", "Wired 5.")
    assert len(provider.requests) == 2, "no second run"
    # the run still going: its events as it told them; once it ended: told from its outcome (no states on the way)
    text = [EventType.TEXT_MESSAGE_START, EventType.TEXT_MESSAGE_CONTENT, EventType.TEXT_MESSAGE_END]
    assert shape(retried) == [
        EventType.RUN_STARTED, EventType.STATE_SNAPSHOT, EventType.TOOL_CALL_RESULT, EventType.STATE_SNAPSHOT, *text,
        EventType.STATE_SNAPSHOT, EventType.RUN_FINISHED,
    ]
    assert shape(later) == [
        EventType.RUN_STARTED, EventType.TOOL_CALL_RESULT, *text, EventType.STATE_SNAPSHOT, EventType.RUN_FINISHED
    ]
    for events, run_id in ((retried, "run-3"), (later, "run-4")):
        assert (events[0].type, events[0].run_id) == (EventType.RUN_STARTED, run_id)
        assert [(e.tool_call_id, e.content) for e in events if e.type == EventType.TOOL_CALL_RESULT] == [
            ("call-9", "wired 5")]
        assert "".join(e.delta for e in events if e.type == EventType.TEXT_MESSAGE_CONTENT) == "Wired 5."
        assert events[-1].type == EventType.RUN_FINISHED and events[-1].outcome is None


async def test_a_call_approved_with_edited_arguments_runs_with_them_once_they_fit_its_schema() -> None:
    """AG-UI's approve-with-edits (``editedArgs``, a whole replacement) was refused.  A call of one of the agent's
    own tools now offers it (the interrupt's ``responseSchema`` has ``editedArgs``, the tool's parameters), and runs
    with the person's arguments — checked against the tool's schema first, as a model's are: a bad edit decides
    nothing and runs nothing.  The thread then reads the call as it ran."""
    from agentactors import Runtime

    ran: list[int] = []

    @tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pay (a person approves each call)."""
        ran.append(amount)
        return f"paid {amount}"

    provider = ScriptedProvider([[ToolCall("call-9", "pay", {"amount": 500})], "Paid 50."])
    agent = Agent(provider, tools=[pay], name="bank")

    def edit(args: Any) -> list[dict[str, Any]]:
        entry = {"interruptId": "call-9", "status": "resolved", "payload": {"approved": True, "editedArgs": args}}
        ResumeEntry.model_validate(entry)
        return [entry]

    async with Runtime() as rt:
        async with served(agui_app(agent, runtime=rt, sessions=True)) as client:
            (interrupt,) = interrupted(await events_of(client, thread_body("run-1", ("user", "Pay 500."))))
            edited = interrupt.response_schema["properties"]["editedArgs"]
            assert edited["type"] == "object" and edited["properties"]["amount"]["type"] == "integer"
            for n, bad in enumerate(({"amount": "fifty"}, {}, {"amount": 50, "to": "me"}, "50", [50])):
                refused = await events_of(client, thread_body(f"run-b{n}", ("user", "x"), resume=edit(bad)))
                assert [e.type for e in refused] == [EventType.RUN_STARTED, EventType.RUN_ERROR]
                assert refused[-1].code == "InvalidResumePayload" and "editedArgs" in refused[-1].message, bad
                assert rt.session(agent, "thread-1").paused, "nothing was decided"
            assert ran == [] and len(provider.requests) == 1
            done = await events_of(client, thread_body("run-2", ("user", "x"), resume=edit({"amount": 50})))
    assert ran == [50], "the call ran with the person's arguments"
    results = [(e.tool_call_id, e.content) for e in done if e.type == EventType.TOOL_CALL_RESULT]
    assert results == [("call-9", "paid 50")]
    assert done[-1].type == EventType.RUN_FINISHED and done[-1].outcome is None
    (made,) = [c for m in provider.requests[-1].messages for c in m.tool_calls]
    assert (made.id, made.arguments) == ("call-9", {"amount": 50}), "the model reads the call as it ran"


# --- a resumed run streamed live -------------------------------------------------------------------------------


class HeldAfterFirstDelta(ScriptedProvider):
    """A scripted model whose answer to request number ``held`` (from 1) stops after its first text delta until
    ``release`` is set: the run is live, half-way through its answer, while the test reads its stream."""

    def __init__(self, script: Any, *, held: int) -> None:
        super().__init__(script)
        self.held = held
        self.holding = anyio.Event()
        self.release = anyio.Event()

    def stream(self, request: LLMRequest) -> Any:
        inner = super().stream(request)
        return self._held(inner) if self.calls == self.held else inner

    @asynccontextmanager
    async def _held(self, inner: Any) -> AsyncIterator[Any]:
        async with inner as events:

            async def held() -> Any:
                first = True
                async for event in events:
                    yield event
                    if first and isinstance(event, TextDelta):
                        first = False
                        self.holding.set()
                        await self.release.wait()

            gen = held()
            try:
                yield gen
            finally:
                with anyio.CancelScope(shield=True):
                    await gen.aclose()


class Reader:
    """A streamed response's events, read a part at a time (its lines can be iterated only once)."""

    def __init__(self, response: httpx.Response) -> None:
        self.lines = response.aiter_lines()
        self.events: list[Any] = []

    async def until(self, kind: EventType) -> list[Any]:
        """Read up to the first event of ``kind``, leaving the rest unread; all read so far."""
        async for line in self.lines:
            if line.startswith("data: "):
                self.events.append(checked(json.loads(line[6:])))
                if self.events[-1].type == kind:
                    return self.events
        raise AssertionError(f"the stream ended before a {kind}: {[e.type for e in self.events]}")

    async def rest(self) -> list[Any]:
        self.events.extend([checked(json.loads(line[6:])) async for line in self.lines if line.startswith("data: ")])
        return self.events


def without_snapshots(events: list[Any]) -> list[Any]:
    return [e.type for e in events if e.type != EventType.STATE_SNAPSHOT]


async def test_a_resumed_runs_events_come_as_they_happen() -> None:
    """A resumed run's events were told from its result once it had ended: a client saw nothing of it — not its
    approved call's result, not a token of its answer — until its end.  They now come as they happen, as a new
    run's do: the decided call's result first (against the id the interrupted run showed), then the answer as it
    streams, then RUN_FINISHED."""
    from agentactors import Runtime

    provider = HeldAfterFirstDelta(
        [[ToolCall("call-9", "transfer", {"amount": 5})], "Moved five units to the account."], held=2
    )
    agent = Agent(provider, tools=[transfer], name="bank")
    async with Runtime() as rt:
        async with served(agui_app(agent, runtime=rt, sessions=True)) as client:
            await events_of(client, thread_body("run-1", ("user", "Move 5.")))
            body = thread_body("run-2", ("user", "Move 5."), resume=[answer("call-9", True)])
            async with client.stream("POST", "/", json=body) as response:
                reader = Reader(response)
                with anyio.fail_after(10):
                    events = await reader.until(EventType.TEXT_MESSAGE_CONTENT)
                # the client has the approved call's result and the answer's first words; the run is still going
                assert provider.holding.is_set() and not provider.release.is_set()
                assert without_snapshots(events) == [
                    EventType.RUN_STARTED, EventType.TOOL_CALL_RESULT, EventType.TEXT_MESSAGE_START,
                    EventType.TEXT_MESSAGE_CONTENT,
                ]
                provider.release.set()
                with anyio.fail_after(10):
                    await reader.rest()
            history = [(m.role, m.content) for m in rt.session(agent, "thread-1").history]
    types = without_snapshots(events)
    assert types == [
        EventType.RUN_STARTED, EventType.TOOL_CALL_RESULT, EventType.TEXT_MESSAGE_START,
        *[EventType.TEXT_MESSAGE_CONTENT] * (len(types) - 5), EventType.TEXT_MESSAGE_END, EventType.RUN_FINISHED,
    ]
    assert len(types) > 6, "the answer came in several deltas, as it streamed"
    result = next(e for e in events if e.type == EventType.TOOL_CALL_RESULT)
    assert (result.tool_call_id, result.content) == ("call-9", "moved 5")
    assert "".join(e.delta for e in events if e.type == EventType.TEXT_MESSAGE_CONTENT) == (
        "Moved five units to the account.")
    assert (events[-1].run_id, events[-1].outcome) == ("run-2", None)
    snapshots = [e.snapshot["agentactors"] for e in events if e.type == EventType.STATE_SNAPSHOT]
    assert snapshots and snapshots[-1]["pending"] == []
    assert history[-1] == ("assistant", "Moved five units to the account."), "committed to the thread"


async def test_a_client_back_while_its_resumed_run_streams_gets_all_its_events_then_the_rest_live() -> None:
    """A client that leaves a resumed run mid-answer does not cancel it; posting the same answers again while it
    still goes gets every event it has had so far at once — the call's result, the answer's first words — and the
    rest as they come; once it has ended, the same answers get its outcome at once.  Nothing runs twice."""
    from agentactors import Runtime

    provider = HeldAfterFirstDelta(
        [[ToolCall("call-9", "transfer", {"amount": 5})], "Moved five units to the account."], held=2
    )
    agent = Agent(provider, tools=[transfer], name="bank")
    resume = [answer("call-9", True)]
    async with Runtime() as rt:
        app = Watched(agui_app(agent, runtime=rt, sessions=True))
        async with served(app) as client:
            await events_of(client, thread_body("run-1", ("user", "Move 5.")))
            async with client.stream("POST", "/", json=thread_body("run-2", ("user", "Move 5."), resume=resume)) as r:
                with anyio.fail_after(10):
                    first = await Reader(r).until(EventType.TEXT_MESSAGE_CONTENT)
            with anyio.fail_after(10):
                await app.disconnected.wait()  # the client left mid-answer
            async with client.stream("POST", "/", json=thread_body("run-3", ("user", "Move 5."), resume=resume)) as r:
                reader = Reader(r)
                with anyio.fail_after(10):
                    retried = await reader.until(EventType.TEXT_MESSAGE_CONTENT)
                assert provider.holding.is_set() and not provider.release.is_set(), "still going, not run again"
                provider.release.set()
                with anyio.fail_after(10):
                    await reader.rest()
            later = await events_of(client, thread_body("run-4", ("user", "Move 5."), resume=resume))
            history = [(m.role, m.content) for m in rt.session(agent, "thread-1").history]
    assert without_snapshots(first) == without_snapshots(retried)[:4]
    assert len(provider.requests) == 2, "no second run"
    assert history[-1] == ("assistant", "Moved five units to the account.")
    for events, run_id in ((retried, "run-3"), (later, "run-4")):
        assert (events[0].type, events[0].run_id) == (EventType.RUN_STARTED, run_id)
        assert [(e.tool_call_id, e.content) for e in events if e.type == EventType.TOOL_CALL_RESULT] == [
            ("call-9", "moved 5")]
        assert "".join(e.delta for e in events if e.type == EventType.TEXT_MESSAGE_CONTENT) == (
            "Moved five units to the account.")
        assert (events[-1].type, events[-1].run_id, events[-1].outcome) == (EventType.RUN_FINISHED, run_id, None)


async def test_a_post_to_a_thread_whose_resumed_run_is_live_steers_it() -> None:
    """A resumed run had no handle: a message posted to its thread while it ran waited for its end and became the
    next run.  It is now steered into the resumed run, as into any live run: the post ends at once, saying so, and
    the run reads the message at its next step boundary; the thread commits it."""
    from agentactors import Runtime

    entered, gate = anyio.Event(), anyio.Event()

    @tool(requires_approval=True)
    async def wire(amount: int) -> str:
        """Move money, slowly (a person approves each call)."""
        entered.set()
        await gate.wait()
        return f"wired {amount}"

    provider = ScriptedProvider([[ToolCall("call-9", "wire", {"amount": 5})], "Wired 5, and noted."])
    agent = Agent(provider, tools=[wire], name="bank")
    async with Runtime() as rt:
        async with served(agui_app(agent, runtime=rt, sessions=True)) as client:
            await events_of(client, thread_body("run-1", ("user", "Wire 5.")))
            resumed: list[Any] = []

            async def resume() -> None:
                body = thread_body("run-2", ("user", "Wire 5."), resume=[answer("call-9", True)])
                resumed.extend(await events_of(client, body))

            async with anyio.create_task_group() as tg:
                tg.start_soon(resume)
                with anyio.fail_after(10):
                    await entered.wait()
                    steer = await events_of(client, thread_body(
                        "run-s", ("user", "Wire 5."), ("user", "Note it as rent.")))
                gate.set()
            history = [(m.role, m.content) for m in rt.session(agent, "thread-1").history]
    assert [e.type for e in steer] == [EventType.RUN_STARTED, EventType.RUN_FINISHED]
    assert steer[-1].result == {"steered": "run-2"}, "the message went to the resumed run"
    assert ("user", "Note it as rent.") in [(m.role, m.content) for m in provider.requests[-1].messages]
    assert len(provider.requests) == 2, "read by the resumed run, not run as a turn of its own"
    assert resumed[-1].type == EventType.RUN_FINISHED and resumed[-1].outcome is None
    assert "".join(e.delta for e in resumed if e.type == EventType.TEXT_MESSAGE_CONTENT) == "Wired 5, and noted."
    assert ("user", "Note it as rent.") in history and history[-1] == ("assistant", "Wired 5, and noted.")


# --- context: what the frontend shares with the agent for the run (CopilotKit's useCopilotReadable) -----------


CART = {"description": "The user's cart", "value": "2 apples"}
DOCUMENT = {"description": "The open document", "value": "Report\nQ3 numbers"}


def systems(request: LLMRequest) -> list[str]:
    return [m.content for m in request.messages if m.role == "system"]


def said(messages: Any) -> str:
    """Everything the conversation's non-system messages say, as one text."""
    return "\n".join(str(m.content) for m in messages if m.role != "system")


async def test_the_frontends_context_reaches_the_model_as_the_runs_instructions_not_as_a_users_message() -> None:
    provider = ScriptedProvider(["noted"])
    agent = Agent(provider, system="Be brief.", name="a")
    body = run_input(context=[CART, DOCUMENT], messages=[
        {"id": "s", "role": "system", "content": "Use metric units."},
        {"id": "u1", "role": "user", "content": "What is in my cart?"},
    ])
    async with served(agui_app(agent)) as client:
        events = await events_of(client, body)
    assert events[-1].type == EventType.RUN_FINISHED
    (request,) = provider.requests
    assert systems(request) == [
        "Be brief.\n\nUse metric units.\n\nContext from the application:\n- The user's cart: 2 apples\n"
        "- The open document: Report\n  Q3 numbers"
    ]
    assert [(m.role, m.content) for m in request.messages[1:]] == [("user", "What is in my cart?")]


async def test_with_sessions_each_run_sees_its_own_requests_context_and_the_thread_keeps_none_of_it() -> None:
    from agentactors import Runtime
    from agentactors.sessions import MemoryStore

    store = MemoryStore()
    provider = ScriptedProvider(lambda request: f"answer {len(provider.requests)}")
    agent = Agent(provider, name="chat")
    async with Runtime() as rt, served(agui_app(agent, runtime=rt, sessions=True, store=store)) as client:
        await events_of(client, thread_body("run-1", ("user", "one"), context=[CART]))
        await events_of(client, thread_body("run-2", ("user", "two"), context=[DOCUMENT]))
        await events_of(client, thread_body("run-3", ("user", "three")))
    first, second, third = provider.requests
    assert systems(first) == ["Context from the application:\n- The user's cart: 2 apples"]
    assert systems(second) == ["Context from the application:\n- The open document: Report\n  Q3 numbers"], (
        "the run's own context, not an earlier run's"
    )
    assert systems(third) == [], "a run without context has none"
    assert [(m.role, m.content) for m in third.messages] == [
        ("user", "one"), ("assistant", "answer 1"), ("user", "two"), ("assistant", "answer 2"), ("user", "three")
    ]
    record = await store.load("thread-1")
    assert record is not None and [m.role for m in record.messages] == ["user", "assistant"] * 3
    assert "apples" not in said(record.messages) and "Q3" not in said(record.messages)


async def test_a_paused_thread_keeps_no_context_and_its_resumed_run_sees_the_resuming_requests() -> None:
    from agentactors import Runtime
    from agentactors.sessions import MemoryStore

    store = MemoryStore()
    provider = ScriptedProvider([[ToolCall("call-9", "transfer", {"amount": 5})], "Moved 5."])
    agent = Agent(provider, tools=[transfer], system="You move money.", name="bank")
    async with Runtime() as rt, served(agui_app(agent, runtime=rt, sessions=True, store=store)) as client:
        paused = await events_of(client, thread_body("run-1", ("user", "Move 5."), context=[CART]))
        assert [i.id for i in interrupted(paused)] == ["call-9"]
        record = await store.load("thread-1")
        assert record is not None and record.paused is not None
        assert all("apples" not in str(m.content) for m in record.paused.messages), "the stored pause has none"
        resumed = await events_of(
            client, thread_body("run-2", ("user", "Move 5."), resume=[answer("call-9", True)], context=[DOCUMENT])
        )
        history = (await rt.session(agent, "thread-1", store=store).refresh()).history
    assert resumed[-1].type == EventType.RUN_FINISHED and resumed[-1].outcome is None
    first, after = provider.requests
    assert systems(first) == ["You move money.\n\nContext from the application:\n- The user's cart: 2 apples"]
    assert systems(after) == [
        "You move money.\n\nContext from the application:\n- The open document: Report\n  Q3 numbers"
    ]
    assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"]
    assert "apples" not in said(history) and "Q3" not in said(history)


async def test_context_of_another_shape_or_past_its_bounds_is_refused_before_any_event() -> None:
    agent = Agent(ScriptedProvider(["never"]), name="a")
    async with served(agui_app(agent)) as client:
        for context in ([{"description": "cart"}], [{"description": "cart", "value": {"n": 2}}],
                        [{"description": "d", "value": "private " + "x" * 100_000}]):
            body = {**run_input(), "context": context}
            response = await client.post("/", json=body)
            assert response.status_code == 422, context
            assert "context[0]" in response.json()["detail"] and "private" not in response.json()["detail"]


# --- how a run ends: a typed str output, a failure that is no generation failure, an output JSON cannot carry -------


async def test_a_typed_output_that_is_a_str_is_the_results_str() -> None:
    """A typed output that is a str (a Literal pick, ``ToolOutput(str)``) was parsed as JSON text: ``"hello"``
    raised out of the app (a 500 after the stream began: no RUN_FINISHED), ``"42"`` came as the number 42."""
    from typing import Literal

    from agentactors.output import ToolOutput

    pick = Agent(ScriptedProvider(['{"response": "red"}']), output_type=Literal["red", "blue"], name="pick")  # type: ignore[arg-type]
    async with served(agui_app(pick)) as client:
        events = await events_of(client, run_input())
    assert events[-1].type == EventType.RUN_FINISHED and events[-1].result == "red"
    for said_ in ("hello", "42", "null", '{"a": 1}'):
        call = ToolCall("o1", "final_result", {"response": said_})
        agent = Agent(ScriptedProvider([[call]]), output_type=ToolOutput(str), name="words")
        async with served(agui_app(agent)) as client:
            events = await events_of(client, run_input())
        assert events[-1].type == EventType.RUN_FINISHED, said_
        assert events[-1].result == said_ and type(events[-1].result) is str, "the str itself, not JSON it reads as"


async def test_a_resumed_typed_run_whose_output_is_a_str_finishes_with_it() -> None:
    """The resumed run's stream ends through the same ``finish``: its str output is the result too."""
    from agentactors import Runtime
    from agentactors.output import ToolOutput

    provider = ScriptedProvider([
        [ToolCall("call-9", "transfer", {"amount": 5})], [ToolCall("o1", "final_result", {"response": "done"})],
    ])
    agent = Agent(provider, tools=[transfer], output_type=ToolOutput(str), name="bank")
    async with Runtime() as rt, served(agui_app(agent, runtime=rt, sessions=True)) as client:
        interrupted(await events_of(client, thread_body("run-1", ("user", "Move 5."))))
        resumed = await events_of(client, thread_body("run-2", ("user", "Move 5."), resume=[answer("call-9", True)]))
    assert resumed[-1].type == EventType.RUN_FINISHED and resumed[-1].result == "done"


async def test_a_typed_output_json_cannot_carry_ends_with_run_error_not_a_broken_stream() -> None:
    """An output validator may hand back what JSON has no number for (a NaN): the run ends with RUN_ERROR saying so,
    with or without sessions — never an exception out of the app, nor ``NaN`` on the wire."""
    from agentactors import Runtime
    from agentactors.output import ToolOutput

    for sessions in (False, True):
        agent = Agent(
            ScriptedProvider([[ToolCall("o1", "final_result", {"response": 1.5})]]),
            output_type=ToolOutput(float), output_validator=lambda value: float("nan"), name="measure",
        )
        async with Runtime() as rt, served(agui_app(agent, runtime=rt, sessions=sessions)) as client:
            events = await events_of(client, run_input())
        assert events[-1].type == EventType.RUN_ERROR, sessions
        assert events[-1].code == "output_unsendable" and "JSON" in events[-1].message
        assert events[-2].type != EventType.STATE_SNAPSHOT, "a run that ends with RUN_ERROR has no final snapshot"


@attrs.frozen
class Sky:
    sky: str


async def test_a_run_that_failed_after_a_step_ends_with_run_error_and_its_thread_keeps_nothing() -> None:
    """A run whose ``error`` is set without ``generation_failed`` — its provider failed after an earlier step, its
    typed answer never validated — failed: it ended with RUN_FINISHED, a success to the client, while a session kept
    nothing of it.  It ends with RUN_ERROR (the failure's kind, never the vendor's text); with sessions, the thread
    is as it was, so the client's retry of the same message is the thread's next turn."""
    from agentactors import LLMResponse, Runtime

    def failing_after_a_step() -> Agent[Any]:
        script: list[Any] = [
            LLMResponse(content="Checking Oslo.", tool_calls=(ToolCall("c1", "lookup", {"city": "Oslo"}),)),
            ProviderError("account acct-7731 suspended", kind=ErrorKind.account, provider="x"),
            "Clear in Oslo.",
        ]
        return Agent(ScriptedProvider(script), tools=[lookup], name="weather")

    def never_valid() -> Agent[Any]:
        return Agent(ScriptedProvider(lambda request: '{"sky": 1}'), output_type=Sky, name="typed")

    for make, code, says in (
        (failing_after_a_step, "ProviderError", "refused the server's account"),
        (never_valid, "OutputValidationError", "OutputValidationError"),
    ):
        for sessions in (False, True):
            agent = make()
            async with Runtime() as rt, served(agui_app(agent, runtime=rt, sessions=sessions)) as client:
                events = await events_of(client, thread_body("run-1", ("user", "Oslo?")))
                history = rt.session(agent, "thread-1").history if sessions else ()
                again = await events_of(client, thread_body("run-2", ("user", "Oslo?"))) if sessions else []
            where = (code, sessions)
            assert events[-1].type == EventType.RUN_ERROR, where
            assert events[-1].code == code and says in events[-1].message, where
            assert "acct-7731" not in events[-1].message and "sky" not in events[-1].message, where
            assert history == (), "the failed turn was not committed"
            if sessions and code == "ProviderError":
                assert again[-1].type == EventType.RUN_FINISHED, "the retry is the thread's turn, on an intact history"
                assert "".join(e.delta for e in again if e.type == EventType.TEXT_MESSAGE_CONTENT) == "Clear in Oslo."


async def test_a_typed_run_that_stopped_at_its_step_limit_with_no_answer_ends_with_run_error() -> None:
    """A typed agent that reached ``max_steps`` before any answer has no result to send: RUN_ERROR ``no_answer`` (as
    the OpenAI endpoint's), not a RUN_FINISHED whose missing result reads as success.  A text agent's bounded run
    still finishes: its last answer is what it said."""
    from typing import Literal

    Pick = Literal["a", "b"]

    def looping(request: LLMRequest) -> list[ToolCall]:
        return [ToolCall(f"c{len(request.messages)}", "lookup", {"city": "Oslo"})]

    typed = Agent(ScriptedProvider(looping), tools=[lookup], output_type=Pick, name="t", max_steps=2)  # type: ignore[arg-type]
    text = Agent(ScriptedProvider(looping), tools=[lookup], name="x", max_steps=2)
    async with served(agui_app(typed)) as client:
        events = await events_of(client, run_input())
    assert events[-1].type == EventType.RUN_ERROR and events[-1].code == "no_answer"
    assert "step limit" in events[-1].message
    async with served(agui_app(text)) as client:
        events = await events_of(client, run_input())
    assert events[-1].type == EventType.RUN_FINISHED
    # with sessions: the same end, and the thread keeps the steps, as a session commits any bounded turn
    from agentactors import Runtime

    typed = Agent(ScriptedProvider(looping), tools=[lookup], output_type=Pick, name="t", max_steps=2)  # type: ignore[arg-type]
    async with Runtime() as rt, served(agui_app(typed, runtime=rt, sessions=True)) as client:
        events = await events_of(client, thread_body("run-1", ("user", "Oslo?")))
        history = rt.session(typed, "thread-1").history
    assert events[-1].type == EventType.RUN_ERROR and events[-1].code == "no_answer"
    assert [m.role for m in history][:2] == ["user", "assistant"]


async def test_a_resumed_run_that_failed_ends_with_run_error() -> None:
    from agentactors import LLMResponse, Runtime

    script: list[Any] = [
        [ToolCall("call-9", "transfer", {"amount": 5})],
        LLMResponse(content="Moving.", tool_calls=(ToolCall("c2", "lookup", {"city": "Oslo"}),)),
        ProviderError("vendor text 5521", kind=ErrorKind.transient, provider="x"),
    ]
    agent = Agent(ScriptedProvider(script), tools=[transfer, lookup], name="bank")
    async with Runtime() as rt, served(agui_app(agent, runtime=rt, sessions=True)) as client:
        interrupted(await events_of(client, thread_body("run-1", ("user", "Move 5."))))
        resumed = await events_of(client, thread_body("run-2", ("user", "Move 5."), resume=[answer("call-9", True)]))
    assert resumed[-1].type == EventType.RUN_ERROR and resumed[-1].code == "ProviderError"
    assert "5521" not in resumed[-1].message


# --- numbers JSON does not have, and a tool's reason for failing --------------------------------------------------


async def test_nan_or_infinity_in_the_body_is_refused_not_echoed_as_non_json() -> None:
    """Python's parser reads ``NaN`` and ``Infinity`` (and ``1e999`` as an infinity); the client's ``state`` came
    back in STATE_SNAPSHOT as ``NaN`` — no JSON, so a browser's ``JSON.parse`` fails on the event.  Refused as a 400
    before any event, saying why."""
    agent = Agent(ScriptedProvider(["never"]), name="a")
    typed = {"content-type": "application/json"}
    async with served(agui_app(agent)) as client:
        for number in (b"NaN", b"Infinity", b"-Infinity", b"1e999", b"[1, -1e400]"):
            raw = (b'{"threadId":"t","runId":"r","state":{"budget":' + number
                   + b'},"messages":[{"id":"m","role":"user","content":"x"}]}')
            response = await client.post("/", content=raw, headers=typed)
            assert response.status_code == 400, number
            detail = response.json()["detail"]
            assert "NaN" in detail and "Infinity" in detail and "state.budget" in detail
        fine = await events_of(client, run_input(state={"budget": 1e300, "note": "NaN Infinity"}))
    assert fine[1].snapshot["budget"] == 1e300 and fine[1].snapshot["note"] == "NaN Infinity"


async def test_a_tool_messages_error_reason_reaches_the_model() -> None:
    """AG-UI 1.0's ToolMessage ``error`` is a string, why the tool failed: it reaches the model with the result."""
    provider = ScriptedProvider(["ok", "ok", "ok"])
    agent = Agent(provider, name="a")
    call = {"id": "c1", "type": "function", "function": {"name": "pay", "arguments": "{}"}}

    def body(content: str, error: str) -> dict[str, Any]:
        tool_message = {"id": "t1", "role": "tool", "toolCallId": "c1", "content": content, "error": error}
        return run_input(messages=[
            {"id": "u1", "role": "user", "content": "Pay."}, {"id": "a1", "role": "assistant", "toolCalls": [call]},
            tool_message, {"id": "u2", "role": "user", "content": "Well?"},
        ])

    async with served(agui_app(agent)) as client:
        for content in ("not paid", "", "card declined"):
            await events_of(client, body(content, "card declined"))
    tools = [next(m for m in r.messages if m.role == "tool") for r in provider.requests]
    assert all(m.is_error for m in tools)
    assert [m.content for m in tools] == ["not paid\n\nError: card declined", "Error: card declined", "card declined"]
