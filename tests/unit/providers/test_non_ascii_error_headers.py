"""A vendor's error that arrives with a header byte past ASCII (obs-text: legal HTTP, a proxy's header) is still
classified as what it is, over the real transport each wire sends through.

The transport hands such a value on decoded as latin-1; classification once re-encoded it as ASCII and raised, and
the provider's fallback made a 401 a transient "could not be classified" that the retry layer would send again.
Real sockets on 127.0.0.1: a raw listener, as no well-behaved fake sends such a header.
"""

from __future__ import annotations

import json

import anyio
import anyio.abc
import pytest

from agentactors.errors import ErrorKind, ProviderError
from agentactors.messages import LLMRequest, Message
from agentactors.providers.anthropic.provider import AnthropicProvider
from agentactors.providers.openai.provider import OpenAIProvider

pytestmark = pytest.mark.anyio

BODY = json.dumps({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                             "code": "invalid_api_key"}}).encode()
ANSWER = (
    b"HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\nx-proxy-note: caf\xe9 cr\xe8me\r\n"
    b"retry-after: 1\r\nx-request-id: req_\xe91\r\nconnection: close\r\ncontent-length: "
    + str(len(BODY)).encode() + b"\r\n\r\n" + BODY
)


async def _answer(stream: anyio.abc.SocketStream) -> None:
    async with stream:
        received = b""
        while b"\r\n\r\n" not in received:
            received += await stream.receive()
        await stream.send(ANSWER)


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_a_401_with_a_latin1_header_is_an_auth_error_not_a_transient_one(wire: str) -> None:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, _answer)
        base = f"http://127.0.0.1:{port}"
        provider = (OpenAIProvider("gpt-4.1-mini", api_key="sk-test", base_url=f"{base}/v1") if wire == "openai"
                    else AnthropicProvider("claude-sonnet-4-5", api_key="sk-test", base_url=base))
        with anyio.fail_after(30):
            async with provider:
                with pytest.raises(ProviderError) as raised:
                    await provider.complete(LLMRequest([Message.user("q")]))
        tg.cancel_scope.cancel()
    assert raised.value.status == 401, raised.value
    assert raised.value.kind is not ErrorKind.transient, raised.value
