"""A forced tool choice a chain or a pool refuses before sending is said as its member says it.

A member made with ``carries_forced_tool_choice=False`` (a server other than the vendor's own) refuses because of
that declaration, not its model: refused by ``with_fallback`` or ``with_pool``, the error said the model "does not
accept a forced tool choice ... use a model that supports it" — sending the user to look for another model — while
the same provider alone, or under ``with_retry``, named the keyword.  Nothing is sent either way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentactors import (
    LLMRequest,
    Message,
    ScriptedProvider,
    ToolChoice,
    ToolSpec,
    with_circuit_breaker,
    with_fallback,
    with_pool,
    with_retry,
)
from agentactors.errors import UnsupportedToolChoiceError

pytestmark = pytest.mark.anyio

FORCED = LLMRequest(
    messages=[Message.user("x")],
    tools=[ToolSpec("look", "Look.", {"type": "object"})],
    tool_choice=ToolChoice.required(),
)


def _members() -> tuple[ScriptedProvider, ScriptedProvider]:
    declared_off = ScriptedProvider(["x"], name="compatible", carries_forced_tool_choice=False)
    able = ScriptedProvider(["x"], name="able")
    return declared_off, able


@pytest.mark.parametrize("compose", [
    lambda off, able: off,
    lambda off, able: with_retry(off),
    lambda off, able: with_fallback(able, with_circuit_breaker(with_retry(off))),
    lambda off, able: with_fallback(with_retry(off), able),
    lambda off, able: with_pool(able, with_retry(off)),
], ids=["alone", "retry", "fallback-second", "fallback-first", "pool"])
async def test_the_refusal_names_the_declaration_whatever_wraps_it(
    compose: Callable[[ScriptedProvider, ScriptedProvider], Any],
) -> None:
    off, able = _members()
    with pytest.raises(UnsupportedToolChoiceError) as refused:
        await compose(off, able).complete(FORCED)
    assert "carries_forced_tool_choice=True" in str(refused.value), refused.value
    assert refused.value.provider == "compatible"
    assert off.calls == 0 and able.calls == 0
