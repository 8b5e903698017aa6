"""Asking a ``tool_policy`` about one call, failing closed.

A policy is the operator's code, run before a tool may run: whatever goes wrong
in it must deny the call, never let it through, nor take the run down.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

from .._containment import escapes
from ..messages import ToolCall
from .approval import NeedsApproval
from .registry import ToolContext

__all__ = ["ask_policy"]

log = logging.getLogger("agentactors.tools")


async def ask_policy(
    policy: Callable[[ToolCall, ToolContext], Any], call: ToolCall, ctx: ToolContext
) -> str | NeedsApproval | None:
    """The policy's reason to deny (``None`` allows, :class:`NeedsApproval` asks a person).

    A policy that fails denies: it fails closed.

    "Fails" as for a tool (:mod:`agentactors._containment`): SystemExit and stray cancellations
    included; a real cancellation, KeyboardInterrupt and GeneratorExit propagate.
    """
    try:
        verdict: Any = policy(call, ctx)
        if inspect.isawaitable(verdict):
            verdict = await verdict
        if verdict is None or isinstance(verdict, NeedsApproval):
            return verdict
        reason = str(verdict)
    except BaseException as exc:
        if escapes(exc):
            raise
        log.warning("tool_policy raised %s for tool %r; the call is denied", type(exc).__name__, call.name)
        return f"the tool policy could not decide ({type(exc).__name__})"
    return reason if reason.strip() else "no reason given"
