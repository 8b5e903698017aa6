"""ToolExecutorActor: every outcome a status, results in call order, concurrency, timeouts, cancellation, events."""

import json
import threading
import time
from typing import Any

import anyio
import attrs
import pytest

from agentactors.errors import register_secret
from agentactors.events import Event, EventSink, InMemoryRecorder, JsonlRecorder, event_to_dict, use_sink
from agentactors.messages import ToolCall
from agentactors.tools import ResultCeiling, Tool, ToolContext, ToolResult, ToolStatus, tool, truncation_marker
from agentactors.tools.executor import ExecuteTools, ExecutionContext, ToolExecutorActor, execute_tools

pytestmark = pytest.mark.anyio

CANARY = "canary-7c1d2e3f4a5b6c7d"


def recording(run_id: str = "run-1") -> tuple[InMemoryRecorder, EventSink]:
    rec = InMemoryRecorder()
    return rec, EventSink([rec], run_id=run_id)


def serialised(events: list[Event]) -> str:
    return (
        "\n".join(json.dumps(event_to_dict(e), default=str) for e in events) + "\n" + "\n".join(repr(e) for e in events)
    )


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(hint="the id must be one of the ids listed by 'search'")
async def fetch(id: int) -> dict[str, Any]:
    """Fetch a record."""
    raise KeyError(f"no record {id}")


def call(call_id: str, name: str, /, **arguments: Any) -> ToolCall:
    return ToolCall(call_id, name, arguments)


# --- single calls --------------------------------------------------------------------------------


async def test_ok_result_and_events() -> None:
    rec, sink = recording()
    ex = ToolExecutorActor([add])
    with use_sink(sink):
        (result,) = await ex.receive(ExecuteTools([call("c1", "add", a=2, b=3)]))
    assert (result.call_id, result.name, result.status, result.content) == ("c1", "add", ToolStatus.ok, "5")
    assert result.size_chars == 1 and result.duration >= 0 and result.original_chars == 1
    assert rec.types == ["tools.started", "tools.finished"]
    started, finished = rec.events
    assert started.call_id == "c1" and started.name == "add" and started.run_id == "run-1"
    assert finished.status == ToolStatus.ok and finished.size == 1 and finished.duration == result.duration


async def test_empty_step_and_wrong_message() -> None:
    ex = ToolExecutorActor([add])
    assert await ex.receive(ExecuteTools([])) == ()
    with pytest.raises(TypeError, match="ExecuteTools"):
        await ex.receive("hello")  # type: ignore[arg-type]


async def test_scenario_5_unknown_tool_lists_the_available_ones() -> None:
    ex = ToolExecutorActor([add, fetch])
    (result,) = await ex.execute([call("c1", "serach", q="x")])
    assert result.status is ToolStatus.invalid
    assert "no tool named 'serach'" in result.content
    assert "Available tools: 'add', 'fetch'" in result.content
    assert "Hint" not in result.content


async def test_scenario_6_tool_raises_error_with_hint() -> None:
    ex = ToolExecutorActor([fetch])
    (result,) = await ex.execute([call("c1", "fetch", id=7)])
    assert result.status is ToolStatus.error
    assert result.content == "Error: KeyError: 'no record 7'\nHint: the id must be one of the ids listed by 'search'"
    assert "Traceback" not in result.content


async def test_hint_never_on_success_and_secrets_redacted_in_errors() -> None:
    register_secret(CANARY)

    @tool(hint="be nice")
    def leaky(fail: bool) -> str:
        if fail:
            raise RuntimeError(f"could not authenticate with {CANARY}")
        return "fine"

    ex = ToolExecutorActor([leaky])
    ok, err = await ex.execute([call("1", "leaky", fail=False), call("2", "leaky", fail=True)])
    assert ok.content == "fine" and "be nice" not in ok.content
    assert CANARY not in err.content and "[REDACTED]" in err.content and err.content.endswith("\nHint: be nice")


