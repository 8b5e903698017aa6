"""The demo's FakeVendor, served from a child process.

The fake vendor is a real HTTP server; run in the demo's own process it would
share the interpreter lock with the thousand agents it serves, and on a
two-core machine each would wait for the other at every socket call.  In a
child process it gets a core of its own, which is also where a real vendor
sits: on the other side of a socket.

The child (``python -m agentactors._demo.vendor``) runs
:class:`~agentactors.testing.fakevendor.FakeVendor` with the demo's fake model
(:func:`agentactors._demo.tasks.fake_model`) and fault plan, and takes one JSON
command per line on stdin — open an outage window, hand over the request log,
stop — answering on stdout.  The log names each request's endpoint
(:func:`endpoint_of_path`): the fake's wires are shared by several endpoints (an
Azure deployment speaks the OpenAI wire, Gemini on Vertex AI the Gemini wire).
A plain subprocess rather than ``multiprocessing``: spawning would re-import the
caller's ``__main__``, which a script without an ``if __name__ == "__main__"``
guard does not survive.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

import anyio
import anyio.to_thread
import attrs

__all__ = ["LoggedRequest", "VendorGone", "VendorProcess", "endpoint_of_path"]

_START_TIMEOUT = 60.0
_STOP_TIMEOUT = 10.0
#: How long a child is given to stop by itself when the block is left by an exception (Ctrl-C, a cancellation,
#: a hung child): then it is killed.  The caller is giving up; ten seconds more would only hold Ctrl-C back.
_ABORT_TIMEOUT = 1.0
#: How often a wait for the child's answer looks whether it came (a wait that must stay cancellable).
_POLL_INTERVAL = 0.02
#: How long the child may take to hand over its request log once its answers settled (a thousand agents'
#: log is about a megabyte of JSON: well under a second on an idle machine).
_LOG_TIMEOUT = 60.0
#: The request headers the log keeps (the demo's own stamps; never a credential).
KEPT_HEADERS = ("x-demo-sent-at", "x-demo-run")
#: First match wins: Azure's paths before the OpenAI ones they end like.
_ENDPOINTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^/openai/(?:deployments/[^/]+/chat/completions|v1/responses)$"), "azure-openai"),
    (re.compile(r"/chat/completions$"), "openai"),
    (re.compile(r"/responses$"), "openai-responses"),
    (re.compile(r"/v1/messages$"), "anthropic"),
    (re.compile(r"/publishers/anthropic/models/[^/]+:(?:rawPredict|streamRawPredict)$"), "anthropic-vertex"),
    (re.compile(r"/publishers/google/models/[^/]+:"), "gemini-vertex"),
    (re.compile(r"/v1beta/models/"), "gemini"),
    (re.compile(r"^/model/[^/]+/converse(?:-stream)?$"), "bedrock"),
)


def endpoint_of_path(path: str) -> str:
    """Which endpoint a request path belongs to (``unknown`` for anything else): the demo's member names."""
    route = path.split("?", 1)[0]  # the fake records Azure's api-version with the path
    return next((name for pattern, name in _ENDPOINTS if pattern.search(route)), "unknown")


@attrs.frozen(slots=True)
class LoggedRequest:
    """One request the fake vendor received, as its log reports it (no body, no credentials).

    ``wire`` is the fake's wire (``openai`` for an Azure chat deployment too); ``endpoint`` the
    endpoint the path names (:func:`endpoint_of_path`).
    """

    index: int
    wire: str
    path: str
    model: str | None
    stream: bool
    status: int | None
    outcome: str
    fault: str | None
    disconnected: bool
    headers: Mapping[str, str] = attrs.field(factory=dict)
    endpoint: str = "unknown"


class VendorGone(RuntimeError):
    """The fake vendor's child process ended while the parent still needed it (killed, crashed).

    A ``RuntimeError``, as every vendor failure :func:`agentactors._demo.main.run_fleet` documents, and
    saying how the child ended: a bare ``BrokenPipeError`` from a pipe write says nothing a user can act on.
    """


def _how_it_ended(returncode: int | None) -> str:
    """``killed by SIGKILL`` / ``exited with status 1``: the child's end, for a message."""
    if returncode is None:
        return "stopped answering"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with status {returncode}"


def _reader(process: subprocess.Popen[str]) -> tuple[threading.Thread, list[str]]:
    """A started daemon thread reading the child's next stdout line (``""`` at its end) into the list.

    A thread: a child that hangs (stopped, deadlocked) must not hold its parent forever.  It ends when the
    child does (its stdout closes), which stopping it ensures.
    """
    got: list[str] = []
    stdout = process.stdout
    assert stdout is not None
    reader = threading.Thread(target=lambda: got.append(stdout.readline()), daemon=True)
    reader.start()
    return reader, got


def _readline(process: subprocess.Popen[str], timeout: float) -> str | None:
    """The child's next stdout line (``""`` at its end), or ``None`` when none came within ``timeout`` seconds."""
    reader, got = _reader(process)
    reader.join(timeout)
    return got[0] if got else None


