"""Fake models for the reliability suite's vendors, served by a FakeVendor in a child process.

``VendorProcess(model=SOAK)`` / ``VendorProcess(model=STORM)``: the child imports the function named.
The vendor runs in its own process, as the demo's does: in the test's process it would share the
interpreter lock with the hundreds of runs it serves, and each would wait for the other.
"""

from __future__ import annotations

from typing import Any

from agentactors.testing import FakeError, FakeReply, FakeToolCall, RecordedRequest

SOAK = "tests.reliability._vendor_models:soak"
STORM = "tests.reliability._vendor_models:storm"

#: The storm's streamed answer: 20 chunks, 10 ms apart.
STORM_ANSWER = " ".join(f"word{i}" for i in range(40))


def soak(request: RecordedRequest) -> Any:
    """``item N``: one tool call, then an answer quoting its result; ``plain N``: an answer at once;
    ``bad N``: a request fault (a 400 the stack must neither retry nor move to another member)."""
    conversation = request.conversation
    if conversation is None:
        return None
    prompt = conversation.last_user_text
    if prompt.startswith("bad "):
        return FakeError(400, message="Invalid value for 'messages': rejected by the soak.")
    if prompt.startswith("plain "):
        return FakeReply(text=f"{prompt} -> answered")
    if not conversation.tool_results:
        return FakeToolCall("lookup", {"item": prompt})
    return FakeReply(text=f"{prompt} -> {conversation.tool_results[-1].content}")


def storm(request: RecordedRequest) -> Any:
    """``sync N`` / ``async N``: a call to the slow sync / async tool, then a slow answer (streamed or not);
    ``plain N``: a short answer at once."""
    conversation = request.conversation
    if conversation is None:
        return None
    kind, _, n = conversation.last_user_text.partition(" ")
    if kind == "plain":
        return FakeReply(text=f"plain {n}")
    if not conversation.tool_results:
        return FakeToolCall("slow_sync" if kind == "sync" else "slow_async", {"n": int(n)})
    return FakeReply(text=STORM_ANSWER, chunk_latency=0.01, words_per_chunk=2, latency=0.05)
