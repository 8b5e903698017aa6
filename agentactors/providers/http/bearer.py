"""Bearer tokens asked for per request: a caller's ``token_provider``, or Google's default credentials.

Cloud endpoints (Vertex AI) take short-lived OAuth tokens, not a fixed key, so a provider asks
:class:`BearerTokens` for one before every request:

* ``token_provider`` — a callable returning the token, sync or async, asked on every request (it caches as it
  likes: Azure's and Google's SDK token providers do).  A sync one is called in the event loop, not a worker
  thread: it is asked on every request and answers from its cache in microseconds, and a thread hop per
  request would cost every request (and queue them all behind the shared worker-thread limit) to spare the
  rare one that refreshes.  A provider that may block (a refresh over the network) should be async —
  ``azure.identity.aio``'s ``get_bearer_token_provider``, say;
* ``None`` — google-auth's Application Default Credentials (``GOOGLE_APPLICATION_CREDENTIALS``, the gcloud
  user, the metadata server), imported lazily (the ``[vertex]`` extra) and refreshed in a worker thread
  whenever google-auth no longer calls them valid, which it does a few minutes *before* they expire, or after
  the vendor answered 401 (:meth:`BearerTokens.refresh_at_next_call`: a token revoked or invalidated early is
  not reused until its expiry).  The lookup and each refresh happen once however many calls want them at
  that moment (a lock taken only then: a valid token is handed out without it), and a caller that stops
  waiting (``with_timeout``, a cancel scope) leaves at once: the worker thread is abandoned to end on its own
  (google-auth gives a token endpoint that never answers 120 s).

Every token is registered with :func:`~agentactors.redaction.register_secret` when first seen, so it is
redacted from every error and log line, and checked as an API key is (:func:`~.keys.clean_api_key`): one
that cannot go in a header is an account error naming its source, never the token.  A token that cannot
be had is classified by :func:`credential_failure`: transient when the token endpoint could not be reached
or answered in a way worth asking again (a connection or timeout failure, google-auth's ``TransportError``,
a ``RefreshError`` it calls ``retryable``), an account error otherwise (``invalid_grant``, no credentials
found).  The cause is not chained either way: it may hold the credential file's contents.  What the message says
beyond the exception's type comes from facts established here, never from a library's text: when google-auth
finds no usable default credentials, the credential file it was pointed at is looked at in the same worker thread
(:func:`_google_file_problem`: missing, a directory, unreadable, not JSON, no or an unknown ``"type"``, required
fields missing, a private key that does not load) and the message says which.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import logging
import os
import re
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias

import anyio
import anyio.lowlevel
import anyio.to_thread

from ..._extras import import_extra, missing_extra
from ...errors import ErrorKind, ProviderError
from ...redaction import redact, redact_loggers, register_secret
from ..errors import classify_exception
from .keys import clean_api_key

__all__ = ["CLOUD_PLATFORM_SCOPE", "BearerTokens", "TokenProvider", "credential_failure"]

TokenProvider: TypeAlias = Callable[[], "str | Awaitable[str]"]
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"


class BearerTokens:
    """Hands out the bearer token for the next request (see the module docstring)."""

    def __init__(self, token_provider: TokenProvider | None, *, provider: str) -> None:
        if token_provider is not None and not callable(token_provider):
            raise TypeError(f"token_provider must be a callable, not {type(token_provider).__name__}")
        if token_provider is None:
            _check_google_auth()
        self._token_provider = token_provider
        self._provider = provider
        self._google: Any = None
        self._stale = False  # the vendor refused google-auth's token: refreshed at the next call
        self._refreshes = 0  # refreshes done: a caller that waited for one takes its token
        self._lock = _LoopLock()
        self._last: str | None = None  # the last answer seen, as it came …
        self._sent = ""  # … and as it goes out (checked, stripped)

    @property
    def source(self) -> str:
        """``"token_provider"`` or ``"google default credentials"``."""
        return "token_provider" if self._token_provider is not None else "google default credentials"

    def refresh_at_next_call(self) -> None:
        """The vendor refused the token (401): google-auth's is refreshed before the next request uses it.

        A token provider is asked on every request anyway: nothing to do for one.
        """
        if self._token_provider is None:
            self._stale = True

    async def token(self, model: str | None = None) -> str:
        """The token for the next request; a classified :class:`~agentactors.ProviderError` when there is none.

        Cancellation: a sync ``token_provider``, or a Google token still valid, is handed out without a
        checkpoint; an async ``token_provider`` is cancelled as it is.  A caller cancelled while it waits for
        Google's lookup or refresh leaves at once: the worker thread is abandoned to end on its own — a lookup's
        answer is dropped (the next call looks up again), a refresh still updates the credentials it refreshes.
        """
        try:
            token = await (self._asked() if self._token_provider is not None else self._google_token())
        except ProviderError:
            raise
        except Exception as exc:
            failure = credential_failure(exc, f"no bearer token could be obtained from the {self.source}",
                                         provider=self._provider, model=model)
        else:
            if type(token) is str and token == self._last:  # the usual case: handed out last time, checked then
                return self._sent
            return self._first_seen(token, model)
        raise failure  # outside the except block: the foreign exception is not kept as __context__ either

    def _first_seen(self, token: object, model: str | None) -> str:
        if not isinstance(token, str):
            raise ProviderError(f"the {self.source} gave a {type(token).__name__}, not a str token",
                                provider=self._provider, model=model, kind=ErrorKind.account, retryable=False)
        # Both forms: the stripped one is what goes out (and what a server echoes back); the raw one
        # registered alone left "<token>" unmasked when the answer ended in "\n".
        register_secret(token)
        try:
            sent = clean_api_key(token, provider=self._provider, what=f"the token from the {self.source}")
        except ValueError as exc:
            failure = ProviderError(str(exc), provider=self._provider, model=model, kind=ErrorKind.account,
                                    retryable=False)
        else:
            if sent is None:
                raise ProviderError(f"the {self.source} gave no token", provider=self._provider, model=model,
                                    kind=ErrorKind.account, retryable=False)
            register_secret(sent)
            self._last, self._sent = token, sent
            return sent
        raise failure  # without the ValueError as its context (it names no secret, but says nothing more)

    async def _asked(self) -> str:
        assert self._token_provider is not None
        answer = self._token_provider()
        if inspect.isawaitable(answer):
            answer = await answer
        return answer

    async def _google_token(self) -> str:
        credentials = self._google
        # google-auth calls a token invalid a few minutes before it expires
        if credentials is None or self._stale or not credentials.valid:
            credentials = await self._google_refreshed()
        return str(credentials.token)

    async def _google_refreshed(self) -> Any:
        """The credentials, looked up and refreshed once for every caller waiting now (abandoned if cancelled).

        A caller that waited while another refreshed them takes that token, even one google-auth already
        calls invalid (a token endpoint that grants less than google-auth's few minutes of margin): asking
        again at once would get no better one, and the waiters would refresh one after another.
        """
        refreshes = self._refreshes
        async with self._lock.get():
            credentials = self._google
            if credentials is None:  # looked up again after a failed lookup: the file may be fixed by now
                credentials = self._google = await anyio.to_thread.run_sync(_google_default, abandon_on_cancel=True)
            if self._refreshes == refreshes and (self._stale or not credentials.valid):
                await anyio.to_thread.run_sync(_refresh, credentials, abandon_on_cancel=True)
                self._refreshes += 1
                self._stale = False
        return credentials


class _LoopLock:
    """An :class:`anyio.Lock` for the event loop that asks for it, made there on first use.

    A provider outlives an event loop (a script's second ``anyio.run``, on either backend): a lock made in one
    cannot be waited on in another, so a new loop gets a new lock.  Only slow paths (a first lookup, a
    refresh) take it.  Without ``anyio.lowlevel.current_token`` (anyio < 4.11) a loop cannot be told from
    another: each caller gets a fresh lock, which serialises nothing (as before there was one) but is safe.
    """

    __slots__ = ("_lock", "_loop")

    def __init__(self) -> None:
        self._lock: anyio.Lock | None = None
        self._loop: object = None

    def get(self) -> anyio.Lock:
        """The lock of the running loop."""
        current = getattr(anyio.lowlevel, "current_token", None)
        loop = current() if current is not None else None
        if self._lock is None or loop is None or loop != self._loop:
            self._lock, self._loop = anyio.Lock(), loop
        return self._lock


# Failures of a credential endpoint that asking again may fix, in the extras' own types: looked up only when
# the extra is imported already (an exception of its type means it is), so nothing is imported for them.
_PASSING: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("google.auth.exceptions", ("TransportError", "TimeoutError")),
    ("botocore.exceptions", ("CredentialRetrievalError", "EndpointConnectionError", "ConnectTimeoutError",
                             "ReadTimeoutError")),
)
# OSErrors that are about a credential file, not the network: fixing them takes a person.
_FILE_ERRORS = (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError)


def credential_failure(exc: BaseException, message: str, *, provider: str, model: str | None) -> ProviderError:
    """The error a failed credential fetch is: ``message``, the exception's type and what to fix — never its text.

    What to fix comes only from fields known to be safe (:func:`_safe_detail`): botocore's exceptions carry
    their facts as named fields (``kwargs``), of which only names are shown — the variable a
    ``PartialCredentialsError`` misses and the provider that found the rest, the profile not found, a config
    file's path, the credential provider that failed — each shown only when shaped like a name or a path, and
    redacted; a field of free text (``error_msg``: a credentials endpoint's answer) never.  google-auth's
    ``DefaultCredentialsError`` says what is wrong with the credential file as :func:`_google_file_problem`
    found it; a ``RefreshError`` the OAuth error code (``invalid_grant``: one of RFC 6749's, never its
    description).  Any other exception (a ``token_provider``'s own) shows its type only.

    Transient (retryable) when asking again may work: the endpoint could not be reached or timed out, or said
    so (google-auth's ``TransportError`` and ``TimeoutError``, a ``RefreshError`` it calls ``retryable``;
    botocore's ``CredentialRetrievalError``, ``EndpointConnectionError`` and its timeouts; anything
    :func:`~agentactors.providers.errors.classify_exception` calls transient).  An account error otherwise:
    the credentials themselves are refused or missing (``invalid_grant``, no credentials found, a credential
    file that cannot be read).  The cause is not chained: it may hold a credential file's contents or a token.
    """
    if isinstance(exc, _Diagnosed):
        return ProviderError(f"{message} ({exc.type_name}): {exc.detail}", provider=provider, model=model,
                             kind=ErrorKind.account, retryable=False)
    kind = ErrorKind.transient if _passing(exc) else ErrorKind.account
    detail = _safe_detail(exc)
    text = f"{message} ({type(exc).__name__})" + (f": {detail}" if detail else "")
    return ProviderError(text, provider=provider, model=model, kind=kind, retryable=kind is ErrorKind.transient)


class _Diagnosed(Exception):
    """google-auth found no usable default credentials, and this is what is wrong (safe text made here).

    Raised by :func:`_google_default` in place of google-auth's ``DefaultCredentialsError`` (whose text may quote
    the file) and turned into the account error by :func:`credential_failure`; never leaves this module.
    """

    def __init__(self, type_name: str, detail: str) -> None:
        super().__init__(type_name)
        self.type_name = type_name
        self.detail = detail


# A field of botocore's shown only when shaped like a name (a profile, a variable, a credential provider) ...
_NAME = re.compile(r"[A-Za-z0-9_.:@+=,/-]{1,64}")
# ... or like a path or URL no longer than this, without control characters.
_MAX_SHOWN_PATH = 300


def _name(value: object) -> str | None:
    return redact(value) if isinstance(value, str) and _NAME.fullmatch(value) else None


def _path(value: object) -> str | None:
    if not isinstance(value, str) or not value or len(value) > _MAX_SHOWN_PATH or not value.isprintable():
        return None
    return repr(redact(value))


def _botocore_detail(exc: BaseException, fields: dict[str, object]) -> str | None:
    """What to fix, from the named fields of botocore's exceptions (most specific class first)."""
    module = sys.modules.get("botocore.exceptions")
    if module is None:
        return None

    def kind(name: str) -> bool:
        cls = getattr(module, name, None)
        return isinstance(cls, type) and isinstance(exc, cls)

    if kind("PartialCredentialsError"):
        var, source = _name(fields.get("cred_var")), _name(fields.get("provider"))
        return f"missing {var or 'a credential'}" + (f" (from {source})" if source else "")
    if kind("ProfileNotFound"):
        profile = _name(fields.get("profile"))
        named = f"the profile {profile!r}" if profile else "the profile asked for"
        return f"{named} is in neither the AWS config nor the credentials file (AWS_PROFILE?)"
    if kind("ConfigParseError") or kind("ConfigNotFound"):
        path = _path(fields.get("path"))
        wrong = "does not parse" if kind("ConfigParseError") else "is not found"
        return f"the AWS config file {path} {wrong}" if path else f"an AWS config file {wrong}"
    if kind("InfiniteLoopConfigError"):
        profile = _name(fields.get("source_profile"))
        return f"the profiles' source_profile settings loop{f' (at {profile!r})' if profile else ''}"
    if kind("UnauthorizedSSOTokenError") or kind("SSOTokenLoadError") or kind("SSOError"):
        return "the SSO session is missing, expired or invalid: run aws sso login"
    if kind("CredentialRetrievalError"):
        source = _name(fields.get("provider"))
        return f"the {source or 'remote'} credential provider failed to hand them out"
    if kind("EndpointConnectionError") or kind("ConnectTimeoutError") or kind("ReadTimeoutError"):
        url = _path(fields.get("endpoint_url"))
        return f"no answer from the credentials endpoint{f' {url}' if url else ''}"
    if kind("NoCredentialsError"):
        return "none in the environment, the shared credentials and config files, or a container or instance role"
    return None


# OAuth 2.0 error codes (RFC 6749 5.2): a fixed set of words, safe to show (the description beside one is not).
_OAUTH_ERRORS = frozenset({"invalid_request", "invalid_client", "invalid_grant", "unauthorized_client",
                           "unsupported_grant_type", "invalid_scope", "access_denied"})
_OAUTH_HINTS = {"invalid_grant": " (a revoked or deleted key, a disabled account, or a clock off by minutes)"}


def _google_detail(exc: BaseException) -> str | None:
    """The OAuth error code of google-auth's ``RefreshError`` (its second argument: the token endpoint's answer)."""
    module = sys.modules.get("google.auth.exceptions")
    refresh = getattr(module, "RefreshError", None)
    if not (isinstance(refresh, type) and isinstance(exc, refresh)) or len(exc.args) < 2:
        return None
    answer = exc.args[1]
    code = answer.get("error") if isinstance(answer, dict) else None
    if isinstance(code, str) and code in _OAUTH_ERRORS:
        return f"the token endpoint answered {code}{_OAUTH_HINTS.get(code, '')}"
    return None


def _safe_detail(exc: BaseException) -> str | None:
    """What to fix, from known-safe fields of a botocore or google-auth exception; ``None`` for any other."""
    fields = getattr(exc, "kwargs", None)
    detail = _botocore_detail(exc, fields if isinstance(fields, dict) else {})
    return detail if detail is not None else _google_detail(exc)


def _passing(exc: BaseException) -> bool:
    for module_name, names in _PASSING:
        module = sys.modules.get(module_name)
        types = tuple(t for t in (getattr(module, n, None) for n in names) if isinstance(t, type))
        if types and isinstance(exc, types):
            return True
    google = sys.modules.get("google.auth.exceptions")
    missing = getattr(google, "DefaultCredentialsError", None)
    if isinstance(missing, type) and isinstance(exc, missing):  # google-auth's OSError is one: a credential file
        return False
    if isinstance(exc, _FILE_ERRORS):
        return False
    return classify_exception(exc, provider="", model=None).kind is ErrorKind.transient


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


_WITHOUT_TOKEN_PROVIDER = "Vertex AI without a token_provider (google's default credentials)"


def _check_google_auth() -> None:
    """An ImportError naming the ``[vertex]`` extra when google-auth is not installed: said where the provider is made,
    not by its first request (where it would be one more credential failure).  Looked up, not imported (~0.1 s)."""
    try:
        found = importlib.util.find_spec("google.auth") is not None
    except ImportError as exc:  # no ``google`` package at all
        raise missing_extra(_WITHOUT_TOKEN_PROVIDER, "vertex", exc) from exc
    if not found:
        raise missing_extra(_WITHOUT_TOKEN_PROVIDER, "vertex")


def _google_default() -> Any:
    _mask_google_logs()  # before google-auth reads a credential file or asks for a token
    auth = import_extra("google.auth", "vertex", _WITHOUT_TOKEN_PROVIDER)
    try:
        credentials, _project = auth.default(scopes=[CLOUD_PLATFORM_SCOPE])
    except Exception as exc:
        # Not only its DefaultCredentialsError: google-auth lets an IsADirectoryError, or an AttributeError for a
        # file holding a JSON list, out as they are.  A failure asking again may fix (a metadata server that did
        # not answer) is raised as it is, classified transient.
        if _passing(exc):
            raise
        diagnosed = _Diagnosed(type(exc).__name__, _google_problem())
    else:
        return credentials
    raise diagnosed  # outside the except block: google-auth's exception (its text may quote the file) is not kept


# The credential file types google-auth takes, and the fields without which one of them cannot load.
_GOOGLE_TYPES = ("service_account", "authorized_user", "external_account", "external_account_authorized_user",
                 "impersonated_service_account", "gdch_service_account")
_GOOGLE_REQUIRED = {
    "service_account": ("client_email", "token_uri", "private_key"),
    "authorized_user": ("client_id", "client_secret", "refresh_token"),
    "impersonated_service_account": ("service_account_impersonation_url", "source_credentials"),
}
_MAX_CREDENTIAL_FILE = 1 << 20
_GOOGLE_HELP = ("set GOOGLE_APPLICATION_CREDENTIALS to a service account key file, run gcloud auth "
                "application-default login, or pass token_provider=")


def _google_problem() -> str:
    """Why google-auth found no usable default credentials, as far as can be told safely (:func:`_google_file_problem`).

    ``GOOGLE_APPLICATION_CREDENTIALS`` (google-auth reads an empty one as unset), else gcloud's
    application-default credentials file (``$CLOUDSDK_CONFIG`` or gcloud's config folder), else none at all
    (and no metadata server answered).  Runs in the worker thread google-auth ran in, after it failed.
    """
    explicit = os.environ.get("GOOGLE_APPLICATION_CREDENTIALS", "")
    if explicit:
        return _google_file_problem(explicit, "GOOGLE_APPLICATION_CREDENTIALS names")
    gcloud = _gcloud_adc_path()
    if gcloud is not None and os.path.exists(gcloud):
        return _google_file_problem(gcloud, "gcloud's application-default credentials file is")
    return (f"GOOGLE_APPLICATION_CREDENTIALS is not set, there is no gcloud application-default credentials file "
            f"({_path(gcloud) or 'none'}), and no metadata server answered: {_GOOGLE_HELP}")


def _gcloud_adc_path() -> str | None:
    config = os.environ.get("CLOUDSDK_CONFIG")
    if not config:
        if os.name == "nt":
            root = os.environ.get("APPDATA")
            if not root:
                return None
            config = os.path.join(root, "gcloud")
        else:
            config = os.path.join(os.path.expanduser("~"), ".config", "gcloud")
    return os.path.join(config, "application_default_credentials.json")


def _google_file_problem(path: str, where: str) -> str:
    """What is wrong with the credential file at ``path``, in words made here: never the file's contents.

    Only facts this function establishes itself are told — the file is missing, a directory, unreadable, not
    JSON, not an object, has no ``"type"`` or one google-auth does not take (shown only if shaped like a name),
    lacks fields its type needs (their names), or holds a ``private_key`` that does not load as a PEM key —
    so no value of the file (a private key, a client secret, a refresh token) can reach the message.  The
    path is shown (redacted, and only when short and printable).
    """
    where = f"{where} {_path(path) or 'a path not shown'}"
    try:
        with open(path, "rb") as file:
            raw = file.read(_MAX_CREDENTIAL_FILE + 1)
    except FileNotFoundError:
        return f"{where}, which does not exist"
    except IsADirectoryError:
        return f"{where}, which is a directory, not a file"
    except PermissionError:
        return f"{where}, which this process may not read (permission denied)"
    except OSError as exc:
        return f"{where}, which cannot be read ({type(exc).__name__})"
    if len(raw) > _MAX_CREDENTIAL_FILE:
        return f"{where}, which is too large for a credential file (over 1 MiB)"
    try:
        info = json.loads(raw)
    except (ValueError, RecursionError):
        return f"{where}, which is not JSON"
    if not isinstance(info, dict):
        return f"{where}, which is JSON but not a JSON object"
    kind = info.get("type")
    if kind is None:
        return f'{where}, which has no "type" field (a service account key file has "type": "service_account")'
    if kind not in _GOOGLE_TYPES:
        shown = f" {kind!r}" if _name(kind) is not None else ""
        return f'{where}, whose "type"{shown} is not one google-auth takes ({", ".join(_GOOGLE_TYPES)})'
    missing = [field for field in _GOOGLE_REQUIRED.get(kind, ()) if not info.get(field)]
    if missing:
        return f"{where}, a {kind} file missing {', '.join(missing)}"
    if kind == "service_account" and not _loads_as_pem_key(info["private_key"]):
        return f"{where}, whose private_key does not load as a PEM private key (check how the file was made or copied)"
    return f"{where}, a {kind} file google-auth could not load"


def _loads_as_pem_key(key: object) -> bool:
    """Whether ``key`` is a private key ``cryptography`` can load (True when it cannot tell: not installed)."""
    if not isinstance(key, str):
        return False
    try:
        serialization = importlib.import_module("cryptography.hazmat.primitives.serialization")
    except ImportError:
        return True
    try:
        serialization.load_pem_private_key(key.encode("utf-8", "replace"), password=None)
    except Exception:
        return False
    return True


def _refresh(credentials: Any) -> None:
    transport = importlib.import_module("google.auth.transport.requests")
    credentials.refresh(transport.Request())
