"""The apps' JSON edge: a request body holding a number JSON does not have (NaN, an infinity — also a literal too large
for a double, which Python reads as one) is the client's 400 where the app asks (AG-UI, which echoes the client's
state); and nothing goes out as ``NaN``, which no JSON reader takes."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from agentactors.serve._http import BodyError, EventStream, json_bytes, read_json

pytestmark = pytest.mark.anyio


def receiving(body: bytes) -> Any:
    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


SCOPE = {"type": "http", "headers": [(b"content-type", b"application/json")]}


@pytest.mark.parametrize(
    "raw",
    [
        b'{"temperature": NaN}',
        b'{"state": {"a": [1, Infinity]}}',
        b'{"state": -Infinity}',
        b'{"n": 1e999}',
        b'{"deep": [[[{"x": -1E+400}]]]}',
        b'{"n": 1' + b"0" * 400 + b'.5}',
    ],
)
async def test_a_body_holding_a_number_json_has_not_is_a_400_where_the_app_asks(raw: bytes) -> None:
    with pytest.raises(BodyError) as caught:
        await read_json(receiving(raw), SCOPE, finite=True)
    assert caught.value.status == 400
    assert "NaN" in str(caught.value) and "Infinity" in str(caught.value) and "JSON has no" in str(caught.value)
    # the OpenAI endpoint reads it, and refuses it in the field it reaches, naming the field (its ``param``)
    assert isinstance(await read_json(receiving(raw), SCOPE), dict)


async def test_the_refusal_says_where_the_number_is() -> None:
    raw = b'{"state": {"ok": [1.5, {"budget": NaN}]}, "messages": [{"content": "x"}]}'
    with pytest.raises(BodyError, match=r"at state\.ok\[1\]\.budget:"):
        await read_json(receiving(raw), SCOPE, finite=True)


async def test_text_that_names_nan_and_large_finite_numbers_pass() -> None:
    raw = b'{"text": "NaN and Infinity", "NaN": 1.7976931348623157e308, "small": -1e-400, "big": ' + b"9" * 4000 + b"}"
    body = await read_json(receiving(raw), SCOPE, finite=True)
    assert body["text"] == "NaN and Infinity" and math.isfinite(body["NaN"]) and body["small"] == 0


async def test_nothing_goes_out_as_nan() -> None:
    assert json.loads(json_bytes({"a": 1.5})) == {"a": 1.5}
    for value in (float("nan"), float("inf"), [{"x": -float("inf")}]):
        with pytest.raises(ValueError):
            json_bytes(value)
    sent: list[Any] = []

    async def send(message: Any) -> None:
        sent.append(message)

    with pytest.raises(ValueError):
        await EventStream(send).data({"x": float("nan")})
    assert sent == [], "not a byte of a non-JSON event"
