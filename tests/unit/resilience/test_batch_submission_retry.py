"""A batch submission whose outcome is unknown is never retried into a second vendor batch (virtual time).

The vendors take no idempotency key on batch creation: a create request the vendor may have accepted (its answer
lost to the submission bound, a dropped connection, a 5xx) and then sent again makes a second batch of the same
work, billed twice.  So such a failure is final (``BatchError(reason="unconfirmed")``, not retryable), while a
failure known to have created nothing (the connection never opened, a 4xx refusal, the file upload) stays retryable.

The vendor is an in-memory fake behind ``httpx.MockTransport`` (no socket, so the autojumping clocks apply).
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest

from agentactors import BatchProvider, LLMRequest, Message, OpenAIProvider, with_retry
from agentactors.resilience.batch import BatchError
from agentactors.resilience.batch.provider import SUBMIT_BOUND

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

KEY = "sk-unit-secret-key-4242"


class Vendor:
    """OpenAI's Files + Batch API in memory; ``creating`` says how each create request goes (one entry per try):
    ``"ok"``, ``"slow"`` (created, answered after the submission bound), ``"drop"`` (created, then the connection
    drops), ``"500"`` (created, answered 500), ``"refuse"`` (a 400, nothing created), ``"connect"`` (the connection
    never opens)."""

    def __init__(self, *creating: str) -> None:
        self.creating = list(creating)
        self.batches: list[str] = []  # the batches the vendor created (and bills)
        self.tries = 0
        self.lines: list[dict[str, Any]] = []

    async def handler(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/v1/files":
            body = (await request.aread()).decode()
            self.lines = [json.loads(t) for t in body.splitlines() if t.startswith('{"custom_id"')]
            return httpx.Response(200, json={"id": "file-in"})
        if path == "/v1/batches":
            how = self.creating[self.tries] if self.tries < len(self.creating) else "ok"
            self.tries += 1
            if how == "connect":
                raise httpx.ConnectError("connection refused")
            if how == "refuse":
                error = {"message": "bad input file", "type": "invalid_request_error"}
                return httpx.Response(400, json={"error": error})
            batch_id = f"batch-{len(self.batches) + 1}"
            self.batches.append(batch_id)
            if how == "slow":
                await anyio.sleep(SUBMIT_BOUND + 60)
            elif how == "drop":
                raise httpx.RemoteProtocolError("server disconnected without sending a response")
            elif how == "500":
                return httpx.Response(500, json={"error": {"message": "internal error", "type": "server_error"}})
            return httpx.Response(200, json={"id": batch_id, "status": "validating"})
        if path.startswith("/v1/batches/"):
            batch_id = path.rsplit("/", 1)[-1]
            return httpx.Response(200, json={"id": batch_id, "status": "completed", "output_file_id": "file-out"})
        if path == "/v1/files/file-out/content":
            out: list[str] = []
            for line in self.lines:
                text = line["body"]["messages"][-1]["content"]
                answer: dict[str, Any] = {"id": "c", "object": "chat.completion", "model": line["body"]["model"],
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": f"Echo: {text}"},
                                     "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}
                result = {"status_code": 200, "body": answer}
                out.append(json.dumps({"custom_id": line["custom_id"], "response": result}))
            return httpx.Response(200, content="\n".join(out).encode())
        return httpx.Response(404, json={"error": {"message": "no such endpoint"}})


def _retried(vendor: Vendor) -> Any:
    client = httpx.AsyncClient(transport=httpx.MockTransport(vendor.handler))
    inner = OpenAIProvider("gpt-4o-mini", api_key=KEY, base_url="https://api.openai.com/v1", http_client=client)
    batch = BatchProvider(inner, window=1.0, poll_every=10.0)
    return with_retry(batch, max_attempts=3, base_delay=1.0)


async def _ask(provider: Any) -> Any:
    with anyio.fail_after(24 * 3600):
        try:
            return await provider.complete(LLMRequest([Message.user("hi")]))
        except Exception as exc:
            return exc


@pytest.mark.parametrize("how", ["slow", "drop", "500"])
async def test_a_create_request_the_vendor_may_have_accepted_is_not_submitted_again(
    anyio_backend: Any, how: str
) -> None:
    # Before: the bound's (or the transport's) error was retryable, and with_retry submitted the same work again —
    # two vendor batches, both billed.  Now the call fails at once, saying the batch may exist.
    vendor = Vendor(how)
    got = await _ask(_retried(vendor))
    assert vendor.batches == ["batch-1"], vendor.batches
    assert vendor.tries == 1
    assert isinstance(got, BatchError) and got.reason == "unconfirmed"
    assert not got.retryable
    assert KEY not in str(got)


@pytest.mark.parametrize("how", ["connect", "refuse_then_ok"])
async def test_a_create_request_known_to_have_made_nothing_is_still_retried(anyio_backend: Any, how: str) -> None:
    # A connection that never opened, or a vendor that answered with a refusal, created no batch: retrying is safe
    # (a 400 is a request error and not retried by with_retry; the direct BatchProvider call shows it kept its kind).
    if how == "connect":
        vendor = Vendor("connect")
        got = await _ask(_retried(vendor))
        assert getattr(got, "content", None) == "Echo: hi", got
        assert vendor.tries == 2 and vendor.batches == ["batch-1"]
    else:
        vendor = Vendor("refuse")
        got = await _ask(_retried(vendor))
        assert not isinstance(got, BatchError) and getattr(got, "status", None) == 400, got
        assert vendor.batches == []
