"""The fault soak's fake model, served by a FakeVendor in a child process (``VendorProcess(model=...)``).

``item N``: one tool call, then an answer quoting the tool's result; ``plain N``: an answer at once;
``bad N``: a request fault (a 400 the stack must neither retry nor move to another member).
"""

from __future__ import annotations

from typing import Any

from agentactors.testing import FakeError, FakeReply, FakeToolCall, RecordedRequest

#: ``VendorProcess(model=SPEC)``: how the child finds :func:`model`.
SPEC = "tests.reliability._soak_model:model"


def model(request: RecordedRequest) -> Any:
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
