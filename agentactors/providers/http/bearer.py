"""Bearer tokens asked for per request: a caller's ``token_provider``, or Google's default credentials.

Cloud endpoints (Vertex AI) take short-lived OAuth tokens, not a fixed key, so a provider asks
:class:`BearerTokens` for one before every request:

* ``token_provider`` — a callable returning the token, sync or async, asked on every request (it caches as it
  likes: Azure's and Google's SDK token providers do);
* ``None`` — google-auth's Application Default Credentials (``GOOGLE_APPLICATION_CREDENTIALS``, the gcloud
  user, the metadata server), imported lazily (the ``[vertex]`` extra) and refreshed in a worker thread
  whenever google-auth no longer calls them valid, which it does a few minutes *before* they expire.

Every token is registered with :func:`~agentactors.redaction.register_secret` when first seen, so it is
redacted from every error and log line.  A token that cannot be had is an account-kind
:class:`~agentactors.ProviderError` (the cause is not chained: it may hold the credential file's contents).
"""

from __future__ import annotations

import importlib
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias

import anyio.to_thread

from ...errors import ErrorKind, ProviderError
from ...redaction import redact, redact_loggers, register_secret

__all__ = ["CLOUD_PLATFORM_SCOPE", "BearerTokens", "TokenProvider"]

TokenProvider: TypeAlias = Callable[[], "str | Awaitable[str]"]
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"


class BearerTokens:
    """Hands out the bearer token for the next request (see the module docstring)."""

    def __init__(self, token_provider: TokenProvider | None, *, provider: str) -> None:
        if token_provider is not None and not callable(token_provider):
            raise TypeError(f"token_provider must be a callable, not {type(token_provider).__name__}")
        self._token_provider = token_provider
        self._provider = provider
        self._google: Any = None
        self._last: str | None = None

    @property
    def source(self) -> str:
        """``"token_provider"`` or ``"google default credentials"``."""
        return "token_provider" if self._token_provider is not None else "google default credentials"

    async def token(self, model: str | None = None) -> str:
        """The token for the next request; an account-kind :class:`~agentactors.ProviderError` when there is none."""
        try:
            token = await (self._asked() if self._token_provider is not None else self._google_token())
        except ProviderError:
            raise
        except Exception as exc:
            failure = ProviderError(
                f"no bearer token could be obtained ({type(exc).__name__}) from the {self.source}",
                provider=self._provider, model=model, kind=ErrorKind.account, retryable=False)
        else:
            if not isinstance(token, str) or not token.strip():
                raise ProviderError(f"the {self.source} gave no token", provider=self._provider, model=model,
                                    kind=ErrorKind.account, retryable=False)
            if token != self._last:
                # Both forms: the stripped one is what goes out (and what a server echoes back); the raw one
                # registered alone left "<token>" unmasked when the answer ended in "\n".
                register_secret(token)
                register_secret(token.strip())
                self._last = token
            return token.strip()
        raise failure

    async def _asked(self) -> str:
        assert self._token_provider is not None
        answer = self._token_provider()
        if inspect.isawaitable(answer):
            answer = await answer
        return answer

    async def _google_token(self) -> str:
        if self._google is None:
            self._google = await anyio.to_thread.run_sync(_google_default)
        credentials = self._google
        if not credentials.valid:  # google-auth says so a few minutes before the token expires
            await anyio.to_thread.run_sync(_refresh, credentials)
        return str(credentials.token)


# google-auth's loggers: ``transport.requests`` puts each request and response it makes in the record's
# ``extra`` (``httpRequest`` / ``httpResponse``), which a structured handler (JSON, Cloud Logging) writes out.
# It hashes ``access_token`` and a few others, not the token request's ``assertion`` — a JWT signed with the
# service account's private key, good for an hour's access tokens — nor an ``Authorization`` header.
_GOOGLE_HTTP_LOGGER = "google.auth.transport.requests"
_GOOGLE_LOGGERS = (_GOOGLE_HTTP_LOGGER, "google.auth._default", "google.oauth2._client", "google.auth.credentials")
_GOOGLE_EXTRAS = ("httpRequest", "httpResponse")
_SENSITIVE_PARTS = ("assertion", "token", "secret", "key", "password", "authorization", "cookie", "code")
_MASK = "[REDACTED]"


def _masked(value: Any, depth: int = 0) -> Any:
    """``value`` (a logged request or response) with every credential-named field masked, every text redacted."""
    if depth > 8:
        return _MASK
    if isinstance(value, dict):
        return {k: _MASK if isinstance(k, str) and any(p in k.lower() for p in _SENSITIVE_PARTS) and k != "url"
                else _masked(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_masked(v, depth + 1) for v in value]
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, bytes | bytearray):
        return _MASK
    return value


class _GoogleHttpExtras(logging.Filter):
    """Masks the request and response google-auth attaches to its debug records (see ``_GOOGLE_HTTP_LOGGER``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name in _GOOGLE_EXTRAS:
            if name in record.__dict__:
                record.__dict__[name] = _masked(record.__dict__[name])
        return True


def _mask_google_logs() -> None:
    logger = logging.getLogger(_GOOGLE_HTTP_LOGGER)
    if not any(isinstance(f, _GoogleHttpExtras) for f in logger.filters):
        logger.addFilter(_GoogleHttpExtras())
    redact_loggers(_GOOGLE_LOGGERS)


def _google_default() -> Any:
    _mask_google_logs()  # before google-auth reads a credential file or asks for a token
    try:
        auth = importlib.import_module("google.auth")
    except ModuleNotFoundError as exc:
        raise ImportError(
            "Vertex AI without a token_provider needs google-auth: pip install 'agentactors[vertex]'"
        ) from exc
    credentials, _project = auth.default(scopes=[CLOUD_PLATFORM_SCOPE])
    return credentials


def _refresh(credentials: Any) -> None:
    transport = importlib.import_module("google.auth.transport.requests")
    credentials.refresh(transport.Request())
