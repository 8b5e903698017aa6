"""AWS credentials and SigV4 signing for Bedrock, by botocore (the ``[bedrock]`` extra, imported lazily).

Signing is botocore's own :class:`botocore.auth.SigV4Auth` over the exact URL and body that go out; the
credentials are given (``access_key_id`` / ``secret_access_key`` / ``session_token``) or found by botocore's
resolver, the chain every AWS SDK for Python walks: the environment (``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``), the shared credentials and config files (profiles,
``AWS_PROFILE``, SSO and assume-role sessions), then container and instance roles.  Finding and refreshing
them reads files and may call a metadata endpoint, so it runs in a worker thread, never in the event loop —
abandoned when the caller stops waiting (``with_timeout``, a cancel scope), so an endpoint that never
answers holds up nobody but that thread.  They are found once however many first calls want them at once
(a lock taken only while none are known); a refresh is serialised by botocore's own lock.

A blank credential variable (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``) is an unset
one, and surrounding whitespace is stripped from one that is set (:class:`_CredentialEnviron`).

Secrets: the access key id, the secret key and every session token are registered with
:func:`~agentactors.redaction.register_secret` as soon as they are known, and botocore's own debug lines
about a signature (``botocore.auth`` logs the canonical request, the string to sign and the signature) are
masked, so neither a key, a token nor a signature reaches a log line, an error or a repr.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread

from ..._extras import import_extra
from ...errors import ErrorKind, ProviderError
from ...redaction import redact_loggers, register_secret

__all__ = ["SigV4Signer", "default_region"]

_SERVICE = "bedrock"
_BOTOCORE_AUTH_LOGGER = "botocore.auth"
_SIGNING_LINES = ("CanonicalRequest", "StringToSign", "Signature")
_MASK = "[REDACTED]"


def _botocore(name: str) -> Any:
    return import_extra(f"botocore.{name}", "bedrock", "BedrockProvider")


class _SigningLines(logging.Filter):
    """Masks the arguments of botocore's debug lines that show a canonical request, string to sign or signature."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and record.msg.startswith(_SIGNING_LINES):
            record.args = (_MASK,)
        return True


def _mask_signing_lines() -> None:
    logger = logging.getLogger(_BOTOCORE_AUTH_LOGGER)
    if not any(isinstance(f, _SigningLines) for f in logger.filters):
        logger.addFilter(_SigningLines())
    redact_loggers((_BOTOCORE_AUTH_LOGGER, "botocore.credentials"))


def default_region() -> str | None:
    """The region the environment or the shared config names (``AWS_REGION``, ``AWS_DEFAULT_REGION``, the profile)."""
    for var in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        value = os.environ.get(var, "").strip()
        if value:
            return value
    try:
        session = _botocore("session").Session()
        region = session.get_config_variable("region")
    except ImportError:
        return None
    except Exception:  # a broken config file names no region; the caller says what to pass
        return None
    return region if isinstance(region, str) and region else None


