"""The FakeVendor's batch APIs, leftovers of the audits: as OpenAI's, an input file naming a ``custom_id`` twice makes
a batch that fails validation (``duplicate_custom_id``), and a whole batch can fail with the account's enqueued-token
limit (``token_limit_exceeded``) — which the BatchProvider takes as retryable, end to end over HTTP.

Real clocks (a real server): short windows and poll intervals, bounds generous.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest

from agentactors import BatchProvider, LLMRequest, LLMResponse, Message, OpenAIProvider
from agentactors.errors import ErrorKind
from agentactors.resilience.batch import BatchError
from agentactors.testing import FakeVendor

pytestmark = pytest.mark.anyio

KEY = "sk-fake-batch-key-leftovers-0123"
DUPLICATE = ("The custom_id for this request is a duplicate of another request. The custom_id parameter must be "
             "unique for each request in a batch.")


def _line(custom_id: str, text: str) -> bytes:
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": text}]}
    return json.dumps({"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": body}).encode()


async def _status_until_ended(client: httpx.AsyncClient, url: str) -> dict[str, Any]:
    with anyio.fail_after(10):
        while True:
            batch = (await client.get(url)).json()
            if batch["status"] not in ("validating", "in_progress"):
                return batch  # type: ignore[no-any-return]
            await anyio.sleep(0.01)


async def test_an_openai_input_file_naming_a_custom_id_twice_makes_a_batch_that_fails_validation(
    anyio_backend: Any,
) -> None:
    async with FakeVendor(expected_api_key=KEY) as fv, httpx.AsyncClient(
        base_url=fv.openai_base_url, headers={"authorization": f"Bearer {KEY}"}
    ) as client:
        data = b"\n".join([_line("a", "one"), _line("b", "two"), _line("a", "three")]) + b"\n"
        upload = await client.post("/files", data={"purpose": "batch"},
                                   files={"file": ("in.jsonl", data, "application/jsonl")})
        created = await client.post("/batches", json={"input_file_id": upload.json()["id"],
                                                      "endpoint": "/v1/chat/completions", "completion_window": "24h"})
        assert created.status_code == 200 and created.json()["status"] == "validating"  # as OpenAI: made, then failed
        batch = await _status_until_ended(client, f"/batches/{created.json()['id']}")
        assert batch["status"] == "failed" and batch["output_file_id"] is None
        (error,) = batch["errors"]["data"]
        assert error["code"] == "duplicate_custom_id" and error["line"] == 3 and error["message"] == DUPLICATE
        assert batch["request_counts"] == {"total": 3, "completed": 0, "failed": 0}
        assert fv.batches.submissions[0].status == "failed"


async def test_the_fake_fails_a_batch_with_openais_enqueued_token_limit(anyio_backend: Any) -> None:
    async with FakeVendor(expected_api_key=KEY) as fv:
        fv.batches.plan(fail_code="token_limit_exceeded")
        provider = OpenAIProvider("gpt-4o-mini", api_key=KEY, base_url=fv.openai_base_url)
        batched = BatchProvider(provider, window=0.05, poll_every=0.02)
        request = LLMRequest([Message.user("q")], max_tokens=50)
        with anyio.fail_after(30), pytest.raises(BatchError) as failed:
            await batched.complete(request)
        error = failed.value
        # The library's retryable handling of it, end to end: nothing ran, the same request is answered later.
        assert error.reason == "failed" and error.retryable and error.kind is ErrorKind.transient
        assert "Enqueued token limit reached" in str(error) and KEY not in str(error)
        fv.batches.plan()  # the batches in progress have ended: the account's limit has room again
        with anyio.fail_after(30):
            answer = await batched.complete(request)
        assert isinstance(answer, LLMResponse) and answer.content == "Echo: q"
        assert [b.status for b in fv.batches.submissions] == ["failed", "completed"]


async def test_a_failure_code_for_a_whole_batch_keeps_a_given_message(anyio_backend: Any) -> None:
    async with FakeVendor(expected_api_key=KEY) as fv:
        fv.batches.plan(fail="the input could not be validated", fail_code="invalid_json_line")
        provider = OpenAIProvider("gpt-4o-mini", api_key=KEY, base_url=fv.openai_base_url)
        with anyio.fail_after(30), pytest.raises(BatchError) as failed:
            await BatchProvider(provider, window=0.05, poll_every=0.02).complete(LLMRequest([Message.user("q")]))
        assert not failed.value.retryable and failed.value.kind is ErrorKind.request
        assert "could not be validated" in str(failed.value)


def test_plan_refuses_a_failure_code_that_is_not_a_word() -> None:
    fv = FakeVendor(expected_api_key=KEY)
    for bad in ("", "two words", 7):
        with pytest.raises((ValueError, TypeError)):
            fv.batches.plan(fail_code=bad)  # type: ignore[arg-type]
