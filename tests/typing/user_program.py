"""A user's program, as README.md and docs/*.md show the API: what ``mypy --strict`` makes of it.

Not a test module (pytest does not collect it: see this folder's conftest.py); it is type-checked, never run:
tests/unit/test_user_typing.py runs ``mypy --strict`` on this one file, and ``make test``'s mypy line
(``mypy --strict agentactors tests examples``) checks it with the rest of tests/.  Every ``assert_type`` is a
promise the docs make to a user's type checker.  No cast anywhere; the one documented ignore (a special form as
``output_type``, docs/output.md) and each KNOWN GAP (an ``Any`` or an ignore where the docs promise a type) are
marked where they are, written so that the gap's fix makes this file fail until the line is updated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypedDict, assert_type

from agentactors import (
    Agent,
    AgentRun,
    AgentSession,
    AnthropicProvider,
    AzureOpenAIProvider,
    BedrockProvider,
    Document,
    ErrorKind,
    Event,
    Explanation,
    GeminiProvider,
    Image,
    InMemoryRecorder,
    LLMProvider,
    Message,
    ModelSettings,
    NativeOutput,
    OpenAIProvider,
    OpenAIResponsesProvider,
    PromptedOutput,
    ProviderError,
    RunResult,
    Runtime,
    ScriptedProvider,
    Text,
    ToolContext,
    ToolOutput,
    explain,
    resilient_chain,
    tool,
    with_circuit_breaker,
    with_fallback,
    with_retry,
    with_timeout,
)
from agentactors.events import LLMTextDelta
from agentactors.tools import Tool

# --- tools --------------------------------------------------------------------------------------------


@tool
async def get_weather(city: str) -> dict[str, object]:
    """Current weather for a city."""
    return {"city": city, "celsius": 21, "sky": "sunny"}


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool(timeout=5.0)
async def slow_lookup(query: str) -> str:
    """A lookup that may take a while."""
    return query


@tool(name="search_orders", read_only=True)
def search(customer: str, limit: int = 10) -> list[str]:
    """Find a customer's orders."""
    return [customer] * limit


@dataclass
class Db:
    dsn: str


@tool
async def charge(customer: str, amount: int, ctx: ToolContext) -> str:
    """Charge a customer."""
    key = f"{ctx.input_key}:charge:{customer}:{amount}"
    assert_type(ctx.input_key, str | None)
    assert_type(ctx.idempotency_key, str)
    assert_type(ctx.run_id, str | None)
    db: Db = ctx.deps  # deps is what the caller passed: Any, the user names its type
    return f"{db.dsn}:{key}"


@tool
async def refund(customer: str, ctx: ToolContext[Db]) -> str:
    """Refund a customer (ToolContext[Db]: the checker knows what deps is)."""
    assert_type(ctx.deps, Db)
    return f"{ctx.deps.dsn}:{customer}"


@tool
def progress(ctx: ToolContext, step: int) -> str:
    """A sync tool taking its context first (docs/loop.md: a ToolContext parameter, anywhere)."""
    ctx.emit("tools.progress", step=step)
    return str(step)


@tool
def maybe_context(q: str, ctx: ToolContext | None = None) -> str:
    """Callable without a context too: `ToolContext | None = None`."""
    return q if ctx is None else f"{ctx.call_id}:{q}"


async def check_tools() -> None:
    # A Tool keeps the function's signature (Tool[P, R]): calling it calls the plain function (docs/loop.md),
    # checked like a call of that function.
    tools: list[Tool[..., Any]] = [get_weather, add, slow_lookup, search, charge, refund]
    assert_type(await refund("ada", ToolContext(call_id="c1", tool_name="refund", deps=Db("postgres://"))), str)
    assert_type(ToolContext(call_id="c1", tool_name="t", deps=Db("x")).deps, Db)
    assert_type(add(1, 2), int)
    assert_type(await get_weather("Oslo"), dict[str, object])
    assert_type(search("ada", limit=3), list[str])
    assert_type(progress(ToolContext(call_id="c1", tool_name="progress"), 3), str)
    assert_type(maybe_context("q"), str)
    named: Tool[[str], str] = tool(shout, name="shout")
    assert_type(named("hi"), str)
    assert_type(add.name, str)
    assert_type(add.parameters, dict[str, Any])
    assert_type(slow_lookup.timeout, float | None)
    assert_type(charge.takes_context, bool)
    del tools


