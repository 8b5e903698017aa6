"""What the decorators' non-numeric arguments must be: a provider instance, a callable, a name.

Asked once, when a decorator is built, so that a wrong argument is a ``TypeError`` naming its parameter
there — not a raw Python error on the first call (``'int' object is not callable``), which a decorator
would then classify as the call's failure and raise in place of the vendor's own error.
"""

from __future__ import annotations

from typing import Any

from ..providers.port import completes_by_coroutine

__all__ = ["check_callable", "check_name", "check_provider"]


def check_provider(value: Any, what: str = "provider") -> None:
    """Raise ``TypeError`` unless ``value`` is a provider instance whose ``complete`` is a coroutine function.

    A provider class has a callable ``complete`` too (an unbound function): ``with_retry(ScriptedProvider)``
    was accepted and failed on the first call.  A plain ``complete`` failed there too ("can't be used in 'await'
    expression"), and — wrapped — got past the check an :class:`~agentactors.Agent` makes of its provider, since
    the decorator's own ``complete`` is a coroutine function
    (:func:`~agentactors.providers.port.completes_by_coroutine`).
    """
    if isinstance(value, type):
        raise TypeError(f"{what} must be an LLMProvider instance, got the class {value.__name__}: pass an instance "
                        f"({value.__name__}(...))")
    if not callable(getattr(value, "complete", None)):
        raise TypeError(f"{what} must be an LLMProvider (with complete() and stream()), got {type(value).__name__}")
    if not completes_by_coroutine(value):
        raise TypeError(
            f"{what} {type(value).__name__}'s complete is a plain function; it is awaited: write "
            "`async def complete(self, request) -> LLMResponse` (a coroutine function)"
        )


def check_callable(value: object, what: str, expected: str) -> None:
    """Raise ``TypeError`` unless ``value`` is ``None`` or callable; ``expected`` says what it is called for."""
    if value is not None and not callable(value):
        raise TypeError(f"{what} must be {expected} or None, not {type(value).__name__} ({value!r})")


def check_name(value: object) -> None:
    """Raise ``TypeError`` unless ``value`` is ``None`` or a string (the provider's ``name`` is a ``str``)."""
    if value is not None and not isinstance(value, str):
        raise TypeError(f"name must be a str or None, not {type(value).__name__} ({value!r})")
