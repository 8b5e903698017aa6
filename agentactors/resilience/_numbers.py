"""What the decorators' settings must be: numbers that are numbers, counts that are whole.

``True`` is an ``int`` to Python, and ``with_timeout(attempt=True)`` would be one second; a float count
(``max_attempts=2.5``, ``window=inf``) has no meaning a retry or a hedge can keep.  The decorators refuse
both, each with a ``ValueError`` naming its own setting; these two questions are asked alike everywhere.
"""

from __future__ import annotations

import math
import numbers
import operator

__all__ = ["is_number", "seconds_or_none", "whole"]


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


def seconds_or_none(label: str, value: object) -> float | None:
    """``value`` as seconds: ``None`` (no bound), or a positive, finite real number that is not a bool.

    A ``ValueError`` naming ``label`` otherwise: ``True`` is an ``int`` (a flag passed where seconds were meant,
    which bounded a call at 1 s), NaN compares false with every time, and an infinite bound never fires (``None``
    says that); a string is a ``ValueError`` too, not the ``TypeError`` of a comparison.
    """
    if value is None:
        return None
    if not is_number(value) or not 0 < value < math.inf:  # type: ignore[operator]  # NaN fails every comparison
        raise ValueError(f"{label} must be a positive, finite number of seconds or None, not {value!r}")
    return float(value)  # type: ignore[arg-type]
