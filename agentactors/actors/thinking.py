"""Telling a real answer from a think-only step, and stripping think blocks from answers.

A step is *think-only* when its text, once ``<think>…</think>`` blocks are
removed, is empty or only a bare lead-in such as "Let me think…" — the model has
not answered yet.  The loop continues after such a step (up to
``max_empty_steps`` in a row) and never returns think text as the answer.
"""

from __future__ import annotations

import re

__all__ = ["is_think_only", "strip_think"]

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
    answer = strip_think(text)
    if not answer:
        return True
    return len(answer) <= 80 and _LEAD_IN.match(answer) is not None
