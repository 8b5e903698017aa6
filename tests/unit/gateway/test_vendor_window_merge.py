"""A newer vendor report that reaches past the window's tighter one is not lost when that one ends.

Found by the generated loads (test_load_property.py): a report made when the vendor admitted its request and
read when the answer came says its reset a little later than a report read at once would (the latency shifts
it), so its refill reads a hair faster; merged with the window's limit, which was as tight now, the window's was
kept (the slower refill) and the newer report dropped.  When the kept limit's reset came, the window ended —
though the newer report said the vendor had no room until later and requests had been granted since: the
requests in flight then went together, and one met the vendor's 429.
"""

from __future__ import annotations

from agentactors.gateway._vendor import vendor_window
from agentactors.providers.http.ratelimits import Budget, RateLimitState


def report(remaining: int, reset: float, now: float) -> RateLimitState:
    return RateLimitState(budgets=(Budget("requests", limit=10, remaining=remaining, reset=reset),), observed=now)


def test_a_later_report_holds_the_window_after_the_tighter_one_ends() -> None:
    window = vendor_window(report(0, 60.0, 0.0), 0.0, 0)  # 0 of 10 left: one refills every 6 s, full at 60
    assert window is not None
    now = 0.0
    for _ in range(9):  # a request goes whenever one has refilled, and answers at once
        now += window.delay(0, now)
        window.take(0)
        # Its report, made when the vendor admitted it: 0 left, full in 59.9 s (the vendor's refill since its
        # last report not counted: a report read a moment after it was made says so).
        window = vendor_window(report(0, now + 59.9, now), now, 0, window)
        assert window is not None
    last = now
    now += window.delay(0, now)
    # The first report's limit ends at 60; the vendor's last word (read at ``last``) is 0 left until last + 59.9:
    # the window still holds then, and lets one request through, not two.
    assert window.until >= last + 59.9 - 1e-9
    assert window.delay(0, now, 2) > 0
