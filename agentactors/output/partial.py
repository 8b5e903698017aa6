"""Partial output: successively more complete values while an answer's JSON streams in.

Partial JSON is parsed with ``jiter``'s partial mode (the maintained parser pydantic uses; the ``[jiter]``
extra): ``{"name": "Al`` is ``{"name": "Al"}``.  Each parse is checked against the output type; a
prefix that does not validate yet (a required field not begun) is skipped, and a value equal to the last
one is not repeated.  Output validators do not run on partial values: only the final answer is validated
in full (and it alone is ``RunResult.output``).

:class:`PartialOutput` follows one model call: the arguments of an output tool call (tool strategy) or
the answer text (native and prompted).  It is created only for a run someone listens to.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from .prompt import json_start
from .target import Member, OutputTarget

__all__ = ["PartialOutput", "jiter_available", "parse_partial"]

_MISSING = object()
_jiter: Any = None


def _load() -> Any:
    global _jiter
    if _jiter is None:
        # Imported on first use: jiter is an optional extra, and `import agentactors` must not need it.
        _jiter = importlib.import_module("jiter")
    return _jiter


def jiter_available() -> bool:
    """Whether ``jiter`` (the ``[jiter]`` extra) can be imported."""
    try:
        _load()
    except ImportError:
        return False
    return True


def parse_partial(text: str) -> Any:
    """The value of a JSON prefix (incomplete strings kept as far as they go); ``_MISSING`` when none yet.

    :raises ImportError: ``jiter`` is not installed (``pip install 'agentactors[jiter]'``).
    """
    jiter = _load()
    if not text.strip():
        return _MISSING
    try:
        return jiter.from_json(text.encode("utf-8"), partial_mode="trailing-strings")
    except ValueError:
        return _MISSING


class PartialOutput:
    """One model call's partial values, handed to ``emit(value)`` as they change.

    :param target: the output type.
    :param text: follow the answer text (native, prompted) rather than output tool arguments.
    :param emit: called with each new partial value.
    """

    __slots__ = ("_buffers", "_emit", "_last", "_members", "_target", "_text", "_text_mode")

    def __init__(self, target: OutputTarget, *, text: bool, emit: Callable[[Any], None]) -> None:
        self._target = target
        self._text_mode = text
        self._emit = emit
        self._text = ""
        self._buffers: dict[int, str] = {}
        self._members: dict[int, Member] = {}
        self._last: Any = _MISSING

    def feed_text(self, piece: str) -> None:
        """A piece of answer text (think blocks already removed)."""
        if not self._text_mode or not piece:
            return
        self._text += piece
        start = json_start(self._text)
        if start == -1:
            return
        body = self._text[start:]
        fence = body.find("```")
        if fence != -1:
            body = body[:fence]
        self._offer(parse_partial(body), None)

    def call_started(self, index: int, name: str) -> None:
        """A tool call began streaming: followed when it is an output tool."""
        if self._text_mode:
            return
        member = self._target.member(name)
        if member is not None:
            self._members[index] = member
            self._buffers[index] = ""

    def call_delta(self, index: int, fragment: str) -> None:
        """A fragment of a tool call's arguments."""
        member = self._members.get(index)
        if member is None:
            return
        self._buffers[index] += fragment
        self._offer(parse_partial(self._buffers[index]), member)

    def _offer(self, parsed: Any, member: Member | None) -> None:
        if parsed is _MISSING:
            return
        verdict = self._target.check(parsed, member)
        if not verdict.ok or verdict.value == self._last:
            return
        self._last = verdict.value
        self._emit(verdict.value)
