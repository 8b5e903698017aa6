"""What a vendor's response headers say about its rate limits: :class:`RateLimitState`.

Vendors report how much of their rate limit is left on every response:

* OpenAI and compatible servers (Groq, Azure, vLLM...): ``x-ratelimit-limit-requests``,
  ``x-ratelimit-remaining-requests``, ``x-ratelimit-reset-requests`` (a duration: ``1s``,
  ``6m0s``, ``20ms``, ``2m59.56s``) and the same for ``-tokens``;
* Anthropic: ``anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}``
  (the reset an RFC 3339 time);
* any of them, on a 429 or 503: ``retry-after`` / ``retry-after-ms``.

:func:`read_rate_limits` turns them into a :class:`RateLimitState` in one pass over the headers
(nothing is built when a response carries none of them).  :class:`~agentactors.providers.http.provider.HTTPProvider`
keeps the last one it saw as its ``rate_limit`` property, which is how ``with_pool`` steers calls
away from a deployment near its limit, and how a ``ProviderActor`` holds its requests until the vendor's
reset instead of sending them to a 429 (:mod:`agentactors.gateway._vendor`).  Times are kept on
``anyio.current_time()``'s clock.  A value that is not a number of its kind (``inf``, a count past float
range, a date that does not parse) is read as unsaid: never an error out of the provider's call.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Final

import anyio
import attrs

if TYPE_CHECKING:
    import httpx

__all__ = ["Budget", "RateLimitState", "parse_duration", "read_rate_limits"]


@attrs.frozen(slots=True)
class Budget:
    """One budget a vendor reported: ``remaining`` of ``limit`` (either may be unknown), refilled at ``reset``.

    ``reset`` is on ``anyio.current_time()``'s clock (``None``: not said).
    """

    name: str  # requests | tokens | input_tokens | output_tokens
    limit: int | None = None
    remaining: int | None = None
    reset: float | None = None

    def fraction(self, now: float) -> float | None:
        """The share left (0..1), or ``None`` when it cannot be told or the reset time has passed."""
        if self.reset is not None and now >= self.reset:
            return None  # refilled since: what the headers said no longer holds
        if self.remaining is None:
            return None
        if self.limit:
            return max(0.0, min(1.0, self.remaining / self.limit))
        return 0.0 if self.remaining <= 0 else None


@attrs.frozen(slots=True)
class RateLimitState:
    """A vendor's rate-limit state as of one response.

    :ivar budgets: each budget the headers reported (requests, tokens, ...).
    :ivar retry_after_until: when a ``retry-after`` the vendor sent expires (``None``: none sent).
    :ivar observed: when the response was read (``anyio.current_time()``).
    """

    budgets: tuple[Budget, ...] = ()
    retry_after_until: float | None = None
    observed: float = 0.0

    def headroom(self, now: float | None = None) -> float | None:
        """The tightest share left over the budgets still in force (0..1), or ``None`` when unknown."""
        now = anyio.current_time() if now is None else now
        fractions = [f for f in (b.fraction(now) for b in self.budgets) if f is not None]
        return min(fractions) if fractions else None

    def blocked(self, now: float | None = None) -> bool:
        """Whether the vendor said to wait (a ``retry-after`` still running) or some budget is used up."""
        now = anyio.current_time() if now is None else now
        if self.retry_after_until is not None and now < self.retry_after_until:
            return True
        return any(b.fraction(now) == 0.0 for b in self.budgets)


_DURATION: Final = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNITS: Final = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
# The first letters of the headers read here: most headers are skipped without being lowercased.
_FIRST: Final = frozenset(b"xXaArR")
_OPENAI: Final = b"x-ratelimit-"
_ANTHROPIC: Final = b"anthropic-ratelimit-"
_ANTHROPIC_NAMES: Final = {b"requests": "requests", b"tokens": "tokens", b"input-tokens": "input_tokens",
                           b"output-tokens": "output_tokens"}


def parse_duration(text: str) -> float | None:
    """Seconds in an OpenAI-style duration (``1s``, ``6m0s``, ``20ms``, ``1h2m3.5s``) or a bare number."""
    text = text.strip()
    try:
        value = float(text)
    except ValueError:
        pass
    else:
        return value if math.isfinite(value) and value >= 0 else None
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * _UNITS[u] for n, u in parts)


def _reset_time(text: str, now: float, wall: float) -> float | None:
    """A reset given as a duration (OpenAI) or an RFC 3339 time (Anthropic), on the anyio clock."""
    seconds = parse_duration(text)
    if seconds is None:
        try:
            seconds = datetime.fromisoformat(text.strip().replace("Z", "+00:00")).timestamp() - wall
        except ValueError:
            return None
    return now + max(0.0, seconds)


def _seconds_or_date(text: str) -> float | None:
    """``retry-after``: seconds, or an HTTP date."""
    seconds = parse_duration(text)
    if seconds is not None:
        return seconds
    from email.utils import parsedate_to_datetime  # an HTTP date is rare: its parser waits for one

    try:
        return max(0.0, parsedate_to_datetime(text).timestamp() - time.time())
    except (TypeError, ValueError, IndexError):
        return None


def _int(text: str) -> int | None:
    """A count (``"9000"``, ``"9e3"``), or ``None`` — ``inf`` or a number past float range included: converted,
    it raised ``OverflowError`` out of the provider's call, an error that is not a ``ProviderError``."""
    try:
        return int(float(text))
    except (ValueError, OverflowError):
        return None


