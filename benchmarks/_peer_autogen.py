"""autogen-core implementation of the W1 run: a model agent and a tool agent, asked by RPC.

No ``from __future__ import annotations`` here: autogen-core reads handler type hints at runtime.
"""

import json
from dataclasses import dataclass
from typing import Any

from _baselines import add, fake_model
from autogen_core import AgentId, MessageContext, RoutedAgent, SingleThreadedAgentRuntime, rpc


@dataclass
class Ask:
    messages: list


@dataclass
class Reply:
    message: dict


@dataclass
class CallTool:
    call: dict


@dataclass
class ToolReply:
    content: str


class ModelAgent(RoutedAgent):
    def __init__(self) -> None:
        super().__init__("model")

    @rpc
    async def on_ask(self, message: Ask, ctx: MessageContext) -> Reply:
        return Reply(fake_model(message.messages))


class ToolAgent(RoutedAgent):
    def __init__(self) -> None:
        super().__init__("tool")

    @rpc
    async def on_call(self, message: CallTool, ctx: MessageContext) -> ToolReply:
        return ToolReply(str(add(**json.loads(message.call["arguments"]))))


class AutogenImpl:
    async def start(self) -> None:
        self.runtime = SingleThreadedAgentRuntime()
        await ModelAgent.register(self.runtime, "model", ModelAgent)
        await ToolAgent.register(self.runtime, "tool", ToolAgent)
        self.runtime.start()
        self.model_id = AgentId("model", "default")
        self.tool_id = AgentId("tool", "default")

    async def stop(self) -> None:
        await self.runtime.stop_when_idle()

    async def run(self, prompt: str) -> str:
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        while True:
            reply = (await self.runtime.send_message(Ask(list(messages)), self.model_id)).message
            messages.append(reply)
            calls = reply.get("tool_calls")
            if not calls:
                return str(reply["content"])
            for call in calls:
                result = await self.runtime.send_message(CallTool(call), self.tool_id)
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": result.content})


async def spawn_idle(n: int) -> Any:
    """Register ``n`` lazily-instantiated agent types' ids (autogen-core creates agents on first message)."""
    runtime = SingleThreadedAgentRuntime()
    await ModelAgent.register(runtime, "model", ModelAgent)
    ids = [AgentId("model", f"a{i}") for i in range(n)]
    # Lazy agents are created on first message; force creation so each id has a live agent object.
    for agent_id in ids:
        await runtime._get_agent(agent_id)  # private, but the only way to materialise an idle agent
    return runtime, ids
