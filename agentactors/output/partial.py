"""Partial output: successively more complete values while an answer's JSON streams in.

Partial JSON is parsed with ``jiter``'s partial mode (the maintained parser pydantic uses; the ``[jiter]``
extra): ``{"name": "Al`` is ``{"name": "Al"}``.  Each parse is checked against the output type; a
prefix that does not validate yet (a required field not begun) is tried again without its unfinished
containers (the completed elements alone), then skipped; a value equal to the last one is not repeated.
Output validators do not run on partial values: only the final answer is validated in full (and it
alone is ``RunResult.output``).

**Linear time, short steps.**  Parsing and checking the whole prefix on every delta would be quadratic
(a 38 KB list in 2,500 deltas took half a minute, on the event loop).  So a delta costs a scan of its
own characters (:class:`_Scanner`: strings, nesting, where the last container closed, where a list's
elements end), and values are offered only when the text has grown by an eighth since the last offer
(``_GROWTH``) or when the whole value has just closed (so the last partial value is the complete one).
A list output (``list[Item]``) is followed element by element: each element is parsed and checked
once, when it ends, never the list again.  Any other value is parsed and checked whole at each offer,
up to ``_WHOLE_CHECK_LIMIT`` (16 KB), past which it offers nothing more before the final value.

:class:`PartialOutput` follows one model call: the arguments of an output tool call (tool strategy) or
the answer text (native and prompted).  It is created only for a run someone listens to.
"""

from __future__ import annotations

import importlib
import re
import typing
from collections.abc import Callable
from typing import Any, Final

from .._json import MAX_DEPTH, JsonBoundError, check_value
from ..tools.schema import unwrap_annotated
from .prompt import json_start
from .target import Member, OutputTarget

__all__ = ["PartialOutput", "jiter_available", "parse_partial", "settled"]

_MISSING = object()
_jiter: Any = None

#: A value is offered again once its text is ``1 / 2**_GROWTH`` larger than at the last offer (12.5 %).
_GROWTH: Final = 3
#: Past this size, a value that is not a list is not offered any more: a check of the whole prefix would
#: hold the event loop, and the final answer is checked (once) by the loop anyway.
_WHOLE_CHECK_LIMIT: Final = 16 * 1024

# What the scanner stops at: an escape (with the character it escapes, when the piece has it), a quote,
# a bracket.  Everything else is skipped by the regex engine, not by Python.
_TOKENS: Final = re.compile(r'\\.?|["{}\[\]]', re.DOTALL)
# The same, with the commas that separate a list's elements (for a list output).
_LIST_TOKENS: Final = re.compile(r'\\.?|["{}\[\],]', re.DOTALL)


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
    except ValueError:  # not JSON, or past jiter's own nesting limit
        return _MISSING


#: What a number or a literal (``true``, ``false``, ``null``) still arriving may end in.
_SCALAR_CHARS: Final = "0123456789.eE+-truefalsn"


def settled(text: str) -> str:
    """``text`` (a JSON prefix whose end is not inside a string) without a number or literal still arriving.

    jiter's partial mode completes a number where the text stops (``"price": 12`` for a price whose digits
    are still coming, ``1234`` next): a value that was never in the answer, and not "more complete" than
    the one before.  Cut back to the ``,`` ``:`` ``[`` or ``{`` before it, the key or element is left out
    until its next character (whitespace, a comma, a closing bracket) says it ended.  A cut literal
    (``tr``) jiter drops on its own; cut here too, it costs nothing.
    """
    kept = text.rstrip(_SCALAR_CHARS)
    return text if len(kept) == len(text) else kept


class _Scanner:
    """The shape of a growing JSON text, learned from each new piece alone (never the whole prefix again).

    :ivar depth: how many containers are open.
    :ivar closed: the length of the prefix up to the last container that closed (``0``: none yet).
    :ivar done: the top-level value has closed.
    :ivar seps: for a list output (``track``), where its elements are separated: the offsets of its ``[``,
        of each ``,`` between its elements and of its ``]`` (the list is the first array opened at the top
        level or one level down, as in ``{"response": [...]}``).
    :ivar level: how deep that list is (1 or 2: its elements may nest that much less than a whole value).
    """

    __slots__ = (
        "closed", "depth", "done", "escaped", "in_string", "level", "list_depth", "seps", "size", "tokens"
    )

    def __init__(self, *, track: bool = False) -> None:
        self.size = 0
        self.depth = 0
        self.closed = 0
        self.done = False
        self.in_string = False
        self.escaped = False
        self.tokens = _LIST_TOKENS if track else _TOKENS
        self.list_depth = 0 if track else -1
        self.level = 0
        self.seps: list[int] = []

    def feed(self, piece: str) -> None:
        start = 0
        if self.escaped and piece:  # the previous piece ended in a backslash: this character is escaped
            self.escaped = False
            start = 1
        base = self.size
        for match in self.tokens.finditer(piece, start):
            token = match.group()
            if token[0] == "\\":
                if len(token) == 1:
                    self.escaped = self.in_string
            elif token == '"':
                self.in_string = not self.in_string
            elif self.in_string or self.done:
                continue
            elif token == ",":
                if self.depth == self.list_depth:
                    self.seps.append(base + match.start())
            elif token in "{[":
                self.depth += 1
                if self.list_depth == 0 and token == "[" and self.depth <= 2:
                    self.list_depth = self.level = self.depth
                    self.seps.append(base + match.start())
            else:
                if self.depth == self.list_depth and token == "]":
                    self.seps.append(base + match.start())
                    self.list_depth = -1  # closed: nothing more to follow
                self.depth -= 1
                self.closed = base + match.end()
                if self.depth <= 0:
                    self.done = True
        self.size += len(piece)


