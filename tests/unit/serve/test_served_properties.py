"""Property: generated requests to ``openai_app`` and ``agui_app`` — valid, hostile, and clients that leave at a
random point — each end as ``docs/serve.md`` promises.

In process, through the apps' ASGI interface as a server calls them (``receive`` / ``send``), on virtual time on
both backends: a real server adds nothing the property needs (its HTTP parsing is the server's; the end-to-end
path with the ``openai`` SDK is ``tests/integration/test_serve_generated.py``), and only the ASGI interface lets a
client leave after exactly the n-th message the app sent, or a slow agent take minutes in no real time.

Drawn: a body (a valid chat request built of every message role, client tools, ``tool_choice``,
``response_format``, ``stream`` / ``stream_options``, ``n``, ``max_tokens`` / ``max_completion_tokens``, sampling
settings — or a hostile one: wrong types, unknown fields, empty messages, an unknown model, deep nesting, bad
JSON, a wrong ``Content-Type``, a missing or wrong key); an agent whose provider answers text, calls its own tool,
fails with a ``ProviderError``, or is slow; a client that stays or leaves after the app's k-th message.

Promised (and checked):

* every request ends — under a virtual ``fail_after`` — in a response: a ``200`` whose body parses (a
  ``chat.completion``, or SSE chunks ending in ``data: [DONE]``; AG-UI: events from ``RUN_STARTED`` to
  ``RUN_FINISHED`` or ``RUN_ERROR``), or an error in OpenAI's shape (``{"error": {message, type, param, code}}``,
  every key there) with the documented status — a 4xx for the client's own mistake, never a 500;
* a client that leaves gets its run cancelled: the provider's pending answer is cancelled, the run is no longer
  live (``rt.run_ref`` does not find it) and the runtime's tasks return to what they were;
* usage adds up (``total_tokens`` = prompt + completion), and is the provider's;
* no API key appears in any response.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import anyio
import anyio.lowlevel
import attrs
import pytest
import trio.testing
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agentactors import Agent, LLMRequest, LLMResponse, Runtime, ScriptedProvider, ToolCall, tool
from agentactors.errors import ErrorKind, ProviderError, RunNotFoundError
from agentactors.messages import Usage
from agentactors.serve import agui_app, openai_app
from agentactors.testing import VirtualTimeLoop

EXAMPLES = int(os.environ.get("SERVE_PROPERTY_EXAMPLES", "100"))
KEY = "sk-prop-5b1e0c9a77"
OTHER_KEY = "sk-prop-other-3f"
HANG = 600.0  # virtual seconds: a request that has not ended by then hangs
SLOW = 30.0  # virtual seconds a slow provider takes per answer
USAGE = Usage(input_tokens=7, output_tokens=3)
MAX_BODY = 100_000  # the apps' max_body_size: a huge body is drawn on both sides of it


@tool
def double(x: int) -> int:
    """Double an integer."""
    return 2 * x


# --- agents ----------------------------------------------------------------------------------------------------

BEHAVIOURS = ("text", "tool", "provider_error", "transient_error", "slow", "json")


@attrs.define
class Probe:
    """What the provider saw: calls started, and those cancelled before they answered."""

    started: int = 0
    cancelled: int = 0
    finished: int = 0


def provider_for(behaviour: str, probe: Probe) -> ScriptedProvider:
    async def answer(request: LLMRequest) -> Any:
        probe.started += 1
        try:
            if behaviour == "slow":
                await anyio.sleep(SLOW)
            else:
                await anyio.lowlevel.checkpoint()
        except BaseException:
            probe.cancelled += 1
            raise
        probe.finished += 1
        if behaviour == "provider_error":
            return ProviderError(f"vendor said no; key {KEY}", kind=ErrorKind.request, provider="scripted")
        if behaviour == "transient_error":
            return ProviderError("vendor overloaded", kind=ErrorKind.transient, provider="scripted")
        if behaviour == "tool" and not any(m.role == "tool" for m in request.messages):
            return LLMResponse(tool_calls=[ToolCall("call-1", "double", {"x": 21})], usage=USAGE)
        if behaviour == "json":
            return LLMResponse(content='{"answer": 42}', usage=USAGE)
        return LLMResponse(content="the answer is 42", usage=USAGE)

    return ScriptedProvider(answer)


# --- generated bodies ------------------------------------------------------------------------------------------

texts = st.text(max_size=20)
user_messages = st.one_of(
    st.fixed_dictionaries({"role": st.just("user"), "content": texts}),
    st.fixed_dictionaries({"role": st.just("user"), "content": st.lists(
        st.fixed_dictionaries({"type": st.just("text"), "text": texts}), min_size=1, max_size=2)}),
)
other_messages = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["system", "developer"]), "content": texts}),
    st.fixed_dictionaries({"role": st.just("assistant"), "content": texts}),
    st.just({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": 1}'}}]}),
    st.just({"role": "tool", "tool_call_id": "c1", "content": "found"}),
)
answered_messages = st.one_of(  # a conversation the server takes: a tool message answers a call before it
    st.fixed_dictionaries({"role": st.sampled_from(["system", "developer", "assistant"]), "content": texts}),
    st.just([{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "found"}]),
).map(lambda m: m if isinstance(m, list) else [m])
client_tools = st.just([{"type": "function", "function": {"name": "lookup", "description": "Look up.",
                                                          "parameters": {"type": "object", "properties": {}}}}])
response_formats = st.sampled_from([
    {"type": "text"},
    {"type": "json_object"},
    {"type": "json_schema", "json_schema": {"name": "answer", "schema": {
        "type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}}},
])
optional_fields: dict[str, st.SearchStrategy[Any]] = {
    "tools": client_tools,
    "tool_choice": st.sampled_from(["auto", "none", "required",
                                    {"type": "function", "function": {"name": "lookup"}}]),
    "response_format": response_formats,
    "stream_options": st.fixed_dictionaries({"include_usage": st.booleans()}),
    "n": st.sampled_from([1, 2, 0, 129]),
    "max_tokens": st.one_of(st.none(), st.integers(-2, 2**31 + 2)),
    "max_completion_tokens": st.one_of(st.none(), st.integers(-2, 5000)),
    "temperature": st.one_of(st.floats(-1, 3, allow_nan=False), st.integers(0, 2)),
    "top_p": st.floats(-0.5, 1.5, allow_nan=False),
    "seed": st.integers(-(2**64), 2**64),
    "stop": st.one_of(st.text(max_size=3), st.lists(st.text(min_size=1, max_size=3), max_size=5)),
    "user": st.text(max_size=300),
    "metadata": st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=3),
    "parallel_tool_calls": st.booleans(),
    "presence_penalty": st.floats(-3, 3, allow_nan=False),
    "logprobs": st.booleans(),
}


@st.composite
def chat_bodies(draw: st.DrawFn) -> dict[str, Any]:
    """A chat request as a client builds it: valid, or off in the ways a client gets one wrong."""
    messages = [*draw(st.lists(other_messages, max_size=3)), draw(user_messages)]
    body: dict[str, Any] = {"model": draw(st.sampled_from(["agent", "agent", "agent", "nope"])),
                            "messages": messages, "stream": draw(st.booleans())}
    for name in draw(st.lists(st.sampled_from(sorted(optional_fields)), unique=True, max_size=4)):
        body[name] = draw(optional_fields[name])
    hostility = draw(st.sampled_from(["none"] * 6 + ["wrong_type", "unknown_field", "empty_messages", "drop_field",
                                                     "bad_role", "deep", "huge_text"]))
    if hostility == "wrong_type":
        name = draw(st.sampled_from(["model", "messages", "stream", "temperature", "n", "max_tokens", "tools",
                                     "stream_options", "response_format", "tool_choice"]))
        body[name] = draw(st.sampled_from([[], {}, "x", 3, True, None, [1], {"a": 1}]))
    elif hostility == "unknown_field":
        body[draw(st.sampled_from(["temprature", "top_k", "x", ""]))] = draw(st.sampled_from([1, "a", None]))
    elif hostility == "empty_messages":
        body["messages"] = []
    elif hostility == "drop_field":
        body.pop(draw(st.sampled_from(["model", "messages"])))
    elif hostility == "bad_role":
        body["messages"] = [{"role": draw(st.sampled_from(["wizard", "", "function", 3])), "content": "x"}]
    elif hostility == "deep":
        deep: Any = "x"
        for _ in range(draw(st.integers(50, 260))):
            deep = [deep]
        body["messages"][-1]["content"] = deep
    elif hostility == "huge_text":
        body["messages"][-1]["content"] = "y" * draw(st.integers(10_000, 200_000))
    return body


@attrs.frozen
class Sent:
    """One generated request: its raw body, headers and path, and when (if ever) its client leaves."""

    body: bytes
    content_type: bytes | None
    auth: bytes | None
    leave_after: int | None  # the client disconnects after this many messages of the app's (None: it stays)
    path: str = "/v1/chat/completions"
    method: str = "POST"
    pieces: int = 1  # the body arrives in this many ``http.request`` messages
    leave_in_body: bool = False  # the client leaves after the body's first piece
    session: str | None = None  # an ``X-Session-Id``


@st.composite
def openai_requests(draw: st.DrawFn) -> tuple[Sent, dict[str, Any] | None]:
    raw_kind = draw(st.sampled_from(["json"] * 8 + ["bad_json", "array", "dup_key"]))
    parsed: dict[str, Any] | None = None
    if raw_kind == "json":
        parsed = draw(chat_bodies())
        body = json.dumps(parsed).encode()
    elif raw_kind == "bad_json":
        body = draw(st.sampled_from([b"", b"{", b'{"model": "agent",}', b"\xff\xfe", b"nul\x00l", b"NaN"]))
    elif raw_kind == "array":
        body = b'[{"model": "agent"}]'
    else:
        body = b'{"model": "agent", "model": "nope", "messages": [{"role": "user", "content": "x"}]}'
    content_type = draw(st.sampled_from([b"application/json"] * 6 + [
        None, b"text/plain", b"application/x-www-form-urlencoded", b"application/vnd.api+json; charset=utf-8"]))
    auth = draw(st.sampled_from([b"Bearer " + KEY.encode()] * 6 + [
        None, b"Bearer " + OTHER_KEY.encode(), b"bearer " + KEY.encode(), b"Basic " + KEY.encode(),
        b"Bearer " + KEY.encode()[:-1]]))
    leave_after = draw(st.one_of(st.none(), st.none(), st.integers(0, 6)))
    path, method = draw(st.sampled_from([("/v1/chat/completions", "POST")] * 8 + [
        ("/v1/models", "GET"), ("/v1/models/agent", "GET"), ("/v1/chat/completions", "GET"), ("/v2/x", "POST")]))
    pieces = draw(st.sampled_from([1, 1, 1, 2, 7]))
    return Sent(body, content_type, auth, leave_after, path, method, pieces,
                leave_in_body=pieces > 1 and draw(st.integers(0, 4)) == 0), parsed


# --- the ASGI client -------------------------------------------------------------------------------------------


@attrs.define
class Exchange:
    """What the app sent, and whether the client left first."""

    sent: list[dict[str, Any]] = attrs.Factory(list)
    left: bool = False

    @property
    def status(self) -> int | None:
        starts = [m for m in self.sent if m["type"] == "http.response.start"]
        return int(starts[0]["status"]) if starts else None

    @property
    def headers(self) -> dict[str, str]:
        starts = [m for m in self.sent if m["type"] == "http.response.start"]
        return {bytes(k).decode("latin-1").lower(): bytes(v).decode("latin-1") for k, v in starts[0]["headers"]}

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.sent if m["type"] == "http.response.body")

    @property
    def complete(self) -> bool:
        bodies = [m for m in self.sent if m["type"] == "http.response.body"]
        return bool(bodies) and not bodies[-1].get("more_body", False)


async def exchange(app: Any, sent: Sent) -> Exchange:
    """``sent`` through the ASGI ``app`` as a server calls it; the client leaves after the app's
    ``sent.leave_after``-th message (or stays until the answer is complete)."""
    out = Exchange()
    changed = anyio.Event()
    size = -(-len(sent.body) // sent.pieces) or 1
    pieces = [sent.body[i : i + size] for i in range(0, len(sent.body), size)] or [b""]
    if sent.leave_in_body:
        pieces = pieces[:1]
    delivered = False
    headers = [(b"content-type", sent.content_type)] if sent.content_type is not None else []
    if sent.auth is not None:
        headers.append((b"authorization", sent.auth))
    if sent.session is not None:
        headers.append((b"x-session-id", sent.session.encode()))

    async def receive() -> dict[str, Any]:
        nonlocal delivered, changed
        if not delivered:
            piece = pieces.pop(0)
            delivered = not pieces
            return {"type": "http.request", "body": piece, "more_body": bool(pieces) or sent.leave_in_body}
        if sent.leave_in_body:
            out.left = True
            return {"type": "http.disconnect"}
        while sent.leave_after is None or len(out.sent) < sent.leave_after:
            if out.complete:
                break
            await changed.wait()
            changed = anyio.Event()
        if sent.leave_after is not None and not out.complete:
            out.left = True
        elif not out.left:
            await anyio.sleep_forever()  # the server sends a disconnect only once the response is done
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if out.left:
            raise OSError("the client has gone")  # uvicorn: ClientDisconnected, an OSError
        out.sent.append(message)
        changed.set()
        await anyio.lowlevel.checkpoint()

    scope = {"type": "http", "http_version": "1.1", "method": sent.method, "path": sent.path, "raw_path":
             sent.path.encode(), "root_path": "", "query_string": b"", "headers": headers, "scheme": "http",
             "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 5555)}
    with anyio.fail_after(HANG):
        await app(scope, receive, send)
    return out


# --- the promises ----------------------------------------------------------------------------------------------

ERROR_STATUSES = {400, 401, 404, 405, 409, 415, 429, 502, 503}


def no_secret(out: Exchange) -> None:
    text = out.body.decode("utf-8", "replace") + json.dumps(out.headers if out.status else {})
    assert KEY not in text and OTHER_KEY not in text, "a key in a response"
    assert "Traceback" not in text


def check_openai_error(out: Exchange) -> dict[str, Any]:
    assert out.status in ERROR_STATUSES, (out.status, out.body[:300])
    error: dict[str, Any] = json.loads(out.body)["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"], error
    return error


def sse_events(body: bytes) -> list[str]:
    text = body.decode()
    assert text.endswith("\n\n"), text[-200:]
    frames = [f for f in text.split("\n\n")[:-1] if f != ": keep-alive"]  # a keep-alive comment: no event
    assert all(f.startswith("data: ") and "\n" not in f for f in frames), frames[:3]
    return [f[6:] for f in frames]


def check_usage(usage: dict[str, Any], calls: int) -> None:
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert usage["prompt_tokens"] == USAGE.input_tokens * calls
    assert usage["completion_tokens"] == USAGE.output_tokens * calls


def outcome(out: Exchange) -> str:
    """What happened, for hypothesis' statistics (``--hypothesis-show-statistics``)."""
    if out.left:
        return "left before the response" if not out.sent else "left mid-response"
    return f"status {out.status}"


