"""The OpenAI Chat Completions wire: ``POST {base_url}/chat/completions``.

One module per step, imports going one way (down this list)::

    provider.py    the codec (OpenAIWire) and the provider (thin I/O around it)
    models.py      its models as data: settings and parts per model (docs/settings.md)
    stream.py      its stream decoder
    decode.py      bodies, usage, stop reasons, tool calls, error refinement
"""

from __future__ import annotations

from .provider import (
    DEFAULT_OPENAI_BASE_URL,
    OpenAIProvider,
    OpenAIStreamDecoder,
    OpenAIWire,
    build_tool_call,
    encode_response_format,
    map_finish_reason,
    parse_usage,
)

__all__ = [
    "DEFAULT_OPENAI_BASE_URL",
    "OpenAIProvider",
    "OpenAIStreamDecoder",
    "OpenAIWire",
    "build_tool_call",
    "encode_response_format",
    "map_finish_reason",
    "parse_usage",
]
