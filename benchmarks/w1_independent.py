"""W1 again, written the plainest way: one framework per fresh process, rounds interleaved, best of N.

    python benchmarks/w1_independent.py                  # 5 rounds, prints a table, writes results/w1_independent.json
    python benchmarks/w1_independent.py --smoke --json -   # tiny, JSON on stdout (the harness test)

The run is the same everywhere: the model asks for ``add(2, 3)``, the tool runs, the model answers "The answer is 5."
The model answers at once (no latency, no I/O), so only what the framework does around it is measured.  Each
measurement is a new interpreter that builds one implementation, warms it up, then times sequential runs for a
fixed budget of wall time; every round starts each implementation once (in a rotated order), and a
framework's figure is its best round (the least disturbed by a busy machine).  The CPU time of the same runs
(``time.process_time``) is beside it: on a machine other work keeps busy, it moves less than wall time.
Nothing here is shared with ``run.py``'s W1 (``_workloads.py`` / ``_peers.py`` / ``_baselines.py``): the two
harnesses check each other.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ANSWER = "The answer is 5."
Run = Callable[[], Awaitable[str]]


def model_reply(history: list[dict[str, Any]]) -> dict[str, Any]:
    """The zero-latency model, on plain dicts: a tool call first, then the answer quoting the tool's result."""
    if history[-1]["role"] == "tool":
        return {"role": "assistant", "content": f"The answer is {history[-1]['content']}."}
    return {"role": "assistant", "tool_calls": [{"id": "c1", "name": "add", "arguments": '{"a": 2, "b": 3}'}]}


# --- the floor: a plain loop ------------------------------------------------------------------------------


async def plain_loop() -> Run:
    async def run() -> str:
        history: list[dict[str, Any]] = [{"role": "user", "content": "add 2 and 3"}]
        while True:
            reply = model_reply(history)
            history.append(reply)
            if "tool_calls" not in reply:
                return str(reply["content"])
            for call in reply["tool_calls"]:
                args = json.loads(call["arguments"])
                history.append({"role": "tool", "id": call["id"], "content": str(args["a"] + args["b"])})

    return run


# --- naive anyio actors: a task per actor, a memory stream its mailbox, a memory stream per reply -----------


async def naive_actors() -> Run:
    import anyio

    async def actor(inbox: Any, handle: Callable[[Any], Any]) -> None:
        async for payload, reply_to in inbox:
            await reply_to.send(handle(payload))

    def tool(call: dict[str, Any]) -> str:
        args = json.loads(call["arguments"])
        return str(args["a"] + args["b"])

    model_in, model_out = anyio.create_memory_object_stream[Any](100)
    tool_in, tool_out = anyio.create_memory_object_stream[Any](100)
    tg = anyio.create_task_group()
    await tg.__aenter__()  # left open: the process ends after measuring
    tg.start_soon(actor, model_out, model_reply)
    tg.start_soon(actor, tool_out, tool)

    async def ask(mailbox: Any, payload: Any) -> Any:
        reply_in, reply_out = anyio.create_memory_object_stream[Any](1)
        await mailbox.send((payload, reply_in))
        return await reply_out.receive()

    async def run() -> str:
        history: list[dict[str, Any]] = [{"role": "user", "content": "add 2 and 3"}]
        while True:
            reply = await ask(model_in, list(history))
            history.append(reply)
            if "tool_calls" not in reply:
                return str(reply["content"])
            for call in reply["tool_calls"]:
                history.append({"role": "tool", "id": call["id"], "content": await ask(tool_in, call)})

    return run


# --- agentactors --------------------------------------------------------------------------------------------