def check_openai(out: Exchange, sent: Sent, parsed: dict[str, Any] | None, behaviour: str, probe: Probe) -> None:
    event(outcome(out))
    no_secret(out)
    if out.left:
        return  # the client took nothing more
    assert out.complete, "the response never ended"
    status = out.status
    if sent.auth != b"Bearer " + KEY.encode() and sent.auth != b"bearer " + KEY.encode():
        assert status == 401, (status, out.body[:200])
        check_openai_error(out)
        return
    if sent.path != "/v1/chat/completions" or sent.method != "POST":
        assert status in (200, 404, 405), status
        if status != 200:
            check_openai_error(out)
        return
    if status != 200:
        error = check_openai_error(out)
        if status == 502:
            assert behaviour in ("provider_error", "transient_error") or error["code"] in (
                "response_format_unmet", "no_answer"), (behaviour, error)
            assert "vendor" not in error["message"], "the vendor's text reached the client"
        elif status in (415,):
            assert sent.content_type not in (None, b"application/json")
        elif status == 400 and parsed is not None and error["code"] == "unsupported_response_format":
            raise AssertionError(error)
        elif status == 404:
            assert parsed is not None and parsed.get("model") == "nope" and error["code"] == "model_not_found", error
        assert status not in (429, 503), (status, error)
        return
    assert parsed is not None and sent.content_type not in (b"text/plain", b"application/x-www-form-urlencoded")
    assert behaviour not in ("provider_error", "transient_error") or probe.finished == 0
    if out.headers["content-type"].startswith("text/event-stream"):
        assert parsed["stream"] is True
        frames = sse_events(out.body)
        if frames[-1] != "[DONE]":  # a failure after the stream began: an error event, last ("docs/serve.md")
            error = json.loads(frames[-1])["error"]
            assert set(error) == {"message", "type", "param", "code"} and error["message"], error
            assert error["code"] in ("response_format_unmet", "no_answer", "upstream_error") or behaviour in (
                "provider_error", "transient_error"), error
            assert all(f.startswith("{\"id\"") for f in frames[:-1]), frames
            return
        chunks = [json.loads(f) for f in frames[:-1]]
        assert not any("error" in c for c in chunks), chunks[-2:]
        assert all(c["object"] == "chat.completion.chunk" for c in chunks)
        assert len({c["id"] for c in chunks}) == 1
        finishes = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
        assert finishes[-1] in ("stop", "length") and all(f is None for f in finishes[:-1])
        if (parsed.get("stream_options") or {}).get("include_usage"):
            assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] is not None
            check_usage(chunks[-1]["usage"], probe.finished)
    else:
        assert out.headers["content-type"] == "application/json"
        completion = json.loads(out.body)
        assert parsed["stream"] is not True
        assert completion["object"] == "chat.completion" and len(completion["choices"]) == 1
        assert completion["choices"][0]["message"]["role"] == "assistant"
        assert isinstance(completion["choices"][0]["message"]["content"], str)
        check_usage(completion["usage"], probe.finished)


