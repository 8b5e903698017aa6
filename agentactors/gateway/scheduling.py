"""A ProviderActor's scheduler: which waiting request is served next, and which is refused at once.

A request through a ProviderActor needs a concurrency slot and, when the actor has rate budgets, a
request and its estimated tokens from the buckets (:mod:`.budgets`).  When both are there and nobody
waits, it takes them at once — no await, no checkpoint (:meth:`Scheduler.try_admit`, the common
case).  Otherwise it waits here, in its asker's own task (the actor is spawned with room for every
asker to run its handler directly), and the scheduler decides who goes next:

* **classes first**: the request of the highest ``priority`` class (the run's, see
  :mod:`agentactors.gateway.ticket`; ``0`` by default) goes first — but while requests of a lower class
  wait, at most ``max_overtakes`` requests of higher classes are served in a row: the next one is
  then the lower class's best.  So a lower class is never starved: it gets at least one request in
  every ``max_overtakes + 1``.
* **within a class**, by the policy: ``"oldest_run"`` serves the request of the run that started
  first (so the runs in progress finish before new ones start: under load, runs finish steadily
  from the first seconds instead of all together at the end); ``"fifo"`` serves by arrival.  A
  request asked outside any run counts as a run that starts when it arrives, so lone requests are
  served in arrival order under either policy.
* **head of line**: the best waiter waits for the rate budget it needs and nobody overtakes it
  meanwhile (a large request is never starved by small ones).  It sleeps until its budget is there
  — the only timer — and emits ``provider.throttled`` with the wait.
* **the vendor's word**: with a provider that reports its vendor's rate-limit state (``vendor``,
  an HTTPProvider's ``rate_limit``), the latest report is read before each grant — one attribute
  compared with the last one read — and what it still allows (:class:`~._vendor.VendorWindow`:
  requests left less those in flight, tokens left, each refilling at the vendor's pace to its limit at
  the reset; a ``retry-after``) is one more budget: a request it has no room for waits until its share
  has refilled — or, with the limit not said, for the vendor's reset — bounded by
  :data:`VENDOR_HOLD_BOUND` (``provider.throttled`` with ``budget="vendor"``).  Nothing is read for a
  provider without one.

Admission: past ``max_waiting`` waiting requests, or when a request's wait would exceed
``max_wait`` seconds (estimated on arrival — from its place in the queue, the service time and the
calls per run observed so far, and the budgets — with a margin: refused beyond 80 % of
``max_wait``; or reached while it waits), it is refused with
:class:`~agentactors.errors.Overloaded` (transient, with a ``retry_after`` estimate) instead of
queueing.  The service time is that of the calls served: a call refused before the vendor did any
work (an open breaker, a request fault, a prompt too long for the model) or cancelled is no sample
(:meth:`Scheduler.release`).  ``retry_after`` is always set, and never zero: the expected wait when
one can be told; otherwise (no answer seen yet, or only instant ones: no service time) the wait of
the requests ahead at a service time of :data:`DEFAULT_SERVICE_ESTIMATE` — or, before any answer, of
the age of the oldest request in flight, when longer (none has finished: each takes at least that
long).  When ``max_waiting`` requests wait and a better-placed one arrives (an older run's, or a
higher class's), the worst-placed waiter is refused to make room: in-progress work is kept, new
work is shed.  A computed budget wait beyond any sane bound (``max_wait``, or
:data:`BUDGET_WAIT_BOUND` without it) is refused the same way: a broken budget is an error, never a
hang.

Every request that waited records ``provider.waited`` (its wait, how many were ahead of it, its
class); every refusal ``provider.overloaded``.  All of it happens in the asker's context, so the
events reach the run that asked.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
from typing import Any, Final, Literal

import anyio

from ..actors.crossing import current_waker
from ..actors.runtime import Runtime
from ..errors import Overloaded
from ..events import emit as emit_to_run
from ..messages import Usage
from ._vendor import VENDOR_HOLD_BOUND, VendorWindow, held, vendor_window
from .budgets import EPSILON, TokenBucket, reported_tokens, usage_charge
from .ticket import current_ticket, next_order

__all__ = ["BUDGET_WAIT_BOUND", "DEFAULT_SERVICE_ESTIMATE", "POLICIES", "VENDOR_HOLD_BOUND", "Policy", "Scheduler"]

Policy = Literal["oldest_run", "fifo"]
POLICIES: Final = frozenset({"oldest_run", "fifo"})

#: Seconds: without ``max_wait``, a computed budget wait longer than this is refused (15 minutes — a
#: budget that far behind is broken, e.g. by a usage report no request could have caused).
BUDGET_WAIT_BOUND: Final = 900.0

#: Seconds a request is assumed to hold its slot before the ProviderActor has seen one finish: what an
#: :class:`~agentactors.errors.Overloaded` refused then says in ``retry_after`` (per request ahead, per
#: slot; the age of the oldest request in flight when that is longer).  A typical short model call.
DEFAULT_SERVICE_ESTIMATE: Final = 1.0

# A request is refused on arrival when its expected wait exceeds this share of max_wait: one admitted at
# the bound would, the estimate being an estimate, outlast it about half the time and be refused late.
_ADMIT_SHARE: Final = 0.8

# How much a new service-time sample moves the running average.
_SMOOTHING: Final = 0.2

_WAITING: Final = 0
_GRANTED: Final = 1
_REFUSED: Final = 2


class _Waiter:
    """One waiting request: its place (``key``), what it needs, and how it is woken."""

    __slots__ = (
        "ahead",
        "arrived",
        "error",
        "estimate",
        "event",
        "expires",
        "key",
        "priority",
        "state",
        "throttle",
        "wake_at",
    )

    def __init__(self, key: tuple[int, int], priority: int, estimate: int, arrived: float, expires: float) -> None:
        self.key = key
        self.priority = priority
        self.estimate = estimate
        self.arrived = arrived
        self.expires = expires
        self.ahead = 0
        self.state = _WAITING
        self.error: Overloaded | None = None
        # Made by the waiting loop each time it sleeps; whoever changes the state first, then wakes it.
        self.event: anyio.Event | None = None
        self.wake_at = math.inf
        self.throttle: tuple[str, float] | None = None

    def wake(self) -> None:
        if self.event is not None:
            self.event.set()


# A queue entry: (place, tie-break, waiter), sorted ascending so the best is last (pop() is O(1)).
_Entry = tuple[int, int, _Waiter]


class Scheduler:
    """Slots, rate budgets and the waiting requests of one ProviderActor (see the module docstring).

    Built inside the running event loop (its buckets read ``anyio.current_time``).

    :param name: the provider's name, for errors and events.
    :param slots: requests in flight at once.
    :param requests_per_minute: the request budget, or ``None``.
    :param tokens_per_minute: the token budget, or ``None``.
    :param policy: ``"oldest_run"`` or ``"fifo"``, within a priority class.
    :param max_waiting: refuse past this many waiting requests (``None``: no bound).
    :param max_wait: refuse a request whose wait would exceed this many seconds (``None``: no bound).
    :param max_overtakes: at most this many higher-class requests are served in a row while a lower
        class waits (``None``: strict priority).
    :param vendor: the provider whose ``rate_limit`` reports the vendor's own limits
        (:func:`~._vendor.vendor_of`), or ``None``: read before each grant, a new report held as
        :attr:`window` (:mod:`._vendor`).
    """

    __slots__ = (
        "_calls",
        "_classes",
        "_first_calls",
        "_first_started",
        "_queued_tokens",
        "_queues",
        "_reported",
        "_seq",
        "_service",
        "_skipped",
        "_timer",
        "free",
        "limited",
        "max_output",
        "max_overtakes",
        "max_wait",
        "max_waiting",
        "name",
        "policy",
        "requests",
        "slots",
        "tokens",
        "tracks",
        "vendor",
        "waiting",
        "waker",
        "window",
    )

    def __init__(
        self,
        name: str,
        *,
        slots: int,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        policy: Policy = "oldest_run",
        max_waiting: int | None = None,
        max_wait: float | None = None,
        max_overtakes: int | None = 16,
        vendor: Any | None = None,
    ) -> None:
        now = anyio.current_time()
        self.name = name
        self.slots = slots
        self.free = slots
        self.requests = TokenBucket(requests_per_minute, now) if requests_per_minute is not None else None
        self.tokens = TokenBucket(tokens_per_minute, now) if tokens_per_minute is not None else None
        #: The provider whose ``rate_limit`` is read before each grant (``None``: nothing to read).
        self.vendor = vendor
        #: What the vendor's last report still allows before its resets, or ``None`` (no report in force).
        self.window: VendorWindow | None = None
        self._reported: object = None  # the last report read: read again, it is not applied twice
        #: Whether a grant must consult more than the slots (a rate budget, or the vendor's window): the one test
        #: :meth:`try_admit` makes of all three when there is none.
        self.limited = self.requests is not None or self.tokens is not None
        #: The most of a request's ``max_tokens`` its token estimate counts: one minute's budget (the bucket's
        #: capacity; ``None`` without a token budget).  Module docstring of :mod:`.budgets`.
        self.max_output = int(self.tokens.capacity) if self.tokens is not None else None
        self.policy = policy
        self.max_waiting = max_waiting
        self.max_wait = max_wait
        self.max_overtakes = max_overtakes
        #: Whether service times are measured (they feed the wait estimates admission needs).
        self.tracks = max_wait is not None or max_waiting is not None
        self.waiting = 0
        self._queues: dict[int, list[_Entry]] = {}
        self._classes: list[int] = []  # the priority classes that have waiters, highest first
        self._skipped: dict[int, int] = {}  # per waiting class: higher-class requests served in a row
        self._queued_tokens = 0
        self._seq = itertools.count()
        self._timer: _Waiter | None = None  # the head waiting for budget (the one that sleeps until it is there)
        self._service: float | None = None  # running average of how long a request holds its slot
        # Calls admitted, and how many of them were a run's first: their ratio is how many calls a run
        # makes, which is how much work each waiting run still brings ahead of a newer one (oldest_run).
        self._calls = 0
        self._first_calls = 0
        # When the first tracked request took its slot: until one is served, the oldest in flight (forgotten when
        # unserved ones leave nothing in flight).
        self._first_started: float | None = None
        #: The loop's thread-safe scheduler: how a finaliser hands a dropped stream's slot back (:meth:`release_soon`).
        self.waker = current_waker()

    # -- taking and giving back ----------------------------------------------------------------------

    def try_admit(self, estimate: int) -> bool:
        """Take a slot and the budgets at once if nobody waits and they are there; never awaits.

        With a vendor, its latest report is read first (one attribute, compared with the last one read).
        """
        if self.waiting or self.free <= 0:
            return False
        if self.vendor is not None:
            self._observe()
        if self.limited:
            requests, tokens, window = self.requests, self.tokens, self.window
            now = anyio.current_time()
            if requests is not None and requests.delay(1, now) > EPSILON:
                return False
            if tokens is not None and tokens.delay(estimate, now) > EPSILON:
                return False
            if window is not None:
                if now >= window.until:
                    self._set_window(None)
                    window = None
                elif window.delay(estimate, now) > EPSILON:
                    return False
            if requests is not None:
                requests.take(1)
            if tokens is not None:
                tokens.take(estimate)
            if window is not None:
                window.take(estimate)
        self.free -= 1
        return True

    def _observe(self) -> None:
        """Read the vendor's latest report; a new one is merged into :attr:`window` (:func:`~._vendor.vendor_window`).

        Never raises: a ``rate_limit`` that fails to read is no report (this runs inside :meth:`release`'s
        dispatch and a cancelled waiter's cleanup too).
        """
        vendor: Any = self.vendor
        try:
            state = vendor.rate_limit
        except Exception:
            return
        if state is self._reported:
            return
        self._reported = state
        self._set_window(vendor_window(state, anyio.current_time(), self.slots - self.free, self.window))

    def _set_window(self, window: VendorWindow | None) -> None:
        self.window = window
        self.limited = window is not None or self.requests is not None or self.tokens is not None

    async def admit(self, estimate: int, model: str | None = None) -> None:
        """Wait for a slot and the budgets, in the scheduler's order; call after :meth:`try_admit` said no.

        :raises Overloaded: refused at once, or later while waiting (see the module docstring); nothing
            was taken.

        Cancellation: a request cancelled while it waits gives its place up; one cancelled after it was
        granted but before it resumed gives the slot and budgets back, to the next waiter.
        """
        ticket = current_ticket()
        order, priority = (next_order(), 0) if ticket is None else (ticket.order, ticket.priority)
        seq = next(self._seq)
        key = (-order if self.policy == "oldest_run" else -seq, -seq)
        now = anyio.current_time()
        if self.max_waiting is not None and self.waiting >= self.max_waiting and not self._make_room(priority, key):
            raise self._refused("max_waiting", self._ahead(priority, key), estimate, model, now)
        ahead = self._ahead(priority, key)
        if self.max_wait is not None:
            first = ticket is None or ticket.calls == 0
            expected = self._expected_wait(ahead, estimate, now, first)
            if expected > self.max_wait * _ADMIT_SHARE:
                raise self._refused("max_wait", ahead, estimate, model, now, expected)
        expires = now + self.max_wait if self.max_wait is not None else math.inf
        waiter = _Waiter(key, priority, estimate, now, expires)
        waiter.ahead = ahead
        self._insert(waiter)
        try:
            self._dispatch()
            await self._wait(waiter, model)
        except BaseException:
            self._abandon(waiter)
            raise
        if waiter.error is not None:
            error = waiter.error
            emit("provider.overloaded", provider=self.name, reason=error.reason, retry_after=error.retry_after,
                 waited=anyio.current_time() - waiter.arrived, waiting=self.waiting)
            raise error
        emit("provider.waited", provider=self.name, wait=anyio.current_time() - waiter.arrived, ahead=waiter.ahead,
             priority=priority, scheduling=self.policy)

    async def _wait(self, waiter: _Waiter, model: str | None) -> None:
        """Sleep until ``waiter`` is granted or refused; as the budget timer, until its budget is there."""
        while waiter.state == _WAITING:
            limit = waiter.expires
            if self._timer is waiter and waiter.wake_at < limit:
                limit = waiter.wake_at
            throttle = waiter.throttle
            if throttle is not None:
                waiter.throttle = None
                emit("provider.throttled", provider=self.name, budget=throttle[0], wait=throttle[1],
                     estimated_tokens=waiter.estimate)
            event = waiter.event = anyio.Event()
            if limit == math.inf:
                await event.wait()
            else:
                with anyio.move_on_at(limit):
                    await event.wait()
            if waiter.state != _WAITING:
                return
            now = anyio.current_time()
            if waiter.wake_at <= now + EPSILON:
                # The budget wake-up it slept for has come: spent.  _dispatch below sets a new one if the budget
                # still lacks and a slot is free.  (Kept, a timer whose free slot a higher class took meanwhile
                # found no slot, and slept again until the same past instant: a busy loop until a slot came back.)
                waiter.wake_at = math.inf
            if now >= waiter.expires - EPSILON:
                self._remove(waiter)
                ahead = self._position(waiter)
                waiter.error = self._refused("max_wait", ahead, waiter.estimate, model, now, record=False)
                waiter.state = _REFUSED
                self._dispatch()
                return
            self._dispatch()

    def started(self) -> float:
        """A request took its slot: when (for :meth:`release`), and one more call of its run counted.

        Only called when :attr:`tracks`: admission bounds need the service time and the calls per run.
        """
        ticket = current_ticket()
        self._calls += 1
        if ticket is None:
            self._first_calls += 1
        else:
            if ticket.calls == 0:
                self._first_calls += 1
            ticket.calls += 1
        now = anyio.current_time()
        if self._first_started is None:
            self._first_started = now
        return now

    def release(self, started: float, sample: bool = True, *, failed: bool = False) -> None:
        """A request gave its slot back (``started``: when it took it, if :attr:`tracks`); the next may go.

        ``sample=False``: the request was not served — refused before the vendor did any work (an open breaker,
        a request fault) or cancelled — so how long it held its slot says nothing of the service time (instant
        refusals averaged in made it ~0, and every wait estimate and ``retry_after`` with it).  ``failed``: it was
        served and failed (a 5xx, a timeout): its time is a sample only when it is longer than the estimate — a
        vendor answering 503 in 5 ms says nothing of how long an answer takes, and averaged in it shrank the
        estimate (a 30 s call read as 2 s after a burst of them); a failure that took longer says the service is
        slow.
        """
        self.free += 1
        if self.tracks:
            service = self._service
            if sample:
                elapsed = anyio.current_time() - started
                sample = not failed or (service is not None and elapsed > service)  # (a failure: see above)
                if sample:
                    self._service = elapsed if service is None else service + _SMOOTHING * (elapsed - service)
            if not sample and service is None and self.free == self.slots:
                self._first_started = None  # nothing in flight: the next request to start is the oldest
        if self.waiting:
            self._dispatch()

    def give_back(self, estimate: int) -> None:
        """A granted request that will not be sent after all: its slot, request and ``estimate`` tokens back.

        What a request cancelled at the instant it was granted gives back, and one whose run's budget was spent
        while it waited (:func:`~.ticket.current_check`).  Before :meth:`started`: it counts as no call.
        """
        if self.requests is not None:
            self.requests.give_back(1)
        if self.tokens is not None:
            self.tokens.give_back(estimate)
        if self.window is not None:
            self.window.give_back(estimate)
        self.free += 1
        self._dispatch()

    def release_soon(self, started: float) -> None:
        """:meth:`release`, from a finaliser (a stream its consumer dropped unclosed): handed to the loop.

        A finaliser may run in any thread (the cycle collector's) and at any allocation — inside
        :meth:`_dispatch` itself — so it must not touch the queue; the loop runs the release next, in its own
        thread.  Never raises (a finaliser must not): a closed loop has nobody left to release to.
        """
        try:
            self.waker(functools.partial(self.release, started, False))  # (its time says nothing: no sample)
        except Exception:  # the loop has closed (RuntimeError), or the interpreter is going down
            pass

    def refund(self, estimate: int, *, unsent: bool = False) -> None:
        """Give back the tokens of a request that spent none (it failed before the vendor did any work).

        ``unsent``: the request never left this process (a circuit breaker refused it): its request is given
        back too.  A request the vendor refused still counts against its request budget — the vendor counted it.
        """
        given = False
        if self.tokens is not None:
            self.tokens.give_back(estimate)
            given = True
        if unsent and self.requests is not None:
            self.requests.give_back(1)
            given = True
        if unsent and self.window is not None:
            self.window.give_back(estimate)
            given = True
        if given and self.waiting:
            self._dispatch()

    def hold_off(self, seconds: float, estimate: int = 1) -> None:
        """The vendor said its rate limit is spent for ``seconds`` (a 429's ``retry-after``): no grant before then.

        ``estimate``: the refused request's tokens.  The request budget is drained so that its next request is
        ``seconds`` away; the token budget so that a request of the refused one's size is (the vendor's word: it
        fits then), with a hold in :attr:`window` that lets no smaller one through before (:func:`~._vendor.held`).
        Drained to its next *token* instead, as it was, the bucket forgot what it held: at 30,000 tokens a minute,
        a request of ~4,600 tokens the vendor told to retry in 1 s went in 10.2 s.  A budget already further
        behind stays so.  Bounded by :data:`VENDOR_HOLD_BOUND` — the number is the vendor's (or a proxy's) to
        write; a longer pause is the circuit breaker's to keep — and ignored unless a positive number.  Without
        budgets there is nothing to drain; a provider that reports its vendor's state (an HTTPProvider's
        ``rate_limit``) holds the requests through :attr:`window` anyway, budgets or not.
        """
        if not seconds > 0:  # NaN, 0, negative: nothing said
            return
        requests, tokens = self.requests, self.tokens
        if requests is None and tokens is None:
            return
        seconds = min(seconds, VENDOR_HOLD_BOUND)
        now = anyio.current_time()
        if requests is not None:
            requests.refill(now)
            requests.level = min(requests.level, min(1.0, requests.capacity) - seconds * requests.rate)
        if tokens is not None:
            tokens.refill(now)
            tokens.level = min(tokens.level, min(max(estimate, 1), tokens.capacity) - seconds * tokens.rate)
            self._set_window(held(self.window, now + seconds, now))
        if self.waiting:
            self._dispatch()  # the head's budget timer is moved to the new instant

    def settle(self, estimate: int, usage: Usage) -> None:
        """Correct the token budget by what the response says it used, within plausibility (:mod:`.budgets`)."""
        tokens = self.tokens
        if tokens is None:
            return
        used = reported_tokens(usage.input_tokens, usage.output_tokens)
        if used <= 0:
            return
        # The flow since the bucket was last looked at first: a take applied to the stale level, with the flow added
        # after it, kept what the capacity would have cut off (a request let through on tokens never there).
        # (A give-back commutes with the flow: capped either way.)
        tokens.refill(anyio.current_time())
        charge, implausible = usage_charge(estimate, used, tokens.capacity)
        if implausible:
            emit("provider.usage_implausible", provider=self.name, reported=used, charged=charge,
                 estimated_tokens=estimate, capacity=tokens.capacity)
        if charge < estimate:
            tokens.give_back(estimate - charge)
            if self.waiting:
                self._dispatch()
        else:
            tokens.take(charge - estimate)

    # -- the queue ---------------------------------------------------------------------------------

    def _insert(self, waiter: _Waiter) -> None:
        queue = self._queues.get(waiter.priority)
        if queue is None:
            queue = self._queues[waiter.priority] = []
            bisect.insort(self._classes, -waiter.priority)  # kept as negatives: ascending = highest first
            self._skipped[waiter.priority] = 0
        bisect.insort(queue, (*waiter.key, waiter))
        self.waiting += 1
        self._queued_tokens += waiter.estimate

    def _forget(self, waiter: _Waiter, queue: list[_Entry]) -> None:
        """Bookkeeping after ``waiter`` left ``queue``."""
        if not queue:
            del self._queues[waiter.priority]
            self._classes.remove(-waiter.priority)
            del self._skipped[waiter.priority]
        self.waiting -= 1
        self._queued_tokens -= waiter.estimate
        if self._timer is waiter:
            self._timer = None

    def _remove(self, waiter: _Waiter) -> None:
        queue = self._queues[waiter.priority]
        del queue[bisect.bisect_left(queue, waiter.key)]
        self._forget(waiter, queue)

    def _ahead(self, priority: int, key: tuple[int, int]) -> int:
        """How many waiters a new request with this place would have ahead of it."""
        ahead = 0
        for negative in self._classes:
            if -negative > priority:
                ahead += len(self._queues[-negative])
        queue = self._queues.get(priority)
        if queue:
            ahead += len(queue) - bisect.bisect_left(queue, key)
        return ahead

    def _position(self, waiter: _Waiter) -> int:
        return self._ahead(waiter.priority, waiter.key)

    def _best(self) -> tuple[int, list[_Entry]]:
        """The class to serve next, and its queue (best last): the highest, unless a lower one waited too long.

        Of the classes overtaken ``max_overtakes`` times, the *lowest* goes: serving any class above it
        would overtake it once more.  (Serving the highest of them let a class below it be overtaken by
        each class between in turn: with four classes and a bound of 1, the lowest waited through three.)
        """
        classes = self._classes
        chosen = -classes[0]
        limit = self.max_overtakes
        if limit is not None and len(classes) > 1:
            skipped = self._skipped
            for negative in reversed(classes):  # lowest first
                if skipped[-negative] >= limit:
                    chosen = -negative
                    break
        return chosen, self._queues[chosen]

    def _served(self, priority: int) -> None:
        """A request of class ``priority`` was served: every lower class waiting was overtaken once more."""
        skipped = self._skipped
        for negative in self._classes:
            if -negative < priority:
                skipped[-negative] += 1
        if priority in skipped:
            skipped[priority] = 0

    def _make_room(self, priority: int, key: tuple[int, int]) -> bool:
        """With ``max_waiting`` reached: refuse the worst-placed waiter if the newcomer is better placed."""
        if not self._classes:
            return False  # max_waiting=0: nobody waits, nobody to displace
        lowest = -self._classes[-1]
        queue = self._queues[lowest]
        worst = queue[0][2]
        if priority < lowest or (priority == lowest and key <= worst.key):
            return False
        del queue[0]
        self._forget(worst, queue)
        worst.error = self._refused(
            "max_waiting", self.waiting, worst.estimate, None, anyio.current_time(), record=False
        )
        worst.state = _REFUSED
        worst.wake()
        return True

    def _dispatch(self) -> None:
        """Grant the best waiters while slots and budgets allow; make the head the timer when its budget lacks."""
        if self.vendor is not None and self.free > 0 and self.waiting:
            self._observe()
        requests, tokens = self.requests, self.tokens
        while self.free > 0 and self.waiting:
            priority, queue = self._best()
            waiter = queue[-1][2]
            if self.limited:
                now = anyio.current_time()
                wait_requests = requests.delay(1, now) if requests is not None else 0.0
                wait_tokens = tokens.delay(waiter.estimate, now) if tokens is not None else 0.0
                window = self.window
                if window is not None and now >= window.until:
                    self._set_window(None)
                    window = None
                wait_vendor = window.delay(waiter.estimate, now) if window is not None else 0.0
                wait = max(wait_requests, wait_tokens, wait_vendor)
                if wait > EPSILON:
                    # With max_wait, it is the bound (the waiter's expiry); without it, BUDGET_WAIT_BOUND.
                    if now + wait > waiter.expires or (waiter.expires == math.inf and wait > BUDGET_WAIT_BOUND):
                        # It could not be served in time, or the budget is broken: refuse it now, not later.
                        queue.pop()
                        self._forget(waiter, queue)
                        reason = "max_wait" if now + wait > waiter.expires else "budget"
                        waiter.error = self._refused(reason, 0, waiter.estimate, None, now, wait, record=False)
                        waiter.state = _REFUSED
                        waiter.wake()
                        continue
                    wake_at = now + wait
                    if self._timer is not waiter or abs(waiter.wake_at - wake_at) > EPSILON:
                        self._timer = waiter
                        waiter.wake_at = wake_at
                        budget = "vendor" if wait_vendor >= wait else "requests" if wait_requests >= wait else "tokens"
                        waiter.throttle = (budget, wait)
                        waiter.wake()
                    return
                if requests is not None:
                    requests.take(1)
                if tokens is not None:
                    tokens.take(waiter.estimate)
                if window is not None:
                    window.take(waiter.estimate)
            queue.pop()
            self._forget(waiter, queue)
            self.free -= 1
            self._served(priority)
            waiter.state = _GRANTED
            waiter.wake()

    def _abandon(self, waiter: _Waiter) -> None:
        """The waiter's asker left (cancelled): give its place, or what it was granted, to the next."""
        if waiter.state == _WAITING:
            self._remove(waiter)
            self._dispatch()
        elif waiter.state == _GRANTED:
            waiter.state = _REFUSED  # taken back: release it once
            self.give_back(waiter.estimate)

    # -- estimates ---------------------------------------------------------------------------------

    def _expected_wait(self, ahead: int, estimate: int, now: float, first: bool = False) -> float:
        """Seconds a request with ``ahead`` waiters before it would likely wait (0 when it cannot be told).

        Under ``oldest_run`` a new run's first call waits for more than the calls ahead of it now:
        each older run ahead will ask again, ahead of it, until it is done — so its share of the
        queue is scaled by the calls a run makes (observed).  A run in progress is overtaken by
        older runs only, which are few; under ``fifo`` nobody overtakes.
        """
        wait = 0.0
        service = self._service
        if service is not None:
            behind = ahead + 1 - self.free  # requests that must finish before a slot is this one's
            if behind > 0:
                per_run = self._calls / self._first_calls if first and self._first_calls else 1.0
                if self.policy != "oldest_run":
                    per_run = 1.0
                wait = behind * per_run * service / self.slots
        if self.requests is not None:
            wait = max(wait, self.requests.delay_for_total(ahead + 1, now))
        if self.tokens is not None:
            # The requests ahead take their whole estimates; this one goes once its own is there — capped at the
            # bucket's capacity, as :meth:`TokenBucket.delay` caps it.  (Uncapped, a request larger than the bucket
            # was refused on arrival for a wait it would never have had: it goes on a full bucket.)
            average = self._queued_tokens / self.waiting if self.waiting else estimate
            own = min(estimate, self.tokens.capacity)
            wait = max(wait, self.tokens.delay_for_total(ahead * average + own, now))
        window = self.window
        if window is not None:
            average = self._queued_tokens / self.waiting if self.waiting else estimate
            wait = max(wait, window.delay(ahead * average + estimate, now, ahead + 1))
        return wait

    def _fallback_wait(self, ahead: int, now: float) -> float:
        """A wait estimate when :meth:`_expected_wait` cannot tell one: never zero (see the module docstring).

        The requests ahead (at least this one's own turn) at the observed service time, or before any
        answer at :data:`DEFAULT_SERVICE_ESTIMATE` or the oldest in-flight request's age, whichever is
        longer, spread over the slots.  An observed service time of zero (answers that came at once: a
        vendor's instant errors, on a virtual clock) is no estimate either: :data:`DEFAULT_SERVICE_ESTIMATE`.
        """
        service = self._service
        if service is None:
            service = DEFAULT_SERVICE_ESTIMATE
            if self._first_started is not None:
                service = max(service, now - self._first_started)
        elif not service > 0:
            service = DEFAULT_SERVICE_ESTIMATE
        behind = max(1, ahead + 1 - self.free)
        return behind * service / self.slots

    def _refused(
        self,
        reason: str,
        ahead: int,
        estimate: int,
        model: str | None,
        now: float,
        expected: float | None = None,
        *,
        record: bool = True,
    ) -> Overloaded:
        """The :class:`Overloaded` error for a refusal (recorded now if ``record``: refused on arrival)."""
        if expected is None:
            expected = self._expected_wait(ahead, estimate, now)
        retry_after = expected if expected > 0 else self._fallback_wait(ahead, now)
        bound = {
            "max_waiting": f"{self.max_waiting} requests already wait",
            "max_wait": f"its wait would exceed max_wait={self.max_wait:g}s" if self.max_wait is not None else "",
            "budget": f"its budget wait would exceed {BUDGET_WAIT_BOUND:g}s",
        }[reason]
        hint = f"; retry in about {retry_after:.3g}s"
        error = Overloaded(
            f"the ProviderActor refused the request: {bound}{hint}",
            provider=self.name,
            model=model,
            retry_after=retry_after,
            reason=reason,
        )
        if record:
            emit("provider.overloaded", provider=self.name, reason=reason, retry_after=retry_after, waited=0.0,
                 waiting=self.waiting)
        return error


def emit(type: str, /, **data: Any) -> None:
    """Record to the asking run's recorders, or the runtime's outside a run (with nobody listening: a check)."""
    rt = Runtime.current()
    if rt is not None:
        rt.emit(type, **data)
    else:
        emit_to_run(type, **data)
