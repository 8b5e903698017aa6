"""A run whose provider raised something else than a ProviderError names that provider in its error.

The loop classifies such an exception (``classify_exception``) as the provider stack's failure; it named every
one ``'provider'``, whatever the provider was called.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentactors import Agent, LLMRequest, LLMResponse, ScriptedProvider
from agentactors.errors import ProviderError

pytestmark = pytest.mark.anyio


class Mine:
    """A duck-typed provider with a name, whose call fails with a plain exception."""

    name = "mine"

    async def complete(self, request: LLMRequest) -> LLMResponse:
        raise RuntimeError("boom")


class Nameless:
    async def complete(self, request: LLMRequest) -> LLMResponse:
        raise RuntimeError("boom")


def boom(request: LLMRequest) -> Any:
    raise RuntimeError("boom")


@pytest.mark.parametrize(("provider", "named"), [
    (Mine(), "mine"),
    (ScriptedProvider(boom, name="scripted"), "scripted"),
    (Nameless(), "provider"),
])
async def test_a_plain_exception_is_the_failure_of_the_provider_that_raised_it(provider: Any, named: str) -> None:
    result = await Agent(provider).run("hi")
    assert result.generation_failed
    assert isinstance(result.error, ProviderError)
    assert result.error.provider == named
    assert "boom" in str(result.error)