def check_released(rt: Runtime, tasks_before: int, probe: Probe, run_ids: list[str]) -> None:
    """Nothing the request started is left: the provider's call ended, no run is live, the runtime's tasks are
    back to what they were."""
    assert probe.started == probe.finished + probe.cancelled, probe
    assert run_ids or not probe.started, "a model call without a run"
    for run_id in run_ids:
        with pytest.raises(RunNotFoundError):
            rt.run_ref(run_id)
    stats = rt.stats()
    assert stats.busy == 0 and stats.tasks == tasks_before, (stats, tasks_before)


# --- the properties --------------------------------------------------------------------------------------------


def on_backend(backend: str, main: Callable[[], Any]) -> None:
    options: dict[str, Any]
    if backend == "trio":
        options = {"clock": trio.testing.MockClock(autojump_threshold=0)}
    else:
        options = {"loop_factory": VirtualTimeLoop}
    anyio.run(main, backend=backend, backend_options=options)


class Recorder:
    """Keeps the ids of the runs that started (``run.started``)."""

    def __init__(self) -> None:
        self.run_ids: list[str] = []

    def record(self, event: Any) -> None:
        if event.type == "run.started" and event.run_id not in self.run_ids:
            self.run_ids.append(event.run_id)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                        HealthCheck.data_too_large])
