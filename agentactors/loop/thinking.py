"""Telling a real answer from a think-only step, and stripping think blocks from answers.

A step is *think-only* when its text, once ``<think>…</think>`` blocks are
removed, is empty or only a bare lead-in such as "Let me think…" — the model has
not answered yet.  The loop continues after such a step (up to
``max_empty_steps`` in a row) and never returns think text as the answer.

One tag grammar serves the whole answer (:func:`strip_think`), the stream
(:class:`ThinkFilter`) and the JSON transport, which runs no call written inside
a think block (:mod:`.json_transport`): an opening tag ``<think>``, ``<thinking>``
or ``<reasoning>`` (any case, with at most :data:`_ATTRS` characters of attributes),
closed by the same name (``</think>``, up to :data:`_SPACE` blanks before the ``>``)
or running to the end of the text.  The bounds keep every scan linear: a tag is
recognised within a window of a few hundred characters, so a stream never holds
more than that while a tag may be starting.
"""

from __future__ import annotations

import re

__all__ = ["ANY_CLOSE_TAG", "OPEN_TAG", "ThinkFilter", "answer_of", "block_end", "is_think_only", "strip_think"]

#: The most attribute characters an opening tag may carry, and the most blanks before a closing ``>``.
_ATTRS = 128
_SPACE = 16
_NAMES = "(think|thinking|reasoning)"

#: An opening tag; group 1 is its name.  (``[^<>]``: a ``<`` ends the attempt at once, so a text of
#: many ``<think`` without ``>`` is scanned once, not once per ``<``.)
OPEN_TAG = re.compile(rf"<{_NAMES}\b[^<>]{{0,{_ATTRS}}}>", re.IGNORECASE)
#: Any closing tag: the end of thinking whose opening tag a vendor's template wrote (or stripped).
ANY_CLOSE_TAG = re.compile(rf"</{_NAMES}\s{{0,{_SPACE}}}>", re.IGNORECASE)
_CLOSE = {name: re.compile(rf"</{name}\s{{0,{_SPACE}}}>", re.IGNORECASE) for name in ("think", "thinking", "reasoning")}
# <think>, <thinking> and <reasoning> blocks; an unclosed one runs to the end of the text
# (a model cut off while thinking has not answered).
_BLOCK = re.compile(rf"<{_NAMES}\b[^<>]{{0,{_ATTRS}}}>.*?(?:</\1\s{{0,{_SPACE}}}>|\Z)", re.IGNORECASE | re.DOTALL)
# A stray closing tag left when the opening one was in a previous chunk or stripped by the vendor.
_STRAY_CLOSE = re.compile(rf"^.*?</{_NAMES}\s{{0,{_SPACE}}}>", re.IGNORECASE | re.DOTALL)
_LEAD_IN = re.compile(
    r"^(?:(?:ok(?:ay)?|so|well|hmm+|alright|right)[,.!]*\s+)?"
    r"(?:let\s+me\s+(?:think|see|check|consider|reason|work\s+(?:this|it)\s+out|figure\s+(?:this|it)\s+out)"
    r"|i\s+need\s+to\s+think|i'?ll\s+think|thinking|hmm+)"
    r"(?:\s+(?:about|through|over|on)?\s*(?:this|it|that)?)?"
    r"(?:\s+(?:for\s+a\s+(?:moment|second|bit)|carefully|step\s+by\s+step|first))?"
    r"\s*[.…:!]*$",
    re.IGNORECASE,
)


def block_end(text: str, name: str, start: int) -> int:
    """Where the think block named ``name`` whose opening tag ends at ``start`` ends: past its closing
    tag, or ``len(text)`` when it never closes."""
    found = _CLOSE[name.lower()].search(text, start)
    return found.end() if found is not None else len(text)


