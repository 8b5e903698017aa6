"""The FakeVendor as a new user meets it: bad arguments refused up front, hostile requests answered typed.

A test tool that accepts a mistaken argument silently, or whose server answers a hostile body with an
untyped 500, makes its users' tests pass or fail for the wrong reason.
"""

from __future__ import annotations

import math
import socket
import subprocess
import sys

import httpx
import pytest

from agentactors.__main__ import main as cli
from agentactors.testing import FakeVendor, FaultKind, FaultPlan
from agentactors.testing.fakevendor import main as fakevendor_main
from tests.support.fakevendor import CANARY, auth_headers, url

pytestmark = pytest.mark.anyio

NAN, INF = math.nan, math.inf


@pytest.mark.parametrize("kwargs", [
    {"weights": {FaultKind.rate_limit: INF}},  # random.choices refuses it: every faulted request broke
    {"weights": {"disconnect": 1.0, "timeout": INF}},
    {"retry_after": -1.0},
    {"retry_after": NAN},
    {"retry_after": INF},
    {"wires": ["opneai"]},  # a typo used to restrict the plan to nothing, silently
    {"wires": "chat"},
    {"cut_after": 1.5},
])
def test_fault_plan_refuses_arguments_it_cannot_honour(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="FaultPlan"):
        FaultPlan(rate=0.5, **kwargs)  # type: ignore[arg-type]


def test_fault_plan_still_takes_every_real_wire_and_a_zero_retry_after() -> None:
    plan = FaultPlan(rate=1.0, retry_after=0, wires=("openai", "responses", "anthropic", "gemini", "bedrock"))
    assert plan.retry_after == 0.0
    assert plan.wires is not None and len(plan.wires) == 5


@pytest.mark.parametrize("latency", [NAN, -0.1])
def test_fakevendor_refuses_a_latency_that_is_not_a_number_of_seconds(latency: float) -> None:
    with pytest.raises(ValueError, match="latency"):
        FakeVendor(latency=latency)
    fv = FakeVendor()
    with pytest.raises(ValueError, match="latency"):
        fv.latency = latency


@pytest.mark.parametrize("wire", ["openai", "anthropic", "gemini"])
async def test_a_deeply_nested_body_is_a_typed_400_and_the_server_keeps_serving(wire: str) -> None:
    # json.loads raises RecursionError here, not ValueError: the server used to answer an empty, untyped 500.
    nested = b"[" * 200_000 + b"]" * 200_000
    async with FakeVendor() as fv, httpx.AsyncClient(timeout=60) as client:
        response = await client.post(url(fv, wire), content=nested,
                                     headers={**auth_headers(wire), "content-type": "application/json"})
        assert response.status_code == 400, response.text
        assert "could not parse the JSON body" in response.text
        ok = await client.post(url(fv, wire), headers=auth_headers(wire), json={
            "model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}],
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
        assert ok.status_code == 200, ok.text
        assert fv.handler_errors == ()


@pytest.mark.parametrize("wire", ["openai", "anthropic", "gemini"])
async def test_a_wrong_key_is_a_401_even_when_the_body_is_also_wrong(wire: str) -> None:
    # Real vendors authenticate before they read the body: a wrong key with a broken body is a 401, not a 400.
    async with FakeVendor(expected_api_key=CANARY) as fv, httpx.AsyncClient(timeout=60) as client:
        for content in (b"{not json", b'{"model": "m"}'):
            response = await client.post(url(fv, wire), content=content,
                                         headers={**auth_headers(wire, "sk-wrong-0123456789abcdef"),
                                                  "content-type": "application/json"})
            assert response.status_code == 401, (content, response.text)


@pytest.mark.parametrize("argv", [
    ["--fault-rate", "2"], ["--fault-rate", "nan"], ["--fault-rate", "-0.5"], ["--latency", "-1"],
    ["--latency", "nan"], ["--port", "-1"], ["--port", "65536"], ["--port", "x"],
])
def test_the_fakevendor_command_line_refuses_bad_numbers_as_a_usage_error(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    for command, args in ((fakevendor_main, argv), (cli, ["fakevendor", *argv])):
        with pytest.raises(SystemExit) as exit_info:
            command(args)
        assert exit_info.value.code == 2
        err = capsys.readouterr().err
        assert "usage:" in err and "Traceback" not in err, err


def test_a_port_in_use_is_one_clear_line_and_exit_1() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for argv in (["-m", "agentactors", "fakevendor"], ["-m", "agentactors.testing.fakevendor"]):
            done = subprocess.run([sys.executable, *argv, "--port", str(port)], capture_output=True, text=True,
                                  timeout=120)
            assert done.returncode == 1, done.stderr
            assert "Traceback" not in done.stderr, done.stderr
            assert f"cannot listen on 127.0.0.1:{port}" in done.stderr, done.stderr
