"""The sender's socket failures as httpx's exceptions: what their text says, and the original kept as cause."""

from __future__ import annotations

import anyio
import httpx

from agentactors.providers.http._io_errors import transport_error


def wrapped(inner: BaseException) -> anyio.BrokenResourceError:
    """What anyio's TLS stream on trio raises for a reset: a wrapper that says nothing, the reset its cause."""
    try:
        try:
            raise inner
        except BaseException as exc:
            raise anyio.BrokenResourceError from exc
    except anyio.BrokenResourceError as outer:
        return outer


def test_the_error_says_what_the_original_says() -> None:
    cause = ConnectionResetError(104, "Connection reset by peer")
    err = transport_error(httpx.ReadError, "reading the response failed", cause)
    assert isinstance(err, httpx.ReadError) and err.__cause__ is cause
    assert str(err) == "reading the response failed: [Errno 104] Connection reset by peer"


def test_a_wrapper_that_says_nothing_is_read_through_to_the_error_under_it() -> None:
    cause = wrapped(ConnectionResetError(104, "Connection reset by peer"))
    err = transport_error(httpx.ReadError, "reading the response failed", cause)
    assert err.__cause__ is cause
    assert str(err) == (
        "reading the response failed: BrokenResourceError (ConnectionResetError: [Errno 104] Connection reset by peer)"
    )


def test_a_silent_chain_is_named_by_its_outermost_type() -> None:
    silent = wrapped(ConnectionResetError())
    assert str(transport_error(httpx.ReadError, "failed", silent)) == "failed: BrokenResourceError"
    closed = anyio.ClosedResourceError()
    assert str(transport_error(httpx.WriteError, "failed", closed)) == "failed: ClosedResourceError"


def test_a_chain_that_loops_back_on_itself_still_ends() -> None:
    a, b = anyio.BrokenResourceError(), anyio.BrokenResourceError()
    a.__cause__, b.__cause__ = b, a
    assert str(transport_error(httpx.ReadError, "failed", a)) == "failed: BrokenResourceError"