async def agentactors() -> Run:
    from agentactors import Agent, LLMRequest, Runtime, ScriptedProvider, ToolCall, tool

    @tool
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def model(request: LLMRequest) -> Any:
        last = request.messages[-1]
        return f"The answer is {last.content}." if last.role == "tool" else [ToolCall("c1", "add", {"a": 2, "b": 3})]

    rt = Runtime()
    await rt.__aenter__()  # left open: the process ends after measuring
    agent = Agent(ScriptedProvider(model, record=False), tools=[add])

    async def run() -> str:
        return (await agent.run("add 2 and 3")).content

    return run


# --- autogen-core: a model agent and a tool agent, asked by RPC through its runtime --------------------------


async def autogen_core() -> Run:
    from dataclasses import dataclass

    from autogen_core import AgentId, BaseAgent, MessageContext, SingleThreadedAgentRuntime

    @dataclass
    class Request:
        payload: Any

    class Model(BaseAgent):
        async def on_message_impl(self, message: Any, ctx: MessageContext) -> Any:
            return model_reply(message.payload)

    class Tool(BaseAgent):
        async def on_message_impl(self, message: Any, ctx: MessageContext) -> Any:
            args = json.loads(message.payload["arguments"])
            return str(args["a"] + args["b"])

    runtime = SingleThreadedAgentRuntime()
    await Model.register(runtime, "model", lambda: Model("the model"))
    await Tool.register(runtime, "tool", lambda: Tool("the tool"))
    runtime.start()
    model_id, tool_id = AgentId("model", "default"), AgentId("tool", "default")

    async def run() -> str:
        history: list[dict[str, Any]] = [{"role": "user", "content": "add 2 and 3"}]
        while True:
            reply = await runtime.send_message(Request(list(history)), model_id)
            history.append(reply)
            if "tool_calls" not in reply:
                return str(reply["content"])
            for call in reply["tool_calls"]:
                result = await runtime.send_message(Request(call), tool_id)
                history.append({"role": "tool", "id": call["id"], "content": result})

    return run


# --- pydantic-ai: its FunctionModel ---------------------------------------------------------------------------


async def pydantic_ai() -> Run:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    async def model(messages: list[Any], info: Any) -> ModelResponse:  # a plain def runs in a worker thread
        returns = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        if returns:
            return ModelResponse(parts=[TextPart(f"The answer is {returns[0].content}.")])
        return ModelResponse(parts=[ToolCallPart("add", {"a": 2, "b": 3}, tool_call_id="c1")])

    agent = Agent(FunctionModel(model))

    @agent.tool_plain
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    async def run() -> str:
        return str((await agent.run("add 2 and 3")).output)

    return run


# --- openai-agents: a Model of its interface answering from memory -------------------------------------------


