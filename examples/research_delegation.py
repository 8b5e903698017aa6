"""A research agent delegating to a search agent: ``search_agent.as_tool()``.

The research agent's model writes a self-contained request for the search agent and calls it like any
tool; the search agent runs as a *child run* of the research run — in the same runtime, on the same
ProviderActor budget, with the caller's ``deps`` — and its answer comes back as the tool's result.  The
research result holds the child's result (``result.children``) and its usage (``result.usage`` is the
sum), and every event of the child carries ``parent_run_id``, so one record tells the whole story.

Runs offline: ScriptedProviders play the models.

    python examples/research_delegation.py
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

PAGES = {
    "anyio": "AnyIO runs on top of asyncio or trio and implements trio-like structured concurrency.",
    "trio": "Trio is an async I/O library built around structured concurrency (nurseries).",
}


@tool(read_only=True)
async def web_search(query: str, ctx: ToolContext) -> list[str]:
    """Search the web.

    Args:
        query: what to look for.
    """
    ctx.emit("example.search", query=query, user=ctx.deps["user"])  # the caller's deps reach the child's tools
    return [text for key, text in PAGES.items() if key in query.lower()]


def search_model(request: LLMRequest) -> LLMResponse:
    last = request.messages[-1]
    if last.role == "tool":
        return LLMResponse(f"Found: {last.content}", usage=Usage(90, 30))
    return LLMResponse("", (ToolCall("s1", "web_search", {"query": last.content}),), usage=Usage(60, 12))


def research_model(request: LLMRequest) -> LLMResponse:
    last = request.messages[-1]
    if last.role == "tool":
        return LLMResponse(
            "AnyIO gives asyncio programs trio's structured concurrency; both sources agree.", usage=Usage(200, 25)
        )
    ask = ToolCall("r1", "searcher", {"input": "What do anyio and trio have in common? Look up both."})
    return LLMResponse("Let me ask the search agent.", (ask,), usage=Usage(150, 20))


searcher = Agent(ScriptedProvider(search_model), name="searcher", system="You search and report.", tools=[web_search])
researcher = Agent(
    ScriptedProvider(research_model),
    name="researcher",
    system="You answer research questions; delegate searching.",
    tools=[searcher.as_tool(description="Searches the web and reports what it found.")],
)


async def main() -> RunResult[str]:
    recorder = InMemoryRecorder()
    async with Runtime(recorders=[recorder]):
        result = await researcher.run("How do anyio and trio relate?", deps={"user": "ana"})
    (child,) = result.children
    print(f"answer: {result.content}")
    print(f"the search agent answered: {child.content}")
    print(f"usage: {child.usage.input_tokens} input tokens of {result.usage.input_tokens} were the child's")
    for event in recorder.events:
        if event.type in ("run.started", "run.finished"):
            parent = f" (child of {event.parent_run_id})" if event.parent_run_id else ""
            print(f"{event.type:13} {event.run_id}{parent}")
    return result


if __name__ == "__main__":
    anyio.run(main)