def shout(text: str) -> str:
    return text.upper()


# --- typed results -------------------------------------------------------------------------------------


@dataclass
class Triage:
    action: Literal["refund", "replace", "escalate"]
    reason: str
    priority: int


class Address(TypedDict):
    street: str
    city: str


async def typed_results() -> None:
    provider = ScriptedProvider(["Hello!"])
    plain = Agent(provider, tools=[get_weather, add], system="Be brief.")
    assert_type(plain, Agent[str])
    result = await plain.run("What's the weather in Lisbon?")
    assert_type(result, RunResult[str])
    assert_type(result.output, str)
    assert_type(result.content, str)
    assert_type(result.steps, int)

    triager = Agent(provider, output_type=Triage)
    assert_type(triager, Agent[Triage])
    triage = await triager.run("My kettle arrived cracked.")
    assert_type(triage, RunResult[Triage])
    assert_type(triage.output, Triage)
    assert_type(triage.output.priority, int)

    addresses = Agent(provider, output_type=Address)
    assert_type((await addresses.run("Where?")).output, Address)

    picks = Agent(provider, output_type=list[int])
    assert_type((await picks.run("Three numbers")).output, list[int])

    synced = triager.run_sync("Again?")
    assert_type(synced, RunResult[Triage])

    assert_type(Agent(provider, output_type=ToolOutput(Triage)), Agent[Triage])
    assert_type(Agent(provider, output_type=NativeOutput(int)), Agent[int])
    assert_type(Agent(provider, output_type=PromptedOutput(Address)), Agent[Address])

    # docs/output.md: a special form (Literal[...], A | B) is not a `type` to a type checker, so the docs say to
    # annotate the agent and ignore the argument's error (a limitation until checkers take PEP 747's TypeForm).
    pick: Agent[Literal["refund", "replace"]] = Agent(
        provider, output_type=Literal["refund", "replace"]  # type: ignore[arg-type]
    )
    assert_type((await pick.run("Which?")).output, Literal["refund", "replace"])
    either: Agent[Triage | Address] = Agent(provider, output_type=Triage | Address)  # type: ignore[arg-type]
    assert_type((await either.run("Which?")).output, Triage | Address)


def sync_caller() -> str:
    agent = Agent(OpenAIProvider("gpt-4.1-mini"), tools=[get_weather])
    result = agent.run_sync("What's the weather in Lisbon?")
    assert_type(result, RunResult[str])
    return result.output


# --- providers and chains -----------------------------------------------------------------------------


def providers() -> LLMProvider:
    a = OpenAIProvider("gpt-4.1-mini", api_key="sk-test", settings=ModelSettings(temperature=0.2))
    b = AnthropicProvider("claude-sonnet-4-5")
    chain: LLMProvider = with_retry(with_fallback(a, b), max_attempts=3)
    guarded: LLMProvider = with_circuit_breaker(with_timeout(with_retry(a), attempt=30.0, first_event=5.0))
    Agent(guarded)
    others: list[LLMProvider] = [
        OpenAIResponsesProvider("gpt-4.1-mini"),
        AzureOpenAIProvider("prod-gpt", endpoint="https://acme.openai.azure.com", api_version="2024-10-21"),
        AnthropicProvider.vertex("claude-sonnet-4-5", project="acme", region="us-east5", token_provider=lambda: "t"),
        GeminiProvider("gemini-2.5-flash", api_key="k"),
        GeminiProvider.vertex("gemini-2.5-flash", project="acme", location="global"),
        BedrockProvider("anthropic.claude-sonnet-4-5", region="us-east-1"),
    ]
    preset = resilient_chain(a, b, *others)
    assert_type(preset, LLMProvider)
    Agent(chain)
    Agent(preset, output_type=Triage)
    return chain


