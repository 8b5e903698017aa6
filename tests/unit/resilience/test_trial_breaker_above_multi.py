"""A fallback chain or a pool under a circuit breaker moves to no further member once that breaker opened.

``with_circuit_breaker(with_fallback(...))`` (or over a ``with_pool``) admits one *call*; the chain below may then
send it to several members, one after another.  A breaker's "no calls while open" holds for every request below
it (``docs/resilience.md`` §7, the ``_gate`` module): a retry below stops before its next attempt once the circuit
opened.  The trial found the chain itself did not ask: call ``x``'s retry on member ``a`` stopped because the
breaker above had opened meanwhile (call ``y`` failed on every member), and the chain then moved ``x`` to member
``b`` — a request sent below an open breaker.  Both backends, virtual time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

from agentactors.errors import AllProvidersFailedError, ProviderError
from agentactors.messages import LLMRequest, Message, TextDelta
from agentactors.providers.scripted import ScriptedProvider
from agentactors.resilience import (
    CircuitBreakerProvider,
    CircuitState,
    with_circuit_breaker,
    with_fallback,
    with_pool,
    with_retry,
)
from tests.support.resilience import http_error, recording

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

Log = list[tuple[str, str, float, CircuitState]]


def req(label: str) -> LLMRequest:
    return LLMRequest([Message.user(label)])


class Stack:
    """``breaker(fallback-or-pool(retry(a), retry(b)))``; each vendor logs (member, label, time, outer state).

    Call ``x`` fails on ``a`` with a retryable 503 (its retry backs off 1 s), then would be served by ``b``.
    Call ``y`` fails on both members with a 503 the vendor says not to retry: the chain fails at once, and the
    breaker above (one failure opens it) opens while ``x`` backs off.
    """

    def __init__(self, kind: str, *, consecutive_failures: int = 1) -> None:
        self.log: Log = []
        a = ScriptedProvider(self._vendor("a", fails={"x", "y"}), name="a", model="ma")
        b = ScriptedProvider(self._vendor("b", fails={"y"}), name="b", model="mb")
        ra = with_retry(a, base_delay=1.0, max_delay=1.0, jitter=(1.0, 1.0))
        rb = with_retry(b, base_delay=1.0, max_delay=1.0, jitter=(1.0, 1.0))
        inner = with_fallback(ra, rb) if kind == "fallback" else with_pool(ra, rb, strategy="round_robin")
        self.breaker: CircuitBreakerProvider = with_circuit_breaker(
            inner, consecutive_failures=consecutive_failures, open_duration=30.0, key=lambda provider, model: provider
        )

    def _vendor(self, name: str, *, fails: set[str]) -> Callable[[LLMRequest], Any]:
        def answer(request: LLMRequest) -> Any:
            label = str(request.messages[-1].content)
            self.log.append((name, label, anyio.current_time(), self.breaker.state_for(request.model)))
            if label not in fails:
                return f"{name} answers {label}"
            if label == "x":
                raise http_error(503, provider=name)  # retryable
            raise http_error(503, {"x-should-retry": "false"}, provider=name)  # not retried, moves on

        return answer

    def sent_while_open(self) -> Log:
        return [entry for entry in self.log if entry[3] is not CircuitState.closed]


async def call(provider: Any, label: str, *, stream: bool) -> Any:
    try:
        if stream:
            async with provider.stream(req(label)) as events:
                return "".join([e.text async for e in events if isinstance(e, TextDelta)])
        return (await provider.complete(req(label))).content
    except ProviderError as exc:
        return exc


async def race(stack: Stack, *, stream: bool) -> dict[str, Any]:
    """``x`` at t=0; ``y`` at t=0.5 (while ``x``'s retry on ``a`` backs off until t=1)."""
    results: dict[str, Any] = {}

    async def one(label: str, at: float) -> None:
        await anyio.sleep(at)
        results[label] = await call(stack.breaker, label, stream=stream)

    async with anyio.create_task_group() as tg:
        tg.start_soon(one, "x", 0.0)
        tg.start_soon(one, "y", 0.5)
    return results


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
@pytest.mark.parametrize("kind", ["fallback", "pool"])
async def test_no_member_is_called_once_the_breaker_above_opened(kind: str, stream: bool) -> None:
    stack = Stack(kind)
    with recording() as rec:
        results = await race(stack, stream=stream)
    assert isinstance(results["y"], AllProvidersFailedError)
    assert stack.breaker.state is CircuitState.open
    # Nothing reached a vendor while the breaker above was open: x's retry stopped, and the chain did not move on.
    assert stack.sent_while_open() == []
    assert [(m, label) for m, label, _, _ in stack.log if label == "x"] == [("a", "x")]
    # x fails with a's own error (transient: a fallback above would move on), saying why it went no further.
    error = results["x"]
    assert isinstance(error, ProviderError) and not isinstance(error, AllProvidersFailedError), error
    assert error.provider == "a" and error.status == 503
    notes = "\n".join(getattr(error, "__notes__", ()))
    assert "opened" in notes and "no further member" in notes, notes
    assert anyio.current_time() == 1.0  # raised when the retry stopped: no wait, no further attempt
    stopped = [e for e in rec.events if e.type == f"{kind}.exhausted" and e.data.get("reason") == "circuit_open"]
    assert len(stopped) == 1 and stopped[0].data["errors"] == (error,), rec.events


@pytest.mark.parametrize("kind", ["fallback", "pool"])
async def test_while_the_breaker_above_stays_closed_the_chain_moves_on_as_before(kind: str) -> None:
    stack = Stack(kind, consecutive_failures=5)  # y's failure does not open it
    results = await race(stack, stream=False)
    assert results["x"] == "b answers x"
    assert stack.breaker.state is CircuitState.closed
    assert [(m, label) for m, label, _, _ in stack.log if label == "x"] == [("a", "x"), ("a", "x"), ("a", "x"),
                                                                          ("b", "x")]
