"""What a run takes from its agent (:class:`LoopConfig`), and the requests built from it.

A :class:`LoopConfig` is built once per agent and shared by all of its runs.  What a run sends is
built from it once too: a *skeleton* per tool choice (and per output strategy) — a validated
:class:`~agentactors.messages.LLMRequest` whose messages every step replaces (:func:`request_like`,
without checking again what the skeleton passed) — and the system message (:meth:`LoopConfig.system_message`).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import attrs

from .._slots import draft
from ..messages import LLMRequest, Message, ToolChoice, ToolSpec
from ..output.config import OutputConfig
from ..settings import ModelSettings
from ..tools.executor import ToolPolicy
from ..tools.results import ToolStatus
from .json_transport import contract_text
from .nudges import Nudges

__all__ = ["LoopConfig", "StatusRoute", "request_like"]

#: Where ``on_tool_status`` sends a status: go on, end the turn, or raise :class:`~agentactors.errors.ToolStatusError`.
StatusRoute = Literal["continue", "end_turn", "raise"]
_ROUTES = frozenset(("continue", "end_turn", "raise"))


def _routes(value: Mapping[Any, str] | None) -> Mapping[ToolStatus, StatusRoute]:
    if not value:
        return {}
    out: dict[ToolStatus, StatusRoute] = {}
    for status, route in value.items():
        if route not in _ROUTES:
            raise ValueError(f"on_tool_status routes to 'continue', 'end_turn' or 'raise', not {route!r}")
        if route != "continue":
            out[ToolStatus(status)] = route  # type: ignore[assignment]
    return out


@attrs.frozen(slots=True)
class LoopConfig:
    """Everything a run takes from its agent; built once per agent, shared by all of its runs.

    ``tool_specs`` are the specs offered to the model (built-ins included);
    ``read_only`` names the tools marked ``read_only`` (for the batching nudge);
    ``settings`` the agent's :class:`~agentactors.settings.ModelSettings`, in every request's skeleton.
    """

    tool_specs: tuple[ToolSpec, ...] = ()
    system: str | None = None
    model: str | None = None
    tool_choice: ToolChoice = attrs.field(factory=ToolChoice.auto)
    max_steps: int = 8
    max_empty_steps: int = 2
    max_tool_result_chars: int | None = None
    context_budget_chars: int | None = None
    on_tool_status: Mapping[ToolStatus, StatusRoute] = attrs.field(factory=dict, converter=_routes)
    tool_policy: ToolPolicy | None = None
    nudges: Nudges | None = None
    followups: bool = False
    read_only: frozenset[str] = frozenset()
    agent_name: str | None = None
    # What run.started tells about the agent beyond its name (its default model, its provider members), for
    # recorders that describe runs to others (OpenTelemetry): built once per agent, never per run.
    run_info: Mapping[str, Any] = attrs.field(factory=dict)
    settings: ModelSettings | None = None
    #: The typed result (``docs/output.md``); ``None`` for a plain ``str`` answer, whose runs pay nothing for it.
    output: OutputConfig | None = None
    #: Handoff tools by name -> the name of the agent each hands the conversation to (:mod:`.handoff`).
    handoffs: Mapping[str, str] = attrs.field(factory=dict)
    #: Whether a call may wait for approval (a tool requires it, or a policy may ask): the loop then looks
    #: for pending results after each tool step; other agents pay nothing for pauses.
    may_pause: bool = False
    #: The nudges a run of this agent starts with: ``nudges`` less the ones its tools give nothing to act on
    #: (:meth:`Nudges.fitted <agentactors.loop.nudges.Nudges.fitted>`); worked out here, once per agent.
    run_nudges: Nudges | None = attrs.field(init=False, eq=False, repr=False)
    # (native, tool choice) -> a validated request whose messages every step replaces (see request_like).
    _skeletons: dict[tuple[bool, ToolChoice], LLMRequest] = attrs.field(
        factory=dict, init=False, eq=False, repr=False
    )
    # The same for the output strategies: (strategy, native, tool choice) -> skeleton.
    _output_skeletons: dict[tuple[str, bool, ToolChoice], LLMRequest] = attrs.field(
        factory=dict, init=False, eq=False, repr=False
    )

    def skeleton(self, native: bool, choice: ToolChoice, settings: ModelSettings | None = None) -> LLMRequest:
        """The request every step of a run sends but for its messages (built and validated once).

        ``settings`` are a run's own (already merged over the agent's): its skeleton is built for that run
        alone, once per tool choice, and not kept.  Without them, the agent's skeleton is cached.
        """
        if settings is not None:
            return self._build(native, choice, settings)
        key = (native, choice)
        skeleton = self._skeletons.get(key)
        if skeleton is None:
            skeleton = self._skeletons[key] = self._build(native, choice, self.settings)
        return skeleton

    def _build(self, native: bool, choice: ToolChoice, settings: ModelSettings | None) -> LLMRequest:
        return LLMRequest(
            (Message.user(""),),
            model=self.model,
            tools=self.tool_specs if native else (),
            tool_choice=choice,
            **(settings.request_fields() if settings else {}),
        )

    def output_skeleton(
        self, strategy: str, native: bool, choice: ToolChoice, settings: ModelSettings | None = None
    ) -> LLMRequest:
        """The skeleton of a step asking for the typed result with ``strategy`` (built and validated once).

        ``tool``: the agent's tools and the output tools, with the forced ``choice``; ``native``: the
        agent's tools and the JSON-schema response format; ``prompted``: the agent's tools alone (the
        instruction is in the system message).  ``settings`` as for :meth:`skeleton`: a run's own are
        built for it alone and not kept.
        """
        if settings is not None:
            return self._build_output(strategy, native, choice, settings)
        key = (strategy, native, choice)
        skeleton = self._output_skeletons.get(key)
        if skeleton is None:
            skeleton = self._output_skeletons[key] = self._build_output(strategy, native, choice, self.settings)
        return skeleton

    def _build_output(
        self, strategy: str, native: bool, choice: ToolChoice, settings: ModelSettings | None
    ) -> LLMRequest:
        output = self.output
        assert output is not None
        tools = self.tool_specs if native else ()
        if strategy == "tool":
            tools = (*tools, *output.tool_specs)
        return LLMRequest(
            (Message.user(""),),
            model=self.model,
            tools=tools,
            tool_choice=choice if tools else ToolChoice.auto(),
            response_format=output.response_format if strategy == "native" else None,
            **(settings.request_fields() if settings else {}),
        )

    def system_message(
        self, native: bool, inputs: Sequence[Message], extra: str | None = None
    ) -> tuple[Message | None, int]:
        """The system message a run sends on ``inputs``, and how many leading input messages it replaces.

        The agent's system text, a leading system message of the caller's, the JSON-fallback contract
        (``native=False``) and ``extra`` (the prompted output's instruction) become one system message:
        several vendors accept only one.
        """
        if extra is not None:
            base, skip = self.system_message(native, inputs)
            if base is None and inputs and inputs[0].role == "system":
                base, skip = inputs[0], 1
            text = f"{base.content}\n\n{extra}" if base is not None and base.content else extra
            return Message.system(text), skip
        if native and not self.system and (not inputs or inputs[0].role != "system"):
            return None, 0  # the common case: nothing to add or merge
        parts: list[str] = []
        if self.system:
            parts.append(self.system)
        skip = 0
        if inputs and inputs[0].role == "system":
            if not parts and native:
                return None, 0  # nothing to merge: the caller's system message goes as it is
            parts.append(inputs[0].content)
            skip = 1
        if not native and self.tool_specs:
            parts.append(contract_text(self.tool_specs))
        if not parts:
            return None, 0
        return Message.system("\n\n".join(p for p in parts if p)), skip

    def __attrs_post_init__(self) -> None:
        nudges = self.nudges
        fitted = nudges.fitted(self.read_only, [s.name for s in self.tool_specs]) if nudges is not None else None
        object.__setattr__(self, "run_nudges", fitted)
        # Whole numbers: NaN compares false with every bound (max_steps=nan would never end a run), and a bool
        # or a float is no count of steps or characters.
        _count("max_steps", self.max_steps)
        _count("max_empty_steps", self.max_empty_steps)
        if self.context_budget_chars is not None:
            _count("context_budget_chars", self.context_budget_chars)


def _count(field: str, value: object) -> None:
    """:raises TypeError: ``value`` is not an int (a bool is not one).  :raises ValueError: it is below 1."""
    if type(value) is not int and (isinstance(value, bool) or not isinstance(value, numbers.Integral)):
        raise TypeError(f"{field} must be an int, not {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{field} must be at least 1, not {value}")


# What request_like fills, field by field, then makes an LLMRequest (agentactors._slots): a field LLMRequest gains
# breaks this at import, before it could be left out of a request.
_new = object.__new__
_RequestDraft = draft(
    LLMRequest,
    "messages model tools tool_choice max_tokens temperature stop vendor_options top_p seed parallel_tool_calls "
    "reasoning_effort thinking_budget cache timeout response_format",
)


def request_like(skeleton: LLMRequest, messages: tuple[Message, ...]) -> LLMRequest:
    """The request ``LLMRequest(messages, ...)`` with the skeleton's other fields — without re-checking them.

    Building an LLMRequest checks every field (tool names unique, the choice among the tools, each
    message a Message...) and copies the containers, on every step of every run.  The skeleton
    passed those checks once; the only ones about ``messages`` (a non-empty tuple of Message)
    hold for the loop's conversation by construction (the run checks its input messages).

    The fields are spelled out (a loop over their names costs a third more, every step); the requests
    test compares every field with the skeleton's.
    """
    if not messages:
        raise ValueError("an LLMRequest needs at least one message")
    request: Any = _new(_RequestDraft)
    request.messages = messages
    request.model = skeleton.model
    request.tools = skeleton.tools
    request.tool_choice = skeleton.tool_choice
    request.max_tokens = skeleton.max_tokens
    request.temperature = skeleton.temperature
    request.stop = skeleton.stop
    request.vendor_options = dict(skeleton.vendor_options)
    request.top_p = skeleton.top_p
    request.seed = skeleton.seed
    request.parallel_tool_calls = skeleton.parallel_tool_calls
    request.reasoning_effort = skeleton.reasoning_effort
    request.thinking_budget = skeleton.thinking_budget
    request.cache = skeleton.cache
    request.timeout = skeleton.timeout
    request.response_format = skeleton.response_format
    request.__class__ = LLMRequest
    made: LLMRequest = request
    return made
