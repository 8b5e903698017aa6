"""``demo --live`` whose every run fails says why, not only how many failed and of what kind.

A new user's first ``--live`` run with a mistyped base URL, no route to the vendor or a refused key used to end on
"failed 3 (AllProvidersFailedError transient 3)" and "No run ended on an answer": the vendor's own words (what the
key or the connection was refused with) were in the event record only.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from agentactors.__main__ import main

KEY = "sk-trial-readme-live-0123456789"


def refused_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_live_demo_whose_runs_all_fail_prints_what_the_first_failure_said(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for var in ("ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    port = refused_port()
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    code = main(["demo", "--live", "--no-progress", "--backend", backend, "--record", str(tmp_path / "r.jsonl")])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "No run ended on an answer" in out
    (said,) = [line for line in out.splitlines() if line.startswith("  the first failure: ")]
    assert "ConnectError" in said and "openai" in said, said  # the words vary with the backend's connector
    assert KEY not in out
    assert "× 1 vendor ×" in out, "the request bound's sentence: one vendor, not '1 vendors'"
