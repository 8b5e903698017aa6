"""with_hedge when both copies answer in the same instant: exactly one answer, counted once; on virtual time."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors import LLMRequest, Message, ScriptedProvider
from agentactors.events import HedgeWon
from agentactors.messages import TextDelta
from agentactors.resilience import with_hedge
from tests.support.resilience import recording
from tests.unit.resilience.test_hedge import Slow

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

REQUEST = LLMRequest([Message.user("hi")])


async def test_two_copies_answering_at_once_give_exactly_one_answer(anyio_backend: Any) -> None:
    # The first copy answers at 2 s, the hedge (sent at 1 s) at 2 s too: one answer is returned, one hedge.won
    # is said, and the other copy is cancelled or — when it answered in the same instant — dropped (its cost is
    # not counted: docs/costs.md, "What it costs").
    for mode in ("complete", "stream"):
        slow = Slow([2.0, 1.0])
        hedged = with_hedge(ScriptedProvider(slow), after=1.0, max_extra=1.0)
        with anyio.fail_after(100), recording() as recorder:
            start = anyio.current_time()
            if mode == "complete":
                contents = [(await hedged.complete(REQUEST)).content]
            else:
                async with hedged.stream(REQUEST) as events:
                    contents = ["".join([e.text async for e in events if isinstance(e, TextDelta)])]
            took = anyio.current_time() - start
        assert took == pytest.approx(2.0), mode
        assert len(contents) == 1 and contents[0] in ("ok after 2s", "ok after 1s"), (mode, contents)
        assert len(slow.answered) + len(slow.cancelled) == 2, mode
        assert len([e for e in recorder.events if isinstance(e, HedgeWon)]) == 1, mode
        assert hedged.hedged == 1 and hedged.calls == 1
