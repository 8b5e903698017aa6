"""What the decorators' settings must be: numbers that are numbers, counts that are whole.

``True`` is an ``int`` to Python, and ``with_timeout(attempt=True)`` would be one second; a float count
(``max_attempts=2.5``, ``window=inf``) has no meaning a retry or a hedge can keep.  The decorators refuse
both, each with a ``ValueError`` naming its own setting; these two questions are asked alike everywhere.
"""

from __future__ import annotations

import numbers
import operator

__all__ = ["is_number", "whole"]


def is_number(value: object) -> bool:
    """A real number that is not a bool (``True`` is an int: a flag passed where a number was meant)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def whole(value: object) -> int | None:
    """``value`` as an int when it is a whole number (``int``, numpy's), not a bool; else ``None``."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return None
