"""The output validator hook: ``Agent(output_validator=fn)``, ``fn(value, ctx) -> value``.

For checks no schema can express (a date in the future, a total that adds up, a lookup in a database).
``fn`` may be sync or async and may take ``(value)`` or ``(value, ctx)``; it returns the value to keep
(the same, or a corrected one) or raises :class:`~agentactors.ModelRetry` with a message for the model,
which re-asks (counted against ``output_retries``).  Any other exception is the validator's bug: it
leaves the run as the run's exception — and so does returning ``None`` where the output type cannot hold
it (a ``TypeError``: a validator that forgot ``return value`` would otherwise end the run ``ok`` without it).
A sync validator runs on the event loop: keep it quick.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import attrs

from .spec import Strategy

__all__ = ["OutputContext", "OutputValidator", "call_validator", "validator_arity"]

#: ``fn(value)`` or ``fn(value, ctx)``, sync or async, returning the value to keep.
OutputValidator = Callable[..., Any]


@attrs.frozen(slots=True)
class OutputContext:
    """What an output validator may know about the answer it checks.

    ``run_id``, ``agent`` (its name) and ``step`` say where; ``attempt`` counts the answers refused before
    this one; ``strategy`` how it was asked for; ``deps`` is what the run's caller passed for its tools
    (never in a repr, an event or a log line).
    """

    run_id: str | None
    agent: str | None
    step: int
    attempt: int
    strategy: Strategy | None
    deps: Any = attrs.field(default=None, repr=False)


def validator_arity(fn: OutputValidator) -> int:
    """How many arguments ``fn`` takes: 1 (``value``) or 2 (``value, ctx`` — ``ctx`` optional too, when it is
    named ``ctx`` / ``context`` or annotated ``OutputContext``).

    :raises TypeError: ``fn`` is not callable or takes neither.
    """
    if not callable(fn):
        raise TypeError(f"output_validator must be callable: fn(value, ctx) -> value, not {type(fn).__name__}")
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return 2
    params = [p for p in signature.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    positional = [p for p in params if p.default is p.empty]
    if any(p.kind is p.VAR_POSITIONAL for p in signature.parameters.values()):
        return 2
    if len(positional) == 2:
        return 2
    if len(positional) > 2:  # it would fail at the run's first answer ("missing 1 required positional argument")
        raise TypeError(f"output_validator takes (value) or (value, ctx), not {len(positional)} required arguments")
    if len(positional) == 1:
        # ``def v(value, ctx=None)`` asks for the context too (optional, so the function can be called alone);
        # any other defaulted second parameter (``strict=False``) is the function's own, and left alone.
        if len(params) >= 2 and params[0] is positional[0] and _is_context(params[1]):
            return 2
        return 1
    raise TypeError("output_validator takes (value) or (value, ctx)")


def _is_context(param: inspect.Parameter) -> bool:
    """Whether a defaulted parameter is the context: named ``ctx`` / ``context``, or annotated ``OutputContext``."""
    annotation = param.annotation
    named = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    return param.name in ("ctx", "context") or "OutputContext" in str(named)


async def call_validator(fn: OutputValidator, arity: int, value: Any, ctx: OutputContext) -> Any:
    """``fn``'s verdict on ``value``: the value to keep.

    :raises ModelRetry: the validator refused the answer.

    Cancellation: an async validator sees it at its next await; it propagates.
    """
    result = fn(value, ctx) if arity == 2 else fn(value)
    if inspect.isawaitable(result):
        result = await result
    return result


