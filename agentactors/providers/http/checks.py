"""A provider's constructor arguments, checked when the provider is made.

A wrong one used to be accepted and to fail on the first call, some of them disguised as a vendor outage: a
``base_url`` without a scheme reached httpx as ``UnsupportedProtocol``, classified transient and retryable, so
``with_retry`` retried a typo, a fallback failed over from it and a breaker counted it against a healthy
vendor.  Each check raises ``TypeError`` for a value of the wrong type and ``ValueError`` for a wrong value,
naming the parameter; a URL is shown without its password and through :func:`~agentactors.redaction.redact`.

A ``base_url`` holding user info (``https://user:password@host``) is refused: the senders disagreed on it — httpx
made it an ``Authorization: Basic`` header that replaced the vendor's Bearer key (and a vendor echoing the request
put that credential in errors, events and logs), the h11 sender dropped it — and the library sends its credential
in headers of its own.  Its password (its user name, without one) and the Basic credential made of them are
registered as secrets before the refusal, so no text the library makes shows them afterwards.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING
from urllib.parse import SplitResult, unquote, urlsplit, urlunsplit

from ...redaction import redact, register_secret
from ...settings import check_timeout as _check_seconds

if TYPE_CHECKING:
    import httpx

__all__ = [
    "check_base_url",
    "check_http_client",
    "check_model",
    "check_name",
    "check_timeout",
    "register_user_info",
    "url_host",
]

_SCHEMES = ("http", "https")
_TIMEOUT_FIELDS = ("connect", "read", "write", "pool")


def _shown(url: str, parts: SplitResult | None) -> str:
    """``url`` as an error may show it: a password in it masked, every registered secret redacted."""
    if parts is not None and parts.password:
        url = url.replace(parts.password, "***")
    return redact(url)


def register_user_info(url: str) -> None:
    """Register the credential in ``url``'s user info, if any, as a secret (``register_secret``).

    The password — the user name when there is none (``https://TOKEN@host``) — raw and percent-decoded, and the
    ``Basic`` credential an HTTP client makes of them (base64 of ``user:password``, UTF-8 as httpx encodes it,
    Latin-1 as aiohttp does).  A user name beside a password is not registered: most are ordinary words.
    """
    try:
        netloc = urlsplit(url).netloc
    except ValueError:
        netloc = url.partition("://")[2].partition("/")[0]
    if "@" not in netloc:
        return
    userinfo = netloc.rpartition("@")[0]
    user, has_password, password = userinfo.partition(":")
    secret = password if has_password else user
    register_secret(secret)
    register_secret(unquote(secret))
    pair = f"{unquote(user)}:{unquote(password)}"
    for encoding in ("utf-8", "latin-1"):
        try:
            register_secret(base64.b64encode(pair.encode(encoding)).decode("ascii"))
        except UnicodeEncodeError:
            pass


def check_base_url(url: object, *, parameter: str = "base_url") -> str:
    """``url`` if it is an ``http(s)://`` URL with a host (and a valid port, if any), without user info."""
    if not isinstance(url, str):
        raise TypeError(f"{parameter} must be a str, an http(s) URL, not {type(url).__name__}")
    register_user_info(url)  # before any check: a refused URL's password is never shown either
    parts: SplitResult | None
    try:
        parts = urlsplit(url)
        valid = parts.scheme.lower() in _SCHEMES and bool(parts.hostname)
        _ = parts.port  # a port that is not a number raises here, not in the first request
    except ValueError:  # an unclosed "[" of an IPv6 host, a port out of range
        parts, valid = None, False
    if not valid:
        raise ValueError(
            f"{parameter} must be an http:// or https:// URL with a host, like https://api.example.com/v1, "
            f"not {_shown(url, parts)!r}"
        )
    if parts is not None and "@" in parts.netloc:
        # Shown without it (nor the user name: some are tokens). Named: the one way to send such a credential.
        bare = redact(urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", "")))
        raise ValueError(
            f"{parameter} must not hold a user name or a password ({bare!r} and its user info): the provider sends "
            f"its own credential (an API key, a bearer token, a SigV4 signature) in headers, and an HTTP client "
            f"would send user info in place of it, "
            f"as Authorization: Basic. For a server behind HTTP Basic auth, pass "
            f"http_client=httpx.AsyncClient(auth=(user, password)) and the URL without them"
        )
    if parts is not None and (parts.query or parts.fragment or url.rstrip().endswith(("?", "#"))):
        # The wire's path is appended to it as text: ".../v1?key=x" would be sent as ".../v1?key=x/chat/completions".
        # Shown without them (a query may hold a key).
        bare = _shown(urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")), parts)
        raise ValueError(
            f"{parameter} must not have a query or a fragment (the wire's path is appended to it): "
            f"{bare!r} and its query or fragment"
        )
    return url


def url_host(url: str) -> str:
    """The host of a URL :func:`check_base_url` took, lower case."""
    return (urlsplit(url).hostname or "").lower()


def check_timeout(timeout: object) -> None:
    """``None`` (the provider's default), a positive finite number of seconds, or an ``httpx.Timeout`` whose
    every bound is one (or ``None``: no bound)."""
    if timeout is None:
        return
    if isinstance(timeout, int | float) and not isinstance(timeout, bool):
        _check_seconds(timeout)  # the same rule as ModelSettings.timeout: NaN, inf, 0 and below refused
        return
    import httpx  # here: `import agentactors` does not load httpx

    if not isinstance(timeout, httpx.Timeout):
        raise TypeError(
            f"timeout must be a number of seconds, an httpx.Timeout or None, not {type(timeout).__name__}"
        )
    for field in _TIMEOUT_FIELDS:
        value = getattr(timeout, field)
        if value is not None:
            try:
                _check_seconds(value)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"timeout ({field}): {exc}; httpx.Timeout(None) for no bound") from None


def check_http_client(client: object) -> httpx.AsyncClient | None:
    """``client`` if it is ``None`` or an ``httpx.AsyncClient`` (the one client type the sender can drive)."""
    if client is None:
        return None
    import httpx

    if not isinstance(client, httpx.AsyncClient):
        raise TypeError(
            f"http_client must be an httpx.AsyncClient (or None: the provider makes its own pool), "
            f"not {type(client).__name__}"
        )
    return client


def check_name(name: object) -> str | None:
    """``name`` if it is ``None`` (the wire's name) or a non-empty str: it names the provider in every error."""
    if name is None:
        return None
    if not isinstance(name, str):
        raise TypeError(f"name must be a str (or None: the wire's name), not {type(name).__name__}")
    if not name.strip():
        raise ValueError(f"name must be a non-empty str (or None: the wire's name), not {name!r}")
    return name


def check_model(
    model: object, *, parameter: str = "model", default: str = "each request names its model"
) -> str | None:
    """``model`` if it is ``None`` or a non-empty str.

    ``""`` is refused rather than read as ``None`` (which :func:`~agentactors.providers.port.resolve_model`
    would do): an empty model is most often an unset environment variable, better told now than at the
    first request that names none.
    """
    if model is None:
        return None
    if not isinstance(model, str):
        raise TypeError(f"{parameter} must be a str (or None: {default}), not {type(model).__name__}")
    if not model.strip():
        raise ValueError(f"{parameter} must be a non-empty str (or None: {default}), not {model!r}")
    return model