async def _areadline(process: subprocess.Popen[str], within: float) -> str | None:
    """:func:`_readline` for the event loop (``None``: no line ``within`` seconds), and cancellable at once
    (Ctrl-C while a hung child is awaited).

    The wait looks every few hundredths of a second whether the reader has its line, rather than joining it
    in a worker thread: a worker thread cannot be interrupted, and one abandoned to a cancellation would
    hold the interpreter's exit until the line came or the bound ran out; nor is an ``anyio.Event`` set from
    the reader, which may end after the event loop has.
    """
    reader, got = _reader(process)
    with anyio.move_on_after(within):
        while reader.is_alive():  # noqa: ASYNC110 - a thread's end, not a task's
            await anyio.sleep(_POLL_INTERVAL)
    return got[0] if got else None


def _logged(r: Any) -> dict[str, Any]:
    return {
        "index": r.index, "wire": r.wire, "path": r.path, "model": r.model, "stream": r.stream,
        "status": r.status, "outcome": r.outcome, "fault": r.fault, "disconnected": r.disconnected,
        "headers": {k: r.headers[k] for k in KEPT_HEADERS if k in r.headers},
        "endpoint": endpoint_of_path(r.path),
    }


def _model(spec: str | None) -> Any:
    """The child's model: the demo's own, or ``"module:function"`` (a test's, e.g. the fault soak's)."""
    if not spec:
        from .tasks import fake_model

        return fake_model
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def _child(config: Mapping[str, Any]) -> int:
    """The child's main: serve until told to stop or until stdin closes (the parent went away)."""
    from ..testing import FaultPlan
    from ..testing.fakevendor import FakeVendor

    fake_model = _model(config.get("model"))
    logging.basicConfig(level=logging.ERROR)
    plan = config.get("faults")
    faults = FaultPlan(**plan) if plan else None
    vendor = FakeVendor(
        latency=float(config["latency"]), faults=faults, record_bodies=False, expected_api_key=config["api_key"]
    )
    out = sys.stdout
    vendor.start()
    try:
        vendor.on(fake_model)
        out.write(json.dumps({"ready": vendor.base_url}) + "\n")
        out.flush()
        for line in sys.stdin:
            command = json.loads(line)
            if command["do"] == "outage":
                vendor.outage(wire=command["wire"], model=command.get("model"), duration=float(command["duration"]))
            elif command["do"] == "log":
                deadline = time.monotonic() + float(command["settle_within"])
                # An answer the client gave up on is recorded as disconnected a moment later.
                while any(r.outcome == "pending" for r in vendor.requests) and time.monotonic() < deadline:
                    time.sleep(0.02)
                out.write(json.dumps({"requests": [_logged(r) for r in vendor.requests], "stats": vendor.stats})
                          + "\n")
                out.flush()
            elif command["do"] == "stop":
                break
    finally:
        vendor.stop()
    return 0


