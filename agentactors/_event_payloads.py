"""What the loop's run events carry: each payload built here, beside the classes that name it (:mod:`.events`).

The loop says *that* something happened — a run started, was resumed, paused, handed off, passed its
deadline, answered or ended — and these functions say *what a recorder reads about it*, so the keys a
recorder, ``explain()`` or the OpenTelemetry bridge relies on are written in one place rather than spread
through the loop's layers.  Each returns a fresh ``dict`` for ``sink.emit(type, **payload)``; they are only
called when a recorder listens.

This module knows events, not the loop: what it reads of a run's result, a paused run or a model's response
it names as a protocol (:class:`Outcome`, :class:`Paused`, :class:`Answered`), so the data model does not
import the layers above it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

__all__ = [
    "Answered",
    "Outcome",
    "Paused",
    "agent_handoff",
    "cost_limit_exceeded",
    "deadline_exceeded",
    "llm_response",
    "run_cancelled",
    "run_finished",
    "run_paused",
    "run_raised",
    "run_resumed",
    "run_started",
]


class _Call(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def name(self) -> str: ...


class Paused(Protocol):
    """What ``run.started`` and ``run.resumed`` read of a paused run (:class:`~agentactors.loop.pause.PausedRun`)."""

    @property
    def run_id(self) -> str | None: ...

    @property
    def step(self) -> int: ...


class Outcome(Protocol):
    """What ``run.finished`` reads of a run's result (:class:`~agentactors.loop.result.RunResult`)."""

    @property
    def content(self) -> str: ...

    @property
    def steps(self) -> int: ...

    @property
    def bounded(self) -> bool: ...

    @property
    def generation_failed(self) -> bool: ...

    @property
    def cancelled(self) -> bool: ...

    @property
    def error(self) -> BaseException | None: ...

    @property
    def served_by(self) -> str | None: ...

    @property
    def usage(self) -> Any: ...

    @property
    def tool_calls(self) -> Sequence[Any]: ...

    @property
    def paused(self) -> bool: ...

    @property
    def pending_approvals(self) -> Sequence[_Call]: ...

    @property
    def handoffs(self) -> tuple[str, ...]: ...

    @property
    def agent(self) -> str | None: ...

    @property
    def cost(self) -> Any: ...


class Answered(Protocol):
    """What ``llm.response`` reads of a model's response (:class:`~agentactors.messages.LLMResponse`)."""

    @property
    def provider(self) -> str | None: ...

    @property
    def usage(self) -> Any: ...


def run_started(
    agent: str | None,
    messages: int,
    native_tools: bool,
    run_info: Mapping[str, Any],
    *,
    parent: tuple[int | None, str | None, int] | None = None,
    resume_of: Paused | None = None,
) -> dict[str, Any]:
    """``run.started``: the agent, how many input messages, the transport, what the agent knows of its stack.

    ``parent``: a delegated run's ``(parent_step, parent_call_id, depth)``; ``resume_of``: the paused run a
    resumed one goes on from (its id is ``resumed_from``).  Either is left out of the payload when ``None``.
    """
    data: dict[str, Any] = {"agent": agent, "messages": messages, "native_tools": native_tools, **run_info}
    if parent is not None:
        data["parent_step"], data["parent_call_id"], data["depth"] = parent
    if resume_of is not None:
        data["resumed_from"] = resume_of.run_id
    return data


def run_resumed(paused: Paused, decisions: Mapping[str, bool | str]) -> dict[str, Any]:
    """``run.resumed``: the paused run, its step, and the calls a person approved and denied (in order)."""
    return {
        "from_run_id": paused.run_id,
        "step": paused.step,
        "approved": [k for k, v in decisions.items() if v is True],
        "denied": [k for k, v in decisions.items() if v is not True],
    }


def run_finished(result: Outcome) -> dict[str, Any]:
    """``run.finished`` for a run that ended with ``result`` (``cancelled``, ``paused``/``pending`` and
    ``handoffs``/``final_agent`` only when they apply); ``cost`` is ``None`` when a call had no price."""
    data: dict[str, Any] = {
        "content": result.content,
        "steps": result.steps,
        "bounded": result.bounded,
        "generation_failed": result.generation_failed,
        "error": result.error,
        "served_by": result.served_by,
        "usage": result.usage,
        "cost": result.cost,
        "tool_calls": len(result.tool_calls),
    }
    if result.cancelled:  # ended cancelled through its handle, and returned (as run_cancelled says when raised)
        data["cancelled"] = True
    if result.paused:
        data["paused"] = True
        data["pending"] = [c.id for c in result.pending_approvals]
    if result.handoffs:
        data["handoffs"] = result.handoffs
        data["final_agent"] = result.agent
    return data


def run_cancelled(steps: int, usage: Any) -> dict[str, Any]:
    """``run.finished`` for a run cancelled where it stood (the cancellation then propagates)."""
    return {"cancelled": True, "steps": steps, "usage": usage}


def run_raised(error: BaseException, steps: int, usage: Any) -> dict[str, Any]:
    """``run.finished`` for a run that raised ``error`` (a status routed to ``"raise"``, a halted executor)."""
    return {"error": error, "steps": steps, "usage": usage}


def run_paused(pending: Sequence[_Call], reasons: Mapping[str, str]) -> dict[str, Any]:
    """``run.paused``: each call awaiting a person's decision, with why it waits."""
    return {"pending": [{"call_id": c.id, "name": c.name, "reason": reasons[c.id]} for c in pending]}


def llm_response(response: Answered) -> dict[str, Any]:
    """``llm.response``: the response, the member that served it, and its usage."""
    return {"response": response, "provider": response.provider, "usage": response.usage}


def agent_handoff(from_agent: str | None, to_agent: str, call_id: str) -> dict[str, Any]:
    """``agent.handoff``: the agent answering until now, the one answering from now on, the call that asked."""
    return {"from_agent": from_agent, "to_agent": to_agent, "call_id": call_id}


def deadline_exceeded(deadline: float | None) -> dict[str, Any]:
    """``run.deadline_exceeded``: the run's deadline in seconds (``None`` for one inherited without a budget)."""
    return {"deadline": deadline}


def cost_limit_exceeded(error: Any) -> dict[str, Any]:
    """``run.cost_limit_exceeded``: the ``limit`` passed, what was ``spent`` under it, whose it was
    (``scope``) and, for a call stopped before it was sent, its ``estimate`` (``None`` otherwise)."""
    return {"limit": error.limit, "spent": error.spent, "scope": error.scope, "estimate": error.estimate}
