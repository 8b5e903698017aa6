"""The FakeVendor command line: ``serve()`` blocks until told to stop and prints the base URL first."""

from __future__ import annotations

import io
import signal
import sys
import threading

import httpx
import pytest

from agentactors.testing.fakevendor import serve
from tests.support.fakevendor import auth_headers, command_line, url


def test_serve_prints_the_base_url_then_serves_until_stopped() -> None:
    out = io.StringIO()
    stop = threading.Event()
    thread = threading.Thread(target=serve, kwargs={"port": 0, "out": out, "stop_event": stop, "latency": 0.0,
                                                    "fault_rate": 0.0})
    thread.start()
    try:
        for _ in range(6000):  # up to a minute: a loaded machine starts a server slowly
            if out.getvalue().endswith("\n"):
                break
            stop.wait(0.01)
        base = out.getvalue().strip()
        assert base.startswith("http://127.0.0.1:")
        tools = [{"type": "function", "function": {"name": "lookup", "parameters": {
            "type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}}]
        response = httpx.post(f"{base}/v1/chat/completions", headers=auth_headers("openai"), timeout=60,
                              json={"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": tools})
        # The CLI serves demos: auto-tool mode is on by default.
        assert response.json()["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] == '{"q":"example"}'
    finally:
        stop.set()
        thread.join(60)
    assert not thread.is_alive()


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT delivery to a child differs on Windows")
def test_module_entry_point_runs_and_stops_on_ctrl_c() -> None:
    with command_line("-m", "agentactors.testing.fakevendor", "--port", "0", "--fault-rate", "0", "--seed", "1") as (
        proc,
        base,
    ):
        assert base.startswith("http://127.0.0.1:"), base
        fake = type("FV", (), {"base_url": base, "openai_base_url": base + "/v1"})()
        response = httpx.post(url(fake, "anthropic"), headers=auth_headers("anthropic"),
                              json={"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]},
                              timeout=60)
        assert response.status_code == 200
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
