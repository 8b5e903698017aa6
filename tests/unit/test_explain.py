"""The explain API: the request that produced the answer, the tool results it consumed, the provider path —
live and from a JSONL record alike, and on the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentactors import (
    Agent,
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
from agentactors.errors import ProviderTimeoutError
from agentactors.explain import EventRecordError
from agentactors.providers.scripted import ScriptedProvider
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


# --- a run that fails at once; a record cut off or corrupted ------------------------------------------------


async def test_a_run_that_fails_on_its_first_model_call_shows_the_question_and_who_was_asked() -> None:
    recorder = InMemoryRecorder()
    provider = ScriptedProvider([ProviderTimeoutError("vendor timed out", provider="vendor")], name="vendor")
    result = await Agent(provider, recorders=[recorder]).run("What is the refund policy?")
    assert result.generation_failed
    explanation = explain(result, recorder.events)
    assert explanation.question == "What is the refund policy?"
    (step,) = explanation.path
    assert step.tried == ("vendor",) and step.attempts == {"vendor": 1} and step.served_by is None
    text = str(explanation)
    assert "asked: What is the refund policy?" in text
    assert "tried vendor ×1" in text and "tried nothing" not in text


async def test_a_cut_off_last_line_is_skipped_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    result, _ = await recorded_run(path)
    whole = path.read_text()
    lines = whole.count("\n")
    path.write_text(whole + whole.splitlines()[-1][:25])  # the writer was killed mid-line
    explanation = Explanation.from_jsonl(path, result.run_id)  # type: ignore[attr-defined]
    check(explanation)
    assert explanation.notes == (f"line {lines + 1} was skipped: the record ends in the middle of it (a crash?)",)
    assert f"note: line {lines + 1} was skipped" in str(explanation)


async def test_a_corrupt_line_elsewhere_is_a_typed_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    result, _ = await recorded_run(path)
    lines = path.read_text().splitlines()
    path.write_text("\n".join([*lines[:3], '{"type": "llm.request", "run_id": ', *lines[3:]]) + "\n")
    with pytest.raises(EventRecordError, match=r"line 4: not a JSON event record") as info:
        Explanation.from_jsonl(path, result.run_id)  # type: ignore[attr-defined]
    assert info.value.line == 4 and isinstance(info.value, ValueError)


@pytest.mark.parametrize("depth", [600, 100_000])
async def test_a_deeply_nested_line_is_a_clear_message_on_the_command_line(
    tmp_path: Path, depth: int, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "events.jsonl"
    result, _ = await recorded_run(path)
    run_id = result.run_id  # type: ignore[attr-defined]
    lines = path.read_text().splitlines()
    deep = f'{{"type": "llm.request", "run_id": "{run_id}", "request": {"[" * depth + "]" * depth}}}'
    path.write_text("\n".join([*lines[:2], deep, *lines[2:]]) + "\n")
    with pytest.raises(EventRecordError, match="line 3: the line nests deeper than"):
        Explanation.from_jsonl(path, run_id)
    assert main(["explain", str(path), run_id]) == 1  # what `python -m agentactors explain` returns: no traceback
    err = capsys.readouterr().err
    assert err.startswith(f"cannot explain run {run_id!r}")
    assert "line 3: the line nests deeper than 192 levels" in err
