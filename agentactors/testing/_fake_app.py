"""The fake vendor's ASGI application (served by :mod:`._fake_server` in the FakeVendor's own thread).

One request: read the body, work out the wire, record the request with its
credentials redacted, decide the answer, then send it while a watcher listens
for the client going away (``http.disconnect``).  Every delay races the
server's closing event, so shutting the server down ends every answer at once.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl, unquote

import anyio

from ._fake_batch import FakeBatches
from ._fake_bedrock import sigv4_problem
from ._fake_control import handle as handle_control
from ._fake_control import is_control
from ._fake_parse import WireRejection

# The Responses wire and the Azure routes: each function serves its own and hands the others to the shared one.
from ._fake_responses import error_response, parse_request, reply_frames, reply_json, route, stream_error_frame
from ._fake_script import MAX_DELAY, Action, FakeError, FakeMalformed, FakeReply, RecordedRequest
from ._fake_state import WIRES, Exchange, VendorState
from ._fake_vertex import bearer_problem, is_vertex
from ._fake_wires import (
    WireContext,
    content_type,
    frame_bytes,
    malformed_frame,
    request_id_headers,
)

__all__ = ["FakeVendorApp"]

log = logging.getLogger("agentactors.testing.fakevendor")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

MAX_BODY = 64 * 1024 * 1024
_MIN_KEY_LEN = 6
REDACTED = "[REDACTED]"
_CREDENTIAL_HEADERS = frozenset({"authorization", "x-api-key", "x-goog-api-key", "api-key", "proxy-authorization",
                                 "x-amz-security-token"})
_SENSITIVE_HEADERS = _CREDENTIAL_HEADERS | {"cookie"}
_KEY_PARAMS = frozenset({"key", "api_key", "apikey", "access_token"})
#: The 400's message for a body no reader has a precise message for.
_INVALID_BODY = "invalid request body"
#: ``GET /health``: every wire served, and the endpoints (paths) that speak them.
_HEALTH = json.dumps({
    "status": "ok",
    "wires": list(WIRES),
    "endpoints": {
        "openai": "POST /v1/chat/completions",
        "responses": "POST /v1/responses",
        "anthropic": "POST /v1/messages",
        "gemini": "POST /v1beta/models/{model}:generateContent (:streamGenerateContent?alt=sse)",
        "bedrock": "POST /model/{modelId}/converse (/converse-stream)",
        "azure-openai": "POST /openai/deployments/{deployment}/chat/completions?api-version=..., "
                        "POST /openai/v1/responses",
        "vertex": "POST /v1/projects/{p}/locations/{l}/publishers/google/models/{m}:generateContent "
                  "(:streamGenerateContent?alt=sse), .../publishers/anthropic/models/{m}:rawPredict "
                  "(:streamRawPredict)",
    },
}).encode("utf-8")


class _Aborted(Exception):
    """The server is closing: drop the answer."""


def _key_from_header(name: str, value: str) -> str:
    if name in ("authorization", "proxy-authorization"):
        scheme, _, rest = value.partition(" ")
        return rest.strip() if scheme.lower() == "bearer" and rest.strip() else value.strip()
    return value.strip()


class FakeVendorApp:
    """ASGI app answering every vendor wire (and the batch APIs) from a :class:`VendorState`."""

    def __init__(self, state: VendorState, *, strict: bool, expected_api_key: str | None, record_bodies: bool,
                 control: bool = True) -> None:
        self.state = state
        #: Whether the control API (:mod:`._fake_control`) answers under ``/_fakevendor``.
        self.control = control
        self.strict = strict
        self._expected = expected_api_key
        self.record_bodies = record_bodies
        self._closing: anyio.Event | None = None
        #: The batch APIs (``fv.batches``): Files + /v1/batches, /v1/messages/batches, batchGenerateContent.
        self.batches = FakeBatches(state, strict=strict)

    def bind(self, closing: anyio.Event) -> None:
        """Attach the server loop's closing event (created inside that loop)."""
        self._closing = closing

    # -- ASGI entry -------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        method = str(scope.get("method", "GET")).upper()
        path = str(scope.get("path", "/"))
        query = bytes(scope.get("query_string", b"")).decode("latin-1")
        if method in ("GET", "HEAD") and path in ("/", "/health", "/healthz"):
            await _send_whole(send, 200, [("content-type", "application/json")], _HEALTH)
            return
        raw, too_large, gone = await _read_body(receive)
        if gone:
            return
        if self.control and is_control(path):
            # Before anything a vendor request goes through: not recorded, not counted, never scripted.
            status, answer = (413, {"error": {"message": "the control body is too large", "type": "too_large"}}
                              ) if too_large else handle_control(method, path, query, raw, self.state, self.batches)
            payload = json.dumps(answer, ensure_ascii=False, default=str).encode("utf-8")
            await _send_whole(send, status, [("content-type", "application/json")], payload)
            return
        await self._handle(scope, method, path, query, raw, too_large, receive, send)

    async def _handle(
        self, scope: Scope, method: str, path: str, query: str, raw: bytes, too_large: bool, receive: Receive,
        send: Send,
    ) -> None:
        headers = _headers(scope)
        keys, query_key = _credentials(headers, query)
        leaks = _leaks(keys, path, query, raw, headers, query_key)
        # What gets scrubbed from stored text: keys long enough not to match ordinary words.
        scrub = [k for k in keys if len(k) >= _MIN_KEY_LEN]
        index = self.state.next_index()
        batch = self.batches.route(method, path)
        if batch is not None:
            await self._batch(batch, method, path, query, raw, headers, keys, query_key, scrub, index, send)
            return
        routed = route(method, path, query)
        wire = routed[0] if routed else "unknown"
        body: Any = None
        body_error = False
        if raw and not too_large:
            text = raw.decode("utf-8", "replace")
            if "body" in leaks:  # a client bug: the key is in the body; keep it out of the record
                text = _scrub(text, scrub)
            try:
                body = json.loads(text)
            except (ValueError, RecursionError):  # RecursionError: a body nested deeper than the parser goes
                body_error = True
        elif not raw:
            body_error = True
        parsed = None
        rejection: FakeError | None = None
        if routed is None:
            rejection = None
        elif too_large:
            rejection = FakeError(413)
        else:
            # Credentials before the body, as the real vendors check them: a wrong key is a 401 whatever it sent.
            rejection = self._cloud_auth_problem(wire, path, headers)
            if rejection is None and wire != "bedrock":  # a SigV4 header holds no key to compare
                rejection = self._auth_problem(keys, query_key)
        if routed is not None and rejection is None:
            if body_error:
                rejection = FakeError(400, message="We could not parse the JSON body of your request.")
            else:
                try:
                    parsed = parse_request(wire, body, headers, path_model=routed[1], path_stream=routed[2],
                                           strict=self.strict)
                except WireRejection as exc:
                    rejection = FakeError(exc.status, message=exc.message, code=exc.code, param=exc.param)
                except Exception:  # RecursionError too (a schema nested past the stack)
                    # A shape no reader checks (a wrongly typed field): the vendors answer 400, not an empty
                    # 500 that clients retry.  Logged, so a reader's missing check can be found and made precise.
                    log.info("FakeVendor: request #%d's %s body read as invalid", index, wire, exc_info=True)
                    rejection = FakeError(400, message=_INVALID_BODY)
        model = parsed.model if parsed else (routed[1] if routed else None)
        if model is None and isinstance(body, dict) and isinstance(body.get("model"), str):
            model = body["model"]
        stream = parsed.stream if parsed else bool(routed and routed[2])
        request = RecordedRequest(
            index=index,
            wire=wire,
            method=method,
            path=_redacted_path(path, query, scrub),
            model=model,
            stream=stream,
            body=body if self.record_bodies else None,
            body_size=len(raw),
            headers=_redacted_headers(headers, scrub),
            api_key_present=bool(keys) or query_key is not None,
            key_leaks=leaks,
            conversation=parsed.conversation if parsed else None,
            received_at=time.monotonic(),
        )
        ex = self.state.record(request)
        if routed is None:
            payload = json.dumps({"error": {"message": f"FakeVendor has no endpoint {method} {path}",
                                            "type": "not_found", "code": 404}}).encode()
            await _send_whole(send, 404, [("content-type", "application/json")], payload)
            self.state.finish(ex, outcome="error", status=404)
            return
        ctx = WireContext(
            wire=wire,
            index=index,
            model=model or "fake-model",
            input_tokens=max(1, len(raw) // 4),
            include_usage=bool(parsed and parsed.conversation.include_usage),
            # Claude's manual thinking (Messages API, Vertex, Bedrock): its tool calls begin with a thinking block.
            manual_thinking=bool(parsed and parsed.conversation.settings.get("thinking") == "enabled" and (
                wire == "anthropic" or (wire == "bedrock" and "anthropic.claude" in (model or "").lower()))),
        )
        action: Action = rejection if rejection is not None else self.state.decide(request, ex)
        sse = stream and (wire != "gemini" or "alt=sse" in query)
        await self._serve_answer(ex, action, ctx, stream=stream, sse=sse, receive=receive, send=send)

    async def _batch(self, batch: tuple[str, str, dict[str, str]], method: str, path: str, query: str, raw: bytes,
                     headers: dict[str, str], keys: list[str], query_key: str | None, scrub: list[str], index: int,
                     send: Send) -> None:
        """A batch API request (:mod:`._fake_batch`): recorded like any other, credentials checked, then served."""
        wire, action, params = batch
        body: Any = None
        if raw and self.record_bodies and action == "create":
            with contextlib.suppress(ValueError, RecursionError):  # RecursionError: nested past the parser
                body = json.loads(raw)
        request = RecordedRequest(index=index, wire=wire, method=method, path=_redacted_path(path, query, scrub),
                                  model=None, stream=False, body=body, body_size=len(raw),
                                  headers=_redacted_headers(headers, scrub), api_key_present=bool(keys),
                                  key_leaks=_leaks(keys, path, query, raw, headers, query_key),
                                  received_at=time.monotonic())
        ex = self.state.record(request)
        problem = self._auth_problem(keys, query_key)
        if problem is not None:
            status, out_headers, payload = error_response(problem, WireContext(wire=wire, index=index, model="batch"))
        else:
            try:
                status, ctype, payload = self.batches.serve(wire, action, params, headers, raw)
                out_headers = [("content-type", ctype)]
            except Exception:  # as in _handle: a shape the batch readers do not check is the vendor's 400
                log.info("FakeVendor: batch request #%d read as invalid", index, exc_info=True)
                status, out_headers, payload = error_response(
                    FakeError(400, message=_INVALID_BODY), WireContext(wire=wire, index=index, model="batch"))
        self.state.finish(ex, outcome="ok" if status < 400 else "error", status=status)
        await _send_whole(send, status, out_headers, payload)

    def _cloud_auth_problem(self, wire: str, path: str, headers: dict[str, str]) -> FakeError | None:
        """Bedrock's SigV4 headers (the expected key is the access key id) and Vertex's bearer token."""
        if wire == "bedrock":
            return sigv4_problem(headers, self._expected)
        return bearer_problem(headers) if is_vertex(path) else None

    def _auth_problem(self, keys: list[str], query_key: str | None) -> FakeError | None:
        offered = [*keys, *([query_key] if query_key else [])]
        if not offered:
            return FakeError(401, message="No API key provided.") if self.strict else None
        if self._expected is not None and not any(hmac.compare_digest(k, self._expected) for k in offered):
            # Never echo the key back (some real vendors echo a masked form; we say nothing).
            return FakeError(401, message="Incorrect API key provided.")
        return None

    # -- answering --------------------------------------------------------------------------------

    async def _serve_answer(
        self, ex: Exchange, action: Action, ctx: WireContext, *, stream: bool, sse: bool, receive: Receive,
        send: Send,
    ) -> None:
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        self.state.mark_disconnected(ex)
                        tg.cancel_scope.cancel()
                        return

            tg.start_soon(watch)
            try:
                await self._answer(ex, action, ctx, stream=stream, sse=sse, send=send)
            except _Aborted:
                self.state.finish(ex, outcome="aborted")
            except Exception:
                log.exception("FakeVendor failed while answering request #%d", ex.request.index)
                self.state.finish(ex, outcome="aborted")
            finally:
                tg.cancel_scope.cancel()

    async def _pause(self, seconds: float) -> None:
        closing = self._closing
        if seconds > 0 and closing is not None:
            with anyio.move_on_after(min(seconds, MAX_DELAY)):
                await closing.wait()
        if closing is not None and closing.is_set():
            raise _Aborted

    async def _answer(self, ex: Exchange, action: Action, ctx: WireContext, *, stream: bool, sse: bool,
                      send: Send) -> None:
        latency = action.latency if action.latency is not None else self.state.latency
        await self._pause(latency)
        if isinstance(action, FakeError):
            status, headers, body = error_response(action, ctx)
            await self._finish_whole(ex, send, status, headers, body, outcome="error")
        elif isinstance(action, FakeMalformed):
            await self._malformed(ex, action, ctx, stream=stream, send=send)
        elif not stream:
            await self._json(ex, action, ctx, send)
        elif not sse:
            # Gemini without alt=sse streams a JSON array of the chunks.
            chunks = [f.payload for f in reply_frames(action, ctx)]
            body = json.dumps(chunks, ensure_ascii=False).encode("utf-8")
            headers = [("content-type", content_type(ctx.wire, sse=False)), *action.headers.items()]
            await self._finish_whole(ex, send, 200, headers, body, outcome="ok")
        else:
            await self._stream(ex, action, ctx, send)

    def _settle(self, ex: Exchange, *, outcome: str, status: int) -> None:
        # Recorded before the last byte leaves: a client that has its answer sees the outcome,
        # and a disconnect racing the end of a complete answer is not counted.
        ex.finishing = True
        self.state.finish(ex, outcome=outcome, status=status)

    async def _finish_whole(self, ex: Exchange, send: Send, status: int, headers: list[tuple[str, str]],
                            body: bytes, *, outcome: str) -> None:
        self._settle(ex, outcome=outcome, status=status)
        await _send_whole(send, status, headers, body)

    async def _malformed(self, ex: Exchange, action: FakeMalformed, ctx: WireContext, *, stream: bool,
                         send: Send) -> None:
        text = action.body.decode("utf-8", "replace") if isinstance(action.body, bytes) else action.body
        if stream and action.status == 200:
            ctype = action.content_type or content_type(ctx.wire, sse=True)
            await _start(send, 200, [("content-type", ctype)])
            self._settle(ex, outcome="malformed", status=200)
            await _body(send, frame_bytes(ctx.wire, malformed_frame(ctx.wire, text)), more=False)
            return
        body = action.body if isinstance(action.body, bytes) else action.body.encode("utf-8")
        ctype = action.content_type or content_type(ctx.wire, sse=False)
        await self._finish_whole(ex, send, action.status, [("content-type", ctype)], body, outcome="malformed")

    async def _json(self, ex: Exchange, reply: FakeReply, ctx: WireContext, send: Send) -> None:
        if reply.stream_error is not None:
            status, headers, body = error_response(reply.stream_error, ctx)
            await self._finish_whole(ex, send, status, headers, body, outcome="error")
            return
        body = json.dumps(reply_json(reply, ctx), ensure_ascii=False).encode("utf-8")
        headers = [("content-type", content_type(ctx.wire, sse=False)), *request_id_headers(ctx),
                   *reply.headers.items()]
        if reply.cut_after is not None:
            # No content-length: the body goes out chunked, and the chunked message never ends.
            await _start(send, 200, headers)
            await _body(send, body[: len(body) // 2], more=True)
            self.state.finish(ex, outcome="cut", status=200)
            return
        await self._finish_whole(ex, send, 200, headers, body, outcome="ok")

    async def _stream(self, ex: Exchange, reply: FakeReply, ctx: WireContext, send: Send) -> None:
        frames = reply_frames(reply, ctx)
        total = sum(1 for f in frames if f.content)
        fault_at: int | None = None
        if reply.stream_error is not None:
            fault_at = min(reply.stream_error_after, total)
        elif reply.cut_after is not None:
            fault_at = min(reply.cut_after, total)
        headers = [("content-type", content_type(ctx.wire, sse=True)), ("cache-control", "no-cache"),
                   *request_id_headers(ctx), *reply.headers.items()]
        await _start(send, 200, headers)
        sent = 0
        for n, frame in enumerate(frames):
            last = n == len(frames) - 1
            # A planned fault always fires before the terminal event, whatever the chunk count.
            if fault_at is not None and (sent >= fault_at or last):
                if reply.stream_error is not None:
                    self._settle(ex, outcome="stream_error", status=200)
                    data = frame_bytes(ctx.wire, stream_error_frame(reply.stream_error, ctx), n)
                    await _body(send, data, more=False)
                else:
                    # Returning without the final body makes the server drop the connection mid-message.
                    self.state.finish(ex, outcome="cut", status=200)
                return
            if last:
                # The terminal event ends the body: a client may stop reading once it has it.
                self._settle(ex, outcome="ok", status=200)
            await _body(send, frame_bytes(ctx.wire, frame, n), more=not last)
            if frame.content:
                sent += 1
                if not last:
                    await self._pause(reply.chunk_latency or self.state.chunk_latency)


# --- plumbing -----------------------------------------------------------------------------------


async def _read_body(receive: Receive) -> tuple[bytes, bool, bool]:
    """``(body, too_large, client_gone)``."""
    chunks: list[bytes] = []
    size = 0
    too_large = False
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"".join(chunks), too_large, True
        data = bytes(message.get("body", b""))
        size += len(data)
        if size > MAX_BODY:
            too_large = True
            chunks.clear()
        elif not too_large:
            chunks.append(data)
        if not message.get("more_body", False):
            return b"".join(chunks), too_large, False


async def _start(send: Send, status: int, headers: list[tuple[str, str]]) -> None:
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers],
    })


