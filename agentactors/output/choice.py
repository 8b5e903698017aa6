"""Auto's choice: which strategy a model call of a bare ``output_type`` uses, and why.

Asked for the model about to be called, through the capability readers of
:mod:`agentactors.providers.base` (so a decorated provider or a fallback chain answers for itself):

1. **tool** when ``forced_tool_choice_for(provider, model)`` holds and the provider calls tools natively —
   the strongest guarantee a model can give (it cannot answer any other way);
2. else **native** when the provider carries a JSON-schema response format for the model (and, on the
   JSON-fallback transport, the agent has no tools: a constrained answer could not carry a call);
3. else **prompted**, which every model can do.

A default fallback chain says yes to a forced choice only if every member can, so a chain with one
member that rejects forced choices gets the next strategy up front.  :func:`next_strategy` is the step a
degraded call takes instead (``with_fallback(..., skip_incapable=True)`` ending on skipped members).
"""

from __future__ import annotations

from ..providers.base import forced_tool_choice_for, name_of, response_format_for
from .spec import Strategy

__all__ = ["auto_strategy", "next_strategy"]


def _native(provider: object, model: str | None, native_tools: bool, has_tools: bool) -> bool:
    return response_format_for(provider, model) and (native_tools or not has_tools)


def auto_strategy(provider: object, model: str | None, *, native_tools: bool, has_tools: bool) -> tuple[Strategy, str]:
    """``(strategy, reason)`` for a call of ``model`` through ``provider`` (see the module docstring)."""
    who = f"{name_of(provider)} / {model or 'its default model'}"
    if native_tools and forced_tool_choice_for(provider, model):
        return "tool", f"{who} carries a forced tool choice"
    if _native(provider, model, native_tools, has_tools):
        return "native", f"{who} cannot force a tool choice, but carries a JSON-schema response format"
    return "prompted", f"{who} can neither force a tool choice nor carry a JSON-schema response format"


def next_strategy(provider: object, model: str | None, *, native_tools: bool, has_tools: bool) -> Strategy:
    """The strategy after ``tool`` for this call: native where carried, else prompted."""
    return "native" if _native(provider, model, native_tools, has_tools) else "prompted"
