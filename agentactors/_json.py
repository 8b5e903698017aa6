"""One depth and size policy for JSON that enters agentactors from outside.

JSON reaches the library at a few edges — a model's tool-call arguments, a typed answer written as text,
a stored session read back, a line of a JSONL event record — and every one of them is data someone
else wrote.  Python's parser has no depth limit of its own (only the interpreter's recursion limit,
~1,000 frames, and every later recursive walk of the value — validation, encoding, copying — has less
room than the parser had), and its integer limit (``sys.get_int_max_str_digits``) is a process-wide
setting any library may change.  So each edge applies the same numbers, and a value past them is a
:class:`JsonBoundError` *at the edge*, which the edge turns into its own typed outcome (a tool call
marked ``unparseable``, a typed answer asked again, a :class:`~agentactors.errors.SessionFormatError`
naming the session, a record error naming the line) — never a bare ``RecursionError`` deep inside.

============================ =========== ================================================================
limit                        value       what it bounds
============================ =========== ================================================================
:data:`MAX_DEPTH`            64          containers nested in one free-form value: tool arguments, a typed
                                         answer, a stored call's ``arguments`` or ``provider_data``
:data:`MAX_DOCUMENT_DEPTH`   192         containers nested in a document that *carries* such values (a
                                         stored session, an event record line): room for the envelope
                                         around a value of :data:`MAX_DEPTH` and the codec's tags
:data:`MAX_INT_DIGITS`       4,300       decimal digits of one integer (Python's default
                                         ``int_max_str_digits``, applied even where a process raised it)
:data:`MAX_TEXT_CHARS`       64 Mi       characters of one JSON text parsed at an edge (the HTTP layer's
                                         default ``max_response_bytes``)
``unique_keys=True``         once        times one key may appear in one object, where the caller asks (a
                                         tool call's arguments: which of two values the model meant is a
                                         guess, and Python's parser silently keeps the last)
============================ =========== ================================================================

A depth counts containers: ``1`` and ``"a"`` are 0 deep, ``[]`` and ``{}`` 1, ``{"a": [1]}`` 2.  The
limits are far beyond what a schema a model is given asks for (a few levels) and far below what breaks
Python (each level of a walk costs a frame or two), so the deepest value one edge accepts passes every
later stage — the store commits it *and* loads it back, in any process.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Final

__all__ = [
    "MAX_DEPTH",
    "MAX_DOCUMENT_DEPTH",
    "MAX_INT_DIGITS",
    "MAX_TEXT_CHARS",
    "JsonBoundError",
    "bound_problem",
    "check_value",
    "loads_bounded",
    "repeated_key_problem",
    "value_problem",
]

MAX_DEPTH: Final = 64
MAX_DOCUMENT_DEPTH: Final = 192
MAX_INT_DIGITS: Final = 4300
MAX_TEXT_CHARS: Final = 64 * 1024 * 1024

#: The smallest integer magnitude with more than MAX_INT_DIGITS digits (a compare, not a conversion).
_INT_LIMIT: Final = 10**MAX_INT_DIGITS


class JsonBoundError(ValueError):
    """A JSON text or value past the policy (:attr:`limit` names which).  Never leaves an edge as itself.

    Not a ``JSONDecodeError``: the text may be well-formed; it is its size (or a repeated key, where the
    caller refuses those: ``limit="duplicate key"``) that is refused.
    """

    def __init__(self, message: str, *, limit: str) -> None:
        super().__init__(message)
        self.limit = limit


def check_value(value: Any, *, what: str = "the value", max_depth: int = MAX_DEPTH) -> Any:
    """``value`` itself if it nests at most ``max_depth`` containers and holds no integer too long.

    Iterative (a stack, not recursion), so it cannot fail on the very values it is there to refuse.

    :raises JsonBoundError: past a limit; the message says which and where to look.
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        item, depth = pop()
        if isinstance(item, dict | list | tuple):
            depth += 1
            if depth > max_depth:
                raise JsonBoundError(
                    f"{what} nests deeper than {max_depth} levels (the limit for JSON entering agentactors)",
                    limit="depth",
                )
            for child in item.values() if isinstance(item, dict) else item:
                if isinstance(child, dict | list | tuple | int):
                    push((child, depth))
        elif isinstance(item, int) and not -_INT_LIMIT < item < _INT_LIMIT:
            raise JsonBoundError(f"{what} holds an integer of more than {MAX_INT_DIGITS} digits", limit="digits")
    return value


