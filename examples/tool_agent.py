"""A tool-using agent: two tools, a streamed answer, and the run's record.

Runs offline: a ScriptedProvider plays the model, answering the way a real one
would (a parallel tool-call step, then an answer).  Swap in
``OpenAIProvider(model=...)`` / ``AnthropicProvider(model=...)`` to talk to a
real vendor; nothing else changes.

    python examples/tool_agent.py
"""

from __future__ import annotations

import anyio

from agentactors import (
    Agent,
    InMemoryRecorder,
    LLMRequest,
    LLMResponse,
    RunResult,
    Runtime,
    ScriptedProvider,
    ToolCall,
    ToolContext,
    Usage,
    tool,
)

FORECASTS = {"Lisbon": (21, "sunny"), "Oslo": (4, "sleet")}


@tool(read_only=True)
async def weather(city: str) -> dict[str, object]:
    """Current weather for a city.

    Args:
        city: the city's name, e.g. "Lisbon".
    """
    await anyio.sleep(0.01)  # an async tool: it would await an HTTP call here
    celsius, sky = FORECASTS[city]
    return {"city": city, "celsius": celsius, "sky": sky}


@tool(hint="Use two city names exactly as the user wrote them.")
def difference(a: float, b: float, ctx: ToolContext) -> float:
    """The difference a - b.

    Args:
        a: the first value.
        b: the second value.
    """
    ctx.emit("example.difference", a=a, b=b)  # a custom event in the run's record
    return a - b


def model(request: LLMRequest) -> LLMResponse:
    """The scripted 'model': asks for both forecasts at once, then the difference, then answers."""
    tool_results = [m for m in request.messages if m.role == "tool"]
    if not tool_results:
        calls = (ToolCall("w1", "weather", {"city": "Lisbon"}), ToolCall("w2", "weather", {"city": "Oslo"}))
        return LLMResponse("Checking both cities.\n", calls, usage=Usage(120, 30))
    if len(tool_results) == 2:
        return LLMResponse("", (ToolCall("d1", "difference", {"a": 21, "b": 4}),), usage=Usage(180, 20))
    return LLMResponse(
        f"Lisbon is sunny at 21 °C and Oslo has sleet at 4 °C: Lisbon is {tool_results[-1].content} °C warmer.",
        usage=Usage(220, 40),
    )


async def main() -> RunResult:
    recorder = InMemoryRecorder()
    agent = Agent(
        ScriptedProvider(model, name="scripted-model"),
        tools=[weather, difference],
        system="You answer weather questions using the tools.",
        recorders=[recorder],
        name="weather-bot",
    )
    async with Runtime():
        print("answer: ", end="")
        result = await agent.run(
            "How much warmer is Lisbon than Oslo right now?", on_token=lambda text: print(text, end="", flush=True)
        )
        print()
    print(f"steps={result.steps} tool calls={[c.name for c in result.tool_calls]} usage={result.usage.total_tokens}")
    print("record:")
    for event in recorder.events:
        detail = event.get("name") or event.get("status") or ""
        print(f"  #{event.seq:<3} step={event.step} {event.type} {detail}")
    return result


if __name__ == "__main__":
    anyio.run(main)
