"""``python -m agentactors serve MODULE:ATTR`` as a user runs it: a real process serving an agent (over a FakeVendor
the test starts) as the OpenAI API, MCP and AG-UI on one port, each read by its own client; its URLs on stdout,
its keys enforced, SIGTERM and Ctrl-C stopping it with exit status 0, and a taken port, a bad MODULE:ATTR or a
missing extra said in a line.  Real processes, real clocks, generous bounds (docs/serve.md, "Serving from the
command line", documents these commands)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx
import httpx2
import openai
import pytest
from ag_ui.core import Event, EventType
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from pydantic import TypeAdapter

from agentactors.__main__ import main
from agentactors.testing import FakeReply, FakeVendor
from tests.support.signals import default_sigint

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="signals to a child differ on Windows"),
    pytest.mark.filterwarnings("ignore:Async generator 'httpcore2:ResourceWarning"),
    pytest.mark.filterwarnings("ignore:Async generator 'httpx2:ResourceWarning"),
]

HERE = Path(__file__).parent  # the working directory: `serve serve_cli_agent:agent` finds the module there
ANSWER = "Hello from the agent, served from the command line."


@pytest.fixture(scope="module")
def vendor() -> Iterator[FakeVendor]:
    with FakeVendor() as fv:
        fv.on(FakeReply(text=ANSWER))
        yield fv


@contextmanager
def started(vendor: FakeVendor, *args: str, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[str]]:
    """``python -m agentactors serve ARGS`` in this directory, killed if it still runs when the block ends."""
    environ = {k: v for k, v in os.environ.items() if k not in ("SERVE_CLI_KEYS", "OPENAI_API_KEY")}
    environ |= {"PYTHONUNBUFFERED": "1", "SERVE_CLI_VENDOR": vendor.openai_base_url, **(env or {})}
    proc = subprocess.Popen([sys.executable, "-m", "agentactors", "serve", *args], cwd=HERE, env=environ, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=default_sigint)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=60)


def urls(proc: subprocess.Popen[str], count: int) -> list[str]:
    """The first ``count`` stdout lines: the endpoints' URLs, printed once the server listens."""
    assert proc.stdout is not None
    lines = [proc.stdout.readline().strip() for _ in range(count)]
    assert all(line.startswith("http://") for line in lines), (lines, proc.poll())
    return lines


def stopped(proc: subprocess.Popen[str], how: signal.Signals = signal.SIGTERM) -> str:
    """Send ``how``; the process exits 0 within a few seconds, without a traceback; its stderr."""
    began = time.monotonic()
    proc.send_signal(how)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err[-3000:]
    assert time.monotonic() - began < 15, "a graceful stop with nothing in flight is quick"
    assert "Traceback" not in err, err[-3000:]
    return err


def agui_events(response: httpx.Response) -> list[Event]:
    adapter: TypeAdapter[Event] = TypeAdapter(Event)
    return [adapter.validate_python(json.loads(line[6:])) for line in response.text.splitlines()
            if line.startswith("data: ")]


async def mcp_answer(url: str, headers: dict[str, str] | None = None) -> tuple[str, list[str], str]:
    """The MCP handshake (initialize), tools/list and one tools/call, with the SDK's client."""
    async with httpx2.AsyncClient(headers=headers or {}, timeout=30) as http, Client(
        streamable_http_client(url, http_client=http), mode="legacy"
    ) as client:
        info = client.server_info
        tools = await client.list_tools()
        result = await client.call_tool("assistant", {"input": "via mcp"})
        text = result.content[0].text  # type: ignore[union-attr]
        return (info.name if info is not None else ""), [t.name for t in tools.tools], text


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_one_agent_served_three_ways_and_stopped_by_sigterm(vendor: FakeVendor, backend: str) -> None:
    with started(vendor, "serve_cli_agent:agent", "--port", "0", "--backend", backend) as proc:
        openai_url, mcp_url, agui_url = urls(proc, 3)
        base = openai_url.removesuffix("/openai/v1")
        assert (mcp_url, agui_url) == (base + "/mcp/", base + "/agui/")
        with openai.OpenAI(base_url=openai_url, api_key="unused", max_retries=0) as client:
            assert [m.id for m in client.models.list()] == ["assistant"]
            answer = client.chat.completions.create(model="assistant", messages=[{"role": "user", "content": "hi"}])
            assert answer.choices[0].message.content == ANSWER
            chunks = client.chat.completions.create(model="assistant", stream=True,
                                                    messages=[{"role": "user", "content": "hi"}])
            assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == ANSWER
        name, tools, text = anyio.run(mcp_answer, mcp_url)
        assert (name, tools, text) == ("agentactors", ["assistant"], ANSWER)
        body = {"threadId": "t1", "runId": "r1", "messages": [{"id": "m1", "role": "user", "content": "hi"}]}
        events = agui_events(httpx.post(agui_url, json=body, timeout=30))
        assert events[0].type == EventType.RUN_STARTED and events[-1].type == EventType.RUN_FINISHED
        assert "".join(e.delta for e in events if e.type == EventType.TEXT_MESSAGE_CONTENT) == ANSWER
        err = stopped(proc)
        assert "no API key" in err and "not loopback" not in err


