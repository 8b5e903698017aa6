"""W1 peer implementations: the same run (model → one tool call → model → text) in each framework.

Each factory returns ``(setup, run, teardown)`` coroutines-or-None, or raises
``ImportError`` when the peer is not installed in this environment (peers live
only in the benchmark environment, never in agentactors' dependencies).

Every function handed to a peer (its model, its tool) is ``async def``, as agentactors' tool is: pydantic-ai
(``FunctionModel``, ``tool_plain``) and openai-agents (``function_tool``) run a plain ``def`` in a worker thread,
a hop per call agentactors does not pay (tests/integration/test_benchmark_fairness.py).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from _baselines import add

RunFn = Callable[[str], Awaitable[str]]


class Impl:
    """A benchmark implementation: ``async with impl: await impl.run(prompt)``."""

    name = "?"

    async def __aenter__(self) -> Impl:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        return None

    async def run(self, prompt: str) -> str:
        raise NotImplementedError


# --- pydantic-ai (FunctionModel) ---------------------------------------------------------------


class PydanticAI(Impl):
    name = "pydantic-ai"

    def __init__(self) -> None:
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
        from pydantic_ai.models.function import AgentInfo, FunctionModel

        async def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
            last = messages[-1]
            for part in getattr(last, "parts", ()):
                if isinstance(part, ToolReturnPart):
                    return ModelResponse(parts=[TextPart(f"The answer is {part.content}.")])
            return ModelResponse(parts=[ToolCallPart("add", {"a": 2, "b": 3}, tool_call_id="call_1")])

        self.agent = Agent(FunctionModel(model))

        async def add_impl(a: int, b: int) -> int:
            """Add two integers."""
            return add(a, b)

        self.agent.tool_plain(name="add")(add_impl)

    async def run(self, prompt: str) -> str:
        result = await self.agent.run(prompt)
        return str(result.output)


# --- openai-agents (custom Model) --------------------------------------------------------------


class OpenAIAgents(Impl):
    name = "openai-agents"

    def __init__(self) -> None:
        from agents import Agent, ModelSettings, RunConfig, Runner, function_tool, set_tracing_disabled
        from agents.items import ModelResponse
        from agents.models.interface import Model
        from agents.usage import Usage
        from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

        set_tracing_disabled(True)

        class FakeModel(Model):
            async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kw: Any) -> Any:
                items = input if isinstance(input, list) else []
                for item in reversed(items):
                    if isinstance(item, dict) and item.get("type") == "function_call_output":
                        text = f"The answer is {item['output']}."
                        msg = ResponseOutputMessage(
                            id="msg_1",
                            type="message",
                            role="assistant",
                            status="completed",
                            content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
                        )
                        return ModelResponse(output=[msg], usage=Usage(), response_id=None)
                call = ResponseFunctionToolCall(
                    id="fc_1",
                    call_id="call_1",
                    type="function_call",
                    name="add",
                    arguments=json.dumps({"a": 2, "b": 3}),
                    status="completed",
                )
                return ModelResponse(output=[call], usage=Usage(), response_id=None)

            def stream_response(self, *args: Any, **kw: Any) -> Any:  # pragma: no cover - unused
                raise NotImplementedError

        @function_tool
        async def add_tool(a: int, b: int) -> int:
            """Add two integers."""
            return add(a, b)

        add_tool.name = "add"
        self._runner = Runner
        self.agent = Agent(name="bench", instructions="", tools=[add_tool], model=FakeModel(),
                           model_settings=ModelSettings())
        self.config = RunConfig(tracing_disabled=True)

    async def run(self, prompt: str) -> str:
        result = await self._runner.run(self.agent, prompt, run_config=self.config)
        return str(result.final_output)


class AutogenCore(Impl):
    name = "autogen-core"

    def __init__(self) -> None:
        from _peer_autogen import AutogenImpl

        self._impl = AutogenImpl()

    async def __aenter__(self) -> AutogenCore:
        await self._impl.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self._impl.stop()

    async def run(self, prompt: str) -> str:
        return await self._impl.run(prompt)


class LangGraph(Impl):
    name = "langgraph"

    def __init__(self) -> None:
        from _peer_langgraph import build

        self.app = build()

    async def run(self, prompt: str) -> str:
        out = await self.app.ainvoke({"messages": [("user", prompt)]})
        return str(out["messages"][-1].content)


PEERS: dict[str, Callable[[], Impl]] = {
    "autogen-core": AutogenCore,
    "pydantic-ai": PydanticAI,
    "openai-agents": OpenAIAgents,
    "langgraph": LangGraph,
}
