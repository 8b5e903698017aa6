"""The circuit state machine behind ``with_circuit_breaker``: pure, synchronous, driven by a clock value.

One :class:`Circuit` per key.  Every method takes ``now`` and never awaits, so
a state change is atomic within an event loop (no lock) and the same sequence
of calls and timestamps gives the same transitions on asyncio and on trio.
Transitions are computed lazily when someone asks (there is no timer task):
an open circuit becomes half-open when the first call arrives after its open
duration, and a hung probe's permit is freed when a call finds it expired.
"""

from __future__ import annotations

import enum
import math
from collections import deque
from collections.abc import Callable, Hashable

import attrs

from ..errors import ProviderError
from ._numbers import is_number, whole

__all__ = ["BreakerPolicy", "Circuit", "CircuitState", "CircuitStats", "Outcome", "Permit"]


class CircuitState(enum.StrEnum):
    """Where a circuit stands.  ``forced_open`` and ``disabled`` are manual overrides."""

    closed = "closed"
    open = "open"
    half_open = "half_open"
    forced_open = "forced_open"
    disabled = "disabled"


class Outcome(enum.Enum):
    """What a finished call tells the circuit."""

    success = "success"
    failure = "failure"
    ignored = "ignored"  # neither: a request-side error, a cancellation, an inner breaker's refusal


def _seconds(value: object) -> object:
    """A number of seconds as a ``float``; anything else unchanged, for :func:`_positive` to refuse."""
    if not is_number(value):
        return value
    try:
        return float(value)  # type: ignore[arg-type]
    except OverflowError:  # an int past a float's range: infinite, refused as such
        return math.inf


def _count(value: object) -> object:
    """A whole number as an ``int``; anything else unchanged, for :func:`_at_least_one` to refuse."""
    n = whole(value)
    return value if n is None else n


