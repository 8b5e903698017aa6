"""A conversation rebuilt from equal copies is fitted as a fresh one would be, whatever ids the copies leave behind.

The budget resumes a fit when the conversation is the last one grown, compared by value: equal copies count.  It
must then trim the messages it measured and holds (the last fit's), not the copies: a trimmed form remembered
under the ``id`` of a copy it does not hold could be handed, once the copy is freed and its ``id`` reused, to a
different message — a dead tool result sent under another call's id.  (Found by review; the loop passes its own
messages, so only a caller of ``ContextBudget.fit`` / ``fit_to_budget(cache=)`` rebuilding messages could meet it.)
"""

from __future__ import annotations

import gc

from agentactors.loop.context_budget import ContextBudget, fit_to_budget
from agentactors.messages import Message, ToolCall


def conversation(call_id: str, result: str) -> list[Message]:
    return [Message.user("question"), Message.assistant("", [ToolCall(call_id, "t", {})]),
            Message.tool(call_id, result), *[Message.assistant(f"small {i}") for i in range(6)]]


def copied(messages: list[Message]) -> list[Message]:
    return [Message(m.role, m.content, m.tool_calls, m.tool_call_id, m.name, m.reasoning, m.provider_data, m.is_error)
            for m in messages]


def test_a_rebuilt_conversation_never_gets_a_freed_copys_trimmed_result() -> None:
    budget = ContextBudget(3000)
    first = conversation("c1", "a" * 2500)
    budget.fit(first)  # fits whole
    copies = copied(first)
    grown = [*copies, Message.assistant("b" * 1000)]  # an equal prefix, then growth: the result is trimmed now
    assert budget.fit(grown) == fit_to_budget(grown, 3000)
    freed = id(copies[2])
    budget.fit(copied(grown))  # equal again: the budget lets go of the copies
    del copies, grown
    gc.collect()
    keep: list[Message] = []
    for _ in range(10_000):  # a new tool result, allocated until one lands where the freed copy was (CPython reuses)
        result = Message.tool("c2", "z" * 2500)
        if id(result) == freed:
            break
        keep.append(result)
    later = [Message.user("question"), Message.assistant("", [ToolCall("c2", "t", {})]), result,
             *[Message.assistant(f"small {i}") for i in range(6)], Message.assistant("b" * 1000)]
    sent = budget.fit(later)
    assert sent == fit_to_budget(later, 3000)
    assert sent[2].tool_call_id == "c2" and "z" in str(sent[2].content)
