"""Gemini's thought signatures, as both wires that carry them (native Gemini, Gemini's OpenAI-compatible endpoint)
need them: which models refuse an unsigned call, and what stands in for a signature they cannot be sent."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["SKIP_SIGNATURE", "signs_calls"]

#: Google's documented stand-in for a function call Gemini 3+ did not sign (made by another provider in a fallback
#: chain, or by another model, whose signature it refuses): without a signature on a turn's first call, every
#: request is a 400.
SKIP_SIGNATURE: Final = "skip_thought_signature_validator"

_GEMINI_MAJOR = re.compile(r"gemini-(\d+)")


def signs_calls(bare: str) -> bool:
    """Whether the model ``bare`` (its name without ``models/`` or a router's ``vendor/``) is Gemini 3 or later,
    which refuses a current-turn function call without a thought signature."""
    major = _GEMINI_MAJOR.match(bare)
    return major is not None and int(major.group(1)) >= 3
