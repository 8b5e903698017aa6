"""A ``base_url`` with user info is refused with a message true of every provider (docs/wire.md, the argument table).

Bedrock signs with SigV4 and Vertex sends a bearer token: neither takes ``api_key=``, so a message telling a
Bedrock or Vertex user that "the provider sends its own credential (api_key=)" pointed at a parameter they do
not have.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agentactors import AnthropicProvider, BedrockProvider, GeminiProvider, OpenAIProvider

URL = "https://user:pw-123@gateway.example.com/v1"

MAKERS: dict[str, Callable[[], object]] = {
    "bedrock": lambda: BedrockProvider("amazon.nova-pro-v1:0", region="us-east-1", base_url=URL),
    "vertex": lambda: GeminiProvider.vertex(project="p", token_provider=lambda: "t", base_url=URL),
    "openai": lambda: OpenAIProvider("gpt-4o", base_url=URL),
    "anthropic": lambda: AnthropicProvider("claude-sonnet-4-5", base_url=URL),
}


@pytest.mark.parametrize("wire", sorted(MAKERS))
def test_user_info_refusal_names_no_parameter_the_provider_lacks(wire: str) -> None:
    with pytest.raises(ValueError, match="must not hold a user name or a password") as info:
        MAKERS[wire]()
    message = str(info.value)
    assert "api_key=" not in message
    assert "http_client=httpx.AsyncClient(auth=(user, password))" in message
    assert "pw-123" not in message
