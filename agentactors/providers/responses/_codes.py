"""The Responses API's ``ResponseError`` codes: whose fault an in-band failure is.

A failure inside an HTTP 200 — a body with ``status: "failed"``, a ``response.failed`` event, an ``error``
event — carries no status, and the shared classifier takes an in-band error it does not know for the
vendor failing mid-answer (a transient 500).  The Responses API documents the codes such a failure carries
(the ``ResponseError.code`` enum of its API reference); most say the request itself is at fault, and retrying
them re-sends the same flagged prompt or the same bad image.  This table gives each the status it would have
come with over HTTP, so the in-band error is classified exactly as the HTTP one is; a flagged prompt or image
is a :attr:`~agentactors.ErrorKind.content_policy` error on both paths (the shared classifier knows
``content_policy_violation`` but not these two names).  A code not listed keeps the shared classifier's answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import ErrorKind, ProviderError
from ..errors import classify_error_body

__all__ = ["classify_in_band", "refine"]

_IMAGE_CODES = (
    "invalid_image",
    "invalid_image_format",
    "invalid_base64_image",
    "invalid_image_url",
    "image_too_large",
    "image_too_small",
    "image_parse_error",
    "invalid_image_mode",
    "image_file_too_large",
    "unsupported_image_media_type",
    "empty_image_file",
    "failed_to_download_image",
    "image_file_not_found",
)

#: Documented ``ResponseError.code`` → the HTTP status it stands for.
_STATUS: Mapping[str, int] = {
    "invalid_prompt": 400,  # "Invalid prompt: your prompt was flagged as potentially violating our usage policy"
    "image_content_policy_violation": 400,
    **dict.fromkeys(_IMAGE_CODES, 400),
    "rate_limit_exceeded": 429,
    "server_error": 500,
    "vector_store_timeout": 500,
}
#: The codes that are a safety refusal, whatever status they came with.
_POLICY = frozenset({"invalid_prompt", "image_content_policy_violation"})


def _code(error: Any) -> str | None:
    code = error.get("code") if isinstance(error, dict) else None
    return code.lower() if isinstance(code, str) else None


def classify_in_band(error: Any, *, provider: str, model: str) -> ProviderError:
    """The classified error of an in-band failure whose ``error`` object is ``error``."""
    code = _code(error)
    status = _STATUS.get(code) if code is not None else None
    err = classify_error_body({"error": error}, provider=provider, model=model, status=status)
    return refine(err, error)


def refine(err: ProviderError, error: Any) -> ProviderError:
    """``err`` as a content-policy error when ``error``'s code is a flagged prompt or image.

    Only a ``request`` verdict is refined: one the vendor's ``x-should-retry`` made transient keeps its word.
    """
    if err.kind is not ErrorKind.request or _code(error) not in _POLICY:
        return err
    return ProviderError(
        err.message,
        provider=err.provider,
        model=err.model,
        kind=ErrorKind.content_policy,
        status=err.status,
        retry_after=err.retry_after,
        retryable=False,
        request_id=err.request_id,
        body_excerpt=err.body_excerpt,
    )
