"""The process's default client TLS context: one, shared by every owned sender that was not given its own.

Why: httpx's default context loads certifi's CA bundle: ~20 ms of CPU and ~0.8 MB each time.  Every
owned sender built its own (the h11 and aiohttp senders on their first https request, the owned httpx client
when made), so a service making a provider per tenant, key or model paid it per provider, and again each
time a provider's pool was remade for another event loop.  A context is safe to share between connections,
event loops and threads (aiohttp keeps one process-wide the same way).

It is exactly httpx's default (``httpx.create_ssl_context()``: certifi's bundle, or ``SSL_CERT_FILE`` /
``SSL_CERT_DIR`` when set, as httpx reads them; hostname checked, certificate required), with ALPN set to
``http/1.1``, which httpcore sets on its context before every connection anyway (set here once, every
sender offers the same whichever used the context first).  The two variables are read when the context is
made, on first need; a later change of either makes a new one for senders made after it (a sender keeps the
context it took), while a changed file under the same name is not read again.

**One per thread for httpx clients** (:func:`thread_client_context`).  httpcore sets ALPN on its client's
context before every connection it opens, and ``SSLContext.set_alpn_protocols`` replaces a buffer inside
OpenSSL while another thread may be reading it: CPython releases the GIL around ``SSL_new``, which copies
it.  Within one thread that cannot overlap; across threads it could (a use after free, however rare).  So
the owned httpx clients of one thread share one context, and another thread's get theirs — still one load
per thread, not per provider.  The h11 and aiohttp senders never change the context: they share the one.

**A certificate that does not verify** (:func:`unverified`) is one error on every sender: an ``httpx.ConnectError``
naming the host and port and what the verification said, with ``retryable = False`` (a certificate, a CA bundle or a
proxy that intercepts TLS does not change between attempts; retrying only delays the real message).  httpx's own said
neither host nor port, and on trio said nothing at all (anyio's ``BrokenResourceError`` over it).
"""

from __future__ import annotations

import os
import ssl
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx

__all__ = ["default_client_context", "thread_client_context", "unverified", "verify_failure"]

#: ``(SSL_CERT_FILE, SSL_CERT_DIR)`` as they were when the context was made, and the context.
_made: tuple[tuple[str, str], ssl.SSLContext] | None = None
_making = threading.Lock()


def _ca_environment() -> tuple[str, str]:
    return os.environ.get("SSL_CERT_FILE", ""), os.environ.get("SSL_CERT_DIR", "")


def default_client_context() -> ssl.SSLContext:
    """The shared context, made on the first call (one thread makes it; any other asking meanwhile waits)."""
    global _made
    key = _ca_environment()
    made = _made
    if made is not None and made[0] == key:
        return made[1]
    with _making:
        key, made = _ca_environment(), _made
        if made is None or made[0] != key:
            import httpx

            context = httpx.create_ssl_context()
            context.set_alpn_protocols(["http/1.1"])
            made = _made = (key, context)
        return made[1]


_per_thread = threading.local()


def thread_client_context() -> ssl.SSLContext:
    """The calling thread's shared context, for owned httpx clients (see the module: httpcore changes its ALPN).

    Made on the thread's first call, as :func:`default_client_context` makes the process's (the same settings, the
    same reading of the environment).
    """
    key = _ca_environment()
    made: tuple[tuple[str, str], ssl.SSLContext] | None = getattr(_per_thread, "made", None)
    if made is None or made[0] != key:
        import httpx

        context = httpx.create_ssl_context()
        context.set_alpn_protocols(["http/1.1"])
        made = _per_thread.made = (key, context)
    return made[1]


def verify_failure(exc: BaseException) -> ssl.SSLCertVerificationError | None:
    """The certificate verification failure in ``exc``'s chain (its causes and contexts, a few links), if any."""
    current: BaseException | None = exc
    for _ in range(8):  # a chain, not a loop: a few links at most
        if current is None:
            return None
        if isinstance(current, ssl.SSLCertVerificationError):
            return current
        current = current.__cause__ or current.__context__
    return None


def unverified(host: str, port: int | None, failure: ssl.SSLCertVerificationError) -> httpx.ConnectError:
    """The error for a server at ``host:port`` whose certificate did not verify (see the module): not retried."""
    import httpx

    # getattr: a subclass may not have set them (aiohttp's ClientConnectorCertificateError is one, wrapping the real)
    said = getattr(failure, "verify_message", None) or getattr(failure, "reason", None) or str(failure)
    where = f"{host}:{port}" if port is not None else host
    err = httpx.ConnectError(f"cannot connect to {where}: TLS certificate verify failed: {said}")
    err.retryable = False  # type: ignore[attr-defined]  # read by errors.explicit_retryable
    err.__cause__ = failure
    return err