class VendorProcess:
    """A FakeVendor in a child process (see the module docstring).

    ``async with VendorProcess(faults=..., latency=..., api_key=...) as vendor``
    starts it (``vendor.base_url``); :meth:`outage` opens an outage window
    without waiting for the child; :meth:`log` fetches the recorded requests and
    the stats; leaving the block stops the child (terminating it if it does not
    stop in time).  ``faults`` is a :class:`~agentactors.testing.FaultPlan`
    or ``None``; the API key is handed to the child on its stdin, never on its command line.
    ``model`` names another fake model, ``"module:function"`` importable by the child (the
    reliability suite's fault soak brings its own); ``None`` is the demo's.

    Errors: a child that fails to start raises ``RuntimeError`` with the end of
    its stderr.  Starting and stopping block a worker thread, never the event
    loop, and are shielded from cancellation so that no child is left behind.
    """

    def __init__(self, *, faults: Any, latency: float, api_key: str, model: str | None = None) -> None:
        plan = None
        if faults is not None:
            plan = {
                "rate": faults.rate, "seed": faults.seed, "weights": {k.value: v for k, v in faults.weights.items()},
                "retry_after": faults.retry_after, "hang": faults.hang, "cut_after": faults.cut_after,
                "wires": sorted(faults.wires) if faults.wires is not None else None,
                "models": sorted(faults.models) if faults.models is not None else None,
            }
        self._config = {"faults": plan, "latency": latency, "api_key": api_key, "model": model}
        self._process: subprocess.Popen[str] | None = None
        self._stderr: IO[str] | None = None
        self._lock = threading.Lock()
        self.base_url = ""

    def _start(self) -> None:
        # Kept open for the child's lifetime (closed by _stop) so that a failure can quote it.
        stderr = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115
        # The child imports this very package, wherever the parent found it: the directory that holds
        # ``agentactors/`` (never the package's own directory, whose ``_json.py`` would shadow the standard
        # library's C accelerator of that name in the child).
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        process = subprocess.Popen(
            [sys.executable, "-m", "agentactors._demo.vendor"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True, encoding="utf-8", env=env,
        )
        assert process.stdin is not None and process.stdout is not None
        self._process, self._stderr = process, stderr
        process.stdin.write(json.dumps(self._config) + "\n")
        process.stdin.flush()
        line = _readline(process, _START_TIMEOUT)
        if not line:
            try:  # "": it ended (killed, crashed), say how; None: it is still starting, past the bound
                ended: int | None = process.wait(_STOP_TIMEOUT) if line is not None else None
            except subprocess.TimeoutExpired:
                ended = None
            how = (f"it ended ({_how_it_ended(ended)}) before it was ready" if ended is not None
                   else f"not ready within {_START_TIMEOUT:g} s")
            tail = self._stderr_tail()  # before stopping: that closes the file
            self._stop()
            raise RuntimeError(f"the fake vendor process did not start: {how}: {tail}")
        self.base_url = str(json.loads(line)["ready"])

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return "(no stderr)"
        self._stderr.seek(0)
        return self._stderr.read()[-2000:] or "(empty stderr)"

    def _send(self, command: Mapping[str, Any]) -> None:
        process = self._process
        if process is None or process.stdin is None:
            raise RuntimeError("the fake vendor process is not running")
        with self._lock:
            try:
                process.stdin.write(json.dumps(command) + "\n")
                process.stdin.flush()
            except (OSError, ValueError) as exc:  # a closed pipe: the child is gone
                raise self._gone(process) from exc

    def _gone(self, process: subprocess.Popen[str]) -> VendorGone:
        """The error for a child that went away, with how it ended and the end of its stderr."""
        try:
            returncode = process.wait(_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            returncode = None
        return VendorGone(f"the fake vendor process ended ({_how_it_ended(returncode)}): {self._stderr_tail()}")

    @property
    def pid(self) -> int | None:
        """The child's process id while it is this object's (``None`` before the start and after the stop)."""
        process = self._process
        return process.pid if process is not None else None

    @property
    def returncode(self) -> int | None:
        """The child's exit status once it ended by itself (negative: the signal that killed it), else ``None``."""
        process = self._process
        return process.poll() if process is not None else None

    def _stop(self, timeout: float = _STOP_TIMEOUT) -> None:
        """Ask the child to stop; kill it when it has not within ``timeout`` seconds."""
        process, self._process = self._process, None
        if process is not None:
            try:
                if process.stdin is not None:
                    process.stdin.write(json.dumps({"do": "stop"}) + "\n")
                    process.stdin.close()
            except (OSError, ValueError):
                pass  # it is gone already
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                # SIGKILL, not SIGTERM: a stopped (or hung in C) child never acts on SIGTERM, and the fake
                # vendor has nothing to clean up that SIGTERM would have let it.
                process.kill()
                process.wait(_STOP_TIMEOUT)
            if process.stdout is not None:
                process.stdout.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    async def __aenter__(self) -> VendorProcess:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._start)
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        # Left by an exception (Ctrl-C, a cancellation, a hung child's VendorGone), the caller is giving up:
        # the child gets a second, not ten, so that Ctrl-C takes effect at once even on a hung child.
        timeout = _STOP_TIMEOUT if exc_type is None else _ABORT_TIMEOUT
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._stop, timeout)

    def outage(self, *, wire: str, duration: float, model: str | None = None) -> None:
        """Fail every request to ``wire`` (and ``model``, if given) for ``duration`` seconds from now.

        A pipe write; no waiting.  Raises :class:`VendorGone` when the child has ended.
        """
        self._send({"do": "outage", "wire": wire, "model": model, "duration": duration})

    async def log(
        self, *, settle_within: float = 3.0, answer_within: float = _LOG_TIMEOUT
    ) -> tuple[tuple[LoggedRequest, ...], dict[str, Any]]:
        """``(requests, stats)``: every request the vendor recorded, oldest first, and its counters.

        Waits up to ``settle_within`` seconds for answers still in progress to settle, and
        ``answer_within`` more for the log.  Raises :class:`VendorGone` when the child has ended
        (killed, crashed) instead of answering, or did not answer in time (hung, stopped): leaving
        the block then ends it.  The wait is cancellable at once (Ctrl-C does not wait out the bound).
        """
        process = self._process
        if process is None or process.stdout is None:
            raise RuntimeError("the fake vendor process is not running")
        await anyio.to_thread.run_sync(self._send, {"do": "log", "settle_within": settle_within})
        try:
            line = await _areadline(process, settle_within + answer_within)
        except (OSError, ValueError) as exc:
            raise await anyio.to_thread.run_sync(self._gone, process) from exc
        if line is None:
            raise VendorGone(
                f"the fake vendor process stopped answering: no request log within {settle_within + answer_within:g} s"
            )
        if not line:
            raise await anyio.to_thread.run_sync(self._gone, process)
        reply = json.loads(line)
        return tuple(LoggedRequest(**r) for r in reply["requests"]), dict(reply["stats"])


def main() -> int:
    """Entry of the child process: the first stdin line is its configuration."""
    config = json.loads(sys.stdin.readline())
    return _child(config)


if __name__ == "__main__":
    sys.exit(main())