def test_an_async_function_makes_the_agent_and_names_it_and_ctrl_c_stops_it(vendor: FakeVendor) -> None:
    with started(vendor, "serve_cli_agent:make_agent", "--port", "0", "--openai") as proc:
        (openai_url,) = urls(proc, 1)
        with openai.OpenAI(base_url=openai_url, api_key="unused", max_retries=0) as client:
            assert [m.id for m in client.models.list()] == ["make_agent"]  # unnamed: ATTR names it
        assert httpx.post(openai_url.removesuffix("/openai/v1") + "/agui/", json={}).status_code == 404
        stopped(proc, signal.SIGINT)


def test_the_api_key_from_the_environment_guards_every_endpoint(vendor: FakeVendor) -> None:
    key = "sk-serve-cli-0123456789"
    with started(vendor, "serve_cli_agent:agent", "--port", "0", "--api-key-env", "SERVE_CLI_KEYS",
                 env={"SERVE_CLI_KEYS": f"sk-other, {key}"}) as proc:
        openai_url, mcp_url, agui_url = urls(proc, 3)
        body = {"threadId": "t1", "runId": "r1", "messages": [{"id": "m1", "role": "user", "content": "hi"}]}
        assert httpx.get(openai_url + "/models").status_code == 401
        assert httpx.get(openai_url + "/models", headers={"Authorization": "Bearer sk-wrong"}).status_code == 401
        refused = httpx.post(agui_url, json=body)
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
        assert httpx.post(mcp_url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}).status_code == 401
        with openai.OpenAI(base_url=openai_url, api_key=key, max_retries=0) as client:
            answer = client.chat.completions.create(model="assistant", messages=[{"role": "user", "content": "hi"}])
            assert answer.choices[0].message.content == ANSWER
        auth = {"Authorization": f"Bearer {key}"}
        assert anyio.run(mcp_answer, mcp_url, auth)[2] == ANSWER
        assert agui_events(httpx.post(agui_url, json=body, headers=auth, timeout=30))[-1].type == EventType.RUN_FINISHED
        err = stopped(proc)
        assert "API key checked" in err
    assert key not in err and "sk-other" not in err


def test_a_host_not_loopback_without_a_key_is_warned_about(vendor: FakeVendor) -> None:
    with started(vendor, "serve_cli_agent:agent", "--host", "0.0.0.0", "--port", "0", "--agui") as proc:
        (agui_url,) = urls(proc, 1)
        assert agui_url.startswith("http://0.0.0.0:") and agui_url.endswith("/agui/")
        err = stopped(proc)
    warnings = [line for line in err.splitlines() if "not loopback" in line]
    assert len(warnings) == 1 and "--api-key" in warnings[0], err


def test_a_taken_port_is_one_line_and_exit_1(vendor: FakeVendor) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with started(vendor, "serve_cli_agent:agent", "--port", str(port)) as proc:
            out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    assert out == "", "no URL is printed that is not served"
    (line,) = err.strip().splitlines()
    assert f"127.0.0.1:{port}" in line and "in use" in line and "--port" in line, line


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("no_such_module_of_serves:agent", "serve no_such_module_of_serves:agent: no module named"),
        ("serve_cli_agent:nobody", "serve_cli_agent has no attribute 'nobody'"),
        ("serve_cli_agent:not_an_agent", "is a int, not an Agent or a function returning one"),
        ("serve_cli_agent", "serve takes module:attribute, not 'serve_cli_agent'"),
    ],
)
def test_a_bad_module_attr_is_a_usage_error(vendor: FakeVendor, spec: str, said: str) -> None:
    """As ``fork --agent``'s: argparse's usage line and the error, exit status 2."""
    with started(vendor, spec, "--port", "0") as proc:
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    assert out == "" and "Traceback" not in err, err
    assert said in err.splitlines()[-1], err


