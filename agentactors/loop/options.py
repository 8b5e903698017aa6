"""``RunOptions``: what one run takes beyond its messages, as one value from the entry point to the loop.

The keywords of :meth:`Agent.run <agentactors.agent.core.Agent.run>` and ``Agent.stream`` (the token
callback, deps, settings, deadline, priority, input key, cost limit) travel as one frozen value — the agent
layer checks them and makes it, the run's :class:`~agentactors.loop.controller.LoopController` keeps it —
instead of a keyword per option through every layer and a field per option in every run in flight.
:data:`NO_OPTIONS` (every option at its default) is shared: a plain ``agent.run(prompt)`` builds none.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import attrs

from ..gateway.cost_budget import CostBudget
from ..settings import ModelSettings

__all__ = ["NO_OPTIONS", "RunOptions"]


@attrs.frozen(slots=True)
class RunOptions:
    """What one run takes beyond its messages: the keywords of :meth:`Agent.run` / :meth:`Agent.stream`.

    One value travels from the entry point to the run's :class:`~agentactors.loop.controller.LoopController`
    instead of a keyword per option through every layer.  ``NO_OPTIONS`` (all defaults) is shared, so a
    plain ``agent.run(prompt)`` builds none.
    """

    on_token: Callable[[str], None] | None = None
    deps: Any = attrs.field(default=None, repr=False)
    settings: ModelSettings | None = None
    deadline: float | None = None
    priority: int | None = None
    input_key: str | None = None
    cost_limit: float | CostBudget | None = None


NO_OPTIONS: Final = RunOptions()
