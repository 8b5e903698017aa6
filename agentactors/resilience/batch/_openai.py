"""OpenAI's Batch API: a JSONL file uploaded through Files, a batch over it, output and error files read back.

``POST {base_url}/files`` (multipart: ``purpose=batch``, the file of lines ``{"custom_id", "method": "POST",
"url": "/v1/chat/completions", "body"}``), ``POST {base_url}/batches`` (``input_file_id``, ``endpoint``,
``completion_window: "24h"``), ``GET {base_url}/batches/{id}`` until it ends (``completed``, ``failed``,
``expired``, ``cancelled``), then ``GET {base_url}/files/{id}/content`` for the output file (one line per
item: ``{"custom_id", "response": {"status_code", "body"}, "error"}``) and the error file (items that
failed, or that expired or were cancelled: ``error.code`` ``batch_expired`` / ``batch_cancelled``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ...errors import MalformedResponseError, ProviderError
from ...providers.http.provider import HTTPProvider
from ._api import Line, Outcome, Receipt, Status, decode_item, item_error, model_of, read_results, unread
from ._http import VendorHTTP, dumps
from .errors import BatchError

__all__ = ["OpenAIBatches"]

ENDPOINT: Final = "/v1/chat/completions"
_ENDED: Final = frozenset({"completed", "failed", "expired", "cancelled"})
_GONE: Final = {"batch_expired": "expired", "batch_cancelled": "cancelled"}
#: A failed batch's error codes that are the account's limits, not the input's fault: nothing ran, and the same
#: batch is accepted later ("Enqueued token limit reached ... try again once some in_progress batches have been
#: completed").
_PASSING: Final = frozenset({"token_limit_exceeded", "rate_limit_exceeded"})


class OpenAIBatches:
    """The Batch API of an :class:`~agentactors.OpenAIProvider` (Chat Completions lines)."""

    max_lines = 50_000
    max_bytes = 200 * 1024 * 1024

    def __init__(self, provider: HTTPProvider, http: VendorHTTP) -> None:
        self.provider = provider
        self.http = http
        self.base = provider.base_url

    async def submit(self, model: str, lines: Sequence[Line], receipt: Receipt) -> str:
        text = b"".join(
            dumps({"custom_id": line.custom_id, "method": "POST", "url": ENDPOINT, "body": line.body}) + b"\n"
            for line in lines
        )
        upload = await self.http.json(
            "POST", f"{self.base}/files", model=model, data={"purpose": "batch"},
            files={"file": ("agentactors-batch.jsonl", text, "application/jsonl")},
        )
        receipt.input_file = _id(upload, "file", self.provider.name, model)
        batch = await self.http.json(
            "POST", f"{self.base}/batches", model=model, creates=receipt,
            body={
                "input_file_id": receipt.input_file,
                "endpoint": ENDPOINT,
                "completion_window": "24h",
            },
        )
        return _id(batch, "batch", self.provider.name, model)

    async def status(self, batch_id: str, model: str) -> Status:
        batch = await self.http.json("GET", f"{self.base}/batches/{batch_id}", model=model)
        state = str(batch.get("status", "")) if isinstance(batch, dict) else ""
        if state not in _ENDED:
            return Status(False, state or "unknown", batch)
        failure, code = _failure(batch) if state == "failed" else (None, None)
        ended = state if state in ("expired", "cancelled") else None
        return Status(True, state, batch, failure=failure, ended=ended, passing=code in _PASSING)

    async def results(
        self, batch_id: str, status: Status, lines: Mapping[str, Line], deadline: float = math.inf
    ) -> dict[str, Outcome]:
        """The output file's and the error file's items, each streamed; a file that fails part way keeps what it
        gave, and the items neither file answered get the reading's error (:func:`unread`)."""
        out: dict[str, Outcome] = {}
        batch = status.raw if isinstance(status.raw, dict) else {}
        model = model_of(lines)
        failure: ProviderError | None = None
        for field in ("output_file_id", "error_file_id"):
            file_id = batch.get(field)
            if not isinstance(file_id, str) or not file_id:
                continue
            try:
                await read_results(self.http, f"{self.base}/files/{file_id}/content", model, lines, out,
                                   lambda line, item: self._outcome(line, item, batch_id), deadline)
            except ProviderError as exc:
                failure = failure or exc
        if failure is not None:
            unread(out, lines, failure, batch_id)
        return out

    async def cancel(self, batch_id: str, model: str) -> None:
        await self.http.send("POST", f"{self.base}/batches/{batch_id}/cancel", model=model, body={})

    def _outcome(self, line: Line, item: Mapping[str, Any], batch_id: str) -> Outcome:
        response = item.get("response")
        if isinstance(response, dict) and isinstance(response.get("status_code"), int):
            code = response["status_code"]
            if 200 <= code < 300:
                return decode_item(self.provider, line, response.get("body"), batch_id)
            return item_error(self.provider, line, code, response.get("body") or {})
        found = item.get("error")
        error: Mapping[str, Any] = found if isinstance(found, dict) else {}
        code = str(error.get("code") or "")
        reason = _GONE.get(code, "missing")
        return BatchError(
            f"batch {batch_id}: {error.get('message') or code or 'no result for this request'}",
            provider=self.provider.name, reason=reason, model=line.model, batch_id=batch_id, custom_id=line.custom_id,
        )


def _id(body: Any, what: str, provider: str, model: str) -> str:
    value = body.get("id") if isinstance(body, dict) else None
    if not isinstance(value, str) or not value:
        raise MalformedResponseError(f"the {what} the vendor created has no id", provider=provider, model=model)
    return value


def _failure(batch: Mapping[str, Any]) -> tuple[str, str | None]:
    """Why a failed batch failed, and its first error's code (``None`` when it names none)."""
    errors = batch.get("errors")
    data = errors.get("data") if isinstance(errors, dict) else None
    if isinstance(data, list) and data and isinstance(data[0], dict):
        first = data[0]
        code = first.get("code")
        return str(first.get("message") or code or "the batch failed"), code if isinstance(code, str) else None
    return "the batch failed", None