@given(request=openai_requests(), behaviour=st.sampled_from(BEHAVIOURS), twice=st.booleans())
def test_generated_openai_requests_end_as_documented(
    backend: str, request: tuple[Sent, dict[str, Any] | None], behaviour: str, twice: bool
) -> None:
    sent, parsed = request

    async def main() -> None:
        recorder = Recorder()
        async with Runtime(recorders=[recorder]) as rt:
            probes = [Probe(), Probe()]
            apps = [
                openai_app({"agent": Agent(provider_for(behaviour, p), tools=[double], name="agent")},
                           runtime=rt, api_keys=[KEY], max_completion_tokens=4096,
                           max_body_size=MAX_BODY)
                for p in probes
            ]
            await anyio.lowlevel.checkpoint()
            tasks_before = rt.stats().tasks
            outs: dict[int, Exchange] = {}

            async def one(i: int) -> None:
                outs[i] = await exchange(apps[i], sent)

            async with anyio.create_task_group() as tg:
                tg.start_soon(one, 0)
                if twice:  # a second request at once, to its own app (so each probe counts one request's calls)
                    tg.start_soon(one, 1)
            for i, out in outs.items():
                check_openai(out, sent, parsed, behaviour, probes[i])
            await anyio.sleep(1)  # the cancelled run's cleanup, in virtual time
            for probe in probes:
                check_released(rt, tasks_before, probe, recorder.run_ids)

    on_backend(backend, main)


