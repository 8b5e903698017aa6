"""A canary key, and every way a run can fail with it: the canary appears nowhere a person or a tool could read.

Swept: every event the runs emit, every log record at DEBUG (every logger: httpx, httpcore,
aiohttp and ours), each error's traceback with its whole cause chain
(``traceback.format_exception``), reprs of results, errors and providers, a JsonlRecorder
file, and the JSONL of ``python -m agentactors demo`` run with the canary in the environment.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentactors import (
    Agent,
    InMemoryRecorder,
    JsonlRecorder,
    OpenAIProvider,
    RunResult,
    Runtime,
    with_circuit_breaker,
    with_fallback,
    with_retry,
)
from agentactors.providers.anthropic.provider import AnthropicProvider
from agentactors.testing import FakeError, FakeVendor
from tests.support.chains import chain_texts

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]

CANARY = "canary-SWEEP-9f8e7d6c5b4a39281706"  # not key-shaped: only registration can redact it


async def test_no_failure_shows_the_canary_anywhere(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    for name in ("httpx", "httpcore", "aiohttp", "asyncio", "agentactors", "hpack"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    memory = InMemoryRecorder()
    jsonl = tmp_path / "events.jsonl"
    seen: list[str] = []
    async with FakeVendor(expected_api_key=CANARY) as fv:
        # Vendor errors that echo the key back, on two wires.
        fv.script(*[FakeError(401, message=f"Incorrect API key provided: {CANARY}")] * 2, wire="openai")
        fv.script(*[FakeError(500, message=f"upstream failed for key {CANARY}")] * 20, wire="anthropic")
        echoing = OpenAIProvider("gpt-4o-mini", api_key=f"{CANARY}\n", base_url=fv.openai_base_url, name="echo")
        failing = AnthropicProvider("claude-x", api_key=CANARY, base_url=fv.base_url, name="failing")
        # A transport error (nothing listens on port 9) and a header the HTTP stack refuses.
        refused = OpenAIProvider("m", api_key=CANARY, base_url="http://127.0.0.1:9/v1", name="refused")
        bad_client = httpx.AsyncClient(headers={"x-trace": f"{CANARY}\n"})
        bad_header = OpenAIProvider("m", api_key=CANARY, base_url=fv.openai_base_url, http_client=bad_client,
                                    name="bad-header")
        # A breaker that opens, inside a fallback chain whose members all fail.
        breaker = with_circuit_breaker(with_retry(failing, max_attempts=2, base_delay=0.01), min_calls=2,
                                       consecutive_failures=2)
        chain = with_fallback(breaker, refused, echoing)
        recorder = JsonlRecorder(str(jsonl))
        async with Runtime(recorders=[memory, recorder]) as rt:
            for provider in (echoing, refused, bad_header, chain, chain, chain):
                result = await _run(rt, provider)
                seen += [repr(result), str(result.error)]
                if result.error is not None:
                    seen += chain_texts(result.error)
            for member in (echoing, failing, refused, bad_header):
                seen.append(repr(member))
                await member.aclose()
        await bad_client.aclose()
        recorder_close = getattr(recorder, "close", None)
        if recorder_close is not None:
            recorder_close()
    with pytest.raises(ValueError) as refused_key:
        OpenAIProvider("m", api_key=CANARY[:10] + "\n" + CANARY[10:])
    seen += chain_texts(refused_key.value)
    seen += [repr(e) for e in memory.events]
    seen.append(jsonl.read_text())
    for record in caplog.records:
        seen += [record.getMessage(), record.exc_text or "", caplog.handler.format(record)]
    assert caplog.records and memory.events and jsonl.stat().st_size > 0
    leaks = [t for t in seen if CANARY in t or CANARY[:10] + "\n" in t]
    assert not leaks, leaks[:3]


async def _run(rt: Runtime, provider: Any) -> RunResult:
    results = await rt.run_many(Agent(provider, nudges=False), ["hello"], concurrency=1)
    return results[0]


def test_the_demo_record_holds_no_canary(tmp_path: Path) -> None:
    record = tmp_path / "demo.jsonl"
    env = {**os.environ, "OPENAI_API_KEY": CANARY, "ANTHROPIC_API_KEY": CANARY, "GEMINI_API_KEY": CANARY}
    out = subprocess.run(
        [sys.executable, "-m", "agentactors", "demo", "--agents", "20", "--fault-rate", "0.3", "--seed", "3",
         "--record", str(record), "--no-progress"],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert record.stat().st_size > 0
    for text in (record.read_text(), out.stdout, out.stderr):
        assert CANARY not in text