class _Follower:
    """One growing JSON text (a tool call's arguments, or the answer's JSON): its pieces, its schedule.

    A list output (``items``: the element type's own target) is followed element by element: each
    element is parsed and checked once, when the separator after it arrives; the value offered is the
    checked elements plus the element under way when it checks.  Anything else is parsed and checked
    whole, at the offers the schedule allows (``_GROWTH``), up to ``_WHOLE_CHECK_LIMIT``.
    """

    __slots__ = (
        "base", "broken", "checked", "items", "member", "offered_at", "pieces", "scanner", "tail_at", "values"
    )

    def __init__(self, member: Member | None, items: OutputTarget | None) -> None:
        self.member = member
        self.items = items
        self.pieces: list[str] = []  # the text from offset `base` on (a list output drops its checked elements)
        self.base = 0
        self.scanner = _Scanner(track=items is not None)
        self.offered_at = 0
        self.tail_at = 0
        self.checked = 0  # elements checked (their separators: seps[checked], seps[checked + 1])
        self.values: list[Any] = []
        self.broken = False  # an element did not check: the answer is wrong, no more partial values

    def feed(self, piece: str) -> bool:
        """Take ``piece``; whether a value is due to be offered."""
        self.pieces.append(piece)
        scanner = self.scanner
        was_done = scanner.done
        scanner.feed(piece)
        if self.items is not None and len(scanner.seps) > self.checked + 1:
            self._check_elements()
        if scanner.done and not was_done:
            return True
        return scanner.size - self.offered_at >= max(1, scanner.size >> _GROWTH)

    def text(self, start: int = 0) -> str:
        """The text from offset ``start`` on (the pieces joined once, and kept joined)."""
        if len(self.pieces) > 1:
            self.pieces[:] = ["".join(self.pieces)]
        text = self.pieces[0] if self.pieces else ""
        return text[start - self.base :] if start > self.base else text

    def _drop(self, end: int) -> None:
        """Forget the text before offset ``end`` (checked elements: never read again)."""
        text = self.text()
        self.pieces[:] = [text[end - self.base :]]
        self.base = end

    def _check_elements(self) -> None:
        """Check the elements whose closing separator has arrived: each one once."""
        items = self.items
        assert items is not None
        seps = self.scanner.seps
        base = seps[self.checked]
        text = self.text(base)
        while self.checked + 1 < len(seps) and not self.broken:
            raw = text[seps[self.checked] + 1 - base : seps[self.checked + 1] - base]
            self.checked += 1
            if not raw.strip():  # `[]`, or the space before the closing `]`
                continue
            value = _check(parse_partial(raw), items, None, MAX_DEPTH - self.scanner.level)
            if value is _MISSING:
                self.broken = True
            else:
                self.values.append(value)
        self._drop(seps[self.checked])

    def value(self, target: OutputTarget) -> Any:
        """The value to offer now, or ``_MISSING``."""
        self.offered_at = self.scanner.size
        if self.items is not None:
            return self._list_value()
        if self.scanner.size > _WHOLE_CHECK_LIMIT:
            return _MISSING
        text = self.text()
        if self.scanner.done:  # what follows the value (a fence's end, prose) is no part of it
            text = text[: self.scanner.closed]
        elif not self.scanner.in_string:
            text = settled(text)
        value = _check(parse_partial(text), target, self.member)
        closed = self.scanner.closed
        if value is _MISSING and closed and not self.scanner.done:  # its completed containers alone
            value = _check(parse_partial(text[:closed]), target, self.member)
        return value

    def _list_value(self) -> list[Any] | object:
        if self.broken or not self.scanner.seps:
            return _MISSING
        values = list(self.values)
        seps = self.scanner.seps
        if self.scanner.list_depth != -1:  # still open: the element under way, when it checks already
            start = seps[-1] + 1
            grown = self.scanner.size - max(self.tail_at, start)
            if grown >= (self.scanner.size - start) >> _GROWTH:
                self.tail_at = self.scanner.size
                assert self.items is not None
                tail_text = self.text(start)
                if not self.scanner.in_string:
                    tail_text = settled(tail_text)
                tail = _check(parse_partial(tail_text), self.items, None, MAX_DEPTH - self.scanner.level)
                if tail is not _MISSING:
                    values.append(tail)
        return values


