"""A thread's live run as the AG-UI app keeps it: which posted messages are new to it, the steers that arrive
before its handle exists — taken when it starts, given back when it ends without starting — and a run that has
ended."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from agentactors.actors.runtime import Runtime
from agentactors.agent.core import Agent
from agentactors.errors import RunFinishedError
from agentactors.messages import LLMRequest, Message
from agentactors.providers.scripted import ScriptedProvider
from agentactors.serve import agui_app
from agentactors.serve._agui_input import read_run_input
from agentactors.serve.agui import _Live
from agentactors.sessions import MemoryStore, SessionRecord

pytestmark = pytest.mark.anyio


def posted(*messages: tuple[str | None, str, str]) -> Any:
    raw = [{"role": role, "content": text, **({"id": given} if given else {})} for given, role, text in messages]
    return read_run_input({"threadId": "t", "runId": "r", "messages": raw})


class Handle:
    """What ``_Live`` needs of an AgentRun: ``steer``, raising once the run has finished."""

    def __init__(self) -> None:
        self.steered: list[str] = []
        self.finished = False

    async def steer(self, message: Message) -> None:
        if self.finished:
            raise RunFinishedError("finished")
        self.steered.append(message.content)


async def steer_into(live: _Live, run_input: Any, outcomes: list[str]) -> None:
    outcomes.append(await live.steer(run_input))


@pytest.mark.virtual_time
async def test_steers_before_the_run_started_are_given_to_it_in_order_when_it_does() -> None:
    live = _Live(posted(("u1", "user", "one")))
    handle = Handle()
    outcomes: list[str] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(steer_into, live, posted(("u1", "user", "one"), ("u2", "user", "two")), outcomes)
        await anyio.sleep(1)  # virtual time: it passes once every task waits
        tg.start_soon(
            steer_into, live, posted(("u1", "user", "one"), ("u2", "user", "two"), ("u3", "user", "three")), outcomes
        )
        await anyio.sleep(1)
        assert outcomes == [], "a steer before the run started waits for it to start"
        await live.attach(handle)  # type: ignore[arg-type]
    assert outcomes == ["steered", "steered"]
    assert handle.steered == ["two", "three"], "each once, in order"
    assert await live.steer(posted(("u4", "user", "four"))) == "steered"
    assert handle.steered == ["two", "three", "four"]


@pytest.mark.virtual_time
async def test_steers_before_a_run_that_ended_without_starting_are_given_back() -> None:
    live = _Live(posted(("u1", "user", "one")))
    outcomes: list[str] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(steer_into, live, posted(("u2", "user", "two")), outcomes)
        tg.start_soon(steer_into, live, posted(("u3", "user", "three")), outcomes)
        await anyio.sleep(1)
        live.end()  # the turn failed before its run started: nothing took the steers
    assert outcomes == ["ended", "ended"], "each request is told, and runs its messages itself"
    assert await live.steer(posted(("u4", "user", "four"))) == "ended"


@pytest.mark.virtual_time
async def test_steers_before_a_run_that_ended_as_it_started_are_given_back() -> None:
    live = _Live(posted(("u1", "user", "one")))
    handle = Handle()
    handle.finished = True
    outcomes: list[str] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(steer_into, live, posted(("u2", "user", "two")), outcomes)
        await anyio.sleep(1)
        await live.attach(handle)  # type: ignore[arg-type]
    assert outcomes == ["ended"] and handle.steered == []


async def test_nothing_new_is_not_a_steer_and_an_ended_run_takes_none() -> None:
    live = _Live(posted(("u1", "user", "one")))
    handle = Handle()
    await live.attach(handle)  # type: ignore[arg-type]
    assert await live.steer(posted(("u1", "user", "one"))) == "nothing"
    handle.finished = True
    assert await live.steer(posted(("u2", "user", "two"))) == "ended"
    live.finished = True
    assert await live.steer(posted(("u3", "user", "three"))) == "ended"
    assert handle.steered == []


async def test_without_ids_the_messages_after_the_last_answer_are_new() -> None:
    live = _Live(posted((None, "user", "one")))
    handle = Handle()
    await live.attach(handle)  # type: ignore[arg-type]
    thread = posted((None, "user", "one"), (None, "assistant", "first"), (None, "user", "two"))
    assert await live.steer(thread) == "steered" and handle.steered == ["two"]


# --- in the app: a thread's turn that fails before its run starts leaves the steers to their requests ---------


class DownOnce(MemoryStore):
    """A store whose first load waits for ``gate`` and then fails: the thread's first turn never starts."""

    def __init__(self) -> None:
        super().__init__()
        self.loading = anyio.Event()
        self.gate = anyio.Event()

    async def load(self, key: str) -> SessionRecord | None:
        if not self.loading.is_set():
            self.loading.set()
            await self.gate.wait()
            raise OSError("the store is down")
        return await super().load(key)


