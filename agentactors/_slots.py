"""Filling a frozen attrs value slot by slot: what the fast constructors of the run path share.

A frozen, slotted attrs class is built through its ``__init__``: a bound setter call per field, each
converter, then ``__attrs_post_init__``'s checks — about a microsecond for the values every run builds
(its messages, the step's request, a tool's result, the run's result).  The loop's fast constructors
(``messages.text_message``, ``tools.results.result_of``, ``loop.result.answered`` ...) make the object
with ``object.__new__`` and set each slot through the slot's own descriptor — a C call, no Python frame,
no name looked up — after making the constructor's checks inline.

Each unpacks :func:`setters` into one name per field, so a field the class gains breaks that unpacking
when the module is imported, rather than leaving the new slot unset in every value built.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import attrs

__all__ = ["setters"]


def setters(cls: type) -> Iterator[Callable[[Any, Any], None]]:
    """``setter(obj, value)`` for each field of the slotted attrs class ``cls``, in field order."""
    return (getattr(cls, field.name).__set__ for field in attrs.fields(cls))
