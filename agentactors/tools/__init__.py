"""Tools: ``@tool`` with schemas from type hints, argument validation, and one status for every outcome.

See ``docs/loop.md`` ("Tools", "Tool results").  The executor that runs them is
:class:`agentactors.actors.tools.ToolExecutorActor`.
"""

from __future__ import annotations

from .docstrings import parse_docstring
from .registry import Hint, Tool, ToolContext, tool
from .results import (
    MAX_LISTED_ISSUES,
    ResultCeiling,
    ToolResult,
    ToolStatus,
    ValidationIssue,
    render_result,
    truncate,
    truncation_marker,
)
from .schema import ConversionError, schema_for

__all__ = [
    "MAX_LISTED_ISSUES",
    "ConversionError",
    "Hint",
    "ResultCeiling",
    "Tool",
    "ToolContext",
    "ToolResult",
    "ToolStatus",
    "ValidationIssue",
    "parse_docstring",
    "render_result",
    "schema_for",
    "tool",
    "truncate",
    "truncation_marker",
]
