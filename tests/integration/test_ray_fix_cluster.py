"""RayCluster fixes, against real Ray workers (the local Ray instance of tests/integration/test_ray_cluster.py's
fixtures, one small cluster per test: one worker, ``num_cpus=0``).

- A request whose ``max_tokens`` is above the shared token bucket counts it only up to the bucket (it waited
  for many minutes, silently, its worker's later requests queued behind it), and one whose budget wait would
  pass the 15-minute bound is refused at once with ``Overloaded`` — as a local ProviderActor does.
- ``run_many`` / ``as_completed`` take ``agent.run``'s options across processes: a tool sees ``ctx.deps``,
  ``settings`` reach the model, ``input_key`` names the job, a per-run ``cost_limit`` stops a run; what cannot
  cross (deps that do not pickle, a ``CostBudget``) is a ``TypeError`` naming it, before anything is sent.

The factory lives in this module, which the workers cannot import: it travels by value.
"""

from __future__ import annotations

import threading
from typing import Any

import anyio
import pytest

from tests.support.required import missing

try:
    import ray  # noqa: F401  (the fixtures' Ray)
except ImportError:  # pragma: no cover - the dev extra installs ray
    missing("the Ray tests need ray, the [ray] extra: pip install -e '.[dev]' (make test does)", module=True)

from agentactors import (
    Agent,
    CostBudget,
    CostLimitExceeded,
    LLMResponse,
    ModelSettings,
    ScriptedProvider,
    ToolCall,
    ToolContext,
    Usage,
    tool,
)
from agentactors.errors import Overloaded
from agentactors.messages import LLMRequest
from agentactors.pricing import Price, set_price
from agentactors.ray import RayCluster, SharedBudget, with_shared_budget
from tests.integration.test_ray_cluster import WORKER, local_ray, ray_running  # noqa: F401  (the module's Ray)

pytestmark = pytest.mark.anyio

USAGE = Usage(100, 10)
STEP = 100 * 2.5 / 1e6 + 10 * 10.0 / 1e6  # a step of USAGE at gpt-4o's price
#: 6,000 tokens a minute: a bucket of 6,000, 100 a second.
BUDGETS = {"t": SharedBudget(tokens_per_minute=6000)}


def priced_agent() -> Agent[str]:
    """A model that looks an item up until told otherwise (prompts "loop ..." never stop), priced, budgeted."""
    set_price("openai", "gpt-4o", Price(2.5, 10.0))  # the worker's price table, not the driver's

    @tool
    async def look(item: str, ctx: ToolContext) -> str:
        """Look an item up."""
        assert isinstance(ctx, ToolContext)  # (names the class in the code: it travels with the factory, by value)
        return f"{item} deps={ctx.deps!r} key={ctx.input_key}"

    def model(request: LLMRequest) -> LLMResponse:
        last = request.messages[-1]
        prompt = next(m.content for m in request.messages if m.role == "user")
        if last.role == "tool" and not prompt.startswith("loop"):
            return LLMResponse(f"done: {last.content} t={request.temperature}", usage=USAGE)
        if prompt.startswith(("loop", "look")):
            return LLMResponse("", tool_calls=(ToolCall("c1", "look", {"item": "pen"}),), usage=USAGE)
        return LLMResponse("plain", usage=USAGE)

    provider = ScriptedProvider(model, name="openai", model="gpt-4o", record=False)
    return Agent(with_shared_budget(provider, "t"), tools=[look], max_steps=5)


async def test_max_tokens_above_the_bucket_and_a_wait_past_the_bound() -> None:
    async with RayCluster(priced_agent, workers=1, budgets=BUDGETS, worker_options=WORKER) as cluster:
        # max_tokens counted whole: (10**6 - 6,000) / 100 = ~9,940 s of silent waiting.  Up to the bucket: at once.
        # ~100,000 tokens of prompt: at least (100,000 - 6,000) / 100 = 940 s, past the 900 s bound: refused.
        with anyio.fail_after(60):
            small, huge, after = await cluster.run_many(
                ["hello", "x" * 400_000, "after"], settings=ModelSettings(max_tokens=10**6)
            )
    assert small.error is None and small.content == "plain"
    assert after.error is None  # nothing queued behind the refused one
    error = huge.error
    assert isinstance(error, Overloaded) and error.reason == "budget", error
    assert error.retry_after is not None and error.retry_after > 900


async def test_run_options_reach_the_workers_runs() -> None:
    async with RayCluster(priced_agent, workers=1, budgets=BUDGETS, worker_options=WORKER) as cluster:
        with anyio.fail_after(60):
            (looked,) = await cluster.run_many(
                ["look"], deps={"db": 1}, settings=ModelSettings(temperature=0.25), input_key="job7"
            )
            assert looked.error is None, looked.error
            assert looked.content == "done: pen deps={'db': 1} key=job7:0 t=0.25"
            async with cluster.as_completed(["look", "look"], deps="d") as done:
                contents = sorted([result.content async for _, result in done])
            assert all("deps='d'" in c for c in contents), contents
            capped = await cluster.run_many(["loop a", "loop b"], cost_limit=1.5 * STEP)
            for result in capped:
                assert isinstance(result.error, CostLimitExceeded) and result.error.scope == "run", result.error
            (uncapped,) = await cluster.run_many(["loop c"])  # the limit was the job's, not the worker's
            assert not isinstance(uncapped.error, CostLimitExceeded), uncapped.error
        with pytest.raises(TypeError, match=r"^deps cannot be sent to the Ray workers.*agent_factory"):
            await cluster.run_many(["look"], deps={"lock": threading.Lock()})
        with pytest.raises(TypeError, match="CostBudget"):
            await cluster.run_many(["look"], cost_limit=CostBudget(1.0))  # type: ignore[arg-type]
        bad: list[dict[str, Any]] = [{"deadline": -1}, {"cost_limit": -1}, {"priority": "high"}, {"input_key": 5},
                                     {"settings": {"temperature": 0.2}}]
        for options in bad:
            with pytest.raises((TypeError, ValueError)):
                cluster.as_completed(["look"], **options)
