"""A reason clipped to its length bound is redacted first: a secret across the cut shows no part of itself.

``describe`` (a failure's reason) and the sieve's names cut long texts; redacting after the cut left the head of a
registered secret that straddled it un-redacted — the exact match no longer found the whole secret.
"""

from __future__ import annotations

import pytest

pytest.importorskip("mcp")

from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCResponse

from agentactors.mcp._connection import describe
from agentactors.mcp._sieve import ListingSieve
from agentactors.redaction import register_secret

SECRET = "zq8vN3xLmT5rW1yB7cD9eF2gH4jK6pQ0sUqq"


def test_a_secret_across_the_cut_of_a_described_failure_shows_no_part() -> None:
    register_secret(SECRET)
    text = describe(RuntimeError("x" * 270 + SECRET + " and more"))
    assert SECRET[:12] not in text and len(text) <= 300, text


def test_a_secret_across_the_cut_of_a_dropped_tools_name_shows_no_part() -> None:
    register_secret(SECRET)
    sieve = ListingSieve(lambda: None)
    sieve.on = True
    refused = {"name": "t" * 60 + SECRET, "inputSchema": {"type": "string"}}  # the SDK's models refuse it
    sieve.sift(SessionMessage(JSONRPCResponse(jsonrpc="2.0", id=1, result={"tools": [refused]})))
    ((name, _),) = sieve.dropped
    assert SECRET[:10] not in name, name
