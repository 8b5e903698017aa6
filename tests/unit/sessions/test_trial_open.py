"""Opening a session with what is not an agent: a ``TypeError`` saying what is wanted, not an ``AttributeError``.

``rt.session(agent, key)`` hands the call to ``agent.session``; given something with no ``session`` (a string, a
provider, an agent of one's own with ``run`` and ``resume`` only) it failed with ``'str' object has no attribute
'session'``.  ``open_session`` already refused an agent without ``run`` and ``resume`` with a ``TypeError``.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentactors.actors.runtime import Runtime
from agentactors.providers.scripted import ScriptedProvider

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class OwnAgent:
    """An agent of one's own (a SessionAgent): it runs and resumes, and has no ``session``."""

    name = "own"

    async def run(self, prompt: Any, **kwargs: Any) -> Any:
        raise AssertionError("not run")

    async def resume(self, state: Any, decisions: Any, **kwargs: Any) -> Any:
        raise AssertionError("not run")


@pytest.mark.parametrize("agent", ["support", ScriptedProvider(["hi"]), OwnAgent(), None])
async def test_what_is_not_an_agent_is_a_type_error_naming_it(agent: Any) -> None:
    async with Runtime() as rt:
        with pytest.raises(TypeError, match=rf"rt\.session\(\) takes an agent .*not {type(agent).__name__}"):
            rt.session(agent, "user-1")