async def openai_agents() -> Run:
    from agents import Agent, RunConfig, Runner, function_tool, set_tracing_disabled
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    set_tracing_disabled(True)

    class Instant(Model):
        async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> Any:
            outputs = [i for i in input if isinstance(i, dict) and i.get("type") == "function_call_output"]
            if outputs:
                text = ResponseOutputText(type="output_text", text=f"The answer is {outputs[-1]['output']}.",
                                          annotations=[])
                message = ResponseOutputMessage(id="m1", type="message", role="assistant", status="completed",
                                                content=[text])
                return ModelResponse(output=[message], usage=Usage(), response_id=None)
            call = ResponseFunctionToolCall(id="f1", call_id="c1", type="function_call", name="add",
                                            arguments='{"a": 2, "b": 3}', status="completed")
            return ModelResponse(output=[call], usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    @function_tool
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    agent = Agent(name="w1", tools=[add], model=Instant())
    config = RunConfig(tracing_disabled=True)

    async def run() -> str:
        return str((await Runner.run(agent, "add 2 and 3", run_config=config)).final_output)

    return run


FRAMEWORKS: dict[str, Callable[[], Awaitable[Run]]] = {
    "plain loop": plain_loop,
    "naive anyio actors": naive_actors,
    "agentactors": agentactors,
    "autogen-core": autogen_core,
    "pydantic-ai": pydantic_ai,
    "openai-agents": openai_agents,
}


# --- one measurement: a child process -------------------------------------------------------------------------


async def measure(name: str, budget: float) -> dict[str, Any]:
    run = await FRAMEWORKS[name]()
    for _ in range(20):  # warm up
        if (answer := await run()) != ANSWER:
            raise RuntimeError(f"{name} answered {answer!r}")
    runs, t0, cpu0 = 0, time.perf_counter(), time.process_time()
    while (elapsed := time.perf_counter() - t0) < budget:
        for _ in range(10):
            await run()
        runs += 10
    cpu = time.process_time() - cpu0
    return {"name": name, "runs": runs, "us_per_run": elapsed / runs * 1e6, "cpu_us_per_run": cpu / runs * 1e6}


def child(name: str, budget: float) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", name, "--budget", str(budget)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["failed"])[-1]
        return {"name": name, "error": "not installed" if "ModuleNotFoundError" in last else last[:200]}
    return dict(json.loads(out.stdout))


# --- the rounds, the table ------------------------------------------------------------------------------------


def rounds(names: list[str], n: int, budget: float) -> dict[str, Any]:
    samples: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    errors: dict[str, str] = {}
    for r in range(n):
        order = names[r % len(names):] + names[:r % len(names)]  # rotate: nobody always goes first
        for name in order:
            if name in errors:
                continue
            result = child(name, budget)
            if "error" in result:
                errors[name] = result["error"]
            else:
                samples[name].append(result["us_per_run"])
                cpu[name].append(result["cpu_us_per_run"])
    results: dict[str, Any] = {}
    for name in names:
        if samples[name]:
            results[name] = {"best_us": min(samples[name]), "median_us": statistics.median(samples[name]),
                             "best_cpu_us": min(cpu[name]), "rounds": len(samples[name])}
        else:
            results[name] = {"error": errors.get(name, "no sample")}
    return results


def markdown(results: dict[str, Any]) -> str:
    naive = results.get("naive anyio actors", {}).get("best_us")
    ours = results.get("agentactors", {}).get("best_us")
    lines = ["| framework | best µs / run | median | × naive anyio actors | × agentactors | best CPU µs / run |",
             "|---|---|---|---|---|---|"]
    for name, r in results.items():
        if "error" in r:
            lines.append(f"| {name} | {r['error']} | | | | |")
            continue
        vs_naive = f"{r['best_us'] / naive:.2f}×" if naive else "—"
        ratio = r["best_us"] / ours if ours else None
        vs_ours = "—" if ratio is None else f"{ratio:.2f}×" if ratio < 10 else f"{ratio:.1f}×"
        lines.append(f"| {name} | {r['best_us']:,.1f} | {r['median_us']:,.1f} | {vs_naive} | {vs_ours} "
                     f"| {r['best_cpu_us']:,.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--budget", type=float, default=1.0, help="seconds of timed runs per measurement")
    parser.add_argument("--only", default=",".join(FRAMEWORKS))
    parser.add_argument("--smoke", action="store_true", help="1 round of 0.05 s: checks the harness")
    parser.add_argument("--json", default=str(HERE / "results" / "w1_independent.json"),
                        help="where to write the JSON ('-': stdout, after the table)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(asyncio.run(measure(args.child, args.budget))))
        return 0
    n, budget = (1, 0.05) if args.smoke else (args.rounds, args.budget)
    names = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = set(names) - set(FRAMEWORKS)
    if unknown:
        parser.error(f"unknown frameworks {sorted(unknown)}; known: {', '.join(FRAMEWORKS)}")
    results = rounds(names, n, budget)
    report = {"rounds": n, "budget_s": budget, "python": sys.version.split()[0], "results": results,
              "markdown": markdown(results)}
    print(report["markdown"], file=sys.stderr if args.json == "-" else sys.stdout)
    if args.json == "-":
        print(json.dumps(report, indent=2))
    else:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2))
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
