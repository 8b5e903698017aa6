"""A history with a call left without its result, or a result apart from its call, reaches every wire well-formed:
the FakeVendor in strict mode refuses it as each vendor does (OpenAI, Responses, Anthropic, Gemini, Bedrock), and
the run repairs it first (agentactors/loop/_history_repair.py).  Real clock, real sockets, both backends.

The case a user meets with this library alone: a paused run's ``RunResult.messages`` end with the calls awaiting
a decision, and taking them as the next turn's history (a new prompt instead of ``agent.resume``) poisoned the
conversation.  A run cancelled in the middle of its tools leaves no such call: its messages are its input.
"""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

from agentactors import Agent, LLMRequest, Message, ToolCall, ToolSpec, tool
from agentactors.errors import ProviderError
from agentactors.loop._history_repair import NO_RESULT
from agentactors.providers.bedrock import BedrockProvider
from agentactors.providers.http.provider import HTTPProvider
from agentactors.providers.responses import OpenAIResponsesProvider
from agentactors.testing.fakevendor import FakeReply, FakeToolCall, FakeVendor
from tests.support.providers import CANARY, provider

pytestmark = pytest.mark.anyio

WIRES = ("openai", "responses", "anthropic", "gemini", "bedrock")


def _provider(wire: str, fv: FakeVendor) -> HTTPProvider:
    if wire == "responses":
        return OpenAIResponsesProvider("gpt-5-mini", api_key=CANARY, base_url=fv.openai_base_url)
    if wire == "bedrock":
        return BedrockProvider("us.amazon.nova-pro-v1:0", region="eu-west-1", base_url=fv.base_url,
                               access_key_id="AKIDFAKEVENDORTEST01", secret_access_key="fake/Secret+Key/0123456789abcd")
    return provider(wire, fv)


@pytest.fixture
def vendor() -> Iterator[FakeVendor]:
    fv = FakeVendor()  # strict: refuses what the vendors refuse
    fv.start()
    try:
        yield fv
    finally:
        fv.stop()


@tool(requires_approval=True)
async def pay(amount: int) -> str:
    """Pay an amount."""
    return f"paid {amount}"


@tool
async def balance() -> str:
    """The balance."""
    return "100"


@pytest.mark.parametrize("wire", WIRES)
async def test_a_paused_runs_messages_go_on_as_the_next_history(vendor: FakeVendor, wire: str) -> None:
    vendor.script(FakeReply(text="", tool_calls=(FakeToolCall("pay", {"amount": 5}),)), FakeReply(text="Cancelled."))
    p = _provider(wire, vendor)
    agent = Agent(p, tools=[pay, balance], nudges=False)
    async with p:
        paused = await agent.run("pay 5")
        assert paused.paused
        result = await agent.run([*paused.messages, Message.user("never mind, do not pay")])
    assert result.ok, result.error
    assert result.content == "Cancelled."
    sent = vendor.requests[-1]
    assert sent.status == 200 and sent.conversation is not None
    (answer,) = sent.conversation.tool_results
    assert answer.content == NO_RESULT
    assert answer.call_id == paused.messages[-1].tool_calls[0].id


@pytest.mark.parametrize("wire", WIRES)
async def test_a_foreign_history_with_an_unanswered_call_and_a_stray_result_is_sent_repaired(
    vendor: FakeVendor, wire: str
) -> None:
    history = [
        Message.user("what is my balance?"),
        Message.tool("call_trimmed", "50", "balance"),  # its call was trimmed away
        Message.assistant("Let me check.", [ToolCall("call_lost", "balance", {})]),  # its result was lost
        Message.user("and now?"),
    ]
    vendor.script(FakeReply(text="It is 100."))
    p = _provider(wire, vendor)
    async with p:
        result = await Agent(p, tools=[pay, balance], nudges=False).run(history)
    assert result.ok, result.error
    conversation = vendor.requests[-1].conversation
    assert conversation is not None
    assert [r.content for r in conversation.tool_results] == [NO_RESULT]


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_a_run_cancelled_while_its_tools_run_leaves_no_unanswered_call(vendor: FakeVendor, wire: str) -> None:
    """Checked, not repaired: a cancelled run's messages are its input, so the next turn over them is sound."""
    @tool
    async def slow() -> str:
        """Takes long."""
        await anyio.sleep_forever()
        return "never"

    vendor.script(FakeReply(text="", tool_calls=(FakeToolCall("slow", {}),)), FakeReply(text="Fine."))
    p = _provider(wire, vendor)
    agent = Agent(p, tools=[slow], nudges=False)
    async with p:
        async with agent.stream("go") as run:
            async for event in run:
                if event.type == "tools.started":
                    run.cancel()
        cancelled = run.result
        assert cancelled.cancelled
        assert cancelled.messages == (Message.user("go"),)
        result = await agent.run([*cancelled.messages, Message.user("again")])
    assert result.ok and result.content == "Fine."


REFUSALS = {
    "openai": ("An assistant message with 'tool_calls' must be followed by tool messages",
               "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'"),
    "responses": ("No tool output found for function call call_lost", "No tool call found for function call output"),
    "anthropic": ("`tool_use` ids were found without `tool_result` blocks immediately after",
                  "unexpected `tool_use_id` found in `tool_result` blocks"),
    "gemini": ("the number of function response parts is equal to the number of function call parts",
               "function response turn comes immediately after a function call turn"),
    "bedrock": ("Expected toolResult blocks at messages.2.content for the following Ids: call_lost",
                "contain a toolUseId (call_trimmed) that no toolUse block of the previous turn has"),
}


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("case", ["unanswered", "stray"])
async def test_the_strict_fake_refuses_the_history_unrepaired_as_each_vendor_does(
    vendor: FakeVendor, wire: str, case: str
) -> None:
    """What the repair spares a run: a provider asked directly (no loop, no repair) gets the vendor's 400."""
    if case == "unanswered":
        messages = [Message.user("balance?"), Message.assistant("", [ToolCall("call_lost", "balance", {})]),
                    Message.user("and now?")]
    else:
        messages = [Message.user("balance?"), Message.tool("call_trimmed", "50", "balance"), Message.assistant("50."),
                    Message.user("and now?")]
    spec = ToolSpec("balance", "The balance.", {"type": "object", "properties": {}})
    p = _provider(wire, vendor)
    async with p:
        with pytest.raises(ProviderError) as caught:
            await p.complete(LLMRequest(messages, tools=(spec,), max_tokens=64))
    assert caught.value.status == 400
    assert REFUSALS[wire][case == "stray"] in str(caught.value)
