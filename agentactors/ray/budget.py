"""``SharedBudget``: one concurrency and rate budget for a whole :class:`~agentactors.ray.RayCluster`.

A :class:`~agentactors.gateway.provider.ProviderActor` bounds what one process
sends; a cluster of Ray workers needs one bound for all of them.  A
``SharedBudget`` is the configuration of that bound; the cluster starts one
named Ray actor per budget (a :class:`~agentactors.ray.ledger.BudgetLedger` in
a thin shell) and each worker leases from it in batches
(:class:`~agentactors.ray.lease.LeaseClient`), so the hot path pays a Ray call
for a small fraction of its requests.

What the bounds promise (docs/ray.md derives them):

- ``max_concurrency`` is exact: at no moment are more requests in flight,
  across every worker, than the budget allows — a slot is leased before a
  request is sent and returned after it ended.
- ``requests_per_minute`` / ``tokens_per_minute``: in any window of ``T``
  seconds the cluster sends at most ``burst + rate × T + workers × lease``
  (``rate`` per second; ``lease`` the largest batch a worker holds unspent,
  :attr:`SharedBudget.request_lease` / :attr:`SharedBudget.token_lease`).
  Unspent leased units go back to the ledger after ``token_ttl`` seconds.
  That bounds the units *taken*.  A token estimate that falls short of the
  usage reported becomes a debt paid from the worker's next lease, after the
  request went: the tokens used in a window may pass the bound by the
  shortfalls of its requests (an estimate counts no output without
  ``max_tokens``; ``max_tokens`` counts up to the bucket's size).
- A request whose wait for its units would exceed 15 minutes is refused at
  once with :class:`~agentactors.errors.Overloaded`, as at a ProviderActor
  (:mod:`agentactors.ray.shared`).
"""

from __future__ import annotations

import math

import attrs

__all__ = ["SharedBudget"]


def _positive_or_none(_: object, attribute: attrs.Attribute[float | None], value: float | None) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0 or not math.isfinite(value):
        raise ValueError(f"{attribute.name} must be a positive number or None, not {value!r}")


def _positive(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0 or not math.isfinite(value):
        raise ValueError(f"{attribute.name} must be a positive number, not {value!r}")


def _concurrency(_: object, attribute: attrs.Attribute[int | None], value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"max_concurrency must be a positive int or None, not {value!r}")


@attrs.frozen(slots=True)
class SharedBudget:
    """A budget shared by every worker of a cluster: concurrency slots and rate buckets.

    :param max_concurrency: requests in flight across the cluster (a stream counts until it ends).
    :param requests_per_minute: request rate; a bucket of ``burst`` minutes' budget, refilled continuously.
    :param tokens_per_minute: token rate, estimated before a request (as
        :func:`~agentactors.gateway.provider.estimate_tokens` does) and corrected by the usage reported.
    :param burst: the buckets' size in minutes of budget (default 1, as a ProviderActor's).  A
        ledger that restarted starts with empty buckets: a restart never grants a second burst.
    :param lease: slots a worker asks for at once when it runs short (default: a fair part of
        ``max_concurrency``, at most 16); more leased at once means fewer Ray calls.
    :param linger: seconds a worker keeps a slot it no longer uses before returning it, so that
        a burst of requests does not pay one Ray call each.
    :param token_ttl: seconds a worker keeps leased rate units it has not spent before
        returning them.
    :param refresh: seconds between a holding worker's check-ins, which tell it its fair share
        (so a worker holding more than its share hands the surplus back as requests end); an
        idle worker checks in every ``4 × refresh`` (so a restarted ledger hears from it).
    """

    max_concurrency: int | None = attrs.field(default=None, validator=_concurrency)
    requests_per_minute: float | None = attrs.field(default=None, validator=_positive_or_none)
    tokens_per_minute: float | None = attrs.field(default=None, validator=_positive_or_none)
    burst: float = attrs.field(default=1.0, kw_only=True, validator=_positive)
    lease: int | None = attrs.field(default=None, kw_only=True, validator=_concurrency)
    linger: float = attrs.field(default=0.05, kw_only=True, validator=_positive)
    token_ttl: float = attrs.field(default=1.0, kw_only=True, validator=_positive)
    refresh: float = attrs.field(default=0.25, kw_only=True, validator=_positive)

    def __attrs_post_init__(self) -> None:
        if self.max_concurrency is None and self.requests_per_minute is None and self.tokens_per_minute is None:
            raise ValueError("a SharedBudget bounds something: give max_concurrency and/or a rate")

    @property
    def slot_lease(self) -> int:
        """Slots asked for at once: ``lease``, or an eighth of ``max_concurrency`` (1 to 16)."""
        if self.lease is not None:
            return self.lease
        return max(1, min(16, (self.max_concurrency or 8) // 8))

    @property
    def request_lease(self) -> int:
        """Request units leased at once: about a second's rate (1 to 16), or ``lease`` if given."""
        if self.lease is not None:
            return self.lease
        per_second = (self.requests_per_minute or 60.0) / 60.0
        return max(1, min(16, int(per_second)))

    @property
    def token_lease(self) -> int:
        """Token units leased at once: about a second's rate, at least 1."""
        per_second = (self.tokens_per_minute or 60.0) / 60.0
        return max(1, int(per_second))

    def capacity(self, kind: str) -> float:
        """The bucket size for ``kind`` (``"requests"`` or ``"tokens"``), in units."""
        per_minute = self.requests_per_minute if kind == "requests" else self.tokens_per_minute
        assert per_minute is not None, f"no {kind} budget"
        return per_minute * self.burst

    def rate(self, kind: str) -> float:
        """Units per second for ``kind``."""
        per_minute = self.requests_per_minute if kind == "requests" else self.tokens_per_minute
        assert per_minute is not None, f"no {kind} budget"
        return per_minute / 60.0

    @property
    def kinds(self) -> tuple[str, ...]:
        """The rate budgets it has: ``"requests"`` and/or ``"tokens"``."""
        out: list[str] = []
        if self.requests_per_minute is not None:
            out.append("requests")
        if self.tokens_per_minute is not None:
            out.append("tokens")
        return tuple(out)