def loads_bounded(text: str | bytes, *, what: str, max_depth: int = MAX_DEPTH, unique_keys: bool = False) -> Any:
    """``json.loads(text)`` within the policy.

    ``unique_keys``: an object naming one key twice is refused (``limit="duplicate key"``) rather than read as
    its last value — for a tool call's arguments, whose meaning would otherwise be Python's guess.  It costs
    next to nothing (measured: the same time for a flat object, ~10 % of the parse for nested ones): the parser
    hands each object's pairs to one C ``dict`` call and a length compare.  NaN and Infinity are read either way
    (a journal or session written by an older version may hold them); refusing them is the validator's job.

    :raises json.JSONDecodeError: not JSON (cut off, say) — the caller's usual case, unchanged — or bytes that
        are not UTF-8.
    :raises JsonBoundError: longer than :data:`MAX_TEXT_CHARS`, deeper than ``max_depth``, an
        integer past :data:`MAX_INT_DIGITS` digits, or (``unique_keys``) a key repeated in one object.
    """
    if len(text) > MAX_TEXT_CHARS:
        raise JsonBoundError(f"{what} is longer than {MAX_TEXT_CHARS:,} characters", limit="size")
    try:
        if not unique_keys:
            value = json.loads(text)
        elif isinstance(text, str):
            value = _UNIQUE.decode(text)  # what json.loads does with a str, through the decoder that checks keys
        else:
            value = json.loads(text, object_pairs_hook=_unique_pairs)
    except json.JSONDecodeError:
        raise
    except _RepeatedKey as exc:
        raise JsonBoundError(repeated_key_problem(what, exc.key), limit="duplicate key") from None
    except UnicodeDecodeError as exc:  # bytes that are not UTF-8 (a line cut inside a character): not JSON either
        raise json.JSONDecodeError(f"not UTF-8 text (byte {exc.start}: {exc.reason})", "", 0) from None
    except RecursionError:
        raise JsonBoundError(
            f"{what} nests deeper than {max_depth} levels (the limit for JSON entering agentactors)", limit="depth"
        ) from None
    except ValueError:  # an integer past the interpreter's int_max_str_digits
        # Not Python's own words ("use sys.set_int_max_str_digits()"): a model reads this about its answer.
        digits = sys.get_int_max_str_digits() or MAX_INT_DIGITS  # the interpreter's limit, 4,300 unless changed
        raise JsonBoundError(f"{what} holds an integer of more than {digits} digits", limit="digits") from None
    if len(text) <= MAX_INT_DIGITS and _openers(text) <= max_depth:
        return value  # the usual small value: too few brackets to be too deep, too short for a long integer
    return check_value(value, what=what, max_depth=max_depth)


class _RepeatedKey(ValueError):
    """An object names a key twice (raised out of the parser, turned into a :class:`JsonBoundError`)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's pairs as a dict, unless a key repeats: then :class:`_RepeatedKey` (the first repeated key)."""
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _RepeatedKey(key)
            seen.add(key)
    return value


#: One decoder for every call (``json.loads`` with a hook would build one per call).
_UNIQUE: Final = json.JSONDecoder(object_pairs_hook=_unique_pairs)


def repeated_key_problem(what: str, key: str) -> str:
    """What is wrong with ``what`` (``"the arguments"``) when one of its objects names ``key`` twice."""
    verb = "name" if what.endswith("s") else "names"  # "the arguments name", "the JSON in the answer names"
    return f"{what} {verb} the key {_shown_key(key)} more than once"


def _shown_key(key: str) -> str:
    """A key as an error names it: quoted, at most 40 characters, half characters (lone surrogates) as ``?``."""
    shown = key if len(key) <= 40 else key[:39] + "…"
    if not shown.isascii():
        shown = shown.encode("utf-8", "replace").decode("utf-8")
    return repr(shown)


def _openers(text: str | bytes) -> int:
    """How many ``{`` and ``[`` the text holds (in strings too): a bound on its depth, counted in C."""
    if isinstance(text, str):
        return text.count("{") + text.count("[")
    return text.count(b"{") + text.count(b"[")


def bound_problem(text: str | None) -> str | None:
    """Why ``text`` is refused by the policy (the :class:`JsonBoundError` message), or ``None``.

    For an error path that wants to say *why* a text did not parse: ``None`` also for text that is
    simply not JSON.
    """
    if text is None:
        return None
    try:
        loads_bounded(text, what="the arguments", unique_keys=True)
    except JsonBoundError as exc:
        return str(exc)
    except ValueError:
        return None
    return None


def value_problem(value: Any, *, what: str = "the arguments") -> str | None:
    """Why an already-parsed ``value`` is refused by the policy, or ``None`` (see :func:`check_value`)."""
    try:
        check_value(value, what=what)
    except JsonBoundError as exc:
        return str(exc)
    return None
