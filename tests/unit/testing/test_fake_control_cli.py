"""``python -m agentactors fakevendor``: the class's options as flags, and the control API, from another process.

What a Go/Node suite does: start the command, read the base URL from its first line, steer it over HTTP.
"""

from __future__ import annotations

import argparse
import signal
import sys

import httpx
import pytest

from agentactors.testing.fakevendor import add_arguments
from tests.support.fakevendor import command_line

KEY = "test-key-cli-0123456789"
CHAT = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}


def parser() -> argparse.ArgumentParser:
    out = argparse.ArgumentParser(prog="fakevendor")
    add_arguments(out)
    return out


def test_the_flags_mirror_the_class_and_bad_values_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    args = parser().parse_args(["--expected-api-key", KEY, "--chunk-latency", "0.05", "--max-records", "10",
                                "--no-record-bodies", "--no-control"])
    assert (args.expected_api_key, args.chunk_latency, args.max_records) == (KEY, 0.05, 10)
    assert (args.no_record_bodies, args.no_control) == (True, True)
    defaults = parser().parse_args([])
    assert (defaults.expected_api_key, defaults.chunk_latency, defaults.max_records) == (None, 0.0, 1000)
    for bad in (["--expected-api-key", ""], ["--max-records", "-1"], ["--chunk-latency", "nan"]):
        with pytest.raises(SystemExit) as exited:
            parser().parse_args(bad)
        assert exited.value.code == 2
    assert "invalid" in capsys.readouterr().err


def test_help_lists_the_control_api() -> None:
    text = parser().format_help()
    for line in ("POST   /_fakevendor/script", "GET    /_fakevendor/requests", "POST   /_fakevendor/reset",
                 '{"error": {"status", "message", "code",'):
        assert line in text


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT delivery to a child differs on Windows")
def test_a_started_command_is_steered_over_http_and_checks_its_key() -> None:
    with command_line("-m", "agentactors", "fakevendor", "--port", "0", "--expected-api-key", KEY,
                      "--max-records", "5") as (proc, base):
        assert base.startswith("http://127.0.0.1:"), base
        with httpx.Client(base_url=base, timeout=60) as client:
            queued = client.post("/_fakevendor/script", json={"items": [
                {"error": {"status": 429, "retry_after": 3}}, {"reply": {"text": "fine"}}], "wire": "openai"})
            assert queued.json() == {"queued": 2, "pending_script": 2}
            wrong = client.post("/v1/chat/completions", json=CHAT, headers={"authorization": "Bearer sk-other-12345"})
            assert wrong.status_code == 401  # the key is checked before the script is used
            limited = client.post("/v1/chat/completions", json=CHAT, headers={"authorization": f"Bearer {KEY}"})
            assert (limited.status_code, limited.reason_phrase, limited.headers["retry-after"]) == (
                429, "Too Many Requests", "3")
            fine = client.post("/v1/chat/completions", json=CHAT, headers={"authorization": f"Bearer {KEY}"})
            assert fine.json()["choices"][0]["message"]["content"] == "fine"
            records = client.get("/_fakevendor/requests").json()["requests"]
            # The command records bodies (the control API reads them back), the key redacted.
            assert [(r["status"], r["body"]) for r in records] == [(401, CHAT), (429, CHAT), (200, CHAT)]
            assert KEY not in str(records)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
        assert proc.stderr is not None
        banner = proc.stderr.read()
        assert f"control API {base}/_fakevendor" in banner and "API key checked" in banner and KEY not in banner