def _positive(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    # A number, not a bool (window=True was a window of one second) nor a string (window="60" was a TypeError from
    # `>`); `not value > 0` refuses NaN as well.
    if not is_number(value) or not value > 0 or math.isinf(value):
        raise ValueError(f"{attribute.name} must be a positive, finite number of seconds, got {value!r}")


def _at_least_one(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    # A whole number, not a bool: min_calls=True was a count of 1, though every other count refuses bools.
    if whole(value) is None or value < 1:
        raise ValueError(f"{attribute.name} must be an integer >= 1, got {value!r}")


@attrs.frozen(slots=True)
class BreakerPolicy:
    """The numbers of a breaker (``docs/resilience.md`` §4); defaults as documented there.

    Each is checked when the policy is made, with a ``ValueError`` naming it: durations are positive, finite
    numbers of seconds (kept as ``float``), counts whole numbers >= 1 (kept as ``int``), never a bool.
    """

    window: float = attrs.field(default=60.0, converter=_seconds, validator=_positive)
    min_calls: int = attrs.field(default=10, converter=_count, validator=_at_least_one)
    failure_rate: float = attrs.field(default=0.5)
    consecutive_failures: int | None = attrs.field(default=5)
    open_duration: float = attrs.field(default=30.0, converter=_seconds, validator=_positive)
    max_open_duration: float = attrs.field(default=300.0, converter=_seconds, validator=_positive)
    half_open_max_calls: int = attrs.field(default=1, converter=_count, validator=_at_least_one)
    half_open_successes: int = attrs.field(default=1, converter=_count, validator=_at_least_one)
    max_half_open_wait: float = attrs.field(default=60.0, converter=_seconds, validator=_positive)
    buckets: int = attrs.field(default=10, converter=_count, validator=_at_least_one)

    def __attrs_post_init__(self) -> None:
        rate = self.failure_rate
        if not is_number(rate) or not 0 < rate <= 1:
            raise ValueError(f"failure_rate must be a number in (0, 1], got {rate!r}")
        limit = self.consecutive_failures
        if limit is not None and (whole(limit) is None or limit < 1):
            raise ValueError(f"consecutive_failures must be an integer >= 1 or None, got {limit!r}")
        if self.max_open_duration < self.open_duration:
            raise ValueError("max_open_duration must be >= open_duration")

    def open_duration_for(self, level: int, retry_after: float | None) -> float:
        """How long to stay open after ``level`` failed probes; a vendor's retry_after may extend it."""
        duration = min(self.max_open_duration, self.open_duration * 2.0 ** min(level, 64))
        if retry_after is not None and retry_after > duration:
            duration = min(self.max_open_duration, retry_after)
        return duration


class Permit:
    """Admission to call the inner provider once; settled exactly once (later settlements are no-ops)."""

    __slots__ = ("admitted_at", "epoch", "probe", "settled")

    def __init__(self, epoch: int, probe: bool, admitted_at: float) -> None:
        self.epoch = epoch
        self.probe = probe
        self.admitted_at = admitted_at
        self.settled = False


@attrs.frozen(slots=True)
class CircuitStats:
    """A snapshot of one circuit: its state and the counts that drive it.

    ``calls`` and ``failures`` are the counted outcomes in the rolling window;
    ``retry_after`` the seconds until a probe may pass (``None`` unless open).
    """

    key: Hashable
    state: CircuitState
    calls: int = 0
    failures: int = 0
    consecutive_failures: int = 0
    open_for: float | None = None
    retry_after: float | None = None
    probes_in_flight: int = 0
    last_error: ProviderError | None = None


Transition = Callable[["Circuit", CircuitState, CircuitState, str], None]


class Circuit:
    """The state of one breaker key.  Not thread-safe; one event loop drives it."""

    __slots__ = (
        "_buckets",
        "_notify",
        "consecutive",
        "epoch",
        "key",
        "last_error",
        "level",
        "open_for",
        "opened_at",
        "policy",
        "probe_successes",
        "probes",
        "rejected_since_event",
        "rejection_event_at",
        "state",
    )

    def __init__(self, key: Hashable, policy: BreakerPolicy, notify: Transition) -> None:
        self.key = key
        self.policy = policy
        self._notify = notify
        self.state = CircuitState.closed
        # Bumped on every transition: an outcome admitted under another epoch is stale and ignored.
        self.epoch = 0
        self._buckets: deque[list[int]] = deque()  # [bucket index, successes, failures]
        self.consecutive = 0
        self.opened_at = 0.0
        self.open_for = 0.0
        self.level = 0  # failed probes since the circuit last closed
        self.probes: list[Permit] = []
        self.probe_successes = 0
        self.last_error: ProviderError | None = None
        # breaker.rejected sampling (the breaker owns the policy; the circuit keeps the per-key counters).
        self.rejection_event_at: float | None = None
        self.rejected_since_event = 0

    # -- reading ----------------------------------------------------------------------------------

    def state_at(self, now: float) -> CircuitState:
        """The state a call arriving at ``now`` would find (computed, nothing changes)."""
        if self.state is CircuitState.open and now >= self.opened_at + self.open_for:
            return CircuitState.half_open
        return self.state

    def totals(self, now: float) -> tuple[int, int]:
        """(counted calls, failures) in the rolling window ending at ``now``."""
        self._prune(now)
        calls = failures = 0
        for _, s, f in self._buckets:
            calls += s + f
            failures += f
        return calls, failures

    def stats(self, now: float) -> CircuitStats:
        state = self.state_at(now)
        calls, failures = self.totals(now)
        return CircuitStats(
            key=self.key,
            state=state,
            calls=calls,
            failures=failures,
            consecutive_failures=self.consecutive,
            open_for=self.open_for if state in (CircuitState.open, CircuitState.half_open) else None,
            retry_after=max(0.0, self.opened_at + self.open_for - now) if state is CircuitState.open else None,
            probes_in_flight=sum(1 for p in self.probes if not self._expired(p, now)),
            last_error=self.last_error,
        )

    # -- admitting --------------------------------------------------------------------------------

    def admit(self, now: float) -> Permit | float:
        """A permit to call, or the seconds until a probe may pass (the call is refused)."""
        if self.state is CircuitState.open:
            remaining = self.opened_at + self.open_for - now
            if remaining > 0:
                return remaining
            self._transition(CircuitState.half_open, "open_duration_elapsed")
        if self.state is CircuitState.closed:
            return Permit(self.epoch, False, now)
        # Half-open: a probe that hung past max_half_open_wait gives its permit back now.
        self.probes = [p for p in self.probes if not self._expired(p, now)]
        if len(self.probes) < self.policy.half_open_max_calls:
            permit = Permit(self.epoch, True, now)
            self.probes.append(permit)
            return permit
        return max(0.0, min(p.admitted_at for p in self.probes) + self.policy.max_half_open_wait - now)

    def still_admits(self, permit: Permit | None, now: float) -> bool:
        """Whether a call admitted with ``permit`` may send another attempt at ``now`` (nothing changes).

        A call admitted while closed (or with no permit: the breaker was
        disabled) may send only while the circuit is closed: once it is open or
        half-open, another request would go to a vendor the circuit declares
        down, or be one probe too many.  A half-open probe may send while it
        still holds its permit in the same half-open period: not after the
        circuit reopened (another probe failed), and not once its permit
        expired after ``max_half_open_wait`` (another probe may hold it now).
        """
        state = self.state_at(now)
        if state is CircuitState.closed:
            return True
        if state is not CircuitState.half_open or permit is None or not permit.probe:
            return False
        # state_at() reports an open circuit whose time is up as half-open before anyone moved it
        # there; a probe of the earlier half-open period has a different epoch and may not send.
        return (
            permit.epoch == self.epoch
            and not permit.settled
            and permit in self.probes
            and not self._expired(permit, now)
        )

    def _expired(self, permit: Permit, now: float) -> bool:
        return now >= permit.admitted_at + self.policy.max_half_open_wait

    # -- recording --------------------------------------------------------------------------------

    def record(self, permit: Permit, outcome: Outcome, now: float, error: ProviderError | None = None) -> bool:
        """Settle ``permit``; returns whether the outcome was counted.

        Ignored outcomes, stale permits (admitted before the last transition)
        and probes whose permit was freed after ``max_half_open_wait`` count
        nothing; an ignored probe gives its permit back, so the next call
        probes.  A stale probe still gives its permit back when it answers.
        """
        if permit.settled:
            return False
        permit.settled = True
        held = permit.probe and permit in self.probes
        if held:
            self.probes.remove(permit)
        if permit.epoch != self.epoch:
            return False
        if permit.probe:
            if not held or self._expired(permit, now):
                # It answered, but after its permit was (or would have been) handed to another probe.
                return False
            if outcome is Outcome.ignored:
                return False
            if outcome is Outcome.success:
                self.probe_successes += 1
                if self.probe_successes >= self.policy.half_open_successes:
                    self._close("probe_succeeded")
            else:
                self.last_error = error
                self.level += 1
                self._open(now, "probe_failed", error)
            return True
        if outcome is Outcome.ignored:
            return False
        self._count(now, outcome is Outcome.failure)
        if outcome is Outcome.failure:
            self.last_error = error
            self.consecutive += 1
            limit = self.policy.consecutive_failures
            if limit is not None and self.consecutive >= limit:
                self._open(now, "consecutive_failures", error)
                return True
        else:
            self.consecutive = 0
        # The rate rule is checked after every counted outcome, successes included.
        calls, failures = self.totals(now)
        if calls >= self.policy.min_calls and failures >= self.policy.failure_rate * calls:
            self._open(now, "failure_rate", error if outcome is Outcome.failure else self.last_error)
        return True

    def _bucket_width(self) -> float:
        return self.policy.window / self.policy.buckets

    def _prune(self, now: float) -> None:
        current = math.floor(now / self._bucket_width())
        while self._buckets and self._buckets[0][0] <= current - self.policy.buckets:
            self._buckets.popleft()

    def _count(self, now: float, failed: bool) -> None:
        self._prune(now)
        current = math.floor(now / self._bucket_width())
        if not self._buckets or self._buckets[-1][0] != current:
            self._buckets.append([current, 0, 0])
        self._buckets[-1][2 if failed else 1] += 1

    # -- transitions ------------------------------------------------------------------------------

    def _open(self, now: float, reason: str, error: ProviderError | None) -> None:
        self.opened_at = now
        self.open_for = self.policy.open_duration_for(self.level, error.retry_after if error is not None else None)
        self._transition(CircuitState.open, reason)

    def _close(self, reason: str) -> None:
        self.level = 0
        self.consecutive = 0
        self._buckets.clear()
        self._transition(CircuitState.closed, reason)

    def _transition(self, to: CircuitState, reason: str) -> None:
        before = self.state
        self.state = to
        self.epoch += 1
        # Probes still in flight keep their permits across transitions (until they answer or hang past
        # max_half_open_wait): a vendor that is recovering never sees more than half_open_max_calls of them.
        self.probe_successes = 0
        self._notify(self, before, to, reason)
