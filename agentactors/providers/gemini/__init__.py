"""The Gemini generateContent wire: ``POST {base_url}/v1beta/models/{model}:generateContent``.

One module per step, imports going one way (down this list)::

    provider.py    the codec (GeminiWire) and the provider (thin I/O around it)
    models.py      its models as data: settings and parts per model (docs/settings.md)
    stream.py      its stream decoder
    decode.py      bodies, usage, stop reasons, tool calls, error refinement
      schema.py      JSON Schema -> the OpenAPI subset Gemini accepts
"""

from __future__ import annotations

from .provider import (
    DEFAULT_BASE_URL,
    FORCED_TOOL_CHOICE_REJECTED,
    RESPONSE_FORMAT_REJECTED,
    RESPONSE_FORMAT_WITH_TOOLS_REJECTED,
    SKIP_SIGNATURE,
    GeminiProvider,
    GeminiSchemaError,
    GeminiStreamDecoder,
    GeminiWire,
    to_gemini_schema,
)

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