@pytest.fixture
def in_here(vendor: FakeVendor, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command in this process, as the subprocesses run it: this directory, the vendor's URL."""
    monkeypatch.chdir(HERE)
    monkeypatch.setattr(sys, "path", [str(HERE), *sys.path])
    monkeypatch.setenv("SERVE_CLI_VENDOR", vendor.openai_base_url)
    monkeypatch.delenv("SERVE_CLI_KEYS", raising=False)


def test_an_api_key_variable_unset_or_empty_is_a_usage_error(
    in_here: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for value in (None, " , "):
        if value is not None:
            monkeypatch.setenv("SERVE_CLI_KEYS", value)
        with pytest.raises(SystemExit) as exited:
            main(["serve", "serve_cli_agent:agent", "--api-key-env", "SERVE_CLI_KEYS"])
        assert exited.value.code == 2
        said = capsys.readouterr().err.splitlines()[-1]
        assert f"$SERVE_CLI_KEYS is {'not set' if value is None else 'empty'}" in said, said


def test_without_the_mcp_sdk_mcp_is_skipped_by_default_and_an_error_when_asked_for(
    in_here: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "agentactors.serve.mcp", None)  # its import fails, as without the extra
    assert main(["serve", "serve_cli_agent:agent", "--mcp"]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == "serve: --mcp needs the mcp SDK: pip install 'agentactors[mcp]'"
    with socket.socket() as taken:  # by default: skipped with a line, and the rest goes on (to the taken port)
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        assert main(["serve", "serve_cli_agent:agent", "--port", str(taken.getsockname()[1])]) == 1
    skipped, cannot = capsys.readouterr().err.strip().splitlines()
    assert skipped == "serve: MCP not served: it needs the mcp SDK (pip install 'agentactors[mcp]')"
    assert "cannot listen" in cannot


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_stream_still_open_at_a_stop_is_cut_cleanly_within_the_grace(backend: str) -> None:
    """A client reading a stream whose model never answers: SIGTERM ends the stream (an empty last body, not a
    reset), the process exits 0 after the grace, and the server logs no traceback for it (uvicorn, left to its own
    graceful timeout, cancelled the request itself and logged one)."""
    with FakeVendor(latency=120) as slow, started(slow, "serve_cli_agent:agent", "--port", "0", "--backend", backend,
                                                  "--keepalive", "0.2", "--openai") as proc:
        (openai_url,) = urls(proc, 1)
        body = {"model": "assistant", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        with httpx.Client(timeout=60) as http, http.stream("POST", f"{openai_url}/chat/completions",
                                                            json=body) as response:
            assert response.status_code == 200
            lines = response.iter_lines()
            assert next(lines) == ": keep-alive"  # the stream is open, its model silent
            began = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            rest = list(lines)  # ends: the server cut it
            took = time.monotonic() - began
        assert "data: [DONE]" not in rest and all(line in ("", ": keep-alive") for line in rest), rest
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err[-3000:]
    assert 3 < took < 20, took  # the grace less its margin, then cut
    assert "Traceback" not in err and "request(s) still open" in err, err[-3000:]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_second_ctrl_c_with_a_request_open_stops_at_once_without_a_traceback(backend: str) -> None:
    """Ctrl-C twice while a model is still thinking: exit 130 at once, and neither the request nor the lifespan
    is logged as a failure (uvicorn logged both, with their tracebacks, when the stop cancelled them)."""
    import threading

    with FakeVendor(latency=120) as slow, started(slow, "serve_cli_agent:agent", "--port", "0", "--backend", backend,
                                                  "--openai") as proc:
        (openai_url,) = urls(proc, 1)

        def ask() -> None:
            try:
                httpx.post(f"{openai_url}/chat/completions", timeout=60,
                           json={"model": "assistant", "messages": [{"role": "user", "content": "hi"}]})
            except httpx.HTTPError:
                pass  # the server went away: what the test is about is the server's side

        asking = threading.Thread(target=ask)
        asking.start()
        deadline = time.monotonic() + 30
        while not slow.requests and time.monotonic() < deadline:  # the run reached the vendor: a request is open
            time.sleep(0.05)
        began = time.monotonic()
        proc.send_signal(signal.SIGINT)
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        took = time.monotonic() - began
        asking.join(timeout=60)
    assert proc.returncode == 130, err[-3000:]
    assert took < 10, took
    assert "Traceback" not in err and "ERROR" not in err, err[-3000:]
