"""What Python's JSON parser reads but no JSON value is, found in a call's arguments: NaN, ±Infinity, half characters.

``json.loads`` reads ``NaN``, ``Infinity`` and ``1e999`` (infinity), and a ``"\\ud800"`` escape as a lone
surrogate — half of a character.  None of them is a JSON value, and each slips past a schema: every
comparison with NaN is false, so ``minimum`` / ``maximum`` let it through; a surrogate is a ``str`` like
any other, but no UTF-8 text can hold it, so the tool's first ``encode`` (a database write, an HTTP body)
would fail far from the call.  Whichever way arguments arrive (raw text on the OpenAI-style wires, an object
on Anthropic's and Gemini's, a block of text in text mode, a call a custom provider built), the validator
refuses these as issues the model reads — the place and what was there, never the value — as typed output
refuses them (:mod:`agentactors.output.target`).

Most arguments hold none: :func:`has_odd` is one walk that looks at floats and non-ASCII strings only, and
the validator does not even walk when its compiled check has already looked at every value
(:func:`agentactors.tools.fastcheck.sees_every_value`).
"""

from __future__ import annotations

import re
from typing import Any, Final

from .results import ValidationIssue

__all__ = ["has_odd", "odd_issues", "whole"]

_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_WHOLE: Final = "a string of whole Unicode characters"


def whole(text: str) -> bool:
    """Whether ``text`` holds whole characters only (no lone surrogate): one C scan, none for ASCII text."""
    return text.isascii() or _SURROGATE.search(text) is None


def has_odd(value: Any) -> bool:
    """Whether ``value`` holds a NaN, an infinity, or a string or key with a lone surrogate, anywhere.

    Iterative (the arguments are within the depth policy, but a walk needs no stack room of its own).
    """
    stack: list[Any] = [value]
    pop, push = stack.pop, stack.extend
    while stack:
        item = pop()
        if isinstance(item, float):
            if item - item != 0.0:  # NaN and ±inf only: x - x is 0.0 for every finite float
                return True
        elif isinstance(item, str):
            if not whole(item):
                return True
        elif isinstance(item, dict):
            for key in item:
                if isinstance(key, str) and not whole(key):
                    return True
            push(item.values())
        elif isinstance(item, list | tuple):
            push(item)
    return False


def odd_issues(value: Any) -> list[ValidationIssue]:
    """An issue for each odd value in ``value`` (see the module), in the arguments' order; empty when none.

    Its paths are written as the validator writes them (``window.end``, ``tags[1]``, ``arguments`` for the
    whole) and never hold half a character themselves.
    """
    issues: list[ValidationIssue] = []
    paths: list[tuple[Any, str]] = [(value, "")]
    while paths:
        item, path = paths.pop()
        where = path or "arguments"
        if isinstance(item, str):
            if not whole(item):
                issues.append(ValidationIssue(where, _WHOLE, "a string with a lone surrogate"))
        elif isinstance(item, float):
            if item - item != 0.0:
                # Named as every issue names what was sent: by an article and a kind, never the value.
                got = "a NaN" if item != item else ("an infinity" if item > 0 else "a negative infinity")
                issues.append(ValidationIssue(where, "a finite number", got))
        elif isinstance(item, dict):
            if any(isinstance(k, str) and not whole(k) for k in item):
                issues.append(ValidationIssue(where, "keys of whole Unicode characters", "a key with a lone surrogate"))
            for key, sub in reversed(item.items()):  # reversed onto the stack: taken off in the arguments' order
                name = _shown(str(key))
                paths.append((sub, f"{path}.{name}" if path else name))
        elif isinstance(item, list | tuple):
            paths.extend((item[i], f"{path}[{i}]") for i in range(len(item) - 1, -1, -1))
    return issues


def _shown(key: str) -> str:
    """A key as a path shows it: at most 40 characters (as the validator's paths), a half character as ``?``."""
    shown = key if len(key) <= 40 else key[:39] + "…"
    return shown if whole(shown) else _SURROGATE.sub("?", shown)
