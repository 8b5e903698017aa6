"""A thread's live run as the AG-UI app keeps it: which posted messages are new to it, the steers that arrive
before its handle exists, and a run that has ended."""

from __future__ import annotations

from typing import Any

import pytest

from agentactors.errors import RunFinishedError
from agentactors.messages import Message
from agentactors.serve._agui_input import read_run_input
from agentactors.serve.agui import _Live

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


async def test_steers_before_the_run_started_are_given_to_it_in_order_when_it_does() -> None:
    live = _Live(posted(("u1", "user", "one")))
    assert await live.steer(posted(("u1", "user", "one"), ("u2", "user", "two"))) == "steered"
    assert await live.steer(posted(("u1", "user", "one"), ("u2", "user", "two"), ("u3", "user", "three"))) == "steered"
    handle = Handle()
    await live.attach(handle)  # type: ignore[arg-type]
    assert handle.steered == ["two", "three"], "each once, in order"
    assert await live.steer(posted(("u4", "user", "four"))) == "steered"
    assert handle.steered == ["two", "three", "four"]


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
