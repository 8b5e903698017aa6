"""A mistaken argument to the FakeVendor or to one of its script items is a typed error where it is made.

Found by a user's trial of the testing toolkit: each value below was taken without a word, and the mistake
surfaced only on a request, in the server's thread — a dropped connection ("Server disconnected without
sending a response"), an empty 500 with the request left ``pending`` for ever, or nothing at all (a request
that silently never matched, an outage already over).  The user's test then failed far from the line at fault.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from agentactors.testing import FakeError, FakeMalformed, FakeReply, FakeToolCall, FakeVendor, FaultPlan, Outage

pytestmark = pytest.mark.anyio

Case = tuple[str, Callable[[], object], type[Exception], str]


def _vendor_cases() -> list[Case]:
    return [
        ("port str", lambda: FakeVendor(port="8765"), TypeError, "port"),  # type: ignore[arg-type]
        ("port bool", lambda: FakeVendor(port=True), TypeError, "port"),
        ("port negative", lambda: FakeVendor(port=-1), ValueError, "port"),
        ("port too big", lambda: FakeVendor(port=70000), ValueError, "port"),
        ("host int", lambda: FakeVendor(host=127), TypeError, "host"),  # type: ignore[arg-type]
        ("host empty", lambda: FakeVendor(host=""), ValueError, "host"),
        ("host blank", lambda: FakeVendor(host="  "), ValueError, "host"),
        ("latency str", lambda: FakeVendor(latency="1"), TypeError, "latency"),  # type: ignore[arg-type]
        ("auto_tools str", lambda: FakeVendor(auto_tools="yes"), TypeError, "auto_tools"),  # type: ignore[arg-type]
        ("auto_tools negative", lambda: FakeVendor(auto_tools=-1), ValueError, "auto_tools"),
        ("faults str", lambda: FakeVendor(faults="0.5"), TypeError, "faults"),  # type: ignore[arg-type]
        ("faults rate", lambda: FakeVendor(faults=0.5), TypeError, "FaultPlan"),  # type: ignore[arg-type]
        ("strict str", lambda: FakeVendor(strict="no"), TypeError, "strict"),  # type: ignore[arg-type]
        ("key int", lambda: FakeVendor(expected_api_key=123), TypeError, "expected_api_key"),  # type: ignore[arg-type]
        ("key empty", lambda: FakeVendor(expected_api_key=""), ValueError, "expected_api_key"),
        ("record_bodies str", lambda: FakeVendor(record_bodies="no"), TypeError, "record_bodies"),  # type: ignore[arg-type]
        ("max_records negative", lambda: FakeVendor(max_records=-1), ValueError, "max_records"),
        ("max_records str", lambda: FakeVendor(max_records="5"), TypeError, "max_records"),  # type: ignore[arg-type]
    ]


def _item_cases() -> list[Case]:
    return [
        ("reply text int", lambda: FakeReply(text=5), TypeError, "text"),  # type: ignore[arg-type]
        ("reply reasoning int", lambda: FakeReply(reasoning=1), TypeError, "reasoning"),  # type: ignore[arg-type]
        ("reply words float", lambda: FakeReply(words_per_chunk=1.5), TypeError, "words_per_chunk"),  # type: ignore[arg-type]
        ("reply words str", lambda: FakeReply(words_per_chunk="2"), TypeError, "words_per_chunk"),  # type: ignore[arg-type]
        ("reply cut float", lambda: FakeReply(cut_after=1.5), TypeError, "cut_after"),  # type: ignore[arg-type]
        ("reply cut str", lambda: FakeReply(cut_after="1"), TypeError, "cut_after"),  # type: ignore[arg-type]
        ("reply tokens float", lambda: FakeReply(input_tokens=5.5), TypeError, "input_tokens"),  # type: ignore[arg-type]
        ("reply stream_error str", lambda: FakeReply(stream_error="boom"), TypeError, "stream_error"),  # type: ignore[arg-type]
        ("reply stream_error_after str", lambda: FakeReply(stream_error_after="1"), TypeError,  # type: ignore[arg-type]
         "stream_error_after"),
        ("reply header newline", lambda: FakeReply(headers={"x-a": "a\nb"}), ValueError, "x-a"),
        ("reply header list", lambda: FakeReply(headers=[("x-a", "b")]), TypeError, "headers"),  # type: ignore[arg-type]
        ("error retry_after str", lambda: FakeError(429, retry_after="soon"), TypeError, "retry_after"),  # type: ignore[arg-type]
        ("error message int", lambda: FakeError(429, message=5), TypeError, "message"),  # type: ignore[arg-type]
        ("error code int", lambda: FakeError(429, code=5), TypeError, "code"),  # type: ignore[arg-type]
        ("error should_retry str", lambda: FakeError(429, should_retry="no"), TypeError, "should_retry"),  # type: ignore[arg-type]
        ("error header name", lambda: FakeError(429, headers={"bad name": "v"}), ValueError, "bad name"),
        ("error header list", lambda: FakeError(429, headers=[1]), TypeError, "headers"),  # type: ignore[arg-type]
        ("error body object", lambda: FakeError(500, body=object()), TypeError, "body"),
        ("malformed status 99", lambda: FakeMalformed(status=99), ValueError, "status"),
        ("malformed status str", lambda: FakeMalformed(status="500"), TypeError, "status"),  # type: ignore[arg-type]
        ("malformed body int", lambda: FakeMalformed(body=5), TypeError, "body"),  # type: ignore[arg-type]
        ("malformed content_type newline", lambda: FakeMalformed(content_type="text/x\r\nx: y"), ValueError,
         "content_type"),
        ("tool call arguments int", lambda: FakeToolCall("f", arguments=5), TypeError, "arguments"),  # type: ignore[arg-type]
        ("tool call id int", lambda: FakeToolCall("f", id=5), TypeError, "id"),  # type: ignore[arg-type]
        ("plan weights list", lambda: FaultPlan(rate=0.5, weights=[1, 2]), TypeError, "weights"),  # type: ignore[arg-type]
        ("plan models ints", lambda: FaultPlan(rate=0.5, models=[1, 2]), TypeError, "models"),  # type: ignore[list-item]
        ("outage unknown wire", lambda: Outage(wire="claude", model=None, duration=None, status=None), ValueError,
         "claude"),
    ]


def _outage_cases(fv: FakeVendor) -> list[Case]:
    return [
        ("outage status 200", lambda: fv.outage(status=200), ValueError, "status"),
        ("outage status str", lambda: fv.outage(status="503"), TypeError, "status"),  # type: ignore[arg-type]
        ("outage duration nan", lambda: fv.outage(duration=math.nan), ValueError, "duration"),
        ("outage duration str", lambda: fv.outage(duration="5"), TypeError, "duration"),  # type: ignore[arg-type]
        ("outage model int", lambda: fv.outage(model=5), TypeError, "model"),  # type: ignore[arg-type]
        ("script model int", lambda: fv.script("x", model=5), TypeError, "model"),  # type: ignore[arg-type]
        ("script model empty", lambda: fv.script("x", model=""), ValueError, "model"),
        ("on model int", lambda: fv.on("x", model=5), TypeError, "model"),  # type: ignore[arg-type]
        ("faults setter", lambda: setattr(fv, "faults", "x"), TypeError, "faults"),
        ("auto_tools setter", lambda: setattr(fv, "auto_tools", "x"), TypeError, "auto_tools"),
        ("latency setter", lambda: setattr(fv, "latency", "x"), TypeError, "latency"),
    ]


def _check(make: Callable[[], object], kind: type[Exception], names: str) -> None:
    with pytest.raises(kind) as info:
        make()
    assert names in str(info.value)


@pytest.mark.parametrize(("make", "kind", "names"), [c[1:] for c in _vendor_cases()],
                         ids=[c[0] for c in _vendor_cases()])
def test_a_mistaken_vendor_argument_is_refused_at_construction(
    make: Callable[[], object], kind: type[Exception], names: str
) -> None:
    _check(make, kind, names)


@pytest.mark.parametrize(("make", "kind", "names"), [c[1:] for c in _item_cases()],
                         ids=[c[0] for c in _item_cases()])
def test_a_mistaken_script_item_is_refused_where_it_is_made(
    make: Callable[[], object], kind: type[Exception], names: str
) -> None:
    _check(make, kind, names)


@pytest.mark.parametrize("case", range(len(_outage_cases(FakeVendor()))),
                         ids=[c[0] for c in _outage_cases(FakeVendor())])
def test_a_mistaken_outage_route_or_setting_is_refused_on_the_call(case: int) -> None:
    fv = FakeVendor()
    _, make, kind, names = _outage_cases(fv)[case]
    _check(make, kind, names)
    assert fv.pending_script == 0  # nothing half-done


@pytest.mark.parametrize(
    "value",
    [FakeReply(text="a b", words_per_chunk=3, cut_after=0, input_tokens=0, stream_error=FakeError(500),
               headers={"x-trace": "a b", "X-Num": 5}),  # type: ignore[dict-item]
     FakeError(429, retry_after=0, retry_after_ms=1.5, should_retry=False, message="m", code="c", body=[1, "x"]),
     FakeError(503, body=b"\xff raw"), FakeMalformed(b"\x00", status=503, content_type="text/html"),
     FakeToolCall("f", '{"cut', id="call_1"), FaultPlan(rate=0.5, weights={"timeout": 1}, models=("m",)),
     FaultPlan(models="m")],
    ids=repr,
)
def test_what_is_documented_is_still_taken(value: Any) -> None:
    assert value is not None


async def test_every_wellformed_item_is_still_answered(anyio_backend: str) -> None:
    """What the checks let through is still served as before (headers given as a number are sent as text)."""
    async with FakeVendor() as fv, httpx.AsyncClient(timeout=10) as client:
        fv.script(FakeReply(text="a b", headers={"x-n": 5}), FakeError(429, retry_after=0.5, retry_after_ms=500),  # type: ignore[dict-item]
                  FakeMalformed(status=503), FakeToolCall("f", {"a": 1}, id="call_1"))
        fv.outage(model="other", status=418, duration=math.inf)
        statuses = []
        for _ in range(4):
            response = await client.post(f"{fv.openai_base_url}/chat/completions",
                                         json={"model": "gpt-x", "messages": [{"role": "user", "content": "hi"}]},
                                         headers={"authorization": "Bearer sk-test-123456"})
            statuses.append((response.status_code, response.headers.get("x-n"), response.headers.get("retry-after")))
        assert statuses == [(200, "5", None), (429, None, "0.5"), (503, None, None), (200, None, None)]
        assert [r.outcome for r in fv.requests] == ["ok", "error", "malformed", "ok"]


@pytest.mark.parametrize(("within", "error"), [(math.nan, ValueError), (-1.0, ValueError), ("5", TypeError),
                                               (True, TypeError)])
async def test_wait_for_refuses_a_bound_that_is_no_number_of_seconds(within: Any, error: type[Exception]) -> None:
    # NaN was anyio's "deadline must not be NaN", naming no argument; a negative bound timed out after one look.
    vendor = FakeVendor()
    with pytest.raises(error, match="within must be a number of seconds"):
        await vendor.wait_for(lambda requests: True, within=within)


async def test_wait_for_with_no_time_at_all_looks_once() -> None:
    vendor = FakeVendor()
    assert await vendor.wait_for(lambda requests: requests == (), within=0) == ()
    with pytest.raises(TimeoutError):
        await vendor.wait_for(lambda requests: False, within=0)


def test_a_bad_retry_after_a_test_means_to_send_is_still_sent_and_flags_take_0_or_1() -> None:
    # What a test of a client's handling of a bad retry-after sends: any number goes out as it is.
    for value in (-1, math.inf, math.nan):
        FakeError(429, retry_after=value)
        FakeError(429, retry_after_ms=value)
    FakeVendor(strict=0)  # type: ignore[arg-type]
    FakeVendor(strict=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="strict must be a bool"):
        FakeVendor(strict=2)  # type: ignore[arg-type]
