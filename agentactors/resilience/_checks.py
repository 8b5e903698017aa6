"""What the decorators' non-numeric arguments must be: a provider instance, a callable, a name.

Asked once, when a decorator is built, so that a wrong argument is a ``TypeError`` naming its parameter
there — not a raw Python error on the first call (``'int' object is not callable``), which a decorator
would then classify as the call's failure and raise in place of the vendor's own error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..errors import ErrorKind, ProviderError
from ..providers.port import check_provider  # (the one check of a provider, shared with Agent and ProviderActor)

__all__ = ["check_callable", "check_flag", "check_name", "check_predicate", "check_provider", "error_kinds"]


def check_callable(value: object, what: str, expected: str) -> None:
    """Raise ``TypeError`` unless ``value`` is ``None`` or callable; ``expected`` says what it is called for."""
    if value is not None and not callable(value):
        raise TypeError(f"{what} must be {expected} or None, not {type(value).__name__} ({value!r})")


def check_name(value: object) -> None:
    """Raise ``TypeError`` unless ``value`` is ``None`` or a string (the provider's ``name`` is a ``str``)."""
    if value is not None and not isinstance(value, str):
        raise TypeError(f"name must be a str or None, not {type(value).__name__} ({value!r})")


def check_predicate(value: object, what: str, expected: str) -> None:
    """Raise ``TypeError`` unless ``value`` is ``None`` or a callable that is not a class.

    A class is callable, and an exception class is what ``retry_on=ProviderTimeoutError`` means to say: called
    with each error it made an instance — always true — so every error passed the test.
    """
    if isinstance(value, type):
        hint = (
            f": to test for it, pass lambda error: isinstance(error, {value.__name__})"
            if issubclass(value, BaseException)
            else ""
        )
        raise TypeError(
            f"{what} is called with each error and must be {expected}, not the class {value.__name__}{hint}"
        )
    check_callable(value, what, expected)


def check_flag(value: object, what: str) -> None:
    """Raise ``TypeError`` unless ``value`` is a bool (``"no"`` is true, and ``1`` is no flag's spelling)."""
    if not isinstance(value, bool):
        raise TypeError(f"{what} must be True or False, not {type(value).__name__} ({value!r})")


def error_kinds(
    value: object, default: frozenset[ErrorKind]
) -> tuple[frozenset[ErrorKind], Callable[[ProviderError], bool] | None]:
    """``fallback_on`` as ``(kinds, predicate)``: ``default`` for ``None``, error kinds (names or
    :class:`ErrorKind`, one or several), or a predicate ``fallback_on(error) -> bool``.

    :raises TypeError: neither (a class too: see :func:`check_predicate`).
    :raises ValueError: a name that is no error kind, or ``"request"`` (wrong for every member).
    """
    if value is None:
        return default, None
    if callable(value) and not isinstance(value, str | ErrorKind):
        check_predicate(value, "fallback_on", "a predicate fallback_on(error) -> bool")
        return frozenset(), value
    # Each a TypeError/ValueError naming fallback_on here, not "'int' object is not iterable".
    if not isinstance(value, Iterable) or isinstance(value, bytes):
        raise TypeError(
            "fallback_on must be error kinds (names or ErrorKind, one or several) or a predicate "
            f"fallback_on(error) -> bool, not {type(value).__name__} ({value!r})"
        )
    values: Iterable[object] = (value,) if isinstance(value, str) else value
    kinds: set[ErrorKind] = set()
    for v in values:
        try:
            kinds.add(ErrorKind(v))  # type: ignore[arg-type]  # (anything may be passed: refused below)
        except ValueError:
            known = ", ".join(repr(k.value) for k in ErrorKind if k is not ErrorKind.request)
            raise ValueError(f"fallback_on: {v!r} is not an error kind (one of {known})") from None
    if ErrorKind.request in kinds:
        raise ValueError("fallback_on cannot include 'request': a request error is wrong for every member")
    return frozenset(kinds), None