valid_bodies = st.fixed_dictionaries(
    {"model": st.just("agent"), "messages": st.lists(answered_messages, max_size=2).map(
        lambda head: [*(m for part in head for m in part), {"role": "user", "content": "hi"}]),
     "stream": st.booleans()},
    optional={"stream_options": st.fixed_dictionaries({"include_usage": st.booleans()}),
              "temperature": st.floats(0, 2), "max_tokens": st.integers(1, 4096)},
)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=valid_bodies, behaviour=st.sampled_from(["text", "tool", "slow", "provider_error"]),
       leave_after=st.integers(0, 8), twice=st.booleans(), session=st.sampled_from([None, "s1"]))
def test_a_client_that_leaves_at_any_point_cancels_its_run_and_leaves_nothing_running(
    backend: str, body: dict[str, Any], behaviour: str, leave_after: int, twice: bool, session: str | None
) -> None:
    sent = Sent(json.dumps(body).encode(), b"application/json", b"Bearer " + KEY.encode(), leave_after,
                session=session)

    async def main() -> None:
        recorder = Recorder()
        async with Runtime(recorders=[recorder]) as rt:
            probe = Probe()
            app = openai_app({"agent": Agent(provider_for(behaviour, probe), tools=[double], name="agent")},
                             runtime=rt, api_keys=[KEY], sessions=session is not None)
            if session is not None:  # the runtime's session registry, started by a first turn, stays: not the request's
                await exchange(app, attrs.evolve(sent, leave_after=None, session="warm-up"))
                await anyio.sleep(120)  # a session's actor stops once idle (60 s)
                probe.started = probe.finished = probe.cancelled = 0
            await anyio.lowlevel.checkpoint()
            tasks_before = rt.stats().tasks
            outs: list[Exchange] = []

            async def one(leave: bool) -> None:
                outs.append(await exchange(app, sent if leave else attrs.evolve(sent, leave_after=None)))

            async with anyio.create_task_group() as tg:  # with twice, a second client on the same app stays
                tg.start_soon(one, True)
                if twice:
                    tg.start_soon(one, False)
            for out in outs:
                event(f"{outcome(out)} ({behaviour}, stream={body['stream']})")
                no_secret(out)
                if not out.left:
                    # with a session, a turn racing another on it is told so (409), never run over it
                    assert out.complete and out.status in ((200, 502, 409) if session else (200, 502)), (
                        out.status, out.body[:300])
                    if out.status == 409:
                        assert json.loads(out.body)["error"]["code"] == "session_conflict"
            await anyio.sleep(1 if session is None else 120)  # a session's actor stops once idle (60 s)
            check_released(rt, tasks_before, probe, recorder.run_ids)
            if behaviour == "slow" and not twice and outs[0].left and not outs[0].sent:  # left before the answer
                assert probe.cancelled == 1 and probe.finished == 0, probe

    on_backend(backend, main)


