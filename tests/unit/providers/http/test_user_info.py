"""HTTP Basic credentials: the way the refusal of user info in a ``base_url`` names works, and never shows them.

``base_url="https://user:password@host"`` is refused (tests/unit/providers/test_provider_config.py): httpx made it
``Authorization: Basic ...`` and the h11 sender dropped it.  The refusal names ``http_client=httpx.AsyncClient(auth=
...)``; a Basic credential sent that way, which the library is never told of, is still masked by its shape when an
echoing vendor puts it in an error.
"""

from __future__ import annotations

import base64
import traceback

import httpx
import pytest

from agentactors.errors import ProviderError
from agentactors.messages import LLMRequest, Message
from agentactors.providers.openai.provider import OpenAIProvider

pytestmark = pytest.mark.anyio

PASSWORD = "pwCLIENTauth-2718281828"
BASIC = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
REQUEST = LLMRequest([Message.user("hi")])
OK = {
    "id": "r1",
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
}


async def test_a_client_with_basic_auth_sends_it_as_the_refusal_says(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    seen: list[str | None] = []

    def respond(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization"))
        return httpx.Response(200, json=OK)

    async with httpx.AsyncClient(auth=("alice", PASSWORD), transport=httpx.MockTransport(respond)) as client:
        provider = OpenAIProvider("m", base_url="http://vendor.test/v1", http_client=client)
        await provider.complete(REQUEST)
    assert seen == [f"Basic {BASIC}"]


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
async def test_a_basic_credential_a_vendor_echoes_is_masked_in_the_error(
    monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    def echo(request: httpx.Request) -> httpx.Response:
        head = "".join(f"{k}: {v}\r\n" for k, v in request.headers.items())
        return httpx.Response(401, json={"error": {"message": "you sent " + head, "type": "authentication_error"}})

    async with httpx.AsyncClient(auth=("alice", PASSWORD), transport=httpx.MockTransport(echo)) as client:
        provider = OpenAIProvider("m", base_url="http://vendor.test/v1", http_client=client)
        with pytest.raises(ProviderError) as info:
            if stream:
                async with provider.stream(REQUEST) as events:
                    async for _ in events:
                        pass
            else:
                await provider.complete(REQUEST)
    error = info.value
    texts = [str(error), repr(error), error.body_excerpt or "", "".join(traceback.format_exception(error))]
    assert all(BASIC not in text and BASIC[:12] not in text for text in texts), texts
    assert "Basic [REDACTED]" in str(error)
