"""Anthropic's Message Batches: ``/v1/messages/batches`` with one ``{custom_id, params}`` per request.

``POST {base_url}/v1/messages/batches`` (``requests``: the Messages bodies as ``params``),
``GET {base_url}/v1/messages/batches/{id}`` until ``processing_status`` is ``ended``, then its
``results_url`` (JSONL: ``{"custom_id", "result": {"type": "succeeded", "message"} | {"type": "errored",
"error"} | {"type": "canceled"} | {"type": "expired"}}``).  The results URL is the vendor's answer: it is
read with the key only when it is on the provider's own origin (never elsewhere).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ...errors import MalformedResponseError, ProviderError
from ...providers.http.provider import HTTPProvider
from ._api import Line, Outcome, Receipt, Status, decode_item, item_error, model_of, read_results, unread
from ._http import VendorHTTP
from .errors import BatchError

__all__ = ["AnthropicBatches"]

# An errored item's error type, as the HTTP status a single call would have answered with.
_STATUS: Final = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}
_GONE: Final = {"expired": "expired", "canceled": "cancelled"}


class AnthropicBatches:
    """The Message Batches API of an :class:`~agentactors.AnthropicProvider`."""

    max_lines = 100_000
    max_bytes = 256 * 1024 * 1024

    def __init__(self, provider: HTTPProvider, http: VendorHTTP) -> None:
        self.provider = provider
        self.http = http
        self.url = provider.base_url + "/v1/messages/batches"

    async def submit(self, model: str, lines: Sequence[Line], receipt: Receipt) -> str:
        requests = [{"custom_id": line.custom_id, "params": line.body} for line in lines]
        batch = await self.http.json("POST", self.url, model=model, body={"requests": requests}, creates=receipt)
        value = batch.get("id") if isinstance(batch, dict) else None
        if not isinstance(value, str) or not value:
            raise MalformedResponseError("the batch the vendor created has no id", provider=self.provider.name,
                                         model=model)
        return value

    async def status(self, batch_id: str, model: str) -> Status:
        batch = await self.http.json("GET", f"{self.url}/{batch_id}", model=model)
        state = str(batch.get("processing_status", "")) if isinstance(batch, dict) else ""
        if state != "ended":
            return Status(False, state or "unknown", batch)
        # Its results file holds a line for every request, an expired one too ({"type": "expired"}): a request
        # without a line is missing from it, not expired, unless the batch was cancelled before it ran.
        cancelled = isinstance(batch, dict) and batch.get("cancel_initiated_at") is not None
        return Status(True, state, batch, ended="cancelled" if cancelled else None)

    async def results(
        self, batch_id: str, status: Status, lines: Mapping[str, Line], deadline: float = math.inf
    ) -> dict[str, Outcome]:
        """The results file's items, streamed; one that fails part way keeps what it gave (:func:`unread`)."""
        batch = status.raw if isinstance(status.raw, dict) else {}
        url = batch.get("results_url")
        model = model_of(lines)
        if not isinstance(url, str) or not url:
            url = f"{self.url}/{batch_id}/results"
        out: dict[str, Outcome] = {}
        try:
            await read_results(self.http, url, model, lines, out,
                               lambda line, item: self._outcome(line, item.get("result"), batch_id), deadline)
        except ProviderError as exc:
            unread(out, lines, exc, batch_id)
        return out

    async def cancel(self, batch_id: str, model: str) -> None:
        await self.http.send("POST", f"{self.url}/{batch_id}/cancel", model=model, body={})

    def _outcome(self, line: Line, found: Any, batch_id: str) -> Outcome:
        result: Mapping[str, Any] = found if isinstance(found, dict) else {}
        kind = result.get("type")
        if kind == "succeeded":
            return decode_item(self.provider, line, result.get("message"), batch_id)
        if kind == "errored":
            body = result["error"] if isinstance(result.get("error"), dict) else {}
            inner = body["error"] if isinstance(body.get("error"), dict) else {}
            return item_error(self.provider, line, _STATUS.get(str(inner.get("type")), 500), body)
        reason = _GONE.get(str(kind), "missing")
        return BatchError(
            f"batch {batch_id}: the request {'expired' if reason == 'expired' else 'was ' + reason} in the batch"
            if reason != "missing" else f"batch {batch_id}: an item of unknown result type {kind!r}",
            provider=self.provider.name, reason=reason, model=line.model, batch_id=batch_id,
            custom_id=line.custom_id,
        )
