"""One run that has it all, for the explain and OpenTelemetry tests: retries, a failover, a tool and a refusal.

The primary (``primary``, model ``p-model``) fails every attempt with a 503 — its retry gives up after two —
and the chain fails over to the secondary (``secondary``, model ``s-model``), which calls ``lookup`` and then ``dump``
(whose result is over its ceiling and refused), then answers.  Scripted and on virtual time: the retry's
backoff sleeps are the only waits.
"""

from __future__ import annotations

from agentactors import (
    Agent,
    LLMResponse,
    ProviderError,
    ResultCeiling,
    ScriptedProvider,
    StopReason,
    ToolCall,
    Usage,
    tool,
    with_circuit_breaker,
    with_fallback,
    with_retry,
)

ANSWER = "Lisbon is 21 °C; the dump was too big to read."
SECRET = "sk-scenario-secret-7c1d0e5b9a2f48e6b3d1"
REFUSED_SIZE = 5000


@tool
async def lookup(city: str) -> str:
    """The weather in a city."""
    return f"{city}: 21 °C, sunny"


@tool(result_ceiling=ResultCeiling(100, narrow_by=("limit",)))
async def dump(limit: int = 0) -> str:
    """Every record there is."""
    return "x" * REFUSED_SIZE


def down() -> ProviderError:
    return ProviderError("service unavailable", provider="primary", kind="transient", status=503)


def scenario_agent(*, name: str = "weather") -> Agent:
    primary = ScriptedProvider(lambda request: down(), name="primary", model="p-model")
    secondary = ScriptedProvider(
        [
            LLMResponse("", (ToolCall("c1", "lookup", {"city": "Lisbon"}),), StopReason.tool_use, Usage(10, 5),
                        model="s-model-2025"),
            LLMResponse("", (ToolCall("c2", "dump", {}),), StopReason.tool_use, Usage(20, 5), model="s-model-2025"),
            LLMResponse(ANSWER, (), StopReason.end_turn, Usage(30, 12), model="s-model-2025"),
        ],
        name="secondary",
        model="s-model",
    )
    chain = with_fallback(
        with_circuit_breaker(with_retry(primary, max_attempts=2, base_delay=0.1, jitter=(1.0, 1.0))),
        with_circuit_breaker(with_retry(secondary, max_attempts=2, base_delay=0.1, jitter=(1.0, 1.0))),
    )
    return Agent(chain, tools=[lookup, dump], system="Be brief.", name=name, model="p-model")