async def _body(send: Send, data: bytes, *, more: bool) -> None:
    await send({"type": "http.response.body", "body": data, "more_body": more})


async def _send_whole(send: Send, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
    await _start(send, status, [*headers, ("content-length", str(len(body)))])
    await _body(send, body, more=False)


def _headers(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in scope.get("headers", []):
        key = bytes(name).decode("latin-1").lower()
        text = bytes(value).decode("latin-1")
        out[key] = f"{out[key]}, {text}" if key in out else text
    return out


def _credentials(headers: dict[str, str], query: str) -> tuple[list[str], str | None]:
    keys = [_key_from_header(n, v) for n, v in headers.items() if n in _CREDENTIAL_HEADERS and v.strip()]
    query_key = next((v for k, v in parse_qsl(query, keep_blank_values=True) if k.lower() in _KEY_PARAMS and v), None)
    if query_key is not None:
        keys.append(query_key)
    # Longest first, so a key that contains another is redacted whole.
    return sorted({k for k in keys if k}, key=len, reverse=True), query_key


def _leaks(keys: list[str], path: str, query: str, raw: bytes, headers: dict[str, str],
           query_key: str | None) -> tuple[str, ...]:
    found: list[str] = []
    # Very short "keys" would match ordinary text; they are not credentials anyway.
    real = [k for k in keys if len(k) >= _MIN_KEY_LEN]
    url = unquote(path) + "?" + unquote(query)
    if query_key is not None or any(k in url for k in real):
        found.append("url")
    if any(k.encode("utf-8") in raw for k in real):
        found.append("body")
    for name, value in headers.items():
        if name not in _CREDENTIAL_HEADERS and any(k in value for k in real):
            found.append(f"header:{name}")
    return tuple(found)


def _scrub(text: str, keys: list[str]) -> str:
    for k in keys:
        text = text.replace(k, REDACTED)
    return text


def _redacted_path(path: str, query: str, keys: list[str]) -> str:
    if not query:
        return _scrub(path, keys)
    pairs = [(k, REDACTED if k.lower() in _KEY_PARAMS else _scrub(v, keys))
             for k, v in parse_qsl(query, keep_blank_values=True)]
    return _scrub(path, keys) + "?" + "&".join(f"{k}={v}" for k, v in pairs)


def _redacted_headers(headers: dict[str, str], keys: list[str]) -> dict[str, str]:
    return {n: (REDACTED if n in _SENSITIVE_HEADERS else _scrub(v, keys)) for n, v in headers.items()}
