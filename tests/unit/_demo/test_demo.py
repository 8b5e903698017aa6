"""The demo (``python -m agentactors demo``): at small scale on both backends, its live mode, and its parts.

The end-to-end tests run the real command against the fake vendor on
127.0.0.1 (real sockets, real clock) and check its claims from the JSONL record
it writes, with code independent of the demo's own report: every ok run quotes
its own tool results, no request reached the primary while its breaker was
open, and the API key appears nowhere.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from agentactors.__main__ import main
from agentactors._demo.chain import (
    DemoSettings,
    VendorSpec,
    build_chain,
    fake_endpoint,
    live_members,
    offline_members,
    request_bound,
)
from agentactors._demo.fleet import CANARY_PREFIX
from agentactors._demo.report import open_intervals, percentile
from agentactors._demo.tasks import (
    CURRENCIES,
    answer_quotes_results,
    fake_model,
    make_catalogue,
    make_tasks,
    make_tools,
)
from agentactors._demo.vendor import endpoint_of_path
from agentactors.errors import ProviderError
from agentactors.events import Event
from agentactors.messages import LLMRequest, Message
from agentactors.testing._fake_script import (
    Conversation,
    FakeReply,
    FakeToolCall,
    RecordedRequest,
    SeenToolCall,
    SeenToolResult,
)

KEY_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")
SECTIONS = ("Runs", "Resilience", "Traffic", "One run, explained")


def _load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _first_paragraph(text: str) -> str:
    return text.split("\n\n", 1)[0].strip()


def _check_record(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Recompute the demo's claims from its record alone; returns the summary line's report."""
    assert records[-1]["type"] == "demo.summary"
    report = records[-1]["report"]
    last_request: dict[str, dict[str, Any]] = {}
    finished: dict[str, dict[str, Any]] = {}
    for r in records:
        if r["type"] == "llm.request":
            last_request[r["run_id"]] = r["request"]
        elif r["type"] == "run.finished":
            finished[r["run_id"]] = r
    ok_runs = [
        f for f in finished.values()
        if f.get("error") is None and not f.get("bounded") and not f.get("generation_failed") and "content" in f
    ]
    assert ok_runs
    for f in ok_runs:
        results = [
            _first_paragraph(m["content"]) for m in last_request[f["run_id"]]["messages"] if m["role"] == "tool"
        ]
        assert len(results) == 2, f["run_id"]
        for text in results:
            assert text in f["content"], (f["run_id"], text, f["content"])

    # Primary calls while its breaker was open: the breaker's open intervals vs the send time
    # stamped on every request the fake vendor received for the primary.
    opened: list[tuple[float, float]] = []
    start: float | None = None
    for r in records:
        if r["type"] != "breaker.state_changed" or r["key"][0] != "openai":
            continue
        if r["to_state"] == "open" and start is None:
            start = r["time"]
        elif r["from_state"] == "open" and start is not None:
            opened.append((start, r["time"]))
            start = None
    if start is not None:
        opened.append((start, math.inf))
    # By endpoint: an Azure deployment's requests speak the primary's wire, and are not the primary's.
    primary = [r for r in records if r["type"] == "vendor.request" and r["endpoint"] == "openai"]
    assert primary
    sent = [float(r["headers"]["x-demo-sent-at"]) for r in primary]
    assert sum(1 for t in sent if any(a <= t < b for a, b in opened)) == 0
    assert report["primary_calls_while_open"] == 0
    assert report["primary_calls"] == len(primary)
    return dict(report)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_demo_small_scale_end_to_end(
    backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in KEY_VARS:
        monkeypatch.delenv(var, raising=False)
    record = tmp_path / "events.jsonl"
    code = main([
        "demo", "--agents", "30", "--fault-rate", "0.3", "--seed", "11", "--record", str(record),
        "--backend", backend, "--no-progress",
    ])
    out = capsys.readouterr().out
    assert code == 0, out
    for title in SECTIONS:
        assert title in out
    for label in ("run latency p50 / p99", "retries", "failovers by reason", "breaker transitions", "tokens",
                  "requests per vendor", "primary calls while its breaker was open  0 ✓", "the request that "
                  "produced the answer", "tool results it saw", f"backend {backend}", str(record)):
        assert label in out, label
    records = _load(record)
    report = _check_record(records)
    assert report["agents"] == 30
    assert report["ok"] + report["failed"] + report["bounded"] == 30
    assert report["verified"] == report["ok"] >= 24
    assert report["breaker_opens"] >= 1, "the outage must open the primary's breaker"
    assert report["failovers"], "runs must have failed over"
    assert report["requests_by_vendor"]["anthropic"] > 0
    # The chain spans at least five endpoints, every one reached over its own route.
    endpoints = {r["endpoint"] for r in records if r["type"] == "vendor.request"}
    assert {"openai", "openai-responses", "azure-openai", "anthropic", "gemini-vertex"} <= endpoints
    assert "unknown" not in endpoints
    assert "6 endpoints: openai, openai-responses, azure-openai, anthropic, gemini-vertex, bedrock" in out
    assert "bedrock" in endpoints and set(report["requests_by_vendor"]) == endpoints
    assert report["tokens"]["input_tokens"] > 0
    assert report["explanation"] is not None
    # The canary key never leaves the HTTP headers: not in the output, not in the record.
    assert CANARY_PREFIX not in out
    assert CANARY_PREFIX not in record.read_text(encoding="utf-8")


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_demo_runs_finish_from_the_first_seconds_not_all_at_the_end(backend: str, tmp_path: Path) -> None:
    """The ProviderActor serves the oldest run first: early runs finish while later ones still wait.

    Read from the record (each run's run.started / run.finished times), relative to the fleet's
    wall time — never an absolute speed.  Served in arrival order instead, every run's second call
    queues behind every other run's first: measured at this scale, the first tenth of the runs
    finished at 0.67–0.80 of the wall with ``scheduling="fifo"``, at 0.18–0.23 with the default — and at
    0.46 once with four test processes on two cores: the bound is 0.5, between the two.
    """
    from agentactors._demo.main import run_fleet_sync

    agents = 160
    record = tmp_path / "events.jsonl"
    # No faults and no outage: the order runs finish in is the scheduler's, not the vendor's.
    report = run_fleet_sync(agents=agents, fault_rate=0.0, seed=5, outage=False, record=str(record), backend=backend)
    assert report.ok == agents
    records = _load(record)
    started = [r["time"] for r in records if r["type"] == "run.started"]
    finished = sorted(r["time"] for r in records if r["type"] == "run.finished")
    assert len(started) == len(finished) == agents
    begin, end = min(started), max(finished)
    wall = end - begin
    assert wall > 0
    tenth = finished[math.ceil(agents / 10) - 1]
    assert (tenth - begin) / wall < 0.5, f"the first 10% of runs finished at {(tenth - begin) / wall:.0%} of the wall"


def test_live_refuses_without_a_key(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                    tmp_path: Path) -> None:
    for var in KEY_VARS:
        monkeypatch.delenv(var, raising=False)
    record = tmp_path / "never.jsonl"
    code = main(["demo", "--live", "--no-progress", "--record", str(record)])
    captured = capsys.readouterr()
    assert code == 2
    # A usage error: on stderr, where `make demo ARGS=--live > out.txt` still shows it.
    assert "no API key found" in captured.err and "OPENAI_API_KEY" in captured.err
    assert captured.out == ""
    assert not record.exists()


def test_live_mode_against_a_local_vendor(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``--live`` takes its vendors from the environment; pointed at a loopback FakeVendor it runs offline."""
    from agentactors.testing.fakevendor import FakeVendor

    key = "sk-live-test-" + "7" * 24
    for var in KEY_VARS:
        monkeypatch.delenv(var, raising=False)
    with FakeVendor(expected_api_key=key, record_bodies=False) as fv:
        fv.on(fake_model)
        monkeypatch.setenv("OPENAI_API_KEY", key)
        monkeypatch.setenv("OPENAI_BASE_URL", fv.openai_base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", key)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fv.base_url)
        record = tmp_path / "live.jsonl"
        code = main(["demo", "--live", "--no-progress", "--record", str(record)])
        served = fv.requests
    out = capsys.readouterr().out
    assert code == 0, out
    bound = request_bound(3, 2, DemoSettings())
    assert f"at most {bound:,} requests" in out
    # Three agents by default, no injected faults: three model calls each, all to the primary.
    assert len(served) == 9
    assert {r.wire for r in served} == {"openai"}
    assert all(r.outcome == "ok" for r in served)
    text = record.read_text(encoding="utf-8")
    assert key not in out and key not in text
    report = _load(record)[-1]["report"]
    assert report["ok"] == 3 and report["live"] is True and report["primary_calls_while_open"] == 0


def test_live_members_reads_keys_models_and_urls_from_the_environment() -> None:
    env = {
        "ANTHROPIC_API_KEY": "a-key-123456",
        "GOOGLE_API_KEY": "g-key-123456",
        "AGENTACTORS_DEMO_GEMINI_MODEL": "gemini-x",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
    }
    specs = live_members(env)
    assert [(s.wire, s.model, s.base_url) for s in specs] == [
        ("anthropic", "claude-3-5-haiku-latest", "http://127.0.0.1:9"),
        ("gemini", "gemini-x", "https://generativelanguage.googleapis.com"),
    ]
    assert "a-key-123456" not in repr(specs)
    assert live_members({}) == []


def test_request_bound_is_every_step_times_every_member_times_every_attempt() -> None:
    s = DemoSettings(max_steps=6, max_attempts=3)
    assert request_bound(3, 3, s) == 3 * 6 * 3 * 3 * 2
    assert request_bound(3, 1, s, reruns=False) == 3 * 6 * 3


# --- the task and the fake model ----------------------------------------------------------------------


def _request(conv: Conversation) -> RecordedRequest:
    return RecordedRequest(
        index=1, wire="openai", method="POST", path="/v1/chat/completions", model="m", stream=False, body=None,
        body_size=0, headers={}, api_key_present=True, conversation=conv,
    )


def test_fake_model_calls_both_tools_then_quotes_their_results() -> None:
    question = "How much does an umbrella cost in JPY? Look up its price in US dollars, then convert it."
    first = fake_model(_request(Conversation(last_user_text=question)))
    assert first == FakeToolCall("lookup_price", {"item": "umbrella"})
    price = "12.50 USD (list price of an umbrella)"
    second = fake_model(_request(Conversation(
        last_user_text=question,
        tool_calls=(SeenToolCall("c1", "lookup_price", {"item": "umbrella"}),),
        tool_results=(SeenToolResult("c1", None, price),),  # the OpenAI wire carries no name: found by id
    )))
    assert second == FakeToolCall("convert_currency", {"amount": 12.5, "currency": "JPY"})
    converted = "12.50 USD = 1892.50 JPY"
    answer = fake_model(_request(Conversation(
        last_user_text=question,
        tool_calls=(SeenToolCall("c1", "lookup_price"), SeenToolCall("c2", "convert_currency")),
        tool_results=(SeenToolResult("c1", "lookup_price", price),
                      SeenToolResult("c2", "convert_currency", converted + "\n\nNote: a loop nudge")),
    )))
    assert isinstance(answer, FakeReply)
    assert price in answer.text and converted in answer.text and "Note" not in answer.text
    assert fake_model(_request(Conversation(last_user_text="Hello"))) is None


def test_tasks_vary_with_the_seed_and_the_tools_compute_the_expected_results() -> None:
    catalogue = make_catalogue(3)
    tasks = make_tasks(50, 3, catalogue)
    assert len({(t.item, t.currency) for t in tasks}) > 20
    assert make_tasks(50, 3, catalogue) == tasks
    assert make_catalogue(4) != catalogue
    lookup, convert = make_tools(catalogue)
    task = tasks[0]

    async def call() -> tuple[Any, Any]:
        return await lookup.fn(task.item), await convert.fn(task.price, task.currency.lower())

    price, converted = anyio.run(call)
    assert (price, converted) == task.expected_results
    assert converted.endswith(f"{task.price * CURRENCIES[task.currency]:.2f} {task.currency}")


def test_answer_quotes_results_needs_both_results_verbatim() -> None:
    messages = [Message.user("q"), Message.tool("c1", "1.00 USD (list price of a kettle)\n\nNote: x"),
                Message.tool("c2", "1.00 USD = 0.92 EUR")]
    assert answer_quotes_results("1.00 USD (list price of a kettle) and 1.00 USD = 0.92 EUR", messages)
    assert not answer_quotes_results("1.00 USD (list price of a kettle) and 0.92 EUR", messages)
    assert not answer_quotes_results("1.00 USD = 0.92 EUR", messages[:2] + messages[2:3][:0])


# --- the report's arithmetic ---------------------------------------------------------------------------


def _changed(t: float, frm: str, to: str, key: Any = ("openai", "m")) -> Event:
    return Event("breaker.state_changed", time=t, data={"key": key, "from_state": frm, "to_state": to})


def test_open_intervals_follow_the_state_changes_of_one_key() -> None:
    events = [
        _changed(1.0, "closed", "open"),
        _changed(1.2, "closed", "open", key=("anthropic", "m")),
        _changed(1.5, "open", "half_open"),
        _changed(1.6, "half_open", "open"),
        _changed(2.6, "open", "half_open"),
        _changed(2.7, "half_open", "closed"),
        _changed(3.0, "closed", "open"),
    ]
    assert open_intervals(events, ("openai", "m"), end=9.0) == [(1.0, 1.5), (1.6, 2.6), (3.0, 9.0)]
    assert open_intervals(events, ("gemini", "m")) == []


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0
    assert percentile([3.0], 99) == 3.0
    assert math.isnan(percentile([], 50))


# --- the chain: the plain recommended stack keeps the demo's promise ---------------------------------------


def _mock_client(statuses: list[int], sent: list[float]) -> httpx.AsyncClient:
    """An HTTP client whose vendor answers the given statuses in turn (then 200), logging each request's time."""

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(anyio.current_time())
        status = statuses.pop(0) if statuses else 200
        if status != 200:
            return httpx.Response(status, json={"error": {"message": "overloaded", "type": "server_error"}})
        return httpx.Response(200, json={
            "id": "c1", "object": "chat.completion", "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "fine"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        })

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


@pytest.mark.anyio
@pytest.mark.virtual_time
async def test_a_member_sends_no_retry_once_its_breaker_opened_during_the_backoff() -> None:
    sent: list[float] = []
    settings = DemoSettings()
    async with _mock_client([503, 503, 503], sent) as client:
        chain, members = build_chain([VendorSpec("openai", "gpt-4o-mini", "http://vendor.test/v1", "sk-x")], client,
                                     settings)
        breaker = members[0].breaker

        async def open_it() -> None:
            await anyio.sleep(settings.base_delay / 2)  # other calls' failures opened it while this one waited
            breaker.force_open()

        async with anyio.create_task_group() as tg:
            tg.start_soon(open_it)
            with pytest.raises(ProviderError) as info:
                await chain.complete(LLMRequest([Message.user("hi")]))
    assert len(sent) == 1  # the second attempt was never sent
    assert info.value.exceptions[0].status == 503  # type: ignore[attr-defined]
    assert "forced open" in info.value.exceptions[0].__notes__[-1]  # type: ignore[attr-defined]


@pytest.mark.anyio
@pytest.mark.virtual_time
async def test_a_member_retries_as_usual_while_its_breaker_stays_closed() -> None:
    sent: list[float] = []
    async with _mock_client([503, 503], sent) as client:
        chain, _ = build_chain([VendorSpec("openai", "gpt-4o-mini", "http://vendor.test/v1", "sk-x")], client,
                                     DemoSettings())
        response = await chain.complete(LLMRequest([Message.user("hi")]))
    assert response.content == "fine"
    assert len(sent) == 3


def test_cli_help_lists_the_demo_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    out = capsys.readouterr().out
    for option in ("--agents", "--fault-rate", "--seed", "--record", "--live", "--backend", "--no-progress"):
        assert re.search(rf"{option}\b", out), option


# --- the endpoints ---------------------------------------------------------------------------------------


def test_the_offline_chain_spans_six_endpoints_each_told_apart_by_its_path() -> None:
    specs = offline_members("http://127.0.0.1:9", CANARY_PREFIX + "0" * 24)
    assert [s.wire for s in specs] == [
        "openai", "openai-responses", "azure-openai", "anthropic", "gemini-vertex", "bedrock",
    ]
    # The fake's wire and model of each: outages and faults keyed by them hit that member alone.
    assert len({fake_endpoint(s) for s in specs}) == len(specs)
    assert fake_endpoint(specs[2]) == ("openai", "demo-gpt-4o-mini")  # an Azure deployment: the primary's wire
    paths = {
        "/v1/chat/completions": "openai",
        "/v1/responses": "openai-responses",
        "/openai/deployments/demo-gpt-4o-mini/chat/completions?api-version=2024-10-21": "azure-openai",
        "/openai/v1/responses": "azure-openai",
        "/v1/messages": "anthropic",
        "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-x:streamRawPredict": "anthropic-vertex",
        "/v1/projects/p/locations/global/publishers/google/models/gemini-2.0-flash:generateContent": "gemini-vertex",
        "/v1beta/models/gemini-2.0-flash:streamGenerateContent": "gemini",
        "/model/us.amazon.nova-micro-v1%3A0/converse-stream": "bedrock",
        "/somewhere/else": "unknown",
    }
    assert {path: endpoint_of_path(path) for path in paths} == paths


@pytest.mark.anyio
async def test_every_offline_member_is_built_over_its_own_endpoint() -> None:
    specs = offline_members("http://vendor.test", CANARY_PREFIX + "1" * 24)
    seen: list[tuple[str, str]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((endpoint_of_path(request.url.path), request.headers.get("authorization", "")[:16]))
        return httpx.Response(503, json={"error": {"message": "down", "type": "server_error"}})

    settings = DemoSettings(max_attempts=1)
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        chain, members = build_chain(specs, client, settings)
        with pytest.raises(ProviderError):
            await chain.complete(LLMRequest([Message.user("hi")]))
    assert [m.wire for m in members] == [s.wire for s in specs]
    assert [endpoint for endpoint, _ in seen] == [s.wire for s in specs]
    auth = dict(seen)
    assert auth["gemini-vertex"].startswith("Bearer ") and auth["bedrock"].startswith("AWS4-HMAC-SHA256")


def test_without_botocore_the_chain_still_spans_five_endpoints(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "botocore", None)  # as if the [bedrock] extra were not installed
    specs = offline_members("http://127.0.0.1:9", CANARY_PREFIX + "2" * 24)
    assert [s.wire for s in specs] == ["openai", "openai-responses", "azure-openai", "anthropic", "gemini-vertex"]


@pytest.mark.parametrize("value", ["nan", "1.5", "-0.1", "inf", "lots"])
def test_demo_bad_numbers_are_a_usage_error_on_stderr(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    """argparse refuses them, as it refuses a bad --agents: the usage line and what was wrong, exit status 2."""
    with pytest.raises(SystemExit) as exited:
        main(["demo", "--fault-rate", value, "--no-progress"])
    captured = capsys.readouterr()
    assert exited.value.code == 2
    assert "usage:" in captured.err and "argument --fault-rate:" in captured.err
    assert ("within [0, 1]" if value != "lots" else "invalid float value") in captured.err
    assert captured.out == ""


def _no_fleet(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The agent counts the demo would have run: its fleet is replaced by one that records and refuses."""
    import agentactors._demo.main as demo_main

    asked: list[int] = []

    async def refuse(*, agents: int, **kwargs: Any) -> Any:
        asked.append(agents)
        raise RuntimeError("no fleet in this test")

    monkeypatch.setattr(demo_main, "run_fleet", refuse)
    return asked


@pytest.mark.parametrize("batch", [False, True])
@pytest.mark.parametrize("value", ["0", "-5", "10001", str(10**9)])
def test_an_agent_count_out_of_bounds_is_an_argparse_usage_error(
    value: str, batch: bool, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``--agents 1000000000`` set about building a billion agents (and their tasks, and their record)."""
    asked = _no_fleet(monkeypatch)
    import agentactors._demo.batch as batch_demo

    monkeypatch.setattr(batch_demo, "run_jobs", None)  # called, it fails the test: TypeError
    with pytest.raises(SystemExit) as ended:
        main(["demo", "--agents", value, "--no-progress", *(["--batch"] if batch else
                                                            ["--record", str(tmp_path / "r.jsonl")])])
    captured = capsys.readouterr()
    assert ended.value.code == 2
    assert "usage: python -m agentactors demo" in captured.err
    assert f"error: argument --agents: must be between 1 and 10,000, not {value}" in captured.err
    assert captured.out == "" and asked == []


def test_the_largest_agent_count_is_accepted(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    asked = _no_fleet(monkeypatch)
    assert main(["demo", "--agents", "10000", "--no-progress", "--record", str(tmp_path / "r.jsonl")]) == 1
    assert asked == [10_000]
    assert "no fleet in this test" in capsys.readouterr().err


@pytest.mark.parametrize("where", ["under_a_file", "a_directory"])
def test_an_unwritable_record_path_is_a_usage_error_before_the_run(
    where: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Checked before the fleet runs: not a traceback after it (a read-only directory, a typo'd path)."""
    (tmp_path / "file").write_text("not a directory", encoding="utf-8")
    record = tmp_path / "file" / "events.jsonl" if where == "under_a_file" else tmp_path
    code = main(["demo", "--agents", "1", "--no-progress", "--record", str(record)])
    captured = capsys.readouterr()
    assert code == 2
    assert f"demo: cannot write the event record to {record}" in captured.err
    assert captured.out == ""  # refused before the header: nothing ran


def test_checking_the_record_path_leaves_no_file_behind(tmp_path: Path) -> None:
    from agentactors._demo.main import record_problem

    fresh, kept = tmp_path / "new" / "events.jsonl", tmp_path / "kept.jsonl"
    kept.write_text("an earlier record\n", encoding="utf-8")
    assert record_problem(str(fresh)) is None and record_problem(str(kept)) is None
    assert not fresh.exists()
    assert kept.read_text(encoding="utf-8") == "an earlier record\n"


def test_a_record_that_cannot_be_written_after_the_run_is_a_message_and_exit_1(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Writable when checked, not once the runs ended (here: a directory took its name meanwhile; a full disk)."""
    import agentactors._demo.main as demo_main
    from agentactors._demo.view import PlainView

    record = tmp_path / "events.jsonl"

    class TakenMeanwhile(PlainView):
        def start(self, total: int) -> None:
            record.mkdir()

    monkeypatch.setattr(demo_main, "make_view", lambda **_: TakenMeanwhile(progress=False))
    code = main(["demo", "--agents", "2", "--no-progress", "--record", str(record)])
    captured = capsys.readouterr()
    assert code == 1
    assert f"demo: cannot write the event record to {record}" in captured.err


def test_ctrl_c_while_the_summary_prints_exits_130_without_a_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Ctrl-C outside the runs (while the summary prints, while the demo's modules import) ends the command
    like Ctrl-C during them: exit 130, one line, no traceback."""
    import agentactors._demo.main as demo_main
    from agentactors._demo.view import PlainView

    class Interrupted(PlainView):
        def summary(self, report: object, footer: object) -> None:
            raise KeyboardInterrupt

    monkeypatch.setattr(demo_main, "make_view", lambda **_: Interrupted(progress=False))
    code = main(["demo", "--agents", "2", "--no-progress", "--record", str(tmp_path / "events.jsonl")])
    captured = capsys.readouterr()
    assert code == 130
    assert "interrupted" in captured.err


def test_cli_help_says_what_the_commands_do_in_plain_text(capsys: pytest.CaptureFixture[str]) -> None:
    """The help is read in a terminal: no reStructuredText markup, and what each option does and defaults to."""
    with pytest.raises(SystemExit):
        main(["--help"])
    top = capsys.readouterr().out
    assert "``" not in top and ":meth:" not in top and ":mod:" not in top
    assert "three-vendor" not in top and "three vendor wires" not in top  # six endpoints; every wire
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    demo = " ".join(capsys.readouterr().out.split())  # argparse wraps to the terminal's width
    assert "demo-events.jsonl" in demo  # where the record goes unless told
    assert "200 with --batch" in demo
    options = demo.split("options:", 1)[1]
    for option, says in (("--seed", "default 7"), ("--backend", "default asyncio"), ("--no-progress", "plain")):
        described = options.split(f" {option}", 1)[1].split(" --", 1)[0]  # up to the next option
        assert says in described, (option, described)


def test_a_fakevendor_usage_error_shows_the_fakevendor_usage(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["fakevendor", "--port", "0", "--certfile", str(tmp_path / "missing.pem")])
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert "python -m agentactors fakevendor: error: cannot load the certificate" in err, err
    assert "{demo,exchange" not in err  # not the top level's usage