class SigV4Signer:
    """Signs Bedrock requests for one region with given or resolved credentials (see the module docstring)."""

    def __init__(
        self,
        region: str,
        *,
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        session_token: str | None = None,
        provider: str = _SERVICE,
    ) -> None:
        # Before any check: even a refused credential is never shown.  The access key id too: not a secret to
        # AWS, but it names the account's key (and an echoing server or proxy shows it beside the rest).
        for secret in (access_key_id, secret_access_key, session_token):
            if isinstance(secret, str):  # the provider checked them (a non-str is its TypeError, not len()'s)
                register_secret(secret)
        if (access_key_id is None) != (secret_access_key is None):
            raise ValueError("pass both access_key_id and secret_access_key, or neither (the default chain)")
        if session_token is not None and access_key_id is None:
            raise ValueError("a session_token needs the access_key_id and secret_access_key it was issued with")
        _mask_signing_lines()
        self.region = region
        self._provider = provider
        self._auth = _botocore("auth")
        self._request_class = _botocore("awsrequest").AWSRequest
        self._credentials: Any = None
        if access_key_id is not None:
            self._credentials = _botocore("credentials").Credentials(access_key_id, secret_access_key, session_token)
        self._explicit = access_key_id is not None
        self._seen: tuple[str, str, str | None] | None = None
        self._lock: anyio.Lock | None = None  # made in the loop that first needs it: see _loop_lock
        self._lock_loop: object = None
        self._lookups = 0  # resolutions done: a caller that waited for one uses its answer, even "none"

    @property
    def source(self) -> str:
        """``"explicit"`` (given to the provider) or ``"default chain"`` (botocore's resolver)."""
        return "explicit" if self._explicit else "default chain"

    async def sign(self, url: str, headers: dict[str, str], content: bytes, model: str) -> dict[str, str]:
        """A copy of ``headers`` with ``Authorization``, ``X-Amz-Date`` (and ``X-Amz-Security-Token``) added.

        Raises an account-kind :class:`~agentactors.ProviderError` when no credentials can be found.

        Cancellation: with fixed credentials it awaits nothing.  A caller cancelled while botocore's default
        chain resolves the credentials, or refreshes refreshable ones, leaves at once: the worker thread is
        abandoned to end on its own (a refresh still updates the credentials), and a resolution it had not
        finished is made again by the next call.
        """
        frozen = await self._frozen(model)
        request = self._request_class(method="POST", url=url, data=content,
                                      headers={"content-type": headers.get("content-type", "application/json")})
        self._auth.SigV4Auth(frozen, _SERVICE, self.region).add_auth(request)
        signed = dict(headers)
        for name, value in request.headers.items():
            key = name.lower()
            if key in ("authorization", "x-amz-date", "x-amz-security-token"):
                signed[key] = value
        return signed

    async def _frozen(self, model: str) -> Any:
        credentials = self._credentials
        if credentials is None:
            credentials = await self._resolved()
        if credentials is None:
            raise ProviderError(
                "no AWS credentials found (environment, shared credentials/config files, container or instance "
                "role); pass access_key_id and secret_access_key, or configure a profile",
                provider=self._provider, model=model, kind=ErrorKind.account, retryable=False)
        refresh = getattr(credentials, "refresh_needed", None)
        if callable(refresh):  # refreshable (assume-role, SSO): refreshing may do I/O
            frozen = await anyio.to_thread.run_sync(credentials.get_frozen_credentials, abandon_on_cancel=True)
        else:
            frozen = credentials.get_frozen_credentials()
        if self._seen != (frozen.access_key, frozen.secret_key, frozen.token):
            register_secret(frozen.access_key)
            register_secret(frozen.secret_key)
            register_secret(frozen.token)
            self._seen = (frozen.access_key, frozen.secret_key, frozen.token)
        return frozen

    async def _resolved(self) -> Any:
        """botocore's credentials, resolved once for every caller waiting now (``None`` when there are none)."""
        lookups = self._lookups
        async with self._loop_lock():
            if self._credentials is None and self._lookups == lookups:  # else: resolved while this caller waited
                self._credentials = await anyio.to_thread.run_sync(self._resolve, abandon_on_cancel=True)
                self._lookups += 1
            return self._credentials

    def _loop_lock(self) -> anyio.Lock:
        """The running loop's lock (as ``http.bearer``'s, which this wire module may not import).

        A provider outlives an event loop (a second ``anyio.run``, on either backend): a lock made in one
        cannot be waited on in another.  Without ``anyio.lowlevel.current_token`` (anyio < 4.11) each caller
        gets a fresh lock: nothing is serialised, as before there was one.
        """
        current = getattr(anyio.lowlevel, "current_token", None)
        loop = current() if current is not None else None
        if self._lock is None or loop is None or loop != self._lock_loop:
            self._lock, self._lock_loop = anyio.Lock(), loop
        return self._lock

    @staticmethod
    def _resolve() -> Any:
        session = _botocore("session").Session()
        try:
            env = session.get_component("credential_provider").get_provider("env")
        except Exception:  # a botocore without the environment provider: nothing to adjust
            env = None
        if env is not None and hasattr(env, "environ"):
            env.environ = _CredentialEnviron()  # its public attribute (EnvProvider(environ=...))
        return session.get_credentials()


#: The variables botocore's environment provider reads the credentials from.
_CREDENTIAL_VARS = frozenset({"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                              "AWS_SECURITY_TOKEN", "AWS_CREDENTIAL_EXPIRATION", "AWS_ACCOUNT_ID"})


class _CredentialEnviron(Mapping[str, str]):
    """``os.environ`` as botocore's environment provider is given it: a blank credential variable is unset.

    botocore skips only an *empty* ``AWS_ACCESS_KEY_ID``: a whitespace-only one was taken for a key (AWS answered
    403), and a blank ``AWS_SECRET_ACCESS_KEY`` or ``AWS_SESSION_TOKEN`` beside a key was sent as the secret or
    the token.  As for every variable this library reads (docs/wire.md: a blank one is unset), a blank one is
    unset here — the chain goes on to the shared files and roles, or botocore names the missing half — and
    surrounding whitespace (a value read from a file ends in a line break) is stripped, as it is from a given
    credential.  Read live, not copied: credentials with an ``AWS_CREDENTIAL_EXPIRATION`` are refreshed by
    reading the variables again.  Only the resolution reads it (a worker thread, once), never a request.
    """

    def __getitem__(self, name: str) -> str:
        value = os.environ[name]
        if name not in _CREDENTIAL_VARS:
            return value
        value = value.strip()
        if not value:
            raise KeyError(name)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter([name for name in list(os.environ) if name in self])

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str) or name not in os.environ:
            return False
        return name not in _CREDENTIAL_VARS or bool(os.environ[name].strip())