def strip_think(text: str) -> str:
    """``text`` without think blocks, trimmed.  Text with no ``<`` is returned trimmed at once."""
    if "<" not in text:
        return text.strip()
    text = _STRAY_CLOSE.sub("", text, count=1) if _BLOCK.search(text) is None else text
    return _BLOCK.sub("", text).strip()


def is_think_only(text: str) -> bool:
    """True for empty text, text of only think blocks, or a bare "let me think…" lead-in."""
    return answer_of(text) is None


def answer_of(text: str) -> str | None:
    """``text`` without think blocks, trimmed — or ``None`` when it is think-only (see :func:`is_think_only`).

    One pass for what the loop asks of every answer: is it one, and what does it say.
    """
    answer = strip_think(text)
    if not answer or (len(answer) <= 80 and _LEAD_IN.match(answer) is not None):
        return None
    return answer


# The starts an opening tag may still grow from ("<", "<th", "<thinking", ...), and an opening tag whose
# attributes are still arriving; a window longer than any tag is no tag.
_OPEN_STARTS = tuple(f"<{name}"[:k] for name in ("think", "thinking", "reasoning") for k in range(1, len(name) + 2))
_OPEN_PENDING = re.compile(rf"<{_NAMES}\b[^<>]*", re.IGNORECASE)
_TAG_MAX = len("<reasoning") + _ATTRS + 1


class ThinkFilter:
    """Removes ``<think>…</think>`` blocks from a stream of text deltas, as :func:`strip_think` does.

    ``feed(delta)`` returns the answer text that may be shown now; a possible tag
    split across deltas (``"<thi"``) is held until it resolves.  ``finish()``
    returns any held text that turned out not to be a tag.  What is held is never
    longer than a tag can be, so a delta costs its own characters.
    """

    __slots__ = ("_close", "_held")

    def __init__(self) -> None:
        self._held = ""
        self._close: re.Pattern[str] | None = None  # the closing tag while inside a block

    def feed(self, delta: str) -> str:
        text = self._held + delta if self._held else delta
        self._held = ""
        if self._close is None and "<" not in text:
            return text  # the common case: no tag anywhere near
        out: list[str] = []
        i = 0
        n = len(text)
        while i < n:
            close = self._close
            if close is not None:
                found = close.search(text, i)
                if found is None:
                    self._held = _close_tail(text, i)  # only what could be the start of the closing tag
                    return "".join(out)
                i = found.end()
                self._close = None
                continue
            lt = text.find("<", i)
            if lt < 0:
                out.append(text[i:])
                break
            out.append(text[i:lt])
            tag = OPEN_TAG.match(text, lt)
            if tag is not None:
                self._close = _CLOSE[tag.group(1).lower()]
                i = tag.end()
                continue
            if _may_open(text, lt):
                self._held = text[lt:]  # maybe a tag: wait for more
                break
            out.append("<")
            i = lt + 1
        return "".join(out)

    def finish(self) -> str:
        held, self._held = self._held, ""
        return "" if self._close is not None else held


def _may_open(text: str, lt: int) -> bool:
    """Whether ``text[lt:]`` (from a ``<`` to the end) may still become an opening tag."""
    if len(text) - lt > _TAG_MAX:
        return False
    rest = text[lt:]
    return rest.lower() in _OPEN_STARTS or _OPEN_PENDING.fullmatch(rest) is not None


def _close_tail(text: str, start: int) -> str:
    """The end of ``text[start:]`` that may be the start of a closing tag (``"</thi"``), or ``""``."""
    lt = text.rfind("<", max(start, len(text) - (len("</reasoning") + _SPACE)))
    if lt < 0:
        return ""
    rest = text[lt:].lower()
    if any(f"</{name}".startswith(rest) for name in ("think", "thinking", "reasoning")):
        return text[lt:]
    return text[lt:] if _CLOSE_PENDING.fullmatch(rest) is not None else ""


_CLOSE_PENDING = re.compile(rf"</{_NAMES}\s{{0,{_SPACE}}}", re.IGNORECASE)
