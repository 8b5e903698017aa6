"""The errors of batch-backed calls: an item not answered, a batch that failed, a wire without a batch API."""

from __future__ import annotations

from typing import Any

from ...errors import ErrorKind, ProviderError

__all__ = ["BatchError", "BatchUnsupportedError"]


class BatchError(ProviderError):
    """A request sent through a vendor's batch API got no answer: its item, or the whole batch, ended without one.

    ``reason`` says how: ``"expired"`` (the batch's completion window passed before the item ran),
    ``"cancelled"`` (the batch was cancelled), ``"failed"`` (the vendor failed the whole batch),
    ``"missing"`` (the batch ended without a result for the item), ``"poll"`` (the batch, or its results
    file, could no longer be read), ``"timeout"`` (the batch was still running after the provider's
    ``max_wait``; it was cancelled at the vendor), ``"unconfirmed"`` (the request that creates the batch may
    have been accepted, but no batch id came back: it is not sent again, which could make a second batch billed
    twice) or ``"too_large"`` (the request alone is past the most a batch of its vendor may hold: refused before
    anything is sent, a request error).  Expired, cancelled, missing and unreadable items are retryable — sent
    again, they are answered — and so transient; a failed batch is the vendor refusing what was submitted, and not
    (unless it failed for the account's limit — OpenAI's enqueued-token limit —, when nothing ran: then it is
    transient and retryable); a timed-out one is transient but not retryable (a retry would wait as long), and so
    is an unconfirmed one (a retry could pay twice).  An item the vendor answered with an error is that error as
    the wire classifies it (a 400 is a request error), not a ``BatchError``.  ``batch_id`` and ``custom_id`` name
    the batch and the item in it (``None`` when the request never reached a batch).
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        reason: str,
        model: str | None = None,
        batch_id: str | None = None,
        custom_id: str | None = None,
        kind: ErrorKind | str | None = None,
        retryable: bool | None = None,
        **kw: Any,
    ) -> None:
        if kind is None:
            kind = ErrorKind.request if reason == "failed" else ErrorKind.transient
        super().__init__(message, provider=provider, kind=kind, model=model, retryable=retryable, **kw)
        self.reason = reason
        self.batch_id = batch_id
        self.custom_id = custom_id


class BatchUnsupportedError(ProviderError):
    """:class:`~agentactors.BatchProvider` was given a provider whose wire has no batch API it can drive.

    Raised when the BatchProvider is made, before anything is sent: OpenAI's Chat Completions, Anthropic's
    Messages and Gemini's generateContent (each at the vendor's own endpoint) have one; the Responses wire,
    Bedrock, the Vertex AI and Azure endpoints, and providers that are not HTTP wires (a decorated provider,
    a test double) have not here.  A request error: nothing about it is retryable.
    """

    def __init__(self, message: str, *, provider: str) -> None:
        super().__init__(message, provider=provider, kind=ErrorKind.request, retryable=False)
