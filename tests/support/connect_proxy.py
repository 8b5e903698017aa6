"""A small forward proxy on 127.0.0.1 for the HTTP senders' proxy tests: ``CONNECT`` tunnels, nothing else.

It runs in the test's own event loop (anyio: asyncio and trio alike) and records what each client asked
(the ``CONNECT`` target and its ``Proxy-Authorization``), so a test can tell a request that went through it
from one that went straight to the server.  ``refuse`` makes it answer every ``CONNECT`` with that status
(407 with a ``Proxy-Authenticate`` challenge) instead of tunnelling.  A request that is not ``CONNECT``
(an absolute-form ``POST http://...`` for a plain-HTTP target) is recorded and answered 501: the tests
send HTTPS through it.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from types import TracebackType

import anyio
import anyio.abc

__all__ = ["ConnectProxy", "ProxyRequest"]

_REASONS = {407: "Proxy Authentication Required", 403: "Forbidden", 502: "Bad Gateway", 501: "Not Implemented"}


@dataclass
class ProxyRequest:
    """What one client asked the proxy."""

    method: str
    target: str
    proxy_authorization: str | None


@dataclass
class ConnectProxy:
    """``async with ConnectProxy() as proxy``: listening on ``proxy.url`` until the block ends."""

    refuse: int | None = None
    requests: list[ProxyRequest] = field(default_factory=list)
    port: int = 0
    _group: anyio.abc.TaskGroup | None = None
    _exit: contextlib.AsyncExitStack | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url_with(self, user: str, password: str) -> str:
        return f"http://{user}:{password}@127.0.0.1:{self.port}"

    async def __aenter__(self) -> ConnectProxy:
        stack = contextlib.AsyncExitStack()
        listener = await stack.enter_async_context(await anyio.create_tcp_listener(local_host="127.0.0.1"))
        self.port = listener.extra(anyio.abc.SocketAttribute.local_port)
        group = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(group.cancel_scope.cancel)  # runs first: the serving tasks end, then the group exits
        group.start_soon(listener.serve, self._handle, group)
        self._group, self._exit = group, stack
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._exit is not None
        await self._exit.aclose()

    async def _handle(self, client: anyio.abc.SocketStream) -> None:
        async with client:
            try:
                head, rest = await _read_head(client)
            except (anyio.EndOfStream, anyio.BrokenResourceError, ValueError):
                return
            lines = head.decode("latin-1").split("\r\n")
            method, target, _ = [*lines[0].split(" ", 2), "", ""][:3]
            headers = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            self.requests.append(ProxyRequest(method, target, headers.get("proxy-authorization")))
            status = self.refuse if method == "CONNECT" else 501
            if status is not None:
                extra = 'Proxy-Authenticate: Basic realm="test"\r\n' if status == 407 else ""
                reason = _REASONS.get(status, "Refused")
                with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                    await client.send(
                        f"HTTP/1.1 {status} {reason}\r\n{extra}Content-Length: 0\r\nConnection: close\r\n\r\n".encode()
                    )
                return
            host, _, port = target.rpartition(":")
            try:
                upstream = await anyio.connect_tcp(host.strip("[]"), int(port))
            except OSError:
                await client.send(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            async with upstream:
                await client.send(b"HTTP/1.1 200 Connection established\r\n\r\n")
                if rest:
                    await upstream.send(rest)
                async with anyio.create_task_group() as pipes:
                    pipes.start_soon(_pipe, client, upstream, pipes.cancel_scope)
                    pipes.start_soon(_pipe, upstream, client, pipes.cancel_scope)


async def _read_head(stream: anyio.abc.ByteReceiveStream) -> tuple[bytes, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > 65536:
            raise ValueError("head too long")
        data += await stream.receive()
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


async def _pipe(source: anyio.abc.ByteStream, sink: anyio.abc.ByteStream, scope: anyio.CancelScope) -> None:
    try:
        while True:
            await sink.send(await source.receive())
    except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass
    scope.cancel()  # one side ended: the tunnel ends
