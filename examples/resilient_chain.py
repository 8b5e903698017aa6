"""A resilient provider chain, end to end, without a network.

Two scripted providers stand in for two vendors: the primary is overloaded
(HTTP 529 with ``retry-after-ms``, as Anthropic answers under load), the
secondary is healthy.  The chain is the recommended stack, outer to inner::

    with_fallback(
        with_circuit_breaker(with_retry(with_timeout(primary))),
        with_circuit_breaker(with_retry(with_timeout(secondary))),
    )

What you will see: the first two requests retry the primary (waiting what the
vendor asked for), then fail over to the secondary; the primary's breaker sees
one failure per exhausted retry and opens after the second; from then on the
primary is skipped at once, without a call, until its open duration has passed.

Run it with ``python examples/resilient_chain.py``.
"""

from __future__ import annotations

from collections import Counter

import anyio

from agentactors import (
    InMemoryRecorder,
    LLMProvider,
    LLMRequest,
    Message,
    ProviderError,
    ScriptedProvider,
    with_circuit_breaker,
    with_fallback,
    with_retry,
    with_timeout,
)
from agentactors.events import EventSink, use_sink
from agentactors.messages import TextDelta
from agentactors.providers import classify_http_error
from agentactors.resilience import CircuitBreakerProvider

OVERLOADED_BODY = b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'


def overloaded(request: LLMRequest) -> ProviderError:
    """What the primary vendor answers to everything today: 529, retry in 20 ms."""
    return classify_http_error(529, {"retry-after-ms": "20"}, OVERLOADED_BODY, provider="primary-vendor")


def answer(request: LLMRequest) -> str:
    return f"the secondary answers {request.messages[-1].content!r}"


def guarded(provider: LLMProvider) -> CircuitBreakerProvider:
    """One member of the chain: bounded attempts, retried, behind its own breaker."""
    return with_circuit_breaker(
        with_retry(with_timeout(provider, attempt=30.0, first_event=10.0), max_attempts=3),
        consecutive_failures=2,
        open_duration=30.0,
    )


async def main() -> list[str]:
    primary = ScriptedProvider(overloaded, name="primary-vendor", model="big-model")
    secondary = ScriptedProvider(answer, name="secondary-vendor", model="other-model")
    primary_guard = guarded(primary)
    chain = with_fallback(primary_guard, guarded(secondary))

    recorder = InMemoryRecorder()
    lines: list[str] = []
    # A run's recorders travel with the call: every decorator reports to the sink installed here.
    with use_sink(EventSink([recorder], run_id="example-run")):
        for question in ("first question", "second question", "third question"):
            calls_before = primary.calls
            response = await chain.complete(LLMRequest([Message.user(question)]))
            lines.append(
                f"{question}: served by {response.provider} ({response.model}); "
                f"primary called {primary.calls - calls_before}x, its breaker is {primary_guard.state.value}"
            )
        async with chain.stream(LLMRequest([Message.user("a streamed question")])) as events:
            text = "".join([e.text async for e in events if isinstance(e, TextDelta)])
        lines.append(f"stream: {text}")

    counts = Counter(event.type for event in recorder.events)
    lines.append("events: " + ", ".join(f"{kind} x{n}" for kind, n in sorted(counts.items())))
    await chain.aclose()
    for line in lines:
        print(line)
    return lines


if __name__ == "__main__":
    anyio.run(main)
