"""docs/loop.md scenarios 1-12, each through an Agent on both backends."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from agentactors.actors.runtime import Runtime
from agentactors.agent.core import Agent
from agentactors.events import InMemoryRecorder, JsonlRecorder
from agentactors.messages import LLMRequest, LLMResponse, Message, ToolCall
from agentactors.providers.scripted import ScriptedProvider
from agentactors.tools.registry import ToolContext, tool
from agentactors.tools.results import ResultCeiling, ToolStatus, refusal_text

pytestmark = pytest.mark.anyio


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def test_1_text_only_is_one_step_and_runs_no_tool() -> None:
    ran: list[str] = []

    @tool
    async def spy() -> str:
        """Never called."""
        ran.append("spy")
        return "x"

    provider = ScriptedProvider(["Hello."])
    result = await Agent(provider, tools=[spy]).run("hi")
    assert result.content == "Hello."
    assert result.steps == 1
    assert result.tool_calls == ()
    assert ran == []
    assert [m.role for m in result.messages] == ["user", "assistant"]
    assert not result.bounded and not result.generation_failed and result.error is None


async def test_2_one_call_then_answer_feeds_the_result_back() -> None:
    provider = ScriptedProvider([ToolCall("c1", "add", {"a": 2, "b": 3}), "It is 5."])
    result = await Agent(provider, tools=[add]).run("2+3?")
    assert result.steps == 2
    assert result.content == "It is 5."
    second = provider.requests[1]
    tool_msgs = [m for m in second.messages if m.role == "tool"]
    assert len(tool_msgs) == 1
    assert tool_msgs[0].tool_call_id == "c1"
    assert tool_msgs[0].content == "5"
    assert [t.name for t in second.tools] == ["add"]
    assert [c.id for c in result.tool_calls] == ["c1"]
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "assistant"]


async def test_3_think_then_answer_is_two_steps_and_think_is_not_the_answer() -> None:
    provider = ScriptedProvider(["<think>the user wants a number</think>", "<think>sure</think>42"])
    result = await Agent(provider).run("number?")
    assert result.steps == 2
    assert result.content == "42"
    assert "think" not in result.content
    assert not result.bounded
    # The think-only step added nothing to the conversation.
    assert [m.role for m in result.messages] == ["user", "assistant"]


@pytest.mark.parametrize("max_empty", [1, 2, 3])
async def test_4_always_empty_ends_after_max_empty_steps(max_empty: int) -> None:
    provider = ScriptedProvider(lambda request: "")
    result = await Agent(provider, max_empty_steps=max_empty).run("?")
    assert result.bounded
    assert result.steps == max_empty
    assert provider.calls == max_empty
    assert result.content == ""


async def test_5_unknown_tool_is_invalid_lists_the_tools_and_the_loop_goes_on() -> None:
    provider = ScriptedProvider([ToolCall("c1", "multiply", {"a": 1}), "Sorry."])
    rec = InMemoryRecorder()
    result = await Agent(provider, tools=[add], recorders=[rec]).run("go")
    assert result.steps == 2
    assert result.content == "Sorry."
    tool_msg = next(m for m in provider.requests[1].messages if m.role == "tool")
    assert "multiply" in tool_msg.content and "'add'" in tool_msg.content
    assert tool_msg.is_error
    finished = rec.of_type("tools.finished")
    assert [e.status for e in finished] == [ToolStatus.invalid]


async def test_6_tool_raises_error_status_with_hint_and_the_loop_goes_on() -> None:
    @tool(hint="Pass a city name such as 'Paris'.")
    async def weather(city: str) -> str:
        """Weather for a city."""
        raise LookupError(f"no such city: {city}")

    provider = ScriptedProvider([ToolCall("c1", "weather", {"city": "Atlantis"}), "I could not find it."])
    rec = InMemoryRecorder()
    result = await Agent(provider, tools=[weather], recorders=[rec]).run("weather?")
    tool_msg = next(m for m in provider.requests[1].messages if m.role == "tool")
    assert tool_msg.content.startswith("Error: LookupError: no such city: Atlantis")
    assert "Hint: Pass a city name such as 'Paris'." in tool_msg.content
    assert "Traceback" not in tool_msg.content
    assert result.steps == 2 and result.content == "I could not find it."
    assert [e.status for e in rec.of_type("tools.finished")] == [ToolStatus.error]


@pytest.mark.virtual_time
async def test_7_two_calls_run_concurrently_and_results_keep_call_order() -> None:
    finished: list[str] = []

    @tool
    async def slow(x: str) -> str:
        """Slow."""
        await anyio.sleep(5)
        finished.append("slow")
        return f"slow:{x}"

    @tool
    async def fast(x: str) -> str:
        """Fast."""
        await anyio.sleep(1)
        finished.append("fast")
        return f"fast:{x}"

    provider = ScriptedProvider([[ToolCall("a", "slow", {"x": "1"}), ToolCall("b", "fast", {"x": "2"})], "done"])
    start = anyio.current_time()
    result = await Agent(provider, tools=[slow, fast]).run("go")
    elapsed = anyio.current_time() - start
    assert finished == ["fast", "slow"]
    assert 5 <= elapsed < 6  # concurrent: max, not the sum
    tool_msgs = [m for m in provider.requests[1].messages if m.role == "tool"]
    assert [(m.tool_call_id, m.content) for m in tool_msgs] == [("a", "slow:1"), ("b", "fast:2")]
    assert result.content == "done"


# --- 8: the JSON-fallback transport --------------------------------------------------------------


async def test_8_json_fallback_answer_then_block() -> None:
    provider = ScriptedProvider(
        ['Answer.\n{"tool":"add","arguments":{"a":1,"b":2}}', "The sum is 3."], carries_tools=False
    )
    rec = InMemoryRecorder()
    result = await Agent(provider, tools=[add], system="Be brief.", recorders=[rec]).run("1+2?")
    assert result.content == "The sum is 3."
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("add", {"a": 1, "b": 2})]
    first, second = provider.requests
    # No tools on the wire; the contract is in the one system message.
    assert first.tools == () and second.tools == ()
    assert first.messages[0].role == "system"
    assert first.messages[0].content.startswith("Be brief.")
    assert '{"tool": "<tool name>", "arguments"' in first.messages[0].content
    # The call's text is "Answer." and the result is fed back as text the model can read.
    assert result.messages[1].content == "Answer."
    assert result.messages[1].tool_calls[0].name == "add"
    assert all(m.role != "tool" for m in second.messages)
    assert '"tool": "add"' in second.messages[2].content
    assert second.messages[3].role == "user" and "3" in second.messages[3].content
    assert [e.status for e in rec.of_type("tools.finished")] == [ToolStatus.ok]


async def test_8_json_fallback_braces_inside_a_string() -> None:
    seen: list[str] = []

    @tool
    def search(q: str) -> str:
        """Search."""
        seen.append(q)
        return "nothing"

    reply = 'Looking.\n{"tool":"search","arguments":{"q":"a\\"}{\\"q"}}'
    provider = ScriptedProvider([reply, "No results."], carries_tools=False)
    result = await Agent(provider, tools=[search]).run("find")
    assert seen == ['a"}{"q']
    assert result.content == "No results."


async def test_8_json_fallback_fenced_block_parsed_and_fence_removed() -> None:
    provider = ScriptedProvider(
        ['Adding.\n```json\n{"tool":"add","arguments":{"a":4,"b":5}}\n```', "9."], carries_tools=False
    )
    result = await Agent(provider, tools=[add]).run("4+5")
    assert result.messages[1].content == "Adding."
    assert result.tool_calls[0].arguments == {"a": 4, "b": 5}
    assert result.content == "9."


async def test_8_json_fallback_broken_json_is_not_run() -> None:
    ran: list[int] = []

    @tool
    def boom(a: int) -> int:
        """Never."""
        ran.append(a)
        return a

    broken = 'Answer.\n{"tool":"boom","arguments":{"a":1,}}'
    provider = ScriptedProvider([broken], carries_tools=False)
    result = await Agent(provider, tools=[boom]).run("go")
    assert ran == []
    assert result.tool_calls == ()
    assert result.steps == 1
    assert result.content == broken


async def test_8_json_fallback_stream_never_shows_the_block() -> None:
    provider = ScriptedProvider(
        ['Let me add that.\n{"tool":"add","arguments":{"a":1,"b":2}}', "The sum is 3."], carries_tools=False
    )
    tokens: list[str] = []
    result = await Agent(provider, tools=[add]).run("1+2?", on_token=tokens.append)
    shown = "".join(tokens)
    assert '"tool"' not in shown and "{" not in shown
    assert "Let me add that." in shown and "The sum is 3." in shown
    assert result.content == "The sum is 3."


# --- 9 and 10: oversized results -----------------------------------------------------------------

PAYLOAD_MARK = "PAYLOAD-7f3a"


def _big() -> str:
    text = (PAYLOAD_MARK + "-" + "x" * 90) * 1800
    text += "y" * (191_245 - len(text))
    assert len(text) == 191_245
    return text


async def test_9_result_over_its_ceiling_is_refused_and_goes_nowhere(tmp_path: Path) -> None:
    @tool(result_ceiling=ResultCeiling(max_chars=20_000, narrow_by=("limit", "since")))
    def logs(limit: int = 1000, since: str = "") -> str:
        """Read logs."""
        return _big()

    provider = ScriptedProvider([ToolCall("c1", "logs", {}), "Narrowing."])
    mem = InMemoryRecorder()
    path = tmp_path / "run.jsonl"
    with JsonlRecorder(path) as jsonl:
        async with Runtime(recorders=[jsonl]):
            result = await Agent(provider, tools=[logs], recorders=[mem]).run("logs?")
    tool_msg = next(m for m in provider.requests[1].messages if m.role == "tool")
    # The executor's refusal text reaches the model as it is (no nudge, no payload).
    assert tool_msg.content == refusal_text("logs", 191_245, ResultCeiling(20_000, ("limit", "since")))
    assert tool_msg.content.startswith("Result too large: logs returned 191")
    assert "No data was returned" in tool_msg.content and "'limit', 'since'" in tool_msg.content
    refused = mem.of_type("tools.result_refused")
    assert len(refused) == 1
    assert refused[0].size == 191_245
    assert refused[0].max_chars == 20_000
    assert [e.status for e in mem.of_type("tools.finished")] == [ToolStatus.invalid]
    # The payload is in no message, no event and no recorded line.
    assert all(PAYLOAD_MARK not in m.content for m in result.messages)
    assert all(PAYLOAD_MARK not in repr(e.to_dict()) for e in mem.events)
    assert PAYLOAD_MARK not in path.read_text()


async def test_10_result_over_the_cap_is_marker_plus_head() -> None:
    @tool
    def logs() -> str:
        """Read logs."""
        return _big()

    provider = ScriptedProvider([ToolCall("c1", "logs", {}), "Ok."])
    result = await Agent(provider, tools=[logs], max_tool_result_chars=8000, nudges=False).run("logs?")
    content = next(m.content for m in result.messages if m.role == "tool")
    assert len(content) <= 8000
    marker, _, head = content.partition("\n")
    assert marker.startswith("[truncated: logs returned 191,245 chars; showing the first ")
    assert _big().startswith(head)
    assert len(content) >= 7990  # the longest head that fits


# --- 11: cancellation during a tool call ---------------------------------------------------------


@pytest.mark.virtual_time
async def test_11_enclosing_scope_cancels_mid_tool() -> None:
    started = anyio.Event()
    saw_cancel: list[bool] = []

    @tool
    async def wait_forever() -> str:
        """Blocks."""
        started.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            saw_cancel.append(True)
            raise
        return "never"

    provider = ScriptedProvider([ToolCall("c1", "wait_forever", {}), "unreachable"])
    conversation = [Message.user("start")]
    async with Runtime() as rt:
        agent = Agent(provider, tools=[wait_forever])
        with anyio.move_on_after(10) as scope:
            await agent.run(conversation)
        assert scope.cancelled_caught
        assert started.is_set()
        await rt.wait_idle()
        assert saw_cancel == [True]
        assert rt.stats().tasks == 0
        assert rt.stats().busy == 0
    assert conversation == [Message.user("start")]
    assert provider.calls == 1


@pytest.mark.virtual_time
async def test_11_handle_cancel_mid_tool_gives_cancelled_result() -> None:
    started = anyio.Event()
    saw_cancel: list[bool] = []

    @tool
    async def wait_forever() -> str:
        """Blocks."""
        started.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            saw_cancel.append(True)
            raise
        return "never"

    provider = ScriptedProvider([ToolCall("c1", "wait_forever", {}), "unreachable"])
    inputs = [Message.system("sys"), Message.user("start")]
    async with Runtime() as rt:
        agent = Agent(provider, tools=[wait_forever])
        types: list[str] = []
        async with agent.stream(inputs) as run:
            async for event in run:
                types.append(event.type)
                if event.type == "tools.started":
                    await started.wait()
                    run.cancel()
        result = run.result
        assert result.cancelled
        assert result.messages == tuple(inputs)
        assert result.content == ""
        assert saw_cancel == [True]
        assert types[-1] == "run.finished"
        await rt.wait_idle()
        assert rt.stats().tasks == 0


# --- 12: max_steps -------------------------------------------------------------------------------


async def test_12_max_steps_is_bounded_with_the_last_substantive_answer() -> None:
    counter = iter(range(100))

    def script(request: LLMRequest) -> LLMResponse:
        n = next(counter)
        return LLMResponse(content=f"Draft {n}", tool_calls=(ToolCall(f"c{n}", "add", {"a": n, "b": 1}),))

    provider = ScriptedProvider(script)
    result = await Agent(provider, tools=[add], max_steps=3).run("loop")
    assert result.bounded
    assert result.steps == 3
    assert provider.calls == 3
    assert result.content == "Draft 2"
    assert len(result.tool_calls) == 3
    assert json.loads(result.messages[-1].content) == 3  # the last result is still recorded


async def test_tool_context_reaches_tools_with_run_identity() -> None:
    seen: list[ToolContext] = []

    @tool
    async def whoami(ctx: ToolContext) -> str:
        """Identify."""
        seen.append(ctx)
        return "me"

    provider = ScriptedProvider([ToolCall("c1", "whoami", {}), "ok"])
    result = await Agent(provider, tools=[whoami], name="bot").run("?", deps={"k": 1})
    assert seen[0].run_id == result.run_id
    assert seen[0].agent == "bot"
    assert seen[0].step == 1
    assert seen[0].deps == {"k": 1}
