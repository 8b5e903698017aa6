"""ScriptedProvider's ``latency`` is checked where the provider is made.

Found by a user's trial of the testing toolkit: ``ScriptedProvider(script, latency=-1)`` (or NaN) was taken,
and every call then failed with anyio's "delay must be a non-negative number" — a ValueError from inside
``complete`` / ``stream``, naming neither the provider nor the argument.
"""

from __future__ import annotations

import math

import pytest

from agentactors import LLMRequest, Message, ScriptedProvider

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("latency", [-1.0, -0.001, math.nan])
def test_a_negative_or_nan_latency_is_refused_at_construction(latency: float) -> None:
    with pytest.raises(ValueError, match="latency"):
        ScriptedProvider(["a"], latency=latency)


async def test_a_zero_latency_still_answers_at_once(anyio_backend: str) -> None:
    provider = ScriptedProvider(["a"], latency=0)
    response = await provider.complete(LLMRequest([Message.user("x")]))
    assert response.content == "a"
