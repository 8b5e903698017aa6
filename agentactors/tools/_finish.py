"""The last touch on every call's result: sendable text, a hint, the agent's cap.

Every answer of the executor — ``ok`` or not — leaves through :func:`finish`,
so the rules below hold for all of them: lone surrogates are replaced
(``tools.surrogates_replaced``: the next request could not carry them), the
tool's hint is appended to ``error`` and ``invalid`` results, and what a tool
produced (``ok`` and ``error``) is truncated to the agent's cap
(``tools.result_truncated``).
"""

from __future__ import annotations

from typing import Any

from ..events import emit
from ..messages import ToolCall
from ..parts import MediaPart
from .registry import Tool
from .results import ToolResult, ToolStatus, encodable_text, result_of, truncate, truncated_head_length

__all__ = ["finish"]


def finish(
    call: ToolCall,
    t: Tool[Any, Any] | None,
    status: ToolStatus,
    content: str,
    cap: int | None,
    duration: float,
    refused: bool,
    original: int | None,
    media: tuple[MediaPart, ...],
) -> ToolResult:
    """``call``'s :class:`ToolResult` (``t``: its tool, ``None`` when there is none by that name).

    ``cap``: the agent's ``max_tool_result_chars`` (``None``: no cap); ``refused``, ``original`` and
    ``media`` go into the result as they are.
    """
    name = t.name if t is not None else call.name
    if not content.isascii():
        content = _encodable(call, name, content)
    suffix = ""
    if t is not None and status in (ToolStatus.error, ToolStatus.invalid):
        hint = t.hint_text(content)
        if hint is not None:
            suffix = f"\nHint: {hint}" if hint.isascii() else _encodable(call, name, f"\nHint: {hint}")
    truncated = False
    # The operator's cap is for what tools produce (results and their error messages); our own
    # texts (invalid, denied, timeout) are short by construction and must stay whole to be useful.
    if cap is not None and status in (ToolStatus.ok, ToolStatus.error) and len(content) + len(suffix) > cap:
        if len(suffix) >= cap:
            suffix = ""  # a hint as long as the cap itself cannot be kept
        room = cap - len(suffix)
        if len(content) > room:
            size = len(content)
            content = truncate(name, content, room)
            truncated = True
            shown = truncated_head_length(name, size, room)
            emit("tools.result_truncated", call_id=call.id, name=name, size=size, cap=cap, shown=shown)
    if suffix:
        content += suffix
    # Set field by field (result_of): the constructor's converters and checks cost a good part of it, per call.
    return result_of(call.id, name, status, content, max(0.0, duration), truncated, refused, original, media)


def _encodable(call: ToolCall, name: str, text: str) -> str:
    """``text`` as the next request can carry it; repairs are recorded (``tools.surrogates_replaced``)."""
    fixed, count = encodable_text(text)
    if count:
        emit("tools.surrogates_replaced", call_id=call.id, name=name, surrogates=count)
    return fixed