async def post(app: Any, body: dict[str, Any]) -> list[dict[str, Any]]:
    """``body`` POSTed to the ASGI ``app`` as a server would (the client stays): the events it answered."""
    pending = [{"type": "http.request", "body": json.dumps(body).encode(), "more_body": False}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if pending:
            return pending.pop()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    headers = [(b"content-type", b"application/json")]
    scope = {"type": "http", "method": "POST", "path": "/", "root_path": "", "headers": headers}
    await app(scope, receive, send)
    text = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body").decode()
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


def thread(run_id: str, *users: str) -> dict[str, Any]:
    messages = [{"id": text, "role": "user", "content": text} for text in users]
    return {"threadId": "t", "runId": run_id, "messages": messages}


@pytest.mark.virtual_time
async def test_a_steer_to_a_turn_that_failed_before_starting_is_the_threads_next_turn_not_lost() -> None:
    seen: list[list[str]] = []

    def model(request: LLMRequest) -> str:
        seen.append([m.content for m in request.messages if m.role == "user"])
        return "answer to " + " + ".join(seen[-1])

    agent = Agent(ScriptedProvider(model), name="chat")
    store = DownOnce()
    answers: dict[str, list[dict[str, Any]]] = {}

    async def request(run_id: str, *users: str) -> None:
        answers[run_id] = await post(app, thread(run_id, *users))

    async with Runtime() as rt:
        app = agui_app(agent, runtime=rt, sessions=True, store=store)
        async with anyio.create_task_group() as tg:
            tg.start_soon(request, "run-1", "Bergen?")
            await store.loading.wait()  # the first turn is loading its session: its run has not started
            tg.start_soon(request, "run-2", "Oslo too.")
            await anyio.sleep(1)  # virtual time: the steer waits for the run
            tg.start_soon(request, "run-3", "And Tromsø.")
            await anyio.sleep(1)
            assert not answers, "both steers wait for the run to start"
            store.gate.set()
        history = [m.content for m in (await rt.session(agent, "t", store=store).refresh()).history]
    failed = answers["run-1"]
    assert failed[-1]["type"] == "RUN_ERROR" and failed[-1]["code"] == "OSError"
    # one of the waiting requests ran its message as the thread's next turn, the other steered that run
    ends = {run_id: answers[run_id][-1] for run_id in ("run-2", "run-3")}
    assert all(end["type"] == "RUN_FINISHED" for end in ends.values()), ends
    (ran,) = [run_id for run_id, end in ends.items() if "result" not in end]
    (steered,) = [end["result"] for run_id, end in ends.items() if run_id != ran]
    assert steered == {"steered": ran}
    assert sorted(seen[-1]) == ["And Tromsø.", "Oslo too."], "nothing lost, nothing twice"
    users = [text for text in history if not text.startswith("answer")]
    assert sorted(users) == ["And Tromsø.", "Oslo too."], "the thread's history: the turn that ran, with its steer"


class SlowCommit(MemoryStore):
    """A store whose first commit waits for ``gate``: the thread's run has ended, its turn is not committed yet."""

    def __init__(self) -> None:
        super().__init__()
        self.committing = anyio.Event()
        self.gate = anyio.Event()

    async def commit(self, record: SessionRecord, *, expected_version: int | None) -> SessionRecord:
        if not self.committing.is_set():
            self.committing.set()
            await self.gate.wait()
        return await super().commit(record, expected_version=expected_version)


@pytest.mark.virtual_time
async def test_a_post_while_the_threads_ended_run_commits_is_the_next_turn_on_the_committed_history() -> None:
    seen: list[list[str]] = []

    def model(request: LLMRequest) -> str:
        seen.append([m.content for m in request.messages if m.role == "user"])
        return "answer"

    agent = Agent(ScriptedProvider(model), name="chat")
    store = SlowCommit()
    answers: dict[str, list[dict[str, Any]]] = {}

    async def request(run_id: str, *users: str) -> None:
        answers[run_id] = await post(app, thread(run_id, *users))

    async with Runtime() as rt:
        app = agui_app(agent, runtime=rt, sessions=True, store=store)
        async with anyio.create_task_group() as tg:
            tg.start_soon(request, "run-1", "Bergen?")
            await store.committing.wait()  # run-1 has ended: its request is committing the turn
            tg.start_soon(request, "run-2", "Oslo?")
            await anyio.sleep(1)
            store.gate.set()
    assert [answers[r][-1]["type"] for r in ("run-1", "run-2")] == ["RUN_FINISHED", "RUN_FINISHED"]
    assert "result" not in answers["run-2"][-1], "a run of its own, not a steer the ended run never read"
    assert seen == [["Bergen?"], ["Bergen?", "Oslo?"]]
