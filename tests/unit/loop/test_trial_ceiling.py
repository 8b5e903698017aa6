"""A tool's result ceiling names parameters the tool has (docs/loop.md, "Two answers to an oversized result").

Found by a new user's trial of the page: ``ResultCeiling(narrow_by=...)`` naming a parameter the tool does not
have (a typo, a renamed parameter, one a ``functools.partial`` bound) was taken as it was, and every refusal then
told the model to call again narrowing by a parameter it cannot send — a retry that fails validation, where the
ceiling was meant to produce a clean one.  Making such a tool now logs a warning naming the tool and the parameter
(a warning, not a refusal: a tool that worked before is still made).  A tool whose parameters are open
(``**kwargs``) or given by an explicit spec (an MCP server's ceiling is one for all its tools) is not checked: its
names cannot be known here.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import pytest

from agentactors import Agent, ScriptedProvider, ToolCall
from agentactors.messages import ToolSpec
from agentactors.tools import ResultCeiling, tool
from agentactors.tools.registry import Tool

pytestmark = pytest.mark.anyio


def _search(limit: int = 10, since: str = "") -> str:
    """Search."""
    return "x" * 100


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "agentactors.tools" and r.levelno == logging.WARNING]


def test_a_ceiling_naming_a_parameter_the_tool_lacks_is_warned_of_when_the_tool_is_made(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, "agentactors.tools"):
        made = tool(_search, result_ceiling=ResultCeiling(max_chars=10, narrow_by=("limt", "since")))
    (warning,) = _warnings(caplog)
    assert "tool '_search'" in warning and "'limt'" in warning and "not a parameter" in warning, warning
    assert "'limit'" in warning and "'since'" in warning  # what it may name
    assert made.result_ceiling is not None  # still made: the names are suggestions


def test_the_decorator_spelling_is_warned_of_the_same_way(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, "agentactors.tools"):

        @tool(result_ceiling=ResultCeiling(max_chars=10, narrow_by="page"))
        def fetch(limit: int = 10) -> str:
            """Fetch."""
            return ""

    assert any("'page'" in w for w in _warnings(caplog))


def test_a_name_a_partial_bound_is_no_parameter_the_model_can_narrow(caplog: pytest.LogCaptureFixture) -> None:
    def query(conn: Any, limit: int = 10) -> str:
        """Query."""
        return ""

    with caplog.at_level(logging.WARNING, "agentactors.tools"):
        tool(functools.partial(query, conn=object()), result_ceiling=ResultCeiling(max_chars=10, narrow_by="conn"))
    assert any("'conn'" in w for w in _warnings(caplog))


def test_parameters_the_tool_has_are_taken(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, "agentactors.tools"):
        made = tool(_search, result_ceiling=ResultCeiling(max_chars=10, narrow_by=("limit", "since")))
    assert made.result_ceiling == ResultCeiling(max_chars=10, narrow_by=("limit", "since"))
    assert tool(_search, result_ceiling=ResultCeiling(max_chars=10)).result_ceiling is not None
    assert _warnings(caplog) == []


def test_open_parameters_and_explicit_specs_are_not_checked(caplog: pytest.LogCaptureFixture) -> None:
    def open_ended(**filters: str) -> str:
        """Filtered."""
        return ""

    with caplog.at_level(logging.WARNING, "agentactors.tools"):
        assert tool(open_ended, result_ceiling=ResultCeiling(max_chars=10, narrow_by="since")).result_ceiling
        spec = ToolSpec("remote", "A remote tool.", {"type": "object", "properties": {}})
        made = Tool.from_spec(spec, lambda **kw: "", result_ceiling=ResultCeiling(max_chars=10, narrow_by="limit"))
    assert made.result_ceiling is not None
    assert _warnings(caplog) == []


async def test_a_refusal_tells_the_model_the_parameters_it_can_narrow_by() -> None:
    search = tool(_search, result_ceiling=ResultCeiling(max_chars=10, narrow_by=("limit", "since")))
    provider = ScriptedProvider([ToolCall("c1", "_search", {}), "narrowed"])
    result = await Agent(provider, tools=[search]).run("find")
    (message,) = [m for m in provider.requests[1].messages if m.role == "tool"]
    assert message.content == (
        "Result too large: _search returned 100 chars, over its 10-char ceiling. No data was returned. "
        "Call it again with narrower parameters, e.g. 'limit', 'since'."
    )
    assert result.content == "narrowed"
