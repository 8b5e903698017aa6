"""What the MCP client makes of the SDK's words before anyone reads them, and the HTTP read timeout (pure)."""

from __future__ import annotations

import logging

import pytest
from pydantic import TypeAdapter, ValidationError

from agentactors.mcp import _transports
from agentactors.mcp._results import sdk_message

PYDANTIC = (
    "Failed to parse JSON response: 1 validation error for union[JSONRPCRequest,JSONRPCNotification]\n"
    "  Invalid JSON: EOF while parsing an object at line 1 column 52 [type=json_invalid, "
    "input_value=b'{\"debug\": \"you sent Bea...k_9f8e7d6c5b4a39281706\"', input_type=bytes]\n"
    "    For further information visit https://errors.pydantic.dev/2.14/v/json_invalid"
)


def test_the_read_timeout_is_never_shorter_than_the_call() -> None:
    floor, margin = _transports.MIN_READ_TIMEOUT, _transports.READ_TIMEOUT_MARGIN
    assert floor == 300.0 and margin > 0
    assert _transports.read_timeout_for(None) is None  # no limit on the call: none on the read
    assert _transports.read_timeout_for(10.0) == floor
    assert _transports.read_timeout_for(floor) == floor + margin
    assert _transports.read_timeout_for(3600.0) == 3600.0 + margin


def test_sdk_messages_lose_the_quoted_input_and_the_pydantic_link_but_keep_what_was_wrong() -> None:
    assert sdk_message(PYDANTIC) == (
        "Failed to parse JSON response: 1 validation error for union[JSONRPCRequest,JSONRPCNotification]\n"
        "  Invalid JSON: EOF while parsing an object at line 1 column 52 [type=json_invalid, input_type=bytes]"
    )
    assert sdk_message("refused: no such repo") == "refused: no such repo"


def test_an_input_that_spells_the_end_of_the_field_itself_is_dropped_whole() -> None:
    line = "  bad [type=x, input_value='a, input_type=str] SECRETPART', input_type=str]"
    assert sdk_message(line) == "  bad [type=x, input_type=str]"
    assert "SECRETPART" not in sdk_message("oops input_value='SECRETPART")  # no end: the rest of the line goes


def test_the_sdk_loggers_drop_the_quoted_input_of_a_logged_exception(caplog: pytest.LogCaptureFixture) -> None:
    _transports.redact_sdk_logs()
    caplog.set_level(logging.ERROR)
    payload = '"' + "-".join(["s3cr", "etvalue"] * 10) + '"'  # (built: the traceback shows this file's lines)
    try:
        TypeAdapter(int).validate_json(payload)
    except ValidationError:
        for name in ("mcp.client.stdio", "mcp.client.streamable_http", "client"):
            logging.getLogger(name).exception("Failed to parse JSONRPC message from server")
    assert len(caplog.records) == 3
    assert "Input should be a valid integer" in caplog.text  # what was wrong stays
    assert "s3cr-etvalue" not in caplog.text and "etvalue-s3cr" not in caplog.text
    assert "input_value" not in caplog.text