@st.composite
def agui_requests(draw: st.DrawFn) -> tuple[Sent, dict[str, Any] | None]:
    earlier = draw(st.lists(st.one_of(
        st.fixed_dictionaries({"id": st.uuids().map(str), "role": st.sampled_from(["user", "system", "developer"]),
                               "content": texts}),
        st.fixed_dictionaries({"id": st.uuids().map(str), "role": st.just("assistant"), "content": texts}),
    ), max_size=3))
    messages = [*earlier, {"id": "m-last", "role": "user", "content": draw(texts)}]
    body: dict[str, Any] = {"threadId": draw(st.sampled_from(["t1", "t2"])), "runId": "r1", "messages": messages}
    for name, values in {"state": st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
                         "tools": st.just([]), "context": st.lists(st.fixed_dictionaries(
                             {"description": texts, "value": texts}), max_size=2),
                         "forwardedProps": st.just({}), "parentRunId": st.just("r0")}.items():
        if draw(st.booleans()):
            body[name] = draw(values)
    hostility = draw(st.sampled_from(["none"] * 5 + ["wrong_type", "drop", "bad_json", "content_type", "deep"]))
    content_type: bytes | None = b"application/json"
    raw: bytes | None = None
    if hostility == "wrong_type":
        body[draw(st.sampled_from(["threadId", "runId", "messages", "state", "context", "tools"]))] = draw(
            st.sampled_from([3, None, "x", [1], {"a": 1}]))
    elif hostility == "drop":
        body.pop(draw(st.sampled_from(["threadId", "runId", "messages"])))
    elif hostility == "bad_json":
        raw = draw(st.sampled_from([b"", b"{", b"[]", b'{"threadId": "t", "threadId": "u"}', b'{"a": NaN}']))
    elif hostility == "content_type":
        content_type = draw(st.sampled_from([None, b"text/plain", b"multipart/form-data"]))
    elif hostility == "deep":
        deep: Any = 1
        for _ in range(draw(st.integers(50, 260))):
            deep = {"a": deep}
        body["state"] = deep
    leave_after = draw(st.one_of(st.none(), st.integers(0, 8)))
    pieces = draw(st.sampled_from([1, 1, 2, 5]))
    sent = Sent(raw if raw is not None else json.dumps(body).encode(), content_type, None, leave_after, "/",
                pieces=pieces, leave_in_body=pieces > 1 and draw(st.integers(0, 4)) == 0)
    return sent, body if raw is None else None


