"""The OpenAI Chat Completions wire: ``POST {base_url}/chat/completions``.

One module per step, imports going one way (down this list)::

    provider.py    the codec (OpenAIWire, pure) and the provider (thin I/O around it, over http/)
    encode.py      requests: messages, tools, settings, parts, response format -> the body (pure)
    stream.py      its stream decoder (pure)
    decode.py      bodies, usage, stop reasons, tool calls, error refinement (pure)
    models.py      its models as data: the wire's name, settings and parts per model (docs/settings.md)
"""

from __future__ import annotations

from .decode import build_tool_call, map_finish_reason, parse_usage
from .encode import encode_response_format
from .provider import DEFAULT_OPENAI_BASE_URL, OpenAIProvider, OpenAIWire
from .stream import OpenAIStreamDecoder

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
