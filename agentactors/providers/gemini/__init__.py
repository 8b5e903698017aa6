"""The Gemini generateContent wire: ``POST {base_url}/v1beta/models/{model}:generateContent``.

One module per step, imports going one way (down this list)::

    provider.py    the codec (GeminiWire, pure) and the provider (thin I/O around it, over http/)
    encode.py      requests: messages, tools, settings, parts, response format -> the body (pure)
    stream.py      its stream decoder (pure)
    decode.py      bodies, usage, stop reasons, tool calls, error refinement (pure)
    models.py      its models as data: the wire's name, settings and parts per model (docs/settings.md)
    schema.py      JSON Schema -> the OpenAPI subset Gemini accepts (under encode.py)
"""

from __future__ import annotations

from .encode import SKIP_SIGNATURE
from .provider import (
    DEFAULT_BASE_URL,
    FORCED_TOOL_CHOICE_REJECTED,
    RESPONSE_FORMAT_REJECTED,
    RESPONSE_FORMAT_WITH_TOOLS_REJECTED,
    GeminiProvider,
    GeminiWire,
)
from .schema import GeminiSchemaError, to_gemini_schema
from .stream import GeminiStreamDecoder

__all__ = [
    "DEFAULT_BASE_URL",
    "FORCED_TOOL_CHOICE_REJECTED",
    "RESPONSE_FORMAT_REJECTED",
    "RESPONSE_FORMAT_WITH_TOOLS_REJECTED",
    "SKIP_SIGNATURE",
    "GeminiProvider",
    "GeminiSchemaError",
    "GeminiStreamDecoder",
    "GeminiWire",
    "to_gemini_schema",
]