def _check(parsed: Any, target: OutputTarget, member: Member | None, max_depth: int = MAX_DEPTH) -> Any:
    """``parsed`` checked and converted, or ``_MISSING``.

    First the policy every JSON value entering the library is held to (:mod:`agentactors._json`: at most
    ``max_depth`` containers deep — a list output's element, less the list's own levels —, no integer too
    long): jiter's partial mode has a nesting limit of its own, far past it, and a value the final answer
    would be refused for must not come out as a partial one (to the caller, into ``output.partial`` events
    and the records that must read them back).

    A prefix is not the answer: the output type's own code (a pydantic ``model_validator``, a
    ``__post_init__``, an attrs converter) may raise on it what it never raises on the final value — an
    ``IndexError`` on a half-read string, a ``KeyError`` on a list cut after an item it refuses last.  Such
    a prefix is "not valid yet", like one that fails the schema: a partial value is never worth the run
    (raised here it would leave the stream, and end a run that the same answer, not streamed, completes).
    The final answer is checked apart, by the loop, where the type's errors keep their meaning.
    """
    if parsed is _MISSING:
        return _MISSING
    try:
        check_value(parsed, max_depth=max_depth)
    except JsonBoundError:
        return _MISSING
    try:
        checked = target.check(parsed, member)
    except Exception:
        return _MISSING
    return checked.value if checked.ok else _MISSING


_ITEM_TARGETS: dict[Any, OutputTarget | None] = {}


def _items_of(member: Member | None) -> OutputTarget | None:
    """The element type's target when ``member`` is a list output (followed element by element)."""
    if member is None or not member.wrapped:
        return None
    tp, _ = unwrap_annotated(member.tp)
    if typing.get_origin(tp) is not list or len(typing.get_args(tp)) != 1:
        return None
    item = typing.get_args(tp)[0]
    try:
        return _ITEM_TARGETS[item]
    except KeyError:
        pass
    except TypeError:  # an unhashable type argument: followed whole
        return None
    try:
        target: OutputTarget | None = OutputTarget(item)
    except (TypeError, ValueError):
        target = None
    if len(_ITEM_TARGETS) < 256:
        _ITEM_TARGETS[item] = target
    return target


class PartialOutput:
    """One model call's partial values, handed to ``emit(value)`` as they change.

    :param target: the output type.
    :param text: follow the answer text (native, prompted) rather than output tool arguments.
    :param emit: called with each new partial value.
    :param after: the follower of the run's model call before this one (a refused answer's): the first value
        of this call is not offered when it equals the last value offered then — the run's partial values
        never repeat the last one, across a re-ask too (``docs/output.md``).
    """

    __slots__ = ("_answer", "_calls", "_emit", "_last", "_lead", "_target", "_text_mode")

    def __init__(
        self, target: OutputTarget, *, text: bool, emit: Callable[[Any], None], after: PartialOutput | None = None
    ) -> None:
        self._target = target
        self._text_mode = text
        self._emit = emit
        self._lead: _Follower | None = _Follower(None, None) if text else None  # the text before its JSON
        self._answer: _Follower | None = None  # the answer's JSON, once it has begun
        self._calls: dict[int, _Follower] = {}
        self._last: Any = after._last if after is not None else _MISSING

    def feed_text(self, piece: str) -> None:
        """A piece of answer text (think blocks already removed)."""
        if not self._text_mode or not piece:
            return
        answer = self._answer
        if answer is None:
            answer = self._find_json(piece)
            if answer is None:
                return
        elif not answer.feed(piece):
            return
        self._offer(answer)

    def _find_json(self, piece: str) -> _Follower | None:
        """Until the answer's JSON begins: the text so far, looked at on the schedule of any value."""
        lead = self._lead
        assert lead is not None
        if not lead.feed(piece):
            return None
        lead.offered_at = lead.scanner.size
        text = lead.text()
        start = json_start(text)
        if start == -1:
            return None
        member = self._target.text_member if not self._target.is_union else None
        answer = self._answer = _Follower(None, _items_of(member))
        self._lead = None
        answer.feed(text[start:])
        return answer

    def call_started(self, index: int, name: str) -> None:
        """A tool call began streaming: followed when it is an output tool."""
        if self._text_mode:
            return
        member = self._target.member(name)
        if member is not None:
            self._calls[index] = _Follower(member, _items_of(member))

    def call_delta(self, index: int, fragment: str) -> None:
        """A fragment of a tool call's arguments."""
        follower = self._calls.get(index)
        if follower is not None and fragment and follower.feed(fragment):
            self._offer(follower)

    def _offer(self, follower: _Follower) -> None:
        value = follower.value(self._target)
        if value is _MISSING:
            return
        try:
            same = bool(value == self._last)
        except Exception:  # the output type's own __eq__, on a value it never compared before
            same = False
        if same:
            return
        self._last = value
        self._emit(value)
