"""An empty steer is refused (docs/loop.md, "Live runs").

Found by a new user's trial of the page: ``await run.steer("")`` — a UI's send button pressed on an empty box —
was taken, an empty user message joined the conversation, and a steer arriving while the model wrote its final
answer made the run take one more model call (a step of ``max_steps``, and its cost) to read nothing.
``agent.run("")`` is refused for the same reason ("a run needs a prompt"); a steer now is too, with a
``ValueError`` and nothing sent, as a tool message is.  Asyncio and trio, virtual time.
"""

from __future__ import annotations

import anyio
import pytest

from agentactors import Agent
from agentactors.events import InMemoryRecorder
from agentactors.messages import LLMRequest, Message
from agentactors.parts import Image
from agentactors.providers.scripted import ScriptedProvider

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

_PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


async def _answer_slowly(request: LLMRequest) -> str:
    await anyio.sleep(1)
    return f"answer {len(request.messages)}"


@pytest.mark.parametrize("empty", ["", Message.user("")], ids=["str", "message"])
async def test_an_empty_steer_is_refused_and_costs_no_model_call(empty: str | Message) -> None:
    provider = ScriptedProvider(_answer_slowly)
    rec = InMemoryRecorder()
    async with Agent(provider, recorders=[rec]).stream("go") as run:
        await anyio.sleep(0.5)  # the model is writing its final answer
        with pytest.raises(ValueError, match="empty"):
            await run.steer(empty)
        result = await run.wait()
    assert result.ok and result.steps == 1 and provider.calls == 1
    assert [m.role for m in result.messages] == ["user", "assistant"]
    assert rec.of_type("run.steer_received") == []


async def test_a_steer_of_media_alone_or_of_blank_text_is_still_taken() -> None:
    provider = ScriptedProvider(_answer_slowly)
    async with Agent(provider).stream("go") as run:
        await anyio.sleep(0.5)
        await run.steer(Message.user([Image(data=_PNG)]))
        await run.steer(" ")
        result = await run.wait()
    assert result.steps == 2
    assert [m.role for m in result.messages] == ["user", "assistant", "user", "user", "assistant"]
