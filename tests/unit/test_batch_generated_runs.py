"""Property: ``Agent.run_many`` over a ``BatchProvider``, against the scripted vendor of ``test_batch_generated``.

A program draws the inputs (each with what the vendor does with its item), the vendor's scripts for the
batches, the provider's timings, the ``concurrency`` and maybe a cancellation of the whole ``run_many`` by its
caller.  Then (``docs/costs.md`` "Batch", and :mod:`agentactors.agent.batch`):

* one result per input, in input order, never another input's: an answered run's ``content`` is ``Echo:`` its own
  input; a failed run carries a typed ``ProviderError`` as ``error`` and its input as ``messages``;
* a cancelled ``run_many`` propagates the cancellation with every slot filled (``exc.results``): a finished run
  keeps its result, the others are ``cancelled``; a run answered at the batch price is priced (``cost``) and
  marked ``provider_data["batch"]``.

Virtual time, both backends; ``BATCH_PROGRAM_EXAMPLES`` raises the budget as for the other file.
"""

from __future__ import annotations

from typing import Any

import anyio
import attrs
import httpx
import pytest
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from agentactors import Agent, ProviderActor, Runtime
from agentactors.agent.batch import results_of
from agentactors.errors import ProviderError
from agentactors.pricing import cost_of
from agentactors.testing import VirtualTimeLoop

from .test_batch_generated import EXAMPLES, ITEMS, MODELS, Call, Program, Vendor, make_provider, scripts

HANG = 12 * 24 * 3600.0


@attrs.frozen
class Runs:
    program: Program
    concurrency: int
    cancel_at: float | None
    actor: int | None = None  # through ProviderActor.shared(rt, batch, max_concurrency=actor), as the docs show


@st.composite
def runs(draw: st.DrawFn) -> Runs:
    n = draw(st.integers(1, 6))
    calls = tuple(Call(f"q{i}", 0, 0.0, None, draw(st.sampled_from(ITEMS))) for i in range(n))
    program = Program(
        wire=draw(st.sampled_from(["openai", "anthropic", "gemini"])),
        window=draw(st.sampled_from([0.0, 5.0])),
        max_requests=draw(st.sampled_from([1, 2, 100])),
        poll_every=draw(st.sampled_from([10.0, 30.0])),
        max_wait=3600.0,
        calls=calls,
        scripts=tuple(draw(st.lists(scripts, max_size=3))),
        close_client_at=None,
    )
    return Runs(program, draw(st.integers(1, 4)), draw(st.sampled_from([None, None, 2.3, 33.3, 700.3])),
                draw(st.sampled_from([None, 1, 3, 64])))


async def run_runs(case: Runs) -> tuple[list[Any] | None, list[str]]:
    program = case.program
    vendor = Vendor(program)
    client = httpx.AsyncClient(transport=httpx.MockTransport(vendor.handler))
    provider = make_provider(program, vendor, client)
    texts = [c.text for c in program.calls]
    problems: list[str] = []
    results: list[Any] | None = None
    cancelled = False
    with anyio.fail_after(HANG):
        async with Runtime() as rt:
            agent = Agent(provider if case.actor is None else ProviderActor.shared(
                rt, provider, max_concurrency=case.actor), name="batcher")
            with anyio.CancelScope() as scope:
                if case.cancel_at is not None:
                    scope.deadline = anyio.current_time() + case.cancel_at
                try:
                    results = list(await agent.run_many(texts, runtime=rt, concurrency=case.concurrency))
                except anyio.get_cancelled_exc_class() as exc:
                    results = results_of(exc)
                    cancelled = True
                    raise
            if cancelled and not scope.cancelled_caught:
                problems.append("the cancellation of run_many did not reach its caller's scope")
    await client.aclose()
    if results is None:
        problems.append("a cancelled run_many carried no results" if cancelled else "run_many returned nothing")
        return None, problems
    if len(results) != len(texts):
        problems.append(f"{len(results)} results for {len(texts)} inputs")
    for text, result in zip(texts, results, strict=False):
        said = [m.content for m in result.messages if m.role == "user"]
        if said[:1] != [text]:
            problems.append(f"the slot of {text} holds the run of {said}")
        if result.cancelled:
            if not cancelled:
                problems.append(f"{text} was cancelled, though nobody cancelled run_many")
            continue
        if result.error is None:
            if result.content != f"Echo: {text}":
                problems.append(f"{text} answered {result.content!r}")
            batch_price = cost_of(provider.name, MODELS[program.wire][0], result.usage, batch=True)
            if batch_price is not None and (result.cost is None or result.cost.total != batch_price.total):
                problems.append(f"{text}: an answered batch run cost {result.cost}, its batch price is {batch_price}")
        elif not isinstance(result.error, ProviderError):
            problems.append(f"{text} failed with an untyped {result.error!r}")
    return results, problems


def run_on(backend: str, case: Runs) -> None:
    options: dict[str, Any] = (
        {"loop_factory": VirtualTimeLoop} if backend == "asyncio"
        else {"clock": trio.testing.MockClock(autojump_threshold=0)}
    )
    _, problems = anyio.run(run_runs, case, backend=backend, backend_options=options)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=max(10, EXAMPLES // 2), deadline=None)
@given(case=runs())
def test_run_many_over_a_batch_provider_keeps_one_result_per_input_in_order(backend: str, case: Runs) -> None:
    run_on(backend, case)
