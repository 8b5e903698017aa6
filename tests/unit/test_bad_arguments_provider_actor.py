"""``ProviderActor(...)`` and ``ProviderActor.shared(...)`` refuse what is not a provider, when called.

Before: ``ProviderActor(None)``, ``ProviderActor("openai")`` and ``ProviderActor(ScriptedProvider)`` (the class)
were accepted, and every run through the actor ended with ``provider [request]: AttributeError: ...
'complete'`` in its result; ``ProviderActor.shared(1, p)`` was "'int' object has no attribute 'service'".
"""

from __future__ import annotations

from typing import Any

import pytest

from agentactors import LLMRequest, LLMResponse, ProviderActor, Runtime, ScriptedProvider


class _Sync:
    name = "sync"

    def complete(self, request: LLMRequest) -> LLMResponse:
        return LLMResponse("ok")


BAD: list[tuple[Any, str]] = [(None, "LLMProvider"), ("openai", "LLMProvider"), (ScriptedProvider, "class"),
                              (_Sync(), "async def complete")]
IDS = ["None", "str", "class", "sync-complete"]


@pytest.mark.parametrize(("provider", "says"), BAD, ids=IDS)
def test_provider_actor_refuses_what_is_not_a_provider(provider: Any, says: str) -> None:
    with pytest.raises(TypeError, match=says):
        ProviderActor(provider)


@pytest.mark.anyio
@pytest.mark.parametrize(("provider", "says"), BAD, ids=IDS)
async def test_shared_refuses_what_is_not_a_provider(provider: Any, says: str) -> None:
    async with Runtime() as rt:
        with pytest.raises(TypeError, match=says):
            ProviderActor.shared(rt, provider)


def test_shared_refuses_what_is_not_a_runtime() -> None:
    with pytest.raises(TypeError, match="Runtime"):
        ProviderActor.shared(1, ScriptedProvider(["ok"]))  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_a_provider_is_kept() -> None:
    async with Runtime() as rt:
        ProviderActor(ScriptedProvider(["ok"]))
        ProviderActor.shared(rt, ScriptedProvider(["ok"]))