async def test_invalid_arguments_do_not_run_the_tool() -> None:
    ran: list[int] = []

    @tool(hint="ids are integers")
    async def get(id: int) -> str:
        ran.append(id)
        return "x"

    ex = ToolExecutorActor([get])
    (result,) = await ex.execute([call("1", "get", id="SEVEN-SECRET-VALUE")])
    assert result.status is ToolStatus.invalid and ran == []
    assert result.content.startswith(
        "Invalid arguments for tool 'get' — the call was not executed.\n- id: expected an integer, got a string"
    )
    assert "SEVEN-SECRET-VALUE" not in result.content
    assert result.content.endswith("\nHint: ids are integers")


@pytest.mark.parametrize(
    ("error", "detail", "needle"),
    [
        ("unparseable", "finish_reason=length", "cut off at max_tokens"),
        ("empty", None, "No arguments were sent, but 'add' requires: a, b."),
    ],
)
async def test_unparseable_or_empty_arguments_do_not_run(error: str, detail: str | None, needle: str) -> None:
    ran: list[str] = []

    @tool(name="add")
    async def add2(a: int, b: int) -> int:
        ran.append("x")
        return a + b

    bad = ToolCall("c1", "add", {}, raw_arguments='{"a": 1, "b', arguments_error=error, arguments_error_detail=detail)
    (result,) = await ToolExecutorActor([add2]).execute([bad])
    assert result.status is ToolStatus.invalid and ran == []
    assert result.content.startswith("Invalid arguments for tool 'add' — the call was not executed.")
    assert needle in result.content
    assert '{"a": 1' not in result.content  # the raw text is never echoed


async def test_unserialisable_result_is_an_error() -> None:
    @tool
    async def odd() -> object:
        return object()

    (result,) = await ToolExecutorActor([odd]).execute([call("1", "odd")])
    assert result.status is ToolStatus.error
    assert result.content == "Error: TypeError: the tool returned an object that cannot be sent as JSON"


async def test_conversion_failure_is_invalid() -> None:
    import datetime as dt

    ran: list[dt.date] = []

    @tool
    async def on(day: dt.date) -> str:
        ran.append(day)
        return "ok"

    (bad,) = await ToolExecutorActor([on]).execute([call("1", "on", day="2024-99-99-SECRET")])
    assert bad.status is ToolStatus.invalid and ran == [] and "SECRET" not in bad.content
    assert "- day: expected a date string" in bad.content
    (good,) = await ToolExecutorActor([on]).execute([call("1", "on", day="2024-02-03")])
    assert good.status is ToolStatus.ok and ran == [dt.date(2024, 2, 3)]


# --- oversized results -------------------------------------------------------------------------


