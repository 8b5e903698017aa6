"""A context budget over a long run costs each step what is new to it, not the whole conversation again.

Counted: the reads of ``role`` and ``tool_calls`` the budget makes of the messages (a message that counts them):
a step that walks the conversation in Python reads them of every message; one that resumes where the last step
left reads them of its new messages and the few it looks back over.  (Copying the conversation into the request's
tuple, a step's floor, reads none.)
"""

from __future__ import annotations

from typing import Any

import pytest

from agentactors.loop.context_budget import ContextBudget, fit_to_budget
from agentactors.messages import Message, ToolCall

_reads = [0]


class _Counted(Message):
    __slots__ = ()

    def __getattribute__(self, name: str) -> Any:
        if name == "role" or name == "tool_calls":
            _reads[0] += 1
        return object.__getattribute__(self, name)


def _exchange(i: int, size: int) -> list[Message]:
    calls = (ToolCall(f"c{i}", "search", {"n": i}),)
    return [_Counted("assistant", "", calls), _Counted("tool", f"r{i} " + "x" * size, (), f"c{i}", "search")]


STEPS = 400


@pytest.mark.parametrize(
    ("budget", "size"),
    [(3_000, 300), (20_000, 40), (500, 2_000)],
    ids=["trims-and-drops", "drops-only", "tiny-budget"],
)
def test_a_long_run_reads_each_message_a_bounded_number_of_times(budget: int, size: int) -> None:
    cache = ContextBudget(budget)
    conversation: list[Message] = [Message.system("s"), Message.user("q")]
    _reads[0] = 0
    sent: tuple[Message, ...] = ()
    for i in range(STEPS):
        conversation += _exchange(i, size)
        sent = cache.fit(conversation)
    reads = _reads[0]
    assert sent == fit_to_budget(conversation, budget)  # (the uncached fit reads everything: after the count)
    # Linear: a few reads per message of the run (a walk a step makes ~STEPS * len(conversation) / 2 = 160,000).
    assert reads <= 30 * len(conversation), reads


def test_the_same_at_every_step_of_a_long_run_with_a_user_message_midway() -> None:
    cache = ContextBudget(2_500)
    conversation: list[Message] = [Message.system("s"), Message.user("q")]
    for i in range(120):
        conversation += _exchange(i, 20 + (i * 37) % 400)
        if i % 25 == 10:
            conversation.append(Message.user(f"also {i}"))
        if i % 30 == 29:
            conversation.append(Message.tool(f"c{i}", "big " * 300, "search"))  # a late, large, extra result
        assert cache.fit(conversation) == fit_to_budget(conversation, 2_500)
