"""What the generated batch programs (``test_batch_generated.py``) found, each pinned as a plain example.

Each test runs one shrunk program against the same scripted in-memory vendor, on virtual time, both backends.
"""

from __future__ import annotations

import itertools
from typing import Any

import anyio
import attrs
import httpx
import pytest

from agentactors import LLMRequest, LLMResponse, Message, Runtime
from agentactors.errors import ProviderError
from agentactors.resilience.batch import BatchError

from .test_batch_generated import (
    MODELS,
    Call,
    Journal,
    Program,
    Script,
    Vendor,
    check,
    make_provider,
    run_program,
)

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


def _program(wire: str, calls: tuple[Call, ...], *scripts: Script, **options: Any) -> Program:
    return Program(wire=wire, window=options.get("window", 0.0), max_requests=options.get("max_requests", 100),
                   poll_every=options.get("poll_every", 10.0), max_wait=options.get("max_wait", 3600.0),
                   calls=calls, scripts=scripts, close_client_at=None)


@pytest.mark.parametrize("wire", ["openai", "anthropic", "gemini"])
async def test_every_call_of_a_refused_submission_raises_its_own_error_object(anyio_backend: Any, wire: str) -> None:
    # A submission the vendor refused (a 400) failed every one of its calls with the very same exception object:
    # raised in N tasks, its traceback grew with each raise (every call's frames, N times over) and a note added
    # to one call's error showed on all of them.
    calls = tuple(Call(f"q{i}", 0, 0.0, None, "ok") for i in range(3))
    program = _program(wire, calls, Script(create="400"))
    vendor, rec = await run_program(program)
    errors = [rec.outcomes[c.text] for c in calls]
    assert all(isinstance(e, ProviderError) and e.status == 400 and not e.retryable for e in errors)
    assert len({id(e) for e in errors}) == len(errors)
    check(program, vendor, rec)


@pytest.mark.parametrize("wire", ["openai", "anthropic", "gemini"])
async def test_failed_polls_in_a_row_are_counted_across_a_driver_handing_over(anyio_backend: Any, wire: str) -> None:
    # The count of failed status reads in a row (and so the backoff) lived in the driving call's frame: when that
    # call was cancelled, the next waiter started again from 0 — a batch whose status could not be read was polled
    # past MAX_POLL_FAILURES (here an 11th read answered, after ten failures), at poll_every again instead of backing
    # off, for as long as its drivers kept leaving.
    calls = (Call("q0", 0, 0.0, 41.3, "ok"), Call("q1", 0, 0.5, None, "ok"))
    program = _program(wire, calls, Script(faults=("503",) * 10), window=5.0, max_wait=48 * 3600.0)
    vendor, rec = await run_program(program)
    assert rec.outcomes["q0"] == "cancelled"
    failure = rec.outcomes["q1"]
    assert isinstance(failure, BatchError) and failure.reason == "poll" and failure.retryable
    reads = vendor.attempts[0].reads
    assert len(reads) == 10
    gaps = [b - a for a, b in itertools.pairwise(reads)]
    assert gaps == sorted(gaps) and gaps[-1] > 10 * program.poll_every  # backing off all along
    check(program, vendor, rec)


# -- checked, and kept: the same question asked by several runs across a restart -----------------------------


@pytest.mark.parametrize("wire", ["openai", "anthropic", "gemini"])
async def test_runs_asking_the_same_question_each_resume_their_own_parked_item(anyio_backend: Any, wire: str) -> None:
    program = _program(wire, (Call("same", 0, 0.0, None, "ok"),), Script(running=50), window=1.0)
    vendor = Vendor(program)
    journal = Journal()
    client = httpx.AsyncClient(transport=httpx.MockTransport(vendor.handler))
    request = LLMRequest([Message.user("same")], model=MODELS[wire][0])
    async with Runtime(journal=journal), anyio.create_task_group() as tg:  # process 1: dies at t=30
        first = make_provider(program, vendor, client)
        for _ in range(3):
            tg.start_soon(first.complete, request)
        await anyio.sleep(30.0)
        journal.dead = True
        tg.cancel_scope.cancel()
    parked = journal.entries()
    assert len(vendor.attempts) == 1 and len(parked) == 3  # one batch, three items of the same request
    journal.dead = False
    vendor.attempts[0].script = Script()  # the batch ends at its next read
    second = make_provider(program, vendor, client)
    answers: list[LLMResponse] = []

    async def again() -> None:
        answers.append(await second.complete(request))

    async with Runtime(journal=journal), anyio.create_task_group() as tg:  # process 2: four runs ask it
        for _ in range(4):
            tg.start_soon(again)
    marks = [a.provider_data["batch"] for a in answers if a.provider_data]
    resumed = [m for m in marks if (m["id"], m["custom_id"]) in parked]
    assert len(resumed) == 3 and len({m["custom_id"] for m in resumed}) == 3  # each its own item
    assert len(vendor.attempts) == 2 and len(vendor.attempts[1].texts) == 1  # the fourth: submitted anew
    assert all(a.content == "Echo: same" for a in answers) and journal.entries() == set()
    await client.aclose()