def payload_of(size: int) -> str:
    unit = "PAYLOAD-ROW;"
    return (unit * (size // len(unit) + 1))[:size]


async def test_scenario_9_ceiling_refuses_and_the_payload_goes_nowhere(tmp_path: Any) -> None:
    @tool(result_ceiling=ResultCeiling(20_000, narrow_by=("limit", "since")), hint="use 'limit'")
    async def dump(limit: int = 0, since: str = "") -> str:
        return payload_of(191_245)

    rec, sink = recording()
    jsonl = tmp_path / "events.jsonl"
    with JsonlRecorder(jsonl) as file_rec:
        sink = EventSink([rec, file_rec], run_id="run-9")
        ex = ToolExecutorActor([dump])
        with use_sink(sink):
            (result,) = await ex.receive(ExecuteTools([call("c1", "dump")], ExecutionContext(max_tool_result_chars=50)))
    assert result.status is ToolStatus.invalid and result.refused and not result.truncated
    assert result.content.startswith(
        "Result too large: dump returned 191,245 chars, over its 20,000-char ceiling. No data was returned. "
        "Call it again with narrower parameters, e.g. 'limit', 'since'."
    )
    assert result.content.endswith("\nHint: use 'limit'")  # invalid results carry the hint
    assert result.original_chars == 191_245 and result.size_chars == len(result.content)
    refused = rec.of_type("tools.result_refused")
    assert len(refused) == 1
    assert refused[0].size == 191_245 and refused[0].max_chars == 20_000 and refused[0].narrow_by == ("limit", "since")
    assert rec.of_type("tools.result_truncated") == []  # the ceiling comes first; the cap has nothing to cut
    assert "PAYLOAD-ROW" not in serialised(rec.events)
    assert "PAYLOAD-ROW" not in jsonl.read_text() and "result_refused" in jsonl.read_text()
    assert "PAYLOAD-ROW" not in repr(result) and "PAYLOAD-ROW" not in result.to_message().content


async def test_under_the_ceiling_is_returned_whole() -> None:
    @tool(result_ceiling=ResultCeiling(100))
    async def small() -> str:
        return "x" * 100

    (result,) = await ToolExecutorActor([small]).execute([call("1", "small")])
    assert result.status is ToolStatus.ok and result.content == "x" * 100 and not result.refused


async def test_scenario_10_truncation_marker_and_head() -> None:
    payload = payload_of(191_245)

    @tool(name="dump")
    def dump_sync() -> str:
        return payload

    rec, sink = recording()
    with use_sink(sink):
        (result,) = await ToolExecutorActor([dump_sync]).execute(
            [call("c1", "dump")], ExecutionContext(max_tool_result_chars=8000)
        )
    assert result.status is ToolStatus.ok and result.truncated and not result.refused
    assert len(result.content) <= 8000 and result.size_chars == len(result.content)
    marker, head = result.content.split("\n", 1)
    assert marker == truncation_marker("dump", 191_245, len(head))
    assert marker == f"[truncated: dump returned 191,245 chars; showing the first {len(head):,} of them]"
    assert head == payload[: len(head)] and len(head) > 7_900
    (event,) = rec.of_type("tools.result_truncated")
    assert (event.size, event.cap, event.shown) == (191_245, 8000, len(head))
    assert payload[: len(head)] not in serialised(rec.events)


async def test_at_or_under_the_cap_is_the_same_object() -> None:
    text = "y" * 8000

    @tool
    async def exact() -> str:
        return text

    rec, sink = recording()
    with use_sink(sink):
        (result,) = await ToolExecutorActor([exact]).execute(
            [call("1", "exact")], ExecutionContext(max_tool_result_chars=8000)
        )
    assert result.content is text and not result.truncated
    assert rec.of_type("tools.result_truncated") == []


async def test_cap_keeps_the_hint_of_an_error() -> None:
    @tool(hint="narrow it")
    async def noisy() -> str:
        raise ValueError("z" * 5000)

    (result,) = await ToolExecutorActor([noisy]).execute(
        [call("1", "noisy")], ExecutionContext(max_tool_result_chars=300)
    )
    assert result.status is ToolStatus.error and result.truncated
    assert len(result.content) <= 300 and result.content.endswith("\nHint: narrow it")
    assert result.content.startswith("[truncated: noisy returned 5,019 chars; showing the first ")


async def test_our_own_texts_are_not_truncated() -> None:
    (result,) = await ToolExecutorActor([add]).execute([call("1", "nope")], ExecutionContext(max_tool_result_chars=20))
    assert result.status is ToolStatus.invalid and not result.truncated and "Available tools" in result.content


# --- concurrency and order ------------------------------------------------------------------------


@pytest.mark.virtual_time
async def test_scenario_7_two_calls_one_slow_run_concurrently_results_in_call_order() -> None:
    finished: list[str] = []

    @tool
    async def wait(label: str, seconds: float) -> str:
        await anyio.sleep(seconds)
        finished.append(label)
        return label

    ex = ToolExecutorActor([wait])
    start = anyio.current_time()
    results = await ex.execute([call("a", "wait", label="slow", seconds=5), call("b", "wait", label="fast", seconds=1)])
    assert anyio.current_time() - start == pytest.approx(5)  # concurrent: max, not sum
    assert finished == ["fast", "slow"]
    assert [r.call_id for r in results] == ["a", "b"] and [r.content for r in results] == ["slow", "fast"]
    assert results[0].duration == pytest.approx(5) and results[1].duration == pytest.approx(1)


@pytest.mark.virtual_time
async def test_concurrency_is_bounded_per_message_not_shared() -> None:
    running = 0
    peak = 0

    @tool
    async def work() -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await anyio.sleep(1)
        running -= 1
        return "done"

    ex = ToolExecutorActor([work], max_concurrency_per_step=2)
    start = anyio.current_time()
    results = await ex.execute([call(str(i), "work") for i in range(5)])
    assert anyio.current_time() - start == pytest.approx(3) and peak == 2
    assert [r.call_id for r in results] == ["0", "1", "2", "3", "4"]
    # Two runs' steps at once: each gets its own budget of 2, so both finish after 1 s.
    peak = 0
    start = anyio.current_time()
    async with anyio.create_task_group() as tg:
        for run in ("r1", "r2"):
            tg.start_soon(ex.execute, [call(f"{run}-a", "work"), call(f"{run}-b", "work")])
    assert anyio.current_time() - start == pytest.approx(1) and peak == 4


@pytest.mark.virtual_time
async def test_sequential_tool_runs_alone() -> None:
    running: set[str] = set()
    overlaps: dict[str, set[str]] = {}

    def make(name: str, sequential: bool) -> Any:
        async def body() -> str:
            running.add(name)
            overlaps.setdefault(name, set()).update(running - {name})
            await anyio.sleep(1)
            overlaps[name].update(running - {name})
            running.discard(name)
            return name

        body.__name__ = name
        return tool(sequential=sequential)(body)

    tools = [make("a", False), make("b", False), make("s", True), make("c", False), make("d", False)]
    ex = ToolExecutorActor(tools)
    start = anyio.current_time()
    results = await ex.execute([call(n, n) for n in ("a", "b", "s", "c", "d")])
    assert [r.content for r in results] == ["a", "b", "s", "c", "d"]
    assert overlaps["s"] == set() and not any("s" in others for others in overlaps.values())
    # a and b ran together (whichever started second saw the other), and only with each other
    assert overlaps["a"] | overlaps["b"] in ({"a"}, {"b"}, {"a", "b"})
    assert overlaps["c"] | overlaps["d"] in ({"c"}, {"d"}, {"c", "d"})
    assert anyio.current_time() - start == pytest.approx(3)  # {a, b} then s alone then {c, d}


async def test_one_failing_call_does_not_disturb_its_neighbours() -> None:
    ex = ToolExecutorActor([add, fetch])
    results = await ex.execute(
        [call("1", "add", a=1, b=1), call("2", "fetch", id=1), call("3", "nope"), call("4", "add", a=2, b=2)]
    )
    assert [r.status for r in results] == [ToolStatus.ok, ToolStatus.error, ToolStatus.invalid, ToolStatus.ok]
    assert [r.content for r in results][::3] == ["2", "4"]


# --- timeouts ---------------------------------------------------------------------------------


@pytest.mark.virtual_time
async def test_timeout_status_async_tool() -> None:
    saw_cancel: list[bool] = []

    @tool(timeout=2)
    async def hang() -> str:
        try:
            await anyio.sleep(100)
        except anyio.get_cancelled_exc_class():
            saw_cancel.append(True)
            raise
        return "never"

    @tool
    async def default_hang() -> str:
        await anyio.sleep(100)
        return "never"

    ex = ToolExecutorActor([hang, default_hang], default_timeout=5)
    start = anyio.current_time()
    (result,) = await ex.execute([call("1", "hang")])
    assert result.status is ToolStatus.timeout and saw_cancel == [True]
    assert result.content.startswith("Tool 'hang' timed out after 2 s")
    assert anyio.current_time() - start == pytest.approx(2)
    (result,) = await ex.execute([call("2", "default_hang")])
    assert result.status is ToolStatus.timeout and "after 5 s" in result.content


async def test_sync_tool_runs_in_a_worker_thread() -> None:
    loop_thread = threading.get_ident()
    seen: list[int] = []

    @tool
    def where(ctx: ToolContext) -> str:
        seen.append(threading.get_ident())
        ctx.emit("tools.progress", done=1)
        return "here"

    rec, sink = recording()
    with use_sink(sink):
        (result,) = await ToolExecutorActor([where]).execute([call("1", "where")])
    assert result.status is ToolStatus.ok and seen and seen[0] != loop_thread
    (progress,) = rec.of_type("tools.progress")
    assert progress.done == 1 and progress.call_id == "1" and progress.tool == "where" and progress.run_id == "run-1"


async def test_sync_tool_timeout_abandons_the_thread() -> None:
    stopped = threading.Event()

    @tool(timeout=0.05)
    def stubborn(ctx: ToolContext) -> str:
        for _ in range(2000):  # 10 s unless it learns it was abandoned
            time.sleep(0.005)
            try:
                ctx.check_cancelled()
            except BaseException:
                stopped.set()
                raise
        return "late"

    start = time.monotonic()
    (result,) = await ToolExecutorActor([stubborn]).execute([call("1", "stubborn")])
    assert result.status is ToolStatus.timeout and "after 0.05 s" in result.content
    assert time.monotonic() - start < 5  # answered at the timeout, not when the thread would finish (10 s)
    assert await anyio.to_thread.run_sync(stopped.wait, 30.0)  # the thread learnt it was abandoned


# --- cancellation --------------------------------------------------------------------------------


@pytest.mark.virtual_time
async def test_cancellation_propagates_and_the_tool_sees_it() -> None:
    saw: list[str] = []
    entered = anyio.Event()

    @tool
    async def long(ctx: ToolContext) -> str:
        entered.set()
        try:
            await anyio.sleep(1000)
        except anyio.get_cancelled_exc_class():
            saw.append(ctx.call_id)
            raise
        return "never"

    @tool
    async def quick() -> str:
        return "q"

    rec, sink = recording()
    ex = ToolExecutorActor([long, quick])
    outcome: list[Any] = []
    with use_sink(sink):
        async with anyio.create_task_group() as tg:

            async def run() -> None:
                with anyio.CancelScope() as scope:
                    outcome.append(await ex.execute([call("q1", "quick"), call("L1", "long")]))
                outcome.append(scope.cancelled_caught)

            tg.start_soon(run)
            await entered.wait()
            await anyio.sleep(1)
            tg.cancel_scope.cancel()
    assert saw == ["L1"]
    assert outcome == []  # nothing returned: the turn is discarded
    finished = {e.call_id: e.status for e in rec.of_type("tools.finished")}
    assert finished == {"q1": ToolStatus.ok, "L1": ToolStatus.cancelled}


async def test_cancelled_sync_tool_is_abandoned() -> None:
    release = threading.Event()
    started = threading.Event()

    @tool
    def blocking() -> str:
        started.set()
        release.wait(5)
        return "late"

    ex = ToolExecutorActor([blocking])
    with anyio.move_on_after(5) as outer:
        async with anyio.create_task_group() as tg:

            async def run() -> None:
                await ex.execute([call("1", "blocking")])

            tg.start_soon(run)
            await anyio.to_thread.run_sync(started.wait, 5)
            tg.cancel_scope.cancel()
    release.set()
    assert not outer.cancelled_caught  # the executor did not wait for the thread


# --- policy -----------------------------------------------------------------------------------


async def test_denied_by_tool_policy_with_reason() -> None:
    ran: list[int] = []
    seen: list[tuple[str, str | None, str | None]] = []

    @tool
    async def delete(id: int) -> str:
        ran.append(id)
        return "deleted"

    def policy(c: ToolCall, ctx: ToolContext) -> str | None:
        seen.append((c.name, ctx.run_id, ctx.agent))
        return "deleting is not allowed for this agent" if c.name == "delete" else None

    ex = ToolExecutorActor([delete, add])
    ctx = ExecutionContext(run_id="r7", agent="helper", tool_policy=policy)
    denied, allowed = await ex.execute([call("1", "delete", id=3), call("2", "add", a=1, b=2)], ctx)
    assert ran == []
    assert denied.status is ToolStatus.denied
    assert "refused" in denied.content and "deleting is not allowed for this agent" in denied.content
    assert "Do not call 'delete' again" in denied.content
    assert allowed.status is ToolStatus.ok
    assert sorted(seen) == [("add", "r7", "helper"), ("delete", "r7", "helper")]


async def test_actor_policy_async_policy_and_failing_policy() -> None:
    async def no_add(c: ToolCall, ctx: ToolContext) -> str | None:
        await anyio.lowlevel.checkpoint()
        return "no adding" if c.name == "add" else None

    def broken(c: ToolCall, ctx: ToolContext) -> str | None:
        raise RuntimeError("policy bug")

    ex = ToolExecutorActor([add], tool_policy=no_add)
    (r,) = await ex.execute([call("1", "add", a=1, b=1)])
    assert r.status is ToolStatus.denied and "no adding" in r.content
    (r,) = await ToolExecutorActor([add]).execute([call("1", "add", a=1, b=1)], ExecutionContext(tool_policy=broken))
    assert r.status is ToolStatus.denied and "could not decide (RuntimeError)" in r.content  # fails closed


async def test_a_tool_refusing_the_call_itself_is_not_reported_as_a_policy_refusal() -> None:
    """A tool raising ToolDenied ran (and may have done things): no claim of a policy, nor that nothing ran."""
    from agentactors.errors import ToolDenied
    from agentactors.tools.results import denied_text

    ran: list[int] = []

    @tool
    async def transfer(amount: int) -> str:
        ran.append(amount)
        raise ToolDenied("the account is frozen.")

    @tool
    def transfer_sync(amount: int) -> str:
        ran.append(amount)
        raise ToolDenied("  ")

    def policy(c: ToolCall, ctx: ToolContext) -> str | None:
        return "no deletes" if c.name == "delete" else None

    @tool
    async def delete(id: int) -> str:
        return "deleted"

    rec, sink = recording()
    ex = ToolExecutorActor([transfer, transfer_sync, delete])
    with use_sink(sink):
        own, own_sync, policed = await ex.execute(
            [call("1", "transfer", amount=5), call("2", "transfer_sync", amount=6), call("3", "delete", id=1)],
            ExecutionContext(tool_policy=policy),
        )
    assert ran == [5, 6]
    assert own.status is own_sync.status is policed.status is ToolStatus.denied
    assert own.content.startswith("Tool 'transfer' refused this call: the account is frozen.")
    assert own_sync.content.startswith("Tool 'transfer_sync' refused this call: no reason given.")
    for text in (own.content, own_sync.content):
        assert "policy" not in text and "not executed" not in text
    assert policed.content == denied_text("delete", "no deletes")  # a policy's refusal keeps its exact text
    assert policed.content.startswith("Call refused: tool 'delete' was denied by this agent's tool policy")
    assert [e.status for e in rec.of_type("tools.finished")] == [ToolStatus.denied] * 3


# --- the context and its canary ------------------------------------------------------------------


async def test_tool_context_is_injected_and_the_canary_stays_out_of_events(tmp_path: Any) -> None:
    register_secret(CANARY)
    contexts: list[ToolContext] = []

    @tool
    async def lookup(key: str, ctx: ToolContext) -> str:
        contexts.append(ctx)
        assert ctx.deps["token"] == CANARY
        ctx.emit("tools.progress", key=key)
        return f"value of {key}"

    @tool
    async def broken(ctx: ToolContext) -> str:
        raise PermissionError(f"token {ctx.deps['token']} rejected")

    rec, sink = recording("run-c")
    jsonl = tmp_path / "e.jsonl"
    with JsonlRecorder(jsonl) as file_rec:
        sink = EventSink([rec, file_rec], run_id="run-c")
        sink.step = 3
        ex = ToolExecutorActor([lookup, broken])
        context = ExecutionContext(agent="bot", step=3, deps={"token": CANARY}, max_tool_result_chars=1000)
        with use_sink(sink):
            results = await ex.receive(ExecuteTools([call("k1", "lookup", key="a"), call("k2", "broken")], context))
    (ctx,) = contexts
    assert (ctx.run_id, ctx.agent, ctx.call_id, ctx.tool_name, ctx.step) == ("run-c", "bot", "k1", "lookup", 3)
    assert CANARY not in repr(ctx) and CANARY not in repr(context) and CANARY not in repr(ExecuteTools([], context))
    assert results[0].content == "value of a"
    assert CANARY not in results[1].content  # registered secrets are redacted from error text
    everything = serialised(rec.events) + jsonl.read_text() + repr(results)
    assert CANARY not in everything
    assert {e.type for e in rec.events} == {"tools.started", "tools.finished", "tools.progress"}
    assert all(e.step == 3 for e in rec.events)


async def test_a_tool_that_returns_the_canary_does_return_it() -> None:
    @tool
    async def reveal(ctx: ToolContext) -> str:
        return str(ctx.deps)

    (r,) = await ToolExecutorActor([reveal]).execute([call("1", "reveal")], ExecutionContext(deps="plain-deps-value"))
    assert r.content == "plain-deps-value"


async def test_run_id_defaults_to_the_sinks_and_emit_without_listeners_is_a_noop() -> None:
    seen: list[ToolContext] = []

    @tool
    async def probe(ctx: ToolContext) -> str:
        seen.append(ctx)
        ctx.emit("tools.note", x=1)  # nobody listens: nothing happens
        with pytest.raises(ValueError, match="event type"):
            ctx.emit("")
        ctx.check_cancelled()  # on the loop thread: a no-op
        return "ok"

    await ToolExecutorActor([probe]).execute([call("1", "probe")])
    assert seen[0].run_id is None and seen[0].deps is None
    rec, sink = recording("sink-run")
    with use_sink(sink):
        await ToolExecutorActor([probe]).execute([call("2", "probe")])
    assert seen[1].run_id == "sink-run" and rec.of_type("tools.note")[0].x == 1


# --- constructors ------------------------------------------------------------------------------


def test_executor_constructor_validation() -> None:
    def plain(x: int) -> int:
        return x

    ex = ToolExecutorActor([plain, add])
    assert list(ex.tools) == ["plain", "add"] and ex.default_timeout == 60.0 and ex.max_concurrency_per_step == 16
    assert "plain" in repr(ex)
    assert ToolExecutorActor([], default_timeout=None).default_timeout is None
    with pytest.raises(ValueError, match="unique"):
        ToolExecutorActor([add, add])
    with pytest.raises(TypeError, match="Tool objects or functions"):
        ToolExecutorActor([42])  # type: ignore[list-item]
    for bad in (0, -2):
        with pytest.raises(ValueError, match="max_concurrency_per_step"):
            ToolExecutorActor([add], max_concurrency_per_step=bad)
    for wrong in (1.5, True, "4"):
        with pytest.raises(TypeError, match="max_concurrency_per_step"):
            ToolExecutorActor([add], max_concurrency_per_step=wrong)  # type: ignore[arg-type]
    for bad_timeout in (0, -1, True, "5"):
        with pytest.raises(ValueError, match="default_timeout"):
            ToolExecutorActor([add], default_timeout=bad_timeout)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tool_policy"):
        ToolExecutorActor([add], tool_policy="deny")  # type: ignore[arg-type]


def test_message_constructor_validation() -> None:
    msg = ExecuteTools([call("1", "add", a=1, b=2)])
    assert isinstance(msg.calls, tuple) and msg.context == ExecutionContext()
    with pytest.raises(TypeError, match="ToolCall"):
        ExecuteTools([{"id": "1"}])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="ExecutionContext"):
        ExecuteTools([], {"run_id": "x"})  # type: ignore[arg-type]
    for bad in (0, -5, 1.5, True):
        with pytest.raises(ValueError, match="max_tool_result_chars"):
            ExecutionContext(max_tool_result_chars=bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tool_policy"):
        ExecutionContext(tool_policy=3)  # type: ignore[arg-type]


def test_result_type_is_exported() -> None:
    # Defined in agentactors.tools.results; exported from the root, whose name it reports (test_exported_members).
    from agentactors.tools import results

    assert results.ToolResult is ToolResult
    assert ToolResult.__module__ == "agentactors"


# --- unusual callables ---------------------------------------------------------------------------


class Store:
    def __init__(self) -> None:
        self.items = {"a": 1}

    def get(self, key: str) -> int:
        """Get an item."""
        return self.items[key]


class AsyncCallable:
    async def __call__(self, n: int) -> int:
        return n * 2


async def test_bound_methods_callable_objects_and_wrapped_coroutines() -> None:
    import functools

    async def base(x: int) -> int:
        await anyio.lowlevel.checkpoint()
        return x + 1

    @functools.wraps(base)
    def wrapped(*args: Any, **kwargs: Any) -> Any:  # returns base's coroutine
        return base(*args, **kwargs)

    def bare(x: int) -> Any:  # a sync function that hands back a coroutine, without wraps
        return base(x)

    store = Store()
    double = tool(name="double")(AsyncCallable())
    tools: list[Tool[Any, Any]] = [tool(store.get), double, tool(name="wrapped")(wrapped), tool(bare)]
    assert tools[0].spec.parameters["required"] == ["key"] and tools[0].description == "Get an item."
    assert double.is_async and tools[2].is_async and not tools[3].is_async
    ex = ToolExecutorActor(tools)
    results = await ex.execute(
        [
            call("1", "get", key="a"),
            call("2", "double", n=4),
            call("3", "wrapped", x=1),
            call("4", "bare", x=2),
        ]
    )
    assert [r.content for r in results] == ["1", "8", "2", "3"]
    assert all(r.status is ToolStatus.ok for r in results)


def _policy(call: ToolCall, ctx: object) -> None:
    return None


@pytest.mark.parametrize(
    "fields",
    [
        ((ToolCall("c1", "add", {"a": 1}),), "run-1", "agent", 2, None, None, None, None, None),
        (
            (ToolCall("c1", "add", {}), ToolCall("c2", "mul", {})),
            None, None, None, 500, _policy, {"db": 1}, "k", {"c1": True},
        ),
    ],
)
def test_execute_tools_is_the_constructors_message_field_by_field(fields: tuple[Any, ...]) -> None:
    calls, *context = fields
    fast = execute_tools(calls, *context)
    built = ExecuteTools(calls, ExecutionContext(*context))
    assert fast == built
    assert attrs.asdict(fast, recurse=False)["calls"] == calls
    assert attrs.asdict(fast.context, recurse=False) == attrs.asdict(built.context, recurse=False)


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ((("not a call",), None, None, None, None, None, None, None, None), TypeError),
        (((ToolCall("c1", "add", {}),), None, None, None, 0, None, None, None, None), ValueError),
        (((ToolCall("c1", "add", {}),), None, None, None, True, None, None, None, None), ValueError),
        (((ToolCall("c1", "add", {}),), None, None, None, None, "not callable", None, None, None), TypeError),
    ],
)
def test_execute_tools_refuses_what_the_constructors_refuse(fields: tuple[Any, ...], error: type[Exception]) -> None:
    with pytest.raises(error):
        execute_tools(*fields)
