"""The fake vendor's writer of the AWS event-stream framing (ConverseStream bodies).

Written here on purpose, from the format's documentation, not with the parser the client uses: a message is
``[total length: u32][headers length: u32][prelude CRC32][headers][payload][message CRC32]``, every header
``[name length: u8][name][type 7 = string][value length: u16][value]``, big-endian, zlib's CRC-32.  The
client reads it with botocore's maintained parser; a bug on either side shows up in the integration tests.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping

__all__ = ["event_message", "exception_message", "message_bytes"]

_STRING = 7


def _header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode("utf-8"), value.encode("utf-8")
    return struct.pack(">B", len(raw_name)) + raw_name + struct.pack(">BH", _STRING, len(raw_value)) + raw_value


def message_bytes(headers: Mapping[str, str], payload: bytes) -> bytes:
    """One framed message."""
    raw_headers = b"".join(_header(k, v) for k, v in headers.items())
    total = 12 + len(raw_headers) + len(payload) + 4
    prelude = struct.pack(">II", total, len(raw_headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + raw_headers + payload
    return body + struct.pack(">I", zlib.crc32(body))


def event_message(event_type: str, payload: bytes) -> bytes:
    """An ``event`` message of ``event_type`` carrying a JSON ``payload``."""
    headers = {":event-type": event_type, ":content-type": "application/json", ":message-type": "event"}
    return message_bytes(headers, payload)


def exception_message(exception_type: str, payload: bytes) -> bytes:
    """An ``exception`` message (an in-band failure: ``throttlingException``, ``modelStreamErrorException``, ...)."""
    headers = {":exception-type": exception_type, ":content-type": "application/json", ":message-type": "exception"}
    return message_bytes(headers, payload)
