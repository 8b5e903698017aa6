"""What a deactivated session leaves in memory — nothing of its own — and the budgets that must outlive it.

The first test runs W11's shape on a real ``SqliteStore`` (real threads and clock); the budget tests run on
virtual time (``MemoryStore``: no threads).  Prices are set here (``set_price``): a step of ``USAGE`` at
gpt-4o's $2.5 / $10 per million costs ``STEP``.
"""

from __future__ import annotations

import gc
import weakref
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentactors import Agent, CostBudget, CostLimitExceeded, LLMResponse, Runtime, ScriptedProvider
from agentactors.messages import LLMRequest
from agentactors.sessions import MemoryStore, SqliteStore
from agentactors.sessions.registry import Sessions
from tests.support.prices import STEP, USAGE, gpt_4o_priced  # noqa: F401  (an autouse fixture)

pytestmark = pytest.mark.anyio


def echo_model(request: LLMRequest) -> str:
    return "seen: " + " | ".join(m.content for m in request.messages if m.role == "user")


def priced() -> ScriptedProvider:
    """Every call answers and costs ``STEP``."""
    return ScriptedProvider(lambda r: LLMResponse("ok", usage=USAGE), name="openai", model="gpt-4o")


async def _until_idle(rt: Runtime) -> None:
    registry = Sessions.of(rt)
    with anyio.fail_after(30):
        while registry.stats()["active"]:  # noqa: ASYNC110  (polled, as benchmark W11 does)
            await anyio.sleep(0.02)


async def _settled() -> int:
    """:func:`_ours` once the sweeper is done: a session leaves the registry when its deactivation is decided, and
    the sweeper then stops its actor and closes the store, holding the expired entries until it has (a busy
    machine stretches that; a count taken at once read 217 objects "left" by 300 sessions).  Two equal readings in
    a row, within 30 s."""
    count = _ours()
    with anyio.fail_after(30):
        while True:
            await anyio.sleep(0.1)
            again = _ours()
            if again == count:
                return count
            count = again


async def _one_turn_each(rt: Runtime, agent: Agent, store: SqliteStore, prefix: str, n: int) -> None:
    for i in range(n):
        assert (await rt.session(agent, f"{prefix}{i}", store=store, idle_timeout=0.05).send("hi")).ok


def _ours() -> int:
    """The objects of this library the garbage collector tracks (not the stdlib's: ``sqlite3`` keeps a weak
    reference per cursor, up to a few hundred, whatever the sessions do)."""
    gc.collect()
    modules = (type(o).__module__ for o in gc.get_objects())
    return sum(isinstance(m, str) and m.startswith("agentactors") for m in modules)  # a type may have no str


async def test_deactivated_sessions_leave_no_objects_behind(tmp_path: Path) -> None:
    # Benchmark W11: a session's history is in the file once it deactivated, and nothing of it in memory —
    # no actor, no entry, no budget.  A budget per session kept by the runtime was 2 tracked objects (8 blocks)
    # a session, for the runtime's life: a service holding idle conversations grows without bound.
    n = 300
    async with Runtime() as rt:
        agent = Agent(ScriptedProvider(echo_model, record=False))
        store = SqliteStore(tmp_path / "sessions.db")
        await _one_turn_each(rt, agent, store, "warm-", 50)  # code paths, caches, the connection
        await _until_idle(rt)
        before = await _settled()
        await _one_turn_each(rt, agent, store, "user-", n)
        await _until_idle(rt)
        grown = await _settled() - before
        assert grown < n // 10, f"{grown} objects left by {n} deactivated sessions"
        # What they said is in the store: a turn reactivates a session with its whole history.
        again = rt.session(agent, "user-7", store=store)
        assert (await again.send("again")).content == "seen: hi | again"


@pytest.mark.virtual_time
async def test_a_counting_budget_goes_with_its_session_and_its_last_handle() -> None:
    async with Runtime() as rt:
        agent = Agent(priced())
        session = rt.session(agent, "k", store=MemoryStore(), idle_timeout=5)
        assert (await session.send("hi")).ok
        budget = weakref.ref(session.budget)
        del session
        gc.collect()
        assert budget() is not None  # the active session holds it: a new handle reaches the same one
        await anyio.sleep(10)  # deactivated, no handle left
        gc.collect()
        assert budget() is None