@pytest.mark.parametrize("wire", ["openai", "anthropic", "gemini"])
async def test_a_create_request_a_closed_client_never_sent_is_not_unconfirmed(anyio_backend: Any, wire: str) -> None:
    # The HTTP client was closed (its owner's `async with` ended) while calls waited in the window: the create
    # request was never sent — httpx refuses before anything leaves — yet each call failed with
    # BatchError("unconfirmed"), final and telling its caller to search the vendor's batch list for a batch that
    # cannot exist.  (OpenAI's: closed while its file was uploading, between the upload and the create request.)
    calls = (Call("q0", 0, 0.0, None, "ok"), Call("q1", 0, 0.0, None, "ok"))
    scripts = (Script(upload="slow"),) if wire == "openai" else ()
    program = attrs.evolve(_program(wire, calls, *scripts, window=5.0), close_client_at=20.0 if scripts else 1.0)
    vendor, rec = await run_program(program)
    assert all(a.batch_id is None for a in vendor.attempts)  # no batch was made
    for text in ("q0", "q1"):
        error = rec.outcomes[text]
        assert isinstance(error, ProviderError) and not isinstance(error, BatchError), error
        assert "closed" in str(error)
    check(program, vendor, rec)


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_a_request_resumed_while_its_batch_results_are_read_gets_its_answer(
    anyio_backend: Any, wire: str
) -> None:
    # After a restart, two recovered runs resume the same parked batch; the second arrives while the first is
    # reading the batch's (slow) results file.  The read was made for the lines known when it began, and every
    # waiter's outcome was then taken from it: the second run's item, answered and paid for, came back as a
    # retryable BatchError("missing") — which a with_retry around would have submitted again, billed twice.
    program = _program(wire, (Call("a", 0, 0.0, None, "ok"), Call("b", 0, 0.0, None, "ok")), Script(running=50),
                       window=1.0)
    vendor = Vendor(program)
    journal = Journal()
    client = httpx.AsyncClient(transport=httpx.MockTransport(vendor.handler))
    requests = {text: LLMRequest([Message.user(text)], model=MODELS[wire][0]) for text in ("a", "b")}
    async with Runtime(journal=journal), anyio.create_task_group() as tg:  # process 1: dies at t=30
        first = make_provider(program, vendor, client)
        for request in requests.values():
            tg.start_soon(first.complete, request)
        await anyio.sleep(30.0)
        journal.dead = True
        tg.cancel_scope.cancel()
    assert len(journal.entries()) == 2
    journal.dead = False
    vendor.attempts[0].script = Script(results="slow")  # ends at its next read; its results file is slow
    second = make_provider(program, vendor, client)
    answers: dict[str, Any] = {}

    async def again(text: str, after: float) -> None:
        await anyio.sleep(after)
        try:
            answers[text] = await second.complete(requests[text])
        except ProviderError as exc:
            answers[text] = exc

    async with Runtime(journal=journal), anyio.create_task_group() as tg:  # process 2
        tg.start_soon(again, "a", 0.0)
        tg.start_soon(again, "b", 20.0)  # while "a" reads the results
    assert len(vendor.attempts) == 1  # never submitted again
    for text in ("a", "b"):
        assert isinstance(answers[text], LLMResponse) and answers[text].content == f"Echo: {text}", answers[text]
    assert journal.entries() == set()
    await client.aclose()
