"""The server examples as a user starts them: a clear message for a taken port or a wrong flag, and Ctrl-C that
stops them cleanly — exit status 0, no traceback — on the backend they are asked for (real processes, real
clocks, generous bounds)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from tests.support.paths import EXAMPLES
from tests.support.signals import default_sigint

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGINT delivery to a child differs on Windows")

SERVERS = [
    ("service_starlette", "asyncio"),
    ("service_starlette", "trio"),
    ("serve_all", "asyncio"),
    ("serve_all", "trio"),
    ("service_trio", "asyncio"),
    ("service_trio", "trio"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def _started(name: str, *args: str) -> Iterator[subprocess.Popen[str]]:
    """The example as a script (without OPENAI_API_KEY: offline), killed if it still runs when the block ends."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "PORT")} | {"PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, str(EXAMPLES / f"{name}.py"), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, preexec_fn=default_sigint)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=60)


def _answered(name: str, port: int) -> None:
    """Wait (a minute at most) until the server answers one request on ``port``."""
    deadline = time.monotonic() + 60
    while True:
        try:
            if name == "service_trio":
                with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                    s.sendall(b'{"prompt": "hi"}\n')
                    assert "answer" in json.loads(s.makefile().readline())
            else:
                httpx.get(f"http://127.0.0.1:{port}/", timeout=10).raise_for_status()
            return
        except (OSError, httpx.TransportError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@pytest.mark.parametrize(("name", "backend"), SERVERS)
def test_a_taken_port_is_a_clear_message_and_ctrl_c_stops_cleanly(name: str, backend: str) -> None:
    port = _free_port()
    with _started(name, "--port", str(port), "--backend", backend) as server:
        _answered(name, port)
        with _started(name, "--port", str(port), "--backend", backend) as second:
            out, err = second.communicate(timeout=60)
            assert second.returncode == 1, err[-3000:]
            assert f"127.0.0.1:{port}" in err and "in use" in err and "--port" in err, err[-3000:]
            assert "Traceback" not in err, err[-3000:]
            assert f":{port}" not in out, "no address is announced that is not served"
        streaming = None
        # A stream in flight when Ctrl-C comes: the server still stops.  (Not on asyncio: there hypercorn cancels
        # the connection after its graceful timeout, and Python 3.11's asyncio streams log that cancellation.)
        if name == "service_starlette" and backend == "trio":
            streaming = threading.Thread(target=_read_stream, args=(port,), daemon=True)
            streaming.start()
            time.sleep(0.5)
        server.send_signal(signal.SIGINT)
        out, err = server.communicate(timeout=60)
        assert server.returncode == 0, err[-3000:]
        assert "Traceback" not in err and "Exception" not in err, err[-3000:]
        assert f"127.0.0.1:{port}" in out
        if streaming is not None:
            streaming.join(60)


def _read_stream(port: int) -> None:
    try:
        with httpx.stream("GET", f"http://127.0.0.1:{port}/stream", params={"prompt": "hi"}, timeout=60) as r:
            for _ in r.iter_lines():
                pass
    except httpx.HTTPError:
        pass


@pytest.mark.parametrize("name", ["service_starlette", "serve_all", "service_trio"])
@pytest.mark.parametrize("args", [("--prot", "9000"), ("--port", "99999"), ("--port", "0"), ("--port", "http")])
def test_a_wrong_flag_is_a_usage_error(name: str, args: tuple[str, str]) -> None:
    with _started(name, *args) as proc:
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "usage:" in err and args[0] in err, err[-3000:]
    assert "Traceback" not in err