@pytest.mark.virtual_time
async def test_a_counting_budget_outlives_a_deactivation_while_a_handle_holds_it() -> None:
    store = MemoryStore()
    async with Runtime() as rt:
        agent = Agent(priced())
        session = rt.session(agent, "k", store=store, idle_timeout=5)
        assert (await session.send("one")).ok
        await anyio.sleep(10)
        assert not session.active
        again = rt.session(agent, "k", store=store)  # another handle, the same session: the same budget
        assert again.budget is session.budget and again.budget.calls == 1
        assert (await again.send("two")).ok
        assert session.cost is not None and session.cost.total == pytest.approx(2 * STEP)


@pytest.mark.virtual_time
async def test_a_sessions_limit_outlives_its_deactivation_with_no_handle_left() -> None:
    store = MemoryStore()
    async with Runtime() as rt:
        agent = Agent(priced())
        assert (await rt.session(agent, "k", store=store, cost_limit=1.5 * STEP, idle_timeout=5).send("one")).ok
        await anyio.sleep(10)  # deactivated; the handle that set the limit is gone
        again = rt.session(agent, "k", store=store)
        assert not again.active and again.budget.limit == 1.5 * STEP and again.budget.calls == 1
        second = await again.send("two")  # 1 step of 1.5 spent before: this call passes the limit...
        assert isinstance(second.error, CostLimitExceeded) and second.error.scope == "session 'k'"
        third = await again.send("three")  # ...and no call is made after it
        assert isinstance(third.error, CostLimitExceeded) and third.steps == 0
        assert again.cost is not None and again.cost.total == pytest.approx(2 * STEP)


@pytest.mark.virtual_time
async def test_a_limit_set_on_the_budget_and_a_budget_of_ones_own_outlive_a_deactivation() -> None:
    store = MemoryStore()
    mine = CostBudget(name="user 8")
    async with Runtime() as rt:
        agent = Agent(priced())
        session = rt.session(agent, "k", store=store, idle_timeout=5)
        assert (await session.send("one")).ok
        session.budget.limit = 0.5 * STEP  # CostBudget.limit may be changed, on an active session's too
        budget = weakref.ref(session.budget)
        assert (await rt.session(agent, "k8", store=store, cost_limit=mine, idle_timeout=5).send("one")).ok
        del session
        await anyio.sleep(10)
        gc.collect()
        again = rt.session(agent, "k", store=store)
        assert again.budget is budget() and again.budget.limit == 0.5 * STEP
        assert isinstance((await again.send("two")).error, CostLimitExceeded)
        other = rt.session(agent, "k8", store=store)
        assert other.budget is mine and mine.calls == 1


@pytest.mark.virtual_time
async def test_a_later_handles_number_never_rewrites_a_limit_others_rely_on() -> None:
    """``cost_limit=2.0`` on a later handle of a session spending from a budget of one's own set that budget's limit:
    every other session sharing it (a user's allowance) was silently capped, or uncapped, by one handle's argument.
    Likewise a session's own limit, set by one handle, was rewritten by another's.  A number that differs from the
    limit the session's budget holds is refused (``ValueError``), nothing changed; the same number, or none, is
    fine; a session whose budget only counted takes the number as its limit; ``session.budget.limit = x`` changes a
    limit on purpose."""
    store = MemoryStore()
    mine = CostBudget(3 * STEP, name="user 9")
    async with Runtime() as rt:
        agent = Agent(priced())
        rt.session(agent, "a", store=store, cost_limit=mine)
        rt.session(agent, "b", store=store, cost_limit=mine)
        with pytest.raises(ValueError, match="budget of your own") as caught:
            rt.session(agent, "a", store=store, cost_limit=100 * STEP)
        assert "user 9" in str(caught.value)
        assert mine.limit == 3 * STEP  # session "b" still spends under the user's limit
        assert rt.session(agent, "a", store=store, cost_limit=3 * STEP).budget is mine  # the same number: fine
        assert rt.session(agent, "a", store=store).budget is mine
        counted = rt.session(agent, "c", store=store)
        assert _limit(counted) is None
        assert rt.session(agent, "c", store=store, cost_limit=STEP).budget.limit == STEP  # no limit yet: taken
        with pytest.raises(ValueError, match=r"budget\.limit"):
            rt.session(agent, "c", store=store, cost_limit=5 * STEP)
        assert _limit(counted) == STEP
        counted.budget.limit = 5 * STEP  # on purpose
        assert rt.session(agent, "c", store=store, cost_limit=5 * STEP).budget.limit == 5 * STEP


def _limit(session: Any) -> float | None:
    """The session's budget's limit read anew (asserted once, an attribute stays narrowed for mypy)."""
    limit = session.budget.limit
    return None if limit is None else float(limit)
