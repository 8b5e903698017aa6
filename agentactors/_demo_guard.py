"""Stop a retry from calling a member whose breaker opened while the retry was waiting.

In the recommended stack, ``with_circuit_breaker(with_retry(with_timeout(p)))``,
the breaker admits a *call* and the retry inside it may make up to
``max_attempts`` HTTP requests.  If the breaker opens while one of those calls
is waiting between attempts (other calls' failures tripped it), the next
attempt still goes out — to a vendor the breaker has just declared down.  The
demo measures it in every run with an outage: without this guard, at the
default settings, 8 of 1,800 primary requests were sent that way (16 of 93 in
a 30-agent run at 30% faults).

Two small layers close that gap, using only the public breaker API:

* ``retry_on`` (:func:`retry_while_closed`): a failure is retried only while the
  member's breaker is closed — so a half-open probe fails on its first error
  and the breaker sees it at once;
* :class:`AttemptGuard` around the inner provider, with :class:`CallScope`
  around the retry: every attempt after the first is refused with
  :class:`~agentactors.errors.CircuitOpenError` (no request sent) unless the
  breaker is closed *now*.  The first attempt is the one the breaker has just
  admitted (closed, or as the half-open probe), so it always goes.

A refusal is not retried (``circuit_open`` never is), is ignored by the breaker
and moves the call to the next member with reason ``circuit_open``.
``AttemptGuard.refused`` counts them: each is a request the plain stack would
have sent to an open breaker's vendor.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from .errors import CircuitOpenError, ProviderError
from .messages import LLMRequest, LLMResponse, StreamEvent
from .providers.base import LLMProvider, StreamContext
from .resilience import CircuitBreakerProvider, CircuitState
from .resilience._base import ProviderDecorator, model_of

__all__ = ["AttemptGuard", "BreakerRef", "CallScope", "retry_while_closed"]

# The attempts made so far by the call in progress (one list per admitted call, set by CallScope).
_ATTEMPTS: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("demo_attempts", default=None)


class BreakerRef:
    """The breaker a guard consults; set once the stack is built (the breaker wraps the guard)."""

    __slots__ = ("breaker",)

    def __init__(self) -> None:
        self.breaker: CircuitBreakerProvider | None = None

    def closed(self, model: str | None) -> bool:
        breaker = self.breaker
        return breaker is None or breaker.state_for(model) is CircuitState.closed


def retry_while_closed(ref: BreakerRef) -> Callable[[ProviderError], bool]:
    """A ``with_retry(retry_on=...)`` test: the default (``error.retryable``), and only while the breaker is closed."""

    def retry_on(error: ProviderError) -> bool:
        return error.retryable and ref.closed(error.model)

    return retry_on


class CallScope(ProviderDecorator):
    """Sits between a breaker and its retry: each call the breaker admits starts a fresh attempt count."""

    async def complete(self, request: LLMRequest) -> LLMResponse:
        token = _ATTEMPTS.set([0])
        try:
            return await self.inner.complete(request)
        finally:
            _ATTEMPTS.reset(token)

    def stream(self, request: LLMRequest) -> StreamContext:
        return self._stream(request)

    @asynccontextmanager
    async def _stream(self, request: LLMRequest) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        # Set, not reset: a stream's context manager may be left from another context than it was
        # entered in, and the count only matters until the stream's first event.
        _ATTEMPTS.set([0])
        async with self.inner.stream(request) as events:
            yield events


class AttemptGuard(ProviderDecorator):
    """Refuses an attempt after the first unless the breaker in ``ref`` is closed (see the module docstring)."""

    def __init__(self, inner: LLMProvider | Any, ref: BreakerRef) -> None:
        super().__init__(inner)
        self._ref = ref
        self.refused = 0

    def _check(self, request: LLMRequest) -> None:
        attempts = _ATTEMPTS.get()
        if attempts is None:
            return
        attempts[0] += 1
        model = model_of(self.inner, request)
        if attempts[0] > 1 and not self._ref.closed(model):
            self.refused += 1
            breaker = self._ref.breaker
            stats = breaker.stats_for(model) if breaker is not None else None
            raise CircuitOpenError(
                provider=self.name,
                model=model,
                retry_after=stats.retry_after if stats is not None else None,
                last_error=stats.last_error if stats is not None else None,
            )

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self._check(request)
        return await self.inner.complete(request)

    def stream(self, request: LLMRequest) -> StreamContext:
        self._check(request)
        return self.inner.stream(request)
