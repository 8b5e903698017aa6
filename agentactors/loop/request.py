"""A step's request: the system message, then the conversation as the step sends it.

Built once per step from the run's :class:`~agentactors.loop.state.LoopState` and the answering
seat: the request *skeleton* for the step's tool choice (kept for the run when the choice is not
forced, :meth:`~agentactors.loop.config.LoopConfig.skeleton`) or, for a typed run, the one its output
strategy asks with (:meth:`~agentactors.loop.output_steps.OutputSteps.request`); the conversation after
the messages the system message replaces, old tool results trimmed to the context budget (in the
request only, :mod:`.context_budget`; a ``context.fitted`` event says how many messages that dropped and results
it trimmed, when it did), and tool turns put in the JSON transport's words when the
provider does not carry tools natively (:mod:`.json_transport`).  The request is not checked again:
it is made like the skeleton, which was (:func:`~agentactors.loop.config.request_like`).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..events import EventSink
from ..messages import LLMRequest, Message
from ..settings import ModelSettings
from .config import request_like
from .context_budget import message_chars, wire_chars
from .json_transport import to_wire_messages
from .output_steps import OutputSteps
from .state import LoopState

__all__ = ["step_request"]


def step_request(
    state: LoopState,
    output: OutputSteps | None,
    native: bool,
    settings: ModelSettings | None,
    sink: EventSink | None,
) -> LLMRequest:
    """This step's request (see the module docstring); ``llm.request`` says what it is, when a recorder listens.

    :param output: the seat's typed steps, or ``None`` for a plain run.
    :param native: whether the seat's provider carries tools natively.
    :param settings: the run's settings merged over the agent's, or ``None`` for the agent's.
    :raises UnsupportedToolChoiceError: a typed step's explicit ``ToolOutput`` the transport cannot force.
    """
    conversation = state.conversation
    strategy = output.begin_step() if output is not None else None
    if strategy is None:
        skip, system = state.skip, state.system
        skeleton = state.skeleton
        if skeleton is None:  # the first step, or the one after a forced choice
            choice = state.step_choice()
            skeleton = state.config.skeleton(native, choice, settings)
            if not choice.forced:  # an unforced choice holds for the run: its skeleton is kept
                state.skeleton = skeleton
    else:
        assert output is not None
        # The tool strategy forces its own choice; the others take the run's, as the usual request does.
        run_choice = None if strategy == "tool" else state.step_choice()
        skeleton, system, skip = output.request(strategy, run_choice, conversation)
    body: Sequence[Message] = conversation[skip:] if skip else conversation
    budget = state.budget
    if budget is not None:
        # Measured as it is sent: the JSON transport renders calls and results as text blocks (about 3x the size).
        # The budget remembers what it measured: each step measures only the messages new to it.
        chars = None
        if system is not state.system:  # not the seat's (a prompted output's, with its instruction): its size off
            whole = state.config.context_budget_chars
            if whole is not None:
                chars = max(1, whole - len(system.content)) if system is not None else whole
        given = len(body)
        body = budget.fit(body, message_chars if native else wire_chars, chars)
        if sink is not None and ((trimmed := budget.trimmed()) or len(body) < given):
            # What the request leaves out of the conversation, for explain (a run within its budget emits nothing).
            sink.emit("context.fitted", chars=state.config.context_budget_chars, messages=given,
                      dropped=given - len(body), trimmed=trimmed)
    if not native:
        body = to_wire_messages(body)
    request = request_like(skeleton, (system, *body) if system is not None else tuple(body))
    if sink is not None:
        sink.emit("llm.request", request=request)
    return request
