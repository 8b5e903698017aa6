"""What a journal checks of a parked value, on the way in and on the way out (``JournalStore.park``).

A parked value is JSON text written by other code (a batch provider's pending request) and read back by a
later process: the same depth and size policy as every JSON edge (:mod:`agentactors._json`) applies both
ways, so a value that could not be read back is refused when it is parked, and a row damaged in the
database is a :class:`~agentactors.journal.JournalFormatError` naming its key, never a crash deeper in.
"""

from __future__ import annotations

import json
import re

from .._json import MAX_DOCUMENT_DEPTH, JsonBoundError, loads_bounded
from .store import JournalFormatError

__all__ = ["check_key", "check_value"]

_MAX_KEY_CHARS = 1024
_SURROGATE = re.compile("[\ud800-\udfff]")  # a str may hold one; a UTF-8 database column cannot


def check_key(key: str) -> str:
    """``key`` if it is a non-empty ``str`` of at most 1,024 characters that every database keeps as it is: no NUL
    (PostgreSQL's ``TEXT`` refuses it) and no lone surrogate (no UTF-8 column takes one) — refused here, typed,
    rather than by the driver halfway through a call.  :raises TypeError, ValueError: not."""
    if not isinstance(key, str):
        raise TypeError(f"a parking key is a str, not {type(key).__name__}")
    if not key or len(key) > _MAX_KEY_CHARS:
        raise ValueError(f"a parking key is 1 to {_MAX_KEY_CHARS} characters, not {len(key)}")
    if "\x00" in key or (not key.isascii() and _SURROGATE.search(key) is not None):
        raise ValueError(f"a parking key holds a NUL or a lone surrogate, which no database keeps: {key!r}")
    return key


def check_value(key: str, value: object, *, stored: bool = False) -> str:
    """``value`` if it is JSON text within the policy (documents may nest to ``MAX_DOCUMENT_DEPTH``).

    :raises TypeError: not a ``str`` (on the way in).
    :raises JournalFormatError: not JSON, or past the policy; ``stored``: it was read from the database.
    """
    where = f"the value parked under {key!r}" + (" (as stored)" if stored else "")
    if not isinstance(value, str):
        if stored:
            raise JournalFormatError(f"{where} is not text but {type(value).__name__}: it was left as it is")
        raise TypeError(f"a parked value is JSON text (a str), not {type(value).__name__}")
    if not stored and not value.isascii() and _SURROGATE.search(value) is not None:
        raise JournalFormatError(f"{where} holds a lone surrogate, which no database keeps (escape it: \\ud800)")
    try:
        loads_bounded(value, what=where, max_depth=MAX_DOCUMENT_DEPTH)
    except JsonBoundError as exc:
        raise JournalFormatError(f"{exc}{': it was left as it is' if stored else ''}") from None
    except json.JSONDecodeError as exc:
        raise JournalFormatError(f"{where} is not JSON ({exc})") from None
    return value
