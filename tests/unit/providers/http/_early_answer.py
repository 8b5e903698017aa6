"""A server that answers a request before reading its body (a proxy's or vendor's 413 for an oversized upload), then
half-closes and drains it (nginx's lingering close) or resets the connection — shared by the sender's and the
providers' tests."""

from __future__ import annotations

import contextlib
import socket
import ssl
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import anyio.abc
from anyio.streams.tls import TLSStream

__all__ = ["EARLY_413", "TOO_LARGE", "answering_early"]

TOO_LARGE = b'{"error": {"message": "Request too large", "type": "request_too_large"}}'
EARLY_413 = (
    b"HTTP/1.1 413 Payload Too Large\r\ncontent-type: application/json\r\nconnection: close\r\n"
    b"content-length: %d\r\n\r\n%s" % (len(TOO_LARGE), TOO_LARGE)
)
_GONE = (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)


@asynccontextmanager
async def answering_early(
    then: str, answer: bytes = EARLY_413, tls: ssl.SSLContext | None = None
) -> AsyncIterator[int]:
    """A listener on 127.0.0.1 (yields its port; TLS with ``tls``) that reads each request's head only, sends
    ``answer``, then:

    * ``"lingers"``: shuts its sending side and reads (dropping) what comes, until the client hangs up;
    * ``"resets"``: waits a moment (the client, its buffers full, waits to send more and meanwhile reads the
      answer) and closes with ``SO_LINGER`` 0, which resets the connection.
    """

    async def serve(tcp: anyio.abc.SocketStream) -> None:
        async with tcp:
            with contextlib.suppress(*_GONE, ssl.SSLError):
                stream: anyio.abc.ByteStream = tcp
                if tls is not None:
                    stream = await TLSStream.wrap(tcp, server_side=True, ssl_context=tls, standard_compatible=False)
                buffer = b""
                while b"\r\n\r\n" not in buffer:
                    buffer += await stream.receive()
                if answer:
                    await stream.send(answer)
                raw = tcp.extra(anyio.abc.SocketAttribute.raw_socket)
                if then == "lingers":
                    raw.shutdown(socket.SHUT_WR)
                    with anyio.move_on_after(10):
                        while await stream.receive():
                            pass
                else:
                    await anyio.sleep(0.2)
                    raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port: int = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, serve)
        yield port
        tg.cancel_scope.cancel()