def read_rate_limits(
    headers: httpx.Headers | Iterable[tuple[bytes, bytes]], now: float | None = None
) -> RateLimitState | None:
    """The :class:`RateLimitState` in ``headers`` (an ``httpx.Headers`` or raw (name, value) pairs), or ``None``.

    ``None`` when the response carries no rate-limit header at all.  Unparseable values are ignored.
    """
    import httpx  # here, not at the top: `import agentactors` does not load httpx (a provider, once made, has)

    raw = headers.raw if isinstance(headers, httpx.Headers) else headers
    found: dict[str, dict[str, str]] = {}
    retry_after: float | None = None
    for raw_key, raw_value in raw:
        if not raw_key or raw_key[0] not in _FIRST:
            continue
        key = raw_key.lower()
        if key.startswith(_OPENAI):
            field, _, which = key[len(_OPENAI):].partition(b"-")  # limit-requests, remaining-tokens, ...
            if which in (b"requests", b"tokens") and field in (b"limit", b"remaining", b"reset"):
                found.setdefault(which.decode(), {})[field.decode()] = raw_value.decode("latin-1")
        elif key.startswith(_ANTHROPIC):
            rest = key[len(_ANTHROPIC):]
            which, _, field = rest.rpartition(b"-")  # input-tokens-remaining -> (input-tokens, remaining)
            budget = _ANTHROPIC_NAMES.get(which)
            if budget is not None and field in (b"limit", b"remaining", b"reset"):
                found.setdefault(budget, {})[field.decode()] = raw_value.decode("latin-1")
        elif key == b"retry-after-ms":
            ms = _int(raw_value.decode("latin-1"))
            if ms is not None:
                retry_after = ms / 1000.0
        elif key == b"retry-after" and retry_after is None:
            retry_after = _seconds_or_date(raw_value.decode("latin-1"))
    if not found and retry_after is None:
        return None
    now = anyio.current_time() if now is None else now
    wall = time.time()
    budgets = []
    for budget_name, fields in found.items():
        reset = fields.get("reset")
        budgets.append(Budget(
            budget_name,
            limit=_int(fields["limit"]) if "limit" in fields else None,
            remaining=_int(fields["remaining"]) if "remaining" in fields else None,
            reset=_reset_time(reset, now, wall) if reset is not None else None,
        ))
    return RateLimitState(
        tuple(budgets), retry_after_until=now + retry_after if retry_after is not None else None, observed=now
    )
