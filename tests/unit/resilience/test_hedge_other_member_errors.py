"""A hedge sent to another member (``to=``) that fails does not decide the call; virtual time, both backends.

A request-kind error ends a hedged call at once when the copy went to the first copy's own member: the other
copy, the same request to the same vendor, would fail alike.  A hedge sent to *another* member says nothing of
that: another vendor or model may refuse a request (a parameter it does not take, a tool schema it rejects) that
the first copy serves fine.  Before, such a refusal cancelled a first copy about to answer and failed the call —
hedging made calls fail that would have succeeded without it — and when both copies failed, the other member's
request error was raised over the first copy's transient one, so a retry around did not retry.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors import LLMRequest, Message, ScriptedProvider
from agentactors.errors import ErrorKind, ProviderError
from agentactors.messages import StreamEnd
from agentactors.resilience import with_hedge, with_retry
from tests.support.resilience import recording

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

REQUEST = LLMRequest([Message.user("hi")])


def after(seconds: float, outcome: Any) -> Any:
    """A script item: ``outcome`` (an error is raised) after ``seconds``."""

    async def answer() -> Any:
        await anyio.sleep(seconds)
        return outcome

    return lambda request: answer()


def refusal(provider: str) -> ProviderError:
    return ProviderError("400: unsupported parameter", provider=provider, kind=ErrorKind.request)


def hedged_to_a_refusing_member(first: Any) -> tuple[Any, ScriptedProvider]:
    primary = ScriptedProvider([first], name="primary")
    other = ScriptedProvider([after(0.5, refusal("other"))], name="other")  # refuses 1.5 s in
    return with_hedge(primary, after=1.0, max_extra=1.0, to=other), other


async def test_the_first_copy_answers_when_the_other_member_refuses_the_hedge(anyio_backend: Any) -> None:
    hedged, other = hedged_to_a_refusing_member(after(3.0, "from the primary"))
    start = anyio.current_time()
    with recording() as recorder:
        response = await hedged.complete(REQUEST)
    assert response.content == "from the primary"
    assert anyio.current_time() - start == pytest.approx(3.0)
    assert other.calls == 1 and hedged.hedged == 1
    won = [e for e in recorder.events if e.type == "hedge.won"]
    assert len(won) == 1 and won[0].winner == "primary"


async def test_a_stream_goes_on_when_the_other_member_refuses_the_hedge(anyio_backend: Any) -> None:
    hedged, other = hedged_to_a_refusing_member(after(3.0, "from the primary"))
    async with hedged.stream(REQUEST) as events:
        got = [event async for event in events]
    assert isinstance(got[-1], StreamEnd) and got[-1].response.content == "from the primary"
    assert other.calls == 1


async def test_both_failing_raises_the_first_copys_error_with_the_other_noted(anyio_backend: Any) -> None:
    hedged, _ = hedged_to_a_refusing_member(after(3.0, ProviderError("503", provider="primary",
                                                                       kind=ErrorKind.transient)))
    with pytest.raises(ProviderError) as caught:
        await hedged.complete(REQUEST)
    # What the call would have raised without a hedge: transient, so a retry around retries it.
    assert caught.value.kind is ErrorKind.transient and caught.value.provider == "primary"
    assert any("the other copy failed too" in note and "unsupported parameter" in note
               for note in getattr(caught.value, "__notes__", ()))


async def test_a_retry_around_retries_when_the_other_member_refused(anyio_backend: Any) -> None:
    primary = ScriptedProvider([after(3.0, ProviderError("503", provider="primary", kind=ErrorKind.transient)),
                                "second attempt"], name="primary")
    other = ScriptedProvider([after(0.5, refusal("other"))], name="other")
    chain = with_retry(with_hedge(primary, after=1.0, max_extra=1.0, to=other), max_attempts=2, base_delay=0.1)
    response = await chain.complete(REQUEST)
    assert response.content == "second attempt" and primary.calls == 2 and other.calls == 1


async def test_a_request_error_of_a_copy_to_the_same_member_still_ends_the_call_at_once(anyio_backend: Any) -> None:
    # (the hedge to the first copy's member given as ``to``: the same vendor, which would refuse both alike)
    primary = ScriptedProvider([after(100.0, "late"), after(0.5, refusal("scripted"))])
    hedged = with_hedge(primary, after=1.0, max_extra=1.0, to=primary)
    start = anyio.current_time()
    with pytest.raises(ProviderError) as caught:
        await hedged.complete(REQUEST)
    assert caught.value.kind is ErrorKind.request
    assert anyio.current_time() - start == pytest.approx(1.5)
