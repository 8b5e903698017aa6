"""Tools: ``@tool`` with schemas from type hints, argument validation, and one status for every outcome.

Toolsets (``toolset``) are sources of tools an agent lists when a run starts (an MCP server is one).

See ``docs/loop.md`` ("Tools", "Tool results").  The executor that runs them is
:class:`agentactors.tools.executor.ToolExecutorActor`.
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
from .toolset import ToolNameClashError, Toolset, ToolsetError, ToolsetHost

__all__ = [
    "MAX_LISTED_ISSUES",
    "ConversionError",
    "Hint",
    "ResultCeiling",
    "Tool",
    "ToolContext",
    "ToolNameClashError",
    "ToolResult",
    "ToolStatus",
    "Toolset",
    "ToolsetError",
    "ToolsetHost",
    "ValidationIssue",
    "parse_docstring",
    "render_result",
    "schema_for",
    "tool",
    "truncate",
    "truncation_marker",
]