def check_agui(out: Exchange, sent: Sent, parsed: dict[str, Any] | None, behaviour: str) -> None:
    event(outcome(out))
    no_secret(out)
    if out.left:
        return
    assert out.complete, "the response never ended"
    if out.status != 200:
        assert out.status in (400, 415, 422), (out.status, out.body[:300])
        assert set(json.loads(out.body)) == {"detail"}
        return
    assert parsed is not None and sent.content_type in (b"application/json", None)
    events = [json.loads(f) for f in sse_events(out.body)]
    assert events[0]["type"] == "RUN_STARTED" and events[0]["threadId"] == parsed["threadId"]
    assert events[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR"), events[-1]
    assert [e["type"] for e in events].count("RUN_STARTED") == 1
    assert not any(e["type"] in ("RUN_FINISHED", "RUN_ERROR") for e in events[:-1])
    if events[-1]["type"] == "RUN_ERROR":
        assert behaviour in ("provider_error", "transient_error"), events[-1]
        assert "vendor" not in events[-1]["message"]
    else:
        assert events[-2]["type"] == "STATE_SNAPSHOT"
        usage = events[-2]["snapshot"]["agentactors"]["usage"]
        calls = 2 if behaviour == "tool" else 1
        assert usage == {"inputTokens": USAGE.input_tokens * calls, "outputTokens": USAGE.output_tokens * calls}
        started = {e["messageId"] for e in events if e["type"] == "TEXT_MESSAGE_START"}
        ended = {e["messageId"] for e in events if e["type"] == "TEXT_MESSAGE_END"}
        assert started == ended and started
        calls_started = {e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_START"}
        assert calls_started == {e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_END"}
        assert calls_started == {e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_RESULT"}


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                        HealthCheck.data_too_large])
@given(request=agui_requests(), behaviour=st.sampled_from(BEHAVIOURS), sessions=st.booleans(),
       twice=st.booleans())
def test_generated_agui_inputs_end_as_documented(
    backend: str, request: tuple[Sent, dict[str, Any] | None], behaviour: str, sessions: bool, twice: bool
) -> None:
    sent, parsed = request

    async def main() -> None:
        recorder = Recorder()
        async with Runtime(recorders=[recorder]) as rt:
            probe = Probe()
            app = agui_app(Agent(provider_for(behaviour, probe), tools=[double], name="agent"), runtime=rt,
                           sessions=sessions, max_body_size=MAX_BODY)
            await anyio.lowlevel.checkpoint()
            tasks_before = rt.stats().tasks
            outs: list[Exchange] = []

            async def one(leave: bool) -> None:
                outs.append(await exchange(app, sent if leave else attrs.evolve(sent, leave_after=None)))

            async with anyio.create_task_group() as tg:  # with twice, a second client posts the same input at once
                tg.start_soon(one, True)
                if twice:
                    tg.start_soon(one, False)
            for out in outs:
                if twice and out.status == 200:  # the other may have steered this thread's run, or been steered
                    no_secret(out)
                    events = [json.loads(f) for f in sse_events(out.body)] if out.complete else []
                    assert out.left or events[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR")
                else:
                    check_agui(out, sent, parsed, behaviour)
            await anyio.sleep(1)
            assert probe.started == probe.finished + probe.cancelled, probe
            for run_id in recorder.run_ids:
                with pytest.raises(RunNotFoundError):
                    rt.run_ref(run_id)
            stats = rt.stats()
            assert stats.busy == 0, stats
            if not sessions:  # a session's actor stays until its idle timeout
                assert stats.tasks == tasks_before, (stats, tasks_before)

    on_backend(backend, main)
