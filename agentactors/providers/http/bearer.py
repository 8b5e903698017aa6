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
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias

import anyio.to_thread

from ...errors import ErrorKind, ProviderError
from ...redaction import register_secret

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
                register_secret(token)
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


def _google_default() -> Any:
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