# --- streaming --------------------------------------------------------------------------------------------


async def streaming(agent: Agent[str]) -> str:
    pieces: list[str] = []
    async with agent.stream("And in Oslo?") as run:
        assert_type(run, AgentRun[str])
        async for event in run:
            assert_type(event, Event)
            assert_type(event.type, str)
            if isinstance(event, LLMTextDelta):  # the event's class narrows, and its payload's fields are typed
                assert_type(event.text, str)
                pieces.append(event.text)
            if event.type == "llm.text_delta":  # the README's loop: no cast needed...
                # ...but a comparison of event.type narrows nothing (Event is one class; custom events share it),
                # so event.text is Any there: isinstance (above) is the typed way.
                assert_type(event.text, Any)
                text: str = event.text
                pieces.append(text)
        assert_type(run.result, RunResult[str])
    return "".join(pieces)


async def streaming_typed(agent: Agent[Triage]) -> Triage:
    async with agent.stream("The replacement is cracked too.") as run:
        async for partial in run.partial_output():  # more and more complete values, then the validated one
            assert_type(partial, Triage)
        result = await run.wait()
    assert_type(result, RunResult[Triage])
    return result.output


# --- runtime, many runs, sessions, explain, errors -------------------------------------------------------


class AppRuntime(Runtime):
    """A runtime a service subclasses to carry its own helpers: ``async with`` hands back the subclass."""

    def label(self) -> str:
        return "app"


async def subclassed_runtime() -> str:
    async with AppRuntime() as app:
        assert_type(app, AppRuntime)
        label = app.label()
    return label


async def runtime_and_friends(chart_png: bytes) -> None:
    recorder = InMemoryRecorder()
    agent = Agent(ScriptedProvider(["ok"]), tools=[get_weather, charge], recorders=[recorder])
    triager = Agent(ScriptedProvider(["ok"]), output_type=Triage)
    async with Runtime() as rt:
        assert_type(rt, Runtime)
        results = await rt.run_many(agent, [f"Weather in city #{i}?" for i in range(10)], concurrency=5)
        assert_type(results, list[RunResult[str]])
        typed = await rt.run_many(triager, ["a", "b"])
        assert_type(typed, list[RunResult[Triage]])
        assert_type(typed[0].output, Triage)
        many = await agent.run_many(["a", "b"])
        assert_type(many, list[RunResult[str]])
        async with rt.as_completed(triager, ["a", "b"], concurrency=2) as finished:
            async for done in finished:
                assert_type(done, RunResult[Triage])
        async for done in triager.as_completed(["c"]):
            assert_type(done, RunResult[Triage])
        async for plain in agent.as_completed(["d"]):
            assert_type(plain, RunResult[str])

        session = rt.session(agent, "user:1", idle_timeout=300)
        assert_type(session, AgentSession[str])
        turn = await session.send("Where is my order?")
        assert_type(turn, RunResult[str])  # a session keeps its agent's output type
        typed_session = triager.session("ticket:9")
        assert_type(typed_session, AgentSession[Triage])
        assert_type((await typed_session.send("Cracked again.")).output, Triage)
        assert_type(session.history, tuple[Message, ...])
        session2 = agent.session("user:2")
        assert_type(session2, AgentSession[str])

        result = await agent.run(
            Message.user(
                [Text("Does the chart match?"), Image(data=chart_png), Document(url="https://example.com/q3.pdf")]
            ),
            settings=ModelSettings(max_tokens=2000, thinking_budget=1024),
            deps=Db("postgres://"),
        )
        explanation = explain(result, recorder.events)
        assert_type(explanation, Explanation)
        # a typed agent's result explained as any other (explain takes RunResult[Any])
        typed_explanation = explain(await triager.run("x"), recorder.events)
        assert_type(typed_explanation, Explanation)

        try:
            result.raise_for_error()
        except ProviderError as e:
            assert_type(e.kind, ErrorKind)
            assert_type(e.retryable, bool)
            assert_type(e.status, int | None)
