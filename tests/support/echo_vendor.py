"""A hostile vendor on 127.0.0.1: every answer echoes the credentials the request carried.

Each request is answered by the current :attr:`EchoVendor.mode` — a 401 JSON body and headers that repeat the
``Authorization`` / ``api-key`` / ``x-amz-security-token`` values, a 403 text page, a redirect whose
``Location`` carries them, a body cut mid-JSON, a body of the wrong shape, a stream failing mid-way, or no
answer at all (a timeout) — so a secrets audit drives every failure path with the key in the vendor's text.
``POST /token`` is an OAuth token endpoint (google-auth's service-account flow) answering ``access_token``.
A raw anyio listener, not the FakeVendor: the point is answers no well-behaved fake would give.
"""

from __future__ import annotations

import json
from types import TracebackType
from typing import Self

import anyio
import anyio.abc

__all__ = ["MODES", "EchoVendor"]

MODES = ("echo401", "echo403text", "redirect", "malformed", "wrongshape", "stream", "hang")
_CREDENTIAL_HEADERS = ("authorization", "api-key", "x-api-key", "x-goog-api-key", "x-amz-security-token")


def _response(
    status: int, body: bytes, headers: dict[str, str] | None = None, ctype: str = "application/json"
) -> bytes:
    fields = {"content-type": ctype, "content-length": str(len(body)), "connection": "close", **(headers or {})}
    head = f"HTTP/1.1 {status} X\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items()) + "\r\n"
    return head.encode("latin-1") + body


class EchoVendor:
    """``async with EchoVendor() as vendor``: :attr:`base_url` answers per :attr:`mode`; :attr:`seen` holds the
    token requests' bodies (a google-auth assertion, itself a credential a log must not show)."""

    def __init__(self, *, access_token: str = "") -> None:
        self.mode = "echo401"
        self.access_token = access_token
        self.token_requests: list[bytes] = []
        self.port = 0
        self._listener: anyio.abc.Listener[anyio.abc.SocketStream] | None = None
        self._group: anyio.abc.TaskGroup | None = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> Self:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        self._listener = listener
        self.port = listener.extra(anyio.abc.SocketAttribute.local_port)
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        self._group.start_soon(listener.serve, self._handle)
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._group is not None and self._listener is not None
        self._group.cancel_scope.cancel()
        await self._group.__aexit__(kind, exc, tb)
        await self._listener.aclose()

    def _reply(self, line: str, headers: dict[str, str], body: bytes) -> bytes | None:
        if line.startswith("POST /token"):
            self.token_requests.append(body)
            answer = {"access_token": self.access_token, "expires_in": 3600, "token_type": "Bearer"}
            return _response(200, json.dumps(answer).encode())
        creds = {k: v for k, v in headers.items() if k in _CREDENTIAL_HEADERS}
        every = " ; ".join(f"{k}={v}" for k, v in creds.items())
        raw = " ".join(creds.values())
        squeezed = raw.replace(" ", "")[:300]
        if self.mode == "echo401":
            error = {"message": f"bad credentials: {every} raw {raw}", "code": "invalid_api_key",
                     "type": "authentication_error", "status": "UNAUTHENTICATED"}
            return _response(401, json.dumps({"error": error, "message": raw, "request_id": squeezed}).encode(),
                             {"x-request-id": squeezed, "x-amzn-requestid": squeezed,
                              "www-authenticate": f"Bearer error={squeezed}"})
        if self.mode == "echo403text":
            return _response(403, f"Forbidden. You sent:\n{every}\n{raw}".encode(), ctype="text/plain")
        if self.mode == "redirect":
            token = raw.replace(" ", "%20")
            return _response(302, f"moved: /next?access_token={token}".encode(),
                             {"location": f"http://127.0.0.1:1/next?token={token}"}, ctype="text/plain")
        if self.mode == "malformed":
            return _response(200, f'{{"id": "x", "echo": "{raw}", '.encode())
        if self.mode == "wrongshape":
            return _response(200, json.dumps({k: raw for k in ("choices", "candidates", "content", "output")}).encode())
        if self.mode == "stream":
            failure = json.dumps({"error": {"message": f"mid-stream failure {raw}", "type": "api_error"}})
            chunk = json.dumps({"id": "c", "choices": [{"index": 0, "delta": {"content": "hi"}}]})
            sse = f"data: {chunk}\n\nevent: error\ndata: {failure}\n\ndata: {{bad json {raw}\n\n"
            return _response(200, sse.encode(), ctype="text/event-stream")
        return None  # "hang": the client's timeout ends it

    async def _handle(self, stream: anyio.abc.SocketStream) -> None:
        async with stream:
            buffer = b""
            try:
                while b"\r\n\r\n" not in buffer:
                    buffer += await stream.receive()
                    if buffer.startswith(b"\x16"):  # a TLS ClientHello to this plain server: fail it at once
                        await stream.send(b"HTTP/1.1 400 Plain\r\n\r\n")
                        return
                head, _, body = buffer.partition(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
                while len(body) < int(headers.get("content-length", "0")):
                    body += await stream.receive()
                answer = self._reply(lines[0], headers, body)
                if answer is None:
                    await anyio.sleep(60)
                    return
                await stream.send(answer)
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                return
