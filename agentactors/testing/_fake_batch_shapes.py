"""The three vendors' batch objects and results files, as the FakeVendor serves them.

Written from the vendors' API references (OpenAI's Batch and Files objects, Anthropic's MessageBatch and
results lines, Gemini's batch operation and inlined responses), independently of the client in
:mod:`agentactors.resilience.batch`.  Each function takes a :class:`BatchRecord` (what the fake knows
of a batch) and returns the vendor's JSON.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

__all__ = ["BatchRecord", "ItemAnswer", "anthropic_batch", "anthropic_results", "gemini_operation",
           "openai_batch", "openai_files"]


@attrs.define(slots=True)
class ItemAnswer:
    """One line's answer: an HTTP status and the body a single request would have got (``None``: not run)."""

    custom_id: str
    status: int | None = None
    body: Any = None


@attrs.define(slots=True)
class BatchRecord:
    """A submitted batch: its lines' answers (decided on submission) and where it is in its life."""

    id: str
    wire: str
    model: str | None
    answers: list[ItemAnswer]
    created: float
    polls: int = 0
    status: str = "in_progress"  # in_progress | completed | failed | expired | cancelled
    failure: str | None = None
    failure_code: str = "batch_failed"  # OpenAI's errors.data[].code for a failed batch
    failure_line: int | None = None  # the input file's line it names (a validation error's), 1-based
    base_url: str = ""
    output_file: str | None = None
    error_file: str | None = None

    @property
    def ended(self) -> bool:
        return self.status != "in_progress"

    def counts(self) -> tuple[int, int, int]:
        """``(answered ok, answered with an error, not run)``."""
        ok = sum(1 for a in self.answers if a.status is not None and 200 <= a.status < 300)
        failed = sum(1 for a in self.answers if a.status is not None and not 200 <= a.status < 300)
        return ok, failed, len(self.answers) - ok - failed


def _jsonl(items: list[Any]) -> bytes:
    return b"".join(json.dumps(i, ensure_ascii=False).encode("utf-8") + b"\n" for i in items)


# --- OpenAI ----------------------------------------------------------------------------------------


def openai_batch(b: BatchRecord, input_file: str) -> dict[str, Any]:
    ok, failed, _ = b.counts()
    status = b.status if b.ended else ("validating" if b.polls == 0 else "in_progress")
    when = int(b.created)
    return {
        "id": b.id, "object": "batch", "endpoint": "/v1/chat/completions",
        "errors": {"object": "list", "data": [{"code": b.failure_code, "message": b.failure, "param": None,
                                               "line": b.failure_line}]} if b.failure else None,
        "input_file_id": input_file, "completion_window": "24h", "status": status,
        "output_file_id": b.output_file, "error_file_id": b.error_file,
        "created_at": when, "in_progress_at": when, "expires_at": when + 86400,
        "completed_at": when if b.status == "completed" else None,
        "failed_at": when if b.status == "failed" else None,
        "expired_at": when if b.status == "expired" else None,
        "cancelled_at": when if b.status == "cancelled" else None,
        "request_counts": {"total": len(b.answers), "completed": ok, "failed": failed},
        "metadata": None,
    }


def openai_files(b: BatchRecord) -> tuple[bytes, bytes]:
    """``(output file, error file)``: answered lines in the first, failed and unrun ones in the second."""
    output: list[Any] = []
    errors: list[Any] = []
    code = {"expired": "batch_expired", "cancelled": "batch_cancelled"}.get(b.status, "batch_failed")
    for n, a in enumerate(b.answers):
        base = {"id": f"batch_req_{b.id}_{n}", "custom_id": a.custom_id}
        if a.status is None:
            message = "This request could not be executed before the completion window expired." \
                if code == "batch_expired" else "This request was not executed: the batch was cancelled."
            errors.append({**base, "response": None, "error": {"code": code, "message": message}})
        else:
            line = {**base, "response": {"status_code": a.status, "request_id": f"req_{b.id}_{n}", "body": a.body},
                    "error": None}
            (output if 200 <= a.status < 300 else errors).append(line)
    return _jsonl(output), _jsonl(errors)


