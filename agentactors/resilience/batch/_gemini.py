"""Gemini's Batch Mode: ``models/{model}:batchGenerateContent`` with inline requests, a long-running operation.

``POST {base_url}/v1beta/models/{model}:batchGenerateContent`` (``batch.input_config.requests.requests``:
``{"request": <the generateContent body>, "metadata": {"key": <custom id>}}``) answers an operation named
``batches/{id}``; ``GET {base_url}/v1beta/batches/{id}`` until it is ``done`` (its state
``BATCH_STATE_SUCCEEDED`` / ``FAILED`` / ``CANCELLED`` / ``EXPIRED``).  The answers are inline, in the order of
the requests (``inlinedResponses``: ``{"response"}`` or ``{"error": Status}``), which is how they are matched
(the vendor does not echo the metadata back).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ...errors import MalformedResponseError
from ...providers.http.provider import HTTPProvider
from ._api import Line, OpenLines, Outcome, Receipt, Status, decode_item, index_of, item_error, keep
from ._http import VendorHTTP

__all__ = ["GeminiBatches"]

_ENDED: Final = {"SUCCEEDED": None, "FAILED": "failed", "CANCELLED": "cancelled", "EXPIRED": "expired"}


def _state(value: Any) -> str:
    """``BATCH_STATE_SUCCEEDED`` (or the SDKs' ``JOB_STATE_…``) as ``SUCCEEDED``."""
    text = str(value or "")
    for prefix in ("BATCH_STATE_", "JOB_STATE_"):
        if text.startswith(prefix):
            return text[len(prefix):]
    return text


def _dig(value: Any, *keys: str) -> Any:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


class GeminiBatches:
    """The Batch Mode of a :class:`~agentactors.GeminiProvider` (inline requests)."""

    max_lines = 100_000
    max_bytes = 20_000_000  # inline requests: "under 20 MB" in all; past it, Gemini wants an uploaded file

    def __init__(self, provider: HTTPProvider, http: VendorHTTP) -> None:
        self.provider = provider
        self.http = http

    async def submit(self, model: str, lines: Sequence[Line], receipt: Receipt) -> str:
        url = self.provider.codec.url(self.provider.base_url, model, stream=False)
        url = url.rsplit(":", 1)[0] + ":batchGenerateContent"
        requests = [{"request": line.body, "metadata": {"key": line.custom_id}} for line in lines]
        body = {"batch": {"display_name": f"agentactors-{lines[0].custom_id}",
                          "input_config": {"requests": {"requests": requests}}}}
        operation = await self.http.json("POST", url, model=model, body=body, creates=receipt)
        name = operation.get("name") if isinstance(operation, dict) else None
        if not isinstance(name, str) or not name.startswith("batches/"):
            raise MalformedResponseError("the batch operation the vendor created has no batches/ name",
                                         provider=self.provider.name, model=model)
        return name.removeprefix("batches/")

    async def status(self, batch_id: str, model: str) -> Status:
        op = await self.http.json("GET", f"{self.provider.base_url}/v1beta/batches/{batch_id}", model=model)
        state = _state(_dig(op, "metadata", "state") or _dig(op, "state"))
        error = _dig(op, "error")
        done = bool(_dig(op, "done")) or state in _ENDED
        if not done:
            return Status(False, state or "unknown", op)
        if isinstance(error, dict) or state == "FAILED":
            message = error.get("message") if isinstance(error, dict) else None
            return Status(True, state or "FAILED", op, failure=str(message or "the batch failed"))
        return Status(True, state, op, ended=_ENDED.get(state))

    async def results(
        self, batch_id: str, status: Status, lines: Mapping[str, Line], deadline: float = math.inf
    ) -> dict[str, Outcome]:
        op = status.raw
        answers = (
            _dig(op, "response", "inlinedResponses", "inlinedResponses")
            or _dig(op, "metadata", "output", "inlinedResponses", "inlinedResponses")
            or _dig(op, "output", "inlinedResponses", "inlinedResponses")
            or []
        )
        by_index = {index_of(custom_id): line for custom_id, line in lines.items()}
        out: dict[str, Outcome] = {}
        for index, answer in enumerate(answers if isinstance(answers, list) else []):
            key = _dig(answer, "metadata", "key")
            line = lines.get(key) if isinstance(key, str) else by_index.get(index)  # echoed back: trust it
            if line is None and not isinstance(key, str) and isinstance(lines, OpenLines):
                line = lines.at(index)  # collected by its batch's id: the custom ids are not known, the order is
            if line is not None:
                keep(out, line.custom_id, self._outcome(line, answer, batch_id))
        return out

    async def cancel(self, batch_id: str, model: str) -> None:
        await self.http.send("POST", f"{self.provider.base_url}/v1beta/batches/{batch_id}:cancel", model=model,
                             body={})

    def _outcome(self, line: Line, answer: Any, batch_id: str) -> Outcome:
        error = _dig(answer, "error")
        if isinstance(error, dict):
            code = error.get("code")
            return item_error(self.provider, line, code if isinstance(code, int) else 500, {"error": error})
        return decode_item(self.provider, line, _dig(answer, "response"), batch_id)
