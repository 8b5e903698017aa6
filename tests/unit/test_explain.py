"""The explain API: the request that produced the answer, the tool results it consumed, the provider path —
live and from a JSONL record alike, and on the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentactors import (
    Explanation,
    InMemoryRecorder,
    JsonlRecorder,
    LLMRequest,
    Message,
    Runtime,
    ToolStatus,
    explain,
)
from agentactors.__main__ import main
from tests.support.scenario import ANSWER, REFUSED_SIZE, scenario_agent

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


async def recorded_run(path: Path) -> tuple[object, InMemoryRecorder]:
    recorder = InMemoryRecorder()
    with JsonlRecorder(path) as jsonl:
        async with Runtime(recorders=[recorder, jsonl]):
            result = await scenario_agent().run("What is the weather in Lisbon?")
    assert result.content == ANSWER
    return result, recorder


def check(explanation: Explanation) -> None:
    request = explanation.request
    assert isinstance(request, LLMRequest)
    assert all(isinstance(m, Message) for m in request.messages)
    # the exact request that produced the answer: the third model call, with both tool results in it
    assert [m.role for m in request.messages] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert request.messages[0].content == "Be brief."
    assert request.messages[1].content == "What is the weather in Lisbon?"
    assert [t.name for t in request.tools] == ["lookup", "dump"]
    assert request.messages[2].tool_calls[0].arguments == {"city": "Lisbon"}
    lookup, dump = explanation.tool_results
    assert (lookup.name, lookup.status, lookup.content) == ("lookup", ToolStatus.ok, "Lisbon: 21 °C, sunny")
    assert not lookup.refused
    assert (dump.name, dump.status, dump.refused) == ("dump", ToolStatus.invalid, True)
    assert dump.original_chars == REFUSED_SIZE
    assert dump.size_chars == len(dump.content) < REFUSED_SIZE
    assert explanation.answer == ANSWER and explanation.served_by == "secondary"
    assert explanation.served_model == "s-model-2025" and explanation.steps == 3 and explanation.agent == "weather"
    # the provider path: step 1 tried the primary twice (two 503s), failed over, and was served by the secondary
    first = explanation.path[0]
    assert first.tried == ("primary", "secondary")
    assert first.attempts == {"primary": 2, "secondary": 1}
    assert first.errors == {"transient": 2}
    assert first.failovers == ("primary → secondary (transient)",)
    assert first.served_by == "secondary"
    assert explanation.retries == 3 and explanation.failovers == ("primary → secondary (transient)",) * 3
    text = str(explanation)
    assert "the request that produced the answer (served by secondary, model s-model-2025)" in text
    assert "primary attempt 1 failed (ProviderError HTTP 503 transient)" in text
    assert f"dump [invalid, {REFUSED_SIZE:,} chars, refused]" in text
    assert "step 1: tried primary ×2, secondary ×1; errors: 2 transient" in text


async def test_explain_a_live_run(tmp_path: Path) -> None:
    result, recorder = await recorded_run(tmp_path / "events.jsonl")
    check(explain(result, recorder.events))  # type: ignore[arg-type]


async def test_explain_the_same_run_from_its_jsonl_record(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    result, recorder = await recorded_run(path)
    from_record = Explanation.from_jsonl(path, result.run_id)  # type: ignore[attr-defined]
    check(from_record)
    live = explain(result, recorder.events)  # type: ignore[arg-type]
    assert from_record.request == live.request, "the record carries all it takes to rebuild the request"
    assert from_record.tool_results[1] == live.tool_results[1]
    assert str(from_record).splitlines()[1:] == str(live).splitlines()[1:]


async def test_the_record_never_holds_a_refused_payload(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    await recorded_run(path)
    assert "x" * 200 not in path.read_text()


async def test_explain_needs_the_runs_events(tmp_path: Path) -> None:
    result, _ = await recorded_run(tmp_path / "events.jsonl")
    with pytest.raises(ValueError, match="no event of run"):
        explain(result, [])  # type: ignore[arg-type]
    with pytest.raises(LookupError, match="no event of run 'nope'"):
        Explanation.from_jsonl(tmp_path / "events.jsonl", "nope")


async def test_python_m_agentactors_explain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "events.jsonl"
    result, _ = await recorded_run(path)
    assert main(["explain", str(path), result.run_id]) == 0  # type: ignore[attr-defined]
    out = capsys.readouterr().out
    assert "the request that produced the answer (served by secondary" in out and ANSWER in out
    assert main(["explain", str(path), "nope"]) == 1
    assert "no event of run 'nope'" in capsys.readouterr().err