# --- Anthropic -------------------------------------------------------------------------------------

_ANTHROPIC_KINDS = {"expired": "expired", "cancelled": "canceled"}


def anthropic_batch(b: BatchRecord) -> dict[str, Any]:
    ok, failed, unrun = b.counts()
    gone = _ANTHROPIC_KINDS.get(b.status)
    when = "2026-01-01T00:00:00Z"
    return {
        "id": b.id, "type": "message_batch",
        "processing_status": "ended" if b.ended else "in_progress",
        "request_counts": {
            "processing": 0 if b.ended else len(b.answers), "succeeded": ok if b.ended else 0,
            "errored": failed if b.ended else 0, "canceled": unrun if gone == "canceled" else 0,
            "expired": unrun if gone == "expired" else 0,
        },
        "ended_at": when if b.ended else None, "created_at": when, "expires_at": "2026-01-02T00:00:00Z",
        "archived_at": None, "cancel_initiated_at": when if b.status == "cancelled" else None,
        "results_url": f"{b.base_url}/v1/messages/batches/{b.id}/results" if b.ended else None,
    }


def anthropic_results(b: BatchRecord) -> bytes:
    lines = []
    for a in b.answers:
        if a.status is None and b.failure is not None:  # no failed batches at Anthropic: each item errors
            result: dict[str, Any] = {"type": "errored", "error": {"type": "error", "error": {
                "type": "api_error", "message": b.failure}}}
        elif a.status is None:
            result = {"type": _ANTHROPIC_KINDS.get(b.status, "expired")}
        elif 200 <= a.status < 300:
            result = {"type": "succeeded", "message": a.body}
        else:
            error = a.body if isinstance(a.body, dict) else {"type": "error", "error": {"type": "api_error"}}
            result = {"type": "errored", "error": {k: v for k, v in error.items() if k != "request_id"}}
        lines.append({"custom_id": a.custom_id, "result": result})
    return _jsonl(lines)


# --- Gemini ----------------------------------------------------------------------------------------

_GEMINI_STATES = {"in_progress": "BATCH_STATE_RUNNING", "completed": "BATCH_STATE_SUCCEEDED",
                  "failed": "BATCH_STATE_FAILED", "expired": "BATCH_STATE_EXPIRED",
                  "cancelled": "BATCH_STATE_CANCELLED"}


def gemini_operation(b: BatchRecord) -> dict[str, Any]:
    ok, failed, unrun = b.counts()
    state = "BATCH_STATE_PENDING" if not b.ended and b.polls == 0 else _GEMINI_STATES[b.status]
    metadata = {
        "@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
        "model": f"models/{b.model}", "displayName": b.id, "name": f"batches/{b.id}", "state": state,
        "createTime": "2026-01-01T00:00:00Z",
        "batchStats": {"requestCount": str(len(b.answers)), "successfulRequestCount": str(ok),
                       "failedRequestCount": str(failed), "pendingRequestCount": str(unrun)},
    }
    op: dict[str, Any] = {"name": f"batches/{b.id}", "metadata": metadata, "done": b.ended}
    if b.failure:
        op["error"] = {"code": 13, "message": b.failure}
    elif b.ended:
        # In the order of the requests; the vendor does not echo the requests' metadata back.
        inlined = [{"response": a.body} if 200 <= a.status < 300 else {"error": _gemini_status(a)}
                   for a in b.answers if a.status is not None]
        op["response"] = {
            "@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput",
            "inlinedResponses": {"inlinedResponses": inlined},
        }
    return op


def _gemini_status(a: ItemAnswer) -> dict[str, Any]:
    error = a.body.get("error") if isinstance(a.body, dict) else None
    return error if isinstance(error, dict) else {"code": a.status, "message": "error", "status": "UNKNOWN"}
