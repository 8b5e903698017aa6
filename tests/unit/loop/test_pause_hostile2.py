"""A controller made by hand (no agent layer to check first) resuming a pause: an unnamed agent's pause does not go
on in a named agent's seat — an unnamed agent is no handoff's target, so its pause is its own.  Both backends."""

from __future__ import annotations

from typing import Any

import pytest

from agentactors.loop.config import LoopConfig
from agentactors.loop.controller import LoopController
from agentactors.loop.pause import PausedRun
from agentactors.messages import Message, ToolCall

pytestmark = pytest.mark.anyio


class _Never:
    async def ask(self, message: Any) -> Any:
        raise AssertionError("nothing may be sent: the pause is not this agent's")


def _unnamed_pause() -> PausedRun:
    call = ToolCall("r1", "refund", {"amount": 5})
    return PausedRun(
        "run-1",
        (Message.user("refund 5"), Message.assistant("", [call])),
        (call,),
        (),
        (call,),
        {"r1": "the tool requires approval"},
        step=1,
        agent=None,
    )


async def test_a_named_controller_refuses_to_resume_an_unnamed_agents_pause() -> None:
    paused = _unnamed_pause()
    controller = LoopController(
        LoopConfig(agent_name="other"), _Never(), _Never(), list(paused.messages), resume=(paused, {"r1": True})
    )
    with pytest.raises(ValueError, match="unnamed agent"):
        await controller.run()
