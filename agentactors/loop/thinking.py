"""Telling a real answer from a think-only step, and stripping think blocks from answers.

A step is *think-only* when its text, once ``<think>…</think>`` blocks are
removed, is empty or only a bare lead-in such as "Let me think…" — the model has
not answered yet.  The loop continues after such a step (up to
``max_empty_steps`` in a row) and never returns think text as the answer.
"""

from __future__ import annotations

import re

__all__ = ["ThinkFilter", "answer_of", "is_think_only", "strip_think"]

# <think>, <thinking> and <reasoning> blocks; an unclosed one runs to the end of the text
# (a model cut off while thinking has not answered).
_BLOCK = re.compile(r"<(think|thinking|reasoning)\b[^>]*>.*?(?:</\1\s*>|\Z)", re.IGNORECASE | re.DOTALL)
# A stray closing tag left when the opening one was in a previous chunk or stripped by the vendor.
_STRAY_CLOSE = re.compile(r"^.*?</(?:think|thinking|reasoning)\s*>", re.IGNORECASE | re.DOTALL)
_LEAD_IN = re.compile(
    r"^(?:(?:ok(?:ay)?|so|well|hmm+|alright|right)[,.!]*\s+)?"
    r"(?:let\s+me\s+(?:think|see|check|consider|reason|work\s+(?:this|it)\s+out|figure\s+(?:this|it)\s+out)"
    r"|i\s+need\s+to\s+think|i'?ll\s+think|thinking|hmm+)"
    r"(?:\s+(?:about|through|over|on)?\s*(?:this|it|that)?)?"
    r"(?:\s+(?:for\s+a\s+(?:moment|second|bit)|carefully|step\s+by\s+step|first))?"
    r"\s*[.…:!]*$",
    re.IGNORECASE,
)


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


_OPEN_TAGS = ("<think>", "<thinking>", "<reasoning>")


class ThinkFilter:
    """Removes ``<think>…</think>`` blocks from a stream of text deltas.

    ``feed(delta)`` returns the answer text that may be shown now; a possible tag
    split across deltas (``"<thi"``) is held until it resolves.  ``finish()``
    returns any held text that turned out not to be a tag.
    """

    __slots__ = ("_close", "_held")

    def __init__(self) -> None:
        self._held = ""
        self._close: str | None = None  # the closing tag while inside a block

    def feed(self, delta: str) -> str:
        text = self._held + delta
        self._held = ""
        if self._close is None and "<" not in text:
            return text  # the common case: no tag anywhere near
        out: list[str] = []
        i = 0
        n = len(text)
        while i < n:
            if self._close is not None:
                end = text.lower().find(self._close, i)
                if end < 0:
                    # Keep only a tail that could be the start of the closing tag.
                    self._held = _partial_tail(text[i:], (self._close,))
                    return "".join(out)
                i = end + len(self._close)
                self._close = None
                continue
            lt = text.find("<", i)
            if lt < 0:
                out.append(text[i:])
                break
            out.append(text[i:lt])
            rest = text[lt:].lower()
            tag = next((t for t in _OPEN_TAGS if rest.startswith(t)), None)
            if tag is not None:
                self._close = "</" + tag[1:]
                i = lt + len(tag)
                continue
            if any(t.startswith(rest) for t in _OPEN_TAGS):
                self._held = text[lt:]  # maybe a tag: wait for more
                break
            out.append("<")
            i = lt + 1
        return "".join(out)

    def finish(self) -> str:
        held, self._held = self._held, ""
        return "" if self._close is not None else held


def _partial_tail(text: str, tags: tuple[str, ...]) -> str:
    low = text.lower()
    for k in range(min(len(low), max(len(t) for t in tags) - 1), 0, -1):
        if any(t.startswith(low[-k:]) for t in tags):
            return text[-k:]
    return ""
