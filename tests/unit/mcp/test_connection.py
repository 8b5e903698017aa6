"""The parts of a connection that need no server: list-change notices, reasons for failures."""

from __future__ import annotations

import pytest
from mcp.types import ToolListChangedNotification

from agentactors.mcp._connection import Connection, describe
from agentactors.redaction import register_secret

pytestmark = pytest.mark.anyio


async def test_a_2025_era_list_changed_notification_marks_the_listing_stale() -> None:
    # On a 2026-07-28 session the same flag is set by the subscriptions/listen stream (integration tests).
    conn = Connection("MCP server 'x'", lambda: None)  # type: ignore[arg-type,return-value]
    await conn._on_message(ToolListChangedNotification(method="notifications/tools/list_changed"))
    assert conn.changed
    await conn._on_message(ConnectionResetError("reset"))  # a transport error is logged, nothing else
    assert conn.lost is None


def test_a_reason_names_the_innermost_errors_briefly_and_redacted() -> None:
    register_secret("conn-secret-00ff11ee22dd")
    group = ExceptionGroup("outer", [ExceptionGroup("inner", [OSError("refused conn-secret-00ff11ee22dd")])])
    assert describe(group) == "OSError: refused [REDACTED]"
    assert describe(TimeoutError()) == "TimeoutError"
    assert len(describe(ValueError("x" * 1000))) == 300
