"""Auto's choice: which strategy a model call of a bare ``output_type`` uses, and why.

Asked for the model about to be called, through the capability readers of
:mod:`agentactors.providers.port` (so a decorated provider or a fallback chain answers for itself):

1. **tool** when ``forced_tool_choice_for(provider, model)`` holds, the provider calls tools natively and
   the run's settings do not rule a forced choice out (``forced_tool_choice_refusal``: Anthropic's
   extended thinking) — the strongest guarantee a model can give (it cannot answer any other way);
2. else **native** when the provider carries a JSON-schema response format for the model *and this
   one* (``response_format_refusal``: the schema fits the vendor's constrained decoding, and the
   model takes it beside the agent's tools), and — on the JSON-fallback transport — the agent has no
   tools (a constrained answer could not carry a call);
3. else **prompted**, which every model can do.

A default fallback chain says yes to a forced choice only if every member can, so a chain with one
member that rejects forced choices gets the next strategy up front.  :func:`next_strategy` is the step a
degraded call takes instead (``with_fallback(..., skip_incapable=True)`` ending on skipped members): native
only where every member skipped for the forced choice carries the response format, else prompted.

What the provider says of the run's settings and of the schema cannot change during a run, so a
:class:`CallShape` asks each once and keeps the answer; the cheap per-model readers are asked per call.
"""

from __future__ import annotations

from collections.abc import Collection

from ..messages import ResponseFormat
from ..providers.port import forced_tool_choice_for, forced_tool_choice_refusal, name_of, response_format_refusal
from ..settings import ModelSettings
from .spec import Strategy

__all__ = ["CallShape", "auto_strategy", "next_strategy"]

_UNASKED = object()
_OPENAI = "https://api.openai.com/"


class CallShape:
    """What a run's model calls look like to auto: the provider, the model, the transport, tools, settings, format.

    :param provider: the provider the run's ProviderActor hosts.
    :param model: the model the run calls (``None``: the provider's default).
    :param native_tools: the provider calls tools natively (``False``: the JSON-fallback transport).
    :param has_tools: the agent offers tools of its own.
    :param settings: the run's settings (the agent's merged with the run's), or ``None``.
    :param fmt: the response format the native strategy would send.
    """

    __slots__ = ("_forced", "_native", "fmt", "has_tools", "model", "native_tools", "provider", "settings")

    def __init__(
        self,
        provider: object,
        model: str | None,
        *,
        native_tools: bool,
        has_tools: bool,
        settings: ModelSettings | None = None,
        fmt: ResponseFormat | None = None,
    ) -> None:
        self.provider = provider
        self.model = model
        self.native_tools = native_tools
        self.has_tools = has_tools
        self.settings = settings
        self.fmt = fmt
        self._forced: object = _UNASKED
        self._native: object = _UNASKED

    @property
    def who(self) -> str:
        return f"{name_of(self.provider)} / {self.model or 'its default model'}"

    def forced_refusal(self) -> str | None:
        """Why the run's settings rule out a forced choice (asked once), or ``None``."""
        if self._forced is _UNASKED:
            self._forced = forced_tool_choice_refusal(self.provider, self.model, self.settings)
        return self._forced if isinstance(self._forced, str) else None

    def native_refusal(self, members: Collection[str] | None = None) -> str | None:
        """Why the native strategy cannot be sent (asked once for the whole provider), or ``None``.

        ``members``: a fallback chain's members skipped for the forced choice, which alone must carry it.
        """
        if not self.native_tools and self.has_tools:
            return "the JSON-fallback transport cannot carry a call beside a constrained answer"
        if self.fmt is None:
            return "the output has no response format"
        if members is not None:
            return response_format_refusal(
                self.provider, self.model, self.fmt, tools=self.has_tools and self.native_tools, members=members
            )
        if self._native is _UNASKED:
            self._native = response_format_refusal(
                self.provider, self.model, self.fmt, tools=self.has_tools and self.native_tools
            )
        return self._native if isinstance(self._native, str) else None


def auto_strategy(shape: CallShape) -> tuple[Strategy, str]:
    """``(strategy, reason)`` for a call shaped ``shape`` (see the module docstring)."""
    who = shape.who
    but = ", but"
    if shape.native_tools and forced_tool_choice_for(shape.provider, shape.model):
        refusal = shape.forced_refusal()
        if refusal is None:
            return "tool", f"{who} carries a forced tool choice"
        not_tool = f"{who} takes a forced tool choice, but not with this run's settings ({refusal})"
        but = "; it"  # (not "..., but not with these settings, but carries")
    else:
        not_tool = f"{who} cannot force a tool choice"
    problem = shape.native_refusal()
    if problem is None:
        return "native", f"{not_tool}{but} carries a JSON-schema response format"
    reason = f"{not_tool}, and no JSON-schema response format for this output ({problem})"
    unknown = _unknown_server(shape.provider)
    return "prompted", reason if unknown is None else f"{reason}; {unknown}"


def _unknown_server(provider: object) -> str | None:
    """Why an OpenAI-compatible server at another ``base_url`` (vLLM, a proxy) gets the weakest strategy.

    Such a server is not assumed to carry a forced tool choice or a JSON-schema response format — the
    model is not to blame: the server is unknown; the provider's flags declare what it carries.
    """
    try:
        wire = getattr(provider, "wire_name", None)
        base_url = getattr(provider, "base_url", None)
        forced = getattr(provider, "carries_forced_tool_choice", None)
        fmt = getattr(provider, "carries_response_format", None)
    except Exception:  # a provider's property that raises: nothing to say
        return None
    if wire != "openai" or not isinstance(base_url, str) or base_url.startswith(_OPENAI):
        return None
    if forced is not False and fmt is not False:
        return None
    return (
        f"the server at {base_url} is an unknown OpenAI-compatible server, not OpenAI's own endpoint: it is not "
        "assumed to carry either (if it does, say so: OpenAIProvider(..., carries_forced_tool_choice=True, "
        "carries_response_format=True))"
    )


def next_strategy(shape: CallShape, skipped: Collection[str] | None = None) -> tuple[Strategy, str]:
    """The strategy after ``tool`` for this call, and why: native where carried, else prompted.

    ``skipped``: the members a fallback chain skipped for the forced choice; native only if each of
    them carries the response format (the members it did call failed: a re-issued step is theirs).
    """
    problem = shape.native_refusal(skipped)
    if problem is None:
        return "native", "the response format is carried"
    return "prompted", f"no JSON-schema response format for this output ({problem})"
