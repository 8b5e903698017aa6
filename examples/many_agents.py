"""A thousand concurrent agent runs sharing one ProviderActor.

Every run asks a tool and then answers; the provider actor's ``max_concurrency``
is the only throttle, results come back in input order, and a run that fails
(one input here makes its 'vendor' fail) never disturbs the others.

    python examples/many_agents.py
"""

from __future__ import annotations

import time

import anyio

from agentactors import (
    Agent,
    ErrorKind,
    LLMRequest,
    LLMResponse,
    ProviderError,
    RunResult,
    Runtime,
    ScriptedProvider,
    ToolCall,
    tool,
)

RUNS = 1000


@tool(read_only=True)
async def square(n: int) -> int:
    """n squared."""
    return n * n


async def model(request: LLMRequest) -> LLMResponse:
    """A 'model' with 5 ms of latency that squares the number in the prompt with the tool."""
    await anyio.sleep(0.005)
    prompt = next(m.content for m in request.messages if m.role == "user")
    n = int(prompt.split()[-1])
    results = [m for m in request.messages if m.role == "tool"]
    if n == 13:
        raise ProviderError("the vendor is down for this one", provider="scripted", kind=ErrorKind.transient)
    if not results:
        return LLMResponse("", (ToolCall(f"sq-{n}", "square", {"n": n}),))
    return LLMResponse(f"{n} squared is {results[-1].content}.")


async def main(runs: int = RUNS) -> list[RunResult]:
    agent = Agent(ScriptedProvider(model), tools=[square], system="Use the tool.")
    last_report = [0]

    def progress(done: int, failed: int, total: int) -> None:
        if done - last_report[0] >= total // 4 or done == total:
            last_report[0] = done
            print(f"  {done}/{total} done, {failed} failed")

    started = time.perf_counter()
    async with Runtime() as rt:
        results = await rt.run_many(agent, [f"square {n}" for n in range(runs)], concurrency=runs, progress=progress)
    elapsed = time.perf_counter() - started
    ok = [r for r in results if not r.generation_failed]
    print(f"{len(ok)} of {runs} runs answered in {elapsed:.2f}s; e.g. {results[7].content!r}")
    failed = [i for i, r in enumerate(results) if r.generation_failed]
    print(f"failed runs: {failed} ({type(results[failed[0]].error).__name__})" if failed else "no failed runs")
    return results


if __name__ == "__main__":
    anyio.run(main)
